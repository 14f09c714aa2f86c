//! The Android tools that move files, manage apps, read the log and rotate the screen: push,
//! pull and install (operations that take the cancel token while bytes move), uninstall, stop,
//! open_url and rotate (operations), and apps, logcat and orientation (reads).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lomi_broker::{EffectContext, EffectOutcome};
use lomi_protocol::definition::ToolCall;
use lomi_protocol::tools::android::{
    AndroidApp, AndroidAppsInput, AndroidAppsView, AndroidInstallInput, AndroidInstalled,
    AndroidLaunched, AndroidLogLine, AndroidLogcatInput, AndroidLogcatView, AndroidOpenUrlInput,
    AndroidOrientationInput, AndroidOrientationView, AndroidPackageDone, AndroidPackageInput,
    AndroidPullInput, AndroidPushInput, AndroidRotateInput, AndroidTransferred,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::{EffectState, ErrorCode, PairingId, PanelId, ToolError};

use super::{
    AndroidPanels, Guard, LeaseGuarded, blocking, device_error, failed_outcome, random_hex,
};
use crate::AndroidError;
use crate::apk::read_manifest;
use crate::packages::{MAX_PULL_BYTES, check_package};
use crate::sync::Cancel;
use lomi_files::confine::{PendingFile, check_writable, open_confined};

/// The largest APK Lomi reads into memory to install.
const MAX_APK_BYTES: u64 = 1 << 30;
const DEFAULT_LOG_BYTES: u32 = 64 * 1024;
const LOG_BYTES: std::ops::RangeInclusive<u32> = 1024..=(1 << 19);
const DEFAULT_WAIT_MS: u32 = 10_000;
const MAX_WAIT_MS: u32 = 30_000;
const LOG_POLL: Duration = Duration::from_millis(200);
const ORIENTATIONS: [&str; 4] = [
    "portrait",
    "landscape",
    "reversePortrait",
    "reverseLandscape",
];

macro_rules! lease_guarded {
    ($($input:ty),*) => {$(
        impl LeaseGuarded for $input {
            fn guard(&self) -> Guard<'_> {
                Guard {
                    panel: &self.panel_id,
                    lease: &self.lease_id,
                    generation: &self.generation,
                    retry_epoch: &self.retry_epoch,
                    request_key: &self.request_key,
                }
            }
        }
    )*};
}

lease_guarded!(
    AndroidPushInput,
    AndroidPullInput,
    AndroidInstallInput,
    AndroidPackageInput,
    AndroidOpenUrlInput,
    AndroidRotateInput,
    lomi_protocol::tools::capture::AndroidCaptureSetInput
);

/// Runs blocking device work that checks `cancel` as it goes; the token sets the flag, and
/// the work is still awaited so its effect is known.
async fn cancellable<T: Send + 'static>(
    context: &EffectContext,
    work: impl FnOnce(&Cancel) -> Result<T, AndroidError> + Send + 'static,
) -> Result<T, AndroidError> {
    let cancel = Arc::new(Cancel::default());
    let job = blocking({
        let cancel = Arc::clone(&cancel);
        move || work(&cancel)
    });
    tokio::pin!(job);
    tokio::select! {
        done = &mut job => done,
        () = context.cancel.cancelled() => {
            cancel.cancel();
            job.await
        }
    }
}

fn invalid(error: String) -> ToolError {
    ToolError::invalid(error)
}

/// How an install ended when it did not succeed.
enum InstallFailure {
    NotApk(String),
    /// While the APK was copied; whether its partial copy was removed.
    Push(AndroidError, bool),
    Pm(AndroidError),
}

/// Where a log read starts: after `skip` lines at exactly `seconds.micros`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LogCursor {
    seconds: u64,
    micros: u32,
    skip: usize,
}

impl LogCursor {
    fn parse(text: &str) -> Option<LogCursor> {
        let (time, skip) = text.split_once('/')?;
        let (seconds, micros) = time.split_once('.')?;
        if micros.len() != 6 {
            return None;
        }
        Some(LogCursor {
            seconds: seconds.parse().ok()?,
            micros: micros.parse().ok()?,
            skip: skip.parse().ok()?,
        })
    }

