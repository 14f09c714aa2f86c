//! What the runtime crates (terminal, browser, Android) share about their panels: where a
//! panel's runtime is kept and found, how a tool adds a panel ([`Runtimes::open`]) or removes
//! one ([`Runtimes::close`]), and how a tool acts on one live runtime. Each crate gives only its runtime, its checks and its effect; the order and the
//! checks every panel tool needs are written here once.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lomi_protocol::definition::ToolCall;
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::session::{PanelCloseInput, PanelKind};
use lomi_protocol::{
    DomainRevision, EffectState, ErrorCode, LeaseId, PairingId, PanelId, ProjectId, RequestKey,
    RetryEpoch, ToolError, WorkspaceId,
};

use crate::{Broker, Confirmation, EffectContext, EffectOutcome, Mutation, PanelRecord, Permit};

/// A panel's runtime as its crate keeps it.
pub trait PanelRuntime: Clone + Send + Sync + 'static {
    /// The runtime generation this runtime is now, or why it takes no work (it ended, its
    /// device was lost) as the error to answer, saying what to do about it.
    fn live_generation(&self, panel: &PanelId) -> Result<String, ToolError>;

    /// Starts following a runtime [`Runtimes::open`] has made a panel (its progress, its
    /// end); by default nothing.
    fn watch(&self, _broker: &Broker, _panel: &PanelId) {}

    /// Ends a runtime [`Runtimes::open`] started but could not add (the layout refused its
    /// panel), answering what of the effect that leaves; by default nothing ran (`none`).
    fn abandon(self) -> impl Future<Output = EffectState> + Send {
        std::future::ready(EffectState::None)
    }
}

/// What a [`Runtimes::open`] effect started.
pub enum Opening<R> {
    /// A new runtime, to be added as a new panel with this record.
    New(PanelRecord, R),
    /// A runtime the workspace already has this panel for (Android attach of a device it
    /// has, its connection renewed): nothing is added.
    Kept(PanelId),
}

/// Where [`Runtimes::open`] put the panel: its id, and the workspace's revision after.
pub struct Placed {
    pub panel_id: PanelId,
    pub revision: DomainRevision,
}

/// The live runtimes of one kind of panel, by panel.
pub struct Runtimes<R> {
    kind: PanelKind,
    map: Arc<Mutex<HashMap<PanelId, R>>>,
}

impl<R> Clone for Runtimes<R> {
    fn clone(&self) -> Self {
        Runtimes {
            kind: self.kind,
            map: Arc::clone(&self.map),
        }
    }
}

