//! Browser tools: headless Chromium panels, snapshots with snapshot-scoped element refs,
//! actions that settle on their postcondition, tabs, console and network reads, captures.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, Subject, ToolDef};
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{DomainRevision, PanelId, ProjectId, RequestKey, RetryEpoch, WorkspaceId};

/// `lomi_browser_create` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserCreateInput {
    pub workspace_id: WorkspaceId,
    // Uploads, saved captures and file: URLs are confined to this project (optional with one).
    pub project_id: Option<ProjectId>,
    // 1 to 120 characters.
    pub title: String,
    // Viewport in CSS pixels (default: settings browser.viewport).
    pub viewport: Option<Viewport>,
    pub expected_revision: DomainRevision,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

// A viewport size in CSS pixels, 100 to 4,096 a side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
}

/// The confirmed result of `lomi_browser_create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserCreated {
    pub panel_id: PanelId,
    /// Changes when the browser process is replaced; actions name it.
    pub browser_generation: String,
    pub tab_id: String,
    pub domain_revision: DomainRevision,
    pub pid: u32,
}

/// The fields every browser action shares: which panel's browser, and the request identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserTarget {
    pub panel_id: PanelId,
    pub browser_generation: String,
}

/// `lomi_browser_navigate` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserNavigateInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    // http(s), about:blank, data:, or file: inside the project. Give `url` or `history`.
    pub url: Option<String>,
    // back, forward or reload: move through the active tab's history, or load its page again.
    #[schemars(extend("enum" = ["back", "forward", "reload"]))]
    pub history: Option<String>,
    // commit, domcontentloaded or load (default).
    #[schemars(extend("enum" = ["commit", "domcontentloaded", "load"]))]
    pub wait_until: Option<String>,
    // 1 to 60,000 (default 30,000).
    pub timeout_ms: Option<u32>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_browser_navigate`: the navigation committed (and reached
/// `waitUntil`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Navigated {
    pub navigation_id: String,
    pub tab_id: String,
    /// The URL the page shows, after redirects, fragment included.
    pub url: String,
    /// HTTP status of the document, when it came over HTTP.
    pub status: Option<u16>,
    pub reached: String,
    /// The document stayed (a fragment or history-API navigation): its refs are still valid.
    pub same_document: bool,
}

/// `lomi_browser_wait` input: at least one condition; each given must hold, checked in turn
/// (url, then text and role, then networkIdle) within one timeout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserWaitInput {
    pub panel_id: PanelId,
    // Text the page shows (case-insensitive), as a snapshot line would contain it.
    pub text: Option<String>,
    // A node's role as snapshots name it (link, button, heading…), optionally with `name`.
    pub role: Option<String>,
    // The accessible name of the `role` node (case-insensitive, contained).
    pub name: Option<String>,
    // Text the active tab's URL contains (fragment included).
    pub url: Option<String>,
    // No network request of the tab in flight for 500 ms.
    pub network_idle: Option<bool>,
    // 1 to 60,000 (default: settings browser.defaultWaitMs).
    pub timeout_ms: Option<u32>,
}

/// `lomi_browser_wait` output: what the page showed when the wait ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitView {
    /// Every condition held; false: the timeout came first.
    pub matched: bool,
    pub tab_id: String,
    pub navigation_id: String,
    /// The URL the page shows, fragment included.
    pub url: String,
    /// Set when `text` or `role` was asked for and matched: a snapshot whose lines (in `text`)
    /// are the matching nodes with their ancestors; its refs work for actions.
    pub snapshot_id: Option<String>,
    /// The matching snapshot lines, or on a timeout what was missing.
    pub text: String,
    /// Requests of the tab still in flight when the wait ended.
    pub requests_in_flight: u32,
}

/// `lomi_browser_snapshot` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserSnapshotInput {
    pub panel_id: PanelId,
    // Most bytes of the answer's text as sent (JSON-escaped), header included (1,024 to
    // 960,000; default 262,144).
    pub max_bytes: Option<u32>,
    /// Only lines containing this text, with their ancestors.
    pub find: Option<String>,
    // Answer only what changed since this earlier snapshot of the same document.
    pub since_snapshot_id: Option<String>,
    // Start at this line of the tree (after find), as `nextFromLine` of a cut-short answer
    // says (default 0).
    pub from_line: Option<u32>,
}

/// `lomi_browser_snapshot` output. In `text`, one line per node: `role "name" [ref]`, indented
/// by depth; frames appear as `iframe … [frame=ID]` with their content below.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotView {
    pub snapshot_id: String,
    pub navigation_id: String,
    pub browser_generation: String,
    pub tab_id: String,
    pub url: String,
    pub title: String,
    pub text: String,
    /// Lines left out to stay within maxBytes.
    pub truncated: bool,
    /// Lines of the whole tree (after find and since).
    pub lines: u32,
    /// Where to go on when lines were left out: `fromLine` for the next answer.
    pub next_from_line: Option<u32>,
    pub refs: u32,
    pub frames: Vec<FrameView>,
    /// Set for a diff: the snapshot compared against.
    pub since_snapshot_id: Option<String>,
    /// A JavaScript dialog waiting for lomi_browser_dialog.
    pub dialog: Option<DialogView>,
    /// The page is still loading (its document is being parsed, as right after a click that
    /// navigated): the tree may be empty or partial; wait with lomi_browser_wait, or snapshot
    /// again.
    pub loading: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FrameView {
    pub frame_id: String,
    pub parent_frame_id: Option<String>,
    pub url: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DialogView {
    /// alert, confirm, prompt or beforeunload.
    pub kind: String,
    pub message: String,
    pub default_prompt: Option<String>,
}

/// Declares one action tool's input: the shared target and request fields plus its own.
/// The target is `snapshotId` + `elementRef` (from one snapshot), or viewport `x` + `y`.
macro_rules! action_input {
    ($(#[doc = $doc:literal])* $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        #[schemars(extend("dependentRequired" = {
            "elementRef": ["snapshotId"], "snapshotId": ["elementRef"], "x": ["y"], "y": ["x"]
        }))]
        pub struct $name {
            pub panel_id: PanelId,
            pub browser_generation: String,
            pub snapshot_id: Option<String>,
            // A ref from that snapshot, e.g. e12.
            pub element_ref: Option<String>,
            // Viewport CSS pixels, instead of a ref.
            pub x: Option<f64>,
            pub y: Option<f64>,
            $($(#[$fmeta])* pub $field: $ty,)*
            pub retry_epoch: RetryEpoch,
            pub request_key: RequestKey,
        }

        impl Action for $name {
            fn common(&self) -> Result<ActionCommon, String> {
                Ok(ActionCommon {
                    panel_id: self.panel_id.clone(),
                    browser_generation: self.browser_generation.clone(),
                    target: action_target(&self.snapshot_id, &self.element_ref, self.x, self.y)?,
                    retry_epoch: self.retry_epoch.clone(),
                    request_key: self.request_key.clone(),
                })
            }
        }
    };
}

/// What every action input shares, decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionCommon {
    pub panel_id: PanelId,
    pub browser_generation: String,
    pub target: ActionTarget,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// An action tool's input.
pub trait Action: Serialize {
    /// The shared fields, with the target union checked.
    fn common(&self) -> Result<ActionCommon, String>;
}

/// Where an action lands.
#[derive(Clone, Debug, PartialEq)]
pub enum ActionTarget {
    Element {
        snapshot_id: String,
        element_ref: String,
    },
    Point {
        x: f64,
        y: f64,
    },
    /// Neither: the focused element (press) or the viewport (scroll).
    None,
}

fn action_target(
    snapshot_id: &Option<String>,
    element_ref: &Option<String>,
    x: Option<f64>,
    y: Option<f64>,
) -> Result<ActionTarget, String> {
    match (snapshot_id, element_ref, x, y) {
        (Some(snapshot_id), Some(element_ref), None, None) => Ok(ActionTarget::Element {
            snapshot_id: snapshot_id.clone(),
            element_ref: element_ref.clone(),
        }),
        (None, None, Some(x), Some(y))
            if x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0 =>
        {
            Ok(ActionTarget::Point { x, y })
        }
        (None, None, None, None) => Ok(ActionTarget::None),
        (Some(_), None, _, _) | (None, Some(_), _, _) => {
            Err("elementRef needs the snapshotId it came from, and the other way round".into())
        }
        _ => {
            Err("give one target: snapshotId + elementRef, or x + y (finite, not negative)".into())
        }
    }
}

action_input!(
    /// `lomi_browser_click` input.
    BrowserClickInput {
        // left (default), right or middle.
        #[schemars(extend("enum" = ["left", "right", "middle"]))]
        button: Option<String>,
        // 1 (default) to 3.
        click_count: Option<u8>,
    }
);

action_input!(
    /// `lomi_browser_type` input: inserts text into an element (an input, textarea or
    /// contenteditable).
    BrowserTypeInput {
        // At most 64 KiB.
        text: String,
        // Replace the current content (default true); false appends.
        replace: Option<bool>,
    }
);

action_input!(
    /// `lomi_browser_press` input: a key at the element (or the focused one without a target).
    BrowserPressInput {
        /// A key (Enter, ArrowDown, a), with modifiers: Control+a.
        key: String,
    }
);

action_input!(
    /// `lomi_browser_select` input: the options of a select element.
    BrowserSelectInput {
        // Option values or labels; exactly these end up selected.
        values: Vec<String>,
    }
);

action_input!(
    /// `lomi_browser_hover` input.
    BrowserHoverInput {}
);

action_input!(
    /// `lomi_browser_scroll` input: an element into view, or the wheel by a delta at the point
    /// (or the viewport's centre).
    BrowserScrollInput {
        delta_x: Option<f64>,
        delta_y: Option<f64>,
    }
);

action_input!(
    /// `lomi_browser_upload` input: sets a file input's files.
    BrowserUploadInput {
        // Project-relative paths of existing files.
        paths: Vec<String>,
    }
);

/// The confirmed result of an action: the event reached the intended node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionDone {
    /// click, type, press, select, hover, scroll or upload.
    pub action: String,
    pub tab_id: String,
    /// The element's tag and ref, when the action named one.
    pub element: Option<String>,
    /// What the postcondition observed (the event type, the value now, selected values…).
    pub observed: Value,
    /// The navigation the action caused, once it committed (null: it caused none).
    pub navigated: Option<ActionNavigation>,
}

/// A navigation an action caused (a link followed, a form sent, a script's `location` or
/// `history.pushState`), as committed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionNavigation {
    /// The document now shown; new snapshots and refs belong to it.
    pub navigation_id: String,
    /// The URL the page shows, fragment included.
    pub url: String,
    /// The document stayed (a fragment or history-API navigation): its refs are still valid.
    pub same_document: bool,
}

/// `lomi_browser_drag` input: drags one element of a snapshot onto another of the same
/// snapshot (and frame) with the mouse, as a person would.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserDragInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    pub snapshot_id: String,
    // The element dragged, a ref from that snapshot.
    pub element_ref: String,
    // The element it is dropped on, a ref from the same snapshot.
    pub target_ref: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

// One field of `lomi_browser_fill`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FormField {
    // A text input, textarea, contenteditable, checkbox, radio or select of the snapshot.
    pub element_ref: String,
    // The text; "true" or "false" for a checkbox or radio; an option's value or label for a
    // select.
    pub value: String,
}

/// `lomi_browser_fill` input: several fields of one snapshot, filled in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserFillInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    pub snapshot_id: String,
    // 1 to 64 fields.
    pub fields: Vec<FormField>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_browser_emulate` input: what to change; what is not given stays as it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserEmulateInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    pub viewport: Option<Viewport>,
    // Device pixels per CSS pixel, 0.5 to 4.
    pub device_scale_factor: Option<f64>,
    // A phone's layout: the page's viewport meta tag applies and touch is on.
    pub mobile: Option<bool>,
    // The User-Agent pages see and send, 1 to 512 characters.
    pub user_agent: Option<String>,
    // light, dark or no-preference: what `prefers-color-scheme` matches.
    #[schemars(extend("enum" = ["light", "dark", "no-preference"]))]
    pub color_scheme: Option<String>,
    // Back to the defaults before applying the rest (the created viewport, scale 1, desktop,
    // Chromium's User-Agent, no colour scheme emulated).
    pub reset: Option<bool>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_browser_emulate`: what is now in force on every tab of the
/// browser (and on tabs opened later).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Emulated {
    pub viewport: Viewport,
    pub device_scale_factor: f64,
    pub mobile: bool,
    /// Null: Chromium's own.
    pub user_agent: Option<String>,
    /// Null: not emulated (the system's).
    pub color_scheme: Option<String>,
    pub tab_id: String,
    /// What the active tab's page reports now: innerWidth, innerHeight, devicePixelRatio,
    /// prefersDark, userAgent.
    pub observed: Value,
}

/// `lomi_browser_pdf` input: the active tab printed to a PDF in the project (an operation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserPdfInput {
    pub panel_id: PanelId,
    // Project-relative path of the PDF; its directory must exist.
    pub path: String,
    // Replace an existing file (default false).
    pub overwrite: Option<bool>,
    pub landscape: Option<bool>,
    // Print background colours and images (default true).
    pub print_background: Option<bool>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_browser_pdf`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PdfSaved {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    pub tab_id: String,
    /// The page printed.
    pub url: String,
}

