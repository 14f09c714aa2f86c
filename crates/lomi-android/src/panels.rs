//! Android panels: the Android tools over the broker. Attach, detach, launch and shell are
//! operations through the broker's engine (the first attach of a device waits for the person);
//! input is ordered by lease and `inputSequence`; snapshots and captures answer at once. A device
//! that goes away ends its panel's runtime (generation none, leases over) until it is attached
//! again, and whatever was in flight says honestly that its effect is unknown.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use lomi_broker::{
    Broker, Confirmation, EffectOutcome, InputFailure, LayoutChange, LeasedRequest, Opening,
    PanelCall, PanelRecord, PanelRuntime, Placed, Runtimes, persist, to_json,
};
use lomi_protocol::definition::ToolCall;
use lomi_protocol::tools::android::{
    AndroidAction, AndroidAttachInput, AndroidAttached, AndroidBounds, AndroidCaptureInput,
    AndroidCaptureView, AndroidDetached, AndroidDeviceList, AndroidDeviceView, AndroidDevicesInput,
    AndroidInputAccepted, AndroidInputInput, AndroidLaunchInput, AndroidLaunched,
    AndroidShellInput, AndroidShellResult, AndroidUiNode, AndroidUiSnapshotInput,
    AndroidUiSnapshotView, Point, SwipeArguments,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::session::{PanelCloseInput, PanelKind, PanelListInput};
use lomi_protocol::{
    EffectState, ErrorCode, MAX_INLINE_IMAGE_BYTES, PairingId, PanelId, ToolError, WorkspaceId,
};
use serde::{Deserialize, Serialize};

mod device_tools;
mod sets;

use crate::screen::Screen;
use crate::shell::input_text_argument;
use crate::{AdbServer, AndroidError, Device, DeviceInfo, DeviceState, UiSnapshot};

/// The file in the data dir with the person's remembered attach decisions, per adb serial.
pub const DEVICE_CHOICES_FILE: &str = "android-devices.json";
/// How long a device reached over TCP may take to be listed as ready after `adb connect`.
const CONNECT_WAIT: Duration = Duration::from_secs(15);
const DEFAULT_SNAPSHOT_BYTES: u32 = 64 * 1024;
const SNAPSHOT_BYTES: std::ops::RangeInclusive<u32> = 1024..=(1 << 19);
const DEFAULT_SHELL_BYTES: u32 = 64 * 1024;
const MAX_SHELL_BYTES: u32 = 1 << 19;
const MAX_SHELL_COMMAND: usize = 4096;
const MIN_CAPTURE_BYTES: u32 = 1024;

/// The person's remembered decisions (`android-devices.json`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeviceChoices {
    devices: BTreeMap<String, DeviceChoice>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeviceChoice {
    /// May agents attach this device?
    allowed: bool,
}

/// The person's remembered attach decisions in `data_dir`, by adb serial (true: allowed).
pub fn remembered_choices(data_dir: &Path) -> std::io::Result<BTreeMap<String, bool>> {
    let choices: DeviceChoices =
        persist::read_json(&data_dir.join(DEVICE_CHOICES_FILE))?.unwrap_or_default();
    Ok(choices
        .devices
        .into_iter()
        .map(|(serial, choice)| (serial, choice.allowed))
        .collect())
}

/// Forgets the person's decision for `serial`, so its next attach waits for them again; true
/// if there was one. While Lomi runs, its broker does this (`AndroidPanels::forget_for_person`).
pub fn forget_choice(data_dir: &Path, serial: &str) -> std::io::Result<bool> {
    let path = data_dir.join(DEVICE_CHOICES_FILE);
    let mut choices: DeviceChoices = persist::read_json(&path)?.unwrap_or_default();
    let forgotten = choices.devices.remove(serial).is_some();
    if forgotten {
        persist::write_json(&path, &choices)?;
    }
    Ok(forgotten)
}

/// The latest UI snapshot of a runtime, for taps by elementRef.
#[derive(Clone, Debug)]
struct SnapshotRecord {
    id: String,
    generation: String,
    fingerprint: u64,
    /// elementRef → the centre of its bounds (none for nodes without bounds).
    centres: HashMap<String, Option<(i32, i32)>>,
}

/// One device behind a panel.
#[derive(Clone, Debug)]
struct Runtime {
    device: Device,
    workspace_id: WorkspaceId,
    /// `None` once the device went away; attaching it again gives a new one.
    generation: Option<String>,
    /// Why the last generation ended and what brings the panel back, for every answer about
    /// the panel while it has none.
    ended: Option<String>,
    /// The screen input is checked against; its rotation follows what Lomi last read or set.
    screen: Screen,
    /// Dots per inch, read at attach.
    density: Option<u32>,
    snapshot: Option<SnapshotRecord>,
}

impl PanelRuntime for Runtime {
    fn live_generation(&self, panel: &PanelId) -> Result<String, ToolError> {
        AndroidPanels::live_generation(panel, self, None)
    }
}

/// What an attach learnt of the device it reached, for its result.
struct Reached {
    info: DeviceInfo,
    generation: String,
    screen: Screen,
    density: Option<u32>,
    /// The panel that had the device now has it at another generation.
    reattached: bool,
}

/// The latest capture an agent took of a panel, for the person's window.
#[derive(Clone)]
pub struct LatestCapture {
    pub generation: String,
    /// Goes up with every capture of this broker, so a viewer knows when to fetch again.
    pub sequence: u64,
    /// The device's own PNG (before any clip or scale the agent asked for).
    pub png: Arc<Vec<u8>>,
}

/// The Android panels of one broker, over one adb server.
#[derive(Clone)]
pub struct AndroidPanels {
    broker: Broker,
    server: AdbServer,
    runtimes: Runtimes<Runtime>,
    latest: Arc<Mutex<(u64, HashMap<PanelId, LatestCapture>)>>,
    /// Serialises writes of the choices file.
    choices: Arc<Mutex<()>>,
}

fn random_hex(broker: &Broker) -> String {
    broker
        .random_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs blocking adb work off the async runtime.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AndroidError> + Send + 'static,
) -> Result<T, AndroidError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| {
            Err(AndroidError::InvalidInput(format!(
                "the adb call stopped abnormally: {error}"
            )))
        })
}

