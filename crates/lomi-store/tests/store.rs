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
    Caps, Clock, ManualClock, Outcome, OutcomeError, ReceiptKey, ReservationRequest,
    RetryEpochRecord, SCHEMA_VERSION, Store, StoreError, StoreOptions, SystemClock, fingerprint,
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
    assert_eq!(store.status().expect("status").unsettled_receipts, 0);
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
    let before = store.status().expect("status");
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
    assert_eq!(store.status().expect("status"), before);
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
    let before = store.status().expect("status");
    assert_eq!(before.retry_epochs, 4_096);
    let error = store
        .create_retry_epoch(&epoch_record("re_new", now))
        .expect_err("at the cap");
    assert_eq!(error.code(), ErrorCode::ResourceExhausted);
    assert_eq!(store.status().expect("status"), before);
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
    let nothing = store.reconcile().expect("reconcile");
    assert_eq!(
        (
            nothing.retry_epochs_removed,
            nothing.receipts_removed,
            nothing.events_removed
        ),
        (0, 0, 0)
    );

    // Epoch A expires (24 h after its creation); B does not.
    setup.clock.advance(Duration::from_secs(12 * 3600));
    let status = store.status().expect("status");
    assert_eq!(
        (status.expired_retry_epochs, status.removable_receipts),
        (1, 1)
    );
    let preview = store.reconcile_preview().expect("preview");
    assert_eq!(
        (
            preview.retry_epochs_removed,
            preview.receipts_removed,
            preview.events_removed,
            preview.expired_retry_epochs_kept
        ),
        (0, 1, 3, 1)
    );
    assert_eq!(
        store.get(&a_settled).expect("get").map(|r| r.state),
        Some(OperationState::Succeeded),
        "preview wrote"
    );
    assert_eq!(store.reconcile().expect("reconcile"), preview);
    assert!(store.get(&a_settled).expect("get").is_none());
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
    let report = store.reconcile().expect("reconcile");
    assert_eq!(
        (report.retry_epochs_removed, report.receipts_removed),
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
    let report = store.reconcile().expect("reconcile");
    assert_eq!(
        (
            report.retry_epochs_removed,
            report.receipts_removed,
            report.expired_retry_epochs_kept
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
    assert_eq!(store.status().expect("status").receipts, KEYS as u64);
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
    prop_assert_eq!(
        current.status().expect("status").receipts,
        model.len() as u64
    );
    Ok(())
}

fn slow_tests() -> bool {
    std::env::var("LOMI_SLOW_TESTS").is_ok_and(|v| v == "1")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if slow_tests() { 512 } else { 48 },
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
    for _ in 0..100_000 {
        let index = rand::random_range(0..CRASH_KEYS);
        let attempt = ReservationRequest {
            key: crash_key(&epoch, index),
            operation_id: OperationId::from_random(rand::random()),
            workspace_id: None,
            fingerprint: fingerprint(&json!({"index": index}), None, None),
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
    let iterations = if slow_tests() { 200 } else { 20 };
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
            store.status().expect("status").unsettled_receipts,
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
