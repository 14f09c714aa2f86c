//! One browser: a Chromium process, the chromiumoxide connection to it, its tabs (one active),
//! its console and network logs, and whether it is still alive. Cheap to clone.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::target::{
    CreateTargetParams, EventAttachedToTarget, EventTargetCreated, EventTargetDestroyed, TargetInfo,
};
use chromiumoxide::listeners::EventStream;
use futures_util::StreamExt;
use lomi_protocol::tools::browser::{ConsoleEntry, NetworkEntry, TabView};
use serde_json::json;
use tokio::sync::{oneshot, watch};

use crate::BrowserError;
use crate::launch::Process;
use crate::tab::Emulation;
use crate::tab::{Raw, Tab, cdp_error};

/// How a browser is started.
#[derive(Clone, Debug)]
pub struct BrowserOptions {
    pub chromium: PathBuf,
    pub width: u32,
    pub height: u32,
    /// A persistent profile folder the person chose; None for a fresh profile.
    pub profile: Option<PathBuf>,
}

impl Default for BrowserOptions {
    fn default() -> Self {
        BrowserOptions {
            chromium: crate::chromium_path(),
            width: 1280,
            height: 720,
            profile: None,
        }
    }
}

/// How the browser process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Lomi closed it.
    Closed,
    /// It ended on its own or was killed by someone else.
    Crashed(String),
}

/// How long a tab list waits for popups Chromium announced but Lomi has not finished adopting.
const ADOPT_WAIT: Duration = Duration::from_secs(5);

/// Entries kept per log; older ones are dropped (a read says so).
const LOG_KEEP: usize = 2000;
/// Longest console text kept per entry.
const CONSOLE_TEXT_MAX: usize = 4096;

#[derive(Default)]
pub(crate) struct Logs {
    pub console: VecDeque<ConsoleEntry>,
    pub console_next: u64,
    pub network: VecDeque<NetworkEntry>,
    pub network_next: u64,
    /// request id → position in `network` by cursor.
    pub requests: std::collections::HashMap<String, u64>,
}

impl Logs {
    pub fn console(&mut self, tab: &str, level: &str, text: String, url: Option<String>) {
        self.console_next += 1;
        let mut text = text;
        if text.len() > CONSOLE_TEXT_MAX {
            let mut end = CONSOLE_TEXT_MAX;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push('…');
        }
        self.console.push_back(ConsoleEntry {
            cursor: self.console_next.to_string(),
            tab_id: tab.to_owned(),
            level: level.to_owned(),
            text,
            url,
        });
        while self.console.len() > LOG_KEEP {
            self.console.pop_front();
        }
    }

    pub fn request(&mut self, tab: &str, id: &str, method: &str, url: &str, kind: &str) {
        self.network_next += 1;
        let cursor = self.network_next;
        self.network.push_back(NetworkEntry {
            cursor: cursor.to_string(),
            tab_id: tab.to_owned(),
            method: method.to_owned(),
            url: url.chars().take(2048).collect(),
            resource_type: kind.to_owned(),
            status: None,
            mime_type: None,
            bytes: None,
            failed: None,
        });
        self.requests.insert(id.to_owned(), cursor);
        while self.network.len() > LOG_KEEP {
            if let Some(old) = self.network.pop_front() {
                self.requests.retain(|_, c| c.to_string() != old.cursor);
            }
        }
    }

    pub fn request_mut(&mut self, id: &str) -> Option<&mut NetworkEntry> {
        let cursor = *self.requests.get(id)?;
        let first: u64 = self.network.front()?.cursor.parse().ok()?;
        let index = usize::try_from(cursor.checked_sub(first)?).ok()?;
        self.network.get_mut(index)
    }
}

struct Inner {
    cdp: chromiumoxide::Browser,
    /// `host:port` of Chromium's DevTools endpoint (for commands sent to a page directly).
    devtools: String,
    pid: u32,
    generation: String,
    options: BrowserOptions,
    /// The device every tab emulates (lomi_browser_emulate).
    emulation: Mutex<Emulation>,
    tabs: Mutex<Vec<Tab>>,
    active: Mutex<Option<String>>,
    logs: Arc<Mutex<Logs>>,
    /// None while alive; how it ended afterwards.
    exit: watch::Receiver<Option<Exit>>,
    end: Mutex<Option<oneshot::Sender<()>>>,
    /// Popups (target ids) Chromium announced whose tab is not ready yet.
    adopting: watch::Sender<HashSet<String>>,
}