impl<R: PanelRuntime> Runtimes<R> {
    pub fn new(kind: PanelKind) -> Self {
        Runtimes {
            kind,
            map: Arc::default(),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, HashMap<PanelId, R>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, panel: &PanelId) -> Option<R> {
        self.lock().get(panel).cloned()
    }

    pub fn remove(&self, panel: &PanelId) -> Option<R> {
        self.lock().remove(panel)
    }

    /// Every runtime, taken out (Lomi is stopping).
    pub fn drain(&self) -> Vec<R> {
        self.lock().drain().map(|(_, runtime)| runtime).collect()
    }

    /// The runtime behind a panel the caller may see, with the panel's record.
    pub fn find(
        &self,
        broker: &Broker,
        caller: &PairingId,
        panel: &PanelId,
    ) -> Result<(PanelRecord, R), ToolError> {
        let record = broker.panel(caller, panel)?;
        if record.kind != self.kind {
            return Err(ToolError::invalid(format!(
                "panel {panel} is {}, not {}; see lomi_panel_list",
                kind_phrase(record.kind),
                kind_phrase(self.kind)
            )));
        }
        let runtime = self.get(panel).ok_or_else(|| {
            ToolError::not_found(format!(
                "panel {panel} has no {} runtime any more",
                kind_word(self.kind)
            ))
        })?;
        Ok((record, runtime))
    }

    /// A tool that starts a runtime and adds its panel at the end of its workspace's layout
    /// (terminal and browser create, Android attach), as one [`Broker::change_layout`]. In
    /// the effect `start` starts the runtime from what `find` gave and answers it with how
    /// to make the result, or the outcome that ends the operation there. The panel is then
    /// placed: the runtime made findable, the layout changed at the change's revision; if
    /// the layout refuses it, the runtime is ended ([`PanelRuntime::abandon`]) and the
    /// operation fails. A placed runtime is watched ([`PanelRuntime::watch`]); `done` makes
    /// the result (taking the creator's lease, say), and its error fails the operation with
    /// the panel added (effect `complete`).
    pub async fn open<Found, Find, Start, Starting, Done, Opened>(
        &self,
        broker: &Broker,
        caller: &PairingId,
        change: LayoutChange,
        confirmation: Confirmation,
        find: Find,
        start: Start,
    ) -> Result<OperationView, ToolError>
    where
        Found: Send + 'static,
        Find: Future<Output = Result<Found, ToolError>>,
        Start: FnOnce(Found, EffectContext) -> Starting + Send + 'static,
        Starting: Future<Output = Result<(Opening<R>, Done), EffectOutcome>> + Send + 'static,
        Done: FnOnce(&Broker, Placed) -> Result<Opened, ToolError> + Send + 'static,
        Opened: serde::Serialize,
    {
        let runtimes = self.clone();
        let expected = change.expected;
        broker
            .change_layout(
                caller,
                change,
                confirmation,
                find,
                move |found, context| async move {
                    let broker = context.broker.clone();
                    let (opening, done) = match start(found, context).await {
                        Ok(started) => started,
                        Err(outcome) => return outcome,
                    };
                    let placed = match opening {
                        Opening::New(record, runtime) => {
                            match broker.place_panel(&runtimes, expected, record, runtime.clone()) {
                                Ok((panel_id, revision)) => {
                                    runtime.watch(&broker, &panel_id);
                                    Placed { panel_id, revision }
                                }
                                Err(error) => {
                                    let effect = runtime.abandon().await;
                                    return EffectOutcome::Failed { effect, error };
                                }
                            }
                        }
                        Opening::Kept(panel_id) => Placed {
                            panel_id,
                            revision: expected,
                        },
                    };
                    match done(&broker, placed) {
                        Ok(opened) => EffectOutcome::succeeded(&opened),
                        Err(error) => EffectOutcome::Failed {
                            effect: EffectState::Complete,
                            error,
                        },
                    }
                },
            )
            .await
    }

    /// A tool that ends a panel's runtime and removes the panel from its workspace (terminal
    /// and browser close, Android detach), as one operation compared by the workspace's
    /// revision and keyed by its input alone, so a retry after the panel is gone still finds
    /// its receipt. In the effect `end` ends the runtime (or leaves it, when
    /// `effect_if_kept` is `none`) and answers how to make the result from the panel's id and
    /// the new revision once the panel is removed. The runtime is dropped once its panel is
    /// gone, or once it ended (`effect_if_kept` is `partial`) even if the panel stays.
    pub async fn close<End, Ended, Done, Closed>(
        &self,
        broker: &Broker,
        caller: &PairingId,
        call: ToolCall,
        input: &PanelCloseInput,
        effect_if_kept: EffectState,
        end: End,
    ) -> Result<OperationView, ToolError>
    where
        End: FnOnce(R) -> Ended + Send + 'static,
        Ended: Future<Output = Done> + Send + 'static,
        Done: FnOnce(PanelId, DomainRevision) -> Closed + Send + 'static,
        Closed: serde::Serialize,
    {
        let change = LayoutChange::of(call, input, None)?;
        let (workspace, panel, expected) = (
            input.workspace_id.clone(),
            input.panel_id.clone(),
            input.expected_revision,
        );
        let runtimes = self.clone();
        let find = async {
            let panel = &input.panel_id;
            let (record, runtime) = self.find(broker, caller, panel)?;
            if record.workspace_id != workspace {
                return Err(ToolError::not_found(format!(
                    "no panel {panel} in workspace {workspace}"
                )));
            }
            Ok(runtime)
        };
        broker
            .change_layout(
                caller,
                change,
                Confirmation::Policy,
                find,
                move |runtime, context| async move {
                    let done = end(runtime).await;
                    let removed = context.broker.panel_remove(&panel, Some(expected));
                    if removed.is_ok() || effect_if_kept != EffectState::None {
                        runtimes.remove(&panel);
                    }
                    match removed {
                        Ok(revision) => EffectOutcome::succeeded(&done(panel, revision)),
                        Err(error) => EffectOutcome::Failed {
                            effect: effect_if_kept,
                            error,
                        },
                    }
                },
            )
            .await
    }

    /// The panel's runtime, if it still runs the generation a request named.
    fn at_generation(&self, panel: &PanelId, generation: &str) -> Result<R, ToolError> {
        let runtime = self
            .get(panel)
            .ok_or_else(|| ToolError::not_found(format!("panel {panel} was closed")))?;
        let current = runtime.live_generation(panel)?;
        if current != generation {
            return Err(ToolError::new(
                ErrorCode::GenerationMismatch,
                format!(
                    "generation {generation} is not panel {panel}'s current runtime ({current}); re-read it with lomi_panel_list"
                ),
            )
            .with_details(serde_json::json!({ "currentGeneration": current })));
        }
        Ok(runtime)
    }
}

fn kind_word(kind: PanelKind) -> &'static str {
    match kind {
        PanelKind::Terminal => "terminal",
        PanelKind::Browser => "browser",
        PanelKind::Android => "Android",
        PanelKind::Document => "document",
    }
}

