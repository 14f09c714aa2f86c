//! The operation engine (`Broker::operate`) as a table: each case is a starting situation, one
//! event and the outcome the seed's contract (docs/protocol.md, "Operations, revisions and
//! retries") asks for; one driver runs every case on its own broker and names the cases that fail.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lomi_broker::{
    Broker, BrokerConfig, Confirmation, EffectContext, EffectOutcome, ManualClock, Mutation,
    Permit, SeededEntropy,
};
use lomi_protocol::definition::{Preview, Subject, ToolCall};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::session::ConnectInput;
use lomi_protocol::{
    DomainRevision, EffectState, ErrorCode, OperationId, OperationState, PairingId, RequestKey,
    RetryEpoch, Tool, ToolError, WorkspaceId,
};
use lomi_store::{Maintenance, RetireSelector, StoreOptions};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use EffectState::{Complete, Partial};
use OperationState::{
    AwaitingUser, Cancelled, Cancelling, Failed, OutcomeUnknown, Queued, Running, Succeeded,
};

/// One row: a starting situation, an event, and what must follow.
struct Case {
    name: &'static str,
    given: Given,
    event: Event,
    expect: Expect,
}

/// The request a case is about: `REQUEST`, or it with some fields changed.
#[derive(Clone, Copy)]
struct Request {
    key: &'static str,
    /// The payload's one field (the fingerprint binds the whole payload).
    payload: &'static str,
    /// The runtime generation and the revision the request was made against (the
    /// fingerprint binds them too).
    generation: Option<&'static str>,
    revision: Option<&'static str>,
    confirmation: Confirm,
    find: Find,
    check: Check,
    effect: Script,
}

const REQUEST: Request = Request {
    key: "the-request",
    payload: "first",
    generation: None,
    revision: None,
    confirmation: Confirm::Policy,
    find: Find::Found,
    check: Check::Passes,
    effect: Script::Succeed,
};

