//! Android tools: list the adb server's devices, attach one as a panel (the person approves the
//! first attach of each device), launch activities, ordered input, UI snapshots with refs, PNG
//! captures, policy-gated shell commands, and detach; files to and from the project, app
//! installs, app listing and force-stop, URLs, logcat reads and screen rotation.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, Subject, ToolDef};
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};

use crate::ids::{
    DomainRevision, LeaseId, PanelId, ProjectId, RequestKey, RetryEpoch, WorkspaceId,
};

/// `lomi_android_devices` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidDevicesInput {
    // A granted workspace; its Android panels are shown beside their devices.
    pub workspace_id: WorkspaceId,
}

/// One device the adb server lists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidDeviceView {
    /// The adb serial to attach (`adb devices` shows the same).
    pub serial: String,
    /// ready, offline, unauthorized (accept the USB debugging prompt on the phone), or adb's
    /// own word for other states.
    pub state: String,
    pub model: Option<String>,
    pub api_level: Option<u32>,
    /// The panel of this workspace the device is attached to, if any.
    pub panel_id: Option<PanelId>,
    /// That panel's current runtime generation (none while the device is lost).
    pub generation: Option<String>,
}

/// `lomi_android_devices` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidDeviceList {
    /// The adb server Lomi asked (host:port).
    pub adb_server: String,
    pub devices: Vec<AndroidDeviceView>,
}

/// `lomi_android_attach` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidAttachInput {
    pub workspace_id: WorkspaceId,
    // A serial from `lomi_android_devices`, or `HOST:PORT` of a device listening on TCP
    // (wireless debugging), which Lomi then connects through the adb server.
    pub serial: String,
    // The panel's title, 1 to 120 characters (default: the device's model and serial).
    pub title: Option<String>,
    // The workspace's `domainRevision` from a fresh listing.
    pub expected_revision: DomainRevision,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_android_attach`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidAttached {
    pub panel_id: PanelId,
    pub serial: String,
    /// Which boot of which device the panel talks to; it changes when the device reconnects
    /// or reboots. Input names it so it never reaches another runtime.
    pub generation: String,
    /// Input authority for the attaching client.
    pub lease_id: LeaseId,
    pub domain_revision: DomainRevision,
    pub model: Option<String>,
    pub api_level: Option<u32>,
    pub screen_width: u32,
    pub screen_height: u32,
    /// Dots per inch (`wm density`), when the device says.
    pub screen_density: Option<u32>,
    /// True when the device's existing panel got a new runtime (the device came back).
    pub reattached: bool,
}

/// The confirmed result of `lomi_android_detach`: the panel is gone; the device is untouched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidDetached {
    pub panel_id: PanelId,
    pub domain_revision: DomainRevision,
}

/// An implicit intent for `am start`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntentArguments {
    // The intent action, such as `android.intent.action.VIEW`.
    pub action: String,
    // The data URI, such as `https://example.com`.
    pub data: Option<String>,
    // Restrict the intent to this package.
    pub package: Option<String>,
}

