//! Capture sets: many captures (pages of a browser panel, screens of a device) written into a
//! project folder in one operation, with a manifest and a comparison against earlier files.

use serde::{Deserialize, Serialize};

use crate::ids::{LeaseId, PanelId, RequestKey, RetryEpoch};
use crate::time::Timestamp;
use crate::tools::browser::Viewport;

/// `lomi_browser_capture_set` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserCaptureSetInput {
    pub panel_id: PanelId,
    pub browser_generation: String,
    // Project-relative folder (it must exist) for NAME.png, NAME.diff.png and manifest.json.
    pub folder: String,
    // 1 to 100 captures, taken in order in the active tab.
    pub targets: Vec<PageTarget>,
    // Pause animations and transitions, hide caret and scrollbars, wait for fonts and network
    // idle (default: settings browser.deterministicCaptures).
    pub deterministic: Option<bool>,
    // Project-relative folder of earlier NAME.png files (default: folder itself).
    pub baseline: Option<String>,
    /// Keep the old file if at most this share of pixels changed.
    pub threshold: Option<f64>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

// One page to capture.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageTarget {
    // The file name without .png: 1 to 80 of A-Z a-z 0-9 . _ -
    pub name: String,
    // http(s), data: or a project file: URL; none captures the page shown.
    pub url: Option<String>,
    // Default: the browser's.
    pub viewport: Option<Viewport>,
    // 0.5 to 4 (default 1).
    pub device_scale_factor: Option<f64>,
    pub mobile: Option<bool>,
    #[schemars(extend("enum" = ["light", "dark", "no-preference"]))]
    pub color_scheme: Option<String>,
    pub full_page: Option<bool>,
    // Capture the first element this CSS selector matches.
    pub selector: Option<String>,
}

/// `lomi_android_capture_set` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidCaptureSetInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // Project-relative folder (it must exist) for NAME.png, NAME.diff.png and manifest.json.
    pub folder: String,
    // 1 to 100 screens, in order.
    pub screens: Vec<ScreenTarget>,
    // Project-relative folder of earlier NAME.png files (default: folder itself).
    pub baseline: Option<String>,
    /// Keep the old file if at most this share of pixels changed.
    pub threshold: Option<f64>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

// One screen: launch `component` or open `url` (a deep link), or neither for the screen shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenTarget {
    // The file name without .png: 1 to 80 of A-Z a-z 0-9 . _ -
    pub name: String,
    // `package/.Activity`.
    pub component: Option<String>,
    pub url: Option<String>,
    // Pause after launching before the capture, 0 to 10,000 ms (default 500).
    pub settle_ms: Option<u32>,
}

/// The result of a capture set, also written as its manifest.json. While it runs, the
/// operation's result is this with the captures so far; a cancelled set keeps exactly these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureSetResult {
    pub manifest: String,
    pub done: u32,
    pub total: u32,
    pub deterministic: bool,
    pub captures: Vec<CaptureEntry>,
}

/// One capture of a set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureEntry {
    pub name: String,
    /// The PNG in the project (the old file when `written` is false).
    pub path: String,
    /// The URL, component or deep link captured.
    pub target: String,
    pub viewport: Option<Viewport>,
    /// Image pixels per CSS (or screen) pixel.
    pub scale: f64,
    pub width: u32,
    pub height: u32,
    pub bytes: u64,
    pub sha256: String,
    pub captured_at: Timestamp,
    /// False: the change was within threshold and the old file was kept.
    pub written: bool,
    pub comparison: Option<Comparison>,
}

/// A capture compared with an earlier file of the same name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Comparison {
    pub against: String,
    pub changed_pixels: u64,
    pub changed_ratio: f64,
    /// A PNG of the changed pixels (opaque red; the rest transparent).
    pub diff: Option<String>,
}
