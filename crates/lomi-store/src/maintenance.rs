//! What `lomi store status` and `lomi store reconcile` need: counts against the caps, and the
//! deliberate removal of expired records (never automatic, never anything unsettled).

use std::path::PathBuf;

use lomi_protocol::{OperationState, Timestamp};
use rusqlite::Connection;

use crate::store::{Failure, SETTLED_STATES, UNSETTLED_STATES, count, raise_removed_through};
use crate::{Result, SCHEMA_VERSION, Store};

/// A snapshot of the store for `lomi store status` and `lomi_store_status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreStatus {
    pub database_path: PathBuf,
    pub schema_version: u32,
    /// The store's clock when the snapshot was taken ("expired" is relative to it).
    pub now: Timestamp,
    pub receipts: u64,
    pub receipt_cap: usize,
    pub unsettled_receipts: u64,
    /// Every state, in `OperationState::ALL` order, zeros included.
    pub receipts_by_state: Vec<StateCount>,
    pub retry_epochs: u64,
    pub retry_epoch_cap: usize,
    pub expired_retry_epochs: u64,
    /// Settled receipts of expired retry epochs: what `reconcile` would remove.
    pub removable_receipts: u64,
    pub oldest_receipt_at: Option<Timestamp>,
    pub oldest_retry_epoch_at: Option<Timestamp>,
    pub events_retained: u64,
    pub event_retention: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateCount {
    pub state: OperationState,
    pub count: u64,
}

/// What reconcile removed, or (from `reconcile_preview`) would remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconcileReport {
    /// The store's clock at the time; records with `expires_at <= now` are expired.
    pub now: Timestamp,
    pub retry_epochs_removed: u64,
    pub receipts_removed: u64,
    pub events_removed: u64,
    /// Expired epochs kept because they still have unsettled receipts; they go in a later
    /// reconcile once those settle (or after the next reopen marks them outcome_unknown).
    pub expired_retry_epochs_kept: u64,
}

// The rules, as SQL over `?1 = now`:
// an epoch is expired when expires_at <= now; a receipt is removable when it is settled and its
// epoch is expired; an expired epoch is removed once no receipt of it remains (so an unsettled
// receipt keeps its epoch, which its foreign key requires anyway).
const EXPIRED_EPOCHS: &str = "SELECT retry_epoch FROM retry_epochs WHERE expires_at <= ?1";

fn removable_receipts() -> String {
    format!(
        "SELECT operation_id FROM receipts WHERE state IN {SETTLED_STATES} AND retry_epoch IN ({EXPIRED_EPOCHS})"
    )
}

fn expired_epochs_with_unsettled() -> String {
    format!(
        "SELECT COUNT(*) FROM retry_epochs e WHERE e.expires_at <= ?1 AND EXISTS \
         (SELECT 1 FROM receipts r WHERE r.retry_epoch = e.retry_epoch AND r.state IN {UNSETTLED_STATES})"
    )
}

fn plan(connection: &Connection, now: Timestamp) -> Result<ReconcileReport, Failure> {
    let at = [now.millis()];
    let expired = count(
        connection,
        &format!("SELECT COUNT(*) FROM ({EXPIRED_EPOCHS})"),
        at,
    )?;
    let kept = count(connection, &expired_epochs_with_unsettled(), at)?;
    Ok(ReconcileReport {
        now,
        retry_epochs_removed: expired - kept,
        receipts_removed: count(
            connection,
            &format!("SELECT COUNT(*) FROM ({})", removable_receipts()),
            at,
        )?,
        events_removed: count(
            connection,
            &format!(
                "SELECT COUNT(*) FROM operation_events WHERE operation_id IN ({})",
                removable_receipts()
            ),
            at,
        )?,
        expired_retry_epochs_kept: kept,
    })
}

impl Store {
    /// Counts for `lomi store status`, read in one snapshot.
    pub fn status(&self) -> Result<StoreStatus> {
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
            Ok(StoreStatus {
                schema_version: SCHEMA_VERSION,
                now,
                receipts: receipts_by_state.iter().map(|s| s.count).sum(),
                receipt_cap: caps.receipts,
                unsettled_receipts: receipts_by_state
                    .iter()
                    .filter(|s| !s.state.is_settled())
                    .map(|s| s.count)
                    .sum(),
                receipts_by_state,
                retry_epochs: count(&snapshot, "SELECT COUNT(*) FROM retry_epochs", [])?,
                retry_epoch_cap: caps.retry_epochs,
                expired_retry_epochs: count(
                    &snapshot,
                    &format!("SELECT COUNT(*) FROM ({EXPIRED_EPOCHS})"),
                    at,
                )?,
                removable_receipts: count(
                    &snapshot,
                    &format!("SELECT COUNT(*) FROM ({})", removable_receipts()),
                    at,
                )?,
                oldest_receipt_at: oldest("SELECT MIN(created_at) FROM receipts")?,
                oldest_retry_epoch_at: oldest("SELECT MIN(created_at) FROM retry_epochs")?,
                events_retained: count(&snapshot, "SELECT COUNT(*) FROM operation_events", [])?,
                event_retention: caps.events,
                database_path,
            })
        })
    }

    /// What `reconcile` would remove now, for the confirmation prompt. Writes nothing.
    pub fn reconcile_preview(&self) -> Result<ReconcileReport> {
        let now = self.now();
        self.read("previewing maintenance", |connection| {
            let snapshot = connection.unchecked_transaction()?;
            plan(&snapshot, now)
        })
    }

    /// Removes, in one transaction: the settled receipts of expired retry epochs and their
    /// events, then the expired epochs left without receipts. Unsettled receipts and anything
    /// not expired stay. Event cursors older than a removed event read as expired afterwards.
    pub fn reconcile(&self) -> Result<ReconcileReport> {
        self.write("removing expired records", |transaction, now| {
            let report = plan(transaction, now)?;
            let at = [now.millis()];
            let removed_event: Option<i64> = transaction.query_row(
                &format!(
                    "SELECT MAX(seq) FROM operation_events WHERE operation_id IN ({})",
                    removable_receipts()
                ),
                at,
                |r| r.get(0),
            )?;
            transaction.execute(
                &format!(
                    "DELETE FROM operation_events WHERE operation_id IN ({})",
                    removable_receipts()
                ),
                at,
            )?;
            transaction.execute(
                &format!(
                    "DELETE FROM receipts WHERE operation_id IN ({})",
                    removable_receipts()
                ),
                at,
            )?;
            transaction.execute(
                "DELETE FROM retry_epochs WHERE expires_at <= ?1 AND NOT EXISTS \
                 (SELECT 1 FROM receipts r WHERE r.retry_epoch = retry_epochs.retry_epoch)",
                at,
            )?;
            if let Some(seq) = removed_event {
                raise_removed_through(transaction, seq)?;
            }
            Ok(report)
        })
    }
}
