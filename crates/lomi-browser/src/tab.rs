//! One tab: its chromiumoxide page, Lomi's isolated world in each of its frames, the events
//! that keep its state (navigations, lifecycle, dialogs, acknowledgements, logs), snapshots
//! and the actions on them. Actions aim at the element a ref names only after checking that it
//! is the same, still connected node; they succeed when the page reports, through the
//! `lomiAck` binding, that the event reached that node.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::prelude::{BASE64_STANDARD, Engine as _};
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::EventDragIntercepted;
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived,
};
use chromiumoxide::cdp::browser_protocol::page::{
    ClientNavigationDisposition, EventFrameNavigated, EventFrameRequestedNavigation,
    EventFrameStartedLoading, EventFrameStoppedLoading, EventJavascriptDialogClosed,
    EventJavascriptDialogOpening, EventLifecycleEvent, EventNavigatedWithinDocument,
    EventScreencastFrame,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EventBindingCalled, EventConsoleApiCalled, EventExceptionThrown, EventExecutionContextCreated,
    EventExecutionContextDestroyed, EventExecutionContextsCleared, RemoteObject,
};
use chromiumoxide::types::{Command, Method, MethodId};
use futures_util::StreamExt;
use lomi_protocol::tools::browser::{ClipRect, DialogView, FrameView};
use lomi_snapshot::{FrameRecord, SnapshotOptions, parse_key, split_ref, stitch};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::BrowserError;
use crate::browser::{Browser, Logs};
use crate::snapshot::SnapshotText;

/// The in-page helper (see walker.js).
const WALKER: &str = include_str!("walker.js");
/// The name of Lomi's isolated world in every frame.
const WORLD: &str = "lomi";
/// How long an action waits for the page to confirm that its event arrived. A page busy
/// with its own work on a loaded machine can take seconds to run the listener; an event
/// that did arrive but was not confirmed in time settles `outcome_unknown`, so the limit errs
/// long (it is only waited out when no confirmation comes).
const ACK_LIMIT: Duration = Duration::from_secs(10);
/// How long an acknowledgement may trail the dialog its event opened.
const DIALOG_ACK_GRACE: Duration = Duration::from_millis(500);
/// How long the network stays quiet before a wait calls it idle.
const NETWORK_QUIET: Duration = Duration::from_millis(500);
/// How long the network must be quiet before a deterministic capture: shorter than a wait's
/// idle, since the capture follows a finished load and only needs nothing in flight.
const STEADY_QUIET: Duration = Duration::from_millis(100);
/// Run in the page by [`Tab::steady`] with its time limit in ms; true once fonts loaded.
const STEADY_SCRIPT: &str = r#"async (limit) => {
  if (!document.getElementById('__lomi_steady')) {
    const style = document.createElement('style');
    style.id = '__lomi_steady';
    style.textContent = '*,*::before,*::after{animation:none!important;transition:none!important;caret-color:transparent!important}';
    (document.head || document.documentElement).appendChild(style);
  }
  for (const a of document.getAnimations()) {
    try { a.effect.getComputedTiming().endTime === Infinity ? a.cancel() : a.finish(); } catch (e) { a.cancel(); }
  }
  const late = (ms) => new Promise((done) => setTimeout(() => done(false), ms));
  const fonts = document.fonts
    ? await Promise.race([document.fonts.ready.then(() => document.fonts.status === 'loaded'), late(limit)])
    : true;
  await Promise.race([new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))), late(200)]);
  return fonts;
}"#;
/// How long a click aims again at an element the page keeps moving away from its press.
const AIM_LIMIT: Duration = Duration::from_secs(5);
/// How long a cancelled navigation's own answer is awaited after its load was stopped (one that
/// had just finished still reports its success).
const STOPPED_NAVIGATION_WAIT: Duration = Duration::from_secs(1);
/// Snapshots kept per tab; refs of older ones are SNAPSHOT_STALE.
const SNAPSHOTS_KEPT: usize = 8;
/// How long an action that made its page request a navigation waits for that navigation to
/// commit before it settles without it.
const NAVIGATION_COMMIT_LIMIT: Duration = Duration::from_secs(10);

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

/// One snapshot as the tab remembers it.
struct SnapshotRecord {
    id: String,
    loader: String,
    /// ref prefix ("e", "f1e", …) → the frame it was taken in.
    frames: HashMap<String, FrameRecord>,
    refs: HashSet<String>,
    lines: Vec<String>,
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

/// A browser's device emulation, applied to every tab (and to tabs opened later).
#[derive(Clone, Debug, PartialEq)]
pub struct Emulation {
    pub width: u32,
    pub height: u32,
    pub scale: f64,
    pub mobile: bool,
    pub user_agent: Option<String>,
    pub color_scheme: Option<String>,
}

/// What a confirmed action observed.
#[derive(Clone, Debug)]
pub struct ActionResult {
    pub element: Option<String>,
    pub observed: Value,
}

/// What to capture.
#[derive(Clone, Debug)]
pub enum CaptureArea {
    Viewport,
    FullPage,
    Element {
        snapshot_id: String,
        element_ref: String,
    },
    Clip(ClipRect),
}

/// Where a ref leads: its frame's world and the element's number there.
struct Resolved {
    context: i64,
    number: u64,
    frame_prefix: String,
    frames: HashMap<String, FrameRecord>,
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