/// What a lease-guarded device command names: the panel, the lease and runtime it acts
/// under, and its request identity.
struct Guard<'a> {
    panel: &'a PanelId,
    lease: &'a lomi_protocol::LeaseId,
    generation: &'a str,
    retry_epoch: &'a lomi_protocol::RetryEpoch,
    request_key: &'a lomi_protocol::RequestKey,
}

/// Inputs of lease-guarded device commands.
trait LeaseGuarded {
    fn guard(&self) -> Guard<'_>;
}

impl LeaseGuarded for AndroidLaunchInput {
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

impl LeaseGuarded for AndroidShellInput {
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

/// The envelope error for a failed device command, saying what happened to the effect.
fn device_error(error: &AndroidError) -> ToolError {
    let effect = if error.effect_unknown() {
        "unknown"
    } else {
        "none"
    };
    ToolError::new(error.code(), error.to_string()).with_details(serde_json::json!({
        "effectState": effect,
        "deviceGone": error.device_gone(),
    }))
}

/// How an operation's effect ends when the device failed it.
fn failed_outcome(error: &AndroidError) -> EffectOutcome {
    if error.effect_unknown() {
        EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message: error.to_string(),
        }
    } else {
        EffectOutcome::Failed {
            effect: EffectState::None,
            error: ToolError::new(error.code(), error.to_string()),
        }
    }
}

fn stale(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::SnapshotStale, message)
}

impl AndroidPanels {
    pub fn new(broker: Broker, server: AdbServer) -> AndroidPanels {
        AndroidPanels {
            broker,
            server,
            runtimes: Runtimes::new(PanelKind::Android),
            latest: Arc::default(),
            choices: Arc::default(),
        }
    }

    /// The latest capture of a panel, for the person (no grants involved).
    pub fn latest_capture(&self, panel: &PanelId) -> Option<LatestCapture> {
        let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        latest.1.get(panel).cloned()
    }

    pub fn server(&self) -> AdbServer {
        self.server
    }

    fn choices_path(&self) -> PathBuf {
        self.broker.data_dir().join(DEVICE_CHOICES_FILE)
    }

    /// The person's remembered choice for a device, read fresh each time (so editing the file
    /// takes effect at once).
    fn remembered(&self, serial: &str) -> Result<Option<bool>, ToolError> {
        let choices: DeviceChoices = persist::read_json(&self.choices_path())
            .map_err(|error| {
                ToolError::new(
                    ErrorCode::StoreUnavailable,
                    format!("cannot read {DEVICE_CHOICES_FILE}: {error}"),
                )
            })?
            .unwrap_or_default();
        Ok(choices.devices.get(serial).map(|choice| choice.allowed))
    }

    /// The person's remembered attach decisions, by adb serial (`lomi android choices`).
    pub fn choices_for_person(&self) -> Result<BTreeMap<String, bool>, ToolError> {
        let _writing = self.choices.lock().unwrap_or_else(PoisonError::into_inner);
        remembered_choices(self.broker.data_dir()).map_err(|error| {
            ToolError::new(
                ErrorCode::StoreUnavailable,
                format!("cannot read {DEVICE_CHOICES_FILE}: {error}"),
            )
        })
    }

    /// The person forgets their decision for `serial` (`lomi android forget`), under the same
    /// lock as the decisions attaches remember, so neither write loses the other; true if
    /// there was one.
    pub fn forget_for_person(&self, serial: &str) -> Result<bool, ToolError> {
        let _writing = self.choices.lock().unwrap_or_else(PoisonError::into_inner);
        forget_choice(self.broker.data_dir(), serial).map_err(|error| {
            ToolError::new(
                ErrorCode::StoreUnavailable,
                format!("cannot change {DEVICE_CHOICES_FILE}: {error}"),
            )
        })
    }

    fn remember(&self, serial: &str, allowed: bool) {
        let _writing = self.choices.lock().unwrap_or_else(PoisonError::into_inner);
        let path = self.choices_path();
        let mut choices: DeviceChoices = match persist::read_json(&path) {
            Ok(choices) => choices.unwrap_or_default(),
            Err(error) => {
                tracing::error!("cannot read {}: {error}", path.display());
                return;
            }
        };
        choices
            .devices
            .insert(serial.to_owned(), DeviceChoice { allowed });
        if let Err(error) = persist::write_json(&path, &choices) {
            tracing::error!(
                "cannot remember the decision for {serial} in {}: {error}",
                path.display()
            );
        }
    }

