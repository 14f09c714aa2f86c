//! A tab's navigations: where its main frame stands (to tell whether an action navigated),
//! navigating to a URL or through history and waiting for its load, and waiting for what an
//! agent asks (a URL, text or a role on the page, a quiet network).

use std::time::Duration;

use serde_json::{Value, json};

use super::{ActionError, State, Tab};
use crate::BrowserError;

/// How long a cancelled navigation's own answer is awaited after its load was stopped (one that
/// had just finished still reports its success).
const STOPPED_NAVIGATION_WAIT: Duration = Duration::from_secs(1);

/// How long an action that made its page request a navigation waits for that navigation to
/// commit before it settles without it.
const NAVIGATION_COMMIT_LIMIT: Duration = Duration::from_secs(10);

/// How far a document's load got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reached {
    Commit,
    DomContentLoaded,
    Load,
}

impl Reached {
    pub fn name(self) -> &'static str {
        match self {
            Reached::Commit => "commit",
            Reached::DomContentLoaded => "domcontentloaded",
            Reached::Load => "load",
        }
    }
}

/// Where the tab's main frame stood at one moment: what an action compares against to tell
/// whether it navigated.
#[derive(Clone, Debug)]
pub struct Mark {
    loader: String,
    same_document: u64,
    requested: u64,
    started: u64,
    stopped: u64,
}

/// A navigation that committed: (navigationId, URL, whether the document stayed the same).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    pub navigation_id: String,
    pub url: String,
    pub same_document: bool,
}

/// What `lomi_browser_wait` waits for.
#[derive(Clone, Debug, Default)]
pub struct WaitFor {
    pub text: Option<String>,
    pub role: Option<String>,
    pub name: Option<String>,
    pub url: Option<String>,
    pub network_idle: bool,
}

/// How a wait ended.
#[derive(Clone, Debug)]
pub struct Waited {
    /// The conditions that did not hold, said for the agent (empty: all held).
    pub missing: Vec<String>,
    pub in_flight: usize,
}

/// Where `lomi_browser_navigate` goes.
#[derive(Clone, Debug)]
pub enum Destination {
    Url(String),
    Back,
    Forward,
    Reload,
}

impl Tab {
    /// Where the main frame stands now, to compare with after an action.
    pub fn mark(&self) -> Mark {
        let state = self.lock();
        Mark {
            loader: state.loader.clone(),
            same_document: state.same_document,
            requested: state.requested,
            started: state.started,
            stopped: state.stopped,
        }
    }

    /// The navigation the page made since `mark`, once it committed. A navigation the page
    /// only asked for (a link's default action, `location.href = …`) is waited for until it
    /// commits, or the frame stops loading without it (a download, a 204), or `limit`.
    pub async fn navigation_since(&self, mark: &Mark) -> Option<Committed> {
        // A fence through the page: its acknowledgement comes after every event the page sent
        // before it (a navigation it asked for while handling the action's events), and the
        // event pump handles those first.
        if self.dialog().is_none() {
            self.fence().await;
        }
        let moved = |state: &State| {
            state.loader != mark.loader || state.same_document != mark.same_document
        };
        let asked = self.lock().requested != mark.requested;
        if asked {
            self.wait_until(NAVIGATION_COMMIT_LIMIT, |state| {
                moved(state)
                    || (state.started > mark.started
                        && state.stopped > mark.stopped
                        && state.stopped >= state.started)
            })
            .await;
        }
        let state = self.lock();
        moved(&state).then(|| Committed {
            navigation_id: state.loader.clone(),
            url: state.url.clone(),
            same_document: state.loader == mark.loader,
        })
    }