    fn time(&self) -> String {
        format!("{}.{:06}", self.seconds, self.micros)
    }

    fn text(&self) -> String {
        format!("{}/{}", self.time(), self.skip)
    }
}

/// One `logcat -v threadtime -v epoch -v usec` line: `SECONDS.MICROS PID TID L TAG: MESSAGE`.
fn parse_log_line(line: &str) -> Option<((u64, u32), AndroidLogLine)> {
    let mut rest = line.trim_start();
    let mut word = || -> Option<&str> {
        let (word, after) = rest.split_once(char::is_whitespace)?;
        rest = after.trim_start();
        Some(word)
    };
    let time = word()?;
    let pid = word()?.parse().ok()?;
    let tid = word()?.parse().ok()?;
    let level = word()?;
    let (seconds, micros) = time.split_once('.')?;
    let key = (seconds.parse().ok()?, micros.parse().ok()?);
    let (tag, message) = rest.split_once(": ").or_else(|| rest.split_once(':'))?;
    Some((
        key,
        AndroidLogLine {
            time: time.to_owned(),
            pid,
            tid,
            level: level.to_owned(),
            tag: tag.trim_end().to_owned(),
            message: message.to_owned(),
        },
    ))
}

/// A page of log lines from `raw` after `cursor`, within `max_bytes`, stopping after the first
/// line containing `wait_for`: the lines, the next cursor, whether lines were left, whether it
/// matched.
fn log_page(
    raw: &[u8],
    cut: bool,
    cursor: Option<LogCursor>,
    max_bytes: usize,
    wait_for: Option<&str>,
) -> (Vec<AndroidLogLine>, LogCursor, bool, bool) {
    let text = String::from_utf8_lossy(raw);
    let mut lines: Vec<&str> = text.lines().collect();
    if cut || !text.ends_with('\n') {
        // The last line may be half there.
        lines.pop();
    }
    let mut next = cursor.unwrap_or(LogCursor {
        seconds: 0,
        micros: 0,
        skip: 0,
    });
    let mut skip = cursor.map_or(0, |cursor| cursor.skip);
    let (mut page, mut used, mut more, mut matched) = (Vec::new(), 0, cut, false);
    for line in lines {
        let Some(((seconds, micros), parsed)) = parse_log_line(line) else {
            continue;
        };
        if cursor.is_some_and(|c| (c.seconds, c.micros) == (seconds, micros)) && skip > 0 {
            skip -= 1;
            continue;
        }
        // The line as it is sent (JSON), and the comma between lines.
        let size = serde_json::to_string(&parsed).map_or(usize::MAX / 2, |json| json.len() + 1);
        if used + size > max_bytes {
            more = true;
            break;
        }
        used += size;
        next = if (next.seconds, next.micros) == (seconds, micros) {
            LogCursor {
                skip: next.skip + 1,
                ..next
            }
        } else {
            LogCursor {
                seconds,
                micros,
                skip: 1,
            }
        };
        let hit = wait_for.is_some_and(|pattern| line.contains(pattern));
        page.push(parsed);
        if hit {
            matched = true;
            more = false;
            break;
        }
    }
    (page, next, more, matched)
}

impl AndroidPanels {
    pub(super) fn root(
        &self,
        caller: &PairingId,
        runtime: &super::Runtime,
        project: Option<&lomi_protocol::ProjectId>,
    ) -> Result<PathBuf, ToolError> {
        let (_, root) = self
            .broker
            .project_root(caller, &runtime.workspace_id, project)?;
        Ok(root)
    }

    fn failed_device(
        &self,
        panel: &PanelId,
        generation: &str,
        error: &AndroidError,
    ) -> EffectOutcome {
        self.note_failure(panel, generation, error);
        failed_outcome(error)
    }