    /// The runtime behind a panel the caller may see.
    fn runtime(&self, caller: &PairingId, panel: &PanelId) -> Result<Runtime, ToolError> {
        self.runtimes
            .find(&self.broker, caller, panel)
            .map(|(_, runtime)| runtime)
    }

    /// The runtime's live generation, checked against the one the caller named.
    fn live_generation(
        panel: &PanelId,
        runtime: &Runtime,
        named: Option<&str>,
    ) -> Result<String, ToolError> {
        match (&runtime.generation, named) {
            (Some(current), None) => Ok(current.clone()),
            (Some(current), Some(named)) if current == named => Ok(current.clone()),
            (current, named) => Err(ToolError::new(
                ErrorCode::GenerationMismatch,
                match current {
                    Some(current) => format!(
                        "generation {} is not panel {panel}'s current runtime ({current}); re-read it with lomi_panel_list",
                        named.unwrap_or_default()
                    ),
                    None => format!(
                        "panel {panel} {}",
                        runtime.ended.as_deref().unwrap_or(
                            "lost its device; attach it again with lomi_android_attach (it gets a new generation)"
                        )
                    ),
                },
            )
            .with_details(serde_json::json!({ "currentGeneration": current }))),
        }
    }

    /// What Lomi now knows of the display's rotation (`None`: auto-rotate is on), for the
    /// panel's runtime of `generation`; input is checked against it from now on.
    fn note_rotation(&self, panel: &PanelId, generation: &str, rotation: Option<u32>) {
        let mut runtimes = self.runtimes.lock();
        if let Some(runtime) = runtimes.get_mut(panel)
            && runtime.generation.as_deref() == Some(generation)
        {
            runtime.screen.rotation = rotation;
        }
    }

    /// The device went away: the panel's runtime ends (if it is still `generation`), and with
    /// it every lease on it.
    fn lose(&self, panel: &PanelId, generation: &str, ended: String) {
        let mut runtimes = self.runtimes.lock();
        if let Some(runtime) = runtimes.get_mut(panel)
            && runtime.generation.as_deref() == Some(generation)
        {
            runtime.generation = None;
            runtime.ended = Some(ended);
            runtime.snapshot = None;
            drop(runtimes);
            tracing::warn!("panel {panel}: device lost (generation {generation})");
            self.broker.panel_set_generation(panel, None);
        }
    }

    /// Ends the panel's runtime if `error` says the device is gone.
    fn note_failure(&self, panel: &PanelId, generation: &str, error: &AndroidError) {
        if error.device_gone() {
            self.lose(panel, generation, error.ending());
        }
    }

    /// `lomi_android_devices`.
    pub async fn devices(
        &self,
        caller: &PairingId,
        input: &AndroidDevicesInput,
    ) -> Result<AndroidDeviceList, ToolError> {
        self.broker.panel_list(
            caller,
            &PanelListInput {
                workspace_id: input.workspace_id.clone(),
            },
        )?;
        let server = self.server;
        let listed = blocking(move || server.devices())
            .await
            .map_err(|error| device_error(&error))?;
        let runtimes = self.runtimes.lock();
        let devices = listed
            .into_iter()
            .map(|device| {
                let attached = runtimes.iter().find(|(_, runtime)| {
                    runtime.workspace_id == input.workspace_id
                        && runtime.device.serial() == device.serial
                });
                AndroidDeviceView {
                    state: device.state.to_string(),
                    model: device.model,
                    api_level: device.api_level,
                    panel_id: attached.map(|(id, _)| id.clone()),
                    generation: attached.and_then(|(_, runtime)| runtime.generation.clone()),
                    serial: device.serial,
                }
            })
            .collect();
        Ok(AndroidDeviceList {
            adb_server: self.server.address().to_string(),
            devices,
        })
    }

