//! Integration tests of the broker over a real store in a temp data dir, driven the way the MCP
//! layer drives it: pairings and grants, retries, privacy of receipts, restarts, epoch expiry,
//! the person's decisions (by policy, asked by a tool, remembered), concurrency, the event feed,
//! failed domain saves and the removal of a panel.

use lomi_protocol::definition::{Preview, Subject, ToolCall};
use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lomi_broker::{Broker, BrokerConfig, DOMAIN_FILE, ManualClock, SeededEntropy};
use lomi_protocol::tools::operations::{EventsReadInput, OperationGetInput, OperationView};
use lomi_protocol::tools::session::{
    ConnectInput, PairingState, PanelListInput, RenameChange, WorkspaceChange,
    WorkspaceUpdateInput, WorkspaceUpdateResult,
};
use lomi_protocol::{
    DomainRevision, EffectState, ErrorCode, OperationId, OperationState, PairingId, RequestKey,
    RetryEpoch, Tool, ToolError, WorkspaceId,
};

const UPDATE: &str = "lomi_workspace_update";

struct Setup {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    settle_wait: Duration,
}

fn setup() -> Setup {
    Setup {
        dir: tempfile::tempdir().expect("temp dir"),
        clock: Arc::new(ManualClock::default()),
        settle_wait: Duration::from_secs(2),
    }
}

impl Setup {
    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Starts a broker on this setup's data dir; each start of one test takes its own seed, so
    /// instance ids differ as they do across real restarts.
    fn start(&self, seed: u64) -> Broker {
        let mut config = BrokerConfig::new(self.data_dir());
        config.clock = self.clock.clone();
        config.entropy = Arc::new(SeededEntropy::new(seed));
        config.settle_wait = self.settle_wait;
        Broker::start(config).expect("start broker")
    }

    /// Adds a workspace over a fresh project directory.
    fn workspace(&self, broker: &Broker, name: &str) -> WorkspaceId {
        let root = self
            .dir
            .path()
            .join("projects")
            .join(name.replace(' ', "-"));
        std::fs::create_dir_all(&root).expect("project dir");
        broker.workspace_add(name, &root).expect("add workspace").id
    }
}