fn kind_phrase(kind: PanelKind) -> &'static str {
    match kind {
        PanelKind::Terminal => "a terminal panel",
        PanelKind::Browser => "a browser panel",
        PanelKind::Android => "an Android panel",
        PanelKind::Document => "a document panel",
    }
}

/// A tool that changes a workspace, compared by its revision: one that adds a panel
/// ([`Runtimes::open`]), removes one ([`Runtimes::close`]) or closes its documents (workspace
/// close).
pub struct LayoutChange {
    /// The tool, its whole input (for the receipt's fingerprint) and its preview.
    pub call: ToolCall,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    pub expected: DomainRevision,
}

/// An input of a tool that changes a workspace's layout: it names the workspace, the revision
/// it expects and its request identity, with the same field names on every such tool.
pub trait LayoutRequest: serde::Serialize {
    fn place(&self) -> (&WorkspaceId, DomainRevision, &RetryEpoch, &RequestKey);
}

macro_rules! layout_requests {
    ($($input:ty),* $(,)?) => {
        $(impl LayoutRequest for $input {
            fn place(&self) -> (&WorkspaceId, DomainRevision, &RetryEpoch, &RequestKey) {
                (&self.workspace_id, self.expected_revision, &self.retry_epoch, &self.request_key)
            }
        })*
    };
}

layout_requests!(
    lomi_protocol::tools::terminal::TerminalCreateInput,
    lomi_protocol::tools::browser::BrowserCreateInput,
    lomi_protocol::tools::android::AndroidAttachInput,
    lomi_protocol::tools::editor::WorkspaceCloseInput,
    PanelCloseInput,
);

impl LayoutChange {
    /// The change a layout tool's input asks for, keyed in `project_id` when it names one.
    pub fn of(
        call: ToolCall,
        input: &impl LayoutRequest,
        project_id: Option<ProjectId>,
    ) -> Result<LayoutChange, ToolError> {
        let (workspace_id, expected, retry_epoch, request_key) = input.place();
        Ok(LayoutChange {
            call,
            retry_epoch: retry_epoch.clone(),
            request_key: request_key.clone(),
            workspace_id: workspace_id.clone(),
            project_id,
            expected,
        })
    }
}

/// A tool that acts on one live runtime of a panel (terminal interrupt, browser actions and
/// navigation, Android launch and shell), against the runtime generation it names, and with a
/// lease where the tool needs one.
pub struct PanelCall<'a> {
    /// The tool, its whole input (for the receipt's fingerprint) and its preview.
    pub call: ToolCall,
    pub retry_epoch: &'a RetryEpoch,
    pub request_key: &'a RequestKey,
    pub panel_id: &'a PanelId,
    pub generation: &'a str,
    pub lease: Option<&'a LeaseId>,
}

