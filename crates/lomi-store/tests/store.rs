//! Integration tests of the store over real SQLite files, one temp dir per test: receipts,
//! retries, guarded transitions, reopen recovery, caps, maintenance, failures and crashes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lomi_protocol::{
    BrokerInstanceId, ConnectionId, EffectState, ErrorCode, OperationId, OperationState, PairingId,
    ProjectId, RequestKey, RetryEpoch, Timestamp, ToolName, WorkspaceId,
};
use lomi_store::{
    Caps, Clock, IdleRule, Maintenance, ManualClock, Outcome, OutcomeError, ReceiptKey,
    ReservationRequest, RetireSelector, RetryEpochRecord, SCHEMA_VERSION, Store, StoreError,
    StoreOptions, SystemClock, fingerprint,
};
use proptest::prelude::*;
use serde_json::json;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

struct Setup {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
}

fn setup() -> Setup {
    Setup {
        dir: tempfile::tempdir().expect("temp dir"),
        clock: Arc::new(ManualClock::default()),
    }
}

impl Setup {
    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn open(&self) -> Store {
        self.open_with(StoreOptions::default()).expect("open store")
    }

    fn open_with(&self, options: StoreOptions) -> Result<Store, StoreError> {
        Store::open(&self.data_dir(), self.clock.clone(), options)
    }

    fn database(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.data_dir().join(lomi_store::DATABASE_FILE))
            .expect("raw connection")
    }

    /// Records retry epoch `name`, valid for 24 h from the clock's now.
    fn epoch(&self, store: &Store, name: &str) -> RetryEpoch {
        let record = epoch_record(name, self.clock_now());
        assert!(store.create_retry_epoch(&record).expect("create epoch"));
        record.retry_epoch
    }

    fn clock_now(&self) -> Timestamp {
        self.clock.now()
    }
}

fn epoch_record(name: &str, now: Timestamp) -> RetryEpochRecord {
    RetryEpochRecord {
        retry_epoch: RetryEpoch::parse(name).expect("epoch id"),
        pairing_id: PairingId::parse("pr_test").expect("pairing"),
        broker_instance_id: BrokerInstanceId::parse("bi_test").expect("instance"),
        connection_id: ConnectionId::parse("cn_test").expect("connection"),
        workspace_id: WorkspaceId::parse("ws_test").expect("workspace"),
        created_at: now,
        expires_at: now.plus_millis(DAY_MS),
    }
}

fn key(epoch: &RetryEpoch, request: &str) -> ReceiptKey {
    ReceiptKey {
        pairing_id: PairingId::parse("pr_test").expect("pairing"),
        retry_epoch: epoch.clone(),
        project_id: None,
        tool: ToolName("lomi_terminal_create".into()),
        request_key: RequestKey::parse(request).expect("request key"),
    }
}

fn request(key: &ReceiptKey, payload: serde_json::Value) -> ReservationRequest {
    ReservationRequest {
        key: key.clone(),
        operation_id: OperationId::from_random(rand::random()),
        workspace_id: Some(WorkspaceId::parse("ws_test").expect("workspace")),
        fingerprint: fingerprint(&payload, Some("g1"), Some("7")),
        decided_by: Some("default".to_owned()),
    }
}

fn integrity(connection: &rusqlite::Connection) -> String {
    connection
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check")
}

fn event_count(store: &Store) -> usize {
    store
        .events_after(0, usize::MAX)
        .expect("events")
        .events
        .len()
}

fn status(store: &Store) -> lomi_store::StoreStatus {
    store.status(&IdleRule::new(None)).expect("status")
}

fn expired_only() -> Maintenance {
    Maintenance::expired_only(IdleRule::new(None))
}

fn small_caps(receipts: usize, retry_epochs: usize) -> StoreOptions {
    StoreOptions {
        caps: Caps {
            receipts,
            retry_epochs,
            ..Caps::default()
        },
        ..StoreOptions::default()
    }
}

#[test]
fn a_retry_returns_the_receipt_and_other_arguments_conflict() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    let first = request(&key(&epoch, "rk_1"), json!({"title": "Tests"}));
    let created = store.reserve(&first).expect("reserve");
    assert!(created.created);
    assert_eq!(created.receipt.state, OperationState::Queued);
    assert_eq!(created.receipt.effect_state, EffectState::None);

    // Same key, same fingerprint, another proposed id: the original comes back.
    let retry = store
        .reserve(&request(&first.key, json!({"title": "Tests"})))
        .expect("retry");
    assert!(!retry.created);
    assert_eq!(retry.receipt, created.receipt);

    match store.reserve(&request(&first.key, json!({"title": "Other"}))) {
        Err(error @ StoreError::IdempotencyConflict { .. }) => {
            assert_eq!(error.code(), ErrorCode::IdempotencyConflict);
            assert!(
                error.to_string().contains(first.operation_id.as_str()),
                "{error}"
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }

    // The project is part of the key: absent and present are different requests.
    let mut with_project = first.key.clone();
    with_project.project_id = Some(ProjectId::parse("pj_1").expect("project"));
    assert!(
        store
            .reserve(&request(&with_project, json!({"title": "Other"})))
            .expect("project")
            .created
    );

    assert_eq!(
        store.lookup(&first.key).expect("lookup"),
        Some(created.receipt.clone())
    );
    assert_eq!(
        store.get(&first.operation_id).expect("get"),
        Some(created.receipt)
    );
    assert_eq!(store.list_receipts(10, 0).expect("list").len(), 2);
    assert_eq!(
        store.list_receipts(10, 0).expect("list")[1].operation_id,
        first.operation_id
    );

    let unknown = RetryEpoch::parse("re_unknown").expect("epoch");
    let error = store
        .reserve(&request(&key(&unknown, "rk_1"), json!({})))
        .expect_err("unknown epoch");
    assert_eq!(error.code(), ErrorCode::NotFound, "{error}");
}

#[test]
fn transitions_are_guarded_and_write_nothing_when_refused() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    let id = store
        .reserve(&request(&key(&epoch, "rk_1"), json!({})))
        .expect("reserve")
        .receipt
        .operation_id;
    let events = event_count(&store);

    let illegal = store.transition(
        &id,
        OperationState::Queued,
        OperationState::Succeeded,
        EffectState::Complete,
        None,
    );
    assert!(
        matches!(illegal, Err(StoreError::IllegalTransition { .. })),
        "{illegal:?}"
    );
    let mismatch = store.transition(
        &id,
        OperationState::Running,
        OperationState::Succeeded,
        EffectState::Complete,
        None,
    );
    match mismatch {
        Err(StoreError::StateMismatch { current, .. }) => {
            assert_eq!(current, OperationState::Queued)
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
    assert_eq!(event_count(&store), events);
    assert_eq!(
        store.get(&id).expect("get").expect("receipt").state,
        OperationState::Queued
    );

    setup.clock.advance(Duration::from_millis(5));
    let running = store
        .transition(
            &id,
            OperationState::Queued,
            OperationState::Running,
            EffectState::None,
            None,
        )
        .expect("run");
    assert_eq!(running.settled_at, None);
    let outcome = Outcome {
        result: Some(json!({"terminalSessionId": "t1"})),
        error: Some(OutcomeError {
            code: "INTERNAL".into(),
            message: "note".into(),
        }),
    };
    let settled = store
        .transition(
            &id,
            OperationState::Running,
            OperationState::Succeeded,
            EffectState::Complete,
            Some(outcome),
        )
        .expect("settle");
    assert_eq!(settled.settled_at, Some(setup.clock_now()));
    assert_eq!(store.get(&id).expect("get"), Some(settled.clone()));
    assert_eq!(settled.result, Some(json!({"terminalSessionId": "t1"})));

    let missing = OperationId::from_random([9; 16]);
    let error = store
        .transition(
            &missing,
            OperationState::Queued,
            OperationState::Running,
            EffectState::None,
            None,
        )
        .expect_err("missing");
    assert_eq!(error.code(), ErrorCode::NotFound);

    let page = store.events_after(0, 100).expect("events");
    let states: Vec<_> = page.events.iter().map(|e| e.state).collect();
    assert_eq!(
        states,
        [
            OperationState::Queued,
            OperationState::Running,
            OperationState::Succeeded
        ]
    );
    // The same, read for that one operation (the person's receipt view); another has none.
    assert_eq!(store.events_of(&id, 10).expect("its events"), page.events);
    assert_eq!(store.events_of(&id, 1).expect("bounded").len(), 1);
    assert!(store.events_of(&missing, 10).expect("none").is_empty());
    assert_eq!(
        page.events[0].workspace_id,
        Some(WorkspaceId::parse("ws_test").expect("ws"))
    );
}

#[test]
fn the_event_feed_pages_prunes_and_reports_expired_cursors() {
    let setup = setup();
    let options = StoreOptions {
        caps: Caps {
            events: 5,
            ..Caps::default()
        },
        ..StoreOptions::default()
    };
    let store = setup.open_with(options).expect("open");
    let epoch = setup.epoch(&store, "re_a");
    for index in 0..4 {
        store
            .reserve(&request(&key(&epoch, &format!("rk_{index}")), json!({})))
            .expect("reserve");
    }
    let page = store.events_after(1, 2).expect("page");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [2, 3]
    );
    assert_eq!(
        (
            page.oldest_retained_seq,
            page.newest_seq,
            page.removed_through_seq
        ),
        (Some(1), 4, 0)
    );
    assert!(!page.cursor_expired(0));
    for index in 4..9 {
        store
            .reserve(&request(&key(&epoch, &format!("rk_{index}")), json!({})))
            .expect("reserve");
    }
    let page = store.events_after(0, 100).expect("page");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [5, 6, 7, 8, 9]
    );
    assert_eq!(page.removed_through_seq, 4);
    assert!(page.cursor_expired(3));
    assert!(!page.cursor_expired(4));
    let empty = store.events_after(9, 100).expect("empty page");
    assert!(empty.events.is_empty());
    assert_eq!(empty.newest_seq, 9);
}

