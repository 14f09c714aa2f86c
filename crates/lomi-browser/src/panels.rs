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
    Broker, CancellationToken, Confirmation, EffectOutcome, LayoutChange, PanelCall, PanelRecord,
    PanelRuntime, ProjectChange, Runtimes,
};
use lomi_files::confine::write_into;
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
    ActionResult, Browser, BrowserError, BrowserOptions, CaptureArea, Exit, SnapshotOptions, Tab,
    confined_existing_file,
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
const MAX_NAVIGATE_MS: u32 = 60_000;
const DEFAULT_WAIT_MS: u32 = 10_000;
const MAX_WAIT_MS: u32 = 60_000;
/// The matching lines a wait answers with: a few screens, not the page.
const WAIT_SNAPSHOT_BYTES: usize = 16 * 1024;
const MAX_TYPE_BYTES: usize = 64 * 1024;
const MAX_UPLOAD_FILES: usize = 32;
const MAX_EXPRESSION_BYTES: usize = 64 * 1024;
const MIN_CAPTURE_BYTES: u32 = 1024;
const MAX_CAPTURE_BYTES: u32 = 16 * 1024 * 1024;
const MAX_LOG_PAGE: u32 = 500;
const DEFAULT_LOG_PAGE: u32 = 100;
const MAX_FILL_FIELDS: usize = 64;
/// The most of a response body an answer carries (like terminal reads); saved ones may be larger.
const MAX_BODY_ANSWER: u32 = 512 * 1024;
const DEFAULT_BODY_ANSWER: u32 = 64 * 1024;
/// The largest PDF or response body written into the project.
const MAX_SAVED_FILE: usize = 64 * 1024 * 1024;

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

/// A browser panel as the person's window shows it (see [`BrowserPanels::preview`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserPreview {
    pub generation: String,
    pub tab_id: Option<String>,
    pub url: String,
    pub title: String,
    /// The viewport as a JPEG, base64; absent while there is nothing to show.
    pub jpeg_base64: Option<String>,
    /// Why there is no image (the browser is gone, a dialog is open, …).
    pub note: Option<String>,
}

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
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The envelope error for a browser failure.
pub fn tool_error(error: BrowserError) -> ToolError {
    match error {
        BrowserError::Stale(message) => ToolError::new(ErrorCode::SnapshotStale, message),
        BrowserError::Invalid(message) => ToolError::invalid(message),
        BrowserError::Gone(_) => ToolError::new(
            ErrorCode::GenerationMismatch,
            format!(
                "{error}; close its panel with lomi_browser_close, then start a new browser with lomi_browser_create"
            ),
        ),
        BrowserError::Timeout(_) => ToolError::new(
            ErrorCode::RuntimeUnavailable,
            format!("{error}; the browser may be busy: look at the panel before trying again"),
        ),
        other => ToolError::internal(other.to_string()),
    }
}

/// A capture saved into the project: a change to the panel's project, keyed like every one.
fn capture_change<'a>(
    input: &BrowserCaptureInput,
    save: &'a lomi_protocol::tools::browser::CaptureSave,
    workspace: &'a WorkspaceId,
    project: &'a ProjectId,
) -> ProjectChange<'a> {
    ProjectChange {
        tool: Tool::BrowserCapture,
        workspace,
        project: Some(project),
        retry_epoch: &save.retry_epoch,
        request_key: &save.request_key,
        payload: to_value(input),
        revision: None,
    }
}

/// A browser operation's input: it names its panel, the browser generation and its request
/// identity, with the same field names on every such tool.
trait BrowserRequest: serde::Serialize {
    fn call(&self, tool: Tool) -> PanelCall<'_>;
}