/// `lomi_android_launch` input: exactly one of `component` or `intent`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["component"]}, {"required": ["intent"]}]))]
pub struct AndroidLaunchInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // An explicit activity: `package/.Activity` or `package/full.class.Name`.
    pub component: Option<String>,
    // An implicit intent: action, and optionally data and package.
    pub intent: Option<IntentArguments>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_android_launch`: the intent was delivered to the activity
/// manager. It does not say the app is ready; take a UI snapshot to see.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidLaunched {
    pub panel_id: PanelId,
    pub generation: String,
    pub delivered: bool,
    /// What `am start` printed.
    pub am_output: String,
}

// A point to press: exactly one of `x`+`y` (screen pixels) or `snapshotId`+`elementRef` (the
// centre of an element of a UI snapshot, refused with SNAPSHOT_STALE if the UI changed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["x", "y"]}, {"required": ["snapshotId", "elementRef"]}]))]
pub struct PointArguments {
    pub x: Option<u32>,
    pub y: Option<u32>,
    pub snapshot_id: Option<String>,
    pub element_ref: Option<String>,
    // For long presses only: how long to hold, 100 to 10,000 ms (default 800).
    pub duration_ms: Option<u32>,
}

// A swipe between two points in screen pixels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SwipeArguments {
    pub from_x: u32,
    pub from_y: u32,
    pub to_x: u32,
    pub to_y: u32,
    // How long the swipe takes, 1 to 10,000 ms (default: the device's).
    pub duration_ms: Option<u32>,
}

/// `lomi_android_input` input as sent: exactly one of `tap`, `longPress`, `swipe`, `text`
/// or `key`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidInputArguments {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // Decimal, one more than the lease's last. The same number with the same payload
    // acknowledges the earlier input instead of sending it again.
    pub input_sequence: String,
    pub tap: Option<PointArguments>,
    pub long_press: Option<PointArguments>,
    pub swipe: Option<SwipeArguments>,
    // Text typed literally into the focused field (1 to 4,096 characters, no control
    // characters and no `%s`; shell characters arrive as typed).
    pub text: Option<String>,
    /// A keycode: 66 or KEYCODE_ENTER.
    pub key: Option<String>,
}

/// Where a press lands.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Point {
    At {
        x: u32,
        y: u32,
    },
    Element {
        snapshot_id: String,
        element_ref: String,
    },
}

/// One input action.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AndroidAction {
    Tap(Point),
    LongPress { point: Point, duration_ms: u32 },
    Swipe(SwipeArguments),
    Text(String),
    Key(String),
}

/// The decoded `lomi_android_input`, with the one-variant rules checked.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "AndroidInputArguments")]
pub struct AndroidInputInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    pub input_sequence: u64,
    pub action: AndroidAction,
}

/// Longest text one input may type, in characters.
pub const MAX_ANDROID_TEXT_CHARS: usize = 4096;
/// The longest long press or swipe, in milliseconds.
pub const MAX_GESTURE_MS: u32 = 10_000;
const DEFAULT_LONG_PRESS_MS: u32 = 800;

fn point(arguments: PointArguments, long_press: bool) -> Result<(Point, Option<u32>), String> {
    if !long_press && arguments.duration_ms.is_some() {
        return Err("durationMs belongs to longPress, not tap".to_owned());
    }
    let point = match arguments {
        PointArguments {
            x: Some(x),
            y: Some(y),
            snapshot_id: None,
            element_ref: None,
            ..
        } => Point::At { x, y },
        PointArguments {
            x: None,
            y: None,
            snapshot_id: Some(snapshot_id),
            element_ref: Some(element_ref),
            ..
        } => Point::Element {
            snapshot_id,
            element_ref,
        },
        _ => {
            return Err(
                "a press takes exactly one of x and y, or snapshotId and elementRef".to_owned(),
            );
        }
    };
    Ok((point, arguments.duration_ms))
}

impl TryFrom<AndroidInputArguments> for AndroidInputInput {
    type Error = String;

    fn try_from(a: AndroidInputArguments) -> Result<Self, String> {
        let input_sequence = crate::ids::parse_decimal(&a.input_sequence)
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                format!(
                    "inputSequence {:?} is not a decimal number from 1 up",
                    a.input_sequence
                )
            })?;
        let given = [
            a.tap.is_some(),
            a.long_press.is_some(),
            a.swipe.is_some(),
            a.text.is_some(),
            a.key.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err("give exactly one of tap, longPress, swipe, text or key".to_owned());
        }
        let action = if let Some(tap) = a.tap {
            AndroidAction::Tap(point(tap, false)?.0)
        } else if let Some(press) = a.long_press {
            let (point, duration) = point(press, true)?;
            let duration_ms = duration.unwrap_or(DEFAULT_LONG_PRESS_MS);
            if !(100..=MAX_GESTURE_MS).contains(&duration_ms) {
                return Err(format!(
                    "longPress.durationMs must be 100 to {MAX_GESTURE_MS}"
                ));
            }
            AndroidAction::LongPress { point, duration_ms }
        } else if let Some(swipe) = a.swipe {
            if swipe
                .duration_ms
                .is_some_and(|ms| ms == 0 || ms > MAX_GESTURE_MS)
            {
                return Err(format!("swipe.durationMs must be 1 to {MAX_GESTURE_MS}"));
            }
            AndroidAction::Swipe(swipe)
        } else if let Some(text) = a.text {
            let count = text.chars().count();
            if count == 0 || count > MAX_ANDROID_TEXT_CHARS {
                return Err(format!(
                    "text must have 1 to {MAX_ANDROID_TEXT_CHARS} characters"
                ));
            }
            AndroidAction::Text(text)
        } else if let Some(key) = a.key {
            AndroidAction::Key(key)
        } else {
            return Err("give exactly one of tap, longPress, swipe, text or key".to_owned());
        };
        Ok(AndroidInputInput {
            panel_id: a.panel_id,
            lease_id: a.lease_id,
            generation: a.generation,
            input_sequence,
            action,
        })
    }
}

impl schemars::JsonSchema for AndroidInputInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AndroidInputInput".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::exactly_one_of(
            AndroidInputArguments::json_schema(generator),
            &[&["tap"], &["longPress"], &["swipe"], &["text"], &["key"]],
        )
    }
}

/// `lomi_android_input` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidInputAccepted {
    pub input_sequence: String,
    /// True when this acknowledged an earlier identical input; nothing was sent again.
    pub duplicate: bool,
    /// The `input` command the device ran (for a tap by elementRef, with the coordinates).
    pub dispatched: String,
}

/// `lomi_android_ui_snapshot` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidUiSnapshotInput {
    pub panel_id: PanelId,
    // When given, the panel's runtime must still be this generation.
    pub generation: Option<String>,
    // Budget for the node list, 1,024 to 524,288 bytes (default 65,536); nodes past it are
    // left out and `truncated` is set.
    pub max_bytes: Option<u32>,
}

/// A node's rectangle in screen pixels (right and bottom exclusive).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidBounds {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

/// One view of the UI hierarchy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidUiNode {
    /// `n1`, `n2`, … valid with this snapshot's `snapshotId` only.
    pub element_ref: String,
    /// The parent's elementRef; none for top-level nodes.
    pub parent: Option<String>,
    pub class: Option<String>,
    pub text: Option<String>,
    pub resource_id: Option<String>,
    pub content_description: Option<String>,
    pub bounds: Option<AndroidBounds>,
    pub clickable: bool,
}

/// `lomi_android_ui_snapshot` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidUiSnapshotView {
    pub panel_id: PanelId,
    pub generation: String,
    /// Names this snapshot for taps by elementRef.
    pub snapshot_id: String,
    /// The screen in pixels as read at attach (`wm size`), and its density in dpi.
    pub screen_width: u32,
    pub screen_height: u32,
    pub screen_density: Option<u32>,
    /// Parents before children, in document order.
    pub nodes: Vec<AndroidUiNode>,
    pub truncated: bool,
    /// `uiautomator dump` runs it took: more than one when the device's UI was busy.
    pub attempts: u32,
}

/// A rectangle of the screen to keep, in pixels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClipArguments {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// `lomi_android_capture` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidCaptureInput {
    pub panel_id: PanelId,
    // When given, the panel's runtime must still be this generation.
    pub generation: Option<String>,
    // Keep only this rectangle of the screen.
    pub clip: Option<ClipArguments>,
    // Scale the (clipped) image by 0.05 to 1.
    pub scale: Option<f32>,
    // Scale down further until the PNG fits this many bytes (1,024 to 700,000, the default:
    // the PNG is sent in the answer).
    pub max_bytes: Option<u32>,
}

/// `lomi_android_capture` output; the PNG itself follows as an MCP image block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidCaptureView {
    pub panel_id: PanelId,
    pub generation: String,
    pub mime_type: String,
    pub width: u32,
    pub height: u32,
    /// Image pixels per screen pixel: below 1 when `scale` or `maxBytes` shrank the image. A
    /// point (x, y) of the image is (x / scale, y / scale) on the screen, from the clip's
    /// corner when there is a clip.
    pub scale: f64,
    pub bytes: u64,
    /// SHA-256 of the PNG bytes, hex.
    pub sha256: String,
}

/// `lomi_android_shell` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidShellInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // A command line for the device's shell (1 to 4,096 bytes); it is interpreted by that
    // shell.
    pub command: String,
    // Most output bytes kept, 1 to 524,288 (default 65,536); the rest is cut off.
    pub max_bytes: Option<u32>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_android_shell`: the command ran and its output stream ended.
