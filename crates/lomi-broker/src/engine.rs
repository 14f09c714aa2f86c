//! The operation engine: every mutation is validated, keyed, fingerprinted, reserved durably,
//! dispatched under a per-target permit, and settled honestly. Nothing is ever re-dispatched.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;

use lomi_protocol::definition::{ToolCall, ToolDef};
use lomi_protocol::tools::operations::{OperationError, OperationView};
use lomi_protocol::{
    ConversationId, Effect, EffectState, ErrorCode, OperationId, OperationState, PairingId,
    PanelId, ProjectId, RequestKey, RetryEpoch, Tool, ToolError, WorkspaceId,
};
use lomi_store::{Outcome, OutcomeError, Receipt, ReceiptKey, ReservationRequest, StoreError};
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::effect::Asked;
use crate::rules::Decider;
use crate::{Broker, store_error, waiting_on_disk};
use lomi_protocol::rules::Verdict;

/// One mutation as a tool hands it to the engine: its identity (the receipt key), what its
/// fingerprint binds, and where it waits its turn.
pub struct Mutation {
    /// The tool, its whole input (canonicalized into the fingerprint) and its preview.
    pub call: ToolCall,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    /// The target runtime generation the request was made against, if any.
    pub generation: Option<String>,
    /// The revision the request was made against, if any.
    pub revision: Option<String>,
    /// Mutations with the same permit run one at a time (waiting ones read `queued`).
    pub permit: Permit,
}

impl Mutation {
    /// A mutation keyed by a tool input's retry epoch and request key, with the whole input
    /// as its payload, acting in `workspace_id` and waiting for `permit`; it names no project,
    /// runtime generation or revision until the caller sets them.
    pub fn of<D>(
        (retry_epoch, request_key): (&RetryEpoch, &RequestKey),
        input: &D::Input,
        workspace_id: WorkspaceId,
        permit: Permit,
    ) -> Result<Mutation, ToolError>
    where
        D: ToolDef,
        D::Input: serde::Serialize,
    {
        Ok(Mutation {
            call: ToolCall::of::<D>(input)?,
            retry_epoch: retry_epoch.clone(),
            request_key: request_key.clone(),
            workspace_id,
            project_id: None,
            generation: None,
            revision: None,
            permit,
        })
    }
}

/// What a mutation holds while its effect runs: changes to one workspace's layout, one
/// project's files, or one panel's runtime go one at a time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Permit {
    Workspace(WorkspaceId),
    Project(ProjectId),
    Panel(PanelId),
    /// Changes to the person's settings.
    Settings,
    /// New conversations of a workspace.
    Chat(WorkspaceId),
    /// One conversation's draft.
    Draft(ConversationId),
    /// One conversation's sends: one reply at a time.
    Conversation(ConversationId),
}

impl Permit {
    pub(crate) fn key(&self) -> String {
        match self {
            Permit::Workspace(id) => format!("workspace:{id}"),
            Permit::Project(id) => format!("project:{id}"),
            Permit::Panel(id) => format!("panel:{id}"),
            Permit::Settings => "settings".to_owned(),
            Permit::Chat(id) => format!("chat:{id}"),
            Permit::Draft(id) => format!("draft:{id}"),
            Permit::Conversation(id) => format!("conversation:{id}"),
        }
    }
}

/// What an effect really reached.
pub enum EffectOutcome {
    /// The postcondition was confirmed; `result` is the tool's typed result.
    Succeeded(Value),
    /// It failed; `effect` says what happened anyway.
    Failed {
        effect: EffectState,
        error: ToolError,
    },
    /// It stopped because cancellation was asked for, having reached `effect`.
    Cancelled { effect: EffectState },
    /// It stopped because cancellation was asked for, part-way: `result` (the tool's result
    /// type) says exactly which part was done. Settles `cancelled` with effect `partial`.
    Stopped(Value),
    /// Lomi cannot tell what happened.
    Unknown {
        effect: EffectState,
        message: String,
    },
}