#[test]
fn only_one_process_owns_a_data_dir() {
    let setup = setup();
    let store = setup.open();
    let error = setup
        .open_with(StoreOptions::default())
        .expect_err("second owner");
    assert_eq!(error.code(), ErrorCode::StoreUnavailable);
    assert!(
        error
            .to_string()
            .contains("another Lomi process is using the data dir"),
        "{error}"
    );
    drop(store);
    drop(setup.open());
}

#[test]
fn reopening_marks_unsettled_receipts_outcome_unknown_and_never_hands_them_back() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    let mut ids = Vec::new();
    for (index, target) in [
        OperationState::Queued,
        OperationState::AwaitingUser,
        OperationState::Running,
        OperationState::Cancelling,
        OperationState::Succeeded,
    ]
    .into_iter()
    .enumerate()
    {
        let id = store
            .reserve(&request(&key(&epoch, &format!("rk_{index}")), json!({})))
            .expect("reserve")
            .receipt
            .operation_id;
        let path: &[(OperationState, EffectState)] = match target {
            OperationState::AwaitingUser => &[(OperationState::AwaitingUser, EffectState::None)],
            OperationState::Running => &[(OperationState::Running, EffectState::None)],
            OperationState::Cancelling => &[
                (OperationState::Running, EffectState::Partial),
                (OperationState::Cancelling, EffectState::Partial),
            ],
            OperationState::Succeeded => &[
                (OperationState::Running, EffectState::None),
                (OperationState::Succeeded, EffectState::Complete),
            ],
            _ => &[],
        };
        let mut from = OperationState::Queued;
        for (to, effect) in path {
            store
                .transition(&id, from, *to, *effect, None)
                .expect("step");
            from = *to;
        }
        ids.push(id);
    }
    assert!(store.recovery().marked_outcome_unknown.is_empty());
    drop(store);

    let store = setup.open();
    assert_eq!(store.recovery().marked_outcome_unknown, ids[..4].to_vec());
    for id in &ids[..4] {
        let receipt = store.get(id).expect("get").expect("receipt");
        assert_eq!(
            (receipt.state, receipt.effect_state),
            (OperationState::OutcomeUnknown, EffectState::Unknown)
        );
        assert!(receipt.settled_at.is_some());
    }
    assert_eq!(
        store.get(&ids[4]).expect("get").expect("receipt").state,
        OperationState::Succeeded
    );
    assert_eq!(status(&store).unsettled_receipts, 0);
    // A retry of a recovered key returns the outcome_unknown receipt: nothing to dispatch.
    let retry = store
        .reserve(&request(&key(&epoch, "rk_2"), json!({})))
        .expect("retry");
    assert!(!retry.created);
    assert_eq!(retry.receipt.state, OperationState::OutcomeUnknown);
    // 5 reservations + 6 steps + 4 recoveries.
    assert_eq!(event_count(&store), 15);
    drop(store);
    assert!(setup.open().recovery().marked_outcome_unknown.is_empty());
}

#[test]
fn a_reservation_recorded_running_has_both_events_and_recovers_like_any_running_receipt() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    let request = request(&key(&epoch, "rk_run"), json!({"x": 1}));
    let reserved = store.reserve_running(&request).expect("reserve running");
    assert!(reserved.created);
    assert_eq!(
        (reserved.receipt.state, reserved.receipt.effect_state),
        (OperationState::Running, EffectState::None)
    );
    let id = reserved.receipt.operation_id.clone();
    assert_eq!(
        store.get(&id).expect("get").expect("receipt").state,
        OperationState::Running
    );
    let page = store.events_after(0, 10).expect("events");
    let states: Vec<_> = page.events.iter().map(|e| e.state).collect();
    assert_eq!(states, [OperationState::Queued, OperationState::Running]);
    // A retry is the same receipt, created once; the other reservation kind answers the same.
    let retry = store.reserve(&request).expect("retry");
    assert!(!retry.created);
    assert_eq!(retry.receipt.operation_id, id);
    drop(store);

    let store = setup.open();
    assert_eq!(
        store.recovery().marked_outcome_unknown,
        std::slice::from_ref(&id)
    );
    assert_eq!(
        store.get(&id).expect("get").expect("receipt").state,
        OperationState::OutcomeUnknown
    );
}

#[test]
fn pragmas_hold_on_every_open() {
    let setup = setup();
    for _ in 0..3 {
        let store = setup.open();
        assert_eq!(store.pragma_audit().expect("audit"), ("wal".to_owned(), 2));
        drop(store);
    }
    let raw = setup.database();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("mode");
    assert_eq!(mode, "wal", "WAL is persistent in the file itself");
}

#[test]
fn a_store_from_a_newer_lomi_is_refused_not_downgraded() {
    let setup = setup();
    drop(setup.open());
    let newer = SCHEMA_VERSION + 1;
    setup
        .database()
        .pragma_update(None, "user_version", newer)
        .expect("bump version");
    let error = setup
        .open_with(StoreOptions::default())
        .expect_err("refused");
    assert_eq!(error.code(), ErrorCode::StoreUnavailable);
    assert!(
        error.to_string().contains("written by a newer Lomi"),
        "{error}"
    );
    let version: u32 = setup
        .database()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(version, newer);
}

#[test]
fn a_full_disk_refuses_the_reservation_and_writes_nothing() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    drop(store);
    let pages: u32 = setup
        .database()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .expect("pages");
    let store = setup
        .open_with(StoreOptions {
            max_page_count: Some(pages),
            ..StoreOptions::default()
        })
        .expect("open with a size cap");
    let mut admitted = 0;
    let failed = loop {
        assert!(admitted < 10_000, "the size cap never bit");
        let attempt = request(
            &key(&epoch, &format!("rk_{admitted}")),
            json!({"pad": "x".repeat(200)}),
        );
        match store.reserve(&attempt) {
            Ok(reservation) => {
                assert!(reservation.created);
                admitted += 1;
            }
            Err(error) => {
                assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
                assert!(error.to_string().contains("full"), "{error}");
                break attempt;
            }
        }
    };
    assert!(
        store.lookup(&failed.key).expect("lookup").is_none(),
        "half-written receipt"
    );
    assert_eq!(
        event_count(&store),
        admitted,
        "an event without its receipt"
    );
    // Still usable: reads and retries of admitted keys work.
    assert!(
        !store
            .reserve(&request(
                &key(&epoch, "rk_0"),
                json!({"pad": "x".repeat(200)})
            ))
            .expect("retry")
            .created
    );
    assert_eq!(integrity(&setup.database()), "ok");
    drop(store);

    let store = setup.open();
    assert_eq!(store.recovery().marked_outcome_unknown.len(), admitted);
    assert!(store.reserve(&failed).expect("room again").created);
    // Each admitted reservation, its recovery on reopen, and the new one.
    assert_eq!(event_count(&store), 2 * admitted + 1);
}

#[test]
fn a_locked_database_refuses_writes_but_answers_retries() {
    let setup = setup();
    let options = StoreOptions {
        busy_timeout: Duration::from_millis(200),
        ..StoreOptions::default()
    };
    let store = setup.open_with(options).expect("open");
    let epoch = setup.epoch(&store, "re_a");
    let existing = request(&key(&epoch, "rk_1"), json!({}));
    store.reserve(&existing).expect("reserve");

    let other_program = setup.database();
    other_program
        .execute_batch("BEGIN EXCLUSIVE")
        .expect("lock");
    let blocked = request(&key(&epoch, "rk_2"), json!({}));
    let error = store.reserve(&blocked).expect_err("locked");
    assert_eq!(error.code(), ErrorCode::StoreUnavailable);
    assert!(
        error.to_string().contains("locked by another program"),
        "{error}"
    );
    // WAL readers are not blocked: a retry is still answered, and it must not dispatch.
    assert!(
        !store
            .reserve(&existing)
            .expect("retry while locked")
            .created
    );
    other_program.execute_batch("ROLLBACK").expect("unlock");

    assert!(store.reserve(&blocked).expect("after unlock").created);
}

#[test]
fn unwritable_paths_make_the_store_unavailable() {
    // The tests run as root, where chmod does not stop writes. Instead each case puts the
    // wrong kind of file where the store must write, as a broken or hostile data dir would.
    let setup = setup();

    // The data dir path is a regular file: the directory cannot be created.
    std::fs::write(setup.data_dir(), b"not a directory").expect("file");
    let error = setup
        .open_with(StoreOptions::default())
        .expect_err("data dir is a file");
    assert_eq!(error.code(), ErrorCode::StoreUnavailable);
    assert!(
        error
            .to_string()
            .contains(&setup.data_dir().display().to_string()),
        "{error}"
    );
    std::fs::remove_file(setup.data_dir()).expect("remove");

    // The database path is a directory: SQLite cannot open it.
    std::fs::create_dir_all(setup.data_dir().join(lomi_store::DATABASE_FILE)).expect("dir");
    let error = setup
        .open_with(StoreOptions::default())
        .expect_err("database is a directory");
    assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
    std::fs::remove_dir(setup.data_dir().join(lomi_store::DATABASE_FILE)).expect("remove");

    // The write-ahead log path is a directory: the journal cannot be written.
    let wal = setup
        .data_dir()
        .join(format!("{}-wal", lomi_store::DATABASE_FILE));
    std::fs::create_dir_all(&wal).expect("dir");
    let error = setup
        .open_with(StoreOptions::default())
        .expect_err("wal is a directory");
    assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
    std::fs::remove_dir(&wal).expect("remove");

    // With the obstacles gone the same data dir opens and works.
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    assert!(
        store
            .reserve(&request(&key(&epoch, "rk_1"), json!({})))
            .expect("reserve")
            .created
    );
}