/// A running browser. All clones are the same browser.
#[derive(Clone)]
pub struct Browser {
    inner: Arc<Inner>,
}

impl Browser {
    /// Starts Chromium with a fresh profile and opens its first tab.
    pub async fn launch(
        options: BrowserOptions,
        generation: String,
    ) -> Result<Browser, BrowserError> {
        let mut process = Process::start(
            &options.chromium,
            options.width,
            options.height,
            options.profile.as_deref(),
        )
        .await?;
        let pid = process.pid();
        let devtools = devtools_address(&process.ws_url);
        // Messages chromiumoxide cannot decode come to the loop below instead of its own WARN
        // line each (see `undecodable`).
        let config = chromiumoxide::handler::HandlerConfig {
            ignore_invalid_messages: false,
            ..chromiumoxide::handler::HandlerConfig::default()
        };
        let (cdp, mut handler) =
            match chromiumoxide::Browser::connect_with_config(process.ws_url.clone(), config).await
            {
                Ok(pair) => pair,
                Err(error) => {
                    process.end(Duration::from_millis(500)).await;
                    return Err(BrowserError::Launch(format!(
                        "cannot connect to Chromium's DevTools: {error}"
                    )));
                }
            };
        let (exit_tx, exit_rx) = watch::channel(None);
        let mut exited = exit_rx.clone();
        // chromiumoxide needs its handler polled all the time, until the browser is gone: its
        // handler does not end when the connection does (it answers "pending" from then on),
        // and it holds the DevTools socket and every page's state (bench/soak found one
        // half-closed socket left per browser closed).
        tokio::spawn(async move {
            let mut undecodable: BTreeMap<String, u64> = BTreeMap::new();
            loop {
                let event = tokio::select! {
                    event = handler.next() => event,
                    _gone = exited.wait_for(Option::is_some) => None,
                };
                let Some(event) = event else { break };
                match event {
                    Err(chromiumoxide::error::CdpError::InvalidMessage(text, error)) => {
                        let method = undecodable_method(&text);
                        tracing::debug!("chromiumoxide cannot decode {method}: {error}");
                        *undecodable.entry(method).or_default() += 1;
                    }
                    Err(error) => tracing::trace!("chromium handler: {error}"),
                    Ok(()) => {}
                }
            }
            if !undecodable.is_empty() {
                tracing::debug!(
                    "CDP messages chromiumoxide could not decode (dropped): {undecodable:?}"
                );
            }
        });
        let (end_tx, end_rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let exit = tokio::select! {
                status = process.wait() => {
                    // Its helpers go with it.
                    process.end(Duration::from_millis(100)).await;
                    Exit::Crashed(match status {
                        Some(status) => format!("the browser process ended ({status})"),
                        None => "the browser process ended".to_owned(),
                    })
                }
                _ = end_rx => {
                    process.end(Duration::from_secs(2)).await;
                    Exit::Closed
                }
            };
            drop(process);
            let _sent = exit_tx.send(Some(exit));
        });
        let browser = Browser {
            inner: Arc::new(Inner {
                cdp,
                devtools,
                pid,
                generation,
                emulation: Mutex::new(Emulation {
                    width: options.width,
                    height: options.height,
                    scale: 1.0,
                    mobile: false,
                    user_agent: None,
                    color_scheme: None,
                }),
                options,
                tabs: Mutex::default(),
                active: Mutex::default(),
                logs: Arc::default(),
                exit: exit_rx,
                end: Mutex::new(Some(end_tx)),
                adopting: watch::Sender::new(HashSet::new()),
            }),
        };
        let mut unfinished = Unfinished(Some(browser.clone()));
        if let Err(error) = browser.follow_targets().await {
            browser.close().await;
            return Err(error);
        }
        let first = match browser.open_tab().await {
            Ok(tab) => tab,
            Err(error) => {
                browser.close().await;
                return Err(error);
            }
        };
        browser.close_other_targets(&first.id).await;
        unfinished.0 = None;
        Ok(browser)
    }

    /// `host:port` of Chromium's DevTools endpoint.
    pub(crate) fn devtools(&self) -> &str {
        &self.inner.devtools
    }

    pub fn pid(&self) -> u32 {
        self.inner.pid
    }

    pub fn generation(&self) -> &str {
        &self.inner.generation
    }

    pub fn options(&self) -> &BrowserOptions {
        &self.inner.options
    }

    pub(crate) fn logs(&self) -> Arc<Mutex<Logs>> {
        self.inner.logs.clone()
    }

    /// How the browser ended, or None while it runs.
    pub fn exit(&self) -> Option<Exit> {
        self.inner.exit.borrow().clone()
    }

    /// Waits until the browser process has ended.
    pub async fn exited(&self) -> Exit {
        let mut exit = self.inner.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(value) => value.clone().unwrap_or(Exit::Closed),
            Err(_) => Exit::Closed,
        }
    }

    /// An error for a call that found the browser gone, or None while it runs.
    pub fn gone(&self) -> Option<BrowserError> {
        self.exit().map(|exit| match exit {
            Exit::Closed => BrowserError::Gone("it was closed".to_owned()),
            Exit::Crashed(why) => BrowserError::Gone(why),
        })
    }

    /// The error for a failed Chromium call: Gone when the process ended meanwhile.
    pub(crate) fn failure(&self, error: BrowserError) -> BrowserError {
        match self.gone() {
            Some(gone) => gone,
            None => error,
        }
    }

    /// The device every tab emulates.
    pub fn emulation(&self) -> Emulation {
        self.inner
            .emulation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes `emulation` the browser's, for its tabs now and later; answers the tabs to apply
    /// it to. Held under the tabs' lock so a tab adopted meanwhile is in the list or sees it.
    pub fn set_emulation(&self, emulation: Emulation) -> Vec<Tab> {
        let tabs = self.tabs_lock();
        *self
            .inner
            .emulation
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = emulation;
        tabs.clone()
    }

    /// The response body request `cursor` of the network log names: its entry, its tab and
    /// Chromium's request id. None when the log no longer has it.
    pub fn logged_request(&self, cursor: u64) -> Option<(NetworkEntry, String)> {
        let logs = self.inner.logs.lock().unwrap_or_else(|e| e.into_inner());
        let entry = logs
            .network
            .iter()
            .find(|e| e.cursor == cursor.to_string())?
            .clone();
        let id = logs
            .requests
            .iter()
            .find(|(_, c)| **c == cursor)
            .map(|(id, _)| id.clone())?;
        Some((entry, id))
    }

    fn tabs_lock(&self) -> std::sync::MutexGuard<'_, Vec<Tab>> {
        self.inner.tabs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tab actions and snapshots go to.
    pub fn active_tab(&self) -> Result<Tab, BrowserError> {
        if let Some(gone) = self.gone() {
            return Err(gone);
        }
        let active = self
            .inner
            .active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let tabs = self.tabs_lock();
        active
            .and_then(|id| tabs.iter().find(|t| t.id == id).cloned())
            .or_else(|| tabs.last().cloned())
            .ok_or_else(|| BrowserError::Invalid("the browser has no tab; open one".to_owned()))
    }

    pub fn tab(&self, id: &str) -> Option<Tab> {
        self.tabs_lock().iter().find(|t| t.id == id).cloned()
    }

    /// The tabs, in the order they were opened (popups Chromium already announced included).
    pub async fn tab_views(&self) -> Vec<TabView> {
        let mut adopting = self.inner.adopting.subscribe();
        let waited = tokio::time::timeout(ADOPT_WAIT, async {
            adopting.wait_for(HashSet::is_empty).await.is_ok()
        })
        .await;
        if waited != Ok(true) {
            tracing::debug!("listing tabs while popups are still being adopted");
        }
        let tabs: Vec<Tab> = self.tabs_lock().clone();
        let active = self.active_tab().ok().map(|t| t.id);
        let mut views = Vec::with_capacity(tabs.len());
        for tab in tabs {
            let (url, title) = tab.location().await;
            views.push(TabView {
                active: Some(&tab.id) == active.as_ref(),
                tab_id: tab.id.clone(),
                url,
                title,
                opener_tab_id: tab.opener.clone(),
            });
        }
        views
    }

    /// Opens a new tab on about:blank and makes it active.
    pub async fn open_tab(&self) -> Result<Tab, BrowserError> {
        let tab = self
            .open_page(CreateTargetParams::new("about:blank"))
            .await?;
        self.activate(&tab.id).await?;
        Ok(tab)
    }

    /// Opens a tab on about:blank in a window of its own, leaving the active tab as it is: a
    /// tab behind the active one in the same window draws no frames, so it could not be
    /// captured while the active one is (a capture set's second lane).
    pub async fn open_window(&self) -> Result<Tab, BrowserError> {
        let mut params = CreateTargetParams::new("about:blank");
        params.new_window = Some(true);
        params.background = Some(true);
        self.open_page(params).await
    }

    async fn open_page(&self, params: CreateTargetParams) -> Result<Tab, BrowserError> {
        if let Some(gone) = self.gone() {
            return Err(gone);
        }
        let page = self
            .inner
            .cdp
            .new_page(params)
            .await
            .map_err(|e| self.failure(cdp_error(e)))?;
        let tab = Tab::attach(self.clone(), page, None).await?;
        self.tabs_lock().push(tab.clone());
        Ok(tab)
    }

    /// Makes a tab the active one.
    pub async fn activate(&self, id: &str) -> Result<(), BrowserError> {
        let tab = self
            .tab(id)
            .ok_or_else(|| BrowserError::Invalid(format!("no tab {id} in this browser")))?;
        tab.raw("Page.bringToFront", json!({})).await?;
        *self.inner.active.lock().unwrap_or_else(|e| e.into_inner()) = Some(tab.id.clone());
        Ok(())
    }

    /// Closes one tab; the last one opened before it becomes active if it was.
    pub async fn close_tab(&self, id: &str) -> Result<(), BrowserError> {
        let tab = self
            .tab(id)
            .ok_or_else(|| BrowserError::Invalid(format!("no tab {id} in this browser")))?;
        if self.tabs_lock().len() == 1 {
            return Err(BrowserError::Invalid(
                "this is the browser's last tab; close the browser panel instead".to_owned(),
            ));
        }
        self.inner
            .cdp
            .execute(Raw::new(
                "Target.closeTarget",
                json!({ "targetId": tab.id }),
            ))
            .await
            .map_err(|e| self.failure(cdp_error(e)))?;
        self.tabs_lock().retain(|t| t.id != tab.id);
        tab.mark_closed();
        let was_active = self.active_tab().map(|t| t.id == tab.id).unwrap_or(true);
        let mut active = self.inner.active.lock().unwrap_or_else(|e| e.into_inner());
        if was_active || active.as_deref() == Some(id) {
            *active = self.tabs_lock().last().map(|t| t.id.clone());
        }
        Ok(())
    }

    /// Follows Chromium's page targets: a page opened by a page of one of this browser's tabs
    /// (`window.open`, a `target=_blank` link) becomes a tab of its own, without becoming
    /// active; a page that closed itself leaves the tab list.
    async fn follow_targets(&self) -> Result<(), BrowserError> {
        let cdp = &self.inner.cdp;
        let fail = |e| self.failure(cdp_error(e));
        let created = cdp
            .event_listener::<EventTargetCreated>()
            .await
            .map_err(fail)?;
        let attached = cdp
            .event_listener::<EventAttachedToTarget>()
            .await
            .map_err(fail)?;
        let destroyed = cdp
            .event_listener::<EventTargetDestroyed>()
            .await
            .map_err(fail)?;
        // Weak, so that the follower does not keep a closed browser alive.
        tokio::spawn(follow(
            Arc::downgrade(&self.inner),
            created,
            attached,
            destroyed,
        ));
        Ok(())
    }

    /// The opener tab of a page target this browser should adopt as a popup, if it is one.
    fn popup_opener(&self, info: &TargetInfo) -> Option<String> {
        let opener = info.opener_id.as_ref()?.as_ref().to_owned();
        (info.r#type == "page"
            && self.tab(&opener).is_some()
            && self.tab(info.target_id.as_ref()).is_none())
        .then_some(opener)
    }

    /// Makes a popup's page a tab: Lomi's world, binding and logs, as for any tab.
    async fn adopt(&self, id: String, opener: String) {
        let attached = match self
            .inner
            .cdp
            .get_page(id.clone().into())
            .await
            .map_err(cdp_error)
        {
            Ok(page) => Tab::attach(self.clone(), page, Some(opener)).await,
            Err(error) => Err(error),
        };
        // Under the tab lock, so that a popup that closed meanwhile is not listed.
        let mut tabs = self.tabs_lock();
        let mut waiting = false;
        self.inner
            .adopting
            .send_modify(|set| waiting = set.remove(&id));
        match attached {
            Ok(tab) if waiting => tabs.push(tab),
            Ok(_) => {}
            Err(error) => tracing::debug!("popup {id} was not adopted: {error}"),
        }
    }

    /// A page target is gone (closed by its page, or by Lomi): it is no longer a tab.
    fn forget(&self, id: &str) {
        let closed = {
            let mut tabs = self.tabs_lock();
            self.inner.adopting.send_modify(|set| {
                set.remove(id);
            });
            let closed = tabs.iter().find(|t| t.id == id).cloned();
            tabs.retain(|t| t.id != id);
            closed
        };
        if let Some(tab) = closed {
            tab.mark_closed();
        }
        let mut active = self.inner.active.lock().unwrap_or_else(|e| e.into_inner());
        if active.as_deref() == Some(id) {
            *active = self.tabs_lock().last().map(|t| t.id.clone());
        }
    }

    /// Closes the targets Chromium opened by itself (its first about:blank window).
    async fn close_other_targets(&self, keep: &str) {
        let Ok(answer) = self
            .inner
            .cdp
            .execute(Raw::new("Target.getTargets", json!({})))
            .await
        else {
            return;
        };
        let targets = answer.result["targetInfos"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for target in targets {
            let id = target["targetId"].as_str().unwrap_or_default();
            if target["type"] == "page" && id != keep {
                let close = Raw::new("Target.closeTarget", json!({ "targetId": id }));
                if let Err(error) = self.inner.cdp.execute(close).await {
                    tracing::debug!("closing Chromium's own first tab: {error}");
                }
            }
        }
    }

    /// Ends the browser: its process group gets SIGTERM, then SIGKILL; returns once it is
    /// gone and its profile removed.
    pub async fn close(&self) -> Exit {
        let end = self
            .inner
            .end
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(end) = end {
            // Ask Chromium to quit first; the process watcher makes sure it does.
            let quit = self.inner.cdp.execute(Raw::new("Browser.close", json!({})));
            let _asked = tokio::time::timeout(Duration::from_millis(500), quit).await;
            let _sent = end.send(());
        }
        self.exited().await
    }
}

/// Ends a browser whose launch never returned: its future was dropped, as when the operation
/// starting it is cancelled. Dropping the browser is not enough once its first tab exists: that
/// tab's event pump holds it, and Chromium would run on with nothing to close it.
struct Unfinished(Option<Browser>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        let Some(browser) = self.0.take() else { return };
        let end = browser
            .inner
            .end
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(end) = end {
            // The process watcher ends Chromium's process group and removes its profile.
            let _sent = end.send(());
        }
    }
}