    /// A round trip through Lomi's world of the main frame that the event pump sees after
    /// every event the page sent before it. Best effort: a page between documents has no world.
    async fn fence(&self) {
        let main = self.lock().main_frame.clone();
        let Ok(context) = self.world(&main).await else {
            return;
        };
        let token = self.token();
        if self
            .helper(context, &format!("fence({})", json!(token)))
            .await
            .is_err()
        {
            return;
        }
        self.wait_until(ACK_LIMIT, |state| state.acks.contains_key(&token))
            .await;
        self.lock().acks.remove(&token);
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

    /// Subscribes to the events that keep this tab's state.
    async fn pump(&self) -> Result<(), BrowserError> {
        macro_rules! listen {
            ($event:ty) => {
                self.page
                    .event_listener::<$event>()
                    .await
                    .map_err(|e| self.browser.failure(cdp_error(e)))?
            };
        }
        let mut created = listen!(EventExecutionContextCreated);
        let mut destroyed = listen!(EventExecutionContextDestroyed);
        let mut cleared = listen!(EventExecutionContextsCleared);
        let mut navigated = listen!(EventFrameNavigated);
        let mut lifecycle = listen!(EventLifecycleEvent);
        let mut within = listen!(EventNavigatedWithinDocument);
        let mut requested = listen!(EventFrameRequestedNavigation);
        let mut started = listen!(EventFrameStartedLoading);
        let mut stopped = listen!(EventFrameStoppedLoading);
        let mut binding = listen!(EventBindingCalled);
        let mut dialog_opening = listen!(EventJavascriptDialogOpening);
        let mut dialog_closed = listen!(EventJavascriptDialogClosed);
        let mut console = listen!(EventConsoleApiCalled);
        let mut exception = listen!(EventExceptionThrown);
        let mut request = listen!(EventRequestWillBeSent);
        let mut response = listen!(EventResponseReceived);
        let mut finished = listen!(EventLoadingFinished);
        let mut failed = listen!(EventLoadingFailed);
        let tab = self.clone();
        let logs = self.browser.logs();
        tokio::spawn(async move {
            loop {
                // Each event kind has its own channel, filled in the order Chromium sent the
                // events; polling them in a fixed order (a request before its response, its
                // finish or its failure) keeps that order where it matters. Unbiased, `select!`
                // could take a response first and find no request to attach it to.
                tokio::select! {
                    biased;
                    Some(e) = created.next() => {
                        if e.context.name == WORLD
                            && let Some(frame) = e.context.aux_data.as_ref().and_then(|a| a["frameId"].as_str())
                        {
                            tab.lock().worlds.insert(frame.to_owned(), (*e.context.id.inner(), e.context.unique_id.clone()));
                        }
                    }
                    Some(e) = destroyed.next() => {
                        tab.lock().worlds.retain(|_, (_, unique)| *unique != e.execution_context_unique_id);
                    }
                    Some(_) = cleared.next() => tab.lock().worlds.clear(),
                    Some(e) = navigated.next() => {
                        let mut state = tab.lock();
                        if e.frame.parent_id.is_none() {
                            state.loader = e.frame.loader_id.as_ref().to_owned();
                            // Chromium gives the fragment apart from the URL.
                            state.url = format!("{}{}", e.frame.url, e.frame.url_fragment.as_deref().unwrap_or_default());
                            let loader = state.loader.clone();
                            let reached = state.reached.entry(loader).or_insert(Reached::Commit);
                            *reached = (*reached).max(Reached::Commit);
                        }
                    }
                    Some(e) = lifecycle.next() => {
                        let reached = match e.name.as_str() {
                            "DOMContentLoaded" => Some(Reached::DomContentLoaded),
                            "load" => Some(Reached::Load),
                            "commit" => Some(Reached::Commit),
                            _ => None,
                        };
                        let mut state = tab.lock();
                        if let Some(reached) = reached && e.frame_id.as_ref() == state.main_frame {
                            let entry = state.reached.entry(e.loader_id.as_ref().to_owned()).or_insert(reached);
                            *entry = (*entry).max(reached);
                            if state.reached.len() > 64 {
                                let keep = state.loader.clone();
                                state.reached.retain(|k, _| *k == keep);
                            }
                        }
                    }
                    // Before the bindings, so a fence (see `navigation_since`) comes after them.
                    Some(e) = within.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame {
                            state.url = e.url.clone();
                            state.same_document += 1;
                        }
                    }
                    Some(e) = requested.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame
                            && e.disposition == ClientNavigationDisposition::CurrentTab
                        {
                            state.requested += 1;
                        }
                    }
                    Some(e) = started.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame {
                            state.started += 1;
                        }
                    }
                    Some(e) = stopped.next() => {
                        let mut state = tab.lock();
                        if e.frame_id.as_ref() == state.main_frame {
                            state.stopped += 1;
                        }
                    }
                    Some(e) = binding.next() => {
                        tracing::debug!("tab {}: binding {} {}", tab.id, e.name, e.payload);
                        if e.name == "lomiAck"
                            && let Ok(ack) = serde_json::from_str::<Value>(&e.payload)
                            && let Some(token) = ack["token"].as_str()
                        {
                            let mut kind = ack["type"].as_str().unwrap_or_default().to_owned();
                            if let Some(hit) = ack["hit"].as_str() {
                                kind = format!("{kind} {hit}");
                            }
                            tab.lock().acks.insert(token.to_owned(), kind);
                        }
                    }
                    Some(e) = dialog_opening.next() => {
                        tracing::debug!("tab {}: a {} dialog opened", tab.id, e.r#type.as_ref());
                        tab.lock().dialog = Some(DialogView {
                            kind: e.r#type.as_ref().to_owned(),
                            message: e.message.chars().take(4096).collect(),
                            default_prompt: e.default_prompt.clone(),
                        });
                    }
                    Some(_) = dialog_closed.next() => tab.lock().dialog = None,
                    Some(e) = console.next() => {
                        let text = e.args.iter().map(remote_text).collect::<Vec<_>>().join(" ");
                        let url = e.stack_trace.as_ref().and_then(|s| s.call_frames.first()).map(|f| f.url.clone());
                        let level = match e.r#type.as_ref() {
                            "warning" => "warning",
                            "error" | "assert" => "error",
                            "debug" => "debug",
                            "info" => "info",
                            _ => "log",
                        };
                        lock_logs(&logs).console(&tab.id, level, text, url);
                    }
                    Some(e) = exception.next() => {
                        let details = &e.exception_details;
                        let text = details.exception.as_ref().and_then(|x| x.description.clone()).unwrap_or_else(|| details.text.clone());
                        lock_logs(&logs).console(&tab.id, "exception", text, details.url.clone());
                    }
                    Some(e) = request.next() => {
                        {
                            let mut state = tab.lock();
                            // A page that never ends its requests is not idle anyway; bounded.
                            if state.in_flight.len() < 10_000 {
                                state.in_flight.insert(e.request_id.as_ref().to_owned());
                            }
                        }
                        let kind = e.r#type.as_ref().map(|t| t.as_ref().to_owned()).unwrap_or_default();
                        lock_logs(&logs).request(&tab.id, e.request_id.as_ref(), &e.request.method, &e.request.url, &kind);
                    }
                    Some(e) = response.next() => {
                        let status = u16::try_from(e.response.status).ok();
                        if let Some(entry) = lock_logs(&logs).request_mut(e.request_id.as_ref()) {
                            entry.status = status;
                            entry.mime_type = Some(e.response.mime_type.clone());
                        }
                        if e.r#type.as_ref() == "Document" && let Some(status) = status {
                            let mut state = tab.lock();
                            state.status.insert(e.loader_id.as_ref().to_owned(), (status, e.response.url.clone()));
                            if state.status.len() > 64 {
                                state.status.clear();
                            }
                        }
                    }
                    Some(e) = finished.next() => {
                        tab.lock().in_flight.remove(e.request_id.as_ref());
                        if let Some(entry) = lock_logs(&logs).request_mut(e.request_id.as_ref()) {
                            entry.bytes = Some(e.encoded_data_length.max(0.0) as u64);
                        }
                    }
                    Some(e) = failed.next() => {
                        tab.lock().in_flight.remove(e.request_id.as_ref());
                        if let Some(entry) = lock_logs(&logs).request_mut(e.request_id.as_ref()) {
                            entry.failed = Some(e.error_text.clone());
                        }
                    }
                    else => break,
                }
                tab.bump();
            }
            // The page is gone: wake anyone waiting so they see it.
            tab.bump();
        });
        Ok(())
    }

    /// Lomi's world in a frame: the one its events announced, or a new one.
    async fn world(&self, frame: &str) -> Result<i64, BrowserError> {
        if let Some((context, _)) = self.lock().worlds.get(frame) {
            return Ok(*context);
        }
        let made = self
            .raw(
                "Page.createIsolatedWorld",
                json!({ "frameId": frame, "worldName": WORLD }),
            )
            .await?;
        let context = made["executionContextId"]
            .as_i64()
            .ok_or_else(|| BrowserError::Cdp("no execution context for Lomi's world".to_owned()))?;
        self.lock()
            .worlds
            .entry(frame.to_owned())
            .or_insert((context, String::new()));
        Ok(context)
    }

    /// Calls `__lomi.<call>` in a world (installing the helper there first if needed) and
    /// returns the value.
    async fn helper(&self, context: i64, call: &str) -> Result<Value, BrowserError> {
        let expression = format!(
            "(() => {{ if (!globalThis.__lomi) {{ {WALKER} }} return globalThis.__lomi.{call}; }})()"
        );
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": expression, "contextId": context, "returnByValue": true,
                    "awaitPromise": true,
                }),
            )
            .await
            .map_err(|error| match error {
                BrowserError::Cdp(message) if message.contains("context") => {
                    BrowserError::Stale(format!("the frame's document is gone ({message})"))
                }
                other => other,
            })?;
        if let Some(details) = answer.get("exceptionDetails") {
            let text = details["exception"]["description"]
                .as_str()
                .or_else(|| details["text"].as_str())
                .unwrap_or("an exception");
            return Err(BrowserError::Cdp(format!(
                "Lomi's page helper failed: {text}"
            )));
        }
        Ok(answer["result"]["value"].clone())
    }

    /// Takes a snapshot of every frame of the tab.
    pub async fn snapshot(&self, options: &SnapshotOptions) -> Result<SnapshotText, BrowserError> {
        let dialog = self.dialog();
        let loader = self.navigation_id();
        if let Some(dialog) = dialog {
            // The page is blocked until the dialog is answered: nothing else can be read.
            let url = self.lock().url.clone();
            return Ok(SnapshotText {
                snapshot_id: String::new(),
                navigation_id: loader,
                url,
                title: String::new(),
                text: format!(
                    "A JavaScript {} dialog is open: {:?}. Answer it with lomi_browser_dialog.\n",
                    dialog.kind, dialog.message
                ),
                truncated: false,
                lines: 1,
                next_from_line: None,
                refs: 0,
                frames: Vec::new(),
                dialog: Some(dialog),
                loading: false,
            });
        }
        let tree = self.raw("Page.getFrameTree", json!({})).await?;
        let mut frames: Vec<(String, Option<String>, String)> = Vec::new();
        collect_frames(&tree["frameTree"], None, &mut frames);
        let (snapshot_no, title_default) = {
            let mut state = self.lock();
            state.next_snapshot += 1;
            (state.next_snapshot, state.url.clone())
        };
        let snapshot_id = format!("s{snapshot_no}");
        let mut records: HashMap<String, FrameRecord> = HashMap::new();
        let mut prefixes: HashMap<String, String> = HashMap::new();
        let mut texts: HashMap<String, Value> = HashMap::new();
        let mut title = String::new();
        let mut loading = false;
        let mut views = Vec::new();
        if dialog.is_none() {
            for (frame_id, parent, url) in &frames {
                let prefix = self.prefix(frame_id, parent.is_none());
                let context = self.world(frame_id).await?;
                let taken = match self
                    .helper(context, &format!("snap({})", json!(prefix)))
                    .await
                {
                    Ok(taken) => taken,
                    // A frame that went away meanwhile is left out of this snapshot.
                    Err(BrowserError::Stale(_)) if parent.is_some() => continue,
                    Err(error) => return Err(error),
                };
                if parent.is_none() {
                    title = taken["title"].as_str().unwrap_or_default().to_owned();
                    loading = taken["loading"].as_bool().unwrap_or(false);
                }
                prefixes.insert(frame_id.clone(), prefix.clone());
                records.insert(
                    prefix.clone(),
                    FrameRecord {
                        frame_id: frame_id.clone(),
                        context,
                        owner: None,
                    },
                );
                texts.insert(prefix, taken);
                views.push(FrameView {
                    frame_id: frame_id.clone(),
                    parent_frame_id: parent.clone(),
                    url: url.clone(),
                });
            }
            // Which iframe element holds each child frame.
            for (frame_id, parent, _) in &frames {
                let (Some(parent), Some(prefix)) = (parent, prefixes.get(frame_id)) else {
                    continue;
                };
                let Some(parent_prefix) = prefixes.get(parent) else {
                    continue;
                };
                let parent_context = records[parent_prefix].context;
                if let Ok(number) = self.owner_number(frame_id, parent_context).await
                    && let Some(record) = records.get_mut(prefix)
                {
                    record.owner = Some((parent_prefix.clone(), number));
                }
            }
        }
        let mut lines = Vec::new();
        let mut refs = HashSet::new();
        if let Some(main) = frames.first().and_then(|(id, _, _)| prefixes.get(id)) {
            stitch(main, &texts, &records, 0, &mut lines, &mut refs);
        }
        let previous = options.since_snapshot_id.as_ref().map(|since| {
            let state = self.lock();
            state
                .snapshots
                .iter()
                .find(|s| &s.id == since)
                .map(|s| (s.loader.clone(), s.lines.clone()))
        });
        let diff_base = match previous {
            None => None,
            Some(None) => {
                return Err(BrowserError::Stale(format!(
                    "snapshot {} is not one of this tab's recent snapshots; take a full one",
                    options.since_snapshot_id.as_deref().unwrap_or_default()
                )));
            }
            Some(Some((old_loader, _))) if old_loader != loader => {
                return Err(BrowserError::Stale(
                    "the page navigated since that snapshot; take a full one".to_owned(),
                ));
            }
            Some(Some((_, old_lines))) => Some(old_lines),
        };
        let text = lomi_snapshot::render(&lines, diff_base.as_deref(), options);
        {
            let mut state = self.lock();
            state.snapshots.push_back(SnapshotRecord {
                id: snapshot_id.clone(),
                loader: loader.clone(),
                frames: records,
                refs: refs.clone(),
                lines,
            });
            while state.snapshots.len() > SNAPSHOTS_KEPT {
                state.snapshots.pop_front();
            }
        }
        Ok(SnapshotText {
            snapshot_id,
            navigation_id: loader,
            url: title_default,
            title,
            text: text.text,
            truncated: text.truncated,
            lines: u32::try_from(text.lines).unwrap_or(u32::MAX),
            next_from_line: text
                .next_from_line
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            refs: u32::try_from(refs.len()).unwrap_or(u32::MAX),
            frames: views,
            dialog,
            loading,
        })
    }

    /// The ref prefix of a frame: "e" for the main frame, "f<n>e" for others.
    fn prefix(&self, frame: &str, main: bool) -> String {
        if main {
            return "e".to_owned();
        }
        let mut state = self.lock();
        let next = u32::try_from(state.frame_numbers.len()).unwrap_or(u32::MAX) + 1;
        let number = *state.frame_numbers.entry(frame.to_owned()).or_insert(next);
        format!("f{number}e")
    }

    /// The element number (in the parent frame's world) of the iframe that holds `frame`.
    async fn owner_number(&self, frame: &str, parent_context: i64) -> Result<u64, BrowserError> {
        let owner = self
            .raw("DOM.getFrameOwner", json!({ "frameId": frame }))
            .await?;
        let node = owner["backendNodeId"].clone();
        let object = self
            .raw(
                "DOM.resolveNode",
                json!({ "backendNodeId": node, "executionContextId": parent_context }),
            )
            .await?;
        let object_id = object["object"]["objectId"].clone();
        let answer = self
            .raw(
                "Runtime.callFunctionOn",
                json!({
                    "objectId": object_id,
                    "functionDeclaration": "function() { return globalThis.__lomi ? globalThis.__lomi.refOf(this) : null; }",
                    "returnByValue": true,
                }),
            )
            .await?;
        answer["result"]["value"]
            .as_u64()
            .ok_or_else(|| BrowserError::Stale("the iframe was not in the snapshot".to_owned()))
    }

    /// Finds the element a ref of a snapshot names, refusing anything stale.
    fn resolve(&self, snapshot_id: &str, element_ref: &str) -> Result<Resolved, BrowserError> {
        let state = self.lock();
        let record = state
            .snapshots
            .iter()
            .find(|s| s.id == snapshot_id)
            .ok_or_else(|| {
                BrowserError::Stale(format!(
                    "snapshot {snapshot_id} is not one of this tab's {SNAPSHOTS_KEPT} most recent snapshots; take a new one"
                ))
            })?;
        if record.loader != state.loader {
            return Err(BrowserError::Stale(format!(
                "the page navigated since snapshot {snapshot_id}; take a new snapshot"
            )));
        }
        if !record.refs.contains(element_ref) {
            return Err(BrowserError::Invalid(format!(
                "snapshot {snapshot_id} has no ref {element_ref:?}"
            )));
        }
        let (prefix, number) = split_ref(element_ref)?;
        let frame = record.frames.get(prefix).ok_or_else(|| {
            BrowserError::Invalid(format!("snapshot {snapshot_id} has no ref {element_ref:?}"))
        })?;
        // The frame's document must be the one the snapshot saw.
        match state.worlds.get(&frame.frame_id) {
            Some((context, _)) if *context == frame.context => {}
            _ => {
                return Err(BrowserError::Stale(format!(
                    "the frame of {element_ref} navigated or went away since snapshot {snapshot_id}; take a new snapshot"
                )));
            }
        }
        Ok(Resolved {
            context: frame.context,
            number,
            frame_prefix: prefix.to_owned(),
            frames: record.frames.clone(),
        })
    }

    /// Where a frame's viewport origin is in the tab's viewport (0,0 for the main frame).
    async fn frame_origin(&self, resolved: &Resolved) -> Result<(f64, f64), BrowserError> {
        let (mut x, mut y) = (0.0, 0.0);
        let mut prefix = resolved.frame_prefix.clone();
        for _ in 0..16 {
            let Some(frame) = resolved.frames.get(&prefix) else {
                break;
            };
            let Some((parent, number)) = frame.owner.clone() else {
                break;
            };
            let parent_context = resolved.frames[&parent].context;
            let origin = self
                .helper(parent_context, &format!("frameOrigin({number})"))
                .await?;
            if origin["stale"] == true {
                return Err(BrowserError::Stale("the iframe went away".to_owned()));
            }
            x += origin["x"].as_f64().unwrap_or(0.0);
            y += origin["y"].as_f64().unwrap_or(0.0);
            prefix = parent;
        }
        Ok((x, y))
    }

    fn token(&self) -> String {
        let mut state = self.lock();
        state.next_token += 1;
        format!("{}-{}", self.id, state.next_token)
    }

    /// Checks what a helper answered before an action: stale refs and refusals.
    fn checked(answer: Value, element_ref: &str) -> Result<Value, BrowserError> {
        if answer["stale"] == true {
            return Err(BrowserError::Stale(format!(
                "{element_ref} is no longer in the page (it was removed or re-rendered); take a new snapshot"
            )));
        }
        if let Some(error) = answer["error"].as_str() {
            return Err(BrowserError::Invalid(error.to_owned()));
        }
        if answer.is_null() {
            return Err(BrowserError::Cdp(
                "Lomi's page helper gave no answer".to_owned(),
            ));
        }
        Ok(answer)
    }

    /// Waits for the page's acknowledgement of `token`.
    async fn acknowledged(&self, token: &str) -> Result<String, Unconfirmed> {
        let token = token.to_owned();
        let seen = self
            .wait_until(ACK_LIMIT, |state| {
                state.acks.contains_key(&token) || state.dialog.is_some()
            })
            .await;
        // The page acknowledges before its own handlers run, so a dialog the event opened comes
        // after the acknowledgement; but the two arrive on separate channels, and the dialog
        // may be seen first. Its acknowledgement is then on its way.
        if seen && !self.lock().acks.contains_key(&token) {
            self.wait_until(DIALOG_ACK_GRACE, |state| state.acks.contains_key(&token))
                .await;
        }
        let mut state = self.lock();
        if let Some(kind) = state.acks.remove(&token) {
            return Ok(kind);
        }
        drop(state);
        if let Some(gone) = self.browser.gone() {
            return Err(Unconfirmed(gone.to_string()));
        }
        if seen {
            return Err(Unconfirmed(
                "a dialog opened before the event was confirmed".to_owned(),
            ));
        }
        Err(Unconfirmed(format!(
            "the page did not confirm the event within {} s",
            ACK_LIMIT.as_secs()
        )))
    }

    /// Aims a pointer action: the point in the tab's viewport, once the element holds still
    /// there and is the topmost element at that point. `guarded`: a press that lands elsewhere
    /// is stopped in the page and reported as `missed` (see walker.js).
    async fn aim(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        events: &[&str],
        guarded: bool,
    ) -> Result<Aimed, BrowserError> {
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let token = self.token();
        let answer = self
            .helper(
                resolved.context,
                &format!(
                    "pointer({}, {}, {}, {guarded})",
                    resolved.number,
                    json!(events),
                    json!(token)
                ),
            )
            .await?;
        let answer = Self::checked(answer, element_ref)?;
        let (ox, oy) = self.frame_origin(&resolved).await?;
        Ok(Aimed {
            x: answer["x"].as_f64().unwrap_or(0.0) + ox,
            y: answer["y"].as_f64().unwrap_or(0.0) + oy,
            token,
            element: answer["element"].as_str().unwrap_or_default().to_owned(),
            context: Some(resolved.context),
        })
    }

    /// Stops an action's listener and guard in the page (best effort: the page may be gone).
    async fn disarm(&self, aimed: &Aimed) {
        if let Some(context) = aimed.context
            && let Err(error) = self
                .helper(context, &format!("disarm({})", json!(aimed.token)))
                .await
        {
            tracing::debug!("disarm: {error}");
        }
    }

    async fn mouse(
        &self,
        kind: &str,
        x: f64,
        y: f64,
        button: &str,
        count: u8,
    ) -> Result<(), BrowserError> {
        self.raw(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": button, "clickCount": count }),
        )
        .await
        .map(|_| ())
    }

    /// Listens for `events` at whatever element is under a viewport point.
    async fn listen_at(
        &self,
        x: f64,
        y: f64,
        events: &[&str],
    ) -> Result<(String, String), BrowserError> {
        self.no_dialog()?;
        let main = self.lock().main_frame.clone();
        let context = self.world(&main).await?;
        let token = self.token();
        let answer = self
            .helper(
                context,
                &format!("listenAt({x}, {y}, {}, {})", json!(events), json!(token)),
            )
            .await?;
        Ok((
            token,
            answer["element"].as_str().unwrap_or_default().to_owned(),
        ))
    }

    /// Clicks an element of a snapshot, or a viewport point. A press the page's moving
    /// content took away from the element never reaches the page; the click aims again, for
    /// at most [`AIM_LIMIT`].
    pub async fn click(
        &self,
        target: Target<'_>,
        button: &str,
        count: u8,
    ) -> Result<ActionResult, ActionError> {
        let deadline = tokio::time::Instant::now() + AIM_LIMIT;
        let mut missed = 0u32;
        loop {
            let aimed = match target {
                Target::Element {
                    snapshot_id,
                    element_ref,
                } => {
                    let event = match button {
                        "right" => "contextmenu",
                        "middle" => "auxclick",
                        _ if count == 2 => "dblclick",
                        _ => "click",
                    };
                    self.aim(snapshot_id, element_ref, &[event], true).await?
                }
                Target::Point { x, y } => {
                    let (token, element) = self.listen_at(x, y, &["mouseup"]).await?;
                    Aimed {
                        x,
                        y,
                        token,
                        element,
                        context: None,
                    }
                }
                Target::None => {
                    return Err(BrowserError::Invalid(
                        "click needs snapshotId + elementRef, or x + y".to_owned(),
                    )
                    .into());
                }
            };
            match self.click_at(&aimed, button, count).await? {
                Pressed::Reached(mut done) => {
                    // How many presses the page's moving content took elsewhere first.
                    done.observed["missedPresses"] = json!(missed);
                    return Ok(done);
                }
                Pressed::Missed(hit) => {
                    missed += 1;
                    self.disarm(&aimed).await;
                    if tokio::time::Instant::now() < deadline {
                        tracing::debug!("tab {}: {hit}; aiming again", self.id);
                        continue;
                    }
                    let name = match target {
                        Target::Element { element_ref, .. } => element_ref,
                        _ => "the element",
                    };
                    return Err(ActionError::Refused(BrowserError::Stale(format!(
                        "{name} kept moving: for {} s every click missed it (the last time {hit}), and \
                         each was stopped before the page saw a click; wait for the page to settle \
                         (lomi_browser_wait), take a new snapshot and try again",
                        AIM_LIMIT.as_secs()
                    ))));
                }
            }
        }
    }

    /// Presses and releases the mouse where `aimed` says, and waits for the page's word.
    async fn click_at(
        &self,
        aimed: &Aimed,
        button: &str,
        count: u8,
    ) -> Result<Pressed, ActionError> {
        let Aimed {
            x,
            y,
            ref token,
            ref element,
            ..
        } = *aimed;
        self.mouse("mouseMoved", x, y, "none", 0).await?;
        // From here on an event may have reached the page.
        let dispatched = async {
            for n in 1..=count {
                self.mouse("mousePressed", x, y, button, n).await?;
                // The release of a click that opens a dialog is only answered once the dialog
                // closes: do not wait for it.
                let tab = self.clone();
                let button = button.to_owned();
                let release =
                    tokio::spawn(async move { tab.mouse("mouseReleased", x, y, &button, n).await });
                if n == count {
                    return Ok::<_, BrowserError>(release);
                }
                match release.await {
                    Ok(result) => result?,
                    Err(error) => return Err(BrowserError::Cdp(error.to_string())),
                }
            }
            Err(BrowserError::Invalid(
                "clickCount must be 1 to 3".to_owned(),
            ))
        };
        let release = dispatched.await.map_err(ActionError::Dispatched)?;
        let kind = self
            .acknowledged(token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        // The release is answered once the page handled it, unless a dialog opened meanwhile
        // or the page closed itself (`wait_until` ends when the tab's target is destroyed).
        tokio::select! {
            released = release => {
                // A page that closed itself on the click answers the release with the tab's
                // end: the event was confirmed above, so that is the click's own effect.
                if let Ok(Err(error)) = released
                    && !self.lock().closed
                {
                    return Err(ActionError::Dispatched(error));
                }
            }
            _dialog = self.wait_until(ACK_LIMIT, |state| state.dialog.is_some()) => {}
        }
        if let Some(hit) = kind.strip_prefix("missed ") {
            return Ok(Pressed::Missed(format!("the press landed on {hit}")));
        }
        if let Some(hit) = kind.strip_prefix("released ") {
            return Ok(Pressed::Missed(format!(
                "the press reached it but the content moved before the release, which landed on {hit}"
            )));
        }
        Ok(Pressed::Reached(ActionResult {
            element: Some(element.clone()),
            observed: json!({ "event": kind, "x": x, "y": y }),
        }))
    }

    /// Moves the mouse over an element or a point.
    pub async fn hover(&self, target: Target<'_>) -> Result<ActionResult, ActionError> {
        let (x, y, token, element) = match target {
            Target::Element {
                snapshot_id,
                element_ref,
            } => {
                let aimed = self
                    .aim(snapshot_id, element_ref, &["mouseover", "mousemove"], false)
                    .await?;
                (aimed.x, aimed.y, aimed.token, aimed.element)
            }
            Target::Point { x, y } => {
                let (token, element) = self.listen_at(x, y, &["mouseover", "mousemove"]).await?;
                (x, y, token, element)
            }
            Target::None => {
                return Err(BrowserError::Invalid(
                    "hover needs snapshotId + elementRef, or x + y".to_owned(),
                )
                .into());
            }
        };
        self.mouse("mouseMoved", x, y, "none", 0)
            .await
            .map_err(ActionError::Dispatched)?;
        let kind = self
            .acknowledged(&token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        Ok(ActionResult {
            element: Some(element),
            observed: json!({ "event": kind, "x": x, "y": y }),
        })
    }

    /// Inserts text into an element (replacing its content unless `replace` is false).
    pub async fn type_text(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        text: &str,
        replace: bool,
    ) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let token = self.token();
        let answer = self
            .helper(
                resolved.context,
                &format!("focus({}, {replace}, {})", resolved.number, json!(token)),
            )
            .await?;
        let answer = Self::checked(answer, element_ref)?;
        let element = answer["element"].as_str().unwrap_or_default().to_owned();
        let sent = if text.is_empty() {
            self.key_event("Backspace").await
        } else {
            self.raw("Input.insertText", json!({ "text": text }))
                .await
                .map(|_| ())
        };
        sent.map_err(ActionError::Dispatched)?;
        let kind = self
            .acknowledged(&token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        let value = self
            .helper(resolved.context, &format!("value({})", resolved.number))
            .await
            .map(|v| v["value"].clone())
            .unwrap_or(Value::Null);
        Ok(ActionResult {
            element: Some(element),
            observed: json!({ "event": kind, "value": truncate_value(value) }),
        })
    }

    /// Presses a key (with modifiers) at an element, or at the focused element.
    pub async fn press(&self, target: Target<'_>, key: &str) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        parse_key(key).map_err(BrowserError::from)?;
        let (context, number, label) = match target {
            Target::Element {
                snapshot_id,
                element_ref,
            } => {
                let resolved = self.resolve(snapshot_id, element_ref)?;
                (resolved.context, resolved.number, element_ref.to_owned())
            }
            Target::None => {
                let main = self.lock().main_frame.clone();
                (
                    self.world(&main).await?,
                    0,
                    "the focused element".to_owned(),
                )
            }
            Target::Point { .. } => {
                return Err(BrowserError::Invalid(
                    "press takes a ref, or no target for the focused element".to_owned(),
                )
                .into());
            }
        };
        let token = self.token();
        let answer = self
            .helper(context, &format!("key({number}, {})", json!(token)))
            .await?;
        let answer = Self::checked(answer, &label)?;
        let element = answer["element"].as_str().unwrap_or_default().to_owned();
        self.key_event(key).await.map_err(ActionError::Dispatched)?;
        let kind = self
            .acknowledged(&token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        Ok(ActionResult {
            element: Some(element),
            observed: json!({ "event": kind, "key": key }),
        })
    }

    /// Dispatches one key press: keyDown (with its text), then keyUp.
    async fn key_event(&self, key: &str) -> Result<(), BrowserError> {
        let key = parse_key(key)?;
        let mut down = json!({
            "type": if key.text.is_some() { "keyDown" } else { "rawKeyDown" },
            "key": key.key,
            "code": key.code,
            "windowsVirtualKeyCode": key.key_code,
            "modifiers": key.modifiers,
        });
        if let Some(text) = &key.text {
            down["text"] = json!(text);
            down["unmodifiedText"] = json!(text);
        }
        self.raw("Input.dispatchKeyEvent", down).await?;
        // A key that opens a dialog holds its keyUp until the dialog closes.
        let tab = self.clone();
        let up = json!({
            "type": "keyUp", "key": key.key, "code": key.code,
            "windowsVirtualKeyCode": key.key_code, "modifiers": key.modifiers,
        });
        tokio::spawn(async move {
            if let Err(error) = tab.raw("Input.dispatchKeyEvent", up).await {
                tracing::debug!("keyUp: {error}");
            }
        });
        Ok(())
    }

    /// Selects exactly the given options of a select element.
    pub async fn select(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        values: &[String],
    ) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let answer = self
            .helper(
                resolved.context,
                &format!("select({}, {})", resolved.number, json!(values)),
            )
            .await
            .map_err(ActionError::Dispatched)?;
        let answer = Self::checked(answer, element_ref).map_err(|e| match e {
            // The helper refuses before changing anything.
            e @ (BrowserError::Invalid(_) | BrowserError::Stale(_)) => ActionError::Refused(e),
            other => ActionError::Dispatched(other),
        })?;
        Ok(ActionResult {
            element: answer["element"].as_str().map(str::to_owned),
            observed: json!({ "selected": answer["selected"] }),
        })
    }

    /// Drags element `from` onto element `to` (refs of one snapshot and one frame) with the
    /// mouse. An HTML5 drag the page starts is intercepted and dropped with Chromium's drag
    /// events (a headless Chromium has no drag loop of its own); otherwise the mouse is released
    /// over the target. Confirmed by the drop (or release) reaching the target.
    pub async fn drag(
        &self,
        snapshot_id: &str,
        from: &str,
        to: &str,
    ) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        let source = self.resolve(snapshot_id, from)?;
        let target = self.resolve(snapshot_id, to)?;
        if source.frame_prefix != target.frame_prefix {
            return Err(BrowserError::Invalid(format!(
                "{from} and {to} are in different frames; a drag stays within one frame"
            ))
            .into());
        }
        let drop_token = self.token();
        let watch = self
            .helper(
                target.context,
                &format!(
                    "dropWatch({}, {}, {})",
                    target.number,
                    source.number,
                    json!(drop_token)
                ),
            )
            .await?;
        let watch = Self::checked(watch, to)?;
        let to_element = watch["element"].as_str().unwrap_or_default().to_owned();
        let watched = Aimed {
            x: 0.0,
            y: 0.0,
            token: drop_token.clone(),
            element: to_element.clone(),
            context: Some(target.context),
        };
        let result = self
            .drag_armed(snapshot_id, from, to, &target, &drop_token)
            .await;
        self.disarm(&watched).await;
        if let Err(error) = self
            .raw("Input.setInterceptDrags", json!({ "enabled": false }))
            .await
        {
            tracing::debug!("setInterceptDrags: {error}");
        }
        let (from_element, kind, html5) = result?;
        Ok(ActionResult {
            element: Some(from_element),
            observed: json!({ "event": kind, "target": to_element, "html5": html5 }),
        })
    }

    async fn drag_armed(
        &self,
        snapshot_id: &str,
        from: &str,
        to: &str,
        target: &Resolved,
        drop_token: &str,
    ) -> Result<(String, String, bool), ActionError> {
        let pressed = self.aim(snapshot_id, from, &["mousedown"], false).await?;
        let (ox, oy) = self.frame_origin(target).await?;
        self.raw("Input.setInterceptDrags", json!({ "enabled": true }))
            .await?;
        let mut intercepted = self
            .page
            .event_listener::<EventDragIntercepted>()
            .await
            .map_err(|e| self.browser.failure(cdp_error(e)))?;
        self.mouse("mouseMoved", pressed.x, pressed.y, "none", 0)
            .await?;
        // From here on an event may have reached the page.
        self.mouse("mousePressed", pressed.x, pressed.y, "left", 1)
            .await
            .map_err(ActionError::Dispatched)?;
        let press = self.acknowledged(&pressed.token).await;
        self.disarm(&pressed).await;
        press.map_err(|u| ActionError::Unconfirmed(format!("the press on {from}: {}", u.0)))?;
        let point = self
            .helper(target.context, &format!("dropPoint({})", target.number))
            .await
            .map_err(ActionError::Dispatched)?;
        let point = Self::checked(point, to).map_err(ActionError::Dispatched)?;
        let (x, y) = (
            point["x"].as_f64().unwrap_or(0.0) + ox,
            point["y"].as_f64().unwrap_or(0.0) + oy,
        );
        // Two steps, so the page sees the pointer leave the source before it reaches the target
        // (Chromium starts a drag once the pointer moved a few pixels).
        let (mx, my) = ((pressed.x + x) / 2.0, (pressed.y + y) / 2.0);
        for (px, py) in [(mx, my), (x, y)] {
            self.raw(
                "Input.dispatchMouseEvent",
                json!({ "type": "mouseMoved", "x": px, "y": py, "button": "left", "buttons": 1 }),
            )
            .await
            .map_err(ActionError::Dispatched)?;
        }
        // The move was answered once the page handled it, dragstart included.
        let started = self
            .helper(
                target.context,
                &format!("dragStarted({})", json!(drop_token)),
            )
            .await
            .map_err(ActionError::Dispatched)?["started"]
            == true;
        if started {
            let data = tokio::time::timeout(ACK_LIMIT, intercepted.next())
                .await
                .ok()
                .flatten()
                .ok_or_else(|| {
                    ActionError::Unconfirmed(
                        "the page began a drag but Chromium did not hand it over".to_owned(),
                    )
                })?
                .data
                .clone();
            // chromiumoxide leaves out an empty `items`, which Chromium requires (a drag whose
            // page set no data).
            let mut data = serde_json::to_value(&data).unwrap_or_else(|_| json!({}));
            if data.get("items").is_none() {
                data["items"] = json!([]);
            }
            for kind in ["dragEnter", "dragOver", "drop"] {
                self.raw(
                    "Input.dispatchDragEvent",
                    json!({ "type": kind, "x": x, "y": y, "data": data }),
                )
                .await
                .map_err(ActionError::Dispatched)?;
            }
        } else {
            self.mouse("mouseReleased", x, y, "left", 1)
                .await
                .map_err(ActionError::Dispatched)?;
        }
        let kind = self
            .acknowledged(drop_token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        if kind == "dragend" {
            return Err(ActionError::Failed(format!(
                "{to} did not take the drop: the drag from {from} ended without one (the page's \
                 dragover handler did not call preventDefault there)"
            )));
        }
        Ok((pressed.element, kind, started))
    }

    /// Fills several fields of one snapshot in order, each confirmed as `type`, `select` and
    /// `click` confirm theirs. Every ref and value is checked before the first field is touched;
    /// a failure after that says which fields were already filled.
    pub async fn fill(
        &self,
        snapshot_id: &str,
        fields: &[(String, String)],
    ) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        let mut kinds = Vec::with_capacity(fields.len());
        for (element_ref, value) in fields {
            let resolved = self.resolve(snapshot_id, element_ref)?;
            let field = self
                .helper(resolved.context, &format!("field({})", resolved.number))
                .await?;
            let field = Self::checked(field, element_ref)?;
            let kind = field["kind"].as_str().unwrap_or_default().to_owned();
            let refuse = |why: String| Err(ActionError::Refused(BrowserError::Invalid(why)));
            if field["disabled"] == true {
                return refuse(format!("{element_ref} is disabled"));
            }
            match kind.as_str() {
                "text" | "select" => {}
                "checkbox" | "radio" if value == "true" || value == "false" => {}
                "checkbox" | "radio" => {
                    return refuse(format!(
                        "{element_ref} is a {kind}: its value is \"true\" or \"false\", not {value:?}"
                    ));
                }
                _ => {
                    return refuse(format!(
                        "{element_ref} ({}) is not a form field: fill takes text inputs, textareas, \
                         checkboxes, radios and selects",
                        field["element"].as_str().unwrap_or_default()
                    ));
                }
            }
            if kind == "radio" && value == "false" && field["checked"] == false {
                // Already as asked.
            } else if kind == "radio" && value == "false" {
                return refuse(format!(
                    "{element_ref} is a checked radio: choose another radio of its group instead"
                ));
            }
            kinds.push(kind);
        }
        let mut done: Vec<Value> = Vec::with_capacity(fields.len());
        for ((element_ref, value), kind) in fields.iter().zip(&kinds) {
            let filled = self.fill_one(snapshot_id, element_ref, value, kind).await;
            match filled {
                Ok(observed) => done
                    .push(json!({ "elementRef": element_ref, "kind": kind, "observed": observed })),
                Err(error) if done.is_empty() => return Err(error),
                Err(error) => {
                    let before = done
                        .iter()
                        .filter_map(|d| d["elementRef"].as_str())
                        .collect::<Vec<_>>()
                        .join(", ");
                    let why = |e: &dyn std::fmt::Display| {
                        format!("{before} filled; then {element_ref}: {e}")
                    };
                    return Err(match error {
                        ActionError::Refused(e) | ActionError::Dispatched(e) => {
                            ActionError::Failed(why(&e))
                        }
                        ActionError::Failed(w) => ActionError::Failed(why(&w)),
                        ActionError::Unconfirmed(w) => ActionError::Unconfirmed(why(&w)),
                    });
                }
            }
        }
        Ok(ActionResult {
            element: None,
            observed: json!({ "fields": done }),
        })
    }

    async fn fill_one(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        value: &str,
        kind: &str,
    ) -> Result<Value, ActionError> {
        match kind {
            "text" => Ok(self
                .type_text(snapshot_id, element_ref, value, true)
                .await?
                .observed),
            "select" => Ok(self
                .select(snapshot_id, element_ref, &[value.to_owned()])
                .await?
                .observed),
            _ => {
                let want = value == "true";
                let resolved = self.resolve(snapshot_id, element_ref)?;
                let state = |answer: Value| answer["checked"] == true;
                let field = self
                    .helper(resolved.context, &format!("field({})", resolved.number))
                    .await?;
                if state(Self::checked(field, element_ref)?) == want {
                    return Ok(json!({ "checked": want, "changed": false }));
                }
                let target = Target::Element {
                    snapshot_id,
                    element_ref,
                };
                self.click(target, "left", 1).await?;
                let field = self
                    .helper(resolved.context, &format!("field({})", resolved.number))
                    .await
                    .map_err(ActionError::Dispatched)?;
                let now =
                    state(Self::checked(field, element_ref).map_err(ActionError::Dispatched)?);
                if now != want {
                    return Err(ActionError::Failed(format!(
                        "{element_ref} was clicked but the page kept it {}",
                        if now { "checked" } else { "unchecked" }
                    )));
                }
                Ok(json!({ "checked": now, "changed": true }))
            }
        }
    }

    /// Applies an emulation to this tab: viewport and scale, mobile (with touch), User-Agent
    /// and `prefers-color-scheme`.
    pub(crate) async fn emulate(&self, emulation: &Emulation) -> Result<(), BrowserError> {
        self.raw(
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": emulation.width, "height": emulation.height,
                "deviceScaleFactor": emulation.scale, "mobile": emulation.mobile,
            }),
        )
        .await?;
        self.raw(
            "Emulation.setTouchEmulationEnabled",
            json!({ "enabled": emulation.mobile }),
        )
        .await?;
        // An empty User-Agent or feature value lifts the override.
        self.raw(
            "Emulation.setUserAgentOverride",
            json!({ "userAgent": emulation.user_agent.clone().unwrap_or_default() }),
        )
        .await?;
        self.raw(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{
                "name": "prefers-color-scheme",
                "value": emulation.color_scheme.clone().unwrap_or_default(),
            }] }),
        )
        .await?;
        Ok(())
    }

    /// What the page reports of its device: innerWidth, innerHeight, devicePixelRatio,
    /// prefersDark, userAgent.
    pub async fn metrics(&self) -> Result<Value, BrowserError> {
        let main = self.lock().main_frame.clone();
        let context = self.world(&main).await?;
        self.helper(context, "metrics()").await
    }

    /// The page printed to PDF by Chromium (`Page.printToPDF`).
    pub async fn pdf(&self, landscape: bool, background: bool) -> Result<Vec<u8>, BrowserError> {
        self.no_dialog()?;
        let answer = self
            .raw(
                "Page.printToPDF",
                json!({ "landscape": landscape, "printBackground": background }),
            )
            .await?;
        let data = answer["data"].as_str().unwrap_or_default();
        let bytes = BASE64_STANDARD
            .decode(data)
            .map_err(|error| BrowserError::Cdp(format!("the PDF was not base64: {error}")))?;
        if !bytes.starts_with(b"%PDF") {
            return Err(BrowserError::Cdp(
                "Chromium's answer is not a PDF".to_owned(),
            ));
        }
        Ok(bytes)
    }

    /// The response body of one of this tab's requests (CDP request id): the bytes, and whether
    /// Chromium gave them as base64 (a body that is not text).
    pub async fn response_body(&self, request_id: &str) -> Result<(Vec<u8>, bool), BrowserError> {
        let answer = self
            .raw(
                "Network.getResponseBody",
                json!({ "requestId": request_id }),
            )
            .await?;
        let body = answer["body"].as_str().unwrap_or_default();
        if answer["base64Encoded"] == true {
            let bytes = BASE64_STANDARD
                .decode(body)
                .map_err(|error| BrowserError::Cdp(format!("the body was not base64: {error}")))?;
            Ok((bytes, true))
        } else {
            Ok((body.as_bytes().to_vec(), false))
        }
    }

    /// Scrolls an element into view, or turns the wheel at a point (or the viewport's centre).
    pub async fn scroll(
        &self,
        target: Target<'_>,
        delta: Option<(f64, f64)>,
    ) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        match (target, delta) {
            (
                Target::Element {
                    snapshot_id,
                    element_ref,
                },
                None,
            ) => {
                let resolved = self.resolve(snapshot_id, element_ref)?;
                let answer = self
                    .helper(resolved.context, &format!("reveal({})", resolved.number))
                    .await
                    .map_err(ActionError::Dispatched)?;
                let answer = Self::checked(answer, element_ref).map_err(ActionError::Refused)?;
                if answer["visible"] != true {
                    return Err(ActionError::Unconfirmed(format!(
                        "{element_ref} is still outside the viewport after scrolling"
                    )));
                }
                Ok(ActionResult {
                    element: answer["element"].as_str().map(str::to_owned),
                    observed: json!({ "visible": true, "scrollX": answer["scrollX"], "scrollY": answer["scrollY"] }),
                })
            }
            (target, Some((dx, dy))) => {
                let (x, y) = match target {
                    Target::Point { x, y } => (x, y),
                    Target::None => {
                        let emulation = self.browser.emulation();
                        (
                            f64::from(emulation.width) / 2.0,
                            f64::from(emulation.height) / 2.0,
                        )
                    }
                    Target::Element { .. } => {
                        return Err(BrowserError::Invalid(
                            "scroll takes a ref (to bring it into view) or a delta, not both"
                                .to_owned(),
                        )
                        .into());
                    }
                };
                let (token, element) = self.listen_at(x, y, &["wheel"]).await?;
                self.raw(
                    "Input.dispatchMouseEvent",
                    json!({ "type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy }),
                )
                .await
                .map_err(ActionError::Dispatched)?;
                let kind = self
                    .acknowledged(&token)
                    .await
                    .map_err(|u| ActionError::Unconfirmed(u.0))?;
                Ok(ActionResult {
                    element: Some(element),
                    observed: json!({ "event": kind, "deltaX": dx, "deltaY": dy }),
                })
            }
            _ => Err(BrowserError::Invalid(
                "scroll needs a ref to bring into view, or deltaX/deltaY".to_owned(),
            )
            .into()),
        }
    }

    /// Sets a file input's files (absolute paths, already confined by the caller).
    pub async fn upload(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        files: &[String],
    ) -> Result<ActionResult, ActionError> {
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let token = self.token();
        let answer = self
            .helper(
                resolved.context,
                &format!("fileInput({}, {})", resolved.number, json!(token)),
            )
            .await?;
        let answer = Self::checked(answer, element_ref)?;
        let object = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": format!("globalThis.__lomi.element({})", resolved.number),
                    "contextId": resolved.context,
                }),
            )
            .await?;
        let object_id = object["result"]["objectId"].clone();
        if object_id.is_null() {
            return Err(
                BrowserError::Stale(format!("{element_ref} is no longer in the page")).into(),
            );
        }
        self.raw(
            "DOM.setFileInputFiles",
            json!({ "files": files, "objectId": object_id }),
        )
        .await
        .map_err(ActionError::Dispatched)?;
        let kind = self
            .acknowledged(&token)
            .await
            .map_err(|u| ActionError::Unconfirmed(u.0))?;
        let names = self
            .helper(resolved.context, &format!("files({})", resolved.number))
            .await
            .map(|v| v["files"].clone())
            .unwrap_or(Value::Null);
        Ok(ActionResult {
            element: answer["element"].as_str().map(str::to_owned),
            observed: json!({ "event": kind, "files": names }),
        })
    }

    /// Accepts or dismisses the open JavaScript dialog; confirmed when it closed.
    pub async fn dialog_answer(
        &self,
        accept: bool,
        prompt: Option<&str>,
    ) -> Result<ActionResult, ActionError> {
        let Some(dialog) = self.dialog() else {
            return Err(BrowserError::Invalid(
                "no JavaScript dialog is open in the active tab".to_owned(),
            )
            .into());
        };
        let mut params = json!({ "accept": accept });
        if let Some(prompt) = prompt {
            params["promptText"] = json!(prompt);
        }
        self.raw("Page.handleJavaScriptDialog", params)
            .await
            .map_err(ActionError::Dispatched)?;
        if !self
            .wait_until(ACK_LIMIT, |state| state.dialog.is_none())
            .await
        {
            return Err(ActionError::Unconfirmed(
                "the dialog did not close".to_owned(),
            ));
        }
        Ok(ActionResult {
            element: None,
            observed: json!({ "dialog": dialog.kind, "accepted": accept }),
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
            let main = self.lock().main_frame.clone();
            let answer = match self.world(&main).await {
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

    /// Waits until no request of the tab has been in flight for [`NETWORK_QUIET`].
    async fn network_idle(&self, deadline: tokio::time::Instant) -> bool {
        self.network_quiet(deadline, NETWORK_QUIET).await
    }

    /// Waits until no request of the tab has been in flight for `quiet`.
    async fn network_quiet(&self, deadline: tokio::time::Instant, quiet: Duration) -> bool {
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !self
                .wait_until(left, |state| state.in_flight.is_empty())
                .await
            {
                return false;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left < quiet {
                return false;
            }
            // Quiet long enough unless a request starts meanwhile.
            if !self
                .wait_until(quiet, |state| !state.in_flight.is_empty())
                .await
            {
                return true;
            }
        }
    }

    /// Evaluates an expression in the page's own world (awaiting promises).
    pub async fn evaluate(
        &self,
        expression: &str,
    ) -> Result<(Value, String, Option<String>), ActionError> {
        self.no_dialog()?;
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": expression, "returnByValue": true, "awaitPromise": true,
                    "userGesture": true, "timeout": 30000,
                }),
            )
            .await
            .map_err(ActionError::Dispatched)?;
        let result = &answer["result"];
        let kind = result["type"].as_str().unwrap_or("undefined").to_owned();
        let exception = answer.get("exceptionDetails").map(|d| {
            d["exception"]["description"]
                .as_str()
                .or_else(|| d["text"].as_str())
                .unwrap_or("exception")
                .chars()
                .take(4096)
                .collect::<String>()
        });
        Ok((truncate_value(result["value"].clone()), kind, exception))
    }

    /// Captures a PNG of the tab: Chromium's own bytes, clipped and scaled by Chromium. `fast`
    /// has Chromium compress for speed (about twice the bytes, half the time: what an agent
    /// looking at the image wants); without it the PNG is as small as Chromium makes it (for a
    /// file kept in the project).
    /// Captures `area` at `scale` image pixels per CSS pixel, or less where the area is larger
    /// than Chromium captures at once ([`MAX_CAPTURE_SIDE`] pixels a side): returns the PNG and
    /// the scale it has.
    pub async fn capture(
        &self,
        area: &CaptureArea,
        scale: f64,
        fast: bool,
    ) -> Result<(Vec<u8>, f64), BrowserError> {
        let mut scale = scale;
        self.no_dialog()?;
        let mut params = json!({ "format": "png", "optimizeForSpeed": fast });
        let clip = match area {
            CaptureArea::Viewport if scale >= 1.0 => None,
            CaptureArea::Viewport => {
                let metrics = self.raw("Page.getLayoutMetrics", json!({})).await?;
                let v = &metrics["cssVisualViewport"];
                Some(ClipRect {
                    x: v["pageX"].as_f64().unwrap_or(0.0),
                    y: v["pageY"].as_f64().unwrap_or(0.0),
                    width: v["clientWidth"].as_f64().unwrap_or(0.0),
                    height: v["clientHeight"].as_f64().unwrap_or(0.0),
                })
            }
            CaptureArea::FullPage => {
                let metrics = self.raw("Page.getLayoutMetrics", json!({})).await?;
                let size = &metrics["cssContentSize"];
                Some(ClipRect {
                    x: 0.0,
                    y: 0.0,
                    width: size["width"].as_f64().unwrap_or(0.0).ceil(),
                    height: size["height"].as_f64().unwrap_or(0.0).ceil(),
                })
            }
            CaptureArea::Element {
                snapshot_id,
                element_ref,
            } => {
                let resolved = self.resolve(snapshot_id, element_ref)?;
                let answer = self
                    .helper(resolved.context, &format!("reveal({})", resolved.number))
                    .await?;
                Self::checked(answer, element_ref)?;
                let rect = self
                    .helper(
                        resolved.context,
                        &format!(
                            "element({}) && (r => ({{x: r.left, y: r.top, width: r.width, height: r.height}}))(globalThis.__lomi.element({}).getBoundingClientRect())",
                            resolved.number, resolved.number
                        ),
                    )
                    .await?;
                if !rect.is_object() {
                    return Err(BrowserError::Stale(format!(
                        "{element_ref} is no longer in the page"
                    )));
                }
                let (ox, oy) = self.frame_origin(&resolved).await?;
                let metrics = self.raw("Page.getLayoutMetrics", json!({})).await?;
                let v = &metrics["cssVisualViewport"];
                Some(ClipRect {
                    x: rect["x"].as_f64().unwrap_or(0.0) + ox + v["pageX"].as_f64().unwrap_or(0.0),
                    y: rect["y"].as_f64().unwrap_or(0.0) + oy + v["pageY"].as_f64().unwrap_or(0.0),
                    width: rect["width"].as_f64().unwrap_or(0.0),
                    height: rect["height"].as_f64().unwrap_or(0.0),
                })
            }
            CaptureArea::Clip(clip) => Some(*clip),
        };
        if let Some(clip) = clip {
            if clip.width < 1.0 || clip.height < 1.0 {
                return Err(BrowserError::Invalid(
                    "the area to capture is empty".to_owned(),
                ));
            }
            // A taller (or wider) area is scaled down to fit, not refused.
            let side = clip.width.max(clip.height) * scale;
            if side > MAX_CAPTURE_SIDE {
                scale *= MAX_CAPTURE_SIDE / side;
            }
            params["clip"] = json!({
                "x": clip.x, "y": clip.y, "width": clip.width, "height": clip.height, "scale": scale,
            });
            params["captureBeyondViewport"] = json!(true);
        }
        let data = self.screenshot(params).await?;
        let png = BASE64_STANDARD
            .decode(data)
            .map_err(|e| BrowserError::Cdp(format!("Chromium's image is not base64: {e}")))?;
        Ok((png, scale))
    }

    /// Holds the page still for a deterministic capture, waiting at most `limit`: CSS
    /// animations and transitions off and Web Animations finished (or cancelled when endless),
    /// caret and scrollbars hidden, the page focused, web fonts loaded, and the network quiet. Answers what did
    /// not settle within `limit` (empty: all did). [`Tab::release`] undoes it.
    pub async fn steady(&self, limit: Duration) -> Result<Vec<String>, BrowserError> {
        self.no_dialog()?;
        let deadline = tokio::time::Instant::now() + limit;
        self.raw("Emulation.setScrollbarsHidden", json!({ "hidden": true }))
            .await?;
        // Focused whether or not its window is in front: focus rings and `:focus` styles the
        // same in any tab.
        self.raw(
            "Emulation.setFocusEmulationEnabled",
            json!({ "enabled": true }),
        )
        .await?;
        let mut missing = Vec::new();
        if !self.network_quiet(deadline, STEADY_QUIET).await {
            missing.push(format!(
                "{} network requests were still in flight",
                self.lock().in_flight.len()
            ));
        }
        let left = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .as_millis()
            .max(1);
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": format!("({STEADY_SCRIPT})({left})"),
                    "awaitPromise": true, "returnByValue": true,
                }),
            )
            .await?;
        if answer["result"]["value"] != json!(true) {
            missing.push("web fonts were still loading".to_owned());
        }
        Ok(missing)
    }

    /// Lets the page move again after [`Tab::steady`].
    pub async fn release(&self) -> Result<(), BrowserError> {
        self.raw(
            "Runtime.evaluate",
            json!({ "expression": "document.getElementById('__lomi_steady')?.remove()" }),
        )
        .await?;
        self.raw("Emulation.setScrollbarsHidden", json!({ "hidden": false }))
            .await?;
        self.raw(
            "Emulation.setFocusEmulationEnabled",
            json!({ "enabled": false }),
        )
        .await?;
        Ok(())
    }

    /// The page rectangle (CSS pixels) of the first element `selector` matches, scrolled into
    /// view; `None` when nothing matches or it has no box.
    pub async fn selector_rect(&self, selector: &str) -> Result<Option<ClipRect>, BrowserError> {
        self.no_dialog()?;
        let selector = serde_json::to_string(selector).unwrap_or_default();
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": format!(
                        "(() => {{ let e; try {{ e = document.querySelector({selector}); }} catch (x) {{ return 'bad'; }} if (!e) return null; \
                         e.scrollIntoView({{block: 'nearest', inline: 'nearest'}}); const r = e.getBoundingClientRect(); \
                         return r.width && r.height ? [r.left + scrollX, r.top + scrollY, r.width, r.height] : null; }})()"
                    ),
                    "returnByValue": true,
                }),
            )
            .await?;
        let value = &answer["result"]["value"];
        if value == "bad" {
            return Err(BrowserError::Invalid(format!(
                "{selector} is not a CSS selector this page accepts"
            )));
        }
        Ok(value.as_array().and_then(|v| {
            let side = |i: usize| v.get(i).and_then(Value::as_f64);
            Some(ClipRect {
                x: side(0)?,
                y: side(1)?,
                width: side(2)?,
                height: side(3)?,
            })
        }))
    }

    /// A JPEG of the viewport for the person's live view, base64 as Chromium sends it (the
    /// window shows it as is). Not an agent's capture: no receipt, no checks beyond Chromium's.
    pub async fn preview(&self, quality: u8) -> Result<String, BrowserError> {
        self.no_dialog()?;
        self.screenshot(json!({
            "format": "jpeg", "quality": quality, "optimizeForSpeed": true,
        }))
        .await
    }

    /// The person's live view as Chromium paints it: `Page.startScreencast` sends a JPEG of
    /// the viewport (base64) only when the page repaints, so a still page costs nothing. Each
    /// frame is acknowledged (Chromium sends the next only then) and goes to `frames`; the
    /// screencast stops when `frames` closes or the tab ends.
    pub async fn screencast(
        &self,
        quality: u8,
        frames: &tokio::sync::mpsc::Sender<String>,
    ) -> Result<(), BrowserError> {
        self.no_dialog()?;
        let mut events = self
            .page
            .event_listener::<EventScreencastFrame>()
            .await
            .map_err(|e| self.browser.failure(cdp_error(e)))?;
        self.raw(
            "Page.startScreencast",
            json!({ "format": "jpeg", "quality": quality }),
        )
        .await?;
        let ended = loop {
            tokio::select! {
                frame = events.next() => {
                    let Some(frame) = frame else { break Ok(()) };
                    if let Err(error) = self
                        .raw("Page.screencastFrameAck", json!({ "sessionId": frame.session_id }))
                        .await
                    {
                        break Err(error);
                    }
                    if frames.send(String::from(frame.data.clone())).await.is_err() {
                        break Ok(());
                    }
                }
                () = frames.closed() => break Ok(()),
            }
        };
        if let Err(error) = self.raw("Page.stopScreencast", json!({})).await {
            tracing::debug!("tab {}: stopping the screencast: {error}", self.id);
        }
        ended
    }

    /// `Page.captureScreenshot`: the image, base64.
    async fn screenshot(&self, params: Value) -> Result<String, BrowserError> {
        let started = std::time::Instant::now();
        let mut answer = self.raw("Page.captureScreenshot", params).await?;
        tracing::debug!(
            "tab {}: Page.captureScreenshot took {:?}",
            self.id,
            started.elapsed()
        );
        match answer["data"].take() {
            Value::String(data) => Ok(data),
            _ => Err(BrowserError::Cdp("Chromium returned no image".to_owned())),
        }
    }
}