/// adb's legacy shell reports no exit status, so there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidShellResult {
    pub panel_id: PanelId,
    /// The output as text (invalid UTF-8 replaced).
    pub output: String,
    pub bytes: u64,
    pub truncated: bool,
}

/// `lomi_android_push` input: a project file to the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidPushInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // The project the file is in (default: the workspace's only project).
    pub project_id: Option<ProjectId>,
    // The file, relative to the project root (it may not lead outside the project).
    pub path: String,
    // Where on the device: an absolute path such as `/sdcard/Download/data.bin` (without root,
    // the shell user may write under `/data/local/tmp` and `/sdcard`). An existing file is
    // replaced.
    pub device_path: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_android_push` or `lomi_android_pull`: the bytes' SHA-256 was
/// the same on the device (`sha256sum`) and in the project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidTransferred {
    pub panel_id: PanelId,
    pub path: String,
    pub device_path: String,
    pub bytes: u64,
    /// SHA-256 of the bytes, hex, checked on both ends.
    pub sha256: String,
}

/// `lomi_android_pull` input: a device file into the project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidPullInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // The file on the device, an absolute path (at most 256 MiB).
    pub device_path: String,
    // The project to write into (default: the workspace's only project).
    pub project_id: Option<ProjectId>,
    // Where in the project, relative to its root; its folder must exist.
    pub path: String,
    // Replace an existing file (default false: an existing file is refused).
    pub overwrite: Option<bool>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_android_install` input: an APK from the project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidInstallInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // The project the APK is in (default: the workspace's only project).
    pub project_id: Option<ProjectId>,
    // The APK, relative to the project root.
    pub path: String,
    // Replace an installed package of the same name (`pm install -r`; default true).
    pub replace: Option<bool>,
    // Allow a lower version code than the installed one (`-d`; default false).
    pub allow_downgrade: Option<bool>,
    // Grant every runtime permission the manifest asks for (`-g`; default false).
    pub grant_permissions: Option<bool>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_android_install`: the package manager said `Success`, and the
/// version is what it reports now for the APK's package.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidInstalled {
    pub panel_id: PanelId,
    /// The package name from the APK's manifest.
    pub package: String,
    /// `versionCode` and `versionName` as the device reports them after the install.
    pub version_code: Option<u64>,
    pub version_name: Option<String>,
    pub bytes: u64,
    /// SHA-256 of the APK, hex.
    pub sha256: String,
}

/// `lomi_android_uninstall` and `lomi_android_stop` input: one package.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidPackageInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // A package name such as `org.example.app`.
    pub package: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_android_uninstall` (the package manager said `Success`) or
