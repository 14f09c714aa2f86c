//! What `lomi store status` and `lomi store reconcile` need: counts against the caps, and the
//! person's deliberate maintenance: retiring retry epochs, and moving the settled receipts of
//! retired or expired epochs into the append-only history (never automatic, never anything
//! unsettled).

use std::path::PathBuf;
use std::time::Duration;

use lomi_protocol::{BrokerInstanceId, OperationState, PairingId, RetryEpoch, Timestamp};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params_from_iter};

use crate::store::{
    Failure, SETTLED_STATES, UNSETTLED_STATES, count, decode_id, raise_removed_through, refuse,
};
use crate::{Caps, Result, SCHEMA_VERSION, Store, StoreError};

/// Which live retry epochs a maintenance run retires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetireSelector {
    /// Every idle epoch, as [`IdleRule`] defines it.
    Idle,
    /// Every live epoch of one pairing.
    Pairing(PairingId),
    /// Every live epoch created at least this long ago.
    OlderThan(Duration),
    /// One epoch by id.
    Epoch(RetryEpoch),
}

/// What makes a live retry epoch idle: it was issued by a broker instance that is not the
/// running one (such an epoch is refused anyway), or it has no unsettled receipt and neither
/// it nor any of its receipts changed during the last `quiet_for`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleRule {
    /// `None` when no broker runs (the command opened the store itself): every epoch is idle.
    pub running_instance: Option<BrokerInstanceId>,
    pub quiet_for: Duration,
}

impl IdleRule {
    /// How long an epoch must be quiet to be idle unless the person says otherwise.
    pub const DEFAULT_QUIET_FOR: Duration = Duration::from_secs(10 * 60);

    pub fn new(running_instance: Option<BrokerInstanceId>) -> Self {
        IdleRule {
            running_instance,
            quiet_for: Self::DEFAULT_QUIET_FOR,
        }
    }
}

/// One maintenance run: optionally retire some epochs, then archive what has ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Maintenance {
    pub retire: Option<RetireSelector>,
    pub idle: IdleRule,
}

impl Maintenance {
    /// Archive only what has expired (no retirement).
    pub fn expired_only(idle: IdleRule) -> Self {
        Maintenance { retire: None, idle }
    }
}

/// How close the store is to a cap: the fuller of receipts and retry epochs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WarningLevel {
    /// Below 75 % of both caps.
    None,
    /// At 75 % of a cap or more.
    Warning,
    /// At 90 % of a cap or more.
    Critical,
    /// A cap is reached: new operations (or connections) are RESOURCE_EXHAUSTED.
    Full,
}

impl WarningLevel {
    pub fn of(used: u64, cap: usize) -> Self {
        let cap = cap as u64;
        if used >= cap {
            WarningLevel::Full
        } else if used * 10 >= cap * 9 {
            WarningLevel::Critical
        } else if used * 4 >= cap * 3 {
            WarningLevel::Warning
        } else {
            WarningLevel::None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WarningLevel::None => "none",
            WarningLevel::Warning => "warning",
            WarningLevel::Critical => "critical",
            WarningLevel::Full => "full",
        }
    }
}

/// A snapshot of the store for `lomi store status` and `lomi_store_status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreStatus {
    pub database_path: PathBuf,
    pub schema_version: u32,
    /// The store's clock when the snapshot was taken ("expired" is relative to it).
    pub now: Timestamp,
    pub receipts: u64,
    pub receipt_cap: usize,
    pub receipts_remaining: u64,
    pub unsettled_receipts: u64,
    /// Every state, in `OperationState::ALL` order, zeros included.
    pub receipts_by_state: Vec<StateCount>,
    pub retry_epochs: u64,
    pub retry_epoch_cap: usize,
    pub retry_epochs_remaining: u64,
    pub expired_retry_epochs: u64,
    /// Live epochs (neither expired nor retired) that `--retire idle` would retire now.
    pub idle_retry_epochs: u64,
    /// Retired epochs whose tombstone is kept (they stay refused).
    pub retired_retry_epochs: u64,
    /// Settled receipts of expired or retired epochs: what reconcile moves to the history.
    pub removable_receipts: u64,
    pub history_receipts: u64,
    pub warning: WarningLevel,
    pub oldest_receipt_at: Option<Timestamp>,
    pub oldest_retry_epoch_at: Option<Timestamp>,
    pub events_retained: u64,
    pub event_retention: usize,
    /// Per pairing with anything in the live store, by pairing id.
    pub pairings: Vec<PairingUsage>,
    /// Writes are failing now (the disk is full, an I/O error), since when and why.
    pub write_failure: Option<crate::WriteFailure>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateCount {
    pub state: OperationState,
    pub count: u64,
}

