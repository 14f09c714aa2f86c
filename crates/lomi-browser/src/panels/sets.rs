//! `lomi_browser_capture_set`: many captures of the active tab in one operation on the panel,
//! written into a project folder by `lomi_files::capture_set` with a manifest. Progress goes
//! to the operation's result as each capture lands; a cancel stops between captures.

use futures_util::StreamExt;
use lomi_broker::EffectContext;
use lomi_files::capture_set::{CaptureFolder, Halt, Shot, Writing, check_set};
use lomi_protocol::definition::ToolCall;
use lomi_protocol::tools::capture::{BrowserCaptureSetInput, PageTarget};

use super::*;

/// How long one page of a set may take to load.
const SET_NAVIGATE_LIMIT: Duration = Duration::from_secs(30);

/// One target, checked: where to go and how to look at it.
struct Planned {
    name: String,
    url: Option<String>,
    emulation: Option<(Option<Viewport>, f64, bool, Option<String>)>,
    full_page: bool,
    selector: Option<String>,
}

impl BrowserPanels {
    /// `lomi_browser_capture_set`.
    pub async fn capture_set(
        &self,
        caller: &PairingId,
        input: BrowserCaptureSetInput,
    ) -> Result<OperationView, ToolError> {
        check_set(
            &input.folder,
            input.baseline.as_deref(),
            input.threshold,
            input.targets.iter().map(|t| t.name.as_str()),
        )
        .map_err(ToolError::invalid)?;
        for target in &input.targets {
            check_target(target)?;
        }
        let deterministic = input
            .deterministic
            .unwrap_or_else(|| self.broker.browser_settings().deterministic_captures);
        let steady_limit =
            Duration::from_millis(u64::from(self.broker.browser_settings().default_wait_ms));
        let targets = input.targets.clone();
        let (folder, baseline, threshold) = (
            input.folder.clone(),
            input.baseline.clone(),
            input.threshold,
        );
        self.broker
            .operate_on_panel(
                caller,
                input.call(ToolCall::of::<
                    lomi_protocol::tools::browser::BrowserCaptureSetTool,
                >(&input)?),
                &self.runtimes,
                move |runtime: &BrowserRuntime| {
                    let planned = targets
                        .iter()
                        .map(|target| plan(target, &runtime.root))
                        .collect::<Result<Vec<_>, _>>()?;
                    let open = CaptureFolder::open(
                        runtime.root.clone(),
                        &folder,
                        baseline.as_deref(),
                        threshold,
                        planned.len(),
                        deterministic,
                    )
                    .map_err(ToolError::invalid)?;
                    Ok((planned, open))
                },
                move |runtime, (planned, folder), context| async move {
                    let tab = match active_tab(&runtime) {
                        Ok(tab) => tab,
                        Err(refused) => return refused,
                    };
                    run_set(tab, planned, folder, deterministic, steady_limit, context).await
                },
            )
            .await
    }
}

fn check_target(target: &PageTarget) -> Result<(), ToolError> {
    let name = &target.name;
    if let Some(viewport) = target.viewport
        && (!(100..=4096).contains(&viewport.width) || !(100..=4096).contains(&viewport.height))
    {
        return Err(ToolError::invalid(format!(
            "{name}: viewport width and height must be 100 to 4,096"
        )));
    }
    if let Some(scale) = target.device_scale_factor
        && !(0.5..=4.0).contains(&scale)
    {
        return Err(ToolError::invalid(format!(
            "{name}: deviceScaleFactor must be 0.5 to 4"
        )));
    }
    if let Some(scheme) = &target.color_scheme
        && !matches!(scheme.as_str(), "light" | "dark" | "no-preference")
    {
        return Err(ToolError::invalid(format!(
            "{name}: colorScheme must be light, dark or no-preference"
        )));
    }
    if let Some(selector) = &target.selector {
        if target.full_page == Some(true) {
            return Err(ToolError::invalid(format!(
                "{name}: give fullPage or selector, not both"
            )));
        }
        if selector.trim().is_empty() || selector.len() > 1024 {
            return Err(ToolError::invalid(format!(
                "{name}: selector must be 1 to 1,024 bytes"
            )));
        }
    }
    Ok(())
}

