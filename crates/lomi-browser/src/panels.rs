//! Browser panels: the browser tools over the broker. Creating, navigating, every action, tab
//! changes, evaluation, saving a capture and closing are operations through the broker's engine
//! (a receipt each); snapshots, tab lists, logs and captures themselves are reads.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use lomi_broker::{
    Broker, CancellationToken, Confirmation, EffectOutcome, LayoutChange, Opening, PanelCall,
    PanelRecord, PanelRuntime, Placed, ProjectChange, Runtimes, to_json,
};
use lomi_files::confine::write_into;
use lomi_protocol::control::BrowserView;
use lomi_protocol::definition::ToolCall;
use lomi_protocol::tools::browser::{
    Action, ActionDone, ActionNavigation, ActionTarget, BrowserCaptureInput, BrowserClickInput,
    BrowserClosed, BrowserCreateInput, BrowserCreated, BrowserDialogInput, BrowserEvaluateInput,
    BrowserHoverInput, BrowserLogInput, BrowserNavigateInput, BrowserPanelInput, BrowserPressInput,
    BrowserScrollInput, BrowserSelectInput, BrowserSnapshotInput, BrowserTabInput,
    BrowserTypeInput, BrowserUploadInput, BrowserWaitInput, CaptureSaved, CaptureView, ConsolePage,
    Evaluated, Navigated, NetworkPage, SnapshotView, TabList, TabsChanged, WaitView,
};
use lomi_protocol::tools::browser::{
    BodySaved, BrowserDragInput, BrowserEmulateInput, BrowserFillInput, BrowserNetworkBodyInput,
    BrowserPdfInput, Emulated, NetworkBody, PdfSaved, Viewport,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::session::{PanelCloseInput, PanelKind};
use lomi_protocol::{
    EffectState, ErrorCode, MAX_INLINE_IMAGE_BYTES, PairingId, PanelId, ProjectId, Tool, ToolError,
    WorkspaceId,
};
use serde_json::{Value, json};

use crate::tab::{ActionError, Destination, Emulation, Target, WaitFor};
use crate::{
    ActionResult, Browser, BrowserError, BrowserOptions, CaptureArea, CaptureLimit, Exit,
    SnapshotOptions, Tab, Taken, confined_existing_file,
};

const DEFAULT_SNAPSHOT_BYTES: u32 = 256 * 1024;
const MIN_SNAPSHOT_BYTES: u32 = 1024;
/// Room kept within `maxBytes` for the header line the MCP answer puts above the tree.
pub const SNAPSHOT_HEADER_BYTES: u32 = 768;
/// Leaves room within MAX_ANSWER_BYTES for the answer's structured part and framing.
const MAX_SNAPSHOT_BYTES: u32 = 960_000;
const DEFAULT_NAVIGATE_MS: u32 = 30_000;
/// How long the person's live view waits for one picture of a page.
const PREVIEW_LIMIT: Duration = Duration::from_secs(3);
/// How often a watched panel looks which of its tabs is active (an agent may switch tabs,
/// which paints nothing in the tab watched): a lock read, nothing asked of Chromium.
const ACTIVE_TAB_CHECK: Duration = Duration::from_secs(1);
/// How long after the last of a tab's events (a load, a navigation) the live view takes one
/// picture of it, in case the page painted nothing the screencast saw.
const SHOT_AFTER_EVENTS: Duration = Duration::from_millis(200);
const MAX_NAVIGATE_MS: u32 = 60_000;
const MAX_WAIT_MS: u32 = 60_000;
/// The matching lines a wait answers with: a few screens, not the page.
const WAIT_SNAPSHOT_BYTES: usize = 16 * 1024;
const MAX_TYPE_BYTES: usize = 64 * 1024;
const MAX_UPLOAD_FILES: usize = 32;
const MAX_EXPRESSION_BYTES: usize = 64 * 1024;
const MIN_CAPTURE_BYTES: u32 = 1024;
/// The largest capture saved into the project (a whole long page; maxBytes with save).
const MAX_CAPTURE_BYTES: u32 = 64 * 1024 * 1024;
/// Rows of the image a retried save answers with (two screens of the default viewport): the
/// browser that knew the viewport may be gone by then.
const RETRY_IMAGE_ROWS: u32 = 1_440;
const MAX_LOG_PAGE: u32 = 500;
const DEFAULT_LOG_PAGE: u32 = 100;
const MAX_FILL_FIELDS: usize = 64;
/// The most of a response body an answer carries (like terminal reads); saved ones may be larger.
const MAX_BODY_ANSWER: u32 = 512 * 1024;
const DEFAULT_BODY_ANSWER: u32 = 64 * 1024;
/// The largest PDF or response body written into the project.
const MAX_SAVED_FILE: usize = 64 * 1024 * 1024;

mod actions;
mod saves;
mod sets;

/// One browser panel's runtime.
#[derive(Clone)]
pub struct BrowserRuntime {
    pub browser: Browser,
    pub workspace_id: WorkspaceId,
    pub project_id: ProjectId,
    pub root: PathBuf,
    /// The workspace's persistent profile folder this browser runs with; None for a fresh one.
    pub profile: Option<PathBuf>,
}

type Outcome = Pin<Box<dyn Future<Output = Result<ActionResult, ActionError>> + Send>>;

/// The browser panels of one broker.
#[derive(Clone)]
pub struct BrowserPanels {
    broker: Broker,
    options: BrowserOptions,
    runtimes: Runtimes<BrowserRuntime>,
}

impl PanelRuntime for BrowserRuntime {
    fn live_generation(&self, _panel: &PanelId) -> Result<String, ToolError> {
        match self.browser.gone() {
            Some(gone) => Err(tool_error(gone)),
            None => Ok(self.browser.generation().to_owned()),
        }
    }

    /// Notices a browser that ends without being closed: its panel keeps its place but has
    /// no runtime generation until it is closed.
    fn watch(&self, broker: &Broker, panel: &PanelId) {
        let (broker, panel, browser) = (broker.clone(), panel.clone(), self.browser.clone());
        tokio::spawn(async move {
            if let Exit::Crashed(why) = browser.exited().await {
                tracing::warn!("the browser of panel {panel} ended: {why}");
                broker.panel_set_generation(&panel, None);
            }
        });
    }

    /// The browser ran: closed, it leaves the effect partial.
    async fn abandon(self) -> EffectState {
        self.browser.close().await;
        EffectState::Partial
    }
}

/// What an agent does about a browser that is gone.
const BROWSER_GONE_NEXT: &str =
    "close its panel with lomi_browser_close, then start a new browser with lomi_browser_create";

/// The envelope error for a browser failure.
pub fn tool_error(error: BrowserError) -> ToolError {
    match error {
        BrowserError::Stale(message) => ToolError::new(ErrorCode::SnapshotStale, message),
        BrowserError::Invalid(message) => ToolError::invalid(message),
        BrowserError::Gone(_) => ToolError::new(
            ErrorCode::GenerationMismatch,
            format!("{error}; {BROWSER_GONE_NEXT}"),
        ),
        BrowserError::Timeout(_) => ToolError::new(
            ErrorCode::RuntimeUnavailable,
            format!("{error}; the browser may be busy: look at the panel before trying again"),
        ),
        other => ToolError::internal(other.to_string()),
    }
}

/// What a tab tool does with the tab its input names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TabAction {
    Open,
    Switch,
    Close,
}