    /// `lomi_android_push`.
    pub async fn push(
        &self,
        caller: &PairingId,
        input: AndroidPushInput,
    ) -> Result<OperationView, ToolError> {
        crate::packages::check_device_path(&input.device_path).map_err(|e| device_error(&e))?;
        let panels = self.clone();
        let (panel_id, generation) = (input.panel_id.clone(), input.generation.clone());
        let (path, device_path) = (input.path.clone(), input.device_path.clone());
        let project = input.project_id.clone();
        self.on_device_prepared(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidPushTool>(&input)?,
            &input,
            |runtime| {
                let root = self.root(caller, runtime, project.as_ref())?;
                open_confined(&root, &input.path).map_err(invalid)?;
                Ok(root)
            },
            move |device, root, context| async move {
                let (source, target) = (path.clone(), device_path.clone());
                let pushed = cancellable(&context, move |cancel| {
                    let (file, _) =
                        open_confined(&root, &source).map_err(AndroidError::InvalidInput)?;
                    device.push(std::io::BufReader::new(file), &target, cancel)
                })
                .await;
                match pushed {
                    Ok((bytes, sha256)) => EffectOutcome::succeeded(&AndroidTransferred {
                        panel_id,
                        path,
                        device_path,
                        bytes,
                        sha256,
                    }),
                    // Part of the file may be on the device.
                    Err(AndroidError::Cancelled) => EffectOutcome::Cancelled {
                        effect: EffectState::Partial,
                    },
                    Err(error) => panels.failed_device(&panel_id, &generation, &error),
                }
            },
        )
        .await
    }

    /// `lomi_android_pull`.
    pub async fn pull(
        &self,
        caller: &PairingId,
        input: AndroidPullInput,
    ) -> Result<OperationView, ToolError> {
        crate::packages::check_device_path(&input.device_path).map_err(|e| device_error(&e))?;
        let panels = self.clone();
        let (panel_id, generation) = (input.panel_id.clone(), input.generation.clone());
        let (path, device_path) = (input.path.clone(), input.device_path.clone());
        let overwrite = input.overwrite.unwrap_or(false);
        let project = input.project_id.clone();
        self.on_device_prepared(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidPullTool>(&input)?,
            &input,
            |runtime| {
                let root = self.root(caller, runtime, project.as_ref())?;
                check_writable(&root, &input.path, overwrite).map_err(invalid)?;
                Ok(root)
            },
            move |device, root, context| async move {
                let (source, target) = (device_path.clone(), path.clone());
                // The bytes go into a temp file beside the target as they arrive; it becomes
                // the target (fsync, rename) only once both ends' SHA-256 agree.
                let pulled = cancellable(&context, move |cancel| {
                    let mut file = PendingFile::create(&root, &target, overwrite)
                        .map_err(AndroidError::InvalidInput)?;
                    let pulled = device.pull(&source, MAX_PULL_BYTES, &mut file, cancel)?;
                    file.commit().map_err(AndroidError::InvalidInput)?;
                    Ok(pulled)
                })
                .await;
                let (bytes, sha256) = match pulled {
                    Ok(pulled) => pulled,
                    // Nothing was written into the project.
                    Err(AndroidError::Cancelled) => {
                        return EffectOutcome::Cancelled {
                            effect: EffectState::None,
                        };
                    }
                    Err(error) => {
                        panels.note_failure(&panel_id, &generation, &error);
                        return EffectOutcome::Failed {
                            effect: EffectState::None,
                            error: ToolError::new(error.code(), error.to_string()),
                        };
                    }
                };
                EffectOutcome::succeeded(&AndroidTransferred {
                    panel_id,
                    path,
                    device_path,
                    bytes,
                    sha256,
                })
            },
        )
        .await
    }