impl EffectOutcome {
    /// Succeeded with `value` as the typed result; a value that cannot be written as JSON
    /// (which the tools' result types never are) leaves the effect complete but unknown.
    pub fn succeeded<T: serde::Serialize + ?Sized>(value: &T) -> EffectOutcome {
        match to_json(value) {
            Ok(value) => EffectOutcome::Succeeded(value),
            Err(error) => EffectOutcome::Unknown {
                effect: EffectState::Complete,
                message: error.message,
            },
        }
    }
}

/// One of Lomi's own values (a tool's input, result or progress) as JSON. Their types always
/// can be (derived, with string keys); if one could not, that is an error to answer, never a
/// `null` in its place: a `null` payload would give different requests one fingerprint (a
/// retry of another request answered as this one), a `null` result an operation that says it
/// succeeded and lost what it did.
pub fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Value, ToolError> {
    serde_json::to_value(value)
        .map_err(|e| ToolError::internal(format!("Lomi could not write a value as JSON: {e}")))
}

/// Whether an operation waits for the person before it runs.
pub enum Confirmation {
    /// As the person's policy says for the tool (`lomi confirm TOOL`).
    Policy,
    /// Always ask (`awaiting_user`); `remember` is called with the person's answer, so the
    /// caller can keep it for later requests of the same kind.
    Ask { remember: Option<Remember> },
    /// The person already allowed this (a remembered choice): run at once.
    Allowed,
    /// The person already declined this (a remembered choice): fail USER_DENIED with no
    /// effect and this message, which says how the person can change the choice.
    Declined(String),
    /// Wait for the person, as `by` decided (a terminal line a rule holds).
    Hold(Decider),
}

/// Called once with the person's decision (true: approved).
pub type Remember = Box<dyn FnOnce(bool) + Send>;

/// What `run` does before dispatch.
enum Gate {
    Open,
    Ask(oneshot::Receiver<bool>, Option<Remember>),
    Denied(ToolError),
}

/// What decides a request, before it is admitted.
struct Plan {
    gate: Planned,
    /// What its receipt records as having decided it (until the person does).
    by: Decider,
}

enum Planned {
    Open,
    Ask(Option<Remember>),
    Denied(ToolError),
}

impl Plan {
    fn asks(&self) -> bool {
        matches!(self.gate, Planned::Ask(_))
    }
}

/// What an effect gets: the broker, and a token that fires when cancellation is requested.
pub struct EffectContext {
    pub broker: Broker,
    pub operation_id: OperationId,
    pub cancel: CancellationToken,
}

/// Where a running operation has got to, as `EffectContext::progress` reported it: `done` of
/// `total` steps. The MCP front door turns these into progress notifications.
#[derive(Clone, Debug)]
pub struct ProgressNote {
    pub operation_id: OperationId,
    pub pairing: PairingId,
    pub tool: Tool,
    pub request_key: RequestKey,
    pub done: u64,
    pub total: u64,
    pub message: String,
}

impl EffectContext {
    /// Reports progress: `so_far` (the tool's result type, listing what is done) is the
    /// operation's `result` while it runs, and a [`ProgressNote`] goes to whoever listens.
    /// In memory only: a restart forgets it, like the operation's live state. A `so_far` that
    /// cannot be written as JSON (see [`to_json`]) leaves the last one shown, not `null`.
    pub fn progress<T: serde::Serialize + ?Sized>(
        &self,
        done: u64,
        total: u64,
        message: String,
        so_far: &T,
    ) {
        let so_far = to_json(so_far);
        let note = {
            let mut live = self.broker.live();
            let Some(operation) = live.get_mut(&self.operation_id) else {
                return;
            };
            if let Ok(so_far) = so_far {
                operation.progress = Some(so_far);
            }
            let (pairing, tool, request_key) = operation.owner.clone();
            ProgressNote {
                operation_id: self.operation_id.clone(),
                pairing,
                tool,
                request_key,
                done,
                total,
                message,
            }
        };
        // No one listening is fine: the operation's result still shows it.
        let _listeners = self.broker.inner.progress.send(note);
    }
}

type Work =
    Box<dyn FnOnce(EffectContext) -> Pin<Box<dyn Future<Output = EffectOutcome> + Send>> + Send>;

/// Whose operation it is, where it acts, and which permit it waits for.
struct Target {
    pairing: PairingId,
    workspace: WorkspaceId,
    permit_key: String,
}