#[test]
fn the_receipt_cap_of_4096_is_enforced_and_retries_still_answer() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    let started = std::time::Instant::now();
    for index in 0..4_096 {
        let reservation = store
            .reserve(&request(&key(&epoch, &format!("rk_{index}")), json!({})))
            .expect("reserve");
        assert!(reservation.created);
    }
    eprintln!("4,096 durable reservations took {:?}", started.elapsed());
    let before = status(&store);
    assert_eq!((before.receipts, before.receipt_cap), (4_096, 4_096));
    let events = event_count(&store);

    let error = store
        .reserve(&request(&key(&epoch, "rk_new"), json!({})))
        .expect_err("at the cap");
    assert_eq!(error.code(), ErrorCode::ResourceExhausted);
    assert!(
        error.to_string().contains("lomi store reconcile"),
        "{error}"
    );
    assert_eq!(status(&store), before);
    assert_eq!(event_count(&store), events);

    assert!(
        !store
            .reserve(&request(&key(&epoch, "rk_17"), json!({})))
            .expect("retry")
            .created
    );
    let conflict = store
        .reserve(&request(&key(&epoch, "rk_17"), json!({"other": 1})))
        .expect_err("conflict");
    assert_eq!(conflict.code(), ErrorCode::IdempotencyConflict);
}

#[test]
fn the_retry_epoch_cap_of_4096_is_enforced() {
    let setup = setup();
    let store = setup.open();
    let now = setup.clock_now();
    for index in 0..4_096 {
        assert!(
            store
                .create_retry_epoch(&epoch_record(&format!("re_{index}"), now))
                .expect("epoch")
        );
    }
    let before = status(&store);
    assert_eq!(before.retry_epochs, 4_096);
    let error = store
        .create_retry_epoch(&epoch_record("re_new", now))
        .expect_err("at the cap");
    assert_eq!(error.code(), ErrorCode::ResourceExhausted);
    assert_eq!(status(&store), before);
    assert!(
        store
            .retry_epoch(&RetryEpoch::parse("re_new").expect("id"))
            .expect("read")
            .is_none()
    );
    // Recording an existing epoch again is still answered.
    assert!(
        !store
            .create_retry_epoch(&epoch_record("re_7", now))
            .expect("again")
    );
}

#[test]
fn reconcile_removes_only_expired_settled_records() {
    let setup = setup();
    let store = setup.open_with(small_caps(4, 2)).expect("open");
    let a = setup.epoch(&store, "re_a");
    setup.clock.advance(Duration::from_secs(12 * 3600));
    let b = setup.epoch(&store, "re_b");
    let reserve = |epoch: &RetryEpoch, name: &str| {
        store
            .reserve(&request(&key(epoch, name), json!({})))
            .expect("reserve")
            .receipt
            .operation_id
    };
    let settle = |id: &OperationId| {
        store
            .transition(
                id,
                OperationState::Queued,
                OperationState::Running,
                EffectState::None,
                None,
            )
            .expect("run");
        store
            .transition(
                id,
                OperationState::Running,
                OperationState::Succeeded,
                EffectState::Complete,
                None,
            )
            .expect("settle");
    };
    let a_settled = reserve(&a, "rk_1");
    settle(&a_settled);
    let a_running = reserve(&a, "rk_2");
    store
        .transition(
            &a_running,
            OperationState::Queued,
            OperationState::Running,
            EffectState::None,
            None,
        )
        .expect("run");
    let b_settled = reserve(&b, "rk_1");
    settle(&b_settled);
    let b_queued = reserve(&b, "rk_2");

    // Caps reached, nothing expired: maintenance frees nothing.
    assert_eq!(
        store
            .reserve(&request(&key(&b, "rk_3"), json!({})))
            .expect_err("cap")
            .code(),
        ErrorCode::ResourceExhausted
    );
    assert_eq!(
        store
            .create_retry_epoch(&epoch_record("re_c", setup.clock_now()))
            .expect_err("cap")
            .code(),
        ErrorCode::ResourceExhausted
    );
    let nothing = store.reconcile(&expired_only()).expect("reconcile");
    assert_eq!(
        (
            nothing.retry_epochs_removed,
            nothing.receipts_archived,
            nothing.events_removed
        ),
        (0, 0, 0)
    );

    // Epoch A expires (24 h after its creation); B does not.
    setup.clock.advance(Duration::from_secs(12 * 3600));
    let status = status(&store);
    assert_eq!(
        (status.expired_retry_epochs, status.removable_receipts),
        (1, 1)
    );
    let preview = store.reconcile_preview(&expired_only()).expect("preview");
    assert_eq!(
        (
            preview.retry_epochs_removed,
            preview.receipts_archived,
            preview.events_removed,
            preview.ended_retry_epochs_kept
        ),
        (0, 1, 3, 1)
    );
    assert_eq!(
        store.get(&a_settled).expect("get").map(|r| r.state),
        Some(OperationState::Succeeded),
        "preview wrote"
    );
    assert_eq!(
        store.reconcile(&expired_only()).expect("reconcile"),
        preview
    );
    assert!(store.get(&a_settled).expect("get").is_none());
    assert_eq!(
        store
            .history_get(&a_settled)
            .expect("history")
            .map(|archived| archived.receipt.state),
        Some(OperationState::Succeeded),
        "an archived receipt is in the history"
    );
    for kept in [&a_running, &b_settled, &b_queued] {
        assert!(store.get(kept).expect("get").is_some(), "{kept} removed");
    }
    assert!(
        store.retry_epoch(&a).expect("epoch").is_some(),
        "epoch with an unsettled receipt removed"
    );
    // Room for one receipt again; cursors older than removed events expire.
    assert!(
        store
            .reserve(&request(&key(&b, "rk_3"), json!({})))
            .expect("room")
            .created
    );
    assert!(store.events_after(0, 10).expect("page").cursor_expired(0));

    // Once A's last receipt settles, A goes with it.
    store
        .transition(
            &a_running,
            OperationState::Running,
            OperationState::Failed,
            EffectState::None,
            None,
        )
        .expect("fail");
    let report = store.reconcile(&expired_only()).expect("reconcile");
    assert_eq!(
        (report.retry_epochs_removed, report.receipts_archived),
        (1, 1)
    );
    assert!(store.retry_epoch(&a).expect("epoch").is_none());
    assert!(
        store
            .create_retry_epoch(&epoch_record("re_c", setup.clock_now()))
            .expect("room")
    );

    // B expires too: its settled receipt goes, its queued one stays until it settles.
    setup.clock.advance(Duration::from_secs(13 * 3600));
    let report = store.reconcile(&expired_only()).expect("reconcile");
    assert_eq!(
        (
            report.retry_epochs_removed,
            report.receipts_archived,
            report.ended_retry_epochs_kept
        ),
        (0, 1, 1)
    );
    assert!(store.get(&b_queued).expect("get").is_some());
    assert!(store.retry_epoch(&b).expect("epoch").is_some());
}