    /// `lomi_android_install`.
    pub async fn install(
        &self,
        caller: &PairingId,
        input: AndroidInstallInput,
    ) -> Result<OperationView, ToolError> {
        let mut options = Vec::new();
        if input.replace.unwrap_or(true) {
            options.push("-r");
        }
        if input.allow_downgrade.unwrap_or(false) {
            options.push("-d");
        }
        if input.grant_permissions.unwrap_or(false) {
            options.push("-g");
        }
        let panels = self.clone();
        let (panel_id, generation, path) = (
            input.panel_id.clone(),
            input.generation.clone(),
            input.path.clone(),
        );
        let project = input.project_id.clone();
        self.on_device_prepared(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidInstallTool>(&input)?,
            &input,
            |runtime| {
                let root = self.root(caller, runtime, project.as_ref())?;
                let (_, size) = open_confined(&root, &input.path).map_err(invalid)?;
                if size > MAX_APK_BYTES {
                    return Err(invalid(format!("{} has {size} bytes; Lomi installs APKs up to {MAX_APK_BYTES}", input.path)));
                }
                Ok(root)
            },
            move |device, root, context| async move {
                let temp = format!("/data/local/tmp/lomi-install-{}.apk", random_hex(&context.broker));
                let temp_path = temp.clone();
                let done = cancellable(&context, move |cancel| {
                    Ok(install_apk(&device, &root, &path, &temp, &options, cancel))
                })
                .await;
                let done = match done {
                    Err(error) => Err(InstallFailure::Pm(error)),
                    Ok(done) => done,
                };
                match done {
                    Ok((package, version_code, version_name, bytes, sha256)) => {
                        EffectOutcome::succeeded(&AndroidInstalled {
                            panel_id,
                            package,
                            version_code,
                            version_name,
                            bytes,
                            sha256,
                        })
                    }
                    Err(InstallFailure::NotApk(why)) => EffectOutcome::Failed {
                        effect: EffectState::None,
                        error: ToolError::invalid(why),
                    },
                    Err(InstallFailure::Push(AndroidError::Cancelled, removed)) => EffectOutcome::Cancelled {
                        effect: if removed { EffectState::None } else { EffectState::Partial },
                    },
                    Err(InstallFailure::Push(error, _)) if error.effect_unknown() => {
                        panels.note_failure(&panel_id, &generation, &error);
                        EffectOutcome::Unknown {
                            effect: EffectState::Unknown,
                            message: format!(
                                "{error}; the APK was being copied to {temp_path}: pm install never ran, so this operation installed nothing, but part of the copy may remain on the device"
                            ),
                        }
                    }
                    Err(InstallFailure::Push(error, _) | InstallFailure::Pm(error)) => {
                        panels.failed_device(&panel_id, &generation, &error)
                    }
                }
            },
        )
        .await
    }

    /// `lomi_android_uninstall`.
    pub async fn uninstall(
        &self,
        caller: &PairingId,
        input: AndroidPackageInput,
    ) -> Result<OperationView, ToolError> {
        self.package_operation(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidUninstallTool>(&input)?,
            input,
            |device, package| device.uninstall(package),
        )
        .await
    }

    /// `lomi_android_stop`.
    pub async fn stop(
        &self,
        caller: &PairingId,
        input: AndroidPackageInput,
    ) -> Result<OperationView, ToolError> {
        self.package_operation(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidStopTool>(&input)?,
            input,
            |device, package| device.force_stop(package),
        )
        .await
    }

    async fn package_operation(
        &self,
        caller: &PairingId,
        call: ToolCall,
        input: AndroidPackageInput,
        run: fn(&crate::Device, &str) -> Result<(), AndroidError>,
    ) -> Result<OperationView, ToolError> {
        check_package(&input.package).map_err(|e| device_error(&e))?;
        let panels = self.clone();
        let (panel_id, generation, package) = (
            input.panel_id.clone(),
            input.generation.clone(),
            input.package.clone(),
        );
        self.on_device(caller, call, &input, move |device, _context| async move {
            let name = package.clone();
            match blocking(move || run(&device, &name)).await {
                Ok(()) => EffectOutcome::succeeded(&AndroidPackageDone { panel_id, package }),
                Err(error) => panels.failed_device(&panel_id, &generation, &error),
            }
        })
        .await
    }

    /// `lomi_android_open_url`.
    pub async fn open_url(
        &self,
        caller: &PairingId,
        input: AndroidOpenUrlInput,
    ) -> Result<OperationView, ToolError> {
        if input.url.is_empty()
            || input.url.chars().count() > 4096
            || input.url.chars().any(char::is_control)
        {
            return Err(ToolError::invalid(
                "url must be 1 to 4,096 characters without control characters",
            ));
        }
        if !input.url.contains(':') {
            return Err(ToolError::invalid(format!(
                "{:?} has no scheme; give a URL such as https://example.com or a deep link such as myapp://path",
                input.url
            )));
        }
        if let Some(package) = &input.package {
            check_package(package).map_err(|e| device_error(&e))?;
        }
        let panels = self.clone();
        let (panel_id, generation) = (input.panel_id.clone(), input.generation.clone());
        let (url, package) = (input.url.clone(), input.package.clone());
        self.on_device(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidOpenUrlTool>(&input)?,
            &input,
            move |device, _context| async move {
                let launched = blocking(move || {
                    device.launch_intent(
                        "android.intent.action.VIEW",
                        Some(&url),
                        package.as_deref(),
                    )
                })
                .await;
                match launched {
                    Ok(am_output) => EffectOutcome::succeeded(&AndroidLaunched {
                        panel_id,
                        generation,
                        delivered: true,
                        am_output,
                    }),
                    Err(error) => panels.failed_device(&panel_id, &generation, &error),
                }
            },
        )
        .await
    }