/// In-memory companions of an unsettled operation of this instance.
pub(crate) struct LiveOperation {
    cancel: CancellationToken,
    decision: Option<oneshot::Sender<bool>>,
    settled: watch::Receiver<bool>,
    /// What the person is asked to decide, while the operation waits for them.
    request: Option<AwaitingDecision>,
    /// Whose request it is: its pairing, tool and request key (for progress notes).
    pub(crate) owner: (PairingId, Tool, RequestKey),
    /// The result so far of a running operation that reports progress.
    pub(crate) progress: Option<Value>,
}

pub use lomi_protocol::control::AwaitingDecision;

impl LiveOperation {
    /// Whether the person's decision is still awaited.
    pub(crate) fn is_waiting_for_person(&self) -> bool {
        self.decision.is_some()
    }
}

impl Broker {
    /// Runs one mutation in the engine's order, the same for every tool: the prior receipt
    /// of an identical request first (so a retry after the target is gone still finds it),
    /// then `find` (the live target) and `check` (liveness, revisions), then the durable
    /// reservation, the person's decision where policy asks for one, the permit, `check`
    /// again under it, and the effect with its cancel token; the receipt settles with what
    /// the effect really reached. A panicking effect settles `outcome_unknown`. Answers the
    /// operation, waiting (bounded) for it to settle.
    pub async fn operate<L, Find, Check, Run, Fut>(
        &self,
        caller: &PairingId,
        mutation: Mutation,
        confirmation: Confirmation,
        find: Find,
        check: Check,
        run: Run,
    ) -> Result<OperationView, ToolError>
    where
        L: Send + 'static,
        Find: Future<Output = Result<L, ToolError>>,
        Check: Fn(&Broker, &L) -> Result<(), ToolError> + Send + 'static,
        Run: FnOnce(L, EffectContext) -> Fut + Send + 'static,
        Fut: Future<Output = EffectOutcome> + Send + 'static,
    {
        let id = match self.prior(caller, &mutation)? {
            Some(prior) => prior,
            // `find` is a future: nothing of it runs before the prior receipt was looked for.
            None => {
                // Paused: refused at once, nothing recorded (a retry of an admitted request
                // still found its receipt above).
                self.check_paused(caller)?;
                let plan = self.plan(caller, &mutation, confirmation);
                let found = match find.await {
                    Ok(live) => check(self, &live).map(|()| live),
                    Err(error) => Err(error),
                };
                // What the person will be shown, read before the reservation (reads only):
                // only for a request that will wait for them.
                let effect = match (&found, plan.asks()) {
                    (Ok(_), true) => Some(
                        self.effect(Asked {
                            tool: mutation.call.tool,
                            caller,
                            workspace: &mutation.workspace_id,
                            project: mutation.project_id.as_ref(),
                            preview: &mutation.call.preview,
                            panel: mutation.call.panel.as_ref(),
                            arguments: &mutation.call.payload,
                        })
                        .await,
                    ),
                    _ => None,
                };
                self.admit(caller, mutation, plan, found, effect, check, run)?
            }
        };
        self.answer(caller, &id).await
    }