#[test]
fn concurrent_reservations_create_each_key_exactly_once() {
    const THREADS: usize = 32;
    const ROUNDS: usize = 1_000;
    const KEYS: usize = 50;
    let setup = setup();
    let store = Arc::new(setup.open());
    let epoch = setup.epoch(&store, "re_a");
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let store = Arc::clone(&store);
            let epoch = epoch.clone();
            std::thread::spawn(move || {
                // Only the first reservation of a key writes; the rest are reads.
                (0..ROUNDS)
                    .map(|round| {
                        let index = (round * 7 + thread * 13) % KEYS;
                        let reservation = store
                            .reserve(&request(
                                &key(&epoch, &format!("rk_{index}")),
                                json!({"same": true}),
                            ))
                            .expect("reserve");
                        (index, reservation.receipt.operation_id, reservation.created)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut created: HashMap<usize, usize> = HashMap::new();
    let mut ids: HashMap<usize, HashSet<OperationId>> = HashMap::new();
    for worker in workers {
        for (index, id, was_created) in worker.join().expect("worker") {
            *created.entry(index).or_default() += usize::from(was_created);
            ids.entry(index).or_default().insert(id);
        }
    }
    assert_eq!(ids.len(), KEYS);
    for index in 0..KEYS {
        assert_eq!(
            created.get(&index),
            Some(&1),
            "key {index} created {:?} times",
            created.get(&index)
        );
        assert_eq!(
            ids[&index].len(),
            1,
            "key {index} answered with several operation ids"
        );
    }
    assert_eq!(status(&store).receipts, KEYS as u64);
}

#[test]
fn concurrent_reservations_of_new_keys_are_all_durable_and_distinct() {
    const THREADS: usize = 32;
    const KEYS_PER_THREAD: usize = 25;
    let setup = setup();
    let store = Arc::new(setup.open());
    let epoch = setup.epoch(&store, "re_a");
    let contested = key(&epoch, "rk_contested");
    let barrier = Arc::new(std::sync::Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (store, epoch, contested, barrier) = (
                store.clone(),
                epoch.clone(),
                contested.clone(),
                barrier.clone(),
            );
            std::thread::spawn(move || {
                barrier.wait();
                // One key every thread wants with its own arguments: one wins, the others
                // conflict, and that refusal must not fail the reservations grouped with it.
                let contest = store.reserve(&request(&contested, json!({"thread": thread})));
                let mine = (0..KEYS_PER_THREAD)
                    .map(|index| {
                        let attempt = request(
                            &key(&epoch, &format!("rk_{thread}_{index}")),
                            json!({"thread": thread, "index": index}),
                        );
                        let reservation = store.reserve(&attempt).expect("reserve");
                        assert!(reservation.created);
                        assert_eq!(reservation.receipt.operation_id, attempt.operation_id);
                        (attempt.key, attempt.operation_id)
                    })
                    .collect::<Vec<_>>();
                (contest, mine)
            })
        })
        .collect();
    let mut answered = Vec::new();
    let (mut won, mut conflicts) = (0, 0);
    for worker in workers {
        let (contest, mine) = worker.join().expect("worker");
        match contest {
            Ok(reservation) => won += usize::from(reservation.created),
            Err(error) => {
                assert_eq!(error.code(), ErrorCode::IdempotencyConflict, "{error}");
                conflicts += 1;
            }
        }
        answered.extend(mine);
    }
    assert_eq!((won, conflicts), (1, THREADS - 1));
    let distinct: HashSet<_> = answered.iter().map(|(_, id)| id.clone()).collect();
    assert_eq!(distinct.len(), THREADS * KEYS_PER_THREAD);
    drop(store);

    // Durable: another open finds every receipt, under its key, with the id it was answered.
    let store = setup.open();
    assert_eq!(
        store.recovery().marked_outcome_unknown.len(),
        THREADS * KEYS_PER_THREAD + 1
    );
    for (key, id) in &answered {
        let receipt = store
            .lookup(key)
            .expect("lookup")
            .expect("a durable receipt");
        assert_eq!(&receipt.operation_id, id);
    }
    assert_eq!(
        status(&store).receipts,
        (THREADS * KEYS_PER_THREAD + 1) as u64
    );
    assert_eq!(integrity(&setup.database()), "ok");
}

/// A tmpfs of `size` mounted on a fresh directory for the test's life: a real disk that a
/// filler file can fill.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mounting a tmpfs on {} failed ({status}): this test fills a real disk, so it needs root (the test suite runs as root)",
            dir.path().display()
        );
        SmallDisk { dir }
    }

    /// Writes a filler file until the disk is full, down to its last bytes; returns it.
    fn fill(&self) -> PathBuf {
        let path = self.dir.path().join("filler");
        let mut filler = std::fs::File::create(&path).expect("filler");
        for chunk in [65_536, 512] {
            while filler.write_all(&vec![0; chunk]).is_ok() {}
        }
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazily, so a file still open elsewhere never leaves the mount behind.
        let _unmounted = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_full_disk_fails_every_concurrent_reservation_and_the_store_recovers_once_room_is_freed() {
    const THREADS: usize = 16;
    let disk = SmallDisk::mount("2m");
    let clock = Arc::new(ManualClock::default());
    let data_dir = disk.dir.path().join("data");
    let open = || Store::open(&data_dir, clock.clone(), StoreOptions::default()).expect("open");
    let store = Arc::new(open());
    let record = epoch_record("re_a", clock.now());
    assert!(store.create_retry_epoch(&record).expect("epoch"));
    let attempts: Vec<_> = (0..THREADS)
        .map(|thread| {
            request(
                &key(&record.retry_epoch, &format!("rk_{thread}")),
                json!({"pad": "x".repeat(1_000), "thread": thread}),
            )
        })
        .collect();
    let reserve_all = |store: &Arc<Store>| {
        let barrier = Arc::new(std::sync::Barrier::new(THREADS));
        let workers: Vec<_> = attempts
            .iter()
            .map(|attempt| {
                let (store, attempt, barrier) = (store.clone(), attempt.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    store.reserve(&attempt)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("worker"))
            .collect::<Vec<_>>()
    };

    let filler = disk.fill();
    for answer in reserve_all(&store) {
        let error = answer.expect_err("nothing is admitted on a full disk");
        assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
        assert!(error.to_string().contains("full"), "{error}");
    }
    for attempt in &attempts {
        assert!(
            store.lookup(&attempt.key).expect("reads go on").is_none(),
            "a refused reservation was recorded"
        );
    }
    assert_eq!(event_count(&store), 0, "an event of a refused reservation");
    // The person is told (store status, the window): writes fail, since when and why.
    let failing = store.write_failure().expect("writes are failing");
    assert!(failing.message.contains("full"), "{failing:?}");
    assert_eq!(
        status(&store).write_failure,
        Some(failing),
        "store status says so"
    );

    // Room again: the same store admits them, no reopen needed.
    std::fs::remove_file(filler).expect("free the disk");
    for answer in reserve_all(&store) {
        assert!(answer.expect("room again").created);
    }
    assert_eq!(store.write_failure(), None, "a commit clears the failure");
    drop(store);
    let store = open();
    assert_eq!(store.recovery().marked_outcome_unknown.len(), THREADS);
    for attempt in &attempts {
        let receipt = store
            .lookup(&attempt.key)
            .expect("lookup")
            .expect("durable");
        assert_eq!(receipt.operation_id, attempt.operation_id);
    }
    let raw = rusqlite::Connection::open(data_dir.join(lomi_store::DATABASE_FILE)).expect("raw");
    assert_eq!(integrity(&raw), "ok");
}

// ---- The receipt state machine against a model ----

#[derive(Clone, Debug)]
enum Step {
    Reserve {
        key: usize,
        payload: usize,
    },
    /// `legal`: pick among the legal steps from the model's current state, else use the raw
    /// target; `expect_current`: pass the model's current state as expected_from.
    Transition {
        key: usize,
        expected: usize,
        to: usize,
        effect: usize,
        expect_current: bool,
        legal: Option<usize>,
    },
    Reopen,
    Lookup {
        key: usize,
    },
    Get {
        key: usize,
    },
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..4usize, 0..3usize).prop_map(|(key, payload)| Step::Reserve { key, payload }),
        6 => (0..5usize, 0..8usize, 0..8usize, 0..4usize, any::<bool>(), proptest::option::of(0..16usize)).prop_map(
            |(key, expected, to, effect, expect_current, legal)| Step::Transition { key, expected, to, effect, expect_current, legal }
        ),
        1 => Just(Step::Reopen),
        1 => (0..5usize).prop_map(|key| Step::Lookup { key }),
        1 => (0..5usize).prop_map(|key| Step::Get { key }),
    ]
}

#[derive(Clone, Debug, PartialEq)]
struct ModelReceipt {
    id: OperationId,
    fingerprint: String,
    state: OperationState,
    effect: EffectState,
}

fn legal_steps(from: OperationState) -> Vec<(OperationState, EffectState)> {
    OperationState::ALL
        .into_iter()
        .flat_map(|to| EffectState::ALL.into_iter().map(move |effect| (to, effect)))
        .filter(|(to, effect)| from.can_become(*to, *effect))
        .collect()
}

fn run_model(steps: Vec<Step>) -> Result<(), TestCaseError> {
    let setup = setup();
    let mut store = Some(setup.open());
    let epoch = setup.epoch(store.as_ref().expect("open"), "re_model");
    let payloads = [json!({"a": 1}), json!({"a": 2}), json!({"b": [1, 2]})];
    let keys: Vec<ReceiptKey> = (0..4).map(|i| key(&epoch, &format!("rk_{i}"))).collect();
    let mut model: BTreeMap<usize, ModelReceipt> = BTreeMap::new();
    let mut events = 0usize;
    for step in steps {
        let current = store.as_ref().expect("store is open");
        match step {
            Step::Reserve { key, payload } => {
                let attempt = ReservationRequest {
                    fingerprint: fingerprint(&payloads[payload], None, None),
                    ..request(&keys[key], json!(null))
                };
                let actual = current.reserve(&attempt);
                match model.get(&key) {
                    None => {
                        let reservation =
                            actual.map_err(|e| TestCaseError::fail(format!("reserve: {e}")))?;
                        prop_assert!(reservation.created);
                        prop_assert_eq!(&reservation.receipt.operation_id, &attempt.operation_id);
                        model.insert(
                            key,
                            ModelReceipt {
                                id: attempt.operation_id.clone(),
                                fingerprint: attempt.fingerprint.clone(),
                                state: OperationState::Queued,
                                effect: EffectState::None,
                            },
                        );
                        events += 1;
                    }
                    Some(existing) if existing.fingerprint == attempt.fingerprint => {
                        let reservation =
                            actual.map_err(|e| TestCaseError::fail(format!("retry: {e}")))?;
                        prop_assert!(!reservation.created);
                        prop_assert_eq!(&reservation.receipt.operation_id, &existing.id);
                        prop_assert_eq!(reservation.receipt.state, existing.state);
                    }
                    Some(existing) => match actual {
                        Err(StoreError::IdempotencyConflict { operation_id }) => {
                            prop_assert_eq!(&operation_id, &existing.id)
                        }
                        other => {
                            return Err(TestCaseError::fail(format!(
                                "expected a conflict, got {other:?}"
                            )));
                        }
                    },
                }
            }
            Step::Transition {
                key,
                expected,
                to,
                effect,
                expect_current,
                legal,
            } => {
                let entry = model.get(&key).cloned();
                let id = entry
                    .as_ref()
                    .map_or_else(|| OperationId::from_random([7; 16]), |m| m.id.clone());
                let mut expected = OperationState::ALL[expected];
                let (mut to, mut effect) = (OperationState::ALL[to], EffectState::ALL[effect]);
                if let Some(entry) = &entry {
                    if expect_current {
                        expected = entry.state;
                    }
                    let options = legal_steps(expected);
                    if let (Some(choice), false) = (legal, options.is_empty()) {
                        (to, effect) = options[choice % options.len()];
                    }
                }
                let actual = current.transition(&id, expected, to, effect, None);
                if !expected.can_become(to, effect) {
                    prop_assert!(
                        matches!(actual, Err(StoreError::IllegalTransition { .. })),
                        "{:?}",
                        actual
                    );
                } else if let Some(entry) = entry {
                    if entry.state != expected {
                        match actual {
                            Err(StoreError::StateMismatch { current, .. }) => {
                                prop_assert_eq!(current, entry.state)
                            }
                            other => {
                                return Err(TestCaseError::fail(format!(
                                    "expected a mismatch, got {other:?}"
                                )));
                            }
                        }
                    } else {
                        let receipt =
                            actual.map_err(|e| TestCaseError::fail(format!("transition: {e}")))?;
                        prop_assert_eq!((receipt.state, receipt.effect_state), (to, effect));
                        prop_assert_eq!(receipt.settled_at.is_some(), to.is_settled());
                        let entry = model.get_mut(&key).expect("modelled");
                        (entry.state, entry.effect) = (to, effect);
                        events += 1;
                    }
                } else {
                    prop_assert!(
                        matches!(actual, Err(StoreError::NotFound { .. })),
                        "{:?}",
                        actual
                    );
                }
            }
            Step::Reopen => {
                drop(store.take());
                let reopened = setup.open();
                let mut expected_marked: Vec<OperationId> = Vec::new();
                for entry in model.values_mut().filter(|m| !m.state.is_settled()) {
                    (entry.state, entry.effect) =
                        (OperationState::OutcomeUnknown, EffectState::Unknown);
                    expected_marked.push(entry.id.clone());
                    events += 1;
                }
                let mut marked = reopened.recovery().marked_outcome_unknown.clone();
                marked.sort();
                expected_marked.sort();
                prop_assert_eq!(marked, expected_marked);
                store = Some(reopened);
            }
            Step::Lookup { key } => {
                let found = if key < keys.len() {
                    current.lookup(&keys[key])
                } else {
                    current.lookup(&self::key(&epoch, "rk_none"))
                };
                let found = found.map_err(|e| TestCaseError::fail(format!("lookup: {e}")))?;
                let expected = model.get(&key).map(|m| (m.id.clone(), m.state, m.effect));
                prop_assert_eq!(
                    found.map(|r| (r.operation_id, r.state, r.effect_state)),
                    expected
                );
            }
            Step::Get { key } => {
                let id = model
                    .get(&key)
                    .map_or_else(|| OperationId::from_random([8; 16]), |m| m.id.clone());
                let found = current
                    .get(&id)
                    .map_err(|e| TestCaseError::fail(format!("get: {e}")))?;
                let expected = model.get(&key).map(|m| (m.id.clone(), m.state, m.effect));
                prop_assert_eq!(
                    found.map(|r| (r.operation_id, r.state, r.effect_state)),
                    expected
                );
            }
        }
        prop_assert_eq!(event_count(store.as_ref().expect("open")), events);
    }
    let current = store.as_ref().expect("open");
    prop_assert_eq!(status(current).receipts, model.len() as u64);
    Ok(())
}

/// The long forms of the crash and property suites (hundreds of kills): `scripts/soak` runs
/// them by name; CI and a plain `cargo test` run the short forms.
fn soak_tests() -> bool {
    std::env::var("LOMI_SOAK_TESTS").is_ok_and(|v| v == "1")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if soak_tests() { 512 } else { 48 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_store_follows_the_receipt_state_machine(steps in proptest::collection::vec(step_strategy(), 1..40)) {
        run_model(steps)?;
    }
}

// ---- Crashes: a child process SIGKILLed at random points ----

const CRASH_KEYS: usize = 64;

fn crash_key(epoch: &str, index: usize) -> ReceiptKey {
    ReceiptKey {
        pairing_id: PairingId::parse("pr_test").expect("pairing"),
        retry_epoch: RetryEpoch::parse(epoch).expect("epoch"),
        project_id: None,
        tool: ToolName("lomi_crash_test".into()),
        request_key: RequestKey::parse(format!("rk_{index}")).expect("request key"),
    }
}

fn append_synced(path: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open log");
    // One write per line; a kill can still cut it short (see `drop_torn_tail`).
    file.write_all(format!("{line}\n").as_bytes())
        .expect("write log");
    file.sync_all().expect("fsync log");
}

/// Threads of the crash child: several, so a kill also lands while a group of reservations and
/// transitions is being committed together.
const CRASH_THREADS: usize = 4;

/// The child side of the crash test: does nothing unless `LOMI_CRASH_CHILD_DIR` is set.
#[test]
fn crash_child() {
    let Ok(data_dir) = std::env::var("LOMI_CRASH_CHILD_DIR") else {
        return;
    };
    let logs = PathBuf::from(std::env::var("LOMI_CRASH_LOG_DIR").expect("log dir"));
    let epoch = std::env::var("LOMI_CRASH_EPOCH").expect("epoch");
    let store = Store::open(
        Path::new(&data_dir),
        Arc::new(SystemClock),
        StoreOptions::default(),
    )
    .expect("child open");
    println!("progress opened");
    std::thread::scope(|scope| {
        for _ in 0..CRASH_THREADS {
            scope.spawn(|| crash_child_work(&store, &logs, &epoch));
        }
    });
}

/// One thread of the crash child: reserves random keys, and runs and settles the new ones,
/// logging each step (synced) after the store answered it.
fn crash_child_work(store: &Store, logs: &Path, epoch: &str) {
    for _ in 0..100_000 {
        let index = rand::random_range(0..CRASH_KEYS);
        let attempt = ReservationRequest {
            key: crash_key(epoch, index),
            operation_id: OperationId::from_random(rand::random()),
            workspace_id: None,
            fingerprint: fingerprint(&json!({"index": index}), None, None),
            decided_by: None,
        };
        let reservation = store.reserve(&attempt).expect("child reserve");
        let id = reservation.receipt.operation_id;
        append_synced(
            &logs.join("reserved.log"),
            &format!("reserved {epoch}/{index} {id}"),
        );
        println!("progress reserved");
        if reservation.created {
            store
                .transition(
                    &id,
                    OperationState::Queued,
                    OperationState::Running,
                    EffectState::None,
                    None,
                )
                .expect("child run");
            append_synced(
                &logs.join("dispatch.log"),
                &format!("dispatch {epoch}/{index} {id}"),
            );
            println!("progress dispatched");
            let outcome = Outcome {
                result: Some(json!({"index": index})),
                error: None,
            };
            store
                .transition(
                    &id,
                    OperationState::Running,
                    OperationState::Succeeded,
                    EffectState::Complete,
                    Some(outcome),
                )
                .expect("child settle");
            println!("progress settled");
        }
    }
}

/// Cuts a log back to its last whole line. One `write` per line is not enough: a write that
/// crosses a page boundary of the file can be cut short by SIGKILL, leaving part of a line
/// (whose event did happen, but whose id is incomplete) that the next child would append to.
fn drop_torn_tail(path: &Path) {
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    if bytes.last().is_none_or(|last| *last == b'\n') {
        return;
    }
    let whole = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |end| end + 1);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open log");
    file.set_len(whole as u64).expect("truncate torn log line");
    eprintln!(
        "{}: dropped a torn line {:?}",
        path.display(),
        String::from_utf8_lossy(&bytes[whole..])
    );
}

fn log_lines(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            assert_eq!(parts.len(), 3, "torn log line {line:?}");
            (parts[1].to_owned(), parts[2].to_owned())
        })
        .collect()
}