/// One pairing's share of the live store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairingUsage {
    pub pairing_id: PairingId,
    /// Epochs neither expired nor retired.
    pub live_retry_epochs: u64,
    pub idle_retry_epochs: u64,
    /// Epoch rows still held because they have unsettled receipts (expired or retired).
    pub ended_retry_epochs: u64,
    pub receipts: u64,
    pub unsettled_receipts: u64,
}

/// A retry epoch a maintenance run retired (or, in a preview, would retire).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetiredEpoch {
    pub retry_epoch: RetryEpoch,
    pub pairing_id: PairingId,
    pub created_at: Timestamp,
    pub receipts: u64,
    /// Receipts that stay in the live store until they settle.
    pub unsettled_receipts: u64,
}

/// What maintenance did, or (from `reconcile_preview`) would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconcileReport {
    /// The store's clock at the time; records with `expires_at <= now` are expired.
    pub now: Timestamp,
    pub retired: Vec<RetiredEpoch>,
    /// Settled receipts of retired or expired epochs moved to the history.
    pub receipts_archived: u64,
    /// Their operation events, removed from the feed (cursors before them expire).
    pub events_removed: u64,
    /// Retired or expired epochs left without receipts, removed from the live store.
    pub retry_epochs_removed: u64,
    /// Retired or expired epochs kept because they still have unsettled receipts; a later
    /// reconcile moves those once they settle (or after the next reopen marks them
    /// outcome_unknown).
    pub ended_retry_epochs_kept: u64,
    /// Tombstones of retired epochs past the time they could have been valid anyway.
    pub tombstones_removed: u64,
}

// The rules, as SQL over `?1 = now`: an epoch has ended when it expired (expires_at <= now) or
// was retired (it has a tombstone); a receipt moves to the history when it is settled and its
// epoch has ended; an ended epoch leaves the live store once no receipt of it remains (so an
// unsettled receipt keeps its epoch, which its foreign key requires anyway).
const ENDED_EPOCHS: &str = "SELECT retry_epoch FROM retry_epochs WHERE expires_at <= ?1 \
     UNION SELECT retry_epoch FROM retired_epochs";
const LIVE_EPOCH: &str = "e.expires_at > ?1 AND NOT EXISTS \
     (SELECT 1 FROM retired_epochs t WHERE t.retry_epoch = e.retry_epoch)";

fn archivable() -> String {
    format!(
        "SELECT operation_id FROM receipts WHERE state IN {SETTLED_STATES} AND retry_epoch IN ({ENDED_EPOCHS})"
    )
}

/// The condition (over epoch alias `e`) and its parameters after `?1 = now`.
fn selector_sql(
    selector: &RetireSelector,
    idle: &IdleRule,
    now: Timestamp,
) -> (String, Vec<SqlValue>) {
    match selector {
        RetireSelector::Idle => {
            let quiet_since = now.millis().saturating_sub(millis(idle.quiet_for));
            let instance = idle
                .running_instance
                .as_ref()
                .map_or(SqlValue::Null, |i| SqlValue::Text(i.as_str().to_owned()));
            (
                format!(
                    "(e.broker_instance_id IS NOT ?2 OR (e.created_at <= ?3 AND NOT EXISTS \
                     (SELECT 1 FROM receipts r WHERE r.retry_epoch = e.retry_epoch \
                      AND (r.state IN {UNSETTLED_STATES} OR r.updated_at > ?3))))"
                ),
                vec![instance, SqlValue::Integer(quiet_since)],
            )
        }
        RetireSelector::Pairing(pairing) => (
            "e.pairing_id = ?2".to_owned(),
            vec![SqlValue::Text(pairing.as_str().to_owned())],
        ),
        RetireSelector::OlderThan(age) => (
            "e.created_at <= ?2".to_owned(),
            vec![SqlValue::Integer(now.millis().saturating_sub(millis(*age)))],
        ),
        RetireSelector::Epoch(epoch) => (
            "e.retry_epoch = ?2".to_owned(),
            vec![SqlValue::Text(epoch.as_str().to_owned())],
        ),
    }
}