fn plan(target: &PageTarget, root: &std::path::Path) -> Result<Planned, ToolError> {
    let url = match &target.url {
        Some(url) => Some(allowed_url(url, root).map_err(|error| {
            ToolError::new(error.code, format!("{}: {}", target.name, error.message))
        })?),
        None => None,
    };
    let emulated = target.viewport.is_some()
        || target.device_scale_factor.is_some()
        || target.mobile.is_some()
        || target.color_scheme.is_some();
    Ok(Planned {
        name: target.name.clone(),
        url,
        emulation: emulated.then(|| {
            (
                target.viewport,
                target.device_scale_factor.unwrap_or(1.0),
                target.mobile.unwrap_or(false),
                target.color_scheme.clone(),
            )
        }),
        full_page: target.full_page.unwrap_or(false),
        selector: target.selector.clone(),
    })
}

async fn run_set(
    tab: Tab,
    planned: Vec<Planned>,
    folder: CaptureFolder,
    deterministic: bool,
    steady_limit: Duration,
    context: EffectContext,
) -> EffectOutcome {
    let browser = tab.browser();
    let usual = browser.emulation();
    let mut writing = Writing::new(folder, &context);
    let lanes = open_lanes(&tab, &planned).await;
    let mut halt = None;
    {
        // The lanes' tabs free now; a target takes whichever frees first.
        let (free, freed) = tokio::sync::mpsc::unbounded_channel();
        for lane in &lanes {
            let _open = free.send(lane);
        }
        let freed = tokio::sync::Mutex::new(freed);
        let (free, freed, usual, context) = (&free, &freed, &usual, &context);
        // Captures are taken in the lanes' tabs at once and handed on in order. A lane that
        // is done takes the next target even while an earlier one is still being taken in
        // another lane (a tall page beside short ones), up to AHEAD targets past the oldest
        // one not handed on yet (`buffered` holds what is taken until its turn).
        let mut taken = futures_util::stream::iter(planned)
            .map(|each| async move {
                let name = each.name.clone();
                let Some(lane) = freed.lock().await.recv().await else {
                    let lost = "the capture set's tabs were lost; capture again".to_owned();
                    return (name, Err(ToolError::internal(lost)));
                };
                let mut applied = lane.applied.lock().await;
                let shot = capture_one(
                    &lane.tab,
                    usual,
                    &mut applied,
                    each,
                    deterministic,
                    steady_limit,
                    context,
                )
                .await;
                drop(applied);
                let _open = free.send(lane);
                (name, shot)
            })
            .buffered(lanes.len() + AHEAD);
        while let Some((name, shot)) = taken.next().await {
            if context.cancel.is_cancelled() {
                halt = Some(Halt::Cancelled);
                break;
            }
            let shot = match shot {
                Ok(Some(shot)) => shot,
                Ok(None) => {
                    halt = Some(Halt::Cancelled);
                    break;
                }
                Err(error) => {
                    halt = Some(Halt::Failed(ToolError::new(
                        error.code,
                        format!("{name}: {}", error.message),
                    )));
                    break;
                }
            };
            // The capture before this one is written meanwhile; this one is written while
            // the next are taken.
            if let Err(why) = writing.add(shot).await {
                halt = Some(Halt::Failed(ToolError::invalid(why)));
                break;
            }
            writing.report(context);
        }
    }
    close_lanes(&tab, lanes).await;
    if let Err(why) = writing.written().await
        && !matches!(halt, Some(Halt::Failed(_)))
    {
        halt = Some(Halt::Failed(ToolError::invalid(why)));
    }
    writing.report(&context);
    writing.settle(halt).await
}

/// How many tabs a set captures in at once: while one page loads, lays out or is encoded in
/// its renderer, another is in its own.
const LANES: usize = 2;

/// How many targets past the oldest one not yet handed on may be taken meanwhile (their PNGs
/// wait in memory for their turn to be written).
const AHEAD: usize = 4;

/// One tab of a set, and what it emulates now (set again only when a target asks for
/// something else).
struct Lane {
    tab: Tab,
    applied: tokio::sync::Mutex<Option<Emulation>>,
}