#[test]
fn crashes_never_lose_nor_replay_an_operation() {
    if std::env::var("LOMI_CRASH_CHILD_DIR").is_ok() {
        return;
    }
    let iterations = if soak_tests() { 200 } else { 20 };
    let setup = setup();
    let logs = setup.dir.path().to_path_buf();
    let executable = std::env::current_exe().expect("test binary");
    let mut recovered_total = 0;
    for iteration in 0..iterations {
        // A new epoch every 4 iterations keeps new keys (writes) coming while later children
        // still meet the keys, receipts and recoveries of earlier ones.
        let epoch = format!("re_crash_{}", iteration / 4);
        {
            let store = Store::open(
                &setup.data_dir(),
                Arc::new(SystemClock),
                StoreOptions::default(),
            )
            .expect("parent open");
            let id = RetryEpoch::parse(epoch.as_str()).expect("epoch id");
            if store.retry_epoch(&id).expect("read epoch").is_none() {
                store
                    .create_retry_epoch(&epoch_record(&epoch, SystemClock.now()))
                    .expect("epoch");
            }
        }
        let stderr_path = logs.join(format!("child-{iteration}.stderr"));
        let mut child = Command::new(&executable)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env("LOMI_CRASH_CHILD_DIR", setup.data_dir())
            .env("LOMI_CRASH_LOG_DIR", &logs)
            .env("LOMI_CRASH_EPOCH", &epoch)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
            .spawn()
            .expect("spawn child");
        let target = rand::random_range(1..=30usize);
        let stdout = child.stdout.take().expect("child stdout");
        let mut progress = 0;
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("child line");
            if line.starts_with("progress") {
                progress += 1;
                if progress == target {
                    break;
                }
            }
        }
        if progress < target {
            let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("child {iteration} ended after {progress} of {target} steps; stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_micros(rand::random_range(0..500)));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap child");
        drop_torn_tail(&logs.join("reserved.log"));
        drop_torn_tail(&logs.join("dispatch.log"));

        assert_eq!(integrity(&setup.database()), "ok", "iteration {iteration}");
        let store = Store::open(
            &setup.data_dir(),
            Arc::new(SystemClock),
            StoreOptions::default(),
        )
        .expect("reopen");
        recovered_total += store.recovery().marked_outcome_unknown.len();
        for id in &store.recovery().marked_outcome_unknown {
            let receipt = store.get(id).expect("get").expect("recovered receipt");
            assert_eq!(
                (receipt.state, receipt.effect_state),
                (OperationState::OutcomeUnknown, EffectState::Unknown)
            );
        }
        assert_eq!(
            status(&store).unsettled_receipts,
            0,
            "iteration {iteration}"
        );

        let mut logged: HashMap<String, String> = HashMap::new();
        for (key_text, id) in log_lines(&logs.join("reserved.log")) {
            let previous = logged.entry(key_text.clone()).or_insert_with(|| id.clone());
            assert_eq!(
                previous, &id,
                "key {key_text} answered with two operation ids"
            );
        }
        for (key_text, id) in &logged {
            let (epoch_name, index) = key_text.split_once('/').expect("key");
            let index: usize = index.parse().expect("index");
            let receipt = store.lookup(&crash_key(epoch_name, index)).expect("lookup");
            assert_eq!(
                receipt.map(|r| r.operation_id.to_string()),
                Some(id.clone()),
                "lost receipt for {key_text}"
            );
        }
        let mut dispatched_ids = HashSet::new();
        let mut dispatched_keys = HashSet::new();
        for (key_text, id) in log_lines(&logs.join("dispatch.log")) {
            assert!(
                dispatched_ids.insert(id.clone()),
                "operation {id} dispatched twice"
            );
            assert!(
                dispatched_keys.insert(key_text.clone()),
                "key {key_text} dispatched twice"
            );
            let receipt = store
                .get(&OperationId::parse(id.clone()).expect("id"))
                .expect("get")
                .unwrap_or_else(|| panic!("dispatched {id} ({key_text}) is not in the store"));
            assert!(
                matches!(
                    receipt.state,
                    OperationState::Succeeded | OperationState::OutcomeUnknown
                ),
                "dispatched {id} is {}",
                receipt.state
            );
        }
        for receipt in store.list_receipts(usize::MAX, 0).expect("list") {
            if receipt.state == OperationState::Succeeded {
                assert!(
                    dispatched_ids.contains(receipt.operation_id.as_str()),
                    "succeeded without a dispatch"
                );
            }
        }
        drop(store);
    }
    eprintln!("{iterations} kills; {recovered_total} receipts recovered as outcome_unknown");
}