/// `Confirmation` without its callback, so a case can be a constant.
#[derive(Clone, Copy)]
enum Confirm {
    Policy,
    Ask,
    Allowed,
    Declined(&'static str),
}

/// What the request's `find` gives.
#[derive(Clone, Copy)]
enum Find {
    Found,
    /// NOT_FOUND: the target is gone.
    Gone,
}

/// What the request's `check` compares.
#[derive(Clone, Copy)]
enum Check {
    Passes,
    /// The workspace must be at this revision (`Broker::check_revision`).
    Revision(u64),
}

/// What the effect does when it runs. Every run is counted.
#[derive(Clone, Copy)]
enum Script {
    Succeed,
    /// Fails with RUNTIME_UNAVAILABLE, having reached this effect.
    Fail(EffectState),
    /// Cannot tell what it did.
    Unknown,
    Panic,
    /// Says it started, then waits for the case to release it (and succeeds) or, as
    /// `OnCancel` says, for its cancel token.
    Hold(OnCancel),
}

/// What a held effect does when cancellation is asked for.
#[derive(Clone, Copy)]
enum OnCancel {
    /// Stops part-way (`EffectOutcome::Stopped`).
    Stop,
    /// Gives up having changed nothing (a failure with effect none).
    GiveUp,
    /// Ignores the token and finishes once released.
    Finish,
}

/// Where the case starts. The request is `REQUEST` unless a variant says otherwise.
#[derive(Clone, Copy)]
enum Given {
    /// A fresh connection; nothing was asked yet.
    Fresh,
    /// The request's effect is running (held until the event is over).
    Running(OnCancel),
    /// The request settled as its effect did.
    Settled(Script),
    /// Another request holds the permit (its effect running); the request, checking the
    /// workspace's revision 1, waits behind it: `queued`.
    QueuedBehind,
    /// The request asks the person (`Confirmation::Ask`) and waits: `awaiting_user`.
    AwaitingPerson,
    /// The connection's retry epoch was retired by the person's maintenance.
    RetiredEpoch,
    /// The request names a retry epoch this Lomi never handed out.
    UnknownEpoch,
    /// The connection's retry epoch is past its 24 hours.
    ExpiredEpoch,
    /// The store cannot write another receipt (a size cap, as a full disk).
    StoreFull,
    /// The store holds as many receipts as its cap admits.
    ReceiptCapReached,
}

#[derive(Clone, Copy)]
enum Event {
    /// The request is made (again, if the situation made it already).
    Request(Request),
    /// The agent cancels the request (`lomi_operation_cancel`).
    Cancel,
    /// The person decides (true: approves).
    Decide(bool),
    /// The effect holding the permit finishes.
    Release,
    /// The person adds a project to the workspace (its revision 1 → 2), then the effect
    /// holding the permit finishes.
    TargetChanges,
    /// Lomi stops (abruptly: its runtime dropped mid-effect; or by `shutdown`), starts again
    /// on the same data dir, and the agent retries the request with its original epoch.
    Reopen { crash: bool },
}

/// What must follow the event.
struct Expect {
    /// The event's call: accepted, or refused with this code.
    answer: Result<(), ErrorCode>,
    /// The request's operation once nothing runs any more (state, effect, error code), or
    /// `None`: the request has no operation at all.
    settles: Option<(OperationState, EffectState, Option<ErrorCode>)>,
    /// The states its receipt went through (the store's event feed).
    path: &'static [OperationState],
    /// How many effects ran in the whole case (the request's and any other's).
    runs: usize,
    /// Receipts the event added.
    new_receipts: u64,
    /// The error's details (the refusal's, or those recorded in the settled receipt's
    /// result), as JSON, where the engine gives them.
    details: Option<&'static str>,
}

const ACCEPTED: Result<(), ErrorCode> = Ok(());
const FRESH_PATH: &[OperationState] = &[Queued, Running, Succeeded];

const CASES: &[Case] = &[
    // ---- Operation states: effectState is separate (seed, "Operation states"). A new
    // request is reserved, runs, and settles with what its effect really reached.
    Case {
        name: "a new request runs and succeeds",
        given: Given::Fresh,
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 1,
            details: None,
        },
    },
    Case {
        name: "a new request fails having changed nothing",
        given: Given::Fresh,
        event: Event::Request(Request {
            effect: Script::Fail(EffectState::None),
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((
                Failed,
                EffectState::None,
                Some(ErrorCode::RuntimeUnavailable),
            )),
            path: &[Queued, Running, Failed],
            runs: 1,
            new_receipts: 1,
            details: None,
        },
    },
    Case {
        name: "a new request fails part-way",
        given: Given::Fresh,
        event: Event::Request(Request {
            effect: Script::Fail(Partial),
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Failed, Partial, Some(ErrorCode::RuntimeUnavailable))),
            path: &[Queued, Running, Failed],
            runs: 1,
            new_receipts: 1,
            details: None,
        },
    },
    Case {
        name: "an effect that cannot tell what it did is outcome_unknown",
        given: Given::Fresh,
        event: Event::Request(Request {
            effect: Script::Unknown,
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((
                OutcomeUnknown,
                EffectState::Unknown,
                Some(ErrorCode::OutcomeUnknown),
            )),
            path: &[Queued, Running, OutcomeUnknown],
            runs: 1,
            new_receipts: 1,
            details: None,
        },
    },
    Case {
        name: "a failure with an unknown effect is outcome_unknown and keeps its code",
        given: Given::Fresh,
        event: Event::Request(Request {
            effect: Script::Fail(EffectState::Unknown),
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((
                OutcomeUnknown,
                EffectState::Unknown,
                Some(ErrorCode::RuntimeUnavailable),
            )),
            path: &[Queued, Running, OutcomeUnknown],
            runs: 1,
            new_receipts: 1,
            details: None,
        },
    },
    Case {
        name: "a panicking effect is outcome_unknown",
        given: Given::Fresh,
        event: Event::Request(Request {
            effect: Script::Panic,
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((
                OutcomeUnknown,
                EffectState::Unknown,
                Some(ErrorCode::OutcomeUnknown),
            )),
            path: &[Queued, Running, OutcomeUnknown],
            runs: 1,
            new_receipts: 1,
            details: None,
        },
    },
    // ---- Retry identity (seed, "Retry identity"): a duplicate with the same identity and
    // arguments returns the prior operation, changed arguments IDEMPOTENCY_CONFLICT; retry
    // epochs are valid for 24 hours, on this instance, until retired.
    Case {
        name: "the same request while it runs answers its operation",
        given: Given::Running(OnCancel::Finish),
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the same request after it succeeded answers its operation",
        given: Given::Settled(Script::Succeed),
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the same request after it failed answers the failure, not a second try",
        given: Given::Settled(Script::Fail(EffectState::None)),
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((
                Failed,
                EffectState::None,
                Some(ErrorCode::RuntimeUnavailable),
            )),
            path: &[Queued, Running, Failed],
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the same request after it succeeded, its target now gone, answers its operation",
        given: Given::Settled(Script::Succeed),
        event: Event::Request(Request {
            find: Find::Gone,
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the same key with another payload while it runs is a conflict",
        given: Given::Running(OnCancel::Finish),
        event: Event::Request(Request {
            payload: "other",
            ..REQUEST
        }),
        expect: Expect {
            answer: Err(ErrorCode::IdempotencyConflict),
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the same key with another payload after it settled is a conflict",
        given: Given::Settled(Script::Succeed),
        event: Event::Request(Request {
            payload: "other",
            ..REQUEST
        }),
        expect: Expect {
            answer: Err(ErrorCode::IdempotencyConflict),
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the same key and payload against another revision is a conflict",
        given: Given::Settled(Script::Succeed),
        event: Event::Request(Request {
            revision: Some("2"),
            ..REQUEST
        }),
        expect: Expect {
            answer: Err(ErrorCode::IdempotencyConflict),
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the same key and payload against another runtime generation is a conflict",
        given: Given::Settled(Script::Succeed),
        event: Event::Request(Request {
            generation: Some("2"),
            ..REQUEST
        }),
        expect: Expect {
            answer: Err(ErrorCode::IdempotencyConflict),
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "a retry epoch this Lomi never handed out is refused before anything runs",
        given: Given::UnknownEpoch,
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: Err(ErrorCode::RetryEpochInvalid),
            settles: None,
            path: &[],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "a retired retry epoch is refused before anything runs",
        given: Given::RetiredEpoch,
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: Err(ErrorCode::RetryEpochExpired),
            settles: None,
            path: &[],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "an expired retry epoch is refused before anything runs",
        given: Given::ExpiredEpoch,
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: Err(ErrorCode::RetryEpochExpired),
            settles: None,
            path: &[],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    // ---- Identity and revision fields (seed, "Identity and revision fields"; the engine's
    // order: prior receipt, find, check, reserve, and check again under the permit).
    Case {
        name: "a target that is gone is refused with no receipt",
        given: Given::Fresh,
        event: Event::Request(Request {
            find: Find::Gone,
            ..REQUEST
        }),
        expect: Expect {
            answer: Err(ErrorCode::NotFound),
            settles: None,
            path: &[],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "a stale revision is refused with the current one and no receipt",
        given: Given::Fresh,
        event: Event::Request(Request {
            check: Check::Revision(7),
            ..REQUEST
        }),
        expect: Expect {
            answer: Err(ErrorCode::RevisionMismatch),
            settles: None,
            path: &[],
            runs: 0,
            new_receipts: 0,
            details: Some(r#"{"currentRevision": "1"}"#),
        },
    },
    Case {
        name: "queued behind the permit, it runs once the permit is free",
        given: Given::QueuedBehind,
        event: Event::Release,
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 2,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "a target changed while it waited for the permit fails when checked again",
        given: Given::QueuedBehind,
        event: Event::TargetChanges,
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Failed, EffectState::None, Some(ErrorCode::RevisionMismatch))),
            path: &[Queued, Running, Failed],
            runs: 1,
            new_receipts: 0,
            details: Some(r#"{"currentRevision": "2"}"#),
        },
    },
    // ---- Cancellation (seed, "Cancellation and restart"; states cancelling and cancelled:
    // "this does not mean rollback").
    Case {
        name: "cancelled while queued behind the permit: cancelled, no effect",
        given: Given::QueuedBehind,
        event: Event::Cancel,
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Cancelled, EffectState::None, None)),
            path: &[Queued, Cancelled],
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "cancelled while awaiting the person: cancelled, no effect",
        given: Given::AwaitingPerson,
        event: Event::Cancel,
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Cancelled, EffectState::None, None)),
            path: &[Queued, AwaitingUser, Cancelled],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "cancelled while running: the effect stops part-way",
        given: Given::Running(OnCancel::Stop),
        event: Event::Cancel,
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Cancelled, Partial, None)),
            path: &[Queued, Running, Cancelling, Cancelled],
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "cancelled while running: an effect that gave up untouched is cancelled",
        given: Given::Running(OnCancel::GiveUp),
        event: Event::Cancel,
        expect: Expect {
            answer: ACCEPTED,
            // The receipt keeps the effect's own error beside the state.
            settles: Some((
                Cancelled,
                EffectState::None,
                Some(ErrorCode::RuntimeUnavailable),
            )),
            path: &[Queued, Running, Cancelling, Cancelled],
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "cancelled while running: an effect that finishes anyway succeeded",
        given: Given::Running(OnCancel::Finish),
        event: Event::Cancel,
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: &[Queued, Running, Cancelling, Succeeded],
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "cancelled after it settled: unchanged",
        given: Given::Settled(Script::Succeed),
        event: Event::Cancel,
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    // ---- The person's decision (seed, "Operation states": awaiting_user needs the native
    // decision shown in Lomi).
    Case {
        name: "the person approves: it runs",
        given: Given::AwaitingPerson,
        event: Event::Decide(true),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: &[Queued, AwaitingUser, Queued, Running, Succeeded],
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "the person declines: USER_DENIED, no effect",
        given: Given::AwaitingPerson,
        event: Event::Decide(false),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Failed, EffectState::None, Some(ErrorCode::UserDenied))),
            path: &[Queued, AwaitingUser, Failed],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "a remembered denial: USER_DENIED without asking, no effect",
        given: Given::Fresh,
        event: Event::Request(Request {
            confirmation: Confirm::Declined("declined earlier"),
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Failed, EffectState::None, Some(ErrorCode::UserDenied))),
            path: &[Queued, Failed],
            runs: 0,
            new_receipts: 1,
            details: None,
        },
    },
    Case {
        name: "a remembered approval: it runs without asking",
        given: Given::Fresh,
        event: Event::Request(Request {
            confirmation: Confirm::Allowed,
            ..REQUEST
        }),
        expect: Expect {
            answer: ACCEPTED,
            settles: Some((Succeeded, Complete, None)),
            path: FRESH_PATH,
            runs: 1,
            new_receipts: 1,
            details: None,
        },
    },
    // ---- Restart and the store (seed, "Cancellation and restart": failure to persist the
    // reservation blocks the effect; on reopening, unfinished operations become
    // outcome_unknown and are never replayed; "Retry identity": restarting does not resume
    // old authority).
    Case {
        name: "a store that cannot reserve refuses before the effect starts",
        given: Given::StoreFull,
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: Err(ErrorCode::StoreUnavailable),
            settles: None,
            path: &[],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    // Seed, "Cancellation and restart": the store admits at most 4,096 receipts;
    // RESOURCE_EXHAUSTED requires deliberate maintenance.
    Case {
        name: "a store at its receipt cap refuses before the effect starts",
        given: Given::ReceiptCapReached,
        event: Event::Request(REQUEST),
        expect: Expect {
            answer: Err(ErrorCode::ResourceExhausted),
            settles: None,
            path: &[],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "a crash while the effect ran: outcome_unknown, and the retry runs nothing",
        given: Given::Running(OnCancel::Finish),
        event: Event::Reopen { crash: true },
        expect: Expect {
            answer: Err(ErrorCode::RetryEpochInvalid),
            settles: Some((
                OutcomeUnknown,
                EffectState::Unknown,
                Some(ErrorCode::OutcomeUnknown),
            )),
            path: &[Queued, Running, OutcomeUnknown],
            runs: 1,
            new_receipts: 0,
            details: None,
        },
    },
    Case {
        name: "a stop while it awaited the person: outcome_unknown, and the retry runs nothing",
        given: Given::AwaitingPerson,
        event: Event::Reopen { crash: false },
        expect: Expect {
            answer: Err(ErrorCode::RetryEpochInvalid),
            settles: Some((
                OutcomeUnknown,
                EffectState::Unknown,
                Some(ErrorCode::OutcomeUnknown),
            )),
            path: &[Queued, AwaitingUser, OutcomeUnknown],
            runs: 0,
            new_receipts: 0,
            details: None,
        },
    },
];

/// Runs every case, each on its own broker, data dir and runtime, and fails naming each case
/// whose outcome differs.
#[test]
fn the_engine_follows_the_table() {
    let mut failed = Vec::new();
    for case in CASES {
        if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| run(case))) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            eprintln!("case failed: {}", case.name);
            failed.push(format!("- {}: {message}", case.name));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        CASES.len(),
        failed.join("\n")
    );
}

/// The longest any one wait of a case may take; past it the case fails saying what it waited
/// for. Waits end on events (the broker's change feed, the effect's signal), never on time.
const LIMIT: Duration = Duration::from_secs(60);

fn run(case: &Case) {
    let setup = Setup::new();
    // Declared after `setup`, so dropped first: a failed case's tasks end before its data dir
    // goes.
    let mut runtime = runtime();
    let mut world = runtime.block_on(World::open(&setup));
    runtime.block_on(world.given(case.given, &setup));
    let receipts_before = world.receipts();
    let answer = match case.event {
        Event::Reopen { crash: true } => {
            // A crash: the runtime goes with every task of the broker, mid-effect, so nothing
            // settles the receipt; the store is left as the last commit left it.
            world.broker = None;
            drop(runtime);
            runtime = self::runtime();
            world.broker = Some(setup.start(2, StoreOptions::default()));
            runtime
                .block_on(world.request(REQUEST, &world.probe.clone()))
                .map(Some)
        }
        event => runtime.block_on(world.event(event, &setup)),
    };
    // The answered operation is the request's own (`check` holds it to that): wait for it to
    // settle too, not only for one an earlier step made.
    if let (Ok(Some(id)), None) = (&answer, &world.subject) {
        world.subject = Some(id.clone());
    }
    runtime.block_on(world.finish());
    world.check(&case.expect, answer, receipts_before);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

struct Setup {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            dir: tempfile::tempdir().expect("temp dir"),
            clock: Arc::new(ManualClock::default()),
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn project(&self, name: &str) -> PathBuf {
        let root = self.dir.path().join("projects").join(name);
        std::fs::create_dir_all(&root).expect("project dir");
        root
    }

    /// A broker on this data dir; each start takes its own seed, so instance ids differ as
    /// they do across real restarts. A short settle wait: calls answer an operation still in
    /// flight soon, and the case waits for what it expects on the change feed.
    fn start(&self, seed: u64, store_options: StoreOptions) -> Broker {
        let mut config = BrokerConfig::new(self.data_dir());
        config.clock = self.clock.clone();
        config.entropy = Arc::new(SeededEntropy::new(seed));
        config.settle_wait = Duration::from_millis(50);
        config.store_options = store_options;
        Broker::start(config).expect("start broker")
    }
}

/// Counts effect runs and lets a case hold an effect and learn that it started.
#[derive(Clone)]
struct Probe {
    runs: Arc<AtomicUsize>,
    started: mpsc::UnboundedSender<()>,
    released: watch::Receiver<bool>,
}

/// One case's broker, workspace, token pairing (it survives a restart), connection and probe.
struct World {
    /// `None` only while Lomi is down during a crash.
    broker: Option<Broker>,
    workspace: WorkspaceId,
    pairing: PairingId,
    epoch: RetryEpoch,
    probe: Probe,
    started: mpsc::UnboundedReceiver<()>,
    release: watch::Sender<bool>,
    /// The request's operation, once it has one.
    subject: Option<OperationId>,
    /// Another request's operation that holds the permit.
    holder: Option<OperationId>,
}

type Effect = Pin<Box<dyn Future<Output = EffectOutcome> + Send>>;

impl World {
    async fn open(setup: &Setup) -> World {
        let broker = setup.start(1, StoreOptions::default());
        let workspace = broker
            .workspace_add("Alpha", &setup.project("alpha"))
            .expect("add workspace")
            .id;
        let pairing = broker
            .pairing_create("agent", std::slice::from_ref(&workspace), None)
            .expect("a token pairing")
            .pairing_id;
        let epoch = connect(&broker, &pairing, &workspace);
        let (started_tx, started) = mpsc::unbounded_channel();
        let (release, released) = watch::channel(false);
        World {
            broker: Some(broker),
            workspace,
            pairing,
            epoch,
            probe: Probe {
                runs: Arc::new(AtomicUsize::new(0)),
                started: started_tx,
                released,
            },
            started,
            release,
            subject: None,
            holder: None,
        }
    }

    fn broker(&self) -> &Broker {
        self.broker.as_ref().expect("Lomi is up")
    }

    async fn given(&mut self, given: Given, setup: &Setup) {
        match given {
            Given::Fresh => {}
            Given::Running(on_cancel) => {
                let request = Request {
                    effect: Script::Hold(on_cancel),
                    ..REQUEST
                };
                self.admit(request).await;
                self.effect_started().await;
                let id = self.subject.clone().expect("the request's operation");
                wait_for(self.broker(), &id, "running", |v| v.state == Running).await;
            }
            Given::Settled(effect) => {
                let id = self.admit(Request { effect, ..REQUEST }).await;
                wait_for(self.broker(), &id, "settled", |v| v.state.is_settled()).await;
            }
            Given::QueuedBehind => {
                let holder = Request {
                    key: "the-holder",
                    effect: Script::Hold(OnCancel::Finish),
                    ..REQUEST
                };
                let holder = self.request(holder, &self.probe.clone()).await;
                self.holder = Some(holder.expect("the holder admitted"));
                self.effect_started().await;
                let id = self
                    .admit(Request {
                        check: Check::Revision(1),
                        ..REQUEST
                    })
                    .await;
                let view = self.broker().operation(&id).expect("the request");
                assert_eq!(view.state, Queued, "behind the holder: {view:#?}");
            }
            Given::AwaitingPerson => {
                let id = self
                    .admit(Request {
                        confirmation: Confirm::Ask,
                        ..REQUEST
                    })
                    .await;
                wait_for(self.broker(), &id, "awaiting_user", |v| {
                    v.state == AwaitingUser
                })
                .await;
            }
            Given::RetiredEpoch => {
                let broker = self.broker();
                broker
                    .store()
                    .reconcile(&Maintenance {
                        retire: Some(RetireSelector::Epoch(self.epoch.clone())),
                        idle: broker.idle_rule(),
                    })
                    .expect("retire the epoch");
            }
            Given::UnknownEpoch => self.epoch = RetryEpoch::from_random([7; 16]),
            Given::ExpiredEpoch => setup.clock.advance(lomi_broker::RETRY_EPOCH_LIFETIME),
            Given::StoreFull => {
                // SQLite's `max_page_count` never goes below the pages in use: the store
                // is capped at its present size.
                self.restart(
                    setup,
                    StoreOptions {
                        max_page_count: Some(1),
                        ..StoreOptions::default()
                    },
                )
                .await;
                self.fill(ErrorCode::StoreUnavailable).await;
            }
            Given::ReceiptCapReached => {
                let mut options = StoreOptions::default();
                options.caps.receipts = 1;
                self.restart(setup, options).await;
                self.fill(ErrorCode::ResourceExhausted).await;
            }
        }
    }

    /// Stops Lomi and starts it again on the same data dir with `options`, and connects
    /// again (the old epoch was this instance's).
    async fn restart(&mut self, setup: &Setup, options: StoreOptions) {
        let broker = self.broker.take().expect("Lomi is up");
        broker.shutdown().await;
        drop(broker);
        let broker = setup.start(2, options);
        self.epoch = connect(&broker, &self.pairing, &self.workspace);
        self.broker = Some(broker);
    }

    /// Admits other requests until a reservation is refused with `code`. Their effects are
    /// not the case's: they are not counted.
    async fn fill(&mut self, code: ErrorCode) {
        let (started, _) = mpsc::unbounded_channel();
        let filler = Probe {
            runs: Arc::new(AtomicUsize::new(0)),
            started,
            released: self.probe.released.clone(),
        };
        for n in 0..2_000 {
            let key = format!("filler-{n}");
            if let Err(error) = self.request_as(&key, REQUEST, &filler).await {
                assert_eq!(error.code, code, "{error}");
                return;
            }
        }
        panic!("no reservation was refused with {code}");
    }

    /// Makes the request as the case's own (its operation is the subject).
    async fn admit(&mut self, request: Request) -> OperationId {
        let id = self
            .request(request, &self.probe.clone())
            .await
            .expect("the request admitted");
        self.subject = Some(id.clone());
        id
    }

    async fn effect_started(&mut self) {
        tokio::time::timeout(LIMIT, self.started.recv())
            .await
            .expect("waited for the effect to start")
            .expect("the effect's signal");
    }

    async fn event(
        &mut self,
        event: Event,
        setup: &Setup,
    ) -> Result<Option<OperationId>, ToolError> {
        let broker = self.broker().clone();
        match event {
            Event::Request(request) => self.request(request, &self.probe.clone()).await.map(Some),
            Event::Cancel => {
                let id = self.subject.clone().expect("an operation to cancel");
                let view = broker.operation_cancel(&self.pairing, &id).await?;
                Ok(Some(view.operation_id))
            }
            Event::Decide(approve) => {
                let id = self.subject.clone().expect("an operation to decide");
                broker.decide(&id, approve).map(|()| None)
            }
            Event::Release => {
                self.release_effects();
                Ok(None)
            }
            Event::TargetChanges => {
                broker.project_add(&self.workspace, &setup.project("beta"))?;
                self.release_effects();
                Ok(None)
            }
            Event::Reopen { crash: true } => unreachable!("the driver crashes Lomi itself"),
            Event::Reopen { crash: false } => {
                broker.shutdown().await;
                drop(broker);
                self.broker = None;
                self.broker = Some(setup.start(2, StoreOptions::default()));
                self.request(REQUEST, &self.probe.clone()).await.map(Some)
            }
        }
    }

    /// One call of `Broker::operate` with this request, its effect counted by `probe`;
    /// answers the operation.
    async fn request(&self, request: Request, probe: &Probe) -> Result<OperationId, ToolError> {
        self.request_as(request.key, request, probe).await
    }

    /// `request` under another request key.
    async fn request_as(
        &self,
        key: &str,
        request: Request,
        probe: &Probe,
    ) -> Result<OperationId, ToolError> {
        let mutation = Mutation {
            // Any mutating tool that the default policy runs without asking.
            call: ToolCall {
                tool: Tool::AndroidAttach,
                payload: json!({ "name": request.payload }),
                preview: Preview::Described,
                subject: Subject::None,
                panel: None,
            },
            retry_epoch: self.epoch.clone(),
            request_key: RequestKey::parse(key).expect("request key"),
            workspace_id: self.workspace.clone(),
            project_id: None,
            generation: request.generation.map(str::to_owned),
            revision: request.revision.map(str::to_owned),
            permit: Permit::Workspace(self.workspace.clone()),
        };
        let confirmation = match request.confirmation {
            Confirm::Policy => Confirmation::Policy,
            Confirm::Ask => Confirmation::Ask { remember: None },
            Confirm::Allowed => Confirmation::Allowed,
            Confirm::Declined(message) => Confirmation::Declined(message.to_owned()),
        };
        let find = async move {
            match request.find {
                Find::Found => Ok(()),
                Find::Gone => Err(ToolError::not_found("the target is gone")),
            }
        };
        let workspace = self.workspace.clone();
        let check = move |broker: &Broker, (): &()| match request.check {
            Check::Passes => Ok(()),
            Check::Revision(expected) => {
                broker.check_revision(&workspace, DomainRevision(expected))
            }
        };
        let (script, probe) = (request.effect, probe.clone());
        let run =
            move |(), context: EffectContext| -> Effect { Box::pin(probe.run(script, context)) };
        self.broker()
            .operate(&self.pairing, mutation, confirmation, find, check, run)
            .await
            .map(|view| view.operation_id)
    }

    fn release_effects(&self) {
        self.release.send_replace(true);
    }

    /// Lets every held effect finish and waits until the request's operation and the
    /// holder's have settled.
    async fn finish(&mut self) {
        self.release_effects();
        let broker = self.broker().clone();
        for id in [&self.subject, &self.holder].into_iter().flatten() {
            wait_for(&broker, id, "settled", |v| v.state.is_settled()).await;
        }
    }

    fn receipts(&self) -> u64 {
        let broker = self.broker();
        broker
            .store()
            .status(&broker.idle_rule())
            .expect("store status")
            .receipts
    }

    fn check(
        &mut self,
        expect: &Expect,
        answer: Result<Option<OperationId>, ToolError>,
        receipts_before: u64,
    ) {
        let broker = self.broker().clone();
        let refusal = match answer {
            Ok(id) => {
                assert_eq!(expect.answer, Ok(()), "the event was accepted ({id:?})");
                if let Some(id) = id {
                    // An answered operation is always the request's own: the same request
                    // answers its prior operation, never a new one.
                    match &self.subject {
                        Some(subject) => assert_eq!(&id, subject, "another operation answered"),
                        None => self.subject = Some(id),
                    }
                }
                None
            }
            Err(error) => {
                assert_eq!(
                    Err(error.code),
                    expect.answer,
                    "the event was refused: {error}"
                );
                Some(error)
            }
        };
        let view = self
            .subject
            .as_ref()
            .map(|id| broker.operation(id).expect("the request's operation"));
        assert_eq!(
            view.as_ref()
                .map(|v| (v.state, v.effect_state, v.error.as_ref().map(|e| e.code))),
            expect.settles,
            "where the request's operation settled: {view:#?}"
        );
        let path: Vec<OperationState> = match &self.subject {
            Some(id) => broker
                .store()
                .events_of(id, 100)
                .expect("the operation's events")
                .into_iter()
                .map(|event| event.state)
                .collect(),
            None => Vec::new(),
        };
        assert_eq!(path, expect.path, "the states the receipt went through");
        assert_eq!(
            self.probe.runs.load(Ordering::SeqCst),
            expect.runs,
            "effect runs"
        );
        assert_eq!(
            self.receipts(),
            receipts_before + expect.new_receipts,
            "receipts after the event ({receipts_before} before it)"
        );
        let details = match (&refusal, &view) {
            (Some(error), _) => error.details.clone(),
            (None, Some(view)) => view
                .result
                .as_ref()
                .and_then(|result| result.get("details").cloned()),
            (None, None) => None,
        };
        let expected: Option<Value> = expect
            .details
            .map(|text| serde_json::from_str(text).expect("the case's details are JSON"));
        assert_eq!(details, expected, "the error's details");
    }
}

impl Probe {
    async fn run(self, script: Script, context: EffectContext) -> EffectOutcome {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let failure = || ToolError::new(ErrorCode::RuntimeUnavailable, "the runtime went away");
        match script {
            Script::Succeed => EffectOutcome::Succeeded(json!({ "done": true })),
            Script::Fail(effect) => EffectOutcome::Failed {
                effect,
                error: failure(),
            },
            Script::Unknown => EffectOutcome::Unknown {
                effect: EffectState::Unknown,
                message: "the device stopped answering".to_owned(),
            },
            Script::Panic => panic!("an effect that fails in a way nobody planned for"),
            Script::Hold(on_cancel) => {
                // No one listening is fine: only cases that wait for the start listen.
                let _listened = self.started.send(());
                let mut released = self.released.clone();
                let release = async move { released.wait_for(|released| *released).await.is_ok() };
                let finished = EffectOutcome::Succeeded(json!({ "done": true }));
                match on_cancel {
                    OnCancel::Finish => {
                        release.await;
                        finished
                    }
                    OnCancel::Stop | OnCancel::GiveUp => tokio::select! {
                        _released = release => finished,
                        () = context.cancel.cancelled() => match on_cancel {
                            OnCancel::Stop => EffectOutcome::Stopped(json!({ "done": "half" })),
                            _ => EffectOutcome::Failed { effect: EffectState::None, error: failure() },
                        },
                    },
                }
            }
        }
    }
}

fn connect(broker: &Broker, caller: &PairingId, workspace: &WorkspaceId) -> RetryEpoch {
    broker
        .connect(
            caller,
            &ConnectInput {
                workspace_id: workspace.clone(),
            },
        )
        .expect("connect")
        .retry_epoch
}

/// Waits on the broker's change feed (every receipt step moves it) until the operation is
/// `what`, as `done` tells.
async fn wait_for(
    broker: &Broker,
    id: &OperationId,
    what: &str,
    done: impl Fn(&OperationView) -> bool,
) -> OperationView {
    let mut changes = broker.changes();
    let waited = tokio::time::timeout(LIMIT, async {
        // A new receiver has seen every change so far, and `changed` marks what it saw: a step
        // after the read below wakes the wait, one before it is in the read.
        loop {
            let view = broker.operation(id).expect("the operation");
            if done(&view) {
                return view;
            }
            changes.changed().await.expect("the broker's change feed");
        }
    })
    .await;
    waited.unwrap_or_else(|_| {
        panic!(
            "operation {id} was not {what} within {LIMIT:?}: {:#?}",
            broker.operation(id)
        )
    })
}