impl Broker {
    /// Runs a [`LayoutChange`] as one operation under the workspace's permit: the revision is
    /// checked after `find` and again at dispatch, so nothing else changed the layout the
    /// effect changes.
    pub async fn change_layout<L, Find, Run, Fut>(
        &self,
        caller: &PairingId,
        change: LayoutChange,
        confirmation: Confirmation,
        find: Find,
        run: Run,
    ) -> Result<OperationView, ToolError>
    where
        L: Send + 'static,
        Find: Future<Output = Result<L, ToolError>>,
        Run: FnOnce(L, EffectContext) -> Fut + Send + 'static,
        Fut: Future<Output = EffectOutcome> + Send + 'static,
    {
        let LayoutChange {
            call,
            retry_epoch,
            request_key,
            workspace_id,
            project_id,
            expected,
        } = change;
        let mutation = Mutation {
            call,
            retry_epoch,
            request_key,
            workspace_id: workspace_id.clone(),
            project_id,
            generation: None,
            revision: Some(expected.to_string()),
            permit: Permit::Workspace(workspace_id.clone()),
        };
        self.operate(
            caller,
            mutation,
            confirmation,
            find,
            move |broker, _| broker.check_revision(&workspace_id, expected),
            run,
        )
        .await
    }

    /// In a [`Runtimes::open`] effect: gives a started runtime its panel id, makes it
    /// findable, and adds the panel at the end of its workspace's layout at `expected`. If the
    /// layout refuses it, the runtime is taken out again and the error returned.
    fn place_panel<R: PanelRuntime>(
        &self,
        runtimes: &Runtimes<R>,
        expected: DomainRevision,
        record: PanelRecord,
        runtime: R,
    ) -> Result<(PanelId, DomainRevision), ToolError> {
        let panel = PanelId::from_random(self.random_bytes());
        runtimes.lock().insert(panel.clone(), runtime);
        match self.panel_add(expected, panel.clone(), record) {
            Ok(revision) => Ok((panel, revision)),
            Err(error) => {
                runtimes.remove(&panel);
                Err(error)
            }
        }
    }

    /// Runs a [`PanelCall`] as one operation under the panel's permit, keyed by its input and
    /// retry epoch alone, so a retry finds its receipt after the lease ended, the runtime was
    /// replaced or the panel closed. Only then are the panel (in the retry epoch's workspace),
    /// the lease and the runtime generation checked, and `prepare` checks what needs the
    /// runtime (a URL or file confined to its project). At dispatch the lease and generation
    /// are checked again: a runtime replaced while the operation waited never gets work meant
    /// for its predecessor. The effect gets the runtime and what `prepare` gave.
    pub async fn operate_on_panel<R, P, Prepare, Run, Fut>(
        &self,
        caller: &PairingId,
        call: PanelCall<'_>,
        runtimes: &Runtimes<R>,
        prepare: Prepare,
        run: Run,
    ) -> Result<OperationView, ToolError>
    where
        R: PanelRuntime,
        P: Send + 'static,
        Prepare: FnOnce(&R) -> Result<P, ToolError>,
        Run: FnOnce(R, P, EffectContext) -> Fut + Send + 'static,
        Fut: Future<Output = EffectOutcome> + Send + 'static,
    {
        let workspace_id = self.retry_epoch_workspace(caller, call.retry_epoch)?;
        let mutation = Mutation {
            call: call.call,
            retry_epoch: call.retry_epoch.clone(),
            request_key: call.request_key.clone(),
            workspace_id: workspace_id.clone(),
            project_id: None,
            generation: Some(call.generation.to_owned()),
            revision: None,
            permit: Permit::Panel(call.panel_id.clone()),
        };
        let check = {
            let (caller, panel, generation, lease) = (
                caller.clone(),
                call.panel_id.clone(),
                call.generation.to_owned(),
                call.lease.cloned(),
            );
            let runtimes = runtimes.clone();
            move |broker: &Broker| -> Result<R, ToolError> {
                if let Some(lease) = &lease {
                    broker.lease_check(&caller, lease, &panel, &generation)?;
                }
                runtimes.at_generation(&panel, &generation)
            }
        };
        let find = async {
            let (record, _) = runtimes.find(self, caller, call.panel_id)?;
            if record.workspace_id != workspace_id {
                return Err(ToolError::invalid(format!(
                    "panel {} is not in this retry epoch's workspace {workspace_id}",
                    call.panel_id
                )));
            }
            let runtime = check(self)?;
            let prepared = prepare(&runtime)?;
            Ok((runtime, prepared, check))
        };
        self.operate(
            caller,
            mutation,
            Confirmation::Policy,
            find,
            |broker, (_, _, check)| check(broker).map(|_| ()),
            |(runtime, prepared, _), context| run(runtime, prepared, context),
        )
        .await
    }
}