/// `lomi_browser_network_body` input: the response body of one logged request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserNetworkBodyInput {
    pub panel_id: PanelId,
    // The request's cursor, as lomi_browser_network lists it.
    pub cursor: String,
    // Most bytes of the body in the answer: 1 to 524,288 (default 65,536).
    pub max_bytes: Option<u32>,
    // Also write the whole body into the project (an operation; saved holds it).
    pub save: Option<CaptureSave>,
}

/// `lomi_browser_network_body` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkBody {
    pub cursor: String,
    pub tab_id: String,
    pub url: String,
    pub status: Option<u16>,
    pub mime_type: Option<String>,
    /// utf8, or base64 for a body that is not text.
    pub encoding: String,
    /// The body, cut to maxBytes (whole characters for text; before encoding for base64).
    pub body: String,
    /// Bytes of the whole body.
    pub bytes: u64,
    pub truncated: bool,
    /// The save's operation, when `save` was given.
    pub saved: Option<Value>,
}

/// The confirmed result of saving a response body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BodySaved {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// `lomi_browser_dialog` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserDialogInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    #[schemars(extend("enum" = ["accept", "dismiss"]))]
    pub action: String,
    // Text for a prompt() being accepted.
    pub prompt_text: Option<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_browser_tab_list` input, and `lomi_browser_console`/`_network` read position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserPanelInput {
    pub panel_id: PanelId,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabView {
    pub tab_id: String,
    pub url: String,
    pub title: String,
    /// Actions and snapshots go to the active tab.
    pub active: bool,
    /// The tab whose page opened this one (`window.open`, a `target=_blank` link): a popup.
    pub opener_tab_id: Option<String>,
}

/// `lomi_browser_tab_list` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabList {
    pub browser_generation: String,
    pub tabs: Vec<TabView>,
}

/// `lomi_browser_tab_open`, `_tab_switch` and `_tab_close` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserTabInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    // switch, close: the tab.
    pub tab_id: Option<String>,
    // open: the first URL (default about:blank); the new tab becomes active.
    pub url: Option<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of a tab change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TabsChanged {
    pub tab_id: String,
    pub tabs: Vec<TabView>,
}

/// `lomi_browser_console` and `lomi_browser_network` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserLogInput {
    pub panel_id: PanelId,
    // Continue after this cursor (from an earlier page's nextCursor).
    pub since_cursor: Option<String>,
    // 1 to 500 entries (default 100).
    pub limit: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleEntry {
    pub cursor: String,
    pub tab_id: String,
    /// log, info, warning, error, debug, or exception.
    pub level: String,
    /// At most 4 KiB.
    pub text: String,
    pub url: Option<String>,
}

/// `lomi_browser_console` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsolePage {
    pub entries: Vec<ConsoleEntry>,
    pub next_cursor: String,
    /// Entries older than the kept ones were dropped before this page.
    pub dropped_before: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkEntry {
    pub cursor: String,
    pub tab_id: String,
    pub method: String,
    pub url: String,
    /// Document, Script, XHR, Fetch, Image, …
    pub resource_type: String,
    pub status: Option<u16>,
    pub mime_type: Option<String>,
    /// Bytes received, once finished.
    pub bytes: Option<u64>,
    pub failed: Option<String>,
}

/// `lomi_browser_network` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPage {
    pub entries: Vec<NetworkEntry>,
    pub next_cursor: String,
    pub dropped_before: bool,
}

/// `lomi_browser_evaluate` input. Waits for the person by default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserEvaluateInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    // A JavaScript expression evaluated in the active tab's page (promises are awaited).
    pub expression: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_browser_evaluate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Evaluated {
    /// The value as JSON (at most 64 KiB), or null when it is not serialisable.
    pub value: Value,
    /// The value's JavaScript type.
    pub kind: String,
    pub exception: Option<String>,
}

// A rectangle in CSS pixels of the page.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClipRect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

// Saving a capture into the project: an operation of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureSave {
    // Project-relative path of the file; its directory must exist.
    pub path: String,
    // Replace an existing file (default false).
    pub overwrite: Option<bool>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_browser_capture` input: the viewport by default, or one of fullPage, an element or
