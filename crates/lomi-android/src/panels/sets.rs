//! `lomi_android_capture_set`: screens launched and captured in order under a lease, written
//! into a project folder by `lomi_files::capture_set` (as the browser's sets are).

use std::time::Duration;

use lomi_broker::{EffectContext, EffectOutcome};
use lomi_files::capture_set::{CaptureFolder, Halt, Shot, Writing, check_set};
use lomi_protocol::definition::ToolCall;
use lomi_protocol::tools::capture::{AndroidCaptureSetInput, ScreenTarget};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::{PairingId, ToolError};

use super::{AndroidPanels, blocking};
use crate::AndroidError;
use crate::device::Device;

const DEFAULT_SETTLE_MS: u32 = 500;
const MAX_SETTLE_MS: u32 = 10_000;

/// How to reach one screen.
enum Reach {
    Shown,
    Component(String),
    Url(String),
}

impl AndroidPanels {
    /// `lomi_android_capture_set`.
    pub async fn capture_set(
        &self,
        caller: &PairingId,
        input: AndroidCaptureSetInput,
    ) -> Result<OperationView, ToolError> {
        check_set(
            &input.folder,
            input.baseline.as_deref(),
            input.threshold,
            input.screens.iter().map(|s| s.name.as_str()),
        )
        .map_err(ToolError::invalid)?;
        let screens = input
            .screens
            .iter()
            .map(plan)
            .collect::<Result<Vec<_>, _>>()?;
        let total = screens.len();
        let panels = self.clone();
        let (folder, baseline, threshold) = (
            input.folder.clone(),
            input.baseline.clone(),
            input.threshold,
        );
        let (panel_id, generation) = (input.panel_id.clone(), input.generation.clone());
        self.on_device_prepared(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidCaptureSetTool>(&input)?,
            &input,
            |runtime| {
                let root = self.root(caller, runtime, None)?;
                CaptureFolder::open(root, &folder, baseline.as_deref(), threshold, total, false)
                    .map_err(ToolError::invalid)
            },
            move |device, folder, context| async move {
                let (outcome, failure) = run_set(device, screens, folder, context).await;
                if let Some(error) = failure {
                    panels.note_failure(&panel_id, &generation, &error);
                }
                outcome
            },
        )
        .await
    }
}

fn plan(screen: &ScreenTarget) -> Result<(String, Reach, Duration), ToolError> {
    let name = &screen.name;
    let settle = screen.settle_ms.unwrap_or(DEFAULT_SETTLE_MS);
    if settle > MAX_SETTLE_MS {
        return Err(ToolError::invalid(format!(
            "{name}: settleMs must be 0 to {MAX_SETTLE_MS}"
        )));
    }
    let reach = match (&screen.component, &screen.url) {
        (None, None) => Reach::Shown,
        (Some(component), None) => Reach::Component(component.clone()),
        (None, Some(url)) => {
            if url.is_empty()
                || url.len() > 4096
                || url.chars().any(char::is_control)
                || !url.contains(':')
            {
                return Err(ToolError::invalid(format!(
                    "{name}: url must be a URL or deep link with a scheme (myapp://path), 1 to 4,096 characters"
                )));
            }
            Reach::Url(url.clone())
        }
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid(format!(
                "{name}: give component or url, not both (neither captures the screen shown)"
            )));
        }
    };
    Ok((
        name.clone(),
        reach,
        Duration::from_millis(u64::from(settle)),
    ))
}

/// Launches and captures each screen; answers the settled outcome and, when the device
/// failed, its error (for the panel's liveness).
async fn run_set(
    device: Device,
    screens: Vec<(String, Reach, Duration)>,
    folder: CaptureFolder,
    context: EffectContext,
) -> (EffectOutcome, Option<AndroidError>) {
    let mut writing = Writing::new(folder, &context);
    let mut halt = None;
    let mut failure = None;
    for (name, reach, settle) in screens {
        if context.cancel.is_cancelled() {
            halt = Some(Halt::Cancelled);
            break;
        }
        let on = device.clone();
        let target = match &reach {
            Reach::Shown => "the screen shown".to_owned(),
            Reach::Component(component) => component.clone(),
            Reach::Url(url) => url.clone(),
        };
        let launched = blocking(move || match reach {
            Reach::Shown => Ok(String::new()),
            Reach::Component(component) => on.launch(&component),
            Reach::Url(url) => on.launch_intent("android.intent.action.VIEW", Some(&url), None),
        })
        .await;
        let captured = match launched {
            Ok(_) => {
                // The intent was delivered; give the screen time to draw (cancel cuts it short).
                tokio::select! {
                    () = tokio::time::sleep(settle) => {}
                    () = context.cancel.cancelled() => {
                        halt = Some(Halt::Cancelled);
                        break;
                    }
                }
                let on = device.clone();
                blocking(move || on.capture_png()).await
            }
            Err(error) => Err(error),
        };
        let png = match captured {
            Ok(png) => png,
            Err(error) => {
                halt = Some(Halt::Failed(ToolError::new(
                    error.code(),
                    format!("{name}: {error}"),
                )));
                failure = Some(error);
                break;
            }
        };
        let shot = Shot {
            name: name.clone(),
            target,
            viewport: None,
            scale: 1.0,
            png,
            captured_at: context.broker.clock_now(),
        };
        // The screen before is written meanwhile; this one while the next is launched.
        if let Err(why) = writing.add(shot).await {
            halt = Some(Halt::Failed(ToolError::invalid(why)));
            break;
        }
        writing.report(&context);
    }
    if let Err(why) = writing.written().await
        && !matches!(halt, Some(Halt::Failed(_)))
    {
        halt = Some(Halt::Failed(ToolError::invalid(why)));
    }
    writing.report(&context);
    (writing.settle(halt).await, failure)
}