// ---- Retention: retiring retry epochs, the history, and their races and crashes ----

fn retire(selector: RetireSelector) -> Maintenance {
    Maintenance {
        retire: Some(selector),
        idle: IdleRule::new(None),
    }
}

fn settle(store: &Store, id: &OperationId) {
    store
        .transition(
            id,
            OperationState::Queued,
            OperationState::Running,
            EffectState::None,
            None,
        )
        .expect("run");
    store
        .transition(
            id,
            OperationState::Running,
            OperationState::Succeeded,
            EffectState::Complete,
            Some(Outcome {
                result: Some(json!({"done": true})),
                error: None,
            }),
        )
        .expect("settle");
}

fn reserve_new(store: &Store, epoch: &RetryEpoch, name: &str) -> OperationId {
    let reservation = store
        .reserve(&request(&key(epoch, name), json!({"name": name})))
        .expect("reserve");
    assert!(reservation.created, "{name} was not new");
    reservation.receipt.operation_id
}

/// Where a receipt is: (in the live store, in the history), read straight from SQLite.
fn places(connection: &rusqlite::Connection, id: &str) -> (i64, i64) {
    let live = connection
        .query_row(
            "SELECT COUNT(*) FROM receipts WHERE operation_id = ?1",
            [id],
            |r| r.get(0),
        )
        .expect("live count");
    let history = connection
        .query_row(
            "SELECT COUNT(*) FROM receipt_history WHERE operation_id = ?1",
            [id],
            |r| r.get(0),
        )
        .expect("history count");
    (live, history)
}

#[test]
fn a_retired_epoch_is_refused_and_only_its_settled_receipts_move_to_the_history() {
    let setup = setup();
    let store = setup.open_with(small_caps(4, 4)).expect("open");
    let epoch = setup.epoch(&store, "re_a");
    let other = setup.epoch(&store, "re_b");
    let settled = reserve_new(&store, &epoch, "rk_settled");
    settle(&store, &settled);
    let running = reserve_new(&store, &epoch, "rk_running");
    store
        .transition(
            &running,
            OperationState::Queued,
            OperationState::Running,
            EffectState::Partial,
            None,
        )
        .expect("run");
    let kept = reserve_new(&store, &other, "rk_other");
    settle(&store, &kept);
    let cursor = store.events_after(0, 100).expect("events").newest_seq;
    assert_eq!(status(&store).receipts_remaining, 1);

    let preview = store
        .reconcile_preview(&retire(RetireSelector::Epoch(epoch.clone())))
        .expect("preview");
    assert_eq!(status(&store).receipts_remaining, 1, "the preview wrote");
    assert!(
        store.retirement(&epoch).expect("read").is_none(),
        "the preview wrote"
    );
    let report = store
        .reconcile(&retire(RetireSelector::Epoch(epoch.clone())))
        .expect("retire");
    assert_eq!(report, preview, "the preview differs from what was done");
    assert_eq!(report.retired.len(), 1);
    assert_eq!(
        (
            report.retired[0].receipts,
            report.retired[0].unsettled_receipts
        ),
        (2, 1)
    );
    assert_eq!(
        (
            report.receipts_archived,
            report.events_removed,
            report.retry_epochs_removed,
            report.ended_retry_epochs_kept
        ),
        (1, 3, 0, 1)
    );

    // The settled receipt moved whole, with its trail; the running one did not move.
    assert!(store.get(&settled).expect("get").is_none());
    let archived = store
        .history_get(&settled)
        .expect("history")
        .expect("archived");
    assert_eq!(
        archived.archived_because,
        lomi_store::ArchiveReason::Retired
    );
    assert_eq!(archived.receipt.result, Some(json!({"done": true})));
    assert_eq!(
        archived
            .trail
            .iter()
            .map(|step| step.state)
            .collect::<Vec<_>>(),
        vec![
            OperationState::Queued,
            OperationState::Running,
            OperationState::Succeeded
        ]
    );
    assert_eq!(
        store.get(&running).expect("get").map(|r| r.state),
        Some(OperationState::Running)
    );
    assert!(store.history_get(&running).expect("history").is_none());
    assert!(
        store.get(&kept).expect("get").is_some(),
        "another epoch's receipt moved"
    );

    // Refused from now on: new keys, and the retry of the archived request (which would
    // otherwise find no receipt and dispatch again).
    for name in ["rk_new", "rk_settled"] {
        let refused = store
            .reserve(&request(&key(&epoch, name), json!({"name": name})))
            .expect_err("retired");
        assert_eq!(refused.code(), ErrorCode::RetryEpochExpired, "{refused}");
        assert!(
            refused.to_string().contains("the person ended"),
            "{refused}"
        );
    }
    let tombstone = store.retirement(&epoch).expect("read").expect("tombstone");
    assert_eq!(tombstone.valid_until, setup.clock_now().plus_millis(DAY_MS));
    assert!(store.retirement(&other).expect("read").is_none());
    assert_eq!(
        store
            .create_retry_epoch(&epoch_record("re_a", setup.clock_now()))
            .expect_err("a retired epoch is never recorded again")
            .code(),
        ErrorCode::Internal
    );
    // The room is back, and the feed says which cursors lost events.
    let after = status(&store);
    assert_eq!(
        (
            after.receipts,
            after.receipts_remaining,
            after.history_receipts,
            after.retired_retry_epochs
        ),
        (2, 2, 1, 1)
    );
    assert!(store.events_after(0, 10).expect("page").cursor_expired(0));
    assert!(
        !store
            .events_after(cursor, 10)
            .expect("page")
            .cursor_expired(cursor)
    );

    // Once the running receipt settles, a plain reconcile moves it and the epoch's row; the
    // tombstone stays until the epoch's 24 hours are over.
    store
        .transition(
            &running,
            OperationState::Running,
            OperationState::Failed,
            EffectState::Partial,
            None,
        )
        .expect("fail");
    let report = store.reconcile(&expired_only()).expect("reconcile");
    assert_eq!(
        (
            report.receipts_archived,
            report.retry_epochs_removed,
            report.tombstones_removed
        ),
        (1, 1, 0)
    );
    assert!(store.retry_epoch(&epoch).expect("epoch").is_none());
    assert_eq!(
        store
            .reserve(&request(&key(&epoch, "rk_late"), json!({})))
            .expect_err("still retired")
            .code(),
        ErrorCode::RetryEpochExpired
    );
    setup.clock.advance(Duration::from_secs(24 * 3600));
    let report = store.reconcile(&expired_only()).expect("reconcile");
    assert_eq!(report.tombstones_removed, 1);
    assert_eq!(
        status(&store).history_receipts,
        3,
        "B expired and moved too"
    );
    assert_eq!(integrity(&setup.database()), "ok");
}

#[test]
fn the_history_is_append_only_and_receipts_never_enter_a_retired_epoch() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    let id = reserve_new(&store, &epoch, "rk_1");
    settle(&store, &id);
    store
        .reconcile(&retire(RetireSelector::Epoch(epoch.clone())))
        .expect("retire");
    drop(store);
    // The rules hold in SQLite itself, for any writer.
    let raw = setup.database();
    assert!(
        raw.execute("UPDATE receipt_history SET state = 'failed'", [])
            .is_err()
    );
    assert!(raw.execute("DELETE FROM receipt_history", []).is_err());
    let insert = raw.execute(
        "INSERT INTO receipts (operation_id, pairing_id, retry_epoch, project_id, tool, request_key, \
         fingerprint, state, effect_state, created_at, updated_at) VALUES \
         ('op_raw', 'pr_test', 're_a', '', 'lomi_x', 'rk_raw', 'f', 'queued', 'none', 0, 0)",
        [],
    );
    assert!(insert.is_err(), "a receipt entered a retired epoch");
    assert_eq!(places(&raw, id.as_str()), (0, 1));
}

#[test]
fn idle_means_quiet_and_settled_on_this_instance_or_any_epoch_of_another() {
    let setup = setup();
    let store = setup.open();
    let this = BrokerInstanceId::parse("bi_test").expect("instance");
    let record = |name: &str, instance: &str| RetryEpochRecord {
        broker_instance_id: BrokerInstanceId::parse(instance).expect("instance"),
        ..epoch_record(name, setup.clock_now())
    };
    for (name, instance) in [
        ("re_quiet", "bi_test"),
        ("re_busy", "bi_test"),
        ("re_recent", "bi_test"),
        ("re_old_instance", "bi_before"),
    ] {
        assert!(
            store
                .create_retry_epoch(&record(name, instance))
                .expect("epoch")
        );
    }
    let epoch = |name: &str| RetryEpoch::parse(name).expect("epoch");
    settle(&store, &reserve_new(&store, &epoch("re_quiet"), "rk_1"));
    let busy = reserve_new(&store, &epoch("re_busy"), "rk_1");
    reserve_new(&store, &epoch("re_old_instance"), "rk_1");
    setup.clock.advance(Duration::from_secs(11 * 60));
    settle(&store, &reserve_new(&store, &epoch("re_recent"), "rk_1"));
    let idle = IdleRule::new(Some(this.clone()));
    let names = |report: &lomi_store::ReconcileReport| {
        let mut names = report
            .retired
            .iter()
            .map(|e| e.retry_epoch.to_string())
            .collect::<Vec<_>>();
        names.sort();
        names
    };
    let maintenance = Maintenance {
        retire: Some(RetireSelector::Idle),
        idle: idle.clone(),
    };
    let preview = store.reconcile_preview(&maintenance).expect("preview");
    // Quiet for 11 minutes and settled: idle. An unsettled receipt keeps an epoch busy however
    // old, unless it is another instance's (refused anyway; its receipt stays unsettled).
    assert_eq!(names(&preview), vec!["re_old_instance", "re_quiet"]);
    let seen = store.status(&idle).expect("status");
    assert_eq!(seen.idle_retry_epochs, 2);
    let usage = &seen.pairings[0];
    assert_eq!(
        (
            usage.live_retry_epochs,
            usage.idle_retry_epochs,
            usage.receipts,
            usage.unsettled_receipts
        ),
        (4, 2, 4, 2)
    );
    let done = store.reconcile(&maintenance).expect("retire idle");
    assert_eq!(names(&done), names(&preview));
    assert_eq!(done.receipts_archived, 1);
    assert!(store.get(&busy).expect("get").is_some());
    // Without a running broker every live epoch is idle, but busy ones keep their receipts.
    let all = store
        .reconcile(&retire(RetireSelector::Idle))
        .expect("no broker");
    assert_eq!(names(&all), vec!["re_busy", "re_recent"]);
    assert!(
        store.get(&busy).expect("get").is_some(),
        "an unsettled receipt moved"
    );
    let last = status(&store);
    assert_eq!((last.retired_retry_epochs, last.idle_retry_epochs), (4, 0));
}