    /// `lomi_android_rotate`.
    pub async fn rotate(
        &self,
        caller: &PairingId,
        input: AndroidRotateInput,
    ) -> Result<OperationView, ToolError> {
        let rotation = input.rotation;
        if rotation > 3 {
            return Err(ToolError::invalid(
                "rotation must be 0 (portrait), 1 (landscape), 2 (upside-down portrait) or 3 (the other landscape)",
            ));
        }
        let panels = self.clone();
        let (panel_id, generation) = (input.panel_id.clone(), input.generation.clone());
        self.on_device(caller, ToolCall::of::<lomi_protocol::tools::android::AndroidRotateTool>(&input)?, &input, move |device, _context| async move {
            let set = blocking(move || {
                device.set_rotation(rotation)?;
                device.rotation()
            })
            .await;
            match set {
                Ok((read, false)) if read == rotation => {
                    panels.note_rotation(&panel_id, &generation, Some(read));
                    EffectOutcome::succeeded(&orientation_view(panel_id, read, false))
                }
                Ok((read, auto)) => {
                    panels.note_rotation(&panel_id, &generation, (!auto).then_some(read));
                    EffectOutcome::Unknown {
                        effect: EffectState::Unknown,
                        message: format!(
                            "the device took the settings but reads back rotation {read} with auto-rotate {}; look at the device",
                            if auto { "on" } else { "off" }
                        ),
                    }
                }
                Err(error) => panels.failed_device(&panel_id, &generation, &error),
            }
        })
        .await
    }

    /// The runtime of a read, checked against the generation the caller named.
    fn read_target(
        &self,
        caller: &PairingId,
        panel: &PanelId,
        generation: Option<&str>,
    ) -> Result<(crate::Device, String), ToolError> {
        let runtime = self.runtime(caller, panel)?;
        let generation = Self::live_generation(panel, &runtime, generation)?;
        Ok((runtime.device, generation))
    }

