//! Admission benchmark (not a timed test): the durable reserve → running → succeeded rate of the
//! store (and reserve-running → succeeded, the broker's path when a permit is free at
//! admission) against raw single-row SQLite commits (WAL, synchronous=FULL) on the same disk,
//! retiring an epoch with 4,096 settled receipts (archive to the history) while admissions go on,
//! and admission alone (reserve) from 1, 8 and 32 client threads, where group commit shares
//! each commit's fsync among the clients waiting on it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lomi_protocol::{
    BrokerInstanceId, ConnectionId, EffectState, OperationId, OperationState, PairingId,
    RequestKey, RetryEpoch, ToolName, WorkspaceId,
};
use lomi_store::{
    Caps, Clock, IdleRule, Maintenance, Outcome, ReceiptKey, ReservationRequest, RetireSelector,
    RetryEpochRecord, Store, StoreOptions, SystemClock, fingerprint,
};

const ROUNDS: usize = 7;
const OPERATIONS_PER_ROUND: usize = 400;
/// Receipts under the epoch that is retired: a full store at the seed's cap.
const RETIRED_RECEIPTS: usize = 4_096;
/// Client threads admitting at once, and the admissions of one round (divisible by each).
const CLIENTS: [usize; 3] = [1, 8, 32];
const ADMISSIONS_PER_ROUND: usize = 960;
/// What group commit should reach per client count, in admissions per raw commit.
const TARGETS: [f64; 3] = [0.8, 0.0, 2.0];

fn main() -> anyhow::Result<()> {
    let base = std::env::var_os("LOMI_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    println!(
        "admission benchmark: {ROUNDS} rounds x {OPERATIONS_PER_ROUND} operations, in {}",
        base.display()
    );
    let mut store_rates = Vec::new();
    let mut folded_rates = Vec::new();
    let mut raw_rates = Vec::new();
    let mut retire_millis = Vec::new();
    let mut during_rates = Vec::new();
    let mut longest_waits = Vec::new();
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir_in(&base)?;
        store_rates.push(store_round(&dir.path().join("store"), round, false)?);
        folded_rates.push(store_round(&dir.path().join("folded"), round, true)?);
        raw_rates.push(raw_round(&dir.path().join("raw.sqlite3"))?);
        let retirement = retire_round(&dir.path().join("retire"), round)?;
        retire_millis.push(retirement.millis);
        during_rates.push(retirement.admissions_per_second);
        longest_waits.push(retirement.longest_admission_millis);
    }
    let store = summary(&mut store_rates);
    let folded = summary(&mut folded_rates);
    let raw = summary(&mut raw_rates);
    let retire = summary(&mut retire_millis);
    let during = summary(&mut during_rates);
    let waits = summary(&mut longest_waits);
    println!(
        "(a) store reserve+settle  ops/s      min {:>8.1}  median {:>8.1}  max {:>8.1}",
        store.0, store.1, store.2
    );
    println!(
        "(a') reserved running+settle ops/s   min {:>8.1}  median {:>8.1}  max {:>8.1}",
        folded.0, folded.1, folded.2
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
    println!(
        "ratio median(a')/median(b), the broker's path with a free permit: {:.3}",
        folded.1 / raw.1
    );
    println!(
        "(c) retire + archive {RETIRED_RECEIPTS} receipts, ms min {:>8.1}  median {:>8.1}  max {:>8.1}",
        retire.0, retire.1, retire.2
    );
    println!(
        "(d) admissions during (c)  ops/s     min {:>8.1}  median {:>8.1}  max {:>8.1}",
        during.0, during.1, during.2
    );
    println!(
        "    longest admission overlapping (c), ms min {:>5.1}  median {:>8.1}  max {:>8.1}",
        waits.0, waits.1, waits.2
    );
    println!(
        "ratio median(d)/median(a), admission during retirement vs alone: {:.3}",
        during.1 / store.1
    );
    println!(
        "ratio median(d)/median(b), admissions per raw commit during (c): {:.3}",
        during.1 / raw.1
    );
    concurrent_admission(&base)
}