/// clip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserCaptureInput {
    pub panel_id: PanelId,
    pub full_page: Option<bool>,
    pub snapshot_id: Option<String>,
    pub element_ref: Option<String>,
    pub clip: Option<ClipRect>,
    // 0.05 to 1 (default 1).
    pub scale: Option<f32>,
    // The image in the answer: 1,024 to 700,000 (the default); fewer rows are shown, never a
    // smaller scale. With `save`, the file instead: up to 67,108,864 (the default).
    pub max_bytes: Option<u32>,
    // Pause animations, hide caret and scrollbars, wait for fonts and network idle first
    // (default: settings browser.deterministicCaptures).
    pub deterministic: Option<bool>,
    pub save: Option<CaptureSave>,
}

/// `lomi_browser_capture` output: the image that follows as an image block (for a save, the
/// saved file is `saved.result`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureView {
    pub width: u32,
    pub height: u32,
    pub bytes: u64,
    pub sha256: String,
    /// Image pixels per CSS pixel (the scale asked); none when a retried save answers with
    /// the top of the file it saved before.
    pub scale: Option<f64>,
    /// Whether the PNG follows as an image block (always, since captures show the top).
    pub inline: bool,
    /// Set when the image shows only the area's top: the area's whole height in CSS pixels.
    pub area_height: Option<f64>,
    /// The tab captured; empty when a retried save answers with the image it saved before.
    pub tab_id: String,
    /// The save's operation, when `save` was given.
    pub saved: Option<Value>,
}