/// A session pairing the person approved for one workspace.
fn approved(broker: &Broker, client: &str, grant: &WorkspaceId) -> PairingId {
    let id = broker
        .pairing_begin(client, None)
        .expect("a pending pairing");
    broker
        .pairing_approve(&id, std::slice::from_ref(grant))
        .expect("approve");
    id
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

fn rename(
    workspace: &WorkspaceId,
    revision: u64,
    epoch: &RetryEpoch,
    key: &str,
    name: &str,
) -> WorkspaceUpdateInput {
    WorkspaceUpdateInput {
        workspace_id: workspace.clone(),
        expected_revision: DomainRevision(revision),
        retry_epoch: epoch.clone(),
        request_key: RequestKey::parse(key).expect("request key"),
        change: WorkspaceChange::Rename(RenameChange {
            name: name.to_owned(),
        }),
    }
}

fn by_id(id: &OperationId) -> OperationGetInput {
    OperationGetInput::ById(id.clone())
}

fn by_key(epoch: &RetryEpoch, key: &str, tool: &str) -> OperationGetInput {
    OperationGetInput::ByKey {
        retry_epoch: epoch.clone(),
        request_key: RequestKey::parse(key).expect("request key"),
        tool: tool.to_owned(),
        project_id: None,
    }
}

/// The error of a call that must fail with `code`.
fn expect_error<T: Debug>(what: &str, result: Result<T, ToolError>, code: ErrorCode) -> ToolError {
    match result {
        Ok(value) => panic!("{what}: expected {code}, got Ok({value:#?})"),
        Err(error) => {
            assert_eq!(error.code, code, "{what}: {error}");
            error
        }
    }
}

/// Polls `operation_get` until the operation is in `state` (or settled elsewhere, which fails).
async fn wait_state(
    broker: &Broker,
    caller: &PairingId,
    id: &OperationId,
    state: OperationState,
) -> OperationView {
    for _ in 0..500 {
        let view = broker
            .operation_get(caller, &by_id(id))
            .expect("operation_get");
        if view.state == state {
            return view;
        }
        assert!(
            !view.state.is_settled(),
            "operation {id} settled as {} while waiting for {state}: {view:#?}",
            view.state
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("operation {id} never reached {state}");
}

/// Polls the person's view of an operation until it is settled.
async fn wait_settled(broker: &Broker, id: &OperationId) -> OperationView {
    for _ in 0..500 {
        let view = broker.operation(id).expect("operation");
        if view.state.is_settled() {
            return view;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("operation {id} never settled: {:#?}", broker.operation(id));
}

fn workspace_state(broker: &Broker, id: &WorkspaceId) -> (String, DomainRevision) {
    let workspace = broker
        .workspaces()
        .into_iter()
        .find(|w| &w.id == id)
        .expect("workspace");
    (workspace.name, workspace.revision)
}

fn assert_succeeded(view: &OperationView) -> WorkspaceUpdateResult {
    assert_eq!(view.state, OperationState::Succeeded, "{view:#?}");
    assert_eq!(view.effect_state, EffectState::Complete, "{view:#?}");
    serde_json::from_value(view.result.clone().expect("a result")).expect("typed result")
}

fn assert_failed(view: &OperationView, code: ErrorCode) {
    assert_eq!(view.state, OperationState::Failed, "{view:#?}");
    assert_eq!(view.effect_state, EffectState::None, "{view:#?}");
    assert_eq!(view.error.as_ref().map(|e| e.code), Some(code), "{view:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_gates_every_tool_and_grants_hide_other_workspaces() {
    let setup = setup();
    let broker = setup.start(1);
    let alpha = setup.workspace(&broker, "Alpha");
    let secret = setup.workspace(&broker, "Secret Beta");

    let pairing = broker
        .pairing_begin("Claude Code", None)
        .expect("a pending pairing");
    let status = broker
        .pairing_status(&pairing)
        .expect("status while pending");
    assert_eq!(status.state, PairingState::Pending);
    assert!(
        status.message.contains(&status.verification_code),
        "{status:?}"
    );
    let error = expect_error(
        "workspace_list while pending",
        broker.workspace_list(&pairing),
        ErrorCode::PairingRequired,
    );
    for needle in [
        status.verification_code.as_str(),
        "Lomi's window",
        "lomi pairing approve",
        pairing.as_str(),
    ] {
        assert!(error.message.contains(needle), "{needle:?} not in {error}");
    }
    let connect_input = ConnectInput {
        workspace_id: alpha.clone(),
    };
    expect_error(
        "connect while pending",
        broker.connect(&pairing, &connect_input),
        ErrorCode::PairingRequired,
    );

    broker
        .pairing_approve(&pairing, std::slice::from_ref(&alpha))
        .expect("approve");
    let listed: Vec<WorkspaceId> = broker
        .workspace_list(&pairing)
        .expect("list")
        .workspaces
        .into_iter()
        .map(|w| w.workspace_id)
        .collect();
    assert_eq!(listed, vec![alpha.clone()]);
    let panels = broker
        .panel_list(
            &pairing,
            &PanelListInput {
                workspace_id: alpha.clone(),
            },
        )
        .expect("panels of a granted workspace");
    assert_eq!(panels.domain_revision, DomainRevision(1));

    // An existing but ungranted workspace reads exactly like one that does not exist.
    let missing = WorkspaceId::parse("ws_missing").expect("id");
    for target in [&secret, &missing] {
        let panel_error = expect_error(
            "panel_list of an ungranted workspace",
            broker.panel_list(
                &pairing,
                &PanelListInput {
                    workspace_id: target.clone(),
                },
            ),
            ErrorCode::NotFound,
        );
        let connect_error = expect_error(
            "connect to an ungranted workspace",
            broker.connect(
                &pairing,
                &ConnectInput {
                    workspace_id: target.clone(),
                },
            ),
            ErrorCode::NotFound,
        );
        for error in [panel_error, connect_error] {
            assert!(!error.message.contains("Secret Beta"), "{error}");
            assert_eq!(
                error.message.replace(target.as_str(), "<id>"),
                "no workspace <id> among those granted to this client"
            );
        }
    }

    let epoch = connect(&broker, &pairing, &alpha);
    let earlier = broker
        .workspace_update(&pairing, rename(&alpha, 1, &epoch, "k1", "Alpha 2"))
        .await
        .expect("update");
    assert_succeeded(&earlier);

    broker.pairing_revoke(&pairing).expect("revoke");
    expect_error(
        "list after revoke",
        broker.workspace_list(&pairing),
        ErrorCode::PairingRevoked,
    );
    expect_error(
        "operation_get after revoke",
        broker.operation_get(&pairing, &by_id(&earlier.operation_id)),
        ErrorCode::PairingRevoked,
    );
    expect_error(
        "update after revoke",
        broker
            .workspace_update(&pairing, rename(&alpha, 2, &epoch, "k2", "Alpha 3"))
            .await,
        ErrorCode::PairingRevoked,
    );
    assert_eq!(
        broker.pairing_status(&pairing).expect("status").state,
        PairingState::Revoked
    );

    let denied = broker
        .pairing_begin("Unwanted", None)
        .expect("a pending pairing");
    broker.pairing_deny(&denied).expect("deny");
    expect_error(
        "list after deny",
        broker.workspace_list(&denied),
        ErrorCode::PairingDenied,
    );
    expect_error(
        "connect after deny",
        broker.connect(&denied, &connect_input),
        ErrorCode::PairingDenied,
    );
    assert_eq!(
        broker.pairing_status(&denied).expect("status").state,
        PairingState::Denied
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_is_keyed_fingerprinted_and_compared_by_revision() {
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let connection = broker
        .connect(
            &pairing,
            &ConnectInput {
                workspace_id: workspace.clone(),
            },
        )
        .expect("connect");
    assert_eq!(connection.domain_revision, DomainRevision(1));
    let epoch = connection.retry_epoch;

    let original = rename(&workspace, 1, &epoch, "rename-1", "Renamed");
    let first = broker
        .workspace_update(&pairing, original.clone())
        .await
        .expect("update");
    let result = assert_succeeded(&first);
    assert_eq!(result.workspace.name, "Renamed");
    assert_eq!(result.workspace.domain_revision, DomainRevision(2));

    let found = broker
        .operation_get(&pairing, &by_id(&first.operation_id))
        .expect("by id");
    assert_eq!(found, first);
    let found = broker
        .operation_get(&pairing, &by_key(&epoch, "rename-1", UPDATE))
        .expect("by key");
    assert_eq!(found, first);
    expect_error(
        "by key with another tool",
        broker.operation_get(
            &pairing,
            &by_key(&epoch, "rename-1", "lomi_terminal_create"),
        ),
        ErrorCode::NotFound,
    );

    let retry = broker
        .workspace_update(&pairing, original.clone())
        .await
        .expect("retry");
    assert_eq!(retry.operation_id, first.operation_id);
    assert_eq!(retry.state, OperationState::Succeeded);
    assert_eq!(
        workspace_state(&broker, &workspace),
        ("Renamed".to_owned(), DomainRevision(2))
    );
    assert_eq!(broker.operations(100).expect("operations").len(), 1);

    expect_error(
        "same key, other payload",
        broker
            .workspace_update(&pairing, rename(&workspace, 1, &epoch, "rename-1", "Other"))
            .await,
        ErrorCode::IdempotencyConflict,
    );
    let stale = expect_error(
        "fresh key, stale revision",
        broker
            .workspace_update(&pairing, rename(&workspace, 1, &epoch, "rename-2", "Other"))
            .await,
        ErrorCode::RevisionMismatch,
    );
    assert_eq!(
        stale.details,
        Some(serde_json::json!({ "currentRevision": "2" }))
    );

    // The original request, now stale, still finds its receipt: lookup comes before precheck.
    let late_retry = broker
        .workspace_update(&pairing, original)
        .await
        .expect("late retry");
    assert_eq!(late_retry.operation_id, first.operation_id);
    assert_succeeded(&late_retry);
    assert_eq!(
        workspace_state(&broker, &workspace),
        ("Renamed".to_owned(), DomainRevision(2))
    );
    assert_eq!(broker.operations(100).expect("operations").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_are_visible_only_to_their_own_pairing() {
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Shared");
    let owner = approved(&broker, "owner", &workspace);
    let other = approved(&broker, "other", &workspace);
    let epoch = connect(&broker, &owner, &workspace);
    let operation = broker
        .workspace_update(&owner, rename(&workspace, 1, &epoch, "k", "Renamed"))
        .await
        .expect("update");
    assert_succeeded(&operation);
    let id = &operation.operation_id;

    let other_epoch = connect(&broker, &other, &workspace);
    let owner_second_epoch = connect(&broker, &owner, &workspace);
    let cases = [
        ("other pairing, by id", &other, by_id(id)),
        (
            "other pairing, by the owner's key",
            &other,
            by_key(&epoch, "k", UPDATE),
        ),
        (
            "other pairing, by key with its own epoch",
            &other,
            by_key(&other_epoch, "k", UPDATE),
        ),
        (
            "owner, by key with another epoch",
            &owner,
            by_key(&owner_second_epoch, "k", UPDATE),
        ),
    ];
    for (what, caller, input) in cases {
        let error = expect_error(
            what,
            broker.operation_get(caller, &input),
            ErrorCode::NotFound,
        );
        assert!(!error.message.contains(id.as_str()), "{what}: {error}");
    }
    expect_error(
        "other pairing cancels",
        broker.operation_cancel(&other, id).await,
        ErrorCode::NotFound,
    );
    expect_error(
        "other pairing uses the owner's epoch",
        broker
            .workspace_update(&other, rename(&workspace, 2, &epoch, "k", "Renamed"))
            .await,
        ErrorCode::RetryEpochInvalid,
    );
    let own = broker
        .operation_get(&owner, &by_key(&epoch, "k", UPDATE))
        .expect("the owner's own key");
    assert_eq!(&own.operation_id, id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_receipts_and_token_pairings_but_not_epochs() {
    let setup = Setup {
        settle_wait: Duration::from_millis(100),
        ..setup()
    };
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let created = broker
        .pairing_create("CI bot", std::slice::from_ref(&workspace), None)
        .expect("create pairing");
    let session = approved(&broker, "session agent", &workspace);
    let epoch = connect(&broker, &created.pairing_id, &workspace);
    let done = broker
        .workspace_update(
            &created.pairing_id,
            rename(&workspace, 1, &epoch, "k1", "Renamed"),
        )
        .await
        .expect("update");
    assert_succeeded(&done);
    broker.set_confirmation(UPDATE, true).expect("policy");
    let waiting = broker
        .workspace_update(
            &created.pairing_id,
            rename(&workspace, 2, &epoch, "k2", "Never"),
        )
        .await
        .expect("update awaiting the person");
    wait_state(
        &broker,
        &created.pairing_id,
        &waiting.operation_id,
        OperationState::AwaitingUser,
    )
    .await;
    assert!(
        Broker::start(BrokerConfig::new(setup.data_dir())).is_err(),
        "a second broker must not open a data dir that one already owns"
    );

    broker.shutdown().await;
    let first_instance = broker.instance_id().clone();
    drop(broker);
    let broker = setup.start(2);
    assert_ne!(broker.instance_id(), &first_instance);
    assert_eq!(broker.recovered_operations(), 1);

    assert_eq!(
        broker.pairing_by_secret(&created.token),
        Some(created.pairing_id.clone())
    );
    assert_eq!(
        broker
            .pairing_status(&created.pairing_id)
            .expect("status")
            .state,
        PairingState::Approved
    );
    assert_eq!(
        broker
            .workspace_list(&created.pairing_id)
            .expect("list")
            .workspaces
            .len(),
        1
    );
    expect_error(
        "a session pairing after restart",
        broker.workspace_list(&session),
        ErrorCode::PairingRequired,
    );
    expect_error(
        "the old epoch after restart",
        broker
            .workspace_update(
                &created.pairing_id,
                rename(&workspace, 2, &epoch, "k3", "Again"),
            )
            .await,
        ErrorCode::RetryEpochInvalid,
    );
    assert_eq!(
        workspace_state(&broker, &workspace),
        ("Renamed".to_owned(), DomainRevision(2))
    );

    let listed: Vec<OperationId> = broker
        .operations(100)
        .expect("operations")
        .into_iter()
        .map(|o| o.operation_id)
        .collect();
    assert_eq!(
        listed,
        vec![waiting.operation_id.clone(), done.operation_id.clone()]
    );
    assert_eq!(
        broker.operation(&done.operation_id).expect("done").state,
        OperationState::Succeeded
    );
    let unknown = broker.operation(&waiting.operation_id).expect("waiting");
    assert_eq!(
        unknown.state,
        OperationState::OutcomeUnknown,
        "{unknown:#?}"
    );
    assert_eq!(unknown.effect_state, EffectState::Unknown);
    expect_error(
        "deciding an operation of the previous instance",
        broker.decide(&waiting.operation_id, true),
        ErrorCode::InvalidArgument,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_epoch_expires_after_24_hours() {
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);

    setup
        .clock
        .advance(Duration::from_secs(24 * 60 * 60) - Duration::from_millis(1));
    let last = broker
        .workspace_update(
            &pairing,
            rename(&workspace, 1, &epoch, "k1", "Just in time"),
        )
        .await
        .expect("update just before expiry");
    assert_succeeded(&last);

    setup.clock.advance(Duration::from_millis(1));
    expect_error(
        "update after expiry",
        broker
            .workspace_update(&pairing, rename(&workspace, 2, &epoch, "k2", "Too late"))
            .await,
        ErrorCode::RetryEpochExpired,
    );
    expect_error(
        "events after expiry",
        broker.events_read(
            &pairing,
            &EventsReadInput {
                retry_epoch: epoch.clone(),
                cursor: None,
                max_events: None,
            },
        ),
        ErrorCode::RetryEpochExpired,
    );
    let fresh = connect(&broker, &pairing, &workspace);
    let view = broker
        .workspace_update(&pairing, rename(&workspace, 2, &fresh, "k2", "Fresh"))
        .await
        .expect("update with a fresh epoch");
    assert_succeeded(&view);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaiting_user_waits_for_the_persons_decision() {
    let setup = Setup {
        settle_wait: Duration::from_millis(100),
        ..setup()
    };
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);
    broker.set_confirmation(UPDATE, true).expect("policy");
    expect_error(
        "confirmation for a read-only tool",
        broker.set_confirmation("lomi_workspace_list", true),
        ErrorCode::InvalidArgument,
    );

    // Approved: it runs.
    let approved_op = broker
        .workspace_update(&pairing, rename(&workspace, 1, &epoch, "k1", "Approved"))
        .await
        .expect("update");
    let id = approved_op.operation_id;
    let waiting = wait_state(&broker, &pairing, &id, OperationState::AwaitingUser).await;
    assert_eq!(waiting.effect_state, EffectState::None);
    assert_eq!(workspace_state(&broker, &workspace).1, DomainRevision(1));
    // The person is shown exactly what waits: whose, which tool, with which arguments.
    let asked = broker.awaiting_decisions();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(
        (
            &asked[0].operation_id,
            asked[0].tool.name(),
            &asked[0].pairing_id
        ),
        (&id, UPDATE, &pairing)
    );
    assert_eq!(asked[0].workspace_id, workspace);
    assert_eq!(asked[0].arguments["change"]["rename"]["name"], "Approved");
    // And what it will do in their words, read when it started waiting.
    assert_eq!(
        asked[0].effect.summary,
        "Rename the workspace Alpha to Approved"
    );
    broker.decide(&id, true).expect("approve");
    assert_succeeded(&wait_settled(&broker, &id).await);
    assert!(broker.awaiting_decisions().is_empty());
    assert_eq!(
        workspace_state(&broker, &workspace),
        ("Approved".to_owned(), DomainRevision(2))
    );
    expect_error(
        "deciding twice",
        broker.decide(&id, true),
        ErrorCode::InvalidArgument,
    );

    // Denied: it fails with USER_DENIED and no effect.
    let denied = broker
        .workspace_update(&pairing, rename(&workspace, 2, &epoch, "k2", "Denied"))
        .await
        .expect("update")
        .operation_id;
    wait_state(&broker, &pairing, &denied, OperationState::AwaitingUser).await;
    broker.decide(&denied, false).expect("deny");
    assert_failed(&wait_settled(&broker, &denied).await, ErrorCode::UserDenied);

    // Cancelled by the agent while waiting: cancelled, and no decision is taken any more.
    let cancelled = broker
        .workspace_update(&pairing, rename(&workspace, 2, &epoch, "k3", "Cancelled"))
        .await
        .expect("update")
        .operation_id;
    wait_state(&broker, &pairing, &cancelled, OperationState::AwaitingUser).await;
    let view = broker
        .operation_cancel(&pairing, &cancelled)
        .await
        .expect("cancel");
    assert_eq!(view.state, OperationState::Cancelled, "{view:#?}");
    assert_eq!(view.effect_state, EffectState::None);
    expect_error(
        "deciding a cancelled operation",
        broker.decide(&cancelled, true),
        ErrorCode::InvalidArgument,
    );
    assert_eq!(
        broker
            .operation_get(&pairing, &by_id(&cancelled))
            .expect("get")
            .state,
        OperationState::Cancelled
    );
    assert_eq!(
        workspace_state(&broker, &workspace),
        ("Approved".to_owned(), DomainRevision(2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_racing_the_persons_approval_still_settles() {
    let setup = Setup {
        settle_wait: Duration::from_millis(100),
        ..setup()
    };
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);
    broker.set_confirmation(UPDATE, true).expect("policy");
    let mut revision = 1;
    for round in 0..20 {
        let id = broker
            .workspace_update(
                &pairing,
                rename(
                    &workspace,
                    revision,
                    &epoch,
                    &format!("k{round}"),
                    &format!("Name {round}"),
                ),
            )
            .await
            .expect("update")
            .operation_id;
        wait_state(&broker, &pairing, &id, OperationState::AwaitingUser).await;
        let cancel = {
            let (broker, pairing, id) = (broker.clone(), pairing.clone(), id.clone());
            // A varying head start for the decision, to shift where the two meet.
            tokio::spawn(async move {
                for _ in 0..round % 10 {
                    tokio::task::yield_now().await;
                }
                broker.operation_cancel(&pairing, &id).await
            })
        };
        let decide = {
            let (broker, id) = (broker.clone(), id.clone());
            tokio::spawn(async move { broker.decide(&id, true) })
        };
        let decided = decide.await.expect("task");
        cancel.await.expect("task").expect("cancel");
        // Either the cancellation or the approved rename wins; neither may leave it hanging.
        let view = wait_settled(&broker, &id).await;
        match view.state {
            OperationState::Succeeded => revision += 1,
            OperationState::Cancelled => assert_eq!(view.effect_state, EffectState::None),
            other => panic!("round {round}: settled as {other}: {view:#?}"),
        }
        if let Err(error) = decided {
            // Refused only because the cancellation settled it first.
            assert_eq!(error.code, ErrorCode::InvalidArgument, "{error}");
            assert_eq!(view.state, OperationState::Cancelled);
        }
        assert_eq!(
            workspace_state(&broker, &workspace).1,
            DomainRevision(revision)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_share_one_operation_and_one_effect() {
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);
    let input = rename(&workspace, 1, &epoch, "same", "Once");

    let calls: Vec<_> = (0..32)
        .map(|_| {
            let broker = broker.clone();
            let pairing = pairing.clone();
            let input = input.clone();
            tokio::spawn(async move { broker.workspace_update(&pairing, input).await })
        })
        .collect();
    let mut ids = Vec::new();
    for call in calls {
        ids.push(call.await.expect("task").expect("update").operation_id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_succeeded(&wait_settled(&broker, &ids[0]).await);
    assert_eq!(
        workspace_state(&broker, &workspace),
        ("Once".to_owned(), DomainRevision(2))
    );
    assert_eq!(broker.operations(100).expect("operations").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn competing_updates_of_one_revision_apply_exactly_once() {
    for contenders in [2, 3, 8] {
        let setup = setup();
        let broker = setup.start(1);
        let workspace = setup.workspace(&broker, "Alpha");
        let pairing = approved(&broker, "agent", &workspace);
        let epoch = connect(&broker, &pairing, &workspace);
        let calls: Vec<_> = (0..contenders)
            .map(|i| {
                let broker = broker.clone();
                let pairing = pairing.clone();
                let input = rename(
                    &workspace,
                    1,
                    &epoch,
                    &format!("k{i}"),
                    &format!("Name {i}"),
                );
                tokio::spawn(async move { broker.workspace_update(&pairing, input).await })
            })
            .collect();
        let mut winners = Vec::new();
        for call in calls {
            match call.await.expect("task") {
                Ok(view) => {
                    let view = wait_settled(&broker, &view.operation_id).await;
                    if view.state == OperationState::Succeeded {
                        winners.push(assert_succeeded(&view).workspace.name);
                    } else {
                        assert_failed(&view, ErrorCode::RevisionMismatch);
                    }
                }
                Err(error) => assert_eq!(error.code, ErrorCode::RevisionMismatch, "{error}"),
            }
        }
        assert_eq!(winners.len(), 1, "{contenders} contenders: {winners:?}");
        assert_eq!(
            workspace_state(&broker, &workspace),
            (winners[0].clone(), DomainRevision(2))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_feed_shows_this_connections_state_changes() {
    use OperationState::{Queued, Running, Succeeded};
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let other = approved(&broker, "other agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);
    let second_epoch = connect(&broker, &pairing, &workspace);
    let other_epoch = connect(&broker, &other, &workspace);
    let read = |cursor: Option<&str>, max_events: Option<u32>| {
        broker.events_read(
            &pairing,
            &EventsReadInput {
                retry_epoch: epoch.clone(),
                cursor: cursor.map(str::to_owned),
                max_events,
            },
        )
    };

    let empty = read(None, None).expect("read before any operation");
    assert!(empty.events.is_empty());
    let mut mine = Vec::new();
    for (caller, epoch, key, revision) in [
        (&pairing, &epoch, "mine-1", 1),
        (&other, &other_epoch, "theirs", 2),
        (&pairing, &epoch, "mine-2", 3),
        (&pairing, &second_epoch, "other-connection", 4),
    ] {
        let view = broker
            .workspace_update(
                caller,
                rename(
                    &workspace,
                    revision,
                    epoch,
                    key,
                    &format!("Name {revision}"),
                ),
            )
            .await
            .expect("update");
        assert_succeeded(&view);
        if key.starts_with("mine") {
            mine.push(view.operation_id);
        }
    }

    let page = read(Some(&empty.next_cursor), None).expect("read");
    let seen: Vec<(OperationId, OperationState)> = page
        .events
        .iter()
        .map(|e| (e.operation_id.clone(), e.state))
        .collect();
    let expected: Vec<(OperationId, OperationState)> = mine
        .iter()
        .flat_map(|id| [Queued, Running, Succeeded].map(|s| (id.clone(), s)))
        .collect();
    assert_eq!(seen, expected);
    assert!(page.events.iter().all(|e| e.tool == UPDATE));
    let cursors: Vec<u64> = page
        .events
        .iter()
        .map(|e| e.cursor.parse().expect("decimal cursor"))
        .collect();
    assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
    let again = read(Some(&page.next_cursor), None).expect("read on");
    assert!(again.events.is_empty(), "{again:#?}");

    // Small pages continue where the last one stopped, without repeats or gaps.
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let page = read(cursor.as_deref(), Some(2)).expect("page");
        assert!(page.events.len() <= 2);
        paged.extend(page.events.into_iter().map(|e| (e.operation_id, e.state)));
        cursor = Some(page.next_cursor);
    }
    assert_eq!(paged, expected);

    for bad in ["abc", "-1", "01", "1.5", "", "999999999"] {
        expect_error(
            &format!("cursor {bad:?}"),
            read(Some(bad), None),
            ErrorCode::InvalidArgument,
        );
    }
    for max in [0, 501] {
        expect_error(
            &format!("maxEvents {max}"),
            read(None, Some(max)),
            ErrorCode::InvalidArgument,
        );
    }
    assert_eq!(
        read(None, Some(500)).expect("maxEvents 500").events.len(),
        6
    );
    expect_error(
        "another pairing reading this connection's feed",
        broker.events_read(
            &other,
            &EventsReadInput {
                retry_epoch: epoch.clone(),
                cursor: None,
                max_events: None,
            },
        ),
        ErrorCode::RetryEpochInvalid,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_domain_changes_are_all_on_disk_once_answered() {
    // Changes of many workspaces at once share the domain file's writes (group commit); each
    // answered one is on disk: a restart finds every name, and each revision moved once.
    let setup = Setup {
        settle_wait: Duration::from_secs(30),
        ..setup()
    };
    let broker = setup.start(1);
    let workspaces: Vec<WorkspaceId> = (0..12)
        .map(|n| setup.workspace(&broker, &format!("W{n}")))
        .collect();
    let created = broker
        .pairing_create("load", &workspaces, None)
        .expect("create pairing");
    let mut calls = Vec::new();
    for (n, workspace) in workspaces.iter().enumerate() {
        let broker = broker.clone();
        let caller = created.pairing_id.clone();
        let workspace = workspace.clone();
        calls.push(tokio::spawn(async move {
            let epoch = connect(&broker, &caller, &workspace);
            for round in 0..5u64 {
                let name = format!("W{n} round {round}");
                let key = format!("k{round}");
                let done = broker
                    .workspace_update(&caller, rename(&workspace, 1 + round, &epoch, &key, &name))
                    .await
                    .expect("update");
                assert_succeeded(&done);
                // Answered means seen by every reader too.
                assert_eq!(
                    workspace_state(&broker, &workspace),
                    (name, DomainRevision(2 + round))
                );
            }
        }));
    }
    for call in calls {
        call.await.expect("a session's renames");
    }
    broker.shutdown().await;
    drop(broker);
    let broker = setup.start(2);
    for (n, workspace) in workspaces.iter().enumerate() {
        assert_eq!(
            workspace_state(&broker, workspace),
            (format!("W{n} round 4"), DomainRevision(6))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_domain_save_fails_the_update_and_changes_nothing() {
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);

    // Tests run as root, so permissions cannot make the file unwritable: a directory in its
    // place makes the atomic rename fail.
    let domain_file = setup.data_dir().join(DOMAIN_FILE);
    std::fs::remove_file(&domain_file).expect("remove domain.json");
    std::fs::create_dir(&domain_file).expect("directory in its place");
    let view = broker
        .workspace_update(&pairing, rename(&workspace, 1, &epoch, "k1", "Unsaved"))
        .await
        .expect("update");
    let view = wait_settled(&broker, &view.operation_id).await;
    assert_failed(&view, ErrorCode::StoreUnavailable);
    assert_eq!(
        workspace_state(&broker, &workspace),
        ("Alpha".to_owned(), DomainRevision(1))
    );
    let listed = broker.workspace_list(&pairing).expect("list");
    assert_eq!(listed.workspaces[0].name, "Alpha");
    assert_eq!(listed.workspaces[0].domain_revision, DomainRevision(1));

    // Once the path is writable again, a fresh request at the same revision goes through.
    std::fs::remove_dir(&domain_file).expect("remove the directory");
    let view = broker
        .workspace_update(&pairing, rename(&workspace, 1, &epoch, "k2", "Saved"))
        .await
        .expect("update");
    assert_succeeded(&view);
    let saved = std::fs::read_to_string(&domain_file).expect("domain.json written again");
    assert!(saved.contains("Saved"), "{saved}");
}

fn terminal_record(workspace: &WorkspaceId) -> lomi_broker::PanelRecord {
    lomi_broker::PanelRecord {
        workspace_id: workspace.clone(),
        kind: lomi_protocol::tools::session::PanelKind::Terminal,
        title: "shell".to_owned(),
        project_id: None,
        generation: Some("g1".to_owned()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panel_events_past_the_retention_still_read_without_a_cursor() {
    let setup = setup();
    let broker = setup.start(31);
    let workspace = setup.workspace(&broker, "Busy");
    let agent = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &agent, &workspace);
    let panel = lomi_protocol::PanelId::parse("pn_busy").expect("panel id");
    broker
        .panel_add(
            DomainRevision(1),
            panel.clone(),
            terminal_record(&workspace),
        )
        .expect("add panel");
    // More progress than the broker keeps (4,096 events).
    for cursor in 1..=5_000u64 {
        broker.panel_progress(&panel, cursor, None);
    }
    let read = |cursor: Option<&str>| {
        broker.events_read(
            &agent,
            &EventsReadInput {
                retry_epoch: epoch.clone(),
                cursor: cursor.map(str::to_owned),
                max_events: Some(500),
            },
        )
    };
    let first = read(None).expect("a read without a cursor starts at the oldest kept event");
    assert_eq!(first.panel_events.len(), 500);
    assert_eq!(
        first.panel_events[0].output_cursor,
        (5_000 - 4_096 + 1).to_string()
    );
    let next = read(Some(&first.next_cursor)).expect("continue");
    assert_eq!(
        next.panel_events[0].output_cursor,
        (5_000 - 4_096 + 501).to_string()
    );
    // An operations-only cursor also starts the panel feed at the oldest kept event.
    assert!(read(Some("0")).is_ok());
    // A cursor older than what is kept is expired.
    expect_error("old cursor", read(Some("0.1")), ErrorCode::CursorExpired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panels_do_not_survive_a_restart_and_their_leaving_is_a_new_revision() {
    let setup = setup();
    let broker = setup.start(41);
    let workspace = setup.workspace(&broker, "Panels");
    let panel = lomi_protocol::PanelId::parse("pn_gone").expect("panel id");
    let revision = broker
        .panel_add(DomainRevision(1), panel, terminal_record(&workspace))
        .expect("add panel");
    assert_eq!(revision, DomainRevision(2));
    broker.shutdown().await;
    drop(broker);

    let broker = setup.start(42);
    let restarted = broker
        .workspaces()
        .into_iter()
        .find(|w| w.id == workspace)
        .expect("workspace");
    assert!(restarted.layout.is_none(), "{:?}", restarted.layout);
    assert_eq!(restarted.revision, DomainRevision(3));
    // And the layout can be changed without naming panels that no longer exist.
    let agent = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &agent, &workspace);
    let view = broker
        .workspace_update(
            &agent,
            rename(&workspace, 3, &epoch, "after-restart", "Renamed"),
        )
        .await
        .expect("update");
    assert_succeeded(&wait_settled(&broker, &view.operation_id).await);
}

/// Runs a mutation of a tool that asks the person itself, with an effect that counts its
/// runs; answers its operation id.
async fn counted(
    broker: &Broker,
    pairing: &PairingId,
    confirmation: lomi_broker::Confirmation,
    at: (&WorkspaceId, &RetryEpoch, &str),
    runs: &Arc<std::sync::atomic::AtomicUsize>,
) -> OperationId {
    let runs = runs.clone();
    run_effect(
        broker,
        pairing,
        confirmation,
        at,
        move |(), _context| async move {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            lomi_broker::EffectOutcome::Succeeded(serde_json::json!({ "ran": true }))
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_asks_the_person_itself_and_follows_a_remembered_choice() {
    use lomi_broker::Confirmation;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let setup = Setup {
        settle_wait: Duration::from_millis(100),
        ..setup()
    };
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);
    let runs = Arc::new(AtomicUsize::new(0));
    let remembered = Arc::new(std::sync::Mutex::new(Vec::new()));
    let asking = || {
        let remembered = remembered.clone();
        Confirmation::Ask {
            remember: Some(Box::new(move |allowed| {
                remembered.lock().expect("lock").push(allowed);
            })),
        }
    };

    // Asked: it waits for the person, runs once approved, and the answer is handed back.
    let id = counted(
        &broker,
        &pairing,
        asking(),
        (&workspace, &epoch, "ask-yes"),
        &runs,
    )
    .await;
    wait_state(&broker, &pairing, &id, OperationState::AwaitingUser).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    broker.decide(&id, true).expect("approve");
    assert_eq!(
        wait_settled(&broker, &id).await.state,
        OperationState::Succeeded
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let id = counted(
        &broker,
        &pairing,
        asking(),
        (&workspace, &epoch, "ask-no"),
        &runs,
    )
    .await;
    wait_state(&broker, &pairing, &id, OperationState::AwaitingUser).await;
    broker.decide(&id, false).expect("deny");
    assert_failed(&wait_settled(&broker, &id).await, ErrorCode::UserDenied);
    assert_eq!(*remembered.lock().expect("lock"), [true, false]);

    // A remembered approval runs at once; there is nothing to decide.
    let id = counted(
        &broker,
        &pairing,
        Confirmation::Allowed,
        (&workspace, &epoch, "allowed"),
        &runs,
    )
    .await;
    assert_eq!(
        wait_settled(&broker, &id).await.state,
        OperationState::Succeeded
    );
    expect_error(
        "deciding what never waited",
        broker.decide(&id, true),
        ErrorCode::InvalidArgument,
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // A remembered denial fails USER_DENIED with no effect, without asking.
    let id = counted(
        &broker,
        &pairing,
        Confirmation::Declined("declined earlier; `forget` changes it".to_owned()),
        (&workspace, &epoch, "denied"),
        &runs,
    )
    .await;
    let denied = wait_settled(&broker, &id).await;
    assert_failed(&denied, ErrorCode::UserDenied);
    assert_eq!(
        denied.error.as_ref().map(|e| e.message.as_str()),
        Some("declined earlier; `forget` changes it")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(remembered.lock().expect("lock").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_for_one_session_ends_with_it_and_calls_are_remembered() {
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let lasting = broker
        .pairing_begin("bridge one", Some("secret-one"))
        .expect("a pending pairing");
    let once = broker
        .pairing_begin("bridge two", Some("secret-two"))
        .expect("a pending pairing");
    broker
        .pairing_approve(&lasting, std::slice::from_ref(&workspace))
        .expect("approve");
    broker
        .pairing_approve_for_session(&once, std::slice::from_ref(&workspace))
        .expect("approve for the session");
    let summary = |id: &PairingId| {
        broker
            .pairing_list()
            .into_iter()
            .find(|p| &p.pairing_id == id)
    };
    let listed = summary(&once).expect("listed");
    assert_eq!(
        (listed.state, listed.credential),
        (
            PairingState::Approved,
            lomi_protocol::control::PairingCredential::Session
        )
    );
    assert_eq!(
        summary(&lasting).expect("listed").credential,
        lomi_protocol::control::PairingCredential::Token
    );
    assert_eq!(
        broker.authorize(&once).expect("authorized"),
        vec![workspace.clone()]
    );

    // Only the lasting approval is written down.
    let domain = std::fs::read_to_string(setup.data_dir().join(DOMAIN_FILE)).expect("domain");
    assert!(
        domain.contains(lasting.as_str()) && !domain.contains(once.as_str()),
        "{domain}"
    );

    // Calls are remembered as last activity; a pairing that never called has none.
    assert_eq!(summary(&lasting).expect("listed").last_active_at, None);
    setup.clock.advance(Duration::from_secs(90));
    broker.authorize(&lasting).expect("authorized");
    let active = summary(&lasting)
        .expect("listed")
        .last_active_at
        .expect("activity");
    assert_eq!(
        Some(active),
        summary(&lasting).and_then(|p| p.last_active_at)
    );
    assert!(
        active
            > summary(&once)
                .expect("listed")
                .last_active_at
                .expect("activity")
    );

    // The connections end: the session approval goes with its connection, the other stays.
    broker.pairing_session_ended(&once);
    broker.pairing_session_ended(&lasting);
    assert!(summary(&once).is_none());
    assert_eq!(broker.pairing_by_secret("secret-two"), None);
    assert_eq!(
        broker.pairing_by_secret("secret-one"),
        Some(lasting.clone())
    );
    assert_eq!(
        summary(&lasting).expect("listed").state,
        PairingState::Approved
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_adds_and_removes_projects_and_workspaces() {
    let setup = setup();
    let broker = setup.start(1);
    let alpha = setup.workspace(&broker, "Alpha");
    let beta = setup.workspace(&broker, "Beta");
    let pairing = approved(&broker, "agent", &alpha);
    let extra = setup.dir.path().join("projects").join("extra");
    std::fs::create_dir_all(&extra).expect("dir");

    let added = broker.project_add(&alpha, &extra).expect("add project");
    assert_eq!(workspace_state(&broker, &alpha).1, DomainRevision(2));
    expect_error(
        "the same folder twice",
        broker.project_add(&alpha, &extra),
        ErrorCode::InvalidArgument,
    );
    expect_error(
        "a file as a project",
        broker.project_add(&alpha, &setup.data_dir().join(DOMAIN_FILE)),
        ErrorCode::InvalidArgument,
    );
    let roots: Vec<_> = broker.workspaces()[0]
        .projects
        .iter()
        .map(|p| p.root.clone())
        .collect();
    assert_eq!(roots.len(), 2);

    broker
        .project_remove(&alpha, &added.id)
        .expect("remove project");
    assert_eq!(workspace_state(&broker, &alpha).1, DomainRevision(3));
    let only = broker.workspaces()[0].projects[0].id.clone();
    expect_error(
        "the last project",
        broker.project_remove(&alpha, &only),
        ErrorCode::InvalidArgument,
    );
    expect_error(
        "an unknown workspace",
        broker.workspace_remove(&WorkspaceId::from_random([7; 16])),
        ErrorCode::NotFound,
    );

    // Removing a workspace takes its grants with it: the agent no longer sees it.
    broker.workspace_remove(&alpha).expect("remove workspace");
    assert_eq!(
        broker
            .workspaces()
            .iter()
            .map(|w| w.id.clone())
            .collect::<Vec<_>>(),
        vec![beta]
    );
    assert_eq!(
        broker.authorize(&pairing).expect("still approved"),
        Vec::<WorkspaceId>::new()
    );
}

/// A runtime that counts how often it was ended.
#[derive(Clone)]
struct Counted(Arc<std::sync::atomic::AtomicUsize>);

impl lomi_broker::PanelRuntime for Counted {
    fn live_generation(&self, _: &lomi_protocol::PanelId) -> Result<String, ToolError> {
        Ok("g1".to_owned())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_panel_is_compared_by_revision_and_answered_again_after_it_is_gone() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use lomi_protocol::PanelId;
    use lomi_protocol::tools::session::{PanelCloseInput, PanelKind};

    let setup = setup();
    let broker = setup.start(51);
    let workspace = setup.workspace(&broker, "Closing");
    let other = setup.workspace(&broker, "Other");
    let agent = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &agent, &workspace);
    let panel = PanelId::parse("pn_closing").expect("panel id");
    broker
        .panel_add(
            DomainRevision(1),
            panel.clone(),
            terminal_record(&workspace),
        )
        .expect("add panel");
    let ended = Arc::new(AtomicUsize::new(0));
    let runtimes = lomi_broker::Runtimes::new(PanelKind::Terminal);
    runtimes
        .lock()
        .insert(panel.clone(), Counted(Arc::clone(&ended)));
    let input = |key: &str, workspace: &WorkspaceId, expected: u64| PanelCloseInput {
        workspace_id: workspace.clone(),
        panel_id: panel.clone(),
        expected_revision: DomainRevision(expected),
        retry_epoch: epoch.clone(),
        request_key: RequestKey::parse(key).expect("request key"),
    };
    let remove = |input: PanelCloseInput| {
        let (broker, agent, runtimes) = (&broker, &agent, &runtimes);
        async move {
            let ending = |runtime: Counted| async move {
                runtime.0.fetch_add(1, Ordering::SeqCst);
                |panel: PanelId, revision: DomainRevision| {
                    serde_json::json!({
                        "panelId": panel.to_string(),
                        "domainRevision": revision.to_string(),
                    })
                }
            };
            runtimes
                .close(
                    broker,
                    agent,
                    ToolCall::of::<lomi_protocol::tools::terminal::TerminalCloseTool>(&input)
                        .expect("call"),
                    &input,
                    EffectState::Partial,
                    ending,
                )
                .await
        }
    };

    // A stale revision is refused before anything ends.
    expect_error(
        "stale revision",
        remove(input("stale", &workspace, 1)).await,
        ErrorCode::RevisionMismatch,
    );
    // A panel of another workspace than the one named: not found, and not ended.
    let theirs = PanelId::parse("pn_theirs").expect("panel id");
    broker
        .panel_add(DomainRevision(1), theirs.clone(), terminal_record(&other))
        .expect("add their panel");
    runtimes
        .lock()
        .insert(theirs.clone(), Counted(Arc::clone(&ended)));
    let mut elsewhere = input("elsewhere", &workspace, 2);
    elsewhere.panel_id = theirs;
    expect_error(
        "another workspace's panel",
        remove(elsewhere).await,
        ErrorCode::NotFound,
    );
    assert_eq!(ended.load(Ordering::SeqCst), 0);

    // An agent holds a lease on the panel and has sent input under it.
    let lease = broker
        .lease_acquire(&agent, &panel, "g1")
        .expect("lease")
        .lease_id;
    let (sent, repeated) = broker
        .lease_input(
            &agent,
            lomi_broker::LeasedInput {
                lease: &lease,
                panel: &panel,
                generation: "g1",
                sequence: 1,
                payload: serde_json::json!({ "text": "ls\r" }),
            },
            || async { Ok(serde_json::json!({ "outputCursor": "1" })) },
        )
        .await
        .expect("input");
    assert_eq!(
        (sent["outputCursor"].as_str(), repeated),
        (Some("1"), false)
    );

    let closed = remove(input("close", &workspace, 2)).await.expect("close");
    assert_eq!(closed.state, OperationState::Succeeded, "{closed:#?}");
    // The lease went with the panel (with the answers it remembered): none is left to release.
    expect_error(
        "a closed panel's lease",
        broker.lease_release(&agent, &lease),
        ErrorCode::LeaseRequired,
    );
    assert_eq!(closed.effect_state, EffectState::Complete, "{closed:#?}");
    let result = closed.result.clone().expect("a result");
    assert_eq!(result["domainRevision"], "3", "{result}");
    assert_eq!(ended.load(Ordering::SeqCst), 1);
    expect_error(
        "the panel is gone",
        broker.panel(&agent, &panel),
        ErrorCode::NotFound,
    );
    assert!(runtimes.get(&panel).is_none(), "the runtime went with it");
    assert_eq!(workspace_state(&broker, &workspace).1, DomainRevision(3));

    // The retry finds the receipt, though the panel (and its runtime) are gone.
    let retried = remove(input("close", &workspace, 2)).await.expect("retry");
    assert_eq!(retried.operation_id, closed.operation_id);
    assert_eq!(ended.load(Ordering::SeqCst), 1, "the runtime ended once");
}

/// Runs one operation whose effect is `effect` (the engine's settlement rules, the person's
/// decision); answers its id.
async fn run_effect<F, Fut>(
    broker: &Broker,
    pairing: &PairingId,
    confirmation: lomi_broker::Confirmation,
    (workspace, epoch, key): (&WorkspaceId, &RetryEpoch, &str),
    effect: F,
) -> OperationId
where
    F: FnOnce((), lomi_broker::EffectContext) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = lomi_broker::EffectOutcome> + Send + 'static,
{
    let mutation = lomi_broker::Mutation {
        call: ToolCall {
            tool: Tool::AndroidAttach,
            payload: serde_json::json!({ "key": key }),
            preview: Preview::Described,
            subject: Subject::None,
            panel: None,
        },
        retry_epoch: epoch.clone(),
        request_key: RequestKey::parse(key).expect("request key"),
        workspace_id: workspace.clone(),
        project_id: None,
        generation: None,
        revision: None,
        permit: lomi_broker::Permit::Workspace(workspace.clone()),
    };
    broker
        .operate(
            pairing,
            mutation,
            confirmation,
            async { Ok(()) },
            |_, ()| Ok(()),
            effect,
        )
        .await
        .expect("operate")
        .operation_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outcome_settles_in_a_legal_state_and_cancellation_reaches_the_effect() {
    use lomi_broker::EffectOutcome;
    let setup = Setup {
        settle_wait: Duration::from_millis(50),
        ..setup()
    };
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);
    let at = |key| (&workspace, &epoch, key);
    use lomi_broker::Confirmation::Policy;

    // A panicking effect never leaves its receipt running.
    let id = run_effect(&broker, &pairing, Policy, at("panics"), |(), _| async {
        panic!("an effect that fails in a way nobody planned for")
    })
    .await;
    let settled = wait_settled(&broker, &id).await;
    assert_eq!(
        (settled.state, settled.effect_state),
        (OperationState::OutcomeUnknown, EffectState::Unknown),
        "{settled:#?}"
    );
    assert_eq!(
        settled.error.as_ref().map(|e| e.code),
        Some(ErrorCode::OutcomeUnknown)
    );

    // So does one whose blocking work (file IO, off the async threads) panics.
    let id = run_effect(
        &broker,
        &pairing,
        Policy,
        at("panics-off-thread"),
        |(), _| {
            lomi_broker::off_thread(|| -> EffectOutcome {
                panic!("blocking work that fails in a way nobody planned for")
            })
        },
    )
    .await;
    let settled = wait_settled(&broker, &id).await;
    assert_eq!(
        (settled.state, settled.effect_state),
        (OperationState::OutcomeUnknown, EffectState::Unknown),
        "{settled:#?}"
    );

    // A failure that cannot say what it did is outcome_unknown, keeping its code: `failed`
    // with an unknown effect is not a state a receipt may reach.
    let id = run_effect(
        &broker,
        &pairing,
        Policy,
        at("unknown-failure"),
        |(), _| async {
            EffectOutcome::Failed {
                effect: EffectState::Unknown,
                error: ToolError::new(ErrorCode::RuntimeUnavailable, "the device went away"),
            }
        },
    )
    .await;
    let settled = wait_settled(&broker, &id).await;
    assert_eq!(
        (settled.state, settled.effect_state),
        (OperationState::OutcomeUnknown, EffectState::Unknown)
    );
    assert_eq!(
        settled.error.as_ref().map(|e| e.code),
        Some(ErrorCode::RuntimeUnavailable)
    );

    // Cancelling a running effect fires its token: `cancelling` while it stops, then
    // `cancelled` with the effect it reached.
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let id = run_effect(
        &broker,
        &pairing,
        Policy,
        at("cancelled"),
        |(), context| async move {
            let _started = started_tx.send(());
            context.cancel.cancelled().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            EffectOutcome::Cancelled {
                effect: EffectState::Partial,
            }
        },
    )
    .await;
    started_rx.await.expect("the effect started");
    let cancelling = broker
        .operation_cancel(&pairing, &id)
        .await
        .expect("cancel");
    assert_eq!(
        cancelling.state,
        OperationState::Cancelling,
        "{cancelling:#?}"
    );
    let settled = wait_settled(&broker, &id).await;
    assert_eq!(
        (settled.state, settled.effect_state),
        (OperationState::Cancelled, EffectState::Partial)
    );

    // An effect that finished before it looked at the token stays succeeded.
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let id = run_effect(
        &broker,
        &pairing,
        Policy,
        at("finished"),
        |(), _| async move {
            let _started = started_tx.send(());
            let _released = release_rx.await;
            EffectOutcome::Succeeded(serde_json::json!({ "done": true }))
        },
    )
    .await;
    started_rx.await.expect("the effect started");
    broker
        .operation_cancel(&pairing, &id)
        .await
        .expect("cancel");
    let _release = release_tx.send(());
    let settled = wait_settled(&broker, &id).await;
    assert_eq!(
        (settled.state, settled.effect_state),
        (OperationState::Succeeded, EffectState::Complete)
    );
}

#[test]
fn a_flood_of_new_clients_is_capped_and_their_requests_expire() {
    let setup = setup();
    let broker = setup.start(41);
    let expected = broker
        .pairing_begin("the agent the person expects", None)
        .expect("pending");
    let flood: Vec<PairingId> = (1..lomi_broker::MAX_PENDING_PAIRINGS)
        .map(|n| {
            broker
                .pairing_begin(&format!("flood {n}"), None)
                .expect("pending")
        })
        .collect();
    assert_eq!(flood.len(), lomi_broker::MAX_PENDING_PAIRINGS - 1);
    // Full: the next is refused and saved nowhere; the one the person expects is still there.
    let refused = broker
        .pairing_begin("one too many", None)
        .expect_err("refused");
    assert_eq!(refused.code, ErrorCode::PairingRequired, "{refused:?}");
    assert!(
        refused.message.contains("already waiting"),
        "{}",
        refused.message
    );
    let listed = broker.pairing_list();
    assert_eq!(listed.len(), lomi_broker::MAX_PENDING_PAIRINGS);
    assert!(listed.iter().all(|p| p.client_name != "one too many"));
    // Deciding one makes room.
    broker.pairing_deny(&flood[0]).expect("deny");
    broker
        .pairing_begin("after a decision", None)
        .expect("room again");
    // Undecided requests expire; decided ones stay.
    setup
        .clock
        .advance(lomi_broker::PENDING_LIFETIME + Duration::from_secs(1));
    broker.pairing_begin("later", None).expect("pending");
    let listed = broker.pairing_list();
    let names: Vec<&str> = listed.iter().map(|p| p.client_name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&"later") && names.contains(&"flood 1"),
        "{names:?}"
    );
    assert_eq!(
        broker.authorize(&expected).expect_err("expired").code,
        ErrorCode::PairingRequired
    );
}

fn settings_update(
    section: lomi_protocol::tools::settings::SettingsSection,
    revision: u64,
    epoch: &RetryEpoch,
    key: &str,
    values: serde_json::Value,
) -> lomi_protocol::tools::settings::SettingsUpdateInput {
    lomi_protocol::tools::settings::SettingsUpdateInput {
        section,
        expected_settings_revision: lomi_protocol::SettingsRevision(revision),
        values: values.as_object().cloned().expect("values are an object"),
        retry_epoch: epoch.clone(),
        request_key: RequestKey::parse(key).expect("request key"),
    }
}

fn section_revision(
    broker: &Broker,
    section: lomi_protocol::tools::settings::SettingsSection,
) -> u64 {
    let view = serde_json::to_value(broker.settings_for_person(Some(section))).expect("json");
    view[section.name()]["settingsRevision"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .expect("a revision")
}

/// Each section is compared and swapped on its own revision: an agent's change moves only its
/// section, a stale revision is REVISION_MISMATCH with the current one, a retry answers the
/// same operation, the person's change moves the revision the agent sees, and all of it is
/// still there after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_sections_compare_and_swap_on_their_own_revision_and_survive_a_restart() {
    use lomi_protocol::tools::settings::SettingsSection::{Browser, Chat, Terminal};
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let pairing = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &pairing, &workspace);

    let first = settings_update(Terminal, 1, &epoch, "s1", serde_json::json!({"cols": 100}));
    let view = broker
        .settings_update(&pairing, first.clone())
        .await
        .expect("update");
    assert_eq!(view.state, OperationState::Succeeded, "{view:#?}");
    assert_eq!(
        view.result.as_ref().expect("result")["settingsRevision"],
        "2"
    );
    assert_eq!(section_revision(&broker, Terminal), 2);
    assert_eq!(section_revision(&broker, Browser), 1);
    assert_eq!(broker.terminal_settings().cols, 100);

    // The same request again is the same operation, though the revision moved since.
    let again = broker
        .settings_update(&pairing, first)
        .await
        .expect("retry");
    assert_eq!(again.operation_id, view.operation_id);

    // A stale revision is refused with the current one; nothing changes.
    let stale = broker
        .settings_update(
            &pairing,
            settings_update(Terminal, 1, &epoch, "s2", serde_json::json!({"cols": 120})),
        )
        .await;
    let error = expect_error(
        "stale settings revision",
        stale,
        ErrorCode::RevisionMismatch,
    );
    let details = error.details.expect("details");
    assert_eq!(details["currentRevision"], "2");
    assert_eq!(details["section"], "terminal");
    assert_eq!(broker.terminal_settings().cols, 100);

    // Another section's revision is its own.
    let view = broker
        .settings_update(
            &pairing,
            settings_update(
                Chat,
                1,
                &epoch,
                "s3",
                serde_json::json!({"systemPrompt": "Be brief."}),
            ),
        )
        .await
        .expect("chat update");
    assert_eq!(view.state, OperationState::Succeeded, "{view:#?}");

    // An agent cannot touch a person-only section; the person's change moves the revision.
    let refused = broker
        .settings_update(
            &pairing,
            settings_update(
                lomi_protocol::tools::settings::SettingsSection::Pairings,
                1,
                &epoch,
                "s4",
                serde_json::json!({"grants": []}),
            ),
        )
        .await;
    expect_error("person-only section", refused, ErrorCode::PersonOnly);
    let values = serde_json::json!({"rows": 40});
    broker
        .settings_change(Terminal, values.as_object().expect("object"), None)
        .expect("the person's change");
    assert_eq!(section_revision(&broker, Terminal), 3);

    drop(broker);
    let broker = setup.start(2);
    let terminal = broker.terminal_settings();
    assert_eq!((terminal.cols, terminal.rows), (100, 40));
    assert_eq!(section_revision(&broker, Terminal), 3);
    assert_eq!(section_revision(&broker, Chat), 2);
}

/// The person's grants and confirmations are person-only sections read through to where they
/// live: changing them moves their revision; a failed save of a settings change changes
/// nothing and answers STORE_UNAVAILABLE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn person_only_sections_follow_their_home_and_a_failed_save_changes_nothing() {
    use lomi_protocol::tools::settings::SettingsSection::{Confirmations, Pairings, Terminal};
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Alpha");
    let before = section_revision(&broker, Pairings);
    let pairing = approved(&broker, "agent", &workspace);
    assert!(section_revision(&broker, Pairings) > before);
    let seen = broker
        .settings_get(&pairing, &Default::default())
        .expect("get");
    let own = seen.pairings.expect("pairings").pairings;
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].grants, vec![workspace.clone()]);

    let confirmations = section_revision(&broker, Confirmations);
    broker
        .set_confirmation("lomi_settings_update", true)
        .expect("lomi confirm");
    assert_eq!(section_revision(&broker, Confirmations), confirmations + 1);

    let domain_file = setup.data_dir().join(DOMAIN_FILE);
    std::fs::remove_file(&domain_file).expect("remove domain.json");
    std::fs::create_dir(&domain_file).expect("directory in its place");
    let values = serde_json::json!({"cols": 132});
    let failed = broker.settings_change(Terminal, values.as_object().expect("object"), None);
    expect_error("unsaved settings", failed, ErrorCode::StoreUnavailable);
    assert_eq!(broker.terminal_settings().cols, 80);
    assert_eq!(section_revision(&broker, Terminal), 1);
}

/// The families a person gives a token pairing survive a restart; a family a later Lomi wrote
/// into `domain.json` is dropped (the pairing sees less, never more) and the domain still loads.
#[test]
fn tool_families_are_kept_across_restarts_and_unknown_ones_dropped() {
    use lomi_protocol::{Family, Tool};
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "families");
    let browser_only: std::collections::BTreeSet<Family> = [Family::Browser].into();
    let created = broker
        .pairing_create(
            "browser bot",
            std::slice::from_ref(&workspace),
            Some(browser_only.clone()),
        )
        .expect("create");
    let changed = broker.families_changed();
    assert!(broker.pairing_sees(&created.pairing_id, Tool::BrowserClick));
    assert!(
        broker.pairing_sees(&created.pairing_id, Tool::Connect),
        "session tools stay"
    );
    assert!(!broker.pairing_sees(&created.pairing_id, Tool::TerminalCreate));
    broker
        .pairing_set_families(
            &created.pairing_id,
            Some([Family::Browser, Family::Git].into()),
        )
        .expect("set families");
    assert!(
        changed.has_changed().expect("sender alive"),
        "sessions are woken"
    );
    drop(broker);

    let path = setup.data_dir().join(DOMAIN_FILE);
    let mut domain: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("domain")).expect("json");
    let pairing = domain["pairings"]
        .as_array_mut()
        .expect("pairings")
        .iter_mut()
        .find(|p| p["id"] == serde_json::json!(created.pairing_id))
        .expect("the pairing is durable");
    assert_eq!(pairing["families"], serde_json::json!(["git", "browser"]));
    pairing["families"] = serde_json::json!(["browser", "hologram"]);
    std::fs::write(&path, serde_json::to_vec(&domain).expect("json")).expect("write");

    let broker = setup.start(2);
    assert_eq!(
        broker.pairing_families(&created.pairing_id),
        Some(browser_only)
    );
    assert!(!broker.pairing_sees(&created.pairing_id, Tool::GitCommit));
    // A pairing approved without a choice sees every family.
    let plain = approved(&broker, "plain", &workspace);
    assert_eq!(broker.pairing_families(&plain), None);
    assert!(broker.pairing_sees(&plain, Tool::AndroidShell));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_is_compared_and_swapped_both_ways_and_moves_the_change_feed() {
    use lomi_protocol::tools::layout::LayoutNode;
    use lomi_protocol::tools::session::LayoutChange;
    let setup = setup();
    let broker = setup.start(43);
    let workspace = setup.workspace(&broker, "Layout");
    let panel = |name: &str| lomi_protocol::PanelId::parse(name).expect("panel id");
    let (one, two) = (panel("pn_one"), panel("pn_two"));
    broker
        .panel_add(DomainRevision(1), one.clone(), terminal_record(&workspace))
        .expect("add panel");
    broker
        .panel_add(DomainRevision(2), two.clone(), terminal_record(&workspace))
        .expect("add panel");
    let layout = |value: serde_json::Value| -> LayoutNode {
        serde_json::from_value(value).expect("a layout")
    };
    let current = |broker: &Broker| {
        let w = broker
            .workspaces()
            .into_iter()
            .find(|w| w.id == workspace)
            .expect("workspace");
        (w.revision, w.layout.clone(), w.panel_order())
    };
    // New panels join one tab group, in the order they came.
    assert_eq!(
        current(&broker).1,
        Some(layout(
            serde_json::json!({"tabs": {"panels": ["pn_one", "pn_two"]}})
        ))
    );

    // The person splits them: the revision moves, and so does the change feed's domain.
    let mut feed = broker.changes();
    let seen = feed.borrow_and_update().domain;
    let side_by_side = layout(
        serde_json::json!({"split": {"direction": "row", "children": [
            {"tabs": {"panels": ["pn_two"]}}, {"tabs": {"panels": ["pn_one"]}}
        ]}}),
    );
    broker
        .layout_set_by_person(&workspace, DomainRevision(3), side_by_side.clone())
        .expect("the person's layout");
    assert!(feed.has_changed().expect("feed open"));
    assert!(feed.borrow_and_update().domain > seen);
    assert_eq!(
        current(&broker),
        (
            DomainRevision(4),
            Some(side_by_side),
            vec![two.clone(), one.clone()]
        )
    );
    // The person's own stale change is refused too.
    let stale_person = broker.layout_set_by_person(
        &workspace,
        DomainRevision(3),
        layout(serde_json::json!({"tabs": {"panels": ["pn_one", "pn_two"]}})),
    );
    expect_error("stale person", stale_person, ErrorCode::RevisionMismatch);

    // The agent's change from before the person's is refused; a layout that leaves a panel
    // out is refused with what to fix; the fresh one goes through.
    let agent = approved(&broker, "agent", &workspace);
    let epoch = connect(&broker, &agent, &workspace);
    let stacked = layout(
        serde_json::json!({"split": {"direction": "column", "children": [
            {"tabs": {"panels": ["pn_one"]}}, {"tabs": {"panels": ["pn_two"]}}
        ]}}),
    );
    let change = |revision: u64, key: &str, root: LayoutNode| WorkspaceUpdateInput {
        workspace_id: workspace.clone(),
        expected_revision: DomainRevision(revision),
        retry_epoch: epoch.clone(),
        request_key: RequestKey::parse(key).expect("request key"),
        change: WorkspaceChange::Layout(LayoutChange::Root(root)),
    };
    let stale = broker
        .workspace_update(&agent, change(3, "stale", stacked.clone()))
        .await;
    expect_error("stale agent", stale, ErrorCode::RevisionMismatch);
    let partial = broker
        .workspace_update(
            &agent,
            change(
                4,
                "partial",
                layout(serde_json::json!({"tabs": {"panels": ["pn_one"]}})),
            ),
        )
        .await;
    let refused = expect_error("partial", partial, ErrorCode::InvalidArgument);
    assert!(
        refused.message.contains("leaves out panel pn_two"),
        "{refused:?}"
    );
    let fresh = broker
        .workspace_update(&agent, change(4, "fresh", stacked.clone()))
        .await
        .expect("fresh layout");
    assert_succeeded(&wait_settled(&broker, &fresh.operation_id).await);
    assert_eq!(
        current(&broker),
        (
            DomainRevision(5),
            Some(stacked),
            vec![one.clone(), two.clone()]
        )
    );

    // A closed panel leaves the layout, and a split of one becomes its child.
    broker.panel_remove(&one, None).expect("remove");
    assert_eq!(
        current(&broker).1,
        Some(layout(serde_json::json!({"tabs": {"panels": ["pn_two"]}})))
    );
}

/// Chat's writes move the change feed's `chat` (the window's Chat tab follows it instead of
/// reading on a timer); a refused draft update changes nothing and moves nothing.
#[tokio::test]
async fn chat_writes_move_the_change_feeds_chat() {
    let setup = setup();
    let broker = setup.start(1);
    let workspace = setup.workspace(&broker, "Chat");
    let mut feed = broker.changes();
    let mut seen = feed.borrow_and_update().chat;
    let mut moved = |what: &str| {
        let now = feed.borrow_and_update().chat;
        let did = now > seen;
        seen = now;
        assert!(did, "{what} did not move the feed's chat");
    };
    let created = broker
        .chat_create_for_person(&workspace, "Plans")
        .expect("the person's conversation");
    moved("a new conversation");
    broker
        .chat_rename_for_person(&created.conversation_id, "Trip")
        .expect("renamed");
    moved("a rename");
    broker
        .chat_draft_for_person(&created.conversation_id, None, "Pack light")
        .expect("the draft");
    moved("a draft");
    let stale = broker.chat_draft_for_person(
        &created.conversation_id,
        Some(created.draft_revision),
        "late",
    );
    expect_error("a stale draft", stale, ErrorCode::RevisionMismatch);
    assert_eq!(
        feed.borrow_and_update().chat,
        seen,
        "a refused draft moved the feed"
    );
}