    /// Navigates (to a URL, or through the tab's history) and waits for `until`; returns
    /// what committed, the document's HTTP status and how far its load got.
    pub async fn navigate(
        &self,
        to: &Destination,
        until: &str,
        limit: Duration,
    ) -> Result<(Committed, Option<u16>, &'static str), ActionError> {
        self.no_dialog()?;
        let want = match until {
            "commit" => Reached::Commit,
            "domcontentloaded" => Reached::DomContentLoaded,
            _ => Reached::Load,
        };
        let mark = self.mark();
        let (method, params) = match to {
            Destination::Url(url) => ("Page.navigate", json!({ "url": url })),
            Destination::Reload => ("Page.reload", json!({})),
            Destination::Back | Destination::Forward => {
                let history = self.raw("Page.getNavigationHistory", json!({})).await?;
                let current = history["currentIndex"].as_i64().unwrap_or(0);
                let entries = history["entries"].as_array().cloned().unwrap_or_default();
                let (step, word) = match to {
                    Destination::Back => (-1, "back"),
                    _ => (1, "forward"),
                };
                let entry = usize::try_from(current + step)
                    .ok()
                    .and_then(|index| entries.get(index));
                let Some(entry) = entry else {
                    return Err(ActionError::Refused(BrowserError::Invalid(format!(
                        "the active tab has no page to go {word} to (its history has {} entries and \
                         it shows number {}); navigate to a url instead",
                        entries.len(),
                        current + 1
                    ))));
                };
                (
                    "Page.navigateToHistoryEntry",
                    json!({ "entryId": entry["id"] }),
                )
            }
        };
        // Chromium answers once the navigation commits (or fails), or at once for history and
        // reload: that wait has the same limit as the rest, and a navigation still pending then
        // is stopped.
        let sent = tokio::time::timeout(limit, self.direct(method, params));
        let answer = match sent.await {
            Ok(answer) => answer?,
            Err(_) => {
                self.stop_loading().await;
                return Err(ActionError::Unconfirmed(format!(
                    "the navigation did not commit within {} ms and was stopped",
                    limit.as_millis()
                )));
            }
        };
        if let Some(error) = answer["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(ActionError::Failed(format!(
                "the navigation failed: {error}"
            )));
        }
        let moved = |state: &State| {
            state.loader != mark.loader || state.same_document != mark.same_document
        };
        let new_document = match to {
            // Page.navigate names the new document; none is a same-document navigation (a
            // fragment), whose event may still be on its way (or never come, when the URL is
            // the one shown already).
            Destination::Url(url) => match answer["loaderId"].as_str() {
                Some(loader) => Some(loader.to_owned()),
                None => {
                    self.wait_until(limit, |state| moved(state) || state.url == *url)
                        .await;
                    None
                }
            },
            _ => {
                self.wait_until(limit, moved).await;
                let state = self.lock();
                if state.loader != mark.loader {
                    Some(state.loader.clone())
                } else if state.same_document != mark.same_document {
                    None
                } else {
                    drop(state);
                    return Err(self.uncommitted(limit));
                }
            }
        };
        let Some(loader) = new_document else {
            let state = self.lock();
            return Ok((
                Committed {
                    navigation_id: state.loader.clone(),
                    url: state.url.clone(),
                    same_document: true,
                },
                None,
                Reached::Load.name(),
            ));
        };
        self.wait_until(limit, |state| {
            state.loader == loader && state.reached.get(&loader).is_some_and(|r| *r >= want)
        })
        .await;
        let state = self.lock();
        if state.loader != loader {
            drop(state);
            return Err(self.uncommitted(limit));
        }
        let reached = state
            .reached
            .get(&loader)
            .copied()
            .unwrap_or(Reached::Commit);
        let status = state.status.get(&loader).map(|(status, _)| *status);
        Ok((
            Committed {
                navigation_id: loader.clone(),
                url: state.url.clone(),
                same_document: false,
            },
            status,
            reached.name(),
        ))
    }

    /// Why a navigation that was sent did not commit.
    fn uncommitted(&self, limit: Duration) -> ActionError {
        if let Some(gone) = self.browser.gone() {
            return ActionError::Unconfirmed(gone.to_string());
        }
        ActionError::Unconfirmed(format!(
            "the navigation did not commit within {} ms",
            limit.as_millis()
        ))
    }

    /// [`Tab::navigate`] that stops when `cancel` fires: the load is stopped and the
    /// navigation's own answer is still awaited (bounded), so the command Chromium is working
    /// on is never abandoned half-way. `None`: it was stopped before it finished; otherwise
    /// what the navigation answered (it may have finished first).
    pub async fn navigate_unless_cancelled(
        &self,
        to: &Destination,
        until: &str,
        limit: Duration,
        cancel: &lomi_broker::CancellationToken,
    ) -> Option<Result<(Committed, Option<u16>, &'static str), ActionError>> {
        let navigation = self.navigate(to, until, limit);
        tokio::pin!(navigation);
        tokio::select! {
            // The work first: what finished by now is reported as finished.
            biased;
            navigated = &mut navigation => return Some(navigated),
            () = cancel.cancelled() => {}
        }
        self.stop_loading().await;
        match tokio::time::timeout(STOPPED_NAVIGATION_WAIT, &mut navigation).await {
            Ok(Ok(done)) => Some(Ok(done)),
            Ok(Err(_)) | Err(_) => None,
        }
    }

    /// Stops loading the tab's page (a cancelled navigation); what has loaded stays.
    pub async fn stop_loading(&self) {
        if let Err(error) = self.raw("Page.stopLoading", json!({})).await {
            tracing::debug!("Page.stopLoading: {error}");
        }
    }

    /// Waits until every condition of `want` holds, in turn (the URL, the page's content, the
    /// network), at most `limit` in all; answers what was still missing (empty: all held).
    pub async fn wait(&self, want: &WaitFor, limit: Duration) -> Result<Waited, BrowserError> {
        self.no_dialog()?;
        let deadline = tokio::time::Instant::now() + limit;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut missing = Vec::new();
        if let Some(url) = &want.url {
            let needle = url.to_lowercase();
            if !self
                .wait_until(left(), |state| state.url.to_lowercase().contains(&needle))
                .await
            {
                missing.push(format!(
                    "the URL does not contain {url:?} (it is {:?})",
                    self.current_url()
                ));
            }
        }
        if missing.is_empty() && (want.text.is_some() || want.role.is_some()) {
            let spec = json!({ "text": want.text, "role": want.role, "name": want.name });
            if !self.wait_in_page(&spec, deadline).await? {
                missing.push(match (&want.text, &want.role, &want.name) {
                    (Some(text), _, _) => format!("no text {text:?} on the page"),
                    (None, Some(role), Some(name)) => {
                        format!("no {role} named {name:?} on the page")
                    }
                    (None, Some(role), None) => format!("no {role} on the page"),
                    (None, None, _) => String::new(),
                });
            }
        }
        if missing.is_empty() && want.network_idle && !self.network_idle(deadline).await {
            missing.push(format!(
                "{} network requests were still in flight",
                self.lock().in_flight.len()
            ));
        }
        Ok(Waited {
            missing,
            in_flight: self.lock().in_flight.len(),
        })
    }

    /// Waits in the main frame's document for `spec` (see `waitFor` in walker.js), following
    /// the tab to its next document when the page navigates meanwhile.
    async fn wait_in_page(
        &self,
        spec: &Value,
        deadline: tokio::time::Instant,
    ) -> Result<bool, BrowserError> {
        let mut changed = self.changed.subscribe();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            let answer = match self.main_world().await {
                Ok(context) => {
                    self.helper(context, &format!("waitFor({spec}, {})", left.as_millis()))
                        .await
                }
                Err(error) => Err(error),
            };
            match answer {
                Ok(found) if found["matched"] == true => return Ok(true),
                Ok(found) if found["matched"] == false => return Ok(false),
                Ok(_) => {}
                // The document went away (a navigation): wait for the next one.
                Err(BrowserError::Stale(_) | BrowserError::Cdp(_)) => {}
                Err(other) => return Err(other),
            }
            self.no_dialog()?;
            tokio::select! {
                _ = changed.changed() => {}
                () = tokio::time::sleep_until(deadline) => return Ok(false),
                _exit = self.browser.exited() => return Err(BrowserError::Gone("the browser ended during the wait".to_owned())),
            }
        }
    }
}