/// `lomi_android_stop` (`am force-stop` ran; it says nothing, and stopping a package that is
/// not running is no error).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidPackageDone {
    pub panel_id: PanelId,
    pub package: String,
}

/// `lomi_android_apps` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidAppsInput {
    pub panel_id: PanelId,
    // When given, the panel's runtime must still be this generation.
    pub generation: Option<String>,
    // Also list the system's packages (default false: installed apps only, `pm list packages -3`).
    pub include_system: Option<bool>,
}

/// One installed package.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidApp {
    pub package: String,
    pub version_code: Option<u64>,
}

/// `lomi_android_apps` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidAppsView {
    pub panel_id: PanelId,
    pub generation: String,
    /// By package name.
    pub apps: Vec<AndroidApp>,
}

/// `lomi_android_open_url` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidOpenUrlInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // A URL or deep link (`https://…`, `myapp://…`), 1 to 4,096 characters.
    pub url: String,
    // Open it in this package only (default: whichever app the device picks).
    pub package: Option<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_android_logcat` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidLogcatInput {
    pub panel_id: PanelId,
    // When given, the panel's runtime must still be this generation.
    pub generation: Option<String>,
    // `nextCursor` of an earlier read with the same filter: only later lines. Without it the
    // read starts at the oldest line the device keeps.
    pub since_cursor: Option<String>,
    // Budget for the lines, 1,024 to 524,288 bytes (default 65,536); `more` says when lines
    // were left for the next read.
    pub max_bytes: Option<u32>,
    // Only lines with this tag.
    pub tag: Option<String>,
    /// This level or above.
    #[schemars(extend("enum" = ["V", "D", "I", "W", "E", "F"]))]
    pub level: Option<String>,
    // Only lines from this package's running process (`pidof`); refused when it is not running.
    pub package: Option<String>,
    // Wait until a line containing this text appears (after sinceCursor), up to timeoutMs.
    pub wait_for: Option<String>,
    // How long to wait for waitFor, 1 to 30,000 ms (default 10,000).
    pub timeout_ms: Option<u32>,
}

/// One log line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidLogLine {
    /// Seconds since the epoch, as the device's clock says (`SECONDS.MICROS`).
    pub time: String,
    pub pid: u32,
    pub tid: u32,
    /// V, D, I, W, E or F.
    pub level: String,
    pub tag: String,
    pub message: String,
}

/// `lomi_android_logcat` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidLogcatView {
    pub panel_id: PanelId,
    pub generation: String,
    /// Oldest first.
    pub lines: Vec<AndroidLogLine>,
    /// Pass as sinceCursor to read on after these lines (with the same filter).
    pub next_cursor: String,
    /// More lines were there than maxBytes allowed; read on with nextCursor.
    pub more: bool,
    /// With waitFor: whether a line containing it was found (it is the last line then).
    pub matched: Option<bool>,
}

/// `lomi_android_orientation` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidOrientationInput {
    pub panel_id: PanelId,
    // When given, the panel's runtime must still be this generation.
    pub generation: Option<String>,
}

/// The device's rotation settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidOrientationView {
    pub panel_id: PanelId,
    /// Quarter turns from the natural orientation (`settings system user_rotation`): 0
    /// portrait, 1 landscape, 2 upside-down portrait, 3 the other landscape.
    pub rotation: u32,
    /// portrait, landscape, reversePortrait or reverseLandscape.
    pub orientation: String,
    /// Whether auto-rotate is on (`accelerometer_rotation`); while it is, the sensor decides
    /// and `rotation` may not be what the screen shows.
    pub auto_rotate: bool,
}

/// `lomi_android_rotate` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AndroidRotateInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    /// 0 portrait, 1 landscape, 2 upside down, 3 reverse landscape.
    pub rotation: u32,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_android_devices`