/// The idle rule as it applies now. At a cap nothing can be admitted under any epoch, so the
/// quiet window that spares an agent in the middle of its work protects nothing: every epoch
/// without unsettled work is idle, and `--retire idle` frees room at once.
fn idle_now(connection: &Connection, caps: Caps, idle: &IdleRule) -> Result<IdleRule, Failure> {
    let receipts = count(connection, "SELECT COUNT(*) FROM receipts", [])?;
    let epochs = count(connection, "SELECT COUNT(*) FROM retry_epochs", [])?;
    let full = receipts >= caps.receipts as u64 || epochs >= caps.retry_epochs as u64;
    Ok(if full {
        IdleRule {
            quiet_for: Duration::ZERO,
            ..idle.clone()
        }
    } else {
        idle.clone()
    })
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn with_now(now: Timestamp, rest: Vec<SqlValue>) -> Vec<SqlValue> {
    let mut values = vec![SqlValue::Integer(now.millis())];
    values.extend(rest);
    values
}

/// The live epochs `selector` picks, with their receipt counts.
fn select_epochs(
    connection: &Connection,
    selector: &RetireSelector,
    idle: &IdleRule,
    now: Timestamp,
) -> Result<Vec<RetiredEpoch>, Failure> {
    let (condition, values) = selector_sql(selector, idle, now);
    let mut statement = connection.prepare(&format!(
        "SELECT e.retry_epoch, e.pairing_id, e.created_at, \
         (SELECT COUNT(*) FROM receipts r WHERE r.retry_epoch = e.retry_epoch), \
         (SELECT COUNT(*) FROM receipts r WHERE r.retry_epoch = e.retry_epoch AND r.state IN {UNSETTLED_STATES}) \
         FROM retry_epochs e WHERE {LIVE_EPOCH} AND {condition} ORDER BY e.created_at, e.retry_epoch"
    ))?;
    let rows = statement
        .query_map(params_from_iter(with_now(now, values)), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter()
        .map(|(epoch, pairing, created_at, receipts, unsettled)| {
            Ok(RetiredEpoch {
                retry_epoch: decode_id("retry epoch", epoch, RetryEpoch::parse)?,
                pairing_id: decode_id("pairing id", pairing, PairingId::parse)?,
                created_at: Timestamp::from_millis(created_at),
                receipts: u64::try_from(receipts).unwrap_or(0),
                unsettled_receipts: u64::try_from(unsettled).unwrap_or(0),
            })
        })
        .collect::<Result<Vec<_>>>()
        .map_err(Failure::Store)
}

/// One maintenance run inside the caller's transaction: retire, archive, remove what is empty.
/// Every step is in that one transaction, so a crash leaves either all of it or none of it.
fn run(
    transaction: &Connection,
    now: Timestamp,
    maintenance: &Maintenance,
    caps: Caps,
) -> Result<ReconcileReport, Failure> {
    let at = [now.millis()];
    let mut retired = Vec::new();
    if let Some(selector) = &maintenance.retire {
        let idle = idle_now(transaction, caps, &maintenance.idle)?;
        retired = select_epochs(transaction, selector, &idle, now)?;
        if let RetireSelector::Epoch(epoch) = selector
            && retired.is_empty()
        {
            let known: bool = transaction.query_row(
                "SELECT EXISTS (SELECT 1 FROM retry_epochs WHERE retry_epoch = ?1) \
                 OR EXISTS (SELECT 1 FROM retired_epochs WHERE retry_epoch = ?1)",
                [epoch.as_str()],
                |r| r.get(0),
            )?;
            if !known {
                return refuse(StoreError::NotFound {
                    what: format!("retry epoch {epoch}"),
                });
            }
        }
        let mut tombstone = transaction.prepare_cached(
            "INSERT INTO retired_epochs (retry_epoch, pairing_id, broker_instance_id, workspace_id, \
             created_at, expires_at, retired_at) SELECT retry_epoch, pairing_id, broker_instance_id, \
             workspace_id, created_at, expires_at, ?2 FROM retry_epochs WHERE retry_epoch = ?1",
        )?;
        for epoch in &retired {
            tombstone.execute(rusqlite::params![epoch.retry_epoch.as_str(), now.millis()])?;
        }
    }

    let archivable = archivable();
    let (events_removed, last_event): (i64, Option<i64>) = transaction.query_row(
        &format!(
            "SELECT COUNT(*), MAX(seq) FROM operation_events WHERE operation_id IN ({archivable})"
        ),
        at,
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    // The receipt goes over whole, with what the event feed still says about how it got there.
    let receipts_archived = transaction.execute(
        &format!(
            "INSERT INTO receipt_history (operation_id, pairing_id, retry_epoch, project_id, tool, \
             request_key, workspace_id, fingerprint, state, effect_state, created_at, updated_at, \
             settled_at, result_json, error_code, error_message, decided_by, trail_json, archived_at, archived_because) \
             SELECT r.operation_id, r.pairing_id, r.retry_epoch, r.project_id, r.tool, r.request_key, \
             r.workspace_id, r.fingerprint, r.state, r.effect_state, r.created_at, r.updated_at, \
             r.settled_at, r.result_json, r.error_code, r.error_message, r.decided_by, \
             (SELECT json_group_array(json_object('state', v.state, 'effectState', v.effect_state, 'at', v.at) \
              ORDER BY v.seq) FROM operation_events v WHERE v.operation_id = r.operation_id), \
             ?1, CASE WHEN EXISTS (SELECT 1 FROM retired_epochs t WHERE t.retry_epoch = r.retry_epoch) \
             THEN 'retired' ELSE 'expired' END \
             FROM receipts r WHERE r.operation_id IN ({archivable}) ORDER BY r.created_at, r.rowid"
        ),
        at,
    )?;
    transaction.execute(
        &format!("DELETE FROM operation_events WHERE operation_id IN ({archivable})"),
        at,
    )?;
    let deleted = transaction.execute(
        &format!("DELETE FROM receipts WHERE operation_id IN ({archivable})"),
        at,
    )?;
    if deleted != receipts_archived {
        return refuse(StoreError::internal(format!(
            "archiving copied {receipts_archived} receipts but removed {deleted}; nothing was changed"
        )));
    }
    if let Some(seq) = last_event {
        raise_removed_through(transaction, seq)?;
    }
    let retry_epochs_removed = transaction.execute(
        &format!(
            "DELETE FROM retry_epochs WHERE retry_epoch IN ({ENDED_EPOCHS}) AND NOT EXISTS \
             (SELECT 1 FROM receipts r WHERE r.retry_epoch = retry_epochs.retry_epoch)"
        ),
        at,
    )?;
    let ended_retry_epochs_kept = count(
        transaction,
        &format!("SELECT COUNT(*) FROM retry_epochs WHERE retry_epoch IN ({ENDED_EPOCHS})"),
        at,
    )?;
    // A tombstone goes only once its epoch could not be valid anyway and no row of the epoch
    // is left to reserve under.
    let tombstones_removed = transaction.execute(
        "DELETE FROM retired_epochs WHERE expires_at <= ?1 AND NOT EXISTS \
         (SELECT 1 FROM retry_epochs e WHERE e.retry_epoch = retired_epochs.retry_epoch)",
        at,
    )?;
    Ok(ReconcileReport {
        now,
        retired,
        receipts_archived: receipts_archived as u64,
        events_removed: u64::try_from(events_removed).unwrap_or(0),
        retry_epochs_removed: retry_epochs_removed as u64,
        ended_retry_epochs_kept,
        tombstones_removed: tombstones_removed as u64,
    })
}

impl Store {
    /// Counts for `lomi store status`, read in one snapshot. `idle` says which epochs count as
    /// idle (what `--retire idle` would retire now).
    pub fn status(&self, idle: &IdleRule) -> Result<StoreStatus> {
        let now = self.now();
        let caps = self.options().caps;
        let database_path = self.database_path().to_path_buf();
        self.read("reading the store status", |connection| {
            let snapshot = connection.unchecked_transaction()?;
            let at = [now.millis()];
            let mut receipts_by_state = Vec::with_capacity(OperationState::ALL.len());
            for state in OperationState::ALL {
                let count = count(
                    &snapshot,
                    "SELECT COUNT(*) FROM receipts WHERE state = ?1",
                    [state.as_str()],
                )?;
                receipts_by_state.push(StateCount { state, count });
            }
            let oldest = |sql: &str| -> rusqlite::Result<Option<Timestamp>> {
                let millis: Option<i64> = snapshot.query_row(sql, [], |r| r.get(0))?;
                Ok(millis.map(Timestamp::from_millis))
            };
            let receipts: u64 = receipts_by_state.iter().map(|s| s.count).sum();
            let retry_epochs = count(&snapshot, "SELECT COUNT(*) FROM retry_epochs", [])?;
            let idle = idle_now(&snapshot, caps, idle)?;
            let idle_epochs = select_epochs(&snapshot, &RetireSelector::Idle, &idle, now)?;
            let pairings = pairing_usage(&snapshot, now, &idle_epochs)?;
            Ok(StoreStatus {
                write_failure: self.write_failure(),
                schema_version: SCHEMA_VERSION,
                now,
                receipts,
                receipt_cap: caps.receipts,
                receipts_remaining: (caps.receipts as u64).saturating_sub(receipts),
                unsettled_receipts: receipts_by_state
                    .iter()
                    .filter(|s| !s.state.is_settled())
                    .map(|s| s.count)
                    .sum(),
                receipts_by_state,
                retry_epochs,
                retry_epoch_cap: caps.retry_epochs,
                retry_epochs_remaining: (caps.retry_epochs as u64).saturating_sub(retry_epochs),
                expired_retry_epochs: count(
                    &snapshot,
                    "SELECT COUNT(*) FROM retry_epochs WHERE expires_at <= ?1",
                    at,
                )?,
                idle_retry_epochs: idle_epochs.len() as u64,
                retired_retry_epochs: count(&snapshot, "SELECT COUNT(*) FROM retired_epochs", [])?,
                removable_receipts: count(
                    &snapshot,
                    &format!("SELECT COUNT(*) FROM ({})", archivable()),
                    at,
                )?,
                history_receipts: count(&snapshot, "SELECT COUNT(*) FROM receipt_history", [])?,
                warning: WarningLevel::of(receipts, caps.receipts)
                    .max(WarningLevel::of(retry_epochs, caps.retry_epochs)),
                oldest_receipt_at: oldest("SELECT MIN(created_at) FROM receipts")?,
                oldest_retry_epoch_at: oldest("SELECT MIN(created_at) FROM retry_epochs")?,
                events_retained: count(&snapshot, "SELECT COUNT(*) FROM operation_events", [])?,
                event_retention: caps.events,
                database_path,
                pairings,
            })
        })
    }

    /// What `reconcile` would do now, for the confirmation prompt: the same run, rolled back.
    pub fn reconcile_preview(&self, maintenance: &Maintenance) -> Result<ReconcileReport> {
        let caps = self.options().caps;
        let maintenance = maintenance.clone();
        self.transact("previewing maintenance", false, move |transaction, now| {
            run(transaction, now, &maintenance, caps)
        })
    }

    /// In one transaction: retires the epochs `maintenance.retire` selects (each gets a
    /// tombstone, so it is refused from then on), moves the settled receipts of retired and
    /// expired epochs to the history (their events leave the feed; older cursors expire),
    /// removes ended epochs left without receipts, and drops tombstones past their epoch's
    /// 24 hours. Unsettled receipts never move.
    pub fn reconcile(&self, maintenance: &Maintenance) -> Result<ReconcileReport> {
        let caps = self.options().caps;
        let maintenance = maintenance.clone();
        self.write("maintaining the store", move |transaction, now| {
            run(transaction, now, &maintenance, caps)
        })
    }
}

fn pairing_usage(
    connection: &Connection,
    now: Timestamp,
    idle: &[RetiredEpoch],
) -> Result<Vec<PairingUsage>, Failure> {
    let mut statement = connection.prepare(&format!(
        "SELECT p.pairing_id, \
         (SELECT COUNT(*) FROM retry_epochs e WHERE e.pairing_id = p.pairing_id AND {LIVE_EPOCH}), \
         (SELECT COUNT(*) FROM retry_epochs e WHERE e.pairing_id = p.pairing_id AND NOT ({LIVE_EPOCH})), \
         (SELECT COUNT(*) FROM receipts r WHERE r.pairing_id = p.pairing_id), \
         (SELECT COUNT(*) FROM receipts r WHERE r.pairing_id = p.pairing_id AND r.state IN {UNSETTLED_STATES}) \
         FROM (SELECT pairing_id FROM retry_epochs UNION SELECT pairing_id FROM receipts) p \
         ORDER BY p.pairing_id"
    ))?;
    let rows = statement
        .query_map([now.millis()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let positive = |n: i64| u64::try_from(n).unwrap_or(0);
    rows.into_iter()
        .map(|(pairing, live, ended, receipts, unsettled)| {
            let pairing_id = decode_id("pairing id", pairing, PairingId::parse)?;
            Ok(PairingUsage {
                idle_retry_epochs: idle.iter().filter(|e| e.pairing_id == pairing_id).count()
                    as u64,
                pairing_id,
                live_retry_epochs: positive(live),
                ended_retry_epochs: positive(ended),
                receipts: positive(receipts),
                unsettled_receipts: positive(unsettled),
            })
        })
        .collect::<Result<Vec<_>>>()
        .map_err(Failure::Store)
}