/// The confirmed result of saving a capture.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureSaved {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// The confirmed result of `lomi_browser_close`: the browser's processes are gone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserClosed {
    pub panel_id: PanelId,
    pub domain_revision: DomainRevision,
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_browser_create`
pub struct BrowserCreateTool;

impl ToolDef for BrowserCreateTool {
    const TOOL: Tool = Tool::BrowserCreate;
    const NAME: &'static str = "lomi_browser_create";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Open browsers";
    const TITLE: &'static str = "Create a browser";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Starts a headless Chromium as a new panel.";
    type Input = BrowserCreateInput;
    type Output = BrowserCreated;
}

/// `lomi_browser_navigate`
pub struct BrowserNavigateTool;

impl ToolDef for BrowserNavigateTool {
    const TOOL: Tool = Tool::BrowserNavigate;
    const NAME: &'static str = "lomi_browser_navigate";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Open web addresses";
    const TITLE: &'static str = "Navigate";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Opens url, or moves through history, in the active tab.";
    type Input = BrowserNavigateInput;
    type Output = Navigated;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(input: &Self::Input) -> Preview {
        match &input.url {
            Some(url) => Preview::Navigate { url: url.clone() },
            None => Preview::Described,
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        match &input.url {
            Some(url) => Subject::Url(url.clone()),
            None => Subject::None,
        }
    }
}

/// `lomi_browser_snapshot`
pub struct BrowserSnapshotTool;

impl ToolDef for BrowserSnapshotTool {
    const TOOL: Tool = Tool::BrowserSnapshot;
    const NAME: &'static str = "lomi_browser_snapshot";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Read web pages";
    const TITLE: &'static str = "Snapshot a page";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "The active tab as text, one node a line with refs for actions; sinceSnapshotId \
        gives only what changed.";
    type Input = BrowserSnapshotInput;
    type Output = SnapshotView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_wait`