pub struct AndroidDevicesTool;

impl ToolDef for AndroidDevicesTool {
    const TOOL: Tool = Tool::AndroidDevices;
    const NAME: &'static str = "lomi_android_devices";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "List phones";
    const TITLE: &'static str = "List Android devices";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "The adb server's devices and the workspace's panel each is attached to.";
    type Input = AndroidDevicesInput;
    type Output = AndroidDeviceList;
}

/// `lomi_android_attach`
pub struct AndroidAttachTool;

impl ToolDef for AndroidAttachTool {
    const TOOL: Tool = Tool::AndroidAttach;
    const NAME: &'static str = "lomi_android_attach";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Use a phone";
    const TITLE: &'static str = "Attach an Android device";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Attaches a device (a serial, or HOST:PORT for wireless debugging) as a \
        panel; the first time, the person decides.";
    type Input = AndroidAttachInput;
    type Output = AndroidAttached;

    fn preview(input: &Self::Input) -> Preview {
        Preview::UseDevice {
            serial: input.serial.clone(),
        }
    }
}

/// `lomi_android_detach`
pub struct AndroidDetachTool;

impl ToolDef for AndroidDetachTool {
    const TOOL: Tool = Tool::AndroidDetach;
    const NAME: &'static str = "lomi_android_detach";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Let go of a phone";
    const TITLE: &'static str = "Detach an Android device";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Removes a device's panel; the device is untouched.";
    type Input = crate::tools::session::PanelCloseInput;
    type Output = AndroidDetached;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(_input: &Self::Input) -> Preview {
        Preview::ClosePanel
    }
}

/// `lomi_android_launch`
pub struct AndroidLaunchTool;