/// The active tab, and when every target loads a URL, more tabs of the same browser opened
/// for the set, each in a window of its own (the active tab stays active). A tab that does not open leaves fewer lanes.
async fn open_lanes(tab: &Tab, planned: &[Planned]) -> Vec<Lane> {
    let lane = |tab: Tab| Lane {
        tab,
        applied: tokio::sync::Mutex::new(None),
    };
    let mut lanes = vec![lane(tab.clone())];
    // A target without a URL is the page shown, which only the active tab has.
    if planned.iter().any(|each| each.url.is_none()) {
        return lanes;
    }
    let browser = tab.browser();
    while lanes.len() < LANES.min(planned.len()) {
        match browser.open_window().await {
            Ok(opened) => lanes.push(lane(opened)),
            Err(error) => {
                tracing::debug!("a capture set runs in fewer tabs: {error}");
                break;
            }
        }
    }
    lanes
}

/// Closes the tabs a set opened; the active tab goes back to the browser's own emulation.
async fn close_lanes(tab: &Tab, lanes: Vec<Lane>) {
    let browser = tab.browser();
    for lane in lanes.into_iter().skip(1) {
        if let Err(error) = browser.close_tab(&lane.tab.id).await {
            tracing::debug!("closing a capture set's tab: {error}");
        }
    }
    if let Err(error) = tab.emulate(&browser.emulation()).await {
        tracing::debug!("restoring the emulation after a capture set: {error}");
    }
}

/// Takes one capture: emulation, navigation, the steady page, the PNG. `None`: cancelled
/// during the navigation.
async fn capture_one(
    tab: &Tab,
    usual: &Emulation,
    applied: &mut Option<Emulation>,
    each: Planned,
    deterministic: bool,
    steady_limit: Duration,
    context: &EffectContext,
) -> Result<Option<Shot>, ToolError> {
    let mut emulation = usual.clone();
    if let Some((viewport, scale, mobile, scheme)) = each.emulation {
        if let Some(viewport) = viewport {
            (emulation.width, emulation.height) = (viewport.width, viewport.height);
        }
        (emulation.scale, emulation.mobile, emulation.color_scheme) = (scale, mobile, scheme);
    } else if deterministic {
        // A fixed device scale factor: the same pixels on any display.
        emulation.scale = 1.0;
    }
    if applied.as_ref() != Some(&emulation) {
        tab.emulate(&emulation).await.map_err(tool_error)?;
        *applied = Some(emulation.clone());
    }
    if let Some(url) = &each.url {
        let navigated = tab
            .navigate_unless_cancelled(
                &Destination::Url(url.clone()),
                "load",
                SET_NAVIGATE_LIMIT,
                &context.cancel,
            )
            .await;
        match navigated {
            None => return Ok(None),
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(navigation_error(error)),
        }
    }
    if deterministic {
        let missing = tab.steady(steady_limit).await.map_err(tool_error)?;
        if !missing.is_empty() {
            tracing::debug!("{}: captured unsteady: {}", each.name, missing.join("; "));
        }
    }
    let area = match &each.selector {
        Some(selector) => match tab.selector_rect(selector).await.map_err(tool_error)? {
            Some(rect) => CaptureArea::Clip(rect),
            None => {
                return Err(ToolError::not_found(format!(
                    "no element with a box matches {selector:?} on {}",
                    tab.current_url()
                )));
            }
        },
        None if each.full_page => CaptureArea::FullPage,
        None => CaptureArea::Viewport,
    };
    let taken = tab.capture(&area, 1.0, false, CaptureLimit::FitSide).await;
    if deterministic && let Err(error) = tab.release().await {
        tracing::debug!("releasing the page after a capture: {error}");
    }
    let Taken { png, scale, .. } = taken.map_err(tool_error)?;
    Ok(Some(Shot {
        name: each.name,
        target: tab.current_url(),
        viewport: Some(Viewport {
            width: emulation.width,
            height: emulation.height,
        }),
        scale: scale * emulation.scale,
        png,
        captured_at: context.broker.clock_now(),
    }))
}

/// A page of the set that did not load: what the page (or the network) did, said so.
fn navigation_error(error: ActionError) -> ToolError {
    match error {
        ActionError::Refused(error) | ActionError::Dispatched(error) => tool_error(error),
        ActionError::Unconfirmed(why) => ToolError::new(
            ErrorCode::RuntimeUnavailable,
            format!("{why}; the page did not load: check it is served, then capture again"),
        ),
        ActionError::Failed(why) => ToolError::invalid(why),
    }
}