pub struct BrowserWaitTool;

impl ToolDef for BrowserWaitTool {
    const TOOL: Tool = Tool::BrowserWait;
    const NAME: &'static str = "lomi_browser_wait";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Wait for a web page";
    const TITLE: &'static str = "Wait for a page";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Waits until the active tab shows text, a role+name node, a URL or network \
        idleness (every one given).";
    type Input = BrowserWaitInput;
    type Output = WaitView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_click`
pub struct BrowserClickTool;

impl ToolDef for BrowserClickTool {
    const TOOL: Tool = Tool::BrowserClick;
    const NAME: &'static str = "lomi_browser_click";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Click in web pages";
    const TITLE: &'static str = "Click";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Clicks an element or a point.";
    type Input = BrowserClickInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_type`
pub struct BrowserTypeTool;

impl ToolDef for BrowserTypeTool {
    const TOOL: Tool = Tool::BrowserType;
    const NAME: &'static str = "lomi_browser_type";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Type into web pages";
    const TITLE: &'static str = "Type text";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Types text into an element, replacing its content unless replace is false.";
    type Input = BrowserTypeInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(input: &Self::Input) -> Preview {
        Preview::Type {
            text: input.text.clone(),
        }
    }
}

/// `lomi_browser_press`
pub struct BrowserPressTool;

impl ToolDef for BrowserPressTool {
    const TOOL: Tool = Tool::BrowserPress;
    const NAME: &'static str = "lomi_browser_press";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Press keys in web pages";
    const TITLE: &'static str = "Press a key";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Presses a key at an element, or at the focused one.";
    type Input = BrowserPressInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_select`
pub struct BrowserSelectTool;

impl ToolDef for BrowserSelectTool {
    const TOOL: Tool = Tool::BrowserSelect;
    const NAME: &'static str = "lomi_browser_select";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Choose options in web pages";
    const TITLE: &'static str = "Select options";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Selects exactly these options (values or labels) of a select.";
    type Input = BrowserSelectInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_hover`
pub struct BrowserHoverTool;

impl ToolDef for BrowserHoverTool {
    const TOOL: Tool = Tool::BrowserHover;
    const NAME: &'static str = "lomi_browser_hover";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Point at elements of web pages";
    const TITLE: &'static str = "Hover";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Moves the mouse over an element or a point.";
    type Input = BrowserHoverInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_scroll`
pub struct BrowserScrollTool;

impl ToolDef for BrowserScrollTool {
    const TOOL: Tool = Tool::BrowserScroll;
    const NAME: &'static str = "lomi_browser_scroll";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Scroll web pages";
    const TITLE: &'static str = "Scroll";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Scrolls an element into view, or by deltaX/deltaY at a point.";
    type Input = BrowserScrollInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_upload`
pub struct BrowserUploadTool;

impl ToolDef for BrowserUploadTool {
    const TOOL: Tool = Tool::BrowserUpload;
    const NAME: &'static str = "lomi_browser_upload";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Upload files to web pages";
    const TITLE: &'static str = "Upload files";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Sets a file input's files from the project.";
    type Input = BrowserUploadInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_dialog`
pub struct BrowserDialogTool;

impl ToolDef for BrowserDialogTool {
    const TOOL: Tool = Tool::BrowserDialog;
    const NAME: &'static str = "lomi_browser_dialog";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Answer web pages' dialogs";
    const TITLE: &'static str = "Answer a dialog";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Answers the open JavaScript dialog.";
    type Input = BrowserDialogInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_tab_list`
pub struct BrowserTabListTool;

impl ToolDef for BrowserTabListTool {
    const TOOL: Tool = Tool::BrowserTabList;
    const NAME: &'static str = "lomi_browser_tab_list";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "List browser tabs";
    const TITLE: &'static str = "List tabs";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "The tabs; the active one gets actions and snapshots.";
    type Input = BrowserPanelInput;
    type Output = TabList;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_tab_open`
pub struct BrowserTabOpenTool;

impl ToolDef for BrowserTabOpenTool {
    const TOOL: Tool = Tool::BrowserTabOpen;
    const NAME: &'static str = "lomi_browser_tab_open";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Open browser tabs";
    const TITLE: &'static str = "Open a tab";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Opens a tab at url (default about:blank) and makes it active.";
    type Input = BrowserTabInput;
    type Output = TabsChanged;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_tab_switch`
pub struct BrowserTabSwitchTool;

impl ToolDef for BrowserTabSwitchTool {
    const TOOL: Tool = Tool::BrowserTabSwitch;
    const NAME: &'static str = "lomi_browser_tab_switch";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Switch browser tabs";
    const TITLE: &'static str = "Switch tabs";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Makes tabId the active tab.";
    type Input = BrowserTabInput;
    type Output = TabsChanged;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_tab_close`
pub struct BrowserTabCloseTool;

impl ToolDef for BrowserTabCloseTool {
    const TOOL: Tool = Tool::BrowserTabClose;
    const NAME: &'static str = "lomi_browser_tab_close";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Close browser tabs";
    const TITLE: &'static str = "Close a tab";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Closes tabId, not the last tab.";
    type Input = BrowserTabInput;
    type Output = TabsChanged;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_console`
pub struct BrowserConsoleTool;

impl ToolDef for BrowserConsoleTool {
    const TOOL: Tool = Tool::BrowserConsole;
    const NAME: &'static str = "lomi_browser_console";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Read a page's console";
    const TITLE: &'static str = "Read the console";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Console messages and exceptions after a cursor.";
    type Input = BrowserLogInput;
    type Output = ConsolePage;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_network`
pub struct BrowserNetworkTool;

impl ToolDef for BrowserNetworkTool {
    const TOOL: Tool = Tool::BrowserNetwork;
    const NAME: &'static str = "lomi_browser_network";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Read a page's network requests";
    const TITLE: &'static str = "Read network requests";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Requests of every tab after a cursor.";
    type Input = BrowserLogInput;
    type Output = NetworkPage;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_evaluate`
pub struct BrowserEvaluateTool;

impl ToolDef for BrowserEvaluateTool {
    const TOOL: Tool = Tool::BrowserEvaluate;
    const NAME: &'static str = "lomi_browser_evaluate";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Run scripts in web pages";
    const TITLE: &'static str = "Evaluate JavaScript";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Runs a JavaScript expression in the active tab; awaits promises.";
    // JavaScript in a page can do anything the page can.
    const ASKS_BY_DEFAULT: bool = true;
    type Input = BrowserEvaluateInput;
    type Output = Evaluated;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(input: &Self::Input) -> Preview {
        Preview::Script {
            expression: input.expression.clone(),
        }
    }
}

/// `lomi_browser_capture`
pub struct BrowserCaptureTool;

impl ToolDef for BrowserCaptureTool {
    const TOOL: Tool = Tool::BrowserCapture;
    const NAME: &'static str = "lomi_browser_capture";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Capture web pages";
    const TITLE: &'static str = "Capture a PNG";
    const KIND: ToolKind = ToolKind::Read;
    // With save it writes a file into the project (an operation, keyed like every
    // mutation, so a retry does not write twice).
    const ANNOTATIONS: Annotations = Annotations {
        read_only_hint: false,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "A PNG of the viewport, full page, element or clip, never scaled down: the image shows up to 2 screens from the top (areaHeight then gives the whole); clip shows more, save writes it all.";
    type Input = BrowserCaptureInput;
    type Output = CaptureView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_drag`
pub struct BrowserDragTool;

impl ToolDef for BrowserDragTool {
    const TOOL: Tool = Tool::BrowserDrag;
    const NAME: &'static str = "lomi_browser_drag";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Drag in web pages";
    const TITLE: &'static str = "Drag and drop";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Drags elementRef onto targetRef.";
    type Input = BrowserDragInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_fill`
pub struct BrowserFillTool;

impl ToolDef for BrowserFillTool {
    const TOOL: Tool = Tool::BrowserFill;
    const NAME: &'static str = "lomi_browser_fill";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Fill in web forms";
    const TITLE: &'static str = "Fill form fields";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Fills fields in order; value \"true\"/\"false\" for a checkbox or radio.";
    type Input = BrowserFillInput;
    type Output = ActionDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_emulate`
pub struct BrowserEmulateTool;

impl ToolDef for BrowserEmulateTool {
    const TOOL: Tool = Tool::BrowserEmulate;
    const NAME: &'static str = "lomi_browser_emulate";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Emulate devices in a browser";
    const TITLE: &'static str = "Emulate a device";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Sets viewport, scale, mobile, User-Agent or color scheme.";
    type Input = BrowserEmulateInput;
    type Output = Emulated;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_pdf`
pub struct BrowserPdfTool;

impl ToolDef for BrowserPdfTool {
    const TOOL: Tool = Tool::BrowserPdf;
    const NAME: &'static str = "lomi_browser_pdf";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Save web pages as PDF into the project";
    const TITLE: &'static str = "Save a page as PDF";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Prints the active tab to a PDF in the project.";
    type Input = BrowserPdfInput;
    type Output = PdfSaved;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_network_body`
pub struct BrowserNetworkBodyTool;

impl ToolDef for BrowserNetworkBodyTool {
    const TOOL: Tool = Tool::BrowserNetworkBody;
    const NAME: &'static str = "lomi_browser_network_body";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Read network responses";
    const TITLE: &'static str = "Read a response body";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = Annotations {
        read_only_hint: false,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "The response body of a request lomi_browser_network listed (its cursor); save \
        also writes it.";
    type Input = BrowserNetworkBodyInput;
    type Output = NetworkBody;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_capture_set`
pub struct BrowserCaptureSetTool;

impl ToolDef for BrowserCaptureSetTool {
    const TOOL: Tool = Tool::BrowserCaptureSet;
    const NAME: &'static str = "lomi_browser_capture_set";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Save sets of page captures into the project";
    const TITLE: &'static str = "Capture a set of pages";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Captures each target into folder as NAME.png, NAME.diff.png (against the file \
        replaced, or baseline) and manifest.json.";
    type Input = crate::tools::capture::BrowserCaptureSetInput;
    type Output = crate::tools::capture::CaptureSetResult;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_browser_close`
pub struct BrowserCloseTool;

impl ToolDef for BrowserCloseTool {
    const TOOL: Tool = Tool::BrowserClose;
    const NAME: &'static str = "lomi_browser_close";
    const FAMILY: Option<Family> = Some(Family::Browser);
    const LABEL: &'static str = "Close browsers";
    const TITLE: &'static str = "Close a browser";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Ends the browser and removes its panel.";
    type Input = crate::tools::session::PanelCloseInput;
    type Output = BrowserClosed;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(_input: &Self::Input) -> Preview {
        Preview::ClosePanel
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __browser_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            BrowserCreate = $crate::tools::browser::BrowserCreateTool => browsers as plain,
            BrowserNavigate = $crate::tools::browser::BrowserNavigateTool => browsers as plain,
            BrowserSnapshot = $crate::tools::browser::BrowserSnapshotTool => browsers as snapshot,
            BrowserWait = $crate::tools::browser::BrowserWaitTool => browsers as plain,
            BrowserClick = $crate::tools::browser::BrowserClickTool => browsers as plain,
            BrowserType = $crate::tools::browser::BrowserTypeTool => browsers as plain,
            BrowserPress = $crate::tools::browser::BrowserPressTool => browsers as plain,
            BrowserSelect = $crate::tools::browser::BrowserSelectTool => browsers as plain,
            BrowserHover = $crate::tools::browser::BrowserHoverTool => browsers as plain,
            BrowserScroll = $crate::tools::browser::BrowserScrollTool => browsers as plain,
            BrowserUpload = $crate::tools::browser::BrowserUploadTool => browsers as plain,
            BrowserDialog = $crate::tools::browser::BrowserDialogTool => browsers as plain,
            BrowserTabList = $crate::tools::browser::BrowserTabListTool => browsers as plain,
            BrowserTabOpen = $crate::tools::browser::BrowserTabOpenTool => browsers as plain,
            BrowserTabSwitch = $crate::tools::browser::BrowserTabSwitchTool => browsers as plain,
            BrowserTabClose = $crate::tools::browser::BrowserTabCloseTool => browsers as plain,
            BrowserConsole = $crate::tools::browser::BrowserConsoleTool => browsers as plain,
            BrowserNetwork = $crate::tools::browser::BrowserNetworkTool => browsers as plain,
            BrowserEvaluate = $crate::tools::browser::BrowserEvaluateTool => browsers as plain,
            BrowserCapture = $crate::tools::browser::BrowserCaptureTool => browsers as png,
            BrowserDrag = $crate::tools::browser::BrowserDragTool => browsers as plain,
            BrowserFill = $crate::tools::browser::BrowserFillTool => browsers as plain,
            BrowserEmulate = $crate::tools::browser::BrowserEmulateTool => browsers as plain,
            BrowserPdf = $crate::tools::browser::BrowserPdfTool => browsers as plain,
            BrowserNetworkBody = $crate::tools::browser::BrowserNetworkBodyTool => browsers as plain,
            BrowserCaptureSet = $crate::tools::browser::BrowserCaptureSetTool => browsers as plain,
            BrowserClose = $crate::tools::browser::BrowserCloseTool => browsers as plain,
        ]);
    };
}