    /// What decides a request: under `Confirmation::Policy`, the person's rules, then the
    /// tool's default; otherwise the caller's own choice.
    fn plan(&self, caller: &PairingId, mutation: &Mutation, confirmation: Confirmation) -> Plan {
        match confirmation {
            Confirmation::Policy => {
                let call = &mutation.call;
                let judged = self.verdict(caller, &mutation.workspace_id, call.tool, &call.subject);
                let gate = match judged.verdict {
                    Verdict::Allow => Planned::Open,
                    Verdict::Ask => Planned::Ask(None),
                    Verdict::Deny => Planned::Denied(judged.denial(call.tool)),
                };
                Plan {
                    gate,
                    by: judged.by,
                }
            }
            Confirmation::Ask { remember } => Plan {
                gate: Planned::Ask(remember),
                by: Decider::Default,
            },
            Confirmation::Allowed => Plan {
                gate: Planned::Open,
                by: Decider::Remembered,
            },
            Confirmation::Hold(by) => Plan {
                gate: Planned::Ask(None),
                by,
            },
            Confirmation::Declined(message) => Plan {
                gate: Planned::Denied(ToolError::new(ErrorCode::UserDenied, message)),
                by: Decider::Remembered,
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn admit<L, Check, Run, Fut>(
        &self,
        caller: &PairingId,
        mutation: Mutation,
        plan: Plan,
        found: Result<L, ToolError>,
        effect: Option<Effect>,
        check: Check,
        run: Run,
    ) -> Result<OperationId, ToolError>
    where
        L: Send + 'static,
        Check: Fn(&Broker, &L) -> Result<(), ToolError> + Send + 'static,
        Run: FnOnce(L, EffectContext) -> Fut + Send + 'static,
        Fut: Future<Output = EffectOutcome> + Send + 'static,
    {
        let (key, fingerprint) = receipt_key(caller, &mutation);
        let live = match found {
            Ok(live) => live,
            // An identical request admitted since the lookup above may be what changed the
            // target (a revision, a closed panel): then its operation is this request's
            // answer, not a refusal.
            Err(error) => {
                return match self.inner.store.lookup(&key).map_err(store_error)? {
                    Some(prior) => same_request(prior, &fingerprint),
                    None => Err(error),
                };
            }
        };
        let request = ReservationRequest {
            key,
            operation_id: OperationId::from_random(self.inner.entropy.bytes16()),
            workspace_id: Some(mutation.workspace_id.clone()),
            fingerprint,
            decided_by: Some(plan.by.as_text()),
        };
        let (decision_tx, decision_rx) = oneshot::channel();
        let (gate, decision) = match plan.gate {
            Planned::Open => (Gate::Open, None),
            Planned::Ask(remember) => (Gate::Ask(decision_rx, remember), Some(decision_tx)),
            Planned::Denied(error) => (Gate::Denied(error), None),
        };
        // Nothing to wait for (no decision, the permit free): the permit is taken now and the
        // receipt recorded `running` with its reservation, one commit instead of two.
        let permit_key = mutation.permit.key();
        let held = match gate {
            Gate::Open => self.permit(&permit_key).try_lock_owned().ok(),
            _ => None,
        };
        let reservation = waiting_on_disk(|| match held {
            Some(_) => self.inner.store.reserve_running(&request),
            None => self.inner.store.reserve(&request),
        })
        .map_err(|error| {
            // A store that cannot write is news for the person's window too.
            self.note_change(crate::Area::Operations);
            store_error(error)
        })?;
        let receipt = reservation.receipt;
        if !reservation.created {
            return Ok(receipt.operation_id);
        }
        let work: Work = Box::new(move |context: EffectContext| {
            Box::pin(async move {
                // Checked again under the permit: the target may have changed while the
                // operation waited for it or for the person.
                if let Err(error) = check(&context.broker, &live) {
                    return EffectOutcome::Failed {
                        effect: EffectState::None,
                        error,
                    };
                }
                run(live, context).await
            })
        });
        let cancel = CancellationToken::new();
        let (settled_tx, settled_rx) = watch::channel(false);
        let request = decision.is_some().then(|| AwaitingDecision {
            operation_id: receipt.operation_id.clone(),
            tool: mutation.call.tool,
            pairing_id: caller.clone(),
            workspace_id: mutation.workspace_id.clone(),
            project_id: mutation.project_id.clone(),
            arguments: mutation.call.payload.clone(),
            // The policy changed to ask since the effect was read: its request, in words.
            effect: effect.unwrap_or_else(|| {
                crate::effect::unread(mutation.call.tool, &mutation.call.payload)
            }),
            created_at: receipt.created_at,
            suggested_rule: crate::rules::suggest(
                caller,
                &mutation.workspace_id,
                mutation.call.tool,
                &mutation.call.subject,
                Verdict::Allow,
            ),
            decided_by: plan.by.as_text(),
        });
        self.live().insert(
            receipt.operation_id.clone(),
            LiveOperation {
                cancel: cancel.clone(),
                decision,
                settled: settled_rx,
                request,
                owner: (
                    caller.clone(),
                    mutation.call.tool,
                    mutation.request_key.clone(),
                ),
                progress: None,
            },
        );
        // A new receipt (and perhaps a decision waiting for the person).
        self.note_change(crate::Area::Operations);
        let broker = self.clone();
        let id = receipt.operation_id.clone();
        let target = Target {
            pairing: caller.clone(),
            workspace: mutation.workspace_id.clone(),
            permit_key,
        };
        let task = tokio::spawn(async move {
            broker
                .run(id.clone(), target, gate, held, cancel, work)
                .await;
            broker.live().remove(&id);
            broker.note_change(crate::Area::Operations);
            let _settled = settled_tx.send(true);
        });
        let mut tasks = self.tasks();
        tasks.retain(|task| !task.is_finished());
        tasks.push(task);
        Ok(receipt.operation_id)
    }

    /// Stops this instance before it is dropped: operations waiting for the person's decision
    /// or for a permit stop waiting, with nothing recorded (the next start marks them
    /// `outcome_unknown`); running effects finish. Returns once no operation task holds the
    /// broker, so dropping the last clone releases the store's lock. Call it after the front
    /// doors stopped taking calls.
    pub async fn shutdown(&self) {
        self.inner.stopping.cancel();
        let tasks = std::mem::take(&mut *self.tasks());
        for task in tasks {
            if let Err(error) = task.await {
                tracing::error!("an operation task ended abnormally: {error}");
            }
        }
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, Vec<tokio::task::JoinHandle<()>>> {
        self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The operation an earlier identical request made (same key and fingerprint), checked
    /// before anything about the target's current state: a retry after the effect (a closed
    /// panel, an ended lease) still finds its receipt. Same key, other arguments:
    /// IDEMPOTENCY_CONFLICT.
    pub fn prior(
        &self,
        caller: &PairingId,
        mutation: &Mutation,
    ) -> Result<Option<OperationId>, ToolError> {
        self.check_retry_epoch(caller, &mutation.retry_epoch, Some(&mutation.workspace_id))?;
        let (key, fingerprint) = receipt_key(caller, mutation);
        match self.inner.store.lookup(&key).map_err(store_error)? {
            Some(prior) => same_request(prior, &fingerprint).map(Some),
            None => Ok(None),
        }
    }

    /// Waits (bounded by the configured settle wait) for an operation to settle.
    pub async fn wait_settled(&self, id: &OperationId) {
        let receiver = self.live().get(id).map(|live| live.settled.clone());
        if let Some(mut receiver) = receiver {
            let wait = receiver.wait_for(|settled| *settled);
            let _elapsed = tokio::time::timeout(self.inner.settle_wait, wait).await;
        }
    }

    /// Waits, however long it takes, until an operation of this instance settles (at once
    /// when it is not live: settled already, or of an earlier instance) or this instance
    /// stops.
    pub async fn wait_until_settled(&self, id: &OperationId) {
        let receiver = self.live().get(id).map(|live| live.settled.clone());
        if let Some(mut receiver) = receiver {
            tokio::select! {
                _settled = receiver.wait_for(|settled| *settled) => {}
                () = self.inner.stopping.cancelled() => {}
            }
        }
    }

    pub(crate) fn live(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<OperationId, LiveOperation>> {
        self.inner.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn run(
        &self,
        id: OperationId,
        Target {
            pairing,
            workspace,
            permit_key,
        }: Target,
        gate: Gate,
        held: Option<tokio::sync::OwnedMutexGuard<()>>,
        cancel: CancellationToken,
        effect: Work,
    ) {
        if let Gate::Denied(error) = gate {
            let _recorded = self.step(
                &id,
                OperationState::Queued,
                OperationState::Failed,
                EffectState::None,
                Some(error_outcome(&error)),
            );
            return;
        }
        if let Gate::Ask(decision, remember) = gate {
            if self
                .step(
                    &id,
                    OperationState::Queued,
                    OperationState::AwaitingUser,
                    EffectState::None,
                    None,
                )
                .is_err()
            {
                return;
            }
            let approved = tokio::select! {
                answer = decision => answer.unwrap_or(false),
                () = cancel.cancelled() => return,
                () = self.inner.stopping.cancelled() => return,
            };
            if let Some(remember) = remember {
                remember(approved);
            }
            if !approved {
                let error = ToolError::new(
                    ErrorCode::UserDenied,
                    "the person declined this operation in Lomi",
                );
                let _recorded =
                    self.step_decided(&id, OperationState::Failed, Some(error_outcome(&error)));
                return;
            }
            if self
                .step_decided(&id, OperationState::Queued, None)
                .is_err()
            {
                return;
            }
        }
        // Recorded `running` at admission when the permit was free then (it is held since).
        let dispatched = held.is_some();
        let _guard = match held {
            Some(guard) => guard,
            None => {
                let permit = self.permit(&permit_key);
                tokio::select! {
                    guard = permit.lock_owned() => guard,
                    () = cancel.cancelled() => return,
                    () = self.inner.stopping.cancelled() => return,
                }
            }
        };
        let from = if dispatched {
            OperationState::Running
        } else {
            OperationState::Queued
        };
        // A pairing revoked (or denied), or no longer granted the workspace, while its
        // operation waited gets no effect: authority is checked at dispatch, not only at
        // admission.
        if let Err(error) = self.granted_workspace(&pairing, &workspace) {
            let _recorded = self.step(
                &id,
                from,
                OperationState::Failed,
                EffectState::None,
                Some(error_outcome(&error)),
            );
            return;
        }
        // Compare-and-swap from queued: if cancellation won the race, nothing is dispatched.
        if !dispatched
            && self
                .step(
                    &id,
                    OperationState::Queued,
                    OperationState::Running,
                    EffectState::None,
                    None,
                )
                .is_err()
        {
            return;
        }
        let context = EffectContext {
            broker: self.clone(),
            operation_id: id.clone(),
            cancel,
        };
        // A panic in an effect must not leave the receipt running: what it did is unknown.
        let outcome = match AssertUnwindSafe(effect(context)).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(_) => EffectOutcome::Unknown {
                effect: EffectState::Unknown,
                message: "the effect stopped abnormally; inspect the real resource".to_owned(),
            },
        };
        let (to, effect_state, recorded) = settlement(outcome);
        // The receipt is running, or cancelling if cancellation was asked for meanwhile (an
        // effect that reports `cancelled` saw the token, so it is always the latter).
        let from = if to == OperationState::Cancelled {
            OperationState::Cancelling
        } else {
            OperationState::Running
        };
        let first = self.step(&id, from, to, effect_state, Some(recorded.clone()));
        if let Err(StoreError::StateMismatch {
            current: OperationState::Cancelling,
            ..
        }) = first
        {
            // Cancellation was asked for while the effect ran: a failure that changed nothing
            // is the cancellation; anything else settles as it happened.
            let (to, effect_state) =
                if effect_state == EffectState::None && to == OperationState::Failed {
                    (OperationState::Cancelled, EffectState::None)
                } else {
                    (to, effect_state)
                };
            let _recorded = self.step(
                &id,
                OperationState::Cancelling,
                to,
                effect_state,
                Some(recorded),
            );
        }
    }

    /// One durable transition. A failure is logged and returned: the receipt then stays in
    /// its last durable state, which the next reopen turns into `outcome_unknown`.
    fn step(
        &self,
        id: &OperationId,
        from: OperationState,
        to: OperationState,
        effect: EffectState,
        outcome: Option<Outcome>,
    ) -> Result<Receipt, StoreError> {
        let result = waiting_on_disk(|| self.inner.store.transition(id, from, to, effect, outcome));
        // Moved, or the store could not write: either is news for the person's window.
        self.note_change(crate::Area::Operations);
        if let Err(error) = &result
            && !matches!(error, StoreError::StateMismatch { .. })
        {
            tracing::error!("operation {id}: could not record {from} -> {to}: {error}");
        }
        result
    }

    /// The person's answer to an `awaiting_user` operation, recorded with the step it makes
    /// (to `queued` to run, or `failed` declined).
    fn step_decided(
        &self,
        id: &OperationId,
        to: OperationState,
        outcome: Option<Outcome>,
    ) -> Result<Receipt, StoreError> {
        let result = waiting_on_disk(|| {
            self.inner.store.transition_decided(
                id,
                OperationState::AwaitingUser,
                to,
                EffectState::None,
                outcome.clone(),
                Some(Decider::Person.as_text()),
            )
        });
        self.note_change(crate::Area::Operations);
        if let Err(error) = &result
            && !matches!(error, StoreError::StateMismatch { .. })
        {
            tracing::error!("operation {id}: could not record the person's decision: {error}");
        }
        result
    }

    pub(crate) fn permit(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut permits = self.inner.permits.lock().unwrap_or_else(|e| e.into_inner());
        permits.retain(|_, permit| Arc::strong_count(permit) > 1);
        permits.entry(key.to_owned()).or_default().clone()
    }

    /// Cancels queued or waiting work; asks running work to stop. Settled work is unchanged.
    pub fn cancel_operation(&self, receipt: &Receipt) -> Result<(), ToolError> {
        let id = &receipt.operation_id;
        let (mut state, mut effect) = (receipt.state, receipt.effect_state);
        // The operation may move on between the caller's read and this step (a decision, a
        // permit, its effect settling): on a mismatch, re-read it and cancel from where it is.
        loop {
            let step = match state {
                OperationState::Queued | OperationState::AwaitingUser => self.step(
                    id,
                    state,
                    OperationState::Cancelled,
                    EffectState::None,
                    None,
                ),
                OperationState::Running => self.step(
                    id,
                    OperationState::Running,
                    OperationState::Cancelling,
                    effect,
                    None,
                ),
                _ => return Ok(()),
            };
            match step {
                Ok(_) => break,
                Err(StoreError::StateMismatch { .. }) => {
                    let current = self.inner.store.get(id).map_err(store_error)?;
                    let current = current.ok_or_else(|| {
                        ToolError::internal(format!("operation {id} vanished from the store"))
                    })?;
                    state = current.state;
                    effect = current.effect_state;
                }
                Err(error) => return Err(store_error(error)),
            }
        }
        if let Some(cancel) = self.live().get(id).map(|live| live.cancel.clone()) {
            cancel.cancel();
        }
        Ok(())
    }

    /// Operations of this instance still waiting for the person's decision, oldest first.
    pub fn awaiting_decisions(&self) -> Vec<AwaitingDecision> {
        let mut waiting: Vec<AwaitingDecision> = self
            .live()
            .values()
            .filter(|live| live.decision.is_some())
            .filter_map(|live| live.request.clone())
            .collect();
        waiting.sort_by_key(|w| w.created_at);
        waiting
    }

    /// The person's decision on an `awaiting_user` operation.
    pub fn decide(&self, id: &OperationId, approve: bool) -> Result<(), ToolError> {
        let sender = self
            .live()
            .get_mut(id)
            .and_then(|live| live.decision.take());
        match sender {
            Some(sender) => sender
                .send(approve)
                .map_err(|_| ToolError::invalid(format!("operation {id} is no longer waiting"))),
            None => Err(ToolError::invalid(format!(
                "operation {id} is not waiting for a decision (see `lomi operation show {id}`)"
            ))),
        }
    }
}

/// Runs an effect's `work` until it finishes or `cancel` fires, whichever comes first; work
/// that has finished by then is reported as finished. `None`: cancelled first (the work is
/// dropped where it stood).
pub async fn unless_cancelled<F: Future>(cancel: &CancellationToken, work: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        done = work => Some(done),
        () = cancel.cancelled() => None,
    }
}

/// Runs an effect's blocking work (file IO) off the async threads and gives its result. A
/// panic in `work` goes on as a panic of the effect, which the engine settles as
/// `outcome_unknown` like any other: what the work did is not known.
pub async fn off_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(stopped) => match stopped.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(stopped) => panic!("blocking work of an effect stopped: {stopped}"),
        },
    }
}

/// The receipt key and fingerprint of a mutation (DESIGN.md, operation engine step 2).
fn receipt_key(caller: &PairingId, mutation: &Mutation) -> (ReceiptKey, String) {
    let key = ReceiptKey {
        pairing_id: caller.clone(),
        retry_epoch: mutation.retry_epoch.clone(),
        project_id: mutation.project_id.clone(),
        tool: mutation.call.tool.tool_name(),
        request_key: mutation.request_key.clone(),
    };
    let fingerprint = lomi_store::fingerprint(
        &mutation.call.payload,
        mutation.generation.as_deref(),
        mutation.revision.as_deref(),
    );
    (key, fingerprint)
}

fn same_request(prior: Receipt, fingerprint: &str) -> Result<OperationId, ToolError> {
    if prior.fingerprint == fingerprint {
        Ok(prior.operation_id)
    } else {
        Err(store_error(StoreError::IdempotencyConflict {
            operation_id: prior.operation_id,
        }))
    }
}

fn error_outcome(error: &ToolError) -> Outcome {
    let details = error.details.clone();
    Outcome {
        result: details.map(|d| serde_json::json!({ "details": d })),
        error: Some(OutcomeError {
            code: error.code.as_str().to_owned(),
            message: error.message.clone(),
        }),
    }
}

/// The state, effect and recorded outcome an effect's outcome settles as. Failed and
/// cancelled operations that were dispatched cannot carry an unknown effect
/// (`OperationState::can_become`): an effect that cannot say what it reached settles
/// `outcome_unknown`, keeping its error's code.
fn settlement(outcome: EffectOutcome) -> (OperationState, EffectState, Outcome) {
    match outcome {
        EffectOutcome::Succeeded(result) => (
            OperationState::Succeeded,
            EffectState::Complete,
            Outcome {
                result: Some(result),
                error: None,
            },
        ),
        EffectOutcome::Failed {
            effect: EffectState::Unknown,
            error,
        } => (
            OperationState::OutcomeUnknown,
            EffectState::Unknown,
            error_outcome(&error),
        ),
        EffectOutcome::Failed { effect, error } => {
            (OperationState::Failed, effect, error_outcome(&error))
        }
        EffectOutcome::Cancelled {
            effect: EffectState::Unknown,
        } => (
            OperationState::OutcomeUnknown,
            EffectState::Unknown,
            error_outcome(&ToolError::new(
                ErrorCode::OutcomeUnknown,
                "cancelled while its effect was under way; what it did is unknown: inspect the real resource",
            )),
        ),
        EffectOutcome::Cancelled { effect } => {
            (OperationState::Cancelled, effect, Outcome::default())
        }
        EffectOutcome::Stopped(result) => (
            OperationState::Cancelled,
            EffectState::Partial,
            Outcome {
                result: Some(result),
                error: None,
            },
        ),
        EffectOutcome::Unknown { effect, message } => (
            OperationState::OutcomeUnknown,
            if effect == EffectState::Partial {
                effect
            } else {
                EffectState::Unknown
            },
            error_outcome(&ToolError::new(ErrorCode::OutcomeUnknown, message)),
        ),
    }
}

/// What a receipt that reopen recovery marked `outcome_unknown` says to its agent.
const RECOVERED_MESSAGE: &str = "Lomi stopped before this operation settled, and it was not run again: \
     its effect may or may not have happened. Inspect the real resource (re-read the file, \
     list the panels, read the terminal) before deciding anything; a deliberate new attempt \
     uses a fresh requestKey.";

/// A receipt as its connection sees it.
pub fn view(receipt: &Receipt) -> OperationView {
    let mut error = receipt.error_code.as_ref().map(|code| OperationError {
        code: serde_json::from_value(Value::String(code.clone())).unwrap_or(ErrorCode::Internal),
        message: receipt.error_message.clone().unwrap_or_default(),
    });
    if error.is_none() && receipt.state == OperationState::OutcomeUnknown {
        // Reopen recovery records no reason of its own; say what happened and what to do.
        error = Some(OperationError {
            code: ErrorCode::OutcomeUnknown,
            message: RECOVERED_MESSAGE.to_owned(),
        });
    }
    OperationView {
        operation_id: receipt.operation_id.clone(),
        tool: receipt.key.tool.0.clone(),
        state: receipt.state,
        effect_state: receipt.effect_state,
        workspace_id: receipt.workspace_id.clone(),
        project_id: receipt.key.project_id.clone(),
        retry_epoch: receipt.key.retry_epoch.clone(),
        request_key: receipt.key.request_key.clone(),
        created_at: receipt.created_at,
        updated_at: receipt.updated_at,
        settled_at: receipt.settled_at,
        result: receipt.result.clone(),
        error,
    }
}
