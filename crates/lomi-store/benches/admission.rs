//! Admission benchmark (not a timed test): the durable reserve → running → succeeded rate of the
//! store against raw single-row SQLite commits (WAL, synchronous=FULL) on the same disk.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use lomi_protocol::{
    BrokerInstanceId, ConnectionId, EffectState, OperationId, OperationState, PairingId,
    RequestKey, RetryEpoch, ToolName, WorkspaceId,
};
use lomi_store::{
    Caps, Clock, Outcome, ReceiptKey, ReservationRequest, RetryEpochRecord, Store, StoreOptions,
    SystemClock, fingerprint,
};

const ROUNDS: usize = 7;
const OPERATIONS_PER_ROUND: usize = 400;

fn main() -> anyhow::Result<()> {
    let base = std::env::var_os("LOMI_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    println!(
        "admission benchmark: {ROUNDS} rounds x {OPERATIONS_PER_ROUND} operations, in {}",
        base.display()
    );
    let mut store_rates = Vec::new();
    let mut raw_rates = Vec::new();
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir_in(&base)?;
        store_rates.push(store_round(&dir.path().join("store"), round)?);
        raw_rates.push(raw_round(&dir.path().join("raw.sqlite3"))?);
    }
    let store = summary(&mut store_rates);
    let raw = summary(&mut raw_rates);
    println!(
        "(a) store reserve+settle  ops/s      min {:>8.1}  median {:>8.1}  max {:>8.1}",
        store.0, store.1, store.2
    );
    println!(
        "(b) raw SQLite commit     commits/s  min {:>8.1}  median {:>8.1}  max {:>8.1}",
        raw.0, raw.1, raw.2
    );
    println!(
        "ratio median(a)/median(b), operations per raw commit:        {:.3}",
        store.1 / raw.1
    );
    println!(
        "ratio store commits/s (3 per op) vs raw commits/s:          {:.3}",
        3.0 * store.1 / raw.1
    );
    Ok(())
}

fn summary(rates: &mut [f64]) -> (f64, f64, f64) {
    rates.sort_by(f64::total_cmp);
    (rates[0], rates[rates.len() / 2], rates[rates.len() - 1])
}

/// One round of what the broker does per admitted operation: reserve (queued), mark running,
/// settle succeeded. Three durable commits each.
fn store_round(data_dir: &std::path::Path, round: usize) -> anyhow::Result<f64> {
    let clock = Arc::new(SystemClock);
    let options = StoreOptions {
        caps: Caps {
            receipts: OPERATIONS_PER_ROUND,
            ..Caps::default()
        },
        ..StoreOptions::default()
    };
    let store = Store::open(data_dir, clock.clone(), options)?;
    let now = clock.now();
    let epoch = RetryEpoch::parse(format!("re_bench_{round}")).map_err(anyhow::Error::msg)?;
    store.create_retry_epoch(&RetryEpochRecord {
        retry_epoch: epoch.clone(),
        pairing_id: PairingId::parse("pr_bench").map_err(anyhow::Error::msg)?,
        broker_instance_id: BrokerInstanceId::parse("bi_bench").map_err(anyhow::Error::msg)?,
        connection_id: ConnectionId::parse("cn_bench").map_err(anyhow::Error::msg)?,
        workspace_id: WorkspaceId::parse("ws_bench").map_err(anyhow::Error::msg)?,
        created_at: now,
        expires_at: now.plus_millis(24 * 60 * 60 * 1000),
    })?;
    let started = Instant::now();
    for index in 0..OPERATIONS_PER_ROUND {
        let payload = serde_json::json!({"title": "Tests", "index": index});
        let request = ReservationRequest {
            key: ReceiptKey {
                pairing_id: PairingId::parse("pr_bench").map_err(anyhow::Error::msg)?,
                retry_epoch: epoch.clone(),
                project_id: None,
                tool: ToolName("lomi_terminal_create".into()),
                request_key: RequestKey::parse(format!("rk_{index}"))
                    .map_err(anyhow::Error::msg)?,
            },
            operation_id: OperationId::from_random(rand::random()),
            workspace_id: None,
            fingerprint: fingerprint(&payload, Some("g1"), Some("1")),
        };
        let id = store.reserve(&request)?.receipt.operation_id;
        store.transition(
            &id,
            OperationState::Queued,
            OperationState::Running,
            EffectState::None,
            None,
        )?;
        let outcome = Outcome {
            result: Some(payload),
            error: None,
        };
        store.transition(
            &id,
            OperationState::Running,
            OperationState::Succeeded,
            EffectState::Complete,
            Some(outcome),
        )?;
    }
    Ok(OPERATIONS_PER_ROUND as f64 / started.elapsed().as_secs_f64())
}

/// The floor: one small row per transaction on a plain connection with the same durability.
fn raw_round(path: &std::path::Path) -> anyhow::Result<f64> {
    let connection = rusqlite::Connection::open(path)?;
    let mode: String =
        connection.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    anyhow::ensure!(mode == "wal", "journal mode {mode}");
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.execute_batch("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")?;
    let started = Instant::now();
    for index in 0..OPERATIONS_PER_ROUND {
        connection.execute_batch("BEGIN IMMEDIATE")?;
        connection.execute(
            "INSERT INTO rows (body) VALUES (?1)",
            [format!("row {index}")],
        )?;
        connection.execute_batch("COMMIT")?;
    }
    Ok(OPERATIONS_PER_ROUND as f64 / started.elapsed().as_secs_f64())
}