    /// `lomi_android_attach`.
    pub async fn attach(
        &self,
        caller: &PairingId,
        input: AndroidAttachInput,
    ) -> Result<OperationView, ToolError> {
        if let Some(title) = &input.title {
            lomi_broker::check_name("title", title)?;
        }
        let workspace_id = input.workspace_id.clone();
        let change = LayoutChange::of(
            ToolCall::of::<lomi_protocol::tools::android::AndroidAttachTool>(&input)?,
            &input,
            None,
        )?;
        let serial = input.serial.clone();
        if serial.is_empty() || serial.len() > 256 || serial.chars().any(char::is_control) {
            return Err(ToolError::invalid(
                "serial must have 1 to 256 characters and no control characters",
            ));
        }
        let tcp_address: Option<SocketAddrV4> = serial.parse().ok();
        let confirmation = match self.remembered(&serial)? {
            Some(true) => Confirmation::Allowed,
            Some(false) => Confirmation::Declined(format!(
                "the person declined attaching `{serial}` earlier and Lomi remembers that choice; only they can change it (`lomi android forget {serial}`, then attach again to be asked)"
            )),
            None => {
                let panels = self.clone();
                let serial = serial.clone();
                Confirmation::Ask {
                    remember: Some(Box::new(move |allowed| panels.remember(&serial, allowed))),
                }
            }
        };
        let panels = self.clone();
        let creator = caller.clone();
        let title = input.title.clone();
        let listed_serial = serial.clone();
        let listed_workspace = workspace_id.clone();
        self.runtimes
            .open(
                &self.broker,
                caller,
                change,
                confirmation,
                async {
                    self.broker.panel_list(
                        caller,
                        &PanelListInput {
                            workspace_id: listed_workspace,
                        },
                    )?;
                    // A serial the adb server does not list is refused before anything is
                    // recorded, unless it is an address Lomi can connect to.
                    if tcp_address.is_none() {
                        let server = self.server;
                        let listed = blocking(move || server.devices())
                            .await
                            .map_err(|error| device_error(&error))?;
                        if !listed.iter().any(|device| device.serial == listed_serial) {
                            return Err(ToolError::not_found(format!(
                                "the adb server at {} lists no device `{listed_serial}`; see lomi_android_devices (a device reached over Wi-Fi is attached by HOST:PORT)",
                                self.server.address()
                            )));
                        }
                    }
                    Ok(())
                },
                move |(), context| async move {
                    let attached = panels.attach_effect(workspace_id, serial, tcp_address, title);
                    // Cancelled while the device was reached: nothing was added to the
                    // workspace; `adb connect` may have added the device to adb's list.
                    let Some(attached) =
                        lomi_broker::unless_cancelled(&context.cancel, attached).await
                    else {
                        return Err(EffectOutcome::Cancelled {
                            effect: if tcp_address.is_some() {
                                EffectState::Partial
                            } else {
                                EffectState::None
                            },
                        });
                    };
                    let (opening, reached) = attached?;
                    let done = move |broker: &Broker, placed: Placed| {
                        let generation = reached.generation;
                        let lease = broker.lease_acquire(&creator, &placed.panel_id, &generation)?;
                        let (screen_width, screen_height) = reached.screen.reported();
                        Ok(AndroidAttached {
                            panel_id: placed.panel_id,
                            serial: reached.info.serial,
                            generation,
                            lease_id: lease.lease_id,
                            domain_revision: placed.revision,
                            model: reached.info.model,
                            api_level: reached.info.api_level,
                            screen_width,
                            screen_height,
                            screen_density: reached.density,
                            reattached: reached.reattached,
                        })
                    };
                    Ok((opening, done))
                },
            )
            .await
    }

    /// Reaches the device and makes its runtime, or renews the one of the panel that has
    /// it in this workspace already.
    async fn attach_effect(
        &self,
        workspace_id: WorkspaceId,
        serial: String,
        tcp_address: Option<SocketAddrV4>,
        title: Option<String>,
    ) -> Result<(Opening<Runtime>, Reached), EffectOutcome> {
        let server = self.server;
        let ready = blocking(move || {
            let info = ready_device(server, &serial, tcp_address)?;
            let device = server.device(&info.serial);
            let generation = device.generation()?;
            let natural = device.screen_size()?;
            // With auto-rotate on, the settings do not say how the display is turned.
            let rotation = match device.rotation() {
                Ok((rotation, false)) => Some(rotation),
                Ok((_, true)) => None,
                Err(error) if error.device_gone() => return Err(error),
                Err(_) => None,
            };
            let screen = Screen { natural, rotation };
            // Not every device answers `wm density`; the panel works without it.
            let density = device.density().ok().flatten();
            Ok((info, device, generation, screen, density))
        })
        .await;
        let (info, device, generation, screen, density) = match ready {
            Ok(ready) => ready,
            Err(error) => {
                return Err(EffectOutcome::Failed {
                    // `adb connect` may have added the device to the adb server's list.
                    effect: if tcp_address.is_some() {
                        EffectState::Partial
                    } else {
                        EffectState::None
                    },
                    error: ToolError::new(error.code(), error.to_string()),
                });
            }
        };
        let generation = generation.to_string();
        let existing = self
            .runtimes
            .lock()
            .iter()
            .find(|(_, runtime)| {
                runtime.workspace_id == workspace_id && runtime.device.serial() == info.serial
            })
            .map(|(id, runtime)| (id.clone(), runtime.generation.clone()));
        let (opening, reattached) = match existing {
            Some((panel_id, previous)) => {
                let reattached = previous.as_deref() != Some(generation.as_str());
                if let Some(runtime) = self.runtimes.lock().get_mut(&panel_id) {
                    runtime.device = device;
                    runtime.generation = Some(generation.clone());
                    runtime.screen = screen;
                    runtime.density = density;
                    if reattached {
                        runtime.snapshot = None;
                    }
                }
                self.broker
                    .panel_set_generation(&panel_id, Some(generation.clone()));
                (Opening::Kept(panel_id), reattached)
            }
            None => {
                let title = title.unwrap_or_else(|| match &info.model {
                    Some(model) => format!("{model} ({})", info.serial),
                    None => info.serial.clone(),
                });
                let record = PanelRecord {
                    workspace_id: workspace_id.clone(),
                    kind: PanelKind::Android,
                    title: title.chars().take(120).collect(),
                    project_id: None,
                    generation: Some(generation.clone()),
                };
                let runtime = Runtime {
                    device,
                    workspace_id: workspace_id.clone(),
                    generation: Some(generation.clone()),
                    ended: None,
                    screen,
                    density,
                    snapshot: None,
                };
                (Opening::New(record, runtime), false)
            }
        };
        let reached = Reached {
            info,
            generation,
            screen,
            density,
            reattached,
        };
        Ok((opening, reached))
    }

