//! One tab: its chromiumoxide page, its state as the page's events keep it, and the calls every
//! part of the tab goes through (CDP commands, waits on that state, the dialog check). Each
//! concern of a tab is a module of its own, an `impl Tab` each: the event pump (`events`),
//! Lomi's isolated world in each frame (`worlds`), snapshots (`snapshot`), aiming at the
//! element a ref names (`aim`, with `Tab::arm`, the one preamble every action goes through),
//! the pointer actions (`actions`), fields and keys (`forms`), navigation and waits
//! (`navigation`), the network (`network`), captures and PDFs (`capture`) and device emulation
//! (`emulation`). Actions aim at the element a ref names only after checking that it is the
//! same, still connected node; they succeed when the page reports, through the `lomiAck`
//! binding, that the event reached that node.

mod actions;
mod aim;
mod capture;
mod emulation;
mod events;
mod forms;
mod navigation;
mod network;
mod snapshot;
mod worlds;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::types::{Command, Method, MethodId};
use lomi_protocol::tools::browser::DialogView;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::BrowserError;
use crate::browser::Browser;

pub use actions::{ActionError, ActionResult, Target};
pub use capture::{CaptureArea, CaptureLimit, Taken};
pub use emulation::Emulation;
pub(crate) use navigation::Reached;
pub use navigation::{Committed, Destination, WaitFor, Waited};
use snapshot::SnapshotRecord;

/// The in-page helper (see walker.js).
const WALKER: &str = include_str!("walker.js");

/// The name of Lomi's isolated world in every frame.
const WORLD: &str = "lomi";

/// How long an action waits for the page to confirm that its event arrived. A page busy
/// with its own work on a loaded machine can take seconds to run the listener; an event
/// that did arrive but was not confirmed in time settles `outcome_unknown`, so the limit errs
/// long (it is only waited out when no confirmation comes).
const ACK_LIMIT: Duration = Duration::from_secs(10);

/// A CDP command given by name, with a JSON answer.
#[derive(Debug)]
pub(crate) struct Raw {
    method: &'static str,
    params: Value,
}

impl Raw {
    pub fn new(method: &'static str, params: Value) -> Self {
        Raw { method, params }
    }
}

impl Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.params.serialize(s)
    }
}

impl Method for Raw {
    fn identifier(&self) -> MethodId {
        self.method.into()
    }
}

impl Command for Raw {
    type Response = Value;
}