#[test]
fn retirement_by_pairing_by_age_and_by_id() {
    let setup = setup();
    let store = setup.open();
    let mine = setup.epoch(&store, "re_mine");
    setup.clock.advance(Duration::from_secs(3600));
    let theirs = RetryEpochRecord {
        pairing_id: PairingId::parse("pr_other").expect("pairing"),
        ..epoch_record("re_theirs", setup.clock_now())
    };
    store.create_retry_epoch(&theirs).expect("epoch");
    let older = store
        .reconcile_preview(&retire(RetireSelector::OlderThan(Duration::from_secs(
            30 * 60,
        ))))
        .expect("older");
    assert_eq!(older.retired.len(), 1);
    assert_eq!(older.retired[0].retry_epoch, mine);
    let by_pairing = store
        .reconcile(&retire(RetireSelector::Pairing(
            PairingId::parse("pr_other").expect("pairing"),
        )))
        .expect("pairing");
    assert_eq!(by_pairing.retired.len(), 1);
    assert_eq!(by_pairing.retired[0].retry_epoch, theirs.retry_epoch);
    // Retiring again is a no-op; an unknown id is NOT_FOUND.
    let again = store
        .reconcile(&retire(RetireSelector::Epoch(theirs.retry_epoch.clone())))
        .expect("again");
    assert!(again.retired.is_empty());
    assert_eq!(
        store
            .reconcile(&retire(RetireSelector::Epoch(
                RetryEpoch::parse("re_unknown").expect("epoch")
            )))
            .expect_err("unknown")
            .code(),
        ErrorCode::NotFound
    );
    assert!(store.retirement(&mine).expect("read").is_none());
}

#[test]
fn warnings_at_75_and_90_percent_of_either_cap() {
    use lomi_store::WarningLevel;
    let cases = [
        (0, WarningLevel::None),
        (74, WarningLevel::None),
        (75, WarningLevel::Warning),
        (89, WarningLevel::Warning),
        (90, WarningLevel::Critical),
        (99, WarningLevel::Critical),
        (100, WarningLevel::Full),
    ];
    for (used, level) in cases {
        assert_eq!(WarningLevel::of(used, 100), level, "{used} of 100");
    }
    assert_eq!(WarningLevel::of(3_072, 4_096), WarningLevel::Warning);
    assert_eq!(WarningLevel::of(3_687, 4_096), WarningLevel::Critical);
    let setup = setup();
    let store = setup.open_with(small_caps(100, 4)).expect("open");
    for name in ["re_a", "re_b", "re_c"] {
        setup.epoch(&store, name);
    }
    // 3 of 4 epochs is 75 %: the status warns even though receipts are empty.
    let status = status(&store);
    assert_eq!(
        (
            status.warning,
            status.retry_epochs_remaining,
            status.receipts_remaining
        ),
        (WarningLevel::Warning, 1, 100)
    );
}

#[test]
fn at_the_cap_retiring_idle_epochs_lets_work_go_on() {
    let setup = setup();
    let store = setup.open_with(small_caps(64, 8)).expect("open");
    let looping = setup.epoch(&store, "re_loop");
    for index in 0..64 {
        settle(
            &store,
            &reserve_new(&store, &looping, &format!("rk_{index}")),
        );
    }
    let full = store
        .reserve(&request(&key(&looping, "rk_64"), json!({})))
        .expect_err("full");
    assert_eq!(full.code(), ErrorCode::ResourceExhausted);
    assert!(
        full.to_string()
            .contains("lomi store reconcile --retire idle"),
        "{full}"
    );
    assert_eq!(status(&store).warning, lomi_store::WarningLevel::Full);
    // Nothing has expired: the old reconcile freed nothing. Retiring does.
    assert_eq!(
        store
            .reconcile(&expired_only())
            .expect("reconcile")
            .receipts_archived,
        0
    );
    let report = store
        .reconcile(&retire(RetireSelector::Idle))
        .expect("retire idle");
    assert_eq!(report.receipts_archived, 64);
    let fresh = setup.epoch(&store, "re_fresh");
    settle(&store, &reserve_new(&store, &fresh, "rk_0"));
    let status = status(&store);
    assert_eq!((status.receipts, status.history_receipts), (1, 64));
    assert_eq!(store.history_list(10, 0).expect("list").len(), 10);
    let mut seen = 0;
    let mut after = 0;
    loop {
        let page = store.history_after(after, 25).expect("export");
        let Some(last) = page.last() else { break };
        after = last.seq;
        seen += page.len();
    }
    assert_eq!(seen, 64);
}

#[test]
fn at_a_cap_an_epoch_busy_a_moment_ago_is_idle_so_one_command_frees_room() {
    let setup = setup();
    let store = setup.open_with(small_caps(8, 8)).expect("open");
    let busy = setup.epoch(&store, "re_busy");
    let running = Maintenance {
        retire: Some(RetireSelector::Idle),
        idle: IdleRule::new(Some(BrokerInstanceId::parse("bi_test").expect("instance"))),
    };
    for index in 0..7 {
        settle(&store, &reserve_new(&store, &busy, &format!("rk_{index}")));
    }
    // Below the cap, an epoch that just worked is spared: its agent is in the middle of it.
    let spared = store.reconcile(&running).expect("retire idle");
    assert_eq!((spared.retired.len(), spared.receipts_archived), (0, 0));
    settle(&store, &reserve_new(&store, &busy, "rk_7"));
    // At the cap nothing can be admitted under any epoch: the same command frees room now.
    let freed = store.reconcile(&running).expect("retire idle at the cap");
    assert_eq!((freed.retired.len(), freed.receipts_archived), (1, 8));
    assert_eq!(status(&store).receipts, 0);
}

#[test]
fn a_retirement_racing_reservations_under_the_same_epoch_never_admits_one_after_it() {
    const THREADS: usize = 8;
    let rounds = if soak_tests() { 20 } else { 4 };
    for round in 0..rounds {
        let setup = setup();
        let store = Arc::new(setup.open());
        let epoch = setup.epoch(&store, &format!("re_race_{round}"));
        let retired = Arc::new(std::sync::OnceLock::<std::time::Instant>::new());
        let barrier = Arc::new(std::sync::Barrier::new(THREADS + 1));
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (store, epoch, retired, barrier) = (
                    store.clone(),
                    epoch.clone(),
                    retired.clone(),
                    barrier.clone(),
                );
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut created = Vec::new();
                    let mut refused = 0;
                    for index in 0..400 {
                        let started = std::time::Instant::now();
                        let name = format!("rk_{thread}_{index}");
                        match store.reserve(&request(&key(&epoch, &name), json!({}))) {
                            Ok(reservation) => {
                                assert!(reservation.created);
                                if let Some(at) = retired.get() {
                                    assert!(
                                        started < *at,
                                        "{name} was admitted after the retirement returned"
                                    );
                                }
                                let id = reservation.receipt.operation_id;
                                if index % 2 == 0 {
                                    settle(&store, &id);
                                }
                                created.push(id);
                            }
                            Err(error) => {
                                assert_eq!(error.code(), ErrorCode::RetryEpochExpired, "{error}");
                                refused += 1;
                                if refused == 5 {
                                    break;
                                }
                            }
                        }
                    }
                    (created, refused)
                })
            })
            .collect();
        barrier.wait();
        std::thread::sleep(Duration::from_micros(rand::random_range(0..20_000)));
        let report = store
            .reconcile(&retire(RetireSelector::Epoch(epoch.clone())))
            .expect("retire");
        let _set = retired.set(std::time::Instant::now());
        let mut created = Vec::new();
        for worker in workers {
            let (ids, refused) = worker.join().expect("worker");
            assert_eq!(refused, 5, "a worker was never refused");
            created.extend(ids);
        }
        // Every receipt under the epoch existed when the retirement committed: the report
        // counted exactly the ones that were admitted.
        assert_eq!(report.retired.len(), 1);
        assert_eq!(
            report.retired[0].receipts,
            created.len() as u64,
            "round {round}: a reservation slipped in after the retirement"
        );
        let raw = setup.database();
        for id in &created {
            let (live, history) = places(&raw, id.as_str());
            assert_eq!(live + history, 1, "{id} is in {live} + {history} places");
        }
        let total: i64 = raw
            .query_row(
                "SELECT (SELECT COUNT(*) FROM receipts WHERE retry_epoch = ?1) + \
                 (SELECT COUNT(*) FROM receipt_history WHERE retry_epoch = ?1)",
                [epoch.as_str()],
                |r| r.get(0),
            )
            .expect("total");
        assert_eq!(total, created.len() as i64);
    }
}

// ---- Crashes during retirement: a child SIGKILLed while it retires and archives ----

const RETIRE_EPOCHS: usize = 4;
const RETIRE_RECEIPTS: usize = 12;