/// The target follower of one browser (see `Browser::follow_targets`); ends with the
/// connection or the browser.
async fn follow(
    inner: Weak<Inner>,
    mut created: EventStream<EventTargetCreated>,
    mut attached: EventStream<EventAttachedToTarget>,
    mut destroyed: EventStream<EventTargetDestroyed>,
) {
    loop {
        tokio::select! {
            Some(event) = created.next() => {
                let Some(inner) = inner.upgrade() else { break };
                let browser = Browser { inner };
                if browser.popup_opener(&event.target_info).is_some() {
                    let id = event.target_info.target_id.as_ref().to_owned();
                    browser.inner.adopting.send_modify(|set| {
                        set.insert(id);
                    });
                }
            }
            Some(event) = attached.next() => {
                let Some(inner) = inner.upgrade() else { break };
                let browser = Browser { inner };
                if let Some(opener) = browser.popup_opener(&event.target_info) {
                    let id = event.target_info.target_id.as_ref().to_owned();
                    browser.inner.adopting.send_modify(|set| {
                        set.insert(id.clone());
                    });
                    tokio::spawn(async move { browser.adopt(id, opener).await });
                }
            }
            Some(event) = destroyed.next() => {
                let Some(inner) = inner.upgrade() else { break };
                Browser { inner }.forget(event.target_id.as_ref());
            }
            else => break,
        }
    }
}

/// `host:port` of a DevTools WebSocket URL (`ws://127.0.0.1:PORT/devtools/browser/ID`).
fn devtools_address(ws_url: &str) -> String {
    let rest = ws_url.strip_prefix("ws://").unwrap_or(ws_url);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// The CDP method a message chromiumoxide could not decode carries (events name one; a
/// response only has its id).
fn undecodable_method(text: &str) -> String {
    let message: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    match (message["method"].as_str(), message["id"].as_u64()) {
        (Some(method), _) => method.to_owned(),
        (None, Some(_)) => "a response".to_owned(),
        (None, None) => "a message that is not JSON-RPC".to_owned(),
    }
}