    async fn read<T: Send + 'static>(
        &self,
        panel: &PanelId,
        generation: &str,
        work: impl FnOnce() -> Result<T, AndroidError> + Send + 'static,
    ) -> Result<T, ToolError> {
        blocking(work).await.map_err(|error| {
            self.note_failure(panel, generation, &error);
            device_error(&error)
        })
    }

    /// `lomi_android_apps`.
    pub async fn apps(
        &self,
        caller: &PairingId,
        input: AndroidAppsInput,
    ) -> Result<AndroidAppsView, ToolError> {
        let (device, generation) =
            self.read_target(caller, &input.panel_id, input.generation.as_deref())?;
        let include_system = input.include_system.unwrap_or(false);
        let packages = self
            .read(&input.panel_id, &generation, move || {
                device.packages(include_system)
            })
            .await?;
        Ok(AndroidAppsView {
            panel_id: input.panel_id,
            generation,
            apps: packages
                .into_iter()
                .map(|(package, version_code)| AndroidApp {
                    package,
                    version_code,
                })
                .collect(),
        })
    }

    /// `lomi_android_orientation`.
    pub async fn orientation(
        &self,
        caller: &PairingId,
        input: AndroidOrientationInput,
    ) -> Result<AndroidOrientationView, ToolError> {
        let (device, generation) =
            self.read_target(caller, &input.panel_id, input.generation.as_deref())?;
        let (rotation, auto) = self
            .read(&input.panel_id, &generation, move || device.rotation())
            .await?;
        self.note_rotation(&input.panel_id, &generation, (!auto).then_some(rotation));
        Ok(orientation_view(input.panel_id, rotation, auto))
    }

    /// `lomi_android_logcat`.
    pub async fn logcat(
        &self,
        caller: &PairingId,
        input: AndroidLogcatInput,
    ) -> Result<AndroidLogcatView, ToolError> {
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_LOG_BYTES);
        if !LOG_BYTES.contains(&max_bytes) {
            return Err(ToolError::invalid(format!(
                "maxBytes must be {} to {}",
                LOG_BYTES.start(),
                LOG_BYTES.end()
            )));
        }
        let timeout = input.timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        if timeout == 0 || timeout > MAX_WAIT_MS {
            return Err(ToolError::invalid(format!(
                "timeoutMs must be 1 to {MAX_WAIT_MS}"
            )));
        }
        if input.timeout_ms.is_some() && input.wait_for.is_none() {
            return Err(ToolError::invalid("timeoutMs belongs to waitFor"));
        }
        if let Some(pattern) = &input.wait_for
            && (pattern.is_empty() || pattern.len() > 1024 || pattern.contains('\n'))
        {
            return Err(ToolError::invalid(
                "waitFor must be 1 to 1,024 bytes on one line",
            ));
        }
        let level = match input.level.as_deref() {
            None => None,
            Some(level @ ("V" | "D" | "I" | "W" | "E" | "F")) => Some(level.to_owned()),
            Some(other) => {
                return Err(ToolError::invalid(format!(
                    "level {other:?} must be one of V, D, I, W, E, F"
                )));
            }
        };
        if let Some(tag) = &input.tag {
            let valid = !tag.is_empty()
                && tag.len() <= 128
                && !tag
                    .chars()
                    .any(|c| c.is_control() || c.is_whitespace() || c == ':' || c == '*');
            if !valid {
                return Err(ToolError::invalid(
                    "tag must be 1 to 128 characters without spaces, `:` or `*`",
                ));
            }
        }
        let cursor = match &input.since_cursor {
            None => None,
            Some(text) => Some(LogCursor::parse(text).ok_or_else(|| {
                ToolError::invalid(format!(
                    "sinceCursor {text:?} is not a nextCursor from lomi_android_logcat"
                ))
            })?),
        };
        let (device, generation) =
            self.read_target(caller, &input.panel_id, input.generation.as_deref())?;
        let mut options: Vec<String> = Vec::new();
        if let Some(cursor) = cursor {
            options.extend(["-T".to_owned(), cursor.time()]);
        }
        if let Some(package) = &input.package {
            check_package(package).map_err(|e| device_error(&e))?;
            let (named, pid_device) = (package.clone(), device.clone());
            let pid = self
                .read(&input.panel_id, &generation, move || {
                    pid_device.pidof(&named)
                })
                .await?;
            let pid = pid.ok_or_else(|| {
                ToolError::new(
                    ErrorCode::NotFound,
                    format!("{package} has no running process (pidof found none); launch it first, or filter by tag"),
                )
            })?;
            options.push(format!("--pid={pid}"));
        }
        match (&input.tag, &level) {
            (Some(tag), level) => options.extend([
                format!("{tag}:{}", level.as_deref().unwrap_or("V")),
                "*:S".to_owned(),
            ]),
            (None, Some(level)) => options.push(format!("*:{level}")),
            (None, None) => {}
        }
        let deadline = Instant::now() + Duration::from_millis(u64::from(timeout));
        let limit = (max_bytes as usize) * 2 + 64 * 1024;
        loop {
            let (reader, words) = (device.clone(), options.clone());
            let (raw, cut) = self
                .read(&input.panel_id, &generation, move || {
                    reader.logcat(&words, limit)
                })
                .await?;
            let (lines, next, more, matched) = log_page(
                &raw,
                cut,
                cursor,
                max_bytes as usize,
                input.wait_for.as_deref(),
            );
            let waiting =
                input.wait_for.is_some() && !matched && !more && Instant::now() < deadline;
            if !waiting {
                return Ok(AndroidLogcatView {
                    panel_id: input.panel_id,
                    generation,
                    lines,
                    next_cursor: next.text(),
                    more,
                    matched: input.wait_for.as_ref().map(|_| matched),
                });
            }
            tokio::time::sleep(LOG_POLL).await;
        }
    }
}