macro_rules! browser_requests {
    ($($input:ty),* $(,)?) => {
        $(impl BrowserRequest for $input {
            fn call(&self, tool: Tool) -> PanelCall<'_> {
                PanelCall {
                    tool,
                    retry_epoch: &self.retry_epoch,
                    request_key: &self.request_key,
                    panel_id: &self.panel_id,
                    generation: &self.browser_generation,
                    lease: None,
                    payload: to_value(self),
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
    tab: &str,
    navigated: Option<ActionNavigation>,
) -> EffectOutcome {
    match result {
        Ok(done) => EffectOutcome::Succeeded(to_value(&ActionDone {
            action: action.to_owned(),
            tab_id: tab.to_owned(),
            element: done.element,
            observed: done.observed,
            navigated,
        })),
        Err(ActionError::Refused(error)) => EffectOutcome::Failed {
            effect: EffectState::None,
            error: tool_error(error),
        },
        Err(ActionError::Dispatched(error)) => EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message: format!(
                "the {action} was sent to the page but may not have arrived: {error}; take a snapshot to see"
            ),
        },
        Err(ActionError::Unconfirmed(why)) => EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message: format!(
                "the {action} was sent but not confirmed: {why}; take a snapshot to see"
            ),
        },
        Err(ActionError::Failed(why)) => EffectOutcome::Failed {
            effect: EffectState::Partial,
            error: ToolError::invalid(why),
        },
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
    pub async fn preview(&self, panel: &PanelId, quality: u8) -> Option<BrowserPreview> {
        let runtime = self.runtimes.get(panel)?;
        let browser = &runtime.browser;
        let mut preview = BrowserPreview {
            generation: browser.generation().to_owned(),
            tab_id: None,
            url: String::new(),
            title: String::new(),
            jpeg_base64: None,
            note: None,
        };
        let tab = match browser.active_tab() {
            Ok(tab) => tab,
            Err(error) => {
                preview.note = Some(error.to_string());
                return Some(preview);
            }
        };
        // The window asks again shortly: a Chromium answer that is late (or lost) must not
        // hold the person's view for chromiumoxide's 30 s command timeout.
        preview.url = tab.current_url();
        preview.tab_id = Some(tab.id.clone());
        let looked = tokio::time::timeout(PREVIEW_LIMIT, async {
            (
                tab.location().await,
                tab.preview(quality.clamp(1, 100)).await,
            )
        })
        .await;
        match looked {
            Ok(((url, title), shot)) => {
                (preview.url, preview.title) = (url, title);
                match shot {
                    Ok(jpeg) => preview.jpeg_base64 = Some(jpeg),
                    Err(error) => preview.note = Some(browser.failure(error).to_string()),
                }
            }
            Err(_) => preview.note = Some("the page did not answer in time".to_owned()),
        }
        Some(preview)
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
        let viewport = input
            .viewport
            .unwrap_or(lomi_protocol::tools::browser::Viewport {
                width: self.options.width,
                height: self.options.height,
            });
        if !(100..=4096).contains(&viewport.width) || !(100..=4096).contains(&viewport.height) {
            return Err(ToolError::invalid(
                "viewport width and height must be 100 to 4,096",
            ));
        }
        let (project_id, root) =
            self.broker
                .project_root(caller, &input.workspace_id, input.project_id.as_ref())?;
        let workspace_id = input.workspace_id.clone();
        let expected = input.expected_revision;
        let change = LayoutChange {
            tool: Tool::BrowserCreate,
            retry_epoch: input.retry_epoch.clone(),
            request_key: input.request_key.clone(),
            workspace_id: workspace_id.clone(),
            project_id: Some(project_id.clone()),
            expected,
            payload: to_value(&input),
        };
        let panels = self.clone();
        let title = input.title.clone();
        let options = BrowserOptions {
            width: viewport.width,
            height: viewport.height,
            ..self.options.clone()
        };
        self.broker
            .change_layout(
                caller,
                change,
                Confirmation::Policy,
                async { Ok(()) },
                move |(), context| async move {
                    // The person's choice at the time the browser starts.
                    let profile = context.broker.persistent_browser_profile(&workspace_id);
                    if let Some(dir) = &profile
                        && let Some(holder) = panels.profile_holder(dir)
                    {
                        return EffectOutcome::Failed {
                            effect: EffectState::None,
                            error: profile_in_use(&workspace_id, &holder),
                        };
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
                        return EffectOutcome::Cancelled {
                            effect: EffectState::None,
                        };
                    };
                    let browser = match launched {
                        Ok(browser) => browser,
                        Err(error) => {
                            return EffectOutcome::Failed {
                                effect: EffectState::None,
                                error: ToolError::new(
                                    ErrorCode::RuntimeUnavailable,
                                    format!("the browser did not start: {error}"),
                                ),
                            };
                        }
                    };
                    let tab_id = match browser.active_tab() {
                        Ok(tab) => tab.id,
                        Err(error) => {
                            browser.close().await;
                            return EffectOutcome::Failed {
                                effect: EffectState::Partial,
                                error: tool_error(error),
                            };
                        }
                    };
                    let record = PanelRecord {
                        workspace_id: workspace_id.clone(),
                        kind: PanelKind::Browser,
                        title,
                        project_id: Some(project_id.clone()),
                        generation: Some(generation.clone()),
                    };
                    let runtime = BrowserRuntime {
                        browser: browser.clone(),
                        workspace_id,
                        project_id,
                        root,
                        profile,
                    };
                    let (panel_id, revision) = match context.broker.place_panel(
                        &panels.runtimes,
                        expected,
                        record,
                        runtime,
                    ) {
                        Ok(placed) => placed,
                        Err(error) => {
                            browser.close().await;
                            return EffectOutcome::Failed {
                                effect: EffectState::Partial,
                                error,
                            };
                        }
                    };
                    panels.watch(panel_id.clone(), browser.clone());
                    EffectOutcome::Succeeded(to_value(&BrowserCreated {
                        panel_id,
                        browser_generation: generation,
                        tab_id,
                        domain_revision: revision,
                        pid: browser.pid(),
                    }))
                },
            )
            .await
    }

    /// Notices a browser that ends without being closed: its panel keeps its place but has
    /// no runtime generation until it is closed.
    fn watch(&self, panel: PanelId, browser: Browser) {
        let broker = self.broker.clone();
        tokio::spawn(async move {
            if let Exit::Crashed(why) = browser.exited().await {
                tracing::warn!("the browser of panel {panel} ended: {why}");
                broker.panel_set_generation(&panel, None);
            }
        });
    }

    /// A browser operation on the active tab (none: nothing happens), in the engine's panel
    /// order (see [`Broker::operate_on_panel`]): `prepare` checks what needs the runtime (a
    /// URL or file confined to its project) before anything is recorded; `effect` gets the
    /// tab, what `prepare` gave and the cancel token.
    async fn on_tab<P, F, Fut>(
        &self,
        caller: &PairingId,
        tool: Tool,
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
                input.call(tool),
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

    /// An action on the active tab: `act` runs with the tab and the decoded target. Cancelled
    /// while it runs, the action stops waiting for the page's confirmation; whether its input
    /// reached the page is then unknown.
    async fn action<I, F>(
        &self,
        caller: &PairingId,
        tool: Tool,
        input: &I,
        act: F,
    ) -> Result<OperationView, ToolError>
    where
        I: Action + BrowserRequest,
        F: FnOnce(Tab, ActionTarget) -> Outcome + Send + 'static,
    {
        let target = input.common().map_err(ToolError::invalid)?.target;
        let name = action_name(tool);
        self.on_tab(
            caller,
            tool,
            input,
            |_| Ok(()),
            move |tab, (), cancel| async move {
                let mark = tab.mark();
                let acted = async {
                    let result = act(tab.clone(), target).await;
                    // A navigation the action caused is reported once it committed.
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
                settle(result, name, &tab.id, navigated)
            },
        )
        .await
    }

    /// `lomi_browser_click`.
    pub async fn click(
        &self,
        caller: &PairingId,
        input: BrowserClickInput,
    ) -> Result<OperationView, ToolError> {
        let button = input.button.clone().unwrap_or_else(|| "left".to_owned());
        if !matches!(button.as_str(), "left" | "right" | "middle") {
            return Err(ToolError::invalid("button must be left, right or middle"));
        }
        let count = input.click_count.unwrap_or(1);
        if !(1..=3).contains(&count) {
            return Err(ToolError::invalid("clickCount must be 1 to 3"));
        }
        need_target(
            &input.common().map_err(ToolError::invalid)?.target,
            "click",
            true,
        )?;
        self.action(caller, Tool::BrowserClick, &input, move |tab, target| {
            Box::pin(async move { tab.click(target_of(&target), &button, count).await })
        })
        .await
    }

    /// `lomi_browser_hover`.
    pub async fn hover(
        &self,
        caller: &PairingId,
        input: BrowserHoverInput,
    ) -> Result<OperationView, ToolError> {
        need_target(
            &input.common().map_err(ToolError::invalid)?.target,
            "hover",
            true,
        )?;
        self.action(caller, Tool::BrowserHover, &input, move |tab, target| {
            Box::pin(async move { tab.hover(target_of(&target)).await })
        })
        .await
    }

    /// `lomi_browser_type`.
    pub async fn type_text(
        &self,
        caller: &PairingId,
        input: BrowserTypeInput,
    ) -> Result<OperationView, ToolError> {
        if input.text.len() > MAX_TYPE_BYTES {
            return Err(ToolError::invalid("text takes at most 64 KiB"));
        }
        let (snapshot_id, element_ref) =
            element_of(&input.common().map_err(ToolError::invalid)?.target, "type")?;
        let text = input.text.clone();
        let replace = input.replace.unwrap_or(true);
        self.action(caller, Tool::BrowserType, &input, move |tab, _| {
            Box::pin(async move {
                tab.type_text(&snapshot_id, &element_ref, &text, replace)
                    .await
            })
        })
        .await
    }

    /// `lomi_browser_press`.
    pub async fn press(
        &self,
        caller: &PairingId,
        input: BrowserPressInput,
    ) -> Result<OperationView, ToolError> {
        if input.key.is_empty() || input.key.len() > 64 {
            return Err(ToolError::invalid("key must be 1 to 64 characters"));
        }
        let key = input.key.clone();
        self.action(caller, Tool::BrowserPress, &input, move |tab, target| {
            Box::pin(async move { tab.press(target_of(&target), &key).await })
        })
        .await
    }

    /// `lomi_browser_select`.
    pub async fn select(
        &self,
        caller: &PairingId,
        input: BrowserSelectInput,
    ) -> Result<OperationView, ToolError> {
        if input.values.is_empty() || input.values.len() > 256 {
            return Err(ToolError::invalid("values must name 1 to 256 options"));
        }
        let (snapshot_id, element_ref) = element_of(
            &input.common().map_err(ToolError::invalid)?.target,
            "select",
        )?;
        let values = input.values.clone();
        self.action(caller, Tool::BrowserSelect, &input, move |tab, _| {
            Box::pin(async move { tab.select(&snapshot_id, &element_ref, &values).await })
        })
        .await
    }

    /// `lomi_browser_scroll`.
    pub async fn scroll(
        &self,
        caller: &PairingId,
        input: BrowserScrollInput,
    ) -> Result<OperationView, ToolError> {
        let delta = match (input.delta_x, input.delta_y) {
            (None, None) => None,
            (dx, dy) => {
                let (dx, dy) = (dx.unwrap_or(0.0), dy.unwrap_or(0.0));
                if !dx.is_finite()
                    || !dy.is_finite()
                    || dx.abs() > 100_000.0
                    || dy.abs() > 100_000.0
                {
                    return Err(ToolError::invalid(
                        "deltaX and deltaY must be finite, at most 100,000",
                    ));
                }
                Some((dx, dy))
            }
        };
        self.action(caller, Tool::BrowserScroll, &input, move |tab, target| {
            Box::pin(async move { tab.scroll(target_of(&target), delta).await })
        })
        .await
    }

    /// `lomi_browser_upload`: files from the project root only.
    pub async fn upload(
        &self,
        caller: &PairingId,
        input: BrowserUploadInput,
    ) -> Result<OperationView, ToolError> {
        let common = input.common().map_err(ToolError::invalid)?;
        let (snapshot_id, element_ref) = element_of(&common.target, "upload")?;
        if input.paths.is_empty() || input.paths.len() > MAX_UPLOAD_FILES {
            return Err(ToolError::invalid(format!(
                "paths must name 1 to {MAX_UPLOAD_FILES} files"
            )));
        }
        let paths = input.paths.clone();
        self.on_tab(
            caller,
            Tool::BrowserUpload,
            &input,
            // Files from the project root only, checked before anything is recorded.
            move |runtime| {
                paths
                    .iter()
                    .map(|p| {
                        confined_existing_file(&runtime.root, p)
                            .map(|real| real.to_string_lossy().into_owned())
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(ToolError::invalid)
            },
            move |tab, files: Vec<String>, cancel| async move {
                let Some(result) = lomi_broker::unless_cancelled(
                    &cancel,
                    tab.upload(&snapshot_id, &element_ref, &files),
                )
                .await
                else {
                    return EffectOutcome::Cancelled {
                        effect: EffectState::Unknown,
                    };
                };
                settle(result, "upload", &tab.id, None)
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
            Tool::BrowserNavigate,
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
                    Ok((committed, status, reached)) => {
                        EffectOutcome::Succeeded(to_value(&Navigated {
                            navigation_id: committed.navigation_id,
                            tab_id: tab.id.clone(),
                            url: committed.url,
                            status,
                            reached: reached.to_owned(),
                            same_document: committed.same_document,
                        }))
                    }
                    Err(error) => settle(Err(error), "navigation", &tab.id, None),
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
        })
    }

    /// `lomi_browser_wait`: a read; waits on the active tab, then answers what it saw.
    pub async fn wait(
        &self,
        caller: &PairingId,
        input: BrowserWaitInput,
    ) -> Result<WaitView, ToolError> {
        let timeout = input.timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
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
            Tool::BrowserDialog,
            &input,
            |_| Ok(()),
            move |tab, (), _cancel| async move {
                let result = tab.dialog_answer(accept, prompt.as_deref()).await;
                settle(result, "dialog", &tab.id, None)
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

    /// `lomi_browser_tab_open`, `_tab_switch`, `_tab_close`.
    pub async fn tab(
        &self,
        caller: &PairingId,
        tool: Tool,
        input: BrowserTabInput,
    ) -> Result<OperationView, ToolError> {
        let open = tool == Tool::BrowserTabOpen;
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
            input.call(tool),
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
                                    return settle(Err(error), "tab open", &tab.id, None);
                                }
                            }
                            Ok(tab.id)
                        }
                        Err(error) => Err(error),
                    },
                    (false, Some(id)) if tool == Tool::BrowserTabSwitch => {
                        browser.activate(&id).await.map(|()| id)
                    }
                    (false, Some(id)) => browser.close_tab(&id).await.map(|()| id),
                    (false, None) => {
                        Err(BrowserError::Invalid("name the tab with tabId".to_owned()))
                    }
                };
                match done {
                    Ok(tab_id) => EffectOutcome::Succeeded(to_value(&TabsChanged {
                        tab_id,
                        tabs: browser.tab_views().await,
                    })),
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
            Tool::BrowserEvaluate,
            &input,
            |_| Ok(()),
            move |tab, (), _cancel| async move {
                match tab.evaluate(&expression).await {
                    Ok((value, kind, exception)) => {
                        EffectOutcome::Succeeded(to_value(&Evaluated {
                            value,
                            kind,
                            exception,
                        }))
                    }
                    Err(error) => settle(Err(error), "evaluation", &tab.id, None),
                }
            },
        )
        .await
    }

    /// `lomi_browser_capture`: the PNG and its metadata; with `save`, also an operation that
    /// writes it into the project.
    pub async fn capture(
        &self,
        caller: &PairingId,
        input: BrowserCaptureInput,
    ) -> Result<(CaptureView, Vec<u8>), ToolError> {
        let area = match (
            input.full_page.unwrap_or(false),
            &input.snapshot_id,
            &input.element_ref,
            input.clip,
        ) {
            (false, None, None, None) => CaptureArea::Viewport,
            (true, None, None, None) => CaptureArea::FullPage,
            (false, Some(snapshot_id), Some(element_ref), None) => CaptureArea::Element {
                snapshot_id: snapshot_id.clone(),
                element_ref: element_ref.clone(),
            },
            (false, None, None, Some(clip)) => {
                let fine = [clip.x, clip.y, clip.width, clip.height]
                    .iter()
                    .all(|v| v.is_finite() && *v >= 0.0);
                if !fine
                    || clip.width < 1.0
                    || clip.height < 1.0
                    || clip.width > 16_384.0
                    || clip.height > 16_384.0
                {
                    return Err(ToolError::invalid(
                        "clip needs x, y ≥ 0 and width, height of 1 to 16,384",
                    ));
                }
                CaptureArea::Clip(clip)
            }
            (_, Some(_), None, _) | (_, None, Some(_), _) => {
                return Err(ToolError::invalid(
                    "elementRef needs the snapshotId it came from, and the other way round",
                ));
            }
            _ => {
                return Err(ToolError::invalid(
                    "capture at most one of fullPage, an element, or clip",
                ));
            }
        };
        let scale = input.scale.unwrap_or(1.0);
        if !(lomi_capture::MIN_SCALE..=lomi_capture::MAX_SCALE).contains(&scale) {
            return Err(ToolError::invalid(format!(
                "scale must be {} to {}",
                lomi_capture::MIN_SCALE,
                lomi_capture::MAX_SCALE
            )));
        }
        // A capture sent in the answer must fit a client's message; a saved one may be larger.
        let (most, max_bytes) = match &input.save {
            None => (
                MAX_INLINE_IMAGE_BYTES,
                Some(input.max_bytes.unwrap_or(MAX_INLINE_IMAGE_BYTES)),
            ),
            Some(_) => (
                MAX_CAPTURE_BYTES,
                Some(input.max_bytes.unwrap_or(MAX_CAPTURE_BYTES)),
            ),
        };
        if let Some(max) = max_bytes
            && !(MIN_CAPTURE_BYTES..=most).contains(&max)
        {
            return Err(ToolError::invalid(format!(
                "maxBytes must be {MIN_CAPTURE_BYTES} to {most}{}",
                if input.save.is_none() {
                    " for a capture sent in the answer (larger ones do not fit a client's message); with save it may be up to 16,777,216"
                } else {
                    ""
                }
            )));
        }
        // A retry of a saved capture answers its operation with the image it saved, before
        // anything about the browser (gone, crashed, or on another page by now). If that image
        // is no longer in the project, a browser that still runs captures again, and the
        // save answers its earlier operation.
        let earlier = match &input.save {
            Some(save) => match self.saved_before(caller, &input, save).await {
                Ok(Some(answer)) => return Ok(answer),
                Ok(None) => None,
                Err(error) => Some(error),
            },
            None => None,
        };
        let (_record, runtime) = self
            .runtime(caller, &input.panel_id)
            .map_err(|error| earlier.unwrap_or(error))?;
        if let Some(gone) = runtime.browser.gone() {
            return Err(tool_error(gone));
        }
        let tab = runtime.browser.active_tab().map_err(tool_error)?;
        // A capture kept in the project is compressed as far as Chromium goes; one only looked
        // at is compressed for speed (an image costs an agent by its pixels, not its bytes).
        let (png, taken_scale) = tab
            .capture(&area, f64::from(scale), input.save.is_none())
            .await
            .map_err(tool_error)?;
        let taken_width = lomi_capture::inspect_png(&png)
            .map_err(|e| ToolError::new(e.code(), e.to_string()))?
            .0;
        let options = lomi_capture::CaptureOptions {
            clip: None,
            scale: None,
            max_bytes: max_bytes.map(|m| m as usize),
        };
        let capture = lomi_capture::process(&png, &options)
            .map_err(|e| ToolError::new(e.code(), e.to_string()))?;
        let scale = taken_scale * f64::from(capture.width) / f64::from(taken_width.max(1));
        let saved = match &input.save {
            Some(save) => Some(to_value(
                &self.save(caller, &input, save, &runtime, &capture).await?,
            )),
            None => None,
        };
        let inline = capture.png.len() <= MAX_INLINE_IMAGE_BYTES as usize;
        Ok((
            CaptureView {
                width: capture.width,
                height: capture.height,
                bytes: capture.png.len() as u64,
                sha256: capture.sha256.clone(),
                scale: Some(scale),
                inline,
                tab_id: tab.id.clone(),
                saved,
            },
            if inline { capture.png } else { Vec::new() },
        ))
    }

    /// The answer to a retried capture whose save has a receipt: that operation, with the
    /// image it saved read back from the project, whether or not the browser still runs (a
    /// retry never captures again). `None` when there is no such receipt.
    async fn saved_before(
        &self,
        caller: &PairingId,
        input: &BrowserCaptureInput,
        save: &lomi_protocol::tools::browser::CaptureSave,
    ) -> Result<Option<(CaptureView, Vec<u8>)>, ToolError> {
        let workspace = self
            .broker
            .retry_epoch_workspace(caller, &save.retry_epoch)?;
        let Some((panel_workspace, Some(project))) = self.broker.panel_anchor(&input.panel_id)
        else {
            return Ok(None);
        };
        if panel_workspace != workspace {
            return Ok(None);
        }
        let mutation = capture_change(input, save, &workspace, &project).mutation(project.clone());
        let Some(prior) = self.broker.prior(caller, &mutation)? else {
            return Ok(None);
        };
        let operation = self.broker.answer(caller, &prior).await?;
        let saved: Option<CaptureSaved> = operation
            .result
            .clone()
            .and_then(|result| serde_json::from_value(result).ok());
        let not_shown = |why: &str| {
            ToolError::new(
                ErrorCode::NotFound,
                format!(
                    "this request was answered before by operation {prior} ({}); {why}: read it with lomi_operation_get",
                    operation.state
                ),
            )
            .with_details(json!({ "operation": to_value(&operation) }))
        };
        let Some(saved) = saved else {
            return Err(not_shown("it saved no image to show again"));
        };
        let (_, root) = self
            .broker
            .project_root(caller, &workspace, Some(&project))?;
        let path = saved.path.clone();
        let read = tokio::task::spawn_blocking(move || {
            confined_existing_file(&root, &path).and_then(|real| {
                std::fs::read(&real).map_err(|error| format!("{}: {error}", real.display()))
            })
        })
        .await
        .map_err(|error| ToolError::internal(error.to_string()))?;
        let Ok(png) = read else {
            return Err(not_shown(&format!("{} is gone", saved.path)));
        };
        let Ok(capture) = lomi_capture::process(&png, &lomi_capture::CaptureOptions::default())
        else {
            return Err(not_shown(&format!("{} is no longer a PNG", saved.path)));
        };
        if capture.sha256 != saved.sha256 {
            return Err(not_shown(&format!("{} has changed since", saved.path)));
        }
        // The image is the saved one, not a capture of any tab now.
        let tab_id = String::new();
        Ok(Some((
            CaptureView {
                width: capture.width,
                height: capture.height,
                bytes: capture.png.len() as u64,
                sha256: capture.sha256,
                scale: None,
                inline: capture.png.len() <= MAX_INLINE_IMAGE_BYTES as usize,
                tab_id,
                saved: Some(to_value(&operation)),
            },
            if capture.png.len() <= MAX_INLINE_IMAGE_BYTES as usize {
                capture.png
            } else {
                Vec::new()
            },
        )))
    }

    async fn save(
        &self,
        caller: &PairingId,
        input: &BrowserCaptureInput,
        save: &lomi_protocol::tools::browser::CaptureSave,
        runtime: &BrowserRuntime,
        capture: &lomi_capture::Capture,
    ) -> Result<OperationView, ToolError> {
        let change = capture_change(input, save, &runtime.workspace_id, &runtime.project_id);
        let path = save.path.clone();
        let overwrite = save.overwrite.unwrap_or(false);
        let png = capture.png.clone();
        let sha256 = capture.sha256.clone();
        self.broker
            .change_project(
                caller,
                change,
                async { Ok(()) },
                move |root, (), _context| async move {
                    let saved = to_value(&CaptureSaved {
                        path: path.clone(),
                        bytes: png.len() as u64,
                        sha256,
                    });
                    write_into(root, path, png, overwrite, saved).await
                },
            )
            .await
    }

    /// `lomi_browser_drag`: drags one element of a snapshot onto another.
    pub async fn drag(
        &self,
        caller: &PairingId,
        input: BrowserDragInput,
    ) -> Result<OperationView, ToolError> {
        if input.element_ref == input.target_ref {
            return Err(ToolError::invalid(
                "elementRef and targetRef name the same element: drag it onto another one",
            ));
        }
        let (snapshot_id, from, to) = (
            input.snapshot_id.clone(),
            input.element_ref.clone(),
            input.target_ref.clone(),
        );
        self.on_tab(
            caller,
            Tool::BrowserDrag,
            &input,
            |_| Ok(()),
            move |tab, (), cancel| async move {
                let mark = tab.mark();
                let Some(result) =
                    lomi_broker::unless_cancelled(&cancel, tab.drag(&snapshot_id, &from, &to))
                        .await
                else {
                    return EffectOutcome::Cancelled {
                        effect: EffectState::Unknown,
                    };
                };
                let navigated = match &result {
                    Ok(_) => tab.navigation_since(&mark).await.map(|c| ActionNavigation {
                        navigation_id: c.navigation_id,
                        url: c.url,
                        same_document: c.same_document,
                    }),
                    Err(_) => None,
                };
                settle(result, "drag", &tab.id, navigated)
            },
        )
        .await
    }

    /// `lomi_browser_fill`: several fields of one snapshot, in order.
    pub async fn fill(
        &self,
        caller: &PairingId,
        input: BrowserFillInput,
    ) -> Result<OperationView, ToolError> {
        if input.fields.is_empty() || input.fields.len() > MAX_FILL_FIELDS {
            return Err(ToolError::invalid(format!(
                "fields must name 1 to {MAX_FILL_FIELDS} fields"
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for field in &input.fields {
            if field.value.len() > MAX_TYPE_BYTES {
                return Err(ToolError::invalid(format!(
                    "the value for {} is over 64 KiB",
                    field.element_ref
                )));
            }
            if !seen.insert(field.element_ref.as_str()) {
                return Err(ToolError::invalid(format!(
                    "{} is named twice in fields",
                    field.element_ref
                )));
            }
        }
        let snapshot_id = input.snapshot_id.clone();
        let fields: Vec<(String, String)> = input
            .fields
            .iter()
            .map(|f| (f.element_ref.clone(), f.value.clone()))
            .collect();
        self.on_tab(
            caller,
            Tool::BrowserFill,
            &input,
            |_| Ok(()),
            move |tab, (), cancel| async move {
                let Some(result) =
                    lomi_broker::unless_cancelled(&cancel, tab.fill(&snapshot_id, &fields)).await
                else {
                    return EffectOutcome::Cancelled {
                        effect: EffectState::Unknown,
                    };
                };
                settle(result, "fill", &tab.id, None)
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
            Tool::BrowserEmulate,
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
                EffectOutcome::Succeeded(to_value(&Emulated {
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
                }))
            },
        )
        .await
    }

    /// The workspace and project a panel's file-writing operation is keyed by: the retry
    /// epoch's workspace and the panel's project, known even after the panel closed (so a
    /// retry then answers its receipt).
    fn panel_project(
        &self,
        caller: &PairingId,
        panel: &PanelId,
        epoch: &lomi_protocol::RetryEpoch,
    ) -> Result<(WorkspaceId, ProjectId), ToolError> {
        let workspace = self.broker.retry_epoch_workspace(caller, epoch)?;
        match self.broker.panel_anchor(panel) {
            Some((owner, Some(project))) if owner == workspace => Ok((workspace, project)),
            _ => Err(ToolError::not_found(format!(
                "no browser panel {panel} in this retry epoch's workspace"
            ))),
        }
    }

    /// `lomi_browser_pdf`: the active tab printed into a project file (an operation).
    pub async fn pdf(
        &self,
        caller: &PairingId,
        input: BrowserPdfInput,
    ) -> Result<OperationView, ToolError> {
        if !input.path.to_ascii_lowercase().ends_with(".pdf") {
            return Err(ToolError::invalid("path must end in .pdf"));
        }
        let (workspace, project) =
            self.panel_project(caller, &input.panel_id, &input.retry_epoch)?;
        let change = ProjectChange {
            tool: Tool::BrowserPdf,
            workspace: &workspace,
            project: Some(&project),
            retry_epoch: &input.retry_epoch,
            request_key: &input.request_key,
            payload: to_value(&input),
            revision: None,
        };
        let panels = self.clone();
        let panel = input.panel_id.clone();
        let path = input.path.clone();
        let overwrite = input.overwrite.unwrap_or(false);
        let landscape = input.landscape.unwrap_or(false);
        let background = input.print_background.unwrap_or(true);
        let find = async move {
            let (_, runtime) = panels.runtime(caller, &panel)?;
            runtime.browser.active_tab().map_err(tool_error)
        };
        self.broker
            .change_project(
                caller,
                change,
                find,
                move |root, tab, _context| async move {
                    let pdf = match tab.pdf(landscape, background).await {
                        Ok(pdf) => pdf,
                        Err(error) => {
                            return EffectOutcome::Failed {
                                effect: EffectState::None,
                                error: tool_error(error),
                            };
                        }
                    };
                    if pdf.len() > MAX_SAVED_FILE {
                        return EffectOutcome::Failed {
                            effect: EffectState::None,
                            error: ToolError::invalid(format!(
                                "the PDF is {} bytes, over the 64 MiB Lomi writes",
                                pdf.len()
                            )),
                        };
                    }
                    let saved = PdfSaved {
                        path: path.clone(),
                        bytes: pdf.len() as u64,
                        sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&pdf)),
                        tab_id: tab.id.clone(),
                        url: tab.current_url(),
                    };
                    write_into(root, path, pdf, overwrite, to_value(&saved)).await
                },
            )
            .await
    }

    /// `lomi_browser_network_body`: a read of one logged response's body, cut to maxBytes;
    /// with `save`, the whole body is also written into the project (an operation).
    pub async fn network_body(
        &self,
        caller: &PairingId,
        input: BrowserNetworkBodyInput,
    ) -> Result<NetworkBody, ToolError> {
        let max = input.max_bytes.unwrap_or(DEFAULT_BODY_ANSWER);
        if max == 0 || max > MAX_BODY_ANSWER {
            return Err(ToolError::invalid(format!(
                "maxBytes must be 1 to {MAX_BODY_ANSWER}; save writes a larger body into the project"
            )));
        }
        let cursor = lomi_protocol::parse_decimal(&input.cursor).ok_or_else(|| {
            ToolError::invalid(format!(
                "cursor {:?} is not a decimal cursor of lomi_browser_network",
                input.cursor
            ))
        })?;
        let runtime = match self.runtime(caller, &input.panel_id) {
            Ok((_, runtime)) => runtime,
            Err(error) => {
                return Err(self
                    .body_saved_before(caller, &input)
                    .await?
                    .unwrap_or(error));
            }
        };
        if let Some(gone) = runtime.browser.gone() {
            return Err(tool_error(gone));
        }
        let (entry, request_id) = runtime.browser.logged_request(cursor).ok_or_else(|| {
            ToolError::not_found(format!(
                "the network log has no request {cursor} (never given out, or dropped from the newest 2,000)"
            ))
        })?;
        let tab = runtime.browser.tab(&entry.tab_id).ok_or_else(|| {
            ToolError::not_found(format!(
                "tab {} that made request {cursor} is closed; its bodies went with it",
                entry.tab_id
            ))
        })?;
        let (bytes, binary) = tab.response_body(&request_id).await.map_err(|error| match error {
            BrowserError::Cdp(why) => ToolError::not_found(format!(
                "Chromium has no body for request {cursor} ({why}): it is still loading, failed, was a redirect or had none, or was evicted since; load it again"
            )),
            other => tool_error(other),
        })?;
        let total = bytes.len();
        let keep = (max as usize).min(total);
        let (body, encoding, truncated) = if binary {
            (
                BASE64_STANDARD.encode(&bytes[..keep]),
                "base64",
                keep < total,
            )
        } else {
            // maxBytes as sent: escaped in the answer's JSON.
            let text = String::from_utf8_lossy(&bytes);
            let (kept, cut) = lomi_protocol::json_escaped_prefix(&text, max as usize);
            (kept.to_owned(), "utf8", cut)
        };
        let saved = match &input.save {
            Some(save) => {
                if total > MAX_SAVED_FILE {
                    return Err(ToolError::invalid(
                        "the body is over the 64 MiB Lomi writes",
                    ));
                }
                let change = ProjectChange {
                    tool: Tool::BrowserNetworkBody,
                    workspace: &runtime.workspace_id,
                    project: Some(&runtime.project_id),
                    retry_epoch: &save.retry_epoch,
                    request_key: &save.request_key,
                    payload: to_value(&input),
                    revision: None,
                };
                let path = save.path.clone();
                let overwrite = save.overwrite.unwrap_or(false);
                let done = BodySaved {
                    path: path.clone(),
                    bytes: total as u64,
                    sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes)),
                };
                let operation = self
                    .broker
                    .change_project(caller, change, async { Ok(()) }, move |root, (), _| {
                        write_into(root, path, bytes, overwrite, to_value(&done))
                    })
                    .await?;
                Some(to_value(&operation))
            }
            None => None,
        };
        Ok(NetworkBody {
            cursor: entry.cursor,
            tab_id: entry.tab_id,
            url: entry.url,
            status: entry.status,
            mime_type: entry.mime_type,
            encoding: encoding.to_owned(),
            body,
            bytes: total as u64,
            truncated,
            saved,
        })
    }

    /// For a retried body save whose browser is gone: the refusal that names the operation
    /// the first request made (the body cannot be read again; the saved file is in the
    /// project). `None` when there is no such operation.
    async fn body_saved_before(
        &self,
        caller: &PairingId,
        input: &BrowserNetworkBodyInput,
    ) -> Result<Option<ToolError>, ToolError> {
        let Some(save) = &input.save else {
            return Ok(None);
        };
        let Some((workspace, Some(project))) = self.broker.panel_anchor(&input.panel_id) else {
            return Ok(None);
        };
        let change = ProjectChange {
            tool: Tool::BrowserNetworkBody,
            workspace: &workspace,
            project: Some(&project),
            retry_epoch: &save.retry_epoch,
            request_key: &save.request_key,
            payload: to_value(input),
            revision: None,
        };
        let Some(prior) = self
            .broker
            .prior(caller, &change.mutation(project.clone()))?
        else {
            return Ok(None);
        };
        let operation = self.broker.answer(caller, &prior).await?;
        Ok(Some(
            ToolError::not_found(format!(
                "this request was answered before by operation {prior} ({}), which saved the body to {}; its browser is gone, so the body cannot be shown again: read the saved file, or the operation with lomi_operation_get",
                operation.state, save.path
            ))
            .with_details(json!({ "operation": to_value(&operation) })),
        ))
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
            |panel_id, revision| {
                to_value(&BrowserClosed {
                    panel_id,
                    domain_revision: revision,
                })
            }
        };
        (self.runtimes)
            .close(
                &self.broker,
                caller,
                Tool::BrowserClose,
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

fn target_of(target: &ActionTarget) -> Target<'_> {
    match target {
        ActionTarget::Element {
            snapshot_id,
            element_ref,
        } => Target::Element {
            snapshot_id,
            element_ref,
        },
        ActionTarget::Point { x, y } => Target::Point { x: *x, y: *y },
        ActionTarget::None => Target::None,
    }
}

fn need_target(target: &ActionTarget, action: &str, point: bool) -> Result<(), ToolError> {
    match target {
        ActionTarget::None => Err(ToolError::invalid(if point {
            format!("{action} needs snapshotId + elementRef, or x + y")
        } else {
            format!("{action} needs snapshotId + elementRef")
        })),
        _ => Ok(()),
    }
}

fn element_of(target: &ActionTarget, action: &str) -> Result<(String, String), ToolError> {
    match target {
        ActionTarget::Element {
            snapshot_id,
            element_ref,
        } => Ok((snapshot_id.clone(), element_ref.clone())),
        _ => Err(ToolError::invalid(format!(
            "{action} needs snapshotId + elementRef"
        ))),
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