    /// `lomi_android_detach`: forgets the panel's device connection and removes the panel
    /// (the device itself is left as it is).
    pub async fn detach(
        &self,
        caller: &PairingId,
        input: PanelCloseInput,
    ) -> Result<OperationView, ToolError> {
        // The device connection is only forgotten once the panel is gone.
        let keeping = |_: Runtime| async {
            |panel_id, revision| AndroidDetached {
                panel_id,
                domain_revision: revision,
            }
        };
        (self.runtimes)
            .close(
                &self.broker,
                caller,
                ToolCall::of::<lomi_protocol::tools::android::AndroidDetachTool>(&input)?,
                &input,
                EffectState::None,
                keeping,
            )
            .await
    }

    /// A lease-guarded device command (launch, shell) on the panel's device, through the
    /// engine's panel order (see [`Broker::operate_on_panel`]); `effect` gets the device.
    async fn on_device<F, Fut>(
        &self,
        caller: &PairingId,
        call: ToolCall,
        input: &(impl Serialize + LeaseGuarded),
        effect: F,
    ) -> Result<OperationView, ToolError>
    where
        F: FnOnce(Device, lomi_broker::EffectContext) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = EffectOutcome> + Send + 'static,
    {
        self.on_device_prepared(
            caller,
            call,
            input,
            |_| Ok(()),
            |device, (), context| effect(device, context),
        )
        .await
    }

    /// [`AndroidPanels::on_device`] with a `prepare` step that sees the runtime before the
    /// operation is reserved (such as resolving the project a file is in).
    async fn on_device_prepared<P, Prepare, F, Fut>(
        &self,
        caller: &PairingId,
        call: ToolCall,
        input: &(impl Serialize + LeaseGuarded),
        prepare: Prepare,
        effect: F,
    ) -> Result<OperationView, ToolError>
    where
        P: Send + 'static,
        Prepare: FnOnce(&Runtime) -> Result<P, ToolError>,
        F: FnOnce(Device, P, lomi_broker::EffectContext) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = EffectOutcome> + Send + 'static,
    {
        let guard = input.guard();
        let call = PanelCall {
            call,
            retry_epoch: guard.retry_epoch,
            request_key: guard.request_key,
            panel_id: guard.panel,
            generation: guard.generation,
            lease: Some(guard.lease),
        };
        self.broker
            .operate_on_panel(
                caller,
                call,
                &self.runtimes,
                prepare,
                |runtime, prepared, context| effect(runtime.device, prepared, context),
            )
            .await
    }

    /// `lomi_android_launch`.
    pub async fn launch(
        &self,
        caller: &PairingId,
        input: AndroidLaunchInput,
    ) -> Result<OperationView, ToolError> {
        let target = match (&input.component, &input.intent) {
            (Some(component), None) => Launch::Component(component.clone()),
            (None, Some(intent)) => Launch::Intent {
                action: intent.action.clone(),
                data: intent.data.clone(),
                package: intent.package.clone(),
            },
            _ => {
                return Err(ToolError::invalid(
                    "give exactly one of component or intent",
                ));
            }
        };
        let panels = self.clone();
        let panel_id = input.panel_id.clone();
        let generation = input.generation.clone();
        self.on_device(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidLaunchTool>(&input)?,
            &input,
            move |device, _context| async move {
                let launched = blocking(move || match target {
                    Launch::Component(component) => device.launch(&component),
                    Launch::Intent {
                        action,
                        data,
                        package,
                    } => device.launch_intent(&action, data.as_deref(), package.as_deref()),
                })
                .await;
                match launched {
                    Ok(am_output) => EffectOutcome::succeeded(&AndroidLaunched {
                        panel_id,
                        generation,
                        delivered: true,
                        am_output,
                    }),
                    Err(error) => {
                        panels.note_failure(&panel_id, &generation, &error);
                        failed_outcome(&error)
                    }
                }
            },
        )
        .await
    }