impl ToolDef for AndroidLaunchTool {
    const TOOL: Tool = Tool::AndroidLaunch;
    const NAME: &'static str = "lomi_android_launch";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Launch apps on a phone";
    const TITLE: &'static str = "Launch an Android activity";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Starts an activity (component) or an implicit intent; confirms delivery only.";
    type Input = AndroidLaunchInput;
    type Output = AndroidLaunched;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_input`
pub struct AndroidInputTool;

impl ToolDef for AndroidInputTool {
    const TOOL: Tool = Tool::AndroidInput;
    const NAME: &'static str = "lomi_android_input";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Tap and type on a phone";
    const TITLE: &'static str = "Send input to an Android device";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "A tap, long press, swipe, text or key under a lease (one of them); a point is \
        x+y or snapshotId+elementRef.";
    type Input = AndroidInputInput;
    type Output = AndroidInputAccepted;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_ui_snapshot`
pub struct AndroidUiSnapshotTool;

impl ToolDef for AndroidUiSnapshotTool {
    const TOOL: Tool = Tool::AndroidUiSnapshot;
    const NAME: &'static str = "lomi_android_ui_snapshot";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Read a phone's screen layout";
    const TITLE: &'static str = "Android UI snapshot";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "The device's UI as a node list with elementRefs under a snapshotId.";
    type Input = AndroidUiSnapshotInput;
    type Output = AndroidUiSnapshotView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_capture`
pub struct AndroidCaptureTool;

impl ToolDef for AndroidCaptureTool {
    const TOOL: Tool = Tool::AndroidCapture;
    const NAME: &'static str = "lomi_android_capture";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Capture a phone's screen";
    const TITLE: &'static str = "Capture an Android screen";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "A PNG screenshot, optionally clipped, scaled or fitted to maxBytes.";
    type Input = AndroidCaptureInput;
    type Output = AndroidCaptureView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_shell`
pub struct AndroidShellTool;

impl ToolDef for AndroidShellTool {
    const TOOL: Tool = Tool::AndroidShell;
    const NAME: &'static str = "lomi_android_shell";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Run commands on a phone";
    const TITLE: &'static str = "Run an Android shell command";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        idempotent_hint: false,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Runs a command line in the device's shell; output cut to maxBytes, no exit \
        status.";
    // A shell command on a phone can do anything the device's shell user can.
    const ASKS_BY_DEFAULT: bool = true;
    type Input = AndroidShellInput;
    type Output = AndroidShellResult;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(input: &Self::Input) -> Preview {
        Preview::Shell {
            command: input.command.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Command(input.command.clone())
    }
}

/// `lomi_android_push`
pub struct AndroidPushTool;

impl ToolDef for AndroidPushTool {
    const TOOL: Tool = Tool::AndroidPush;
    const NAME: &'static str = "lomi_android_push";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Copy files to a phone";
    const TITLE: &'static str = "Copy a project file to an Android device";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Copies a project file to devicePath (absolute; replaced if present), checked \
        by SHA-256.";
    type Input = AndroidPushInput;
    type Output = AndroidTransferred;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_pull`
pub struct AndroidPullTool;

impl ToolDef for AndroidPullTool {
    const TOOL: Tool = Tool::AndroidPull;
    const NAME: &'static str = "lomi_android_pull";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Copy files from a phone";
    const TITLE: &'static str = "Copy an Android device file into the project";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Copies devicePath (at most 256 MiB) into the project at path, checked by \
        SHA-256.";
    type Input = AndroidPullInput;
    type Output = AndroidTransferred;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_install`
pub struct AndroidInstallTool;

impl ToolDef for AndroidInstallTool {
    const TOOL: Tool = Tool::AndroidInstall;
    const NAME: &'static str = "lomi_android_install";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Install apps on a phone";
    const TITLE: &'static str = "Install an APK on an Android device";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Installs an APK of the project with pm install; succeeds only on pm's \
        Success.";
    type Input = AndroidInstallInput;
    type Output = AndroidInstalled;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

/// `lomi_android_uninstall`
pub struct AndroidUninstallTool;

impl ToolDef for AndroidUninstallTool {
    const TOOL: Tool = Tool::AndroidUninstall;
    const NAME: &'static str = "lomi_android_uninstall";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Uninstall apps from a phone";
    const TITLE: &'static str = "Uninstall an Android app";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Uninstalls a package with pm uninstall.";
    type Input = AndroidPackageInput;
    type Output = AndroidPackageDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Package(input.package.clone())
    }
}

/// `lomi_android_apps`
pub struct AndroidAppsTool;

impl ToolDef for AndroidAppsTool {
    const TOOL: Tool = Tool::AndroidApps;
    const NAME: &'static str = "lomi_android_apps";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "List a phone's apps";
    const TITLE: &'static str = "List installed Android apps";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "The installed packages and their version codes.";
    type Input = AndroidAppsInput;
    type Output = AndroidAppsView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_stop`
pub struct AndroidStopTool;

impl ToolDef for AndroidStopTool {
    const TOOL: Tool = Tool::AndroidStop;
    const NAME: &'static str = "lomi_android_stop";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Stop apps on a phone";
    const TITLE: &'static str = "Force-stop an Android app";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Force-stops a package's processes.";
    type Input = AndroidPackageInput;
    type Output = AndroidPackageDone;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Package(input.package.clone())
    }
}

/// `lomi_android_open_url`
pub struct AndroidOpenUrlTool;

impl ToolDef for AndroidOpenUrlTool {
    const TOOL: Tool = Tool::AndroidOpenUrl;
    const NAME: &'static str = "lomi_android_open_url";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Open links on a phone";
    const TITLE: &'static str = "Open a URL on an Android device";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Opens a URL or deep link with a VIEW intent; confirms delivery only.";
    type Input = AndroidOpenUrlInput;
    type Output = AndroidLaunched;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(input: &Self::Input) -> Preview {
        Preview::Navigate {
            url: input.url.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Url(input.url.clone())
    }
}

/// `lomi_android_logcat`
pub struct AndroidLogcatTool;

impl ToolDef for AndroidLogcatTool {
    const TOOL: Tool = Tool::AndroidLogcat;
    const NAME: &'static str = "lomi_android_logcat";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Read a phone's log";
    const TITLE: &'static str = "Read an Android device's log";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Log lines after sinceCursor, filtered, with nextCursor; waitFor waits for a \
        line containing it.";
    type Input = AndroidLogcatInput;
    type Output = AndroidLogcatView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_orientation`
pub struct AndroidOrientationTool;

impl ToolDef for AndroidOrientationTool {
    const TOOL: Tool = Tool::AndroidOrientation;
    const NAME: &'static str = "lomi_android_orientation";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Read a phone's orientation";
    const TITLE: &'static str = "Read an Android device's rotation";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "The screen's rotation (0 to 3 quarter turns) and whether auto-rotate is on.";
    type Input = AndroidOrientationInput;
    type Output = AndroidOrientationView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_rotate`
pub struct AndroidRotateTool;

impl ToolDef for AndroidRotateTool {
    const TOOL: Tool = Tool::AndroidRotate;
    const NAME: &'static str = "lomi_android_rotate";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Turn a phone's screen";
    const TITLE: &'static str = "Rotate an Android device's screen";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Sets the rotation with auto-rotate off; attach again to have input coordinates \
        checked anew.";
    type Input = AndroidRotateInput;
    type Output = AndroidOrientationView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_android_capture_set`
pub struct AndroidCaptureSetTool;

impl ToolDef for AndroidCaptureSetTool {
    const TOOL: Tool = Tool::AndroidCaptureSet;
    const NAME: &'static str = "lomi_android_capture_set";
    const FAMILY: Option<Family> = Some(Family::Android);
    const LABEL: &'static str = "Save sets of phone captures into the project";
    const TITLE: &'static str = "Capture a set of Android screens";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Launches each screen and saves its capture into folder, as \
        lomi_browser_capture_set does.";
    type Input = crate::tools::capture::AndroidCaptureSetInput;
    type Output = crate::tools::capture::CaptureSetResult;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __android_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            AndroidDevices = $crate::tools::android::AndroidDevicesTool => android as plain,
            AndroidAttach = $crate::tools::android::AndroidAttachTool => android as plain,
            AndroidDetach = $crate::tools::android::AndroidDetachTool => android as plain,
            AndroidLaunch = $crate::tools::android::AndroidLaunchTool => android as plain,
            AndroidInput = $crate::tools::android::AndroidInputTool => android as plain,
            AndroidUiSnapshot = $crate::tools::android::AndroidUiSnapshotTool => android as plain,
            AndroidCapture = $crate::tools::android::AndroidCaptureTool => android as png,
            AndroidShell = $crate::tools::android::AndroidShellTool => android as plain,
            AndroidPush = $crate::tools::android::AndroidPushTool => android as plain,
            AndroidPull = $crate::tools::android::AndroidPullTool => android as plain,
            AndroidInstall = $crate::tools::android::AndroidInstallTool => android as plain,
            AndroidUninstall = $crate::tools::android::AndroidUninstallTool => android as plain,
            AndroidApps = $crate::tools::android::AndroidAppsTool => android as plain,
            AndroidStop = $crate::tools::android::AndroidStopTool => android as plain,
            AndroidOpenUrl = $crate::tools::android::AndroidOpenUrlTool => android as plain,
            AndroidLogcat = $crate::tools::android::AndroidLogcatTool => android as plain,
            AndroidOrientation = $crate::tools::android::AndroidOrientationTool => android as plain,
            AndroidRotate = $crate::tools::android::AndroidRotateTool => android as plain,
            AndroidCaptureSet = $crate::tools::android::AndroidCaptureSetTool => android as plain,
        ]);
    };
}