/// The longest side, in image pixels, of one capture: Chromium's compositor draws at most
/// 16,384 pixels a side, and a larger capture fails.
pub const MAX_CAPTURE_SIDE: f64 = 16_384.0;

/// Where an action lands.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    Element {
        snapshot_id: &'a str,
        element_ref: &'a str,
    },
    Point {
        x: f64,
        y: f64,
    },
    None,
}

/// The page did not confirm an event that was dispatched.
struct Unconfirmed(String);

/// Where a pointer action goes, and how its arrival is recognised.
struct Aimed {
    x: f64,
    y: f64,
    token: String,
    element: String,
    /// Lomi's world of the element's frame (none for a point).
    context: Option<i64>,
}

/// Where a click's press landed.
enum Pressed {
    Reached(ActionResult),
    /// Elsewhere (the element moved): the page saw no click (at most the press, when the
    /// element moved away before the release). What happened, in words.
    Missed(String),
}

/// How an action went wrong, by what it may have done.
#[derive(Debug)]
pub enum ActionError {
    /// Refused before anything was sent to the page.
    Refused(BrowserError),
    /// Sending to the page failed part-way: it may or may not have arrived.
    Dispatched(BrowserError),
    /// Sent, but the page did not confirm it reached the element.
    Unconfirmed(String),
    /// The page answered that it did not happen (a failed navigation).
    Failed(String),
}