/// The APK's package and version, once it is pushed, installed and its copy removed.
type Installed = (String, Option<u64>, Option<String>, u64, String);

/// Reads the APK from the project, pushes it to `temp`, runs `pm install`, removes the copy
/// and reads the installed version back.
fn install_apk(
    device: &crate::Device,
    root: &std::path::Path,
    path: &str,
    temp: &str,
    options: &[&str],
    cancel: &Cancel,
) -> Result<Installed, InstallFailure> {
    use std::io::Read;
    let apk = open_confined(root, path)
        .and_then(|(file, _)| {
            let mut apk = Vec::new();
            file.take(MAX_APK_BYTES)
                .read_to_end(&mut apk)
                .map(|_| apk)
                .map_err(|e| e.to_string())
        })
        .map_err(InstallFailure::NotApk)?;
    let manifest = read_manifest(&apk).map_err(|why| {
        InstallFailure::NotApk(format!("{path} is not an APK Lomi can read: {why}"))
    })?;
    let sha256 = match device.push(apk.as_slice(), temp, cancel) {
        Ok((_, sha256)) => sha256,
        Err(error) => {
            let removed = !error.effect_unknown() && device.remove_file(temp).is_ok();
            return Err(InstallFailure::Push(error, removed));
        }
    };
    let installed = device.pm_install(temp, options);
    if let Err(error) = device.remove_file(temp) {
        tracing::warn!("could not remove {temp} after installing: {error}");
    }
    installed.map_err(InstallFailure::Pm)?;
    // pm said Success; the version is what the device reports now.
    let (version_code, version_name) = device
        .package_version(&manifest.package)
        .unwrap_or((None, None));
    Ok((
        manifest.package,
        version_code,
        version_name,
        apk.len() as u64,
        sha256,
    ))
}

fn orientation_view(panel_id: PanelId, rotation: u32, auto_rotate: bool) -> AndroidOrientationView {
    AndroidOrientationView {
        panel_id,
        rotation,
        orientation: ORIENTATIONS
            .get(rotation as usize)
            .copied()
            .unwrap_or("unknown")
            .to_owned(),
        auto_rotate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "--------- beginning of main\n\
        1700000000.000001  1000  1000 I ActivityManager: Start proc 2001:org.demo/u0a100\n\
        1700000000.000001  2001  2001 I LomiFixtureApp: org.demo started .Main\n\
        1700000001.500000  2001  2001 W Tag with: colon: in message\n";

    #[test]
    fn log_pages_follow_the_cursor_budget_and_pattern() {
        let (lines, next, more, matched) = log_page(LOG.as_bytes(), false, None, 1 << 16, None);
        assert_eq!(lines.len(), 3);
        assert_eq!(
            (lines[2].tag.as_str(), lines[2].message.as_str()),
            ("Tag with", "colon: in message")
        );
        assert_eq!(next.text(), "1700000001.500000/1");
        assert!(!more && !matched);

        // A cursor inside a run of lines at one time skips those already read.
        let cursor = LogCursor::parse("1700000000.000001/1");
        let (lines, next, _, _) = log_page(LOG.as_bytes(), false, cursor, 1 << 16, None);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].message, "org.demo started .Main");
        assert_eq!(next.text(), "1700000001.500000/1");

        let (lines, next, more, _) = log_page(LOG.as_bytes(), false, None, 200, None);
        assert_eq!((lines.len(), more), (1, true));
        assert_eq!(next.text(), "1700000000.000001/1");

        let (lines, next, more, matched) =
            log_page(LOG.as_bytes(), false, None, 1 << 16, Some("started .Main"));
        assert_eq!((lines.len(), more, matched), (2, false, true));
        assert_eq!(next.text(), "1700000000.000001/2");

        // A cut read drops its last, possibly partial, line and says there is more.
        let (lines, _, more, _) =
            log_page(&LOG.as_bytes()[..LOG.len() - 5], true, None, 1 << 16, None);
        assert_eq!((lines.len(), more), (2, true));
        assert_eq!(LogCursor::parse("1.5/0"), None);
    }
}