/// (e): admission (reserve a new operation) from 1, 8 and 32 threads at once, each round between
/// two raw commit rounds on the same disk (their mean is the round's baseline, so a disk that
/// slows down or speeds up mid-run moves both sides), printed as admissions per raw commit.
fn concurrent_admission(base: &std::path::Path) -> anyhow::Result<()> {
    println!(
        "(e) admission (reserve) with concurrent clients: {ROUNDS} rounds x {ADMISSIONS_PER_ROUND} admissions, each between two rounds of {OPERATIONS_PER_ROUND} raw commits"
    );
    println!(
        "    clients   store admissions/s min / median / max    raw commits/s min / median / max    ratio of medians   per-round ratio min / median / max   target"
    );
    for (clients, target) in CLIENTS.into_iter().zip(TARGETS) {
        let mut store_rates = Vec::new();
        let mut raw_rates = Vec::new();
        let mut ratios = Vec::new();
        for round in 0..ROUNDS {
            let dir = tempfile::tempdir_in(base)?;
            let before = raw_round(&dir.path().join("before.sqlite3"))?;
            let store = admission_round(&dir.path().join("store"), round, clients)?;
            let after = raw_round(&dir.path().join("after.sqlite3"))?;
            let raw = (before + after) / 2.0;
            store_rates.push(store);
            raw_rates.push(raw);
            ratios.push(store / raw);
        }
        let store = summary(&mut store_rates);
        let raw = summary(&mut raw_rates);
        let ratio = summary(&mut ratios);
        let target = if target > 0.0 {
            format!(">= {target:.1}")
        } else {
            "-".to_owned()
        };
        println!(
            "    {clients:>7}   {:>8.1} / {:>8.1} / {:>8.1}       {:>8.1} / {:>8.1} / {:>8.1}    {:>8.3}           {:>6.3} / {:>6.3} / {:>6.3}        {target}",
            store.0,
            store.1,
            store.2,
            raw.0,
            raw.1,
            raw.2,
            store.1 / raw.1,
            ratio.0,
            ratio.1,
            ratio.2,
        );
    }
    Ok(())
}