/// A browser operation's input: it names its panel, the browser generation and its request
/// identity, with the same field names on every such tool.
trait BrowserRequest: serde::Serialize {
    fn call(&self, call: ToolCall) -> PanelCall<'_>;
}

macro_rules! browser_requests {
    ($($input:ty),* $(,)?) => {
        $(impl BrowserRequest for $input {
            fn call(&self, call: ToolCall) -> PanelCall<'_> {
                PanelCall {
                    call,
                    retry_epoch: &self.retry_epoch,
                    request_key: &self.request_key,
                    panel_id: &self.panel_id,
                    generation: &self.browser_generation,
                    lease: None,
                }
            }
        })*
    };
}

browser_requests!(
    BrowserClickInput,
    BrowserHoverInput,
    BrowserTypeInput,
    BrowserPressInput,
    BrowserSelectInput,
    BrowserScrollInput,
    BrowserUploadInput,
    BrowserNavigateInput,
    BrowserDialogInput,
    BrowserTabInput,
    BrowserEvaluateInput,
    BrowserDragInput,
    BrowserFillInput,
    BrowserEmulateInput,
    lomi_protocol::tools::capture::BrowserCaptureSetInput,
);

/// The active tab an effect acts on, or the outcome of having none (nothing happened).
fn active_tab(runtime: &BrowserRuntime) -> Result<Tab, EffectOutcome> {
    runtime
        .browser
        .active_tab()
        .map_err(|error| EffectOutcome::Failed {
            effect: EffectState::None,
            error: tool_error(error),
        })
}

/// The action's name in its result (`click`, `type`, …).
fn action_name(tool: Tool) -> &'static str {
    tool.name().trim_start_matches("lomi_browser_")
}

/// The refusal of a second browser on a workspace's persistent profile: Chromium runs one
/// process per profile, and Lomi does not fall back to a fresh one behind the person's back.
fn profile_in_use(workspace: &WorkspaceId, holder: &PanelId) -> ToolError {
    ToolError::new(
        ErrorCode::ResourceBusy,
        format!(
            "workspace {workspace} keeps a persistent browser profile, and browser panel {holder} is using it \
             (Chromium opens a profile once): drive that panel, or close it with lomi_browser_close first; \
             for separate fresh browsers, ask the person to turn the persistent profile off \
             (`lomi browser profile {workspace} --fresh`)"
        ),
    )
    .with_details(json!({ "reason": "browserProfileInUse", "panelId": holder }))
}

fn settle(
    result: Result<ActionResult, ActionError>,
    action: &str,
    tab: &Tab,
    navigated: Option<ActionNavigation>,
) -> EffectOutcome {
    match result {
        Ok(done) => EffectOutcome::succeeded(&ActionDone {
            action: action.to_owned(),
            tab_id: tab.id.clone(),
            element: done.element,
            observed: done.observed,
            navigated,
        }),
        Err(ActionError::Refused(error)) => EffectOutcome::Failed {
            effect: EffectState::None,
            error: tool_error(error),
        },
        Err(ActionError::Dispatched(error)) => EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message: format!(
                "the {action} was sent to the page but may not have arrived: {}",
                what_next(tab, Err(error))
            ),
        },
        Err(ActionError::Unconfirmed(why)) => EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message: format!(
                "the {action} was sent but not confirmed: {}",
                what_next(tab, Ok(why))
            ),
        },
        Err(ActionError::Failed(why)) => EffectOutcome::Failed {
            effect: EffectState::Partial,
            error: ToolError::invalid(why),
        },
    }
}

/// Why an action's outcome is unknown, and what the agent can do about it: look at the page,
/// or, once the browser is gone (the error says so, or its process has ended meanwhile),
/// replace the browser, since there is no page left to look at.
fn what_next(tab: &Tab, cause: Result<String, BrowserError>) -> String {
    let gone = tab.gone().or_else(|| match &cause {
        Err(BrowserError::Gone(detail)) => Some(BrowserError::Gone(detail.clone())),
        _ => None,
    });
    match (gone, cause) {
        (Some(gone), _) => format!("{gone}; {BROWSER_GONE_NEXT}"),
        (None, Ok(why)) => format!("{why}; take a snapshot to see"),
        (None, Err(error)) => format!("{error}; take a snapshot to see"),
    }
}