/// The child side: sets up a few epochs with receipts (some left unsettled), then retires them
/// one by one and finally every idle one; logs each step after it returned.
#[test]
fn retire_crash_child() {
    let Ok(data_dir) = std::env::var("LOMI_RETIRE_CHILD_DIR") else {
        return;
    };
    let logs = PathBuf::from(std::env::var("LOMI_RETIRE_LOG_DIR").expect("log dir"));
    let run = std::env::var("LOMI_RETIRE_RUN").expect("run");
    let store = Store::open(
        Path::new(&data_dir),
        Arc::new(SystemClock),
        StoreOptions::default(),
    )
    .expect("child open");
    println!("progress opened");
    let mut epochs = Vec::new();
    for e in 0..RETIRE_EPOCHS {
        let name = format!("re_r{run}_{e}");
        store
            .create_retry_epoch(&epoch_record(&name, SystemClock.now()))
            .expect("child epoch");
        let epoch = RetryEpoch::parse(name.as_str()).expect("epoch");
        for index in 0..RETIRE_RECEIPTS {
            let id = store
                .reserve(&request(&key(&epoch, &format!("rk_{index}")), json!({})))
                .expect("child reserve")
                .receipt
                .operation_id;
            append_synced(&logs.join("reserved.log"), &format!("reserved {name} {id}"));
            if index % 3 != 0 {
                settle(&store, &id);
            }
        }
        epochs.push(epoch);
        println!("progress epoch");
    }
    for epoch in &epochs {
        store
            .reconcile(&retire(RetireSelector::Epoch(epoch.clone())))
            .expect("child retire");
        append_synced(&logs.join("retired.log"), &format!("retired {epoch} -"));
        println!("progress retired");
    }
    let report = store
        .reconcile(&retire(RetireSelector::Idle))
        .expect("child retire idle");
    for epoch in report.retired {
        append_synced(
            &logs.join("retired.log"),
            &format!("retired {} -", epoch.retry_epoch),
        );
    }
    println!("progress idle");
}

#[test]
fn a_kill_during_retirement_loses_no_receipt_and_no_tombstone() {
    if std::env::var("LOMI_RETIRE_CHILD_DIR").is_ok() {
        return;
    }
    let iterations = if soak_tests() { 200 } else { 20 };
    let setup = setup();
    let logs = setup.dir.path().to_path_buf();
    let executable = std::env::current_exe().expect("test binary");
    let steps = 1 + RETIRE_EPOCHS * 2 + 1;
    for iteration in 0..iterations {
        let stderr_path = logs.join(format!("retire-child-{iteration}.stderr"));
        let mut child = Command::new(&executable)
            .args([
                "--exact",
                "retire_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("LOMI_RETIRE_CHILD_DIR", setup.data_dir())
            .env("LOMI_RETIRE_LOG_DIR", &logs)
            .env("LOMI_RETIRE_RUN", iteration.to_string())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
            .spawn()
            .expect("spawn child");
        // Most kills land in the retirement half, where the transactions are largest.
        let target = if rand::random_bool(0.75) {
            rand::random_range(1 + RETIRE_EPOCHS..=steps)
        } else {
            rand::random_range(1..=steps)
        };
        let stdout = child.stdout.take().expect("child stdout");
        let mut progress = 0;
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("child line");
            // The first line follows libtest's "test retire_crash_child ... " on the same line.
            if line.contains("progress ") {
                progress += 1;
                if progress == target {
                    break;
                }
            }
        }
        if progress < target {
            let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("child {iteration} ended after {progress} of {target} steps; stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_micros(rand::random_range(0..3_000)));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap child");
        drop_torn_tail(&logs.join("reserved.log"));
        drop_torn_tail(&logs.join("retired.log"));

        let raw = setup.database();
        assert_eq!(integrity(&raw), "ok", "iteration {iteration}");
        // Every receipt the child saw reserved is in exactly one place.
        for (epoch, id) in log_lines(&logs.join("reserved.log")) {
            let (live, history) = places(&raw, &id);
            assert_eq!(
                live + history,
                1,
                "iteration {iteration}: {id} of {epoch} is in {live} live + {history} history"
            );
        }
        let both: i64 = raw
            .query_row(
                "SELECT COUNT(*) FROM receipts r JOIN receipt_history h USING (operation_id)",
                [],
                |r| r.get(0),
            )
            .expect("overlap");
        assert_eq!(both, 0, "iteration {iteration}: receipts in both places");
        // Only settled receipts of ended epochs are in the history.
        let strays: i64 = raw
            .query_row(
                "SELECT COUNT(*) FROM receipt_history h WHERE h.state NOT IN \
                 ('succeeded', 'failed', 'cancelled', 'outcome_unknown') OR NOT EXISTS \
                 (SELECT 1 FROM retired_epochs t WHERE t.retry_epoch = h.retry_epoch)",
                [],
                |r| r.get(0),
            )
            .expect("strays");
        assert_eq!(
            strays, 0,
            "iteration {iteration}: history rows of a live epoch"
        );
        drop(raw);

        let store = Store::open(
            &setup.data_dir(),
            Arc::new(SystemClock),
            StoreOptions::default(),
        )
        .expect("reopen");
        // No tombstone lost, and no retired epoch valid: each refuses a new reservation.
        for (epoch, _) in log_lines(&logs.join("retired.log")) {
            let epoch = RetryEpoch::parse(epoch.as_str()).expect("epoch");
            assert!(
                store.retirement(&epoch).expect("read").is_some(),
                "iteration {iteration}: the tombstone of {epoch} was lost"
            );
        }
        let raw = setup.database();
        let mut statement = raw
            .prepare("SELECT retry_epoch FROM retired_epochs")
            .expect("tombstones");
        let tombstones: Vec<String> = statement
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        for epoch in tombstones {
            let epoch = RetryEpoch::parse(epoch.as_str()).expect("epoch");
            let refused = store
                .reserve(&request(&key(&epoch, "rk_after_kill"), json!({})))
                .expect_err("a retired epoch admitted a reservation");
            assert_eq!(refused.code(), ErrorCode::RetryEpochExpired);
        }
    }
}

/// Chat: the draft is compared and swapped by its revision; a send turns the draft into the
/// user message with a streaming reply after it (the conversation's revision moves by both
/// messages, the draft's by its emptying); settling moves the revision once more; a reply left
/// streaming is `interrupted` after a reopen, and its conversation's revision moves.
#[test]
fn chat_drafts_replies_and_reopen() {
    use lomi_protocol::ConversationId;
    use lomi_protocol::tools::chat::{ChatRole, MessageState};
    use lomi_store::{NewReply, Stale};

    let setup = setup();
    let store = setup.open();
    let id = ConversationId::parse("cv_1").expect("id");
    let workspace = WorkspaceId::parse("ws_1").expect("id");
    let created = store.chat_create(&id, &workspace, "Plans").expect("create");
    assert_eq!(
        (created.revision, created.draft_revision, created.messages),
        (1, 1, 0)
    );

    let drafted = store.chat_set_draft(&id, Some(1), "hello").expect("write");
    assert_eq!(drafted.expect("at revision 1").draft_revision, 2);
    let Err(Stale(current)) = store.chat_set_draft(&id, Some(1), "late").expect("write") else {
        panic!("a stale draft revision must be refused");
    };
    assert_eq!(
        (current.draft_revision, current.draft_text.as_str()),
        (2, "hello")
    );

    let reply = NewReply {
        conversation_id: id.clone(),
        expected_revision: 1,
        expected_draft_revision: 2,
        provider: "p".into(),
        model: "m".into(),
        operation_id: None,
    };
    let stale = NewReply {
        expected_draft_revision: 1,
        ..reply.clone()
    };
    assert!(store.chat_begin_reply(&stale).expect("write").is_err());
    let (after, seq) = store
        .chat_begin_reply(&reply)
        .expect("write")
        .expect("begun");
    assert_eq!(
        (after.revision, after.draft_revision, after.messages, seq),
        (3, 3, 2, 2)
    );
    assert_eq!(after.draft_text, "");
    assert!(after.streaming, "a reply is arriving");
    store.chat_reply_text(&id, seq, "Hel").expect("text");
    let messages = store.chat_messages(&id, 0, 10).expect("read");
    assert_eq!(
        messages
            .iter()
            .map(|m| (m.role, m.text.as_str(), m.state))
            .collect::<Vec<_>>(),
        vec![
            (ChatRole::User, "hello", MessageState::Complete),
            (ChatRole::Assistant, "Hel", MessageState::Streaming),
        ]
    );
    assert_eq!(store.chat_messages(&id, 1, 10).expect("read").len(), 1);
    drop(store);

    let store = setup.open();
    let reopened = store.chat_conversation(&id).expect("read").expect("there");
    assert_eq!(
        reopened.revision, 4,
        "an interrupted reply moves the revision"
    );
    let reply = &store.chat_messages(&id, 1, 10).expect("read")[0];
    assert_eq!(
        (reply.text.as_str(), reply.state),
        ("Hel", MessageState::Interrupted)
    );
    // A settled reply is not settled again.
    let settled = store
        .chat_settle_reply(
            &id,
            seq,
            MessageState::Complete,
            "Hello",
            (Some(1), Some(2)),
        )
        .expect("settle");
    assert_eq!(settled.revision, 4);
    assert_eq!(store.chat_list(&workspace, 10).expect("list").len(), 1);
}

#[test]
fn a_receipt_keeps_what_decided_it() {
    let setup = setup();
    let store = setup.open();
    let epoch = setup.epoch(&store, "re_a");
    let reservation = store
        .reserve_running(&request(&key(&epoch, "rk_1"), json!({"a": 1})))
        .expect("reserve");
    let id = reservation.receipt.operation_id;
    assert_eq!(reservation.receipt.decided_by.as_deref(), Some("default"));
    let read = store.get(&id).expect("get").expect("kept");
    assert_eq!(read.decided_by.as_deref(), Some("default"));
    let settled = store
        .transition_decided(
            &id,
            OperationState::Running,
            OperationState::Succeeded,
            EffectState::Complete,
            None,
            None,
        )
        .expect("settle");
    assert_eq!(settled.decided_by.as_deref(), Some("default"));
    let counts = store.decisions_by().expect("counts");
    assert_eq!(counts.get("default").map(|c| c.0), Some(1));
}