/// One round of admissions only: `clients` threads, started together, each reserving its share
/// of new keys; the rate is over the whole round (first start to last answer).
fn admission_round(
    data_dir: &std::path::Path,
    round: usize,
    clients: usize,
) -> anyhow::Result<f64> {
    let clock = Arc::new(SystemClock);
    let options = StoreOptions {
        caps: Caps {
            receipts: ADMISSIONS_PER_ROUND,
            ..Caps::default()
        },
        ..StoreOptions::default()
    };
    let store = Store::open(data_dir, clock.clone(), options)?;
    let epoch = bench_epoch(&format!("re_clients_{clients}_{round}"), clock.now())?;
    store.create_retry_epoch(&epoch)?;
    let per_client = ADMISSIONS_PER_ROUND / clients;
    let barrier = std::sync::Barrier::new(clients + 1);
    let elapsed = std::thread::scope(|scope| -> anyhow::Result<Duration> {
        let workers: Vec<_> = (0..clients)
            .map(|client| {
                let (store, epoch, barrier) = (&store, &epoch.retry_epoch, &barrier);
                scope.spawn(move || -> anyhow::Result<()> {
                    barrier.wait();
                    for index in 0..per_client {
                        let payload = serde_json::json!({"title": "Tests", "index": index});
                        let request = ReservationRequest {
                            key: ReceiptKey {
                                pairing_id: PairingId::parse("pr_bench")
                                    .map_err(anyhow::Error::msg)?,
                                retry_epoch: epoch.clone(),
                                project_id: None,
                                tool: ToolName("lomi_terminal_create".into()),
                                request_key: RequestKey::parse(format!("rk_{client}_{index}"))
                                    .map_err(anyhow::Error::msg)?,
                            },
                            operation_id: OperationId::from_random(rand::random()),
                            workspace_id: None,
                            fingerprint: fingerprint(&payload, Some("g1"), Some("1")),
                            decided_by: None,
                        };
                        anyhow::ensure!(store.reserve(&request)?.created, "a key was reused");
                    }
                    Ok(())
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        for worker in workers {
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        }
        Ok(started.elapsed())
    })?;
    Ok((per_client * clients) as f64 / elapsed.as_secs_f64())
}

struct Retirement {
    millis: f64,
    admissions_per_second: f64,
    longest_admission_millis: f64,
}

fn bench_epoch(name: &str, now: lomi_protocol::Timestamp) -> anyhow::Result<RetryEpochRecord> {
    Ok(RetryEpochRecord {
        retry_epoch: RetryEpoch::parse(name).map_err(anyhow::Error::msg)?,
        pairing_id: PairingId::parse("pr_bench").map_err(anyhow::Error::msg)?,
        broker_instance_id: BrokerInstanceId::parse("bi_bench").map_err(anyhow::Error::msg)?,
        connection_id: ConnectionId::parse("cn_bench").map_err(anyhow::Error::msg)?,
        workspace_id: WorkspaceId::parse("ws_bench").map_err(anyhow::Error::msg)?,
        created_at: now,
        expires_at: now.plus_millis(24 * 60 * 60 * 1000),
    })
}

/// Fills epoch A with 4,096 settled receipts (three events each, as the engine leaves them),
/// then retires A while a second thread keeps admitting operations under epoch B.
fn retire_round(data_dir: &std::path::Path, round: usize) -> anyhow::Result<Retirement> {
    let clock = Arc::new(SystemClock);
    let options = StoreOptions {
        caps: Caps {
            receipts: 100_000,
            events: 100_000,
            ..Caps::default()
        },
        ..StoreOptions::default()
    };
    let now = clock.now();
    let full = bench_epoch(&format!("re_full_{round}"), now)?;
    let busy = bench_epoch(&format!("re_busy_{round}"), now)?;
    {
        let store = Store::open(data_dir, clock.clone(), options.clone())?;
        store.create_retry_epoch(&full)?;
        store.create_retry_epoch(&busy)?;
    }
    // Filling through the store would take 12,288 fsyncs; the rows are the same in one.
    let mut raw = rusqlite::Connection::open(data_dir.join(lomi_store::DATABASE_FILE))?;
    let fill = raw.transaction()?;
    for index in 0..RETIRED_RECEIPTS {
        let id = OperationId::from_random(rand::random());
        fill.execute(
            "INSERT INTO receipts (operation_id, pairing_id, retry_epoch, project_id, tool, request_key, \
             workspace_id, fingerprint, state, effect_state, created_at, updated_at, settled_at, result_json) \
             VALUES (?1, 'pr_bench', ?2, '', 'lomi_workspace_update', ?3, 'ws_bench', 'f', 'succeeded', \
             'complete', ?4, ?4, ?4, '{\"name\":\"renamed\"}')",
            rusqlite::params![id.as_str(), full.retry_epoch.as_str(), format!("rk_{index}"), now.millis()],
        )?;
        for state in ["queued", "running", "succeeded"] {
            fill.execute(
                "INSERT INTO operation_events (operation_id, pairing_id, retry_epoch, workspace_id, tool, \
                 state, effect_state, at) VALUES (?1, 'pr_bench', ?2, 'ws_bench', 'lomi_workspace_update', ?3, ?4, ?5)",
                rusqlite::params![
                    id.as_str(),
                    full.retry_epoch.as_str(),
                    state,
                    if state == "succeeded" { "complete" } else { "none" },
                    now.millis()
                ],
            )?;
        }
    }
    fill.commit()?;
    drop(raw);

    let store = Arc::new(Store::open(data_dir, clock, options)?);
    let stop = Arc::new(AtomicBool::new(false));
    let admissions = {
        let (store, stop, epoch) = (store.clone(), stop.clone(), busy.retry_epoch.clone());
        std::thread::spawn(move || -> anyhow::Result<Vec<(Instant, Instant)>> {
            let mut spans = Vec::new();
            let mut index = 0;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                admit(&store, &epoch, index, false)?;
                spans.push((started, Instant::now()));
                index += 1;
            }
            Ok(spans)
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let report = store.reconcile(&Maintenance {
        retire: Some(RetireSelector::Epoch(full.retry_epoch.clone())),
        idle: IdleRule::new(None),
    })?;
    let ended = Instant::now();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let spans = admissions
        .join()
        .map_err(|_| anyhow::anyhow!("the admission thread panicked"))??;
    anyhow::ensure!(
        report.receipts_archived == RETIRED_RECEIPTS as u64,
        "archived {} receipts",
        report.receipts_archived
    );
    let window = ended.duration_since(started).as_secs_f64();
    // Admissions that overlapped the retirement, and the share of each inside its window.
    let mut inside = 0.0;
    let mut longest: f64 = 0.0;
    for (from, to) in &spans {
        if *to > started && *from < ended {
            let overlap = (*to.min(&ended)).duration_since(*from.max(&started));
            inside += overlap.as_secs_f64() / to.duration_since(*from).as_secs_f64().max(1e-9);
            longest = longest.max(to.duration_since(*from).as_secs_f64() * 1000.0);
        }
    }
    Ok(Retirement {
        millis: window * 1000.0,
        admissions_per_second: inside / window,
        longest_admission_millis: longest,
    })
}

/// One admitted operation: reserve, running, succeeded (three durable commits); or, `folded`,
/// reserved running, succeeded (two), the broker's path when the permit is free at admission.
fn admit(store: &Store, epoch: &RetryEpoch, index: usize, folded: bool) -> anyhow::Result<()> {
    let payload = serde_json::json!({"title": "Tests", "index": index});
    let request = ReservationRequest {
        key: ReceiptKey {
            pairing_id: PairingId::parse("pr_bench").map_err(anyhow::Error::msg)?,
            retry_epoch: epoch.clone(),
            project_id: None,
            tool: ToolName("lomi_terminal_create".into()),
            request_key: RequestKey::parse(format!("rk_{index}")).map_err(anyhow::Error::msg)?,
        },
        operation_id: OperationId::from_random(rand::random()),
        workspace_id: None,
        fingerprint: fingerprint(&payload, Some("g1"), Some("1")),
        decided_by: None,
    };
    let id = if folded {
        store.reserve_running(&request)?.receipt.operation_id
    } else {
        let id = store.reserve(&request)?.receipt.operation_id;
        store.transition(
            &id,
            OperationState::Queued,
            OperationState::Running,
            EffectState::None,
            None,
        )?;
        id
    };
    store.transition(
        &id,
        OperationState::Running,
        OperationState::Succeeded,
        EffectState::Complete,
        Some(Outcome {
            result: Some(payload),
            error: None,
        }),
    )?;
    Ok(())
}

fn summary(rates: &mut [f64]) -> (f64, f64, f64) {
    rates.sort_by(f64::total_cmp);
    (rates[0], rates[rates.len() / 2], rates[rates.len() - 1])
}

/// One round of what the broker does per admitted operation: reserve (queued), mark running,
/// settle succeeded: three durable commits each; or, `folded`, what it does when the
/// operation's permit is free at admission: reserve recorded running, settle: two commits.
fn store_round(data_dir: &std::path::Path, round: usize, folded: bool) -> anyhow::Result<f64> {
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
        admit(&store, &epoch, index, folded)?;
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