fn hex_id(broker: &Broker) -> String {
    hex::encode(&broker.random_bytes()[..8])
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Checks a URL an agent asks to open: http(s), about:blank, data:, or a file: inside the
/// project. Returns the URL to give Chromium.
pub fn allowed_url(url: &str, root: &std::path::Path) -> Result<String, ToolError> {
    if url.is_empty() || url.len() > 8192 || url.chars().any(char::is_control) {
        return Err(ToolError::invalid(
            "url must be 1 to 8,192 characters without control characters",
        ));
    }
    let scheme = url
        .split_once(':')
        .map(|(s, _)| s.to_ascii_lowercase())
        .unwrap_or_default();
    match scheme.as_str() {
        "http" | "https" | "data" => Ok(url.to_owned()),
        "about" if url.eq_ignore_ascii_case("about:blank") => Ok(url.to_owned()),
        "file" => {
            let path = url["file:".len()..].trim_start_matches("//");
            let path = path.split(['?', '#']).next().unwrap_or_default();
            let path = percent_decode(path)
                .ok_or_else(|| ToolError::invalid(format!("{url:?} is not a valid file: URL")))?;
            let root_real = root.canonicalize().map_err(|e| {
                ToolError::not_found(format!("the project root is not available: {e}"))
            })?;
            let rel = std::path::Path::new(&path)
                .strip_prefix(&root_real)
                .map_err(|_| {
                    ToolError::invalid(format!(
                        "file: URLs may only open files inside the project ({}); {url:?} is outside it",
                        root_real.display()
                    ))
                })?
                .to_string_lossy()
                .into_owned();
            let real = confined_existing_file(&root_real, &rel).map_err(ToolError::invalid)?;
            Ok(format!("file://{}", real.display()))
        }
        _ => Err(ToolError::invalid(format!(
            "{url:?}: only http, https, data, about:blank and file: URLs inside the project may be opened"
        ))),
    }
}

impl BrowserPanels {
    pub fn new(broker: Broker) -> Self {
        BrowserPanels {
            broker,
            options: BrowserOptions::default(),
            runtimes: Runtimes::new(PanelKind::Browser),
        }
    }

    pub fn with_options(mut self, options: BrowserOptions) -> Self {
        self.options = options;
        self
    }

    /// The runtime behind a browser panel the caller may see.
    fn runtime(
        &self,
        caller: &PairingId,
        panel: &PanelId,
    ) -> Result<(PanelRecord, BrowserRuntime), ToolError> {
        self.runtimes.find(&self.broker, caller, panel)
    }

    /// What the person's window shows of a browser panel: its active tab's address and title
    /// and a JPEG of the viewport (`quality` 1–100). `None` when the panel has no browser.
    /// While the browser is gone or a dialog is open, the preview says so instead of an image.
    /// Whether a browser runs in the panel (for the person: no grants involved).
    pub fn runs(&self, panel: &PanelId) -> bool {
        self.runtimes.get(panel).is_some()
    }

    /// Sends the person's view of a panel to `views` as it changes, until `views` closes or
    /// the panel's browser ends (then it returns): its active tab's address and title, and
    /// JPEG frames of the viewport as Chromium paints them ([`Tab::screencast`]), so a still
    /// page sends nothing. A dialog (the view keeps its last image and says why), a
    /// navigation or another active tab is sent at once.
    pub async fn watch_view(
        &self,
        panel: &PanelId,
        quality: u8,
        views: &tokio::sync::mpsc::Sender<BrowserView>,
    ) {
        let mut last: Option<BrowserView> = None;
        let send = |view: BrowserView, last: &mut Option<BrowserView>| {
            let fresh = last.as_ref() != Some(&view);
            *last = Some(view.clone());
            async move { !fresh || views.send(view).await.is_ok() }
        };
        let mut check = tokio::time::interval(ACTIVE_TAB_CHECK);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let Some(runtime) = self.runtimes.get(panel) else {
                return;
            };
            let browser = runtime.browser.clone();
            if browser.gone().is_some() {
                return;
            }
            let mut view = BrowserView {
                generation: browser.generation().to_owned(),
                tab_id: None,
                url: String::new(),
                title: String::new(),
                jpeg_base64: last.as_ref().and_then(|v| v.jpeg_base64.clone()),
                note: None,
            };
            let tab = match browser.active_tab() {
                Ok(tab) => tab,
                Err(error) => {
                    view.note = Some(error.to_string());
                    if !send(view, &mut last).await {
                        return;
                    }
                    check.tick().await;
                    continue;
                }
            };
            view.tab_id = Some(tab.id.clone());
            let mut changes = tab.changes();
            // A navigation may move the page to another renderer, where the screencast does
            // not follow: it starts again for each document.
            let cast_url = tab.current_url();
            let (frames_tx, mut frames) = tokio::sync::mpsc::channel(2);
            let cast = async {
                // No frames while a dialog is open: the page does not paint.
                if tab.dialog().is_some() {
                    std::future::pending::<()>().await;
                }
                if let Err(error) = tab.screencast(quality, &frames_tx).await {
                    tracing::debug!("panel {panel}: the live view's screencast: {error}");
                }
                std::future::pending::<()>().await;
            };
            tokio::pin!(cast);
            let mut look = true;
            // A screencast sends frames only for new paints, and a page that is already still
            // when it starts (or moved to another renderer) paints none: so one picture is
            // taken when the watch (re)starts, and again shortly after the tab's events (a
            // load, a navigation) stop arriving.
            let mut shoot_at = Some(tokio::time::Instant::now());
            loop {
                if look {
                    look = false;
                    let (url, title) = tokio::time::timeout(PREVIEW_LIMIT, tab.location())
                        .await
                        .unwrap_or_else(|_| (tab.current_url(), view.title.clone()));
                    (view.url, view.title) = (url, title);
                    view.note = tab.dialog().map(|dialog| {
                        format!(
                            "a JavaScript {} dialog is open ({:?}); the view shows the page as it was",
                            dialog.kind, dialog.message
                        )
                    });
                    if !send(view.clone(), &mut last).await {
                        return;
                    }
                }
                let shot_due = shoot_at.unwrap_or_else(tokio::time::Instant::now);
                tokio::select! {
                    () = &mut cast => {}
                    () = tokio::time::sleep_until(shot_due), if shoot_at.is_some() => {
                        shoot_at = None;
                        if tab.dialog().is_none()
                            && let Ok(Ok(jpeg)) = tokio::time::timeout(PREVIEW_LIMIT, tab.preview(quality)).await
                        {
                            view.jpeg_base64 = Some(jpeg);
                            if !send(view.clone(), &mut last).await {
                                return;
                            }
                        }
                    }
                    frame = frames.recv() => {
                        let Some(jpeg) = frame else { break };
                        view.jpeg_base64 = Some(jpeg);
                        if !send(view.clone(), &mut last).await {
                            return;
                        }
                    }
                    changed = changes.changed() => {
                        if changed.is_err() {
                            break;
                        }
                        // A dialog stops the frames, a closed one starts them again.
                        let dialog_now = tab.dialog().is_some();
                        let had_dialog = view.note.is_some();
                        look = true;
                        shoot_at = Some(tokio::time::Instant::now() + SHOT_AFTER_EVENTS);
                        if dialog_now != had_dialog || tab.current_url() != cast_url {
                            break;
                        }
                    }
                    _ = check.tick() => {
                        let active = browser.active_tab().map(|t| t.id).ok();
                        if views.is_closed() || browser.gone().is_some() || active.as_ref() != Some(&tab.id) {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// PIDs of the running browsers (for the person's view and tests).
    pub fn pids(&self) -> Vec<u32> {
        self.runtimes
            .lock()
            .values()
            .map(|r| r.browser.pid())
            .collect()
    }

    /// The panel whose running browser uses a persistent profile folder, if one does.
    pub fn profile_holder(&self, dir: &std::path::Path) -> Option<PanelId> {
        self.runtimes
            .lock()
            .iter()
            .find(|(_, r)| r.profile.as_deref() == Some(dir) && r.browser.exit().is_none())
            .map(|(panel, _)| panel.clone())
    }

    /// `lomi_browser_create`.
    pub async fn create(
        &self,
        caller: &PairingId,
        input: BrowserCreateInput,
    ) -> Result<OperationView, ToolError> {
        lomi_broker::check_name("title", &input.title)?;
        // The person's default viewport (Settings → browser) unless the agent names one.
        let viewport = input
            .viewport
            .unwrap_or(self.broker.browser_settings().viewport);
        if !(100..=4096).contains(&viewport.width) || !(100..=4096).contains(&viewport.height) {
            return Err(ToolError::invalid(
                "viewport width and height must be 100 to 4,096",
            ));
        }
        let project_id =
            self.broker
                .key_project(caller, &input.workspace_id, input.project_id.as_ref())?;
        let workspace_id = input.workspace_id.clone();
        let change = LayoutChange::of(
            ToolCall::of::<lomi_protocol::tools::browser::BrowserCreateTool>(&input)?,
            &input,
            Some(project_id.clone()),
        )?;
        let panels = self.clone();
        let title = input.title.clone();
        let options = BrowserOptions {
            width: viewport.width,
            height: viewport.height,
            ..self.options.clone()
        };
        let anchor = project_id.clone();
        self.runtimes
            .open(
                &self.broker,
                caller,
                change,
                Confirmation::Policy,
                // The project's root only after the prior receipt: a retry is answered even if
                // the project left the workspace since.
                async {
                    let named = Some(&anchor);
                    Ok((self.broker)
                        .project_root(caller, &input.workspace_id, named)?
                        .1)
                },
                move |root, context| async move {
                    // The person's choice at the time the browser starts.
                    let profile = context.broker.persistent_browser_profile(&workspace_id);
                    if let Some(dir) = &profile
                        && let Some(holder) = panels.profile_holder(dir)
                    {
                        return Err(EffectOutcome::Failed {
                            effect: EffectState::None,
                            error: profile_in_use(&workspace_id, &holder),
                        });
                    }
                    let options = BrowserOptions {
                        profile: profile.clone(),
                        ..options
                    };
                    let generation = format!("bg_{}", hex_id(&context.broker));
                    // Dropping the launch ends the Chromium it started (its process is
                    // killed with the handle); nothing was added to the workspace.
                    let Some(launched) = lomi_broker::unless_cancelled(
                        &context.cancel,
                        Browser::launch(options, generation.clone()),
                    )
                    .await
                    else {
                        return Err(EffectOutcome::Cancelled {
                            effect: EffectState::None,
                        });
                    };
                    let browser = match launched {
                        Ok(browser) => browser,
                        Err(error) => {
                            return Err(EffectOutcome::Failed {
                                effect: EffectState::None,
                                error: ToolError::new(
                                    ErrorCode::RuntimeUnavailable,
                                    format!("the browser did not start: {error}"),
                                ),
                            });
                        }
                    };
                    let tab_id = match browser.active_tab() {
                        Ok(tab) => tab.id,
                        Err(error) => {
                            browser.close().await;
                            return Err(EffectOutcome::Failed {
                                effect: EffectState::Partial,
                                error: tool_error(error),
                            });
                        }
                    };
                    let record = PanelRecord {
                        workspace_id: workspace_id.clone(),
                        kind: PanelKind::Browser,
                        title,
                        project_id: Some(project_id.clone()),
                        generation: Some(generation.clone()),
                    };
                    let pid = browser.pid();
                    let runtime = BrowserRuntime {
                        browser,
                        workspace_id,
                        project_id,
                        root,
                        profile,
                    };
                    let done = move |_: &Broker, placed: Placed| {
                        Ok(BrowserCreated {
                            panel_id: placed.panel_id,
                            browser_generation: generation,
                            tab_id,
                            domain_revision: placed.revision,
                            pid,
                        })
                    };
                    Ok((Opening::New(record, runtime), done))
                },
            )
            .await
    }

    /// A browser operation on the active tab (none: nothing happens), in the engine's panel
    /// order (see [`Broker::operate_on_panel`]): `prepare` checks what needs the runtime (a
    /// URL or file confined to its project) before anything is recorded; `effect` gets the
    /// tab, what `prepare` gave and the cancel token.
    async fn on_tab<P, F, Fut>(
        &self,
        caller: &PairingId,
        call: ToolCall,
        input: &impl BrowserRequest,
        prepare: impl FnOnce(&BrowserRuntime) -> Result<P, ToolError>,
        effect: F,
    ) -> Result<OperationView, ToolError>
    where
        P: Send + 'static,
        F: FnOnce(Tab, P, CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = EffectOutcome> + Send + 'static,
    {
        self.broker
            .operate_on_panel(
                caller,
                input.call(call),
                &self.runtimes,
                prepare,
                |runtime, prepared, context| async move {
                    match active_tab(&runtime) {
                        Ok(tab) => effect(tab, prepared, context.cancel).await,
                        Err(refused) => refused,
                    }
                },
            )
            .await
    }

    /// An action on the active tab: `act` runs with the tab and the decoded target.
    async fn action<I, F>(
        &self,
        caller: &PairingId,
        call: ToolCall,
        input: &I,
        act: F,
    ) -> Result<OperationView, ToolError>
    where
        I: Action + BrowserRequest,
        F: FnOnce(Tab, ActionTarget) -> Outcome + Send + 'static,
    {
        let target = input.common().map_err(ToolError::invalid)?.target;
        self.act(caller, call, input, |_| Ok(target), act).await
    }

    /// An action on the active tab (click, type, upload, drag, fill, …): `act` runs with the
    /// tab and what `prepare` gave, and the result says what the page showed and the
    /// navigation the action caused, once it committed. Cancelled while it runs, the action
    /// stops waiting for the page's confirmation; whether its input reached the page is then
    /// unknown.
    async fn act<P, F>(
        &self,
        caller: &PairingId,
        call: ToolCall,
        input: &impl BrowserRequest,
        prepare: impl FnOnce(&BrowserRuntime) -> Result<P, ToolError>,
        act: F,
    ) -> Result<OperationView, ToolError>
    where
        P: Send + 'static,
        F: FnOnce(Tab, P) -> Outcome + Send + 'static,
    {
        let name = action_name(call.tool);
        self.on_tab(
            caller,
            call,
            input,
            prepare,
            move |tab, prepared, cancel| async move {
                let mark = tab.mark();
                let acted = async {
                    let result = act(tab.clone(), prepared).await;
                    let navigated = match &result {
                        Ok(_) => tab.navigation_since(&mark).await.map(|c| ActionNavigation {
                            navigation_id: c.navigation_id,
                            url: c.url,
                            same_document: c.same_document,
                        }),
                        Err(_) => None,
                    };
                    (result, navigated)
                };
                let Some((result, navigated)) = lomi_broker::unless_cancelled(&cancel, acted).await
                else {
                    return EffectOutcome::Cancelled {
                        effect: EffectState::Unknown,
                    };
                };
                settle(result, name, &tab, navigated)
            },
        )
        .await
    }

    /// `lomi_browser_navigate`.
    pub async fn navigate(
        &self,
        caller: &PairingId,
        input: BrowserNavigateInput,
    ) -> Result<OperationView, ToolError> {
        let until = input
            .wait_until
            .clone()
            .unwrap_or_else(|| "load".to_owned());
        if !matches!(until.as_str(), "commit" | "domcontentloaded" | "load") {
            return Err(ToolError::invalid(
                "waitUntil must be commit, domcontentloaded or load",
            ));
        }
        let timeout = input.timeout_ms.unwrap_or(DEFAULT_NAVIGATE_MS);
        if timeout == 0 || timeout > MAX_NAVIGATE_MS {
            return Err(ToolError::invalid(format!(
                "timeoutMs must be 1 to {MAX_NAVIGATE_MS}"
            )));
        }
        let history = match (input.url.as_ref(), input.history.as_deref()) {
            (Some(_), None) => None,
            (None, Some("back")) => Some(Destination::Back),
            (None, Some("forward")) => Some(Destination::Forward),
            (None, Some("reload")) => Some(Destination::Reload),
            (None, Some(other)) => {
                return Err(ToolError::invalid(format!(
                    "history must be back, forward or reload, not {other:?}"
                )));
            }
            (Some(_), Some(_)) | (None, None) => {
                return Err(ToolError::invalid(
                    "give either url (to load a page) or history (back, forward or reload)",
                ));
            }
        };
        let wanted = input.url.clone();
        self.on_tab(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserNavigateTool>(&input)?,
            &input,
            move |runtime| match (history, wanted) {
                (Some(history), _) => Ok(history),
                (None, Some(url)) => allowed_url(&url, &runtime.root).map(Destination::Url),
                (None, None) => Err(ToolError::invalid("give either url or history")),
            },
            move |tab, to: Destination, cancel| async move {
                let limit = Duration::from_millis(u64::from(timeout));
                // Cancelled, the load stops where it is: the navigation was sent.
                let Some(navigated) = tab
                    .navigate_unless_cancelled(&to, &until, limit, &cancel)
                    .await
                else {
                    return EffectOutcome::Cancelled {
                        effect: EffectState::Partial,
                    };
                };
                match navigated {
                    Ok((committed, status, reached)) => EffectOutcome::succeeded(&Navigated {
                        navigation_id: committed.navigation_id,
                        tab_id: tab.id.clone(),
                        url: committed.url,
                        status,
                        reached: reached.to_owned(),
                        same_document: committed.same_document,
                    }),
                    Err(error) => settle(Err(error), "navigation", &tab, None),
                }
            },
        )
        .await
    }

    /// `lomi_browser_snapshot`.
    pub async fn snapshot(
        &self,
        caller: &PairingId,
        input: BrowserSnapshotInput,
    ) -> Result<SnapshotView, ToolError> {
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_SNAPSHOT_BYTES);
        if !(MIN_SNAPSHOT_BYTES..=MAX_SNAPSHOT_BYTES).contains(&max_bytes) {
            return Err(ToolError::invalid(format!(
                "maxBytes must be {MIN_SNAPSHOT_BYTES} to {MAX_SNAPSHOT_BYTES}"
            )));
        }
        if let Some(find) = &input.find
            && (find.is_empty() || find.len() > 256)
        {
            return Err(ToolError::invalid("find must be 1 to 256 characters"));
        }
        let (record, runtime) = self.runtime(caller, &input.panel_id)?;
        if let Some(gone) = runtime.browser.gone() {
            return Err(tool_error(gone));
        }
        let tab = runtime.browser.active_tab().map_err(tool_error)?;
        let options = SnapshotOptions {
            max_bytes: (max_bytes - SNAPSHOT_HEADER_BYTES) as usize,
            asked_bytes: max_bytes as usize,
            find: input.find.clone(),
            since_snapshot_id: input.since_snapshot_id.clone(),
            from_line: input.from_line.unwrap_or(0) as usize,
        };
        let taken = tab.snapshot(&options).await.map_err(tool_error)?;
        Ok(SnapshotView {
            snapshot_id: taken.snapshot_id,
            navigation_id: taken.navigation_id,
            browser_generation: record.generation.unwrap_or_default(),
            tab_id: tab.id.clone(),
            url: taken.url,
            title: taken.title,
            text: taken.text,
            truncated: taken.truncated,
            lines: taken.lines,
            next_from_line: taken.next_from_line,
            refs: taken.refs,
            frames: taken.frames,
            since_snapshot_id: input.since_snapshot_id,
            dialog: taken.dialog,
            loading: taken.loading,
        })
    }

    /// `lomi_browser_wait`: a read; waits on the active tab, then answers what it saw.
    pub async fn wait(
        &self,
        caller: &PairingId,
        input: BrowserWaitInput,
    ) -> Result<WaitView, ToolError> {
        let timeout = input
            .timeout_ms
            .unwrap_or_else(|| self.broker.browser_settings().default_wait_ms);
        if timeout == 0 || timeout > MAX_WAIT_MS {
            return Err(ToolError::invalid(format!(
                "timeoutMs must be 1 to {MAX_WAIT_MS}"
            )));
        }
        let network_idle = input.network_idle.unwrap_or(false);
        if input.text.is_none() && input.role.is_none() && input.url.is_none() && !network_idle {
            return Err(ToolError::invalid(
                "say what to wait for: text, role (with name), url or networkIdle: true",
            ));
        }
        if input.name.is_some() && input.role.is_none() {
            return Err(ToolError::invalid(
                "name goes with role (e.g. role: \"link\", name: \"Next\"); for any text use text",
            ));
        }
        for (field, value) in [
            ("text", &input.text),
            ("role", &input.role),
            ("name", &input.name),
            ("url", &input.url),
        ] {
            if value
                .as_ref()
                .is_some_and(|v| v.is_empty() || v.len() > 256)
            {
                return Err(ToolError::invalid(format!(
                    "{field} must be 1 to 256 characters"
                )));
            }
        }
        let (_, runtime) = self.runtime(caller, &input.panel_id)?;
        if let Some(gone) = runtime.browser.gone() {
            return Err(tool_error(gone));
        }
        let tab = runtime.browser.active_tab().map_err(tool_error)?;
        let want = WaitFor {
            text: input.text.clone(),
            role: input.role.clone(),
            name: input.name.clone(),
            url: input.url.clone(),
            network_idle,
        };
        let waited = tab
            .wait(&want, Duration::from_millis(u64::from(timeout)))
            .await
            .map_err(tool_error)?;
        let matched = waited.missing.is_empty();
        // What matched, as snapshot lines whose refs actions take.
        let find = input
            .text
            .clone()
            .or(input.name.clone())
            .or(input.role.clone());
        let (snapshot_id, text) = match find {
            Some(find) if matched => {
                let options = SnapshotOptions {
                    max_bytes: WAIT_SNAPSHOT_BYTES,
                    asked_bytes: WAIT_SNAPSHOT_BYTES,
                    find: Some(find),
                    since_snapshot_id: None,
                    from_line: 0,
                };
                let taken = tab.snapshot(&options).await.map_err(tool_error)?;
                (
                    Some(taken.snapshot_id).filter(|id| !id.is_empty()),
                    taken.text,
                )
            }
            _ if matched => (None, String::new()),
            _ => (
                None,
                format!(
                    "timed out after {timeout} ms: {}",
                    waited.missing.join("; ")
                ),
            ),
        };
        Ok(WaitView {
            matched,
            tab_id: tab.id.clone(),
            navigation_id: tab.navigation_id(),
            url: tab.current_url(),
            snapshot_id,
            text,
            requests_in_flight: u32::try_from(waited.in_flight).unwrap_or(u32::MAX),
        })
    }

    /// `lomi_browser_dialog`.
    pub async fn dialog(
        &self,
        caller: &PairingId,
        input: BrowserDialogInput,
    ) -> Result<OperationView, ToolError> {
        let accept = match input.action.as_str() {
            "accept" => true,
            "dismiss" => false,
            _ => return Err(ToolError::invalid("action must be accept or dismiss")),
        };
        if input
            .prompt_text
            .as_ref()
            .is_some_and(|t| t.len() > MAX_TYPE_BYTES)
        {
            return Err(ToolError::invalid("promptText takes at most 64 KiB"));
        }
        let prompt = input.prompt_text.clone();
        self.on_tab(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserDialogTool>(&input)?,
            &input,
            |_| Ok(()),
            move |tab, (), _cancel| async move {
                let result = tab.dialog_answer(accept, prompt.as_deref()).await;
                settle(result, "dialog", &tab, None)
            },
        )
        .await
    }

    /// `lomi_browser_tab_list`.
    pub async fn tab_list(
        &self,
        caller: &PairingId,
        input: BrowserPanelInput,
    ) -> Result<TabList, ToolError> {
        let (record, runtime) = self.runtime(caller, &input.panel_id)?;
        if let Some(gone) = runtime.browser.gone() {
            return Err(tool_error(gone));
        }
        Ok(TabList {
            browser_generation: record.generation.unwrap_or_default(),
            tabs: runtime.browser.tab_views().await,
        })
    }

    /// `lomi_browser_tab_open`, `_tab_switch`, `_tab_close`: `action` says which (each
    /// tool's `Serve` names its own).
    pub async fn tab(
        &self,
        caller: &PairingId,
        (call, action): (ToolCall, TabAction),
        input: BrowserTabInput,
    ) -> Result<OperationView, ToolError> {
        let open = action == TabAction::Open;
        let switch = action == TabAction::Switch;
        match (&input.tab_id, &input.url, open) {
            (None, _, true) => {}
            (Some(_), None, false) => {}
            (Some(_), _, true) => return Err(ToolError::invalid("tab_open takes no tabId")),
            (None, _, false) => return Err(ToolError::invalid("name the tab with tabId")),
            (Some(_), Some(_), false) => {
                return Err(ToolError::invalid("only tab_open takes a url"));
            }
        }
        let wanted = input.url.clone().filter(|_| open);
        let tab_id = input.tab_id.clone();
        self.broker.operate_on_panel(
            caller,
            input.call(call),
            &self.runtimes,
            move |runtime| {
                wanted
                    .map(|url| allowed_url(&url, &runtime.root))
                    .transpose()
            },
            move |runtime, url, context| async move {
                let (browser, cancel) = (runtime.browser, context.cancel);
                let done = match (open, tab_id) {
                    (true, _) => match browser.open_tab().await {
                        Ok(tab) => {
                            if let Some(url) = url {
                                // Cancelled, the tab stays open and its page stops loading.
                                let Some(navigated) = tab
                                    .navigate_unless_cancelled(
                                        &Destination::Url(url),
                                        "load",
                                        Duration::from_secs(30),
                                        &cancel,
                                    )
                                    .await
                                else {
                                    return EffectOutcome::Cancelled {
                                        effect: EffectState::Partial,
                                    };
                                };
                                if let Err(error) = navigated {
                                    return settle(Err(error), "tab open", &tab, None);
                                }
                            }
                            Ok(tab.id)
                        }
                        Err(error) => Err(error),
                    },
                    (false, Some(id)) if switch => {
                        browser.activate(&id).await.map(|()| id)
                    }
                    (false, Some(id)) => browser.close_tab(&id).await.map(|()| id),
                    (false, None) => {
                        Err(BrowserError::Invalid("name the tab with tabId".to_owned()))
                    }
                };
                match done {
                    Ok(tab_id) => EffectOutcome::succeeded(&TabsChanged {
                        tab_id,
                        tabs: browser.tab_views().await,
                    }),
                    Err(error @ (BrowserError::Invalid(_) | BrowserError::Stale(_))) => {
                        EffectOutcome::Failed {
                            effect: EffectState::None,
                            error: tool_error(error),
                        }
                    }
                    Err(error) => EffectOutcome::Unknown {
                        effect: EffectState::Unknown,
                        message: format!(
                            "the tab change may not have happened: {error}; list the tabs to see"
                        ),
                    },
                }
            },
        )
        .await
    }

    fn log_page(
        &self,
        caller: &PairingId,
        input: &BrowserLogInput,
    ) -> Result<(BrowserRuntime, u64, usize), ToolError> {
        let (_record, runtime) = self.runtime(caller, &input.panel_id)?;
        let since = match &input.since_cursor {
            Some(text) => lomi_protocol::parse_decimal(text).ok_or_else(|| {
                ToolError::invalid(format!("sinceCursor {text:?} is not a decimal cursor"))
            })?,
            None => 0,
        };
        let limit = input.limit.unwrap_or(DEFAULT_LOG_PAGE);
        if limit == 0 || limit > MAX_LOG_PAGE {
            return Err(ToolError::invalid(format!(
                "limit must be 1 to {MAX_LOG_PAGE}"
            )));
        }
        Ok((runtime, since, limit as usize))
    }

    /// `lomi_browser_console`: console messages and uncaught exceptions, oldest first.
    pub fn console(
        &self,
        caller: &PairingId,
        input: &BrowserLogInput,
    ) -> Result<ConsolePage, ToolError> {
        let (runtime, since, limit) = self.log_page(caller, input)?;
        let logs = runtime.browser.logs();
        let logs = logs.lock().unwrap_or_else(|e| e.into_inner());
        let (entries, dropped_before, next) =
            page_of(&logs.console, logs.console_next, since, limit, |e| {
                &e.cursor
            })?;
        Ok(ConsolePage {
            dropped_before,
            next_cursor: next.to_string(),
            entries,
        })
    }

    /// `lomi_browser_network`: requests of every tab, oldest first.
    pub fn network(
        &self,
        caller: &PairingId,
        input: &BrowserLogInput,
    ) -> Result<NetworkPage, ToolError> {
        let (runtime, since, limit) = self.log_page(caller, input)?;
        let logs = runtime.browser.logs();
        let logs = logs.lock().unwrap_or_else(|e| e.into_inner());
        let (entries, dropped_before, next) =
            page_of(&logs.network, logs.network_next, since, limit, |e| {
                &e.cursor
            })?;
        Ok(NetworkPage {
            dropped_before,
            next_cursor: next.to_string(),
            entries,
        })
    }

    /// `lomi_browser_evaluate` (waits for the person by default).
    pub async fn evaluate(
        &self,
        caller: &PairingId,
        input: BrowserEvaluateInput,
    ) -> Result<OperationView, ToolError> {
        if input.expression.is_empty() || input.expression.len() > MAX_EXPRESSION_BYTES {
            return Err(ToolError::invalid("expression must be 1 byte to 64 KiB"));
        }
        let expression = input.expression.clone();
        self.on_tab(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserEvaluateTool>(&input)?,
            &input,
            |_| Ok(()),
            move |tab, (), _cancel| async move {
                match tab.evaluate(&expression).await {
                    Ok((value, kind, exception)) => EffectOutcome::succeeded(&Evaluated {
                        value,
                        kind,
                        exception,
                    }),
                    Err(error) => settle(Err(error), "evaluation", &tab, None),
                }
            },
        )
        .await
    }

    /// `lomi_browser_emulate`: the device every tab of the browser emulates.
    pub async fn emulate(
        &self,
        caller: &PairingId,
        input: BrowserEmulateInput,
    ) -> Result<OperationView, ToolError> {
        if let Some(viewport) = input.viewport
            && (!(100..=4096).contains(&viewport.width) || !(100..=4096).contains(&viewport.height))
        {
            return Err(ToolError::invalid(
                "viewport width and height must be 100 to 4,096",
            ));
        }
        if let Some(scale) = input.device_scale_factor
            && !(0.5..=4.0).contains(&scale)
        {
            return Err(ToolError::invalid("deviceScaleFactor must be 0.5 to 4"));
        }
        if let Some(agent) = &input.user_agent
            && (agent.is_empty() || agent.len() > 512 || agent.chars().any(char::is_control))
        {
            return Err(ToolError::invalid(
                "userAgent must be 1 to 512 characters without control characters (reset: true goes back to Chromium's)",
            ));
        }
        if let Some(scheme) = &input.color_scheme
            && !matches!(scheme.as_str(), "light" | "dark" | "no-preference")
        {
            return Err(ToolError::invalid(
                "colorScheme must be light, dark or no-preference (reset: true stops emulating it)",
            ));
        }
        let reset = input.reset.unwrap_or(false);
        if !reset
            && input.viewport.is_none()
            && input.device_scale_factor.is_none()
            && input.mobile.is_none()
            && input.user_agent.is_none()
            && input.color_scheme.is_none()
        {
            return Err(ToolError::invalid(
                "say what to emulate: viewport, deviceScaleFactor, mobile, userAgent, colorScheme, or reset: true",
            ));
        }
        let wanted = input.clone();
        self.on_tab(
            caller,
            ToolCall::of::<lomi_protocol::tools::browser::BrowserEmulateTool>(&input)?,
            &input,
            |_| Ok(()),
            move |tab, (), _cancel| async move {
                let browser = tab.browser();
                let options = browser.options();
                let mut now = if reset {
                    Emulation {
                        width: options.width,
                        height: options.height,
                        scale: 1.0,
                        mobile: false,
                        user_agent: None,
                        color_scheme: None,
                    }
                } else {
                    browser.emulation()
                };
                if let Some(viewport) = wanted.viewport {
                    (now.width, now.height) = (viewport.width, viewport.height);
                }
                now.scale = wanted.device_scale_factor.unwrap_or(now.scale);
                now.mobile = wanted.mobile.unwrap_or(now.mobile);
                if wanted.user_agent.is_some() {
                    now.user_agent = wanted.user_agent.clone();
                }
                if wanted.color_scheme.is_some() {
                    now.color_scheme = wanted.color_scheme.clone();
                }
                for each in browser.set_emulation(now.clone()) {
                    if let Err(error) = each.emulate(&now).await {
                        return EffectOutcome::Unknown {
                            effect: EffectState::Unknown,
                            message: format!(
                                "the emulation may be in force on some tabs only: {error}; read the page's metrics with lomi_browser_evaluate"
                            ),
                        };
                    }
                }
                let observed = match tab.metrics().await {
                    Ok(observed) => observed,
                    Err(error) => {
                        return EffectOutcome::Unknown {
                            effect: EffectState::Unknown,
                            message: format!("the emulation was sent but the page did not report it: {error}"),
                        };
                    }
                };
                let dark = observed["prefersDark"] == true;
                let scale_seen = observed["devicePixelRatio"].as_f64().unwrap_or(0.0);
                let mismatch = match now.color_scheme.as_deref() {
                    Some("dark") if !dark => Some("prefers-color-scheme: dark does not match"),
                    Some("light") if dark => Some("prefers-color-scheme: dark still matches"),
                    _ if (scale_seen - now.scale).abs() > 0.01 => Some("devicePixelRatio differs"),
                    _ => None,
                };
                if let Some(mismatch) = mismatch {
                    return EffectOutcome::Unknown {
                        effect: EffectState::Unknown,
                        message: format!("the emulation was sent but the page disagrees ({mismatch}): {observed}"),
                    };
                }
                EffectOutcome::succeeded(&Emulated {
                    viewport: Viewport {
                        width: now.width,
                        height: now.height,
                    },
                    device_scale_factor: now.scale,
                    mobile: now.mobile,
                    user_agent: now.user_agent,
                    color_scheme: now.color_scheme,
                    tab_id: tab.id.clone(),
                    observed,
                })
            },
        )
        .await
    }

    /// `lomi_browser_close`: ends the browser's processes and removes its panel.
    pub async fn close(
        &self,
        caller: &PairingId,
        input: PanelCloseInput,
    ) -> Result<OperationView, ToolError> {
        // The browser has ended by then, whether or not the panel can be removed.
        let ending = |runtime: BrowserRuntime| async move {
            runtime.browser.close().await;
            |panel_id, revision| BrowserClosed {
                panel_id,
                domain_revision: revision,
            }
        };
        (self.runtimes)
            .close(
                &self.broker,
                caller,
                ToolCall::of::<lomi_protocol::tools::browser::BrowserCloseTool>(&input)?,
                &input,
                EffectState::Partial,
                ending,
            )
            .await
    }

    /// Ends every browser (the broker is stopping).
    pub async fn close_all(&self) {
        let closing: Vec<_> = self
            .runtimes
            .drain()
            .into_iter()
            .map(|runtime| tokio::spawn(async move { runtime.browser.close().await }))
            .collect();
        for close in closing {
            if let Err(error) = close.await {
                tracing::warn!("closing a browser failed: {error}");
            }
        }
    }
}

/// One page of a bounded log after `since`: the entries, whether older ones were dropped
/// before the agent read them, and the cursor to continue from. `last` is the newest cursor
/// the log gave out.
fn page_of<T: Clone>(
    log: &std::collections::VecDeque<T>,
    last: u64,
    since: u64,
    limit: usize,
    cursor: impl Fn(&T) -> &str,
) -> Result<(Vec<T>, bool, u64), ToolError> {
    if since > last {
        return Err(ToolError::invalid("sinceCursor is not one Lomi gave out"));
    }
    let first = log
        .front()
        .and_then(|e| cursor(e).parse::<u64>().ok())
        .unwrap_or(last + 1);
    let entries: Vec<T> = log
        .iter()
        .filter(|e| cursor(e).parse::<u64>().is_ok_and(|c| c > since))
        .take(limit)
        .cloned()
        .collect();
    let next = entries
        .last()
        .map_or(since.max(first.saturating_sub(1)), |e| {
            cursor(e).parse().unwrap_or(since)
        });
    Ok((entries, since + 1 < first, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_failures_answer_with_the_code_the_caller_can_act_on() {
        let code = |error: BrowserError| tool_error(error).code;
        assert_eq!(
            code(BrowserError::Stale("gone".into())),
            ErrorCode::SnapshotStale
        );
        assert_eq!(
            code(BrowserError::Invalid("bad".into())),
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            code(BrowserError::Gone("killed".into())),
            ErrorCode::GenerationMismatch
        );
        assert_eq!(
            code(BrowserError::Timeout(
                "Chromium did not answer in time".into()
            )),
            ErrorCode::RuntimeUnavailable
        );
        assert_eq!(
            code(BrowserError::Cdp("no such method".into())),
            ErrorCode::Internal
        );
    }
}