    /// `lomi_android_shell`: waits for the person unless their policy says otherwise.
    pub async fn shell(
        &self,
        caller: &PairingId,
        input: AndroidShellInput,
    ) -> Result<OperationView, ToolError> {
        if input.command.trim().is_empty()
            || input.command.len() > MAX_SHELL_COMMAND
            || input.command.contains('\0')
        {
            return Err(ToolError::invalid(format!(
                "command must have 1 to {MAX_SHELL_COMMAND} bytes, without NUL"
            )));
        }
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_SHELL_BYTES);
        if max_bytes == 0 || max_bytes > MAX_SHELL_BYTES {
            return Err(ToolError::invalid(format!(
                "maxBytes must be 1 to {MAX_SHELL_BYTES}"
            )));
        }
        let panels = self.clone();
        let panel_id = input.panel_id.clone();
        let generation = input.generation.clone();
        let command = input.command.clone();
        self.on_device(
            caller,
            ToolCall::of::<lomi_protocol::tools::android::AndroidShellTool>(&input)?,
            &input,
            move |device, context| async move {
                let ran = blocking(move || device.shell(&command, max_bytes as usize));
                // adb cannot stop a command it started: on cancellation Lomi stops
                // waiting; the command started, and may still run on the device.
                let Some(ran) = lomi_broker::unless_cancelled(&context.cancel, ran).await else {
                    return EffectOutcome::Cancelled {
                        effect: EffectState::Partial,
                    };
                };
                match ran {
                    Ok((output, truncated)) => {
                        // Kept within maxBytes as sent (escaped in the answer's JSON), so
                        // that the operation's result always fits an answer.
                        let text = String::from_utf8_lossy(&output);
                        let (kept, cut) =
                            lomi_protocol::json_escaped_prefix(&text, max_bytes as usize);
                        EffectOutcome::succeeded(&AndroidShellResult {
                            panel_id,
                            bytes: output.len() as u64,
                            output: kept.to_owned(),
                            truncated: truncated || cut,
                        })
                    }
                    Err(error) => {
                        panels.note_failure(&panel_id, &generation, &error);
                        failed_outcome(&error)
                    }
                }
            },
        )
        .await
    }

    /// `lomi_android_input`: ordered by lease and inputSequence.
    pub async fn input(
        &self,
        caller: &PairingId,
        input: AndroidInputInput,
    ) -> Result<AndroidInputAccepted, ToolError> {
        let runtime = self.runtime(caller, &input.panel_id)?;
        let screen = runtime.screen;
        let on_screen = |x: u32, y: u32| screen.check(x, y).map_err(ToolError::invalid);
        // Everything that can be checked without the device is checked before the sequence
        // is used, so a refused input does not take a sequence number.
        match &input.action {
            AndroidAction::Tap(Point::At { x, y })
            | AndroidAction::LongPress {
                point: Point::At { x, y },
                ..
            } => on_screen(*x, *y)?,
            AndroidAction::Swipe(swipe) => {
                on_screen(swipe.from_x, swipe.from_y)?;
                on_screen(swipe.to_x, swipe.to_y)?;
            }
            AndroidAction::Text(text) => {
                input_text_argument(text).map_err(|error| device_error(&error))?;
            }
            AndroidAction::Key(key) => check_key(key)?,
            AndroidAction::Tap(Point::Element { .. })
            | AndroidAction::LongPress {
                point: Point::Element { .. },
                ..
            } => {}
        }
        let payload = to_json(&input.action)?;
        let sequence = input.input_sequence;
        let panels = self.clone();
        let panel_id = input.panel_id.clone();
        let generation = input.generation.clone();
        let action = input.action.clone();
        let (mut accepted, duplicate): (AndroidInputAccepted, bool) = self
            .broker
            .lease_input(caller, input.leased(payload), || async move {
                let dispatched = panels.dispatch(&panel_id, &generation, action).await?;
                Ok(AndroidInputAccepted {
                    input_sequence: sequence.to_string(),
                    duplicate: false,
                    dispatched,
                })
            })
            .await?;
        accepted.duplicate = duplicate;
        Ok(accepted)
    }

    /// Sends one input to the device (under the lease's order); returns what was run. A
    /// failure once the command went to the device leaves its effect unknown.
    async fn dispatch(
        &self,
        panel: &PanelId,
        generation: &str,
        action: AndroidAction,
    ) -> Result<String, InputFailure> {
        let runtime = self
            .runtimes
            .get(panel)
            .ok_or_else(|| ToolError::not_found(format!("panel {panel} was detached")))
            .map_err(InputFailure::NotSent)?;
        Self::live_generation(panel, &runtime, Some(generation)).map_err(InputFailure::NotSent)?;
        let device = runtime.device.clone();
        let command = match action {
            AndroidAction::Tap(point) => {
                let (x, y) = self
                    .resolve(panel, &runtime, point)
                    .await
                    .map_err(InputFailure::NotSent)?;
                Command::Tap(x, y)
            }
            AndroidAction::LongPress { point, duration_ms } => {
                let (x, y) = self
                    .resolve(panel, &runtime, point)
                    .await
                    .map_err(InputFailure::NotSent)?;
                Command::Swipe(SwipeArguments {
                    from_x: x,
                    from_y: y,
                    to_x: x,
                    to_y: y,
                    duration_ms: Some(duration_ms),
                })
            }
            AndroidAction::Swipe(swipe) => Command::Swipe(swipe),
            AndroidAction::Text(text) => Command::Text(text),
            AndroidAction::Key(key) => Command::Key(key),
        };
        let described = command.describe();
        let sent = blocking(move || match command {
            Command::Tap(x, y) => device.tap(x, y),
            Command::Swipe(swipe) => device.swipe(
                (swipe.from_x, swipe.from_y),
                (swipe.to_x, swipe.to_y),
                swipe.duration_ms,
            ),
            Command::Text(text) => device.text(&text),
            Command::Key(key) => device.keyevent(&key),
        })
        .await;
        match sent {
            Ok(()) => {
                // The UI may have changed: element refs of earlier snapshots must be re-checked.
                Ok(described)
            }
            Err(error) => {
                self.note_failure(panel, generation, &error);
                Err(InputFailure::Unknown(device_error(&error)))
            }
        }
    }

    /// Where a press lands: the coordinates, or the centre of a snapshot's element after
    /// checking that the UI is still the one the snapshot saw.
    async fn resolve(
        &self,
        panel: &PanelId,
        runtime: &Runtime,
        point: Point,
    ) -> Result<(u32, u32), ToolError> {
        let (snapshot_id, element_ref) = match point {
            Point::At { x, y } => return Ok((x, y)),
            Point::Element {
                snapshot_id,
                element_ref,
            } => (snapshot_id, element_ref),
        };
        let snapshot = runtime
            .snapshot
            .clone()
            .filter(|snapshot| snapshot.id == snapshot_id)
            .ok_or_else(|| {
                stale(format!(
                    "snapshot {snapshot_id} is not the latest UI snapshot of panel {panel}'s current runtime; take a new one"
                ))
            })?;
        let centre = match snapshot.centres.get(&element_ref) {
            Some(Some(centre)) => *centre,
            Some(None) => {
                return Err(ToolError::invalid(format!(
                    "element {element_ref} has no bounds to tap; use coordinates"
                )));
            }
            None => {
                return Err(ToolError::invalid(format!(
                    "snapshot {snapshot_id} has no element {element_ref}"
                )));
            }
        };
        let device = runtime.device.clone();
        let fresh = blocking(move || device.ui_snapshot(*SNAPSHOT_BYTES.end() as usize))
            .await
            .map_err(|error| {
                self.note_failure(panel, &snapshot.generation, &error);
                device_error(&error)
            })?;
        if fresh.fingerprint != snapshot.fingerprint {
            return Err(stale(format!(
                "the UI changed since snapshot {snapshot_id}; take a new snapshot and use its refs"
            )));
        }
        let (x, y) = centre;
        match (u32::try_from(x), u32::try_from(y)) {
            (Ok(x), Ok(y)) => match runtime.screen.check(x, y) {
                Ok(()) => Ok((x, y)),
                Err(why) => Err(ToolError::invalid(format!(
                    "element {element_ref} is centred off the screen: {why}"
                ))),
            },
            _ => Err(ToolError::invalid(format!(
                "element {element_ref} is centred off the screen at ({x}, {y})"
            ))),
        }
    }

    /// `lomi_android_ui_snapshot`.
    pub async fn ui_snapshot(
        &self,
        caller: &PairingId,
        input: AndroidUiSnapshotInput,
    ) -> Result<AndroidUiSnapshotView, ToolError> {
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_SNAPSHOT_BYTES);
        if !SNAPSHOT_BYTES.contains(&max_bytes) {
            return Err(ToolError::invalid(format!(
                "maxBytes must be {} to {}",
                SNAPSHOT_BYTES.start(),
                SNAPSHOT_BYTES.end()
            )));
        }
        let runtime = self.runtime(caller, &input.panel_id)?;
        let generation =
            Self::live_generation(&input.panel_id, &runtime, input.generation.as_deref())?;
        let device = runtime.device.clone();
        let snapshot: UiSnapshot = blocking(move || device.ui_snapshot(max_bytes as usize))
            .await
            .map_err(|error| {
                self.note_failure(&input.panel_id, &generation, &error);
                device_error(&error)
            })?;
        let snapshot_id = format!("snap_{}", random_hex(&self.broker));
        let record = SnapshotRecord {
            id: snapshot_id.clone(),
            generation: generation.clone(),
            fingerprint: snapshot.fingerprint,
            centres: snapshot
                .nodes
                .iter()
                .map(|node| {
                    (
                        node.reference.clone(),
                        node.bounds.map(|bounds| bounds.center()),
                    )
                })
                .collect(),
        };
        if let Some(runtime) = self.runtimes.lock().get_mut(&input.panel_id)
            && runtime.generation.as_deref() == Some(generation.as_str())
        {
            runtime.snapshot = Some(record);
        }
        Ok(AndroidUiSnapshotView {
            panel_id: input.panel_id,
            generation,
            snapshot_id,
            screen_width: runtime.screen.reported().0,
            screen_height: runtime.screen.reported().1,
            screen_density: runtime.density,
            nodes: snapshot
                .nodes
                .into_iter()
                .map(|node| AndroidUiNode {
                    element_ref: node.reference,
                    parent: node.parent,
                    class: node.class,
                    text: node.text,
                    resource_id: node.resource_id,
                    content_description: node.content_description,
                    bounds: node.bounds.map(|bounds| AndroidBounds {
                        left: bounds.left,
                        top: bounds.top,
                        right: bounds.right,
                        bottom: bounds.bottom,
                    }),
                    clickable: node.clickable,
                })
                .collect(),
            truncated: snapshot.truncated,
            attempts: snapshot.attempts,
        })
    }

    /// `lomi_android_capture`: the metadata and the PNG.
    pub async fn capture(
        &self,
        caller: &PairingId,
        input: AndroidCaptureInput,
    ) -> Result<(AndroidCaptureView, Vec<u8>), ToolError> {
        // The PNG goes in the answer, which must fit a client's message.
        let max_bytes = input.max_bytes.unwrap_or(MAX_INLINE_IMAGE_BYTES);
        if !(MIN_CAPTURE_BYTES..=MAX_INLINE_IMAGE_BYTES).contains(&max_bytes) {
            return Err(ToolError::invalid(format!(
                "maxBytes must be {MIN_CAPTURE_BYTES} to {MAX_INLINE_IMAGE_BYTES} (the capture is sent in the answer, and larger ones do not fit a client's message)"
            )));
        }
        let options = lomi_capture::CaptureOptions {
            clip: input.clip.as_ref().map(|clip| lomi_capture::Rect {
                x: clip.x,
                y: clip.y,
                width: clip.width,
                height: clip.height,
            }),
            scale: input.scale,
            max_bytes: Some(max_bytes as usize),
        };
        let runtime = self.runtime(caller, &input.panel_id)?;
        let generation =
            Self::live_generation(&input.panel_id, &runtime, input.generation.as_deref())?;
        let device = runtime.device.clone();
        let png = blocking(move || device.capture_png())
            .await
            .map_err(|error| {
                self.note_failure(&input.panel_id, &generation, &error);
                device_error(&error)
            })?;
        {
            let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            latest.0 += 1;
            let sequence = latest.0;
            latest.1.insert(
                input.panel_id.clone(),
                LatestCapture {
                    generation: generation.clone(),
                    sequence,
                    png: Arc::new(png.clone()),
                },
            );
        }
        // The person's window shows the latest capture.
        self.broker.note_change(lomi_broker::Area::Panels);
        // What the image's pixels are measured against: the clip, or the whole screen.
        let source_width = match &input.clip {
            Some(clip) => clip.width,
            None => {
                lomi_capture::inspect_png(&png)
                    .map_err(|error| ToolError::new(error.code(), error.to_string()))?
                    .0
            }
        };
        // A PNG that needs no change (no clip or scale, and small enough) is kept as sent.
        let capture = tokio::task::spawn_blocking(move || lomi_capture::process(&png, &options))
            .await
            .map_err(|error| {
                ToolError::internal(format!("the capture stopped abnormally: {error}"))
            })?
            .map_err(|error: lomi_capture::CaptureError| {
                ToolError::new(error.code(), error.to_string())
            })?;
        Ok((
            AndroidCaptureView {
                panel_id: input.panel_id,
                generation: runtime.generation.unwrap_or_default(),
                mime_type: "image/png".to_owned(),
                width: capture.width,
                height: capture.height,
                scale: f64::from(capture.width) / f64::from(source_width.max(1)),
                bytes: capture.png.len() as u64,
                sha256: capture.sha256,
            },
            capture.png,
        ))
    }
}