impl From<BrowserError> for ActionError {
    fn from(error: BrowserError) -> Self {
        ActionError::Refused(error)
    }
}

fn lock_logs(logs: &Arc<Mutex<Logs>>) -> std::sync::MutexGuard<'_, Logs> {
    logs.lock().unwrap_or_else(|e| e.into_inner())
}

fn remote_text(object: &RemoteObject) -> String {
    match &object.value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => object
            .description
            .clone()
            .or_else(|| {
                object
                    .unserializable_value
                    .as_ref()
                    .map(|u| u.inner().clone())
            })
            .unwrap_or_else(|| object.r#type.as_ref().to_owned()),
    }
}

/// Frames of a frame tree, parents first: (id, parent id, url).
fn collect_frames(
    tree: &Value,
    parent: Option<&str>,
    out: &mut Vec<(String, Option<String>, String)>,
) {
    let frame = &tree["frame"];
    let Some(id) = frame["id"].as_str() else {
        return;
    };
    out.push((
        id.to_owned(),
        parent.map(str::to_owned),
        frame["url"].as_str().unwrap_or_default().to_owned(),
    ));
    if let Some(children) = tree["childFrames"].as_array() {
        for child in children {
            collect_frames(child, Some(id), out);
        }
    }
}

fn truncate_value(value: Value) -> Value {
    const LIMIT: usize = 64 * 1024;
    let text = value.to_string();
    if text.len() <= LIMIT {
        value
    } else {
        let mut end = LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        json!({ "truncatedJson": &text[..end] })
    }
}