pub(crate) fn cdp_error(error: chromiumoxide::error::CdpError) -> BrowserError {
    use chromiumoxide::error::CdpError;
    match error {
        CdpError::Chrome(e) => BrowserError::Cdp(e.message),
        CdpError::Timeout => BrowserError::Timeout("Chromium did not answer in time".to_owned()),
        CdpError::Ws(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse => {
            BrowserError::Gone("the connection to Chromium closed".to_owned())
        }
        other => BrowserError::Cdp(other.to_string()),
    }
}

#[derive(Default)]
struct State {
    main_frame: String,
    /// The main frame's current document (navigationId).
    loader: String,
    /// The main frame's URL as the page shows it, fragment included.
    url: String,
    /// The main frame's same-document navigations (fragment, history API) so far.
    same_document: u64,
    /// Navigations the main frame's page asked for (a link, a form, a script) so far.
    requested: u64,
    /// Times the main frame started and stopped loading.
    started: u64,
    stopped: u64,
    /// Network requests of the tab still in flight (their request ids).
    in_flight: HashSet<String>,
    /// frame id → (execution context id, unique id) of Lomi's world in its current document.
    worlds: HashMap<String, (i64, String)>,
    /// frame id → the number in its ref prefix, stable for the tab's life.
    frame_numbers: HashMap<String, u32>,
    reached: HashMap<String, Reached>,
    status: HashMap<String, (u16, String)>,
    acks: HashMap<String, String>,
    dialog: Option<DialogView>,
    snapshots: VecDeque<SnapshotRecord>,
    next_snapshot: u64,
    next_token: u64,
    /// Chromium destroyed the tab's target (it closed, or its page closed itself): nothing
    /// more will come from it, so no wait on it lasts its full limit.
    closed: bool,
}

/// What a command on a tab that closed meanwhile answers.
fn tab_closed() -> BrowserError {
    BrowserError::Stale(
        "the tab closed during the call (its page closed itself, or it was closed); list the \
         tabs with lomi_browser_tab_list and take a new snapshot"
            .to_owned(),
    )
}

/// A tab of a browser. Cheap to clone.
#[derive(Clone)]
pub struct Tab {
    pub id: String,
    /// The tab whose page opened this one (a popup), if any.
    pub opener: Option<String>,
    browser: Browser,
    page: Page,
    state: Arc<Mutex<State>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Tab {
    /// Prepares a new page: Lomi's world and binding in every frame, and the event pump.
    /// `opener` is the tab whose page opened it (a popup).
    pub(crate) async fn attach(
        browser: Browser,
        page: Page,
        opener: Option<String>,
    ) -> Result<Tab, BrowserError> {
        let id = page.target_id().as_ref().to_owned();
        let (changed, _) = watch::channel(0u64);
        let tab = Tab {
            id: id.clone(),
            opener,
            browser,
            page,
            state: Arc::new(Mutex::new(State {
                main_frame: id,
                ..State::default()
            })),
            changed: Arc::new(changed),
        };
        tab.pump().await?;
        let emulation = tab.browser.emulation();
        if emulation.mobile || emulation.user_agent.is_some() || emulation.color_scheme.is_some() {
            tab.emulate(&emulation).await?;
        } else {
            tab.raw(
                "Emulation.setDeviceMetricsOverride",
                json!({
                    "width": emulation.width, "height": emulation.height,
                    "deviceScaleFactor": emulation.scale, "mobile": false,
                }),
            )
            .await?;
        }
        tab.raw(
            "Runtime.addBinding",
            json!({ "name": "lomiAck", "executionContextName": WORLD }),
        )
        .await?;
        tab.raw(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": WALKER, "worldName": WORLD }),
        )
        .await?;
        let tree = tab.raw("Page.getFrameTree", json!({})).await?;
        let main = &tree["frameTree"]["frame"];
        {
            let mut state = tab.lock();
            state.loader = main["loaderId"].as_str().unwrap_or_default().to_owned();
            state.url = main["url"].as_str().unwrap_or_default().to_owned();
        }
        Ok(tab)
    }

    /// The browser this tab belongs to.
    pub fn browser(&self) -> Browser {
        self.browser.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves whenever one of the tab's events arrives (a navigation, a dialog, a request, …).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Chromium destroyed this tab's target: every wait on its events ends now.
    pub(crate) fn mark_closed(&self) {
        self.lock().closed = true;
        self.bump();
    }

    /// Resolves once Chromium destroyed this tab's target. A command in flight on a page that
    /// closes (a button that closes its own popup) is not always answered.
    async fn closed(&self) {
        let mut changed = self.changed.subscribe();
        while !self.lock().closed {
            if changed.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// Sends a CDP command to this tab.
    pub(crate) async fn raw(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<Value, BrowserError> {
        if let Some(gone) = self.browser.gone() {
            return Err(gone);
        }
        // A command in flight when the browser dies or the tab closes is not always answered:
        // stop waiting then.
        tokio::select! {
            answer = self.page.execute(Raw::new(method, params)) => match answer {
                Ok(answer) => Ok(answer.result),
                Err(error) => Err(self.browser.failure(cdp_error(error))),
            },
            _exit = self.browser.exited() => Err(self.browser.failure(BrowserError::Gone(
                "the browser ended during the call".to_owned(),
            ))),
            () = self.closed() => Err(tab_closed()),
        }
    }

    /// Why the tab's browser is gone, once its process has ended.
    pub(crate) fn gone(&self) -> Option<BrowserError> {
        self.browser.gone()
    }

    /// A command sent to this tab's page over its own DevTools connection (see `direct.rs`),
    /// given up when the browser ends.
    async fn direct(&self, method: &'static str, params: Value) -> Result<Value, ActionError> {
        if let Some(gone) = self.browser.gone() {
            return Err(ActionError::Refused(gone));
        }
        tokio::select! {
            answer = crate::direct::page_command(self.browser.devtools(), &self.id, method, params) => answer,
            _exit = self.browser.exited() => Err(ActionError::Dispatched(self.browser.failure(
                BrowserError::Gone("the browser ended during the call".to_owned()),
            ))),
            () = self.closed() => Err(ActionError::Dispatched(tab_closed())),
        }
    }

    /// Waits (at most `limit`) until `done` holds for the tab's state, re-checking on every
    /// event. Returns whether it did; false at once when the tab's target was destroyed or
    /// the browser is gone.
    async fn wait_until(&self, limit: Duration, mut done: impl FnMut(&State) -> bool) -> bool {
        let mut changed = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let closed = {
                let state = self.lock();
                if done(&state) {
                    return true;
                }
                state.closed
            };
            if closed || self.browser.gone().is_some() {
                return false;
            }
            tokio::select! {
                result = changed.changed() => if result.is_err() { return false; },
                () = tokio::time::sleep_until(deadline) => return done(&self.lock()),
                _exit = self.browser.exited() => return done(&self.lock()),
            }
        }
    }

    /// The current URL, as the page's events last said (no call to Chromium).
    pub fn current_url(&self) -> String {
        self.lock().url.clone()
    }

    /// The current URL and title, as the browser reports the tab (the URL from the page's
    /// events when the browser does not answer).
    pub async fn location(&self) -> (String, String) {
        // Asked of the browser, not the page, so an open dialog does not block it.
        let info = self
            .raw("Target.getTargetInfo", json!({ "targetId": self.id }))
            .await
            .ok();
        let field = |name: &str| {
            info.as_ref()
                .and_then(|v| v["targetInfo"][name].as_str().map(str::to_owned))
        };
        // The page's events keep the fragment and history-API URLs, which the target's info
        // may not show yet.
        let url = Some(self.current_url())
            .filter(|url| !url.is_empty())
            .or_else(|| field("url"))
            .unwrap_or_default();
        (url, field("title").unwrap_or_default())
    }

    pub fn navigation_id(&self) -> String {
        self.lock().loader.clone()
    }

    pub fn dialog(&self) -> Option<DialogView> {
        self.lock().dialog.clone()
    }

    fn no_dialog(&self) -> Result<(), BrowserError> {
        match self.dialog() {
            Some(dialog) => Err(BrowserError::Invalid(format!(
                "a JavaScript {} dialog is open ({:?}); accept or dismiss it with lomi_browser_dialog first",
                dialog.kind, dialog.message
            ))),
            None => Ok(()),
        }
    }
}