/// A device command, once refs are resolved.
enum Command {
    Tap(u32, u32),
    Swipe(SwipeArguments),
    Text(String),
    Key(String),
}

impl Command {
    fn describe(&self) -> String {
        match self {
            Command::Tap(x, y) => format!("input tap {x} {y}"),
            Command::Swipe(swipe) => {
                let mut text = format!(
                    "input swipe {} {} {} {}",
                    swipe.from_x, swipe.from_y, swipe.to_x, swipe.to_y
                );
                if let Some(duration) = swipe.duration_ms {
                    text.push_str(&format!(" {duration}"));
                }
                text
            }
            Command::Text(text) => format!("input text ({} characters)", text.chars().count()),
            Command::Key(key) => format!("input keyevent {key}"),
        }
    }
}

enum Launch {
    Component(String),
    Intent {
        action: String,
        data: Option<String>,
        package: Option<String>,
    },
}

fn check_key(key: &str) -> Result<(), ToolError> {
    let valid = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || character == '_');
    if valid {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "`{key}` is not a key code; give a number such as 66 or a name such as KEYCODE_ENTER"
        )))
    }
}

/// The device as a ready entry of the adb server's list, connecting a TCP device first when it
/// is not listed as ready.
fn ready_device(
    server: AdbServer,
    serial: &str,
    tcp_address: Option<SocketAddrV4>,
) -> Result<DeviceInfo, AndroidError> {
    let find = |devices: Vec<DeviceInfo>| devices.into_iter().find(|d| d.serial == serial);
    let listed = find(server.devices()?);
    if let Some(info) = &listed
        && info.state == DeviceState::Ready
    {
        return Ok(info.clone());
    }
    let Some(address) = tcp_address else {
        return Err(match listed {
            Some(info) => AndroidError::DeviceNotReady {
                serial: serial.to_owned(),
                state: info.state.to_string(),
            },
            None => AndroidError::DeviceNotFound {
                serial: serial.to_owned(),
            },
        });
    };
    server.connect(address)?;
    let deadline = Instant::now() + CONNECT_WAIT;
    loop {
        let listed = find(server.devices()?);
        match listed {
            Some(info) if info.state == DeviceState::Ready => return Ok(info),
            _ if Instant::now() >= deadline => {
                return Err(AndroidError::DeviceNotReady {
                    serial: serial.to_owned(),
                    state: listed.map_or_else(|| "not listed".to_owned(), |i| i.state.to_string()),
                });
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_codes_are_words() {
        assert!(check_key("66").is_ok());
        assert!(check_key("KEYCODE_ENTER").is_ok());
        for bad in ["", "66;reboot", "a b", "KEY$"] {
            assert!(check_key(bad).is_err(), "{bad}");
        }
    }
}
