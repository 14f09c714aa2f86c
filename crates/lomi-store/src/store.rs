//! `Store`: opening (ownership lock, pragmas, migrations, reopen recovery), receipts and their
//! guarded transitions, retry epochs and the operation-event feed.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use lomi_protocol::{
    EffectState, OperationId, OperationState, PairingId, RetryEpoch, Timestamp, ToolName,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};

use crate::records::{
    ActivityRow, EventPage, OperationEvent, Outcome, Receipt, ReceiptKey, RecoveryReport,
    Reservation, ReservationRequest, Retirement, RetryEpochRecord,
};
use crate::writer::{WriteFailure, WriteHealth, Writer};
use crate::{Clock, Result, StoreError, schema};

/// The database file inside the data dir.
pub const DATABASE_FILE: &str = "lomi.sqlite3";
/// The file whose exclusive `flock` marks the process that owns the data dir's store.
pub const LOCK_FILE: &str = "store.lock";

/// Hard limits on what the store admits. Reaching one is `ResourceExhausted` until the person
/// runs maintenance; nothing is removed automatically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Receipts of any state (default 4,096, as the seed says).
    pub receipts: usize,
    /// Retry epochs, expired or not (default 4,096).
    pub retry_epochs: usize,
    /// How many of the newest operation events are kept (default 16,384, at least 1). Older
    /// ones are pruned in the same transaction that appends a new one.
    pub events: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            receipts: 4_096,
            retry_epochs: 4_096,
            events: 16_384,
        }
    }
}

/// How a store is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    pub caps: Caps,
    /// A hard size cap in database pages (`PRAGMA max_page_count`; pages are 4 KiB). A write
    /// that would grow the file past it fails like a full disk: `Unavailable`. `None` leaves
    /// SQLite's own limit. Tests use it to simulate a full disk.
    pub max_page_count: Option<u32>,
    /// How long a write waits for a SQLite lock held by another connection before it gives up
    /// with `Unavailable` (default 5 s).
    pub busy_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            caps: Caps::default(),
            max_page_count: None,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// The private store of one data dir. `Send + Sync`: share it with `Arc`. Writes go to one
/// writer thread, which commits the writes of concurrent callers together (group commit, see
/// `writer.rs`); reads are serialized on a second connection and never wait for a commit.
pub struct Store {
    // Both declared before `ownership_lock` so the connections close before the lock is
    // released (dropping the writer joins its thread, which owns the write connection).
    writer: Writer,
    health: Arc<WriteHealth>,
    reader: Mutex<Connection>,
    clock: Arc<dyn Clock>,
    options: StoreOptions,
    database_path: PathBuf,
    recovery: RecoveryReport,
    #[expect(
        dead_code,
        reason = "held, never read: closing the file releases the flock"
    )]
    ownership_lock: File,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("database_path", &self.database_path)
            .finish_non_exhaustive()
    }
}

const UNSETTLED: &str = "('queued', 'awaiting_user', 'running', 'cancelling')";
const SETTLED: &str = "('succeeded', 'failed', 'cancelled', 'outcome_unknown')";
pub(crate) const RECEIPT_COLUMNS: &str = "operation_id, pairing_id, retry_epoch, project_id, tool, request_key, \
    workspace_id, fingerprint, state, effect_state, created_at, updated_at, settled_at, \
    result_json, error_code, error_message, decided_by";
const EVENT_COLUMNS: &str =
    "seq, operation_id, pairing_id, retry_epoch, workspace_id, tool, state, effect_state, at";
const EPOCH_COLUMNS: &str = "retry_epoch, pairing_id, broker_instance_id, connection_id, workspace_id, created_at, expires_at";

impl Store {
    /// Opens (creating if needed) the store of `data_dir`: takes the ownership lock, applies the
    /// pragmas, migrates the schema, then marks every unsettled receipt `outcome_unknown`.
    pub fn open(data_dir: &Path, clock: Arc<dyn Clock>, options: StoreOptions) -> Result<Store> {
        std::fs::create_dir_all(data_dir).map_err(|e| {
            StoreError::unavailable(format!(
                "cannot create the data dir {} ({e}); check that the path is a writable directory",
                data_dir.display()
            ))
        })?;
        let ownership_lock = take_ownership(data_dir)?;
        let database_path = data_dir.join(DATABASE_FILE);
        let mut connection = open_connection(&database_path, &options)?;
        schema::migrate(&mut connection, &database_path)?;
        let reader = open_connection(&database_path, &options)?;
        let health = Arc::new(WriteHealth::default());
        let writer = Writer::start(
            connection,
            clock.clone(),
            database_path.clone(),
            health.clone(),
        )?;
        let mut store = Store {
            writer,
            health,
            reader: Mutex::new(reader),
            clock,
            options,
            database_path,
            recovery: RecoveryReport::default(),
            ownership_lock,
        };
        store.recovery = store.recover()?;
        Ok(store)
    }

    /// Whether writes are failing now (the disk is full, an I/O error), and since when: set
    /// when a write fails as a whole, cleared when one commits again.
    pub fn write_failure(&self) -> Option<WriteFailure> {
        self.health.current()
    }

    /// Reports a failed write of a file Lomi keeps beside the store (its domain file), so the
    /// person learns of it the same way; a later successful write clears it.
    pub fn note_write_failure(&self, message: String) {
        self.health.failed(self.now(), message);
    }

    /// Reports that a file Lomi keeps beside the store was written.
    pub fn note_write_success(&self) {
        self.health.succeeded();
    }

    /// The receipts this open found unsettled and marked `outcome_unknown`.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    pub fn database_path(&self) -> &Path {
        &self.database_path
    }

    pub fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// `(journal_mode, synchronous)` read back from the live write connection: `("wal", 2)`
    /// when the durability settings hold (2 is FULL).
    pub fn pragma_audit(&self) -> Result<(String, i64)> {
        self.transact(
            "reading the journal and sync modes",
            false,
            |connection, _now| {
                let journal: String =
                    connection.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
                let synchronous: i64 =
                    connection.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
                Ok((journal, synchronous))
            },
        )
    }

    /// Reserves a receipt before dispatch. A new key is recorded `queued` (`created: true`);
    /// the same key with the same fingerprint returns the existing receipt (`created: false`)
    /// and must not dispatch again; the same key with another fingerprint is
    /// `IdempotencyConflict`. The retry epoch must be recorded; a new key at the receipt cap is
    /// `ResourceExhausted`. Any failure means nothing was recorded.
    pub fn reserve(&self, request: &ReservationRequest) -> Result<Reservation> {
        self.reserve_as(request, false)
    }

    /// [`Store::reserve`] for an operation whose dispatch begins as soon as this returns (its
    /// permit is already held and nothing waits for the person): a new receipt is recorded
    /// `queued` and then `running`, both events in the same commit, so the operation costs one
    /// commit less. Crash recovery is unchanged: a `running` receipt becomes `outcome_unknown`.
    pub fn reserve_running(&self, request: &ReservationRequest) -> Result<Reservation> {
        self.reserve_as(request, true)
    }

    fn reserve_as(&self, request: &ReservationRequest, running: bool) -> Result<Reservation> {
        // Retries are the common case under load: answer them with a read, no fsync.
        let existing = self.read("looking up a receipt", |c| {
            Ok(query_by_key(c, &request.key)?)
        })?;
        if let Some(row) = existing {
            return same_or_conflict(row.decode()?, request);
        }
        let caps = self.options.caps;
        let receipt_cap = caps.receipts;
        let request = request.clone();
        self.write("reserving a receipt", move |transaction, now| {
            // Checked again under the write lock, so the rule never depends on the read above.
            if let Some(row) = query_by_key(transaction, &request.key)? {
                return Ok(same_or_conflict(row.decode()?, &request)?);
            }
            // Checked here, inside the write transaction, and not only by the broker before it:
            // a retirement that commits between the broker's check and this transaction must
            // still refuse the reservation (the person's retirement and a reservation race).
            if let Some(retired) = query_retirement(transaction, &request.key.retry_epoch)? {
                return refuse(StoreError::RetryEpochRetired {
                    retry_epoch: retired.retry_epoch,
                    retired_at: retired.retired_at,
                });
            }
            let epoch_known: bool = transaction.query_row(
                "SELECT EXISTS (SELECT 1 FROM retry_epochs WHERE retry_epoch = ?1)",
                [request.key.retry_epoch.as_str()],
                |r| r.get(0),
            )?;
            if !epoch_known {
                return refuse(StoreError::NotFound {
                    what: format!("retry epoch {}", request.key.retry_epoch),
                });
            }
            let count = count(transaction, "SELECT COUNT(*) FROM receipts", [])?;
            if count >= receipt_cap as u64 {
                return refuse(StoreError::ResourceExhausted {
                    what: format!("the store holds {count} operation receipts, its cap of {receipt_cap}"),
                });
            }
            if query_by_id(transaction, &request.operation_id)?.is_some() {
                return refuse(StoreError::internal(format!(
                    "operation id {} is already used by another receipt",
                    request.operation_id
                )));
            }
            let mut receipt = Receipt {
                operation_id: request.operation_id.clone(),
                key: request.key.clone(),
                workspace_id: request.workspace_id.clone(),
                fingerprint: request.fingerprint.clone(),
                state: OperationState::Queued,
                effect_state: EffectState::None,
                created_at: now,
                updated_at: now,
                settled_at: None,
                result: None,
                error_code: None,
                error_message: None,
                decided_by: request.decided_by.clone(),
            };
            transaction.prepare_cached(
                &format!("INSERT INTO receipts ({RECEIPT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, NULL, NULL, NULL, NULL, ?13)"),
            )?.execute(
                params![
                    receipt.operation_id.as_str(),
                    receipt.key.pairing_id.as_str(),
                    receipt.key.retry_epoch.as_str(),
                    project_text(&receipt.key),
                    receipt.key.tool.0,
                    receipt.key.request_key.as_str(),
                    receipt.workspace_id.as_ref().map(|w| w.as_str()),
                    receipt.fingerprint,
                    receipt.state.as_str(),
                    receipt.effect_state.as_str(),
                    now.millis(),
                    now.millis(),
                    receipt.decided_by.as_deref(),
                ],
            )?;
            append_event(transaction, &receipt, now, caps)?;
            if running {
                receipt.state = OperationState::Running;
                transaction
                    .prepare_cached("UPDATE receipts SET state = ?2 WHERE operation_id = ?1")?
                    .execute(params![receipt.operation_id.as_str(), receipt.state.as_str()])?;
                append_event(transaction, &receipt, now, caps)?;
            }
            Ok(Reservation { receipt, created: true })
        })
    }

    /// Moves a receipt from `expected_from` to `to` with effect `effect`, durably, with its
    /// event. Illegal steps (see `OperationState::can_become`) are `IllegalTransition`; a receipt
    /// that is no longer `expected_from` is `StateMismatch`. Either way nothing is written.
    /// An `outcome` replaces the recorded result and error.
    pub fn transition(
        &self,
        operation_id: &OperationId,
        expected_from: OperationState,
        to: OperationState,
        effect: EffectState,
        outcome: Option<Outcome>,
    ) -> Result<Receipt> {
        self.transition_decided(operation_id, expected_from, to, effect, outcome, None)
    }

    /// [`Store::transition`] that also records what decided the operation (the person's
    /// answer to an `awaiting_user` one), in the same commit.
    pub fn transition_decided(
        &self,
        operation_id: &OperationId,
        expected_from: OperationState,
        to: OperationState,
        effect: EffectState,
        outcome: Option<Outcome>,
        decided_by: Option<String>,
    ) -> Result<Receipt> {
        if !expected_from.can_become(to, effect) {
            return Err(StoreError::IllegalTransition {
                operation_id: operation_id.clone(),
                from: expected_from,
                to,
                effect,
            });
        }
        let caps = self.options.caps;
        let operation_id = operation_id.clone();
        self.write("recording an operation state change", move |transaction, now| {
            let operation_id = &operation_id;
            let mut receipt = query_by_id(transaction, operation_id)?
                .ok_or_else(|| not_found_operation(operation_id))?
                .decode()?;
            if receipt.state != expected_from {
                return refuse(StoreError::StateMismatch {
                    operation_id: operation_id.clone(),
                    expected: expected_from,
                    current: receipt.state,
                });
            }
            receipt.state = to;
            receipt.effect_state = effect;
            receipt.updated_at = now;
            if to.is_settled() {
                receipt.settled_at = Some(now);
            }
            if let Some(outcome) = outcome {
                receipt.result = outcome.result;
                receipt.error_code = outcome.error.as_ref().map(|e| e.code.clone());
                receipt.error_message = outcome.error.map(|e| e.message);
            }
            if let Some(decided_by) = &decided_by {
                receipt.decided_by = Some(decided_by.clone());
            }
            let result_json = receipt.result.as_ref().map(|v| v.to_string());
            transaction.prepare_cached(
                "UPDATE receipts SET state = ?2, effect_state = ?3, updated_at = ?4, settled_at = ?5, \
                 result_json = ?6, error_code = ?7, error_message = ?8, decided_by = ?9 \
                 WHERE operation_id = ?1",
            )?.execute(
                params![
                    operation_id.as_str(),
                    to.as_str(),
                    effect.as_str(),
                    now.millis(),
                    receipt.settled_at.map(Timestamp::millis),
                    result_json,
                    receipt.error_code,
                    receipt.error_message,
                    receipt.decided_by,
                ],
            )?;
            append_event(transaction, &receipt, now, caps)?;
            Ok(receipt)
        })
    }

    pub fn get(&self, operation_id: &OperationId) -> Result<Option<Receipt>> {
        let row = self.read("reading a receipt", |c| Ok(query_by_id(c, operation_id)?))?;
        row.map(ReceiptRow::decode).transpose()
    }

    /// How many receipts (kept and in the history) each decider decided, and the newest's
    /// time: `decided_by` → (count, last). Receipts older than the column are left out.
    pub fn decisions_by(
        &self,
    ) -> Result<std::collections::HashMap<String, (u64, Option<Timestamp>)>> {
        self.read("counting what decided the receipts", |connection| {
            let mut statement = connection.prepare(
                "SELECT decided_by, COUNT(*), MAX(created_at) FROM \
                 (SELECT decided_by, created_at FROM receipts WHERE decided_by IS NOT NULL \
                  UNION ALL SELECT decided_by, created_at FROM receipt_history WHERE decided_by IS NOT NULL) \
                 GROUP BY decided_by",
            )?;
            let rows = statement.query_map([], |row| {
                let by: String = row.get(0)?;
                let count: i64 = row.get(1)?;
                let last: Option<i64> = row.get(2)?;
                Ok((by, (count.max(0) as u64, last.map(Timestamp::from_millis))))
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// Every receipt's who, what and how it ended, kept and in the history (for the
    /// person's activity view), oldest first; `pairing` narrows it to one agent.
    pub fn activity(&self, pairing: Option<&PairingId>) -> Result<Vec<ActivityRow>> {
        self.read("reading the receipts' activity", |connection| {
            let mut statement = connection.prepare(
                "SELECT pairing_id, tool, state, error_code, decided_by, created_at, settled_at FROM \
                 (SELECT pairing_id, tool, state, error_code, decided_by, created_at, settled_at FROM receipts \
                  UNION ALL SELECT pairing_id, tool, state, error_code, decided_by, created_at, settled_at \
                  FROM receipt_history) \
                 WHERE ?1 IS NULL OR pairing_id = ?1 ORDER BY created_at",
            )?;
            let rows = statement.query_map([pairing.map(PairingId::as_str)], |row| {
                Ok(ActivityRow {
                    pairing_id: row.get(0)?,
                    tool: row.get(1)?,
                    state: row.get(2)?,
                    error_code: row.get(3)?,
                    decided_by: row.get(4)?,
                    created_at: Timestamp::from_millis(row.get(5)?),
                    settled_at: row.get::<_, Option<i64>>(6)?.map(Timestamp::from_millis),
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    pub fn lookup(&self, key: &ReceiptKey) -> Result<Option<Receipt>> {
        let row = self.read("looking up a receipt", |c| Ok(query_by_key(c, key)?))?;
        row.map(ReceiptRow::decode).transpose()
    }

    /// Receipts, newest first, for `lomi operation list`.
    pub fn list_receipts(&self, limit: usize, offset: usize) -> Result<Vec<Receipt>> {
        let rows = self.read("listing receipts", |connection| {
            let mut statement = connection.prepare(&format!(
                "SELECT {RECEIPT_COLUMNS} FROM receipts ORDER BY created_at DESC, rowid DESC LIMIT ?1 OFFSET ?2"
            ))?;
            let rows = statement
                .query_map([to_sql_count(limit), to_sql_count(offset)], ReceiptRow::read)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })?;
        rows.into_iter().map(ReceiptRow::decode).collect()
    }

    /// One operation's events still in the feed, oldest first, at most `limit`: the states it
    /// went through, with when (the person's receipt view).
    pub fn events_of(&self, operation: &OperationId, limit: usize) -> Result<Vec<OperationEvent>> {
        let operation = operation.to_string();
        self.read("reading an operation's events", |connection| {
            let mut statement = connection.prepare(&format!(
                "SELECT {EVENT_COLUMNS} FROM operation_events WHERE operation_id = ?1 ORDER BY seq LIMIT ?2"
            ))?;
            let rows = statement
                .query_map(params![operation, to_sql_count(limit)], EventRow::read)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })?
        .into_iter()
        .map(EventRow::decode)
        .collect()
    }

    /// Events with `seq > after_seq`, oldest first, at most `limit`, with the feed's bounds.
    pub fn events_after(&self, after_seq: i64, limit: usize) -> Result<EventPage> {
        self.read("reading operation events", |connection| {
            let snapshot = connection.unchecked_transaction()?;
            let mut statement = snapshot.prepare(&format!(
                "SELECT {EVENT_COLUMNS} FROM operation_events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))?;
            let rows = statement
                .query_map(params![after_seq, to_sql_count(limit)], EventRow::read)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            drop(statement);
            let events = rows
                .into_iter()
                .map(EventRow::decode)
                .collect::<Result<Vec<_>>>()?;
            let oldest_retained_seq: Option<i64> =
                snapshot.query_row("SELECT MIN(seq) FROM operation_events", [], |r| r.get(0))?;
            let removed_through_seq = removed_through(&snapshot)?;
            let newest_seq: i64 = snapshot
                .query_row(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'operation_events'",
                    [],
                    |r| r.get(0),
                )
                .optional()?
                .unwrap_or(0);
            Ok(EventPage {
                events,
                oldest_retained_seq,
                removed_through_seq,
                newest_seq,
            })
        })
    }

    /// Records a retry epoch. Recording the identical record again is a no-op (`Ok(false)`);
    /// a new epoch at the cap is `ResourceExhausted`.
    pub fn create_retry_epoch(&self, record: &RetryEpochRecord) -> Result<bool> {
        let cap = self.options.caps.retry_epochs;
        let record = record.clone();
        self.write("recording a retry epoch", move |transaction, _now| {
            if query_retirement(transaction, &record.retry_epoch)?.is_some() {
                return refuse(StoreError::internal(format!(
                    "retry epoch {} was retired and cannot be recorded again",
                    record.retry_epoch
                )));
            }
            if let Some(existing) = query_epoch(transaction, &record.retry_epoch)? {
                if existing.decode()? == record {
                    return Ok(false);
                }
                return refuse(StoreError::internal(format!(
                    "retry epoch {} is already recorded with other fields",
                    record.retry_epoch
                )));
            }
            let count = count(transaction, "SELECT COUNT(*) FROM retry_epochs", [])?;
            if count >= cap as u64 {
                return refuse(StoreError::ResourceExhausted {
                    what: format!("the store holds {count} retry epochs, its cap of {cap}"),
                });
            }
            transaction.execute(
                &format!(
                    "INSERT INTO retry_epochs ({EPOCH_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                ),
                params![
                    record.retry_epoch.as_str(),
                    record.pairing_id.as_str(),
                    record.broker_instance_id.as_str(),
                    record.connection_id.as_str(),
                    record.workspace_id.as_str(),
                    record.created_at.millis(),
                    record.expires_at.millis(),
                ],
            )?;
            Ok(true)
        })
    }

    pub fn retry_epoch(&self, retry_epoch: &RetryEpoch) -> Result<Option<RetryEpochRecord>> {
        let row = self.read("reading a retry epoch", |c| {
            Ok(query_epoch(c, retry_epoch)?)
        })?;
        row.map(EpochRow::decode).transpose()
    }

    /// The newest retry epoch of `pairing` in `workspace` issued by `instance` that is still
    /// valid at `now` and not retired (for operations Lomi opens on an agent's behalf, such as
    /// a terminal line held for the person).
    pub fn live_epoch(
        &self,
        pairing: &PairingId,
        workspace: &lomi_protocol::WorkspaceId,
        instance: &lomi_protocol::BrokerInstanceId,
        now: Timestamp,
    ) -> Result<Option<RetryEpoch>> {
        self.read("finding a valid retry epoch", |c| {
            let epoch: Option<String> = c
                .query_row(
                    "SELECT e.retry_epoch FROM retry_epochs e WHERE e.pairing_id = ?1 \
                     AND e.workspace_id = ?2 AND e.broker_instance_id = ?3 AND e.expires_at > ?4 \
                     AND NOT EXISTS (SELECT 1 FROM retired_epochs t WHERE t.retry_epoch = e.retry_epoch) \
                     ORDER BY e.created_at DESC LIMIT 1",
                    params![pairing.as_str(), workspace.as_str(), instance.as_str(), now.millis()],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(epoch.and_then(|e| RetryEpoch::parse(e).ok()))
        })
    }

    /// The tombstone of a retry epoch the person retired, while it is kept (at least as long
    /// as the epoch could otherwise have been valid).
    pub fn retirement(&self, retry_epoch: &RetryEpoch) -> Result<Option<Retirement>> {
        self.read("reading a retry epoch's retirement", |c| {
            Ok(query_retirement(c, retry_epoch)?)
        })
    }

    /// Runs `body` on the read connection, outside any write transaction. It sees every write
    /// that was answered before it started.
    pub(crate) fn read<T>(
        &self,
        doing: &str,
        body: impl FnOnce(&Connection) -> Result<T, Failure>,
    ) -> Result<T> {
        let connection = self.reader();
        body(&connection).map_err(|failure| failure.into_store_error(&self.database_path, doing))
    }

    /// Runs `body` on the writer thread inside a `BEGIN IMMEDIATE` transaction, together with
    /// the other writes queued meanwhile, and returns once that transaction committed. On any
    /// error nothing of `body` is written, and the connection stays usable.
    pub(crate) fn write<T: Send + 'static>(
        &self,
        doing: &'static str,
        body: impl FnOnce(&Connection, Timestamp) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T> {
        self.transact(doing, true, body)
    }

    /// [`Store::write`], but with `commit: false` the body's changes are rolled back right
    /// after it ran: a preview that computes exactly what the write would do, under the same
    /// lock.
    pub(crate) fn transact<T: Send + 'static>(
        &self,
        doing: &'static str,
        commit: bool,
        body: impl FnOnce(&Connection, Timestamp) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T> {
        self.writer.write(doing, commit, Box::new(body))
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The read connection; a panic elsewhere while it was held does not make it unusable (any
    /// open read transaction ended when the panic dropped it).
    fn reader(&self) -> MutexGuard<'_, Connection> {
        self.reader.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks every unsettled receipt `outcome_unknown` with effect `unknown`, one event each, in
    /// one transaction. Nothing is handed back to run: the store has no dispatch.
    fn recover(&self) -> Result<RecoveryReport> {
        let caps = self.options.caps;
        self.write("marking unfinished operations outcome_unknown", move |transaction, now| {
            let mut statement = transaction.prepare(&format!(
                "SELECT {RECEIPT_COLUMNS} FROM receipts WHERE state IN {UNSETTLED} ORDER BY created_at, rowid"
            ))?;
            let rows = statement
                .query_map([], ReceiptRow::read)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            drop(statement);
            let mut marked = Vec::with_capacity(rows.len());
            for row in rows {
                let mut receipt = row.decode()?;
                receipt.state = OperationState::OutcomeUnknown;
                receipt.effect_state = EffectState::Unknown;
                receipt.updated_at = now;
                receipt.settled_at = Some(now);
                transaction.execute(
                    "UPDATE receipts SET state = 'outcome_unknown', effect_state = 'unknown', \
                     updated_at = ?2, settled_at = ?2 WHERE operation_id = ?1",
                    params![receipt.operation_id.as_str(), now.millis()],
                )?;
                append_event(transaction, &receipt, now, caps)?;
                marked.push(receipt.operation_id);
            }
            // A reply that was arriving when Lomi stopped is kept as it stands, never resent.
            crate::chat::interrupt_streaming(transaction, now)?;
            Ok(RecoveryReport { marked_outcome_unknown: marked })
        })
    }
}

/// Appends the receipt's current state to the feed and prunes events beyond the retention cap,
/// in the caller's transaction.
fn append_event(
    transaction: &Connection,
    receipt: &Receipt,
    at: Timestamp,
    caps: Caps,
) -> Result<(), Failure> {
    transaction.prepare_cached(
            "INSERT INTO operation_events (operation_id, pairing_id, retry_epoch, workspace_id, tool, state, effect_state, at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?.execute(
            params![
                receipt.operation_id.as_str(),
                receipt.key.pairing_id.as_str(),
                receipt.key.retry_epoch.as_str(),
                receipt.workspace_id.as_ref().map(|w| w.as_str()),
                receipt.key.tool.0,
                receipt.state.as_str(),
                receipt.effect_state.as_str(),
                at.millis(),
            ],
        )?;
    let seq = transaction.last_insert_rowid();
    let retention = i64::try_from(caps.events.max(1)).unwrap_or(i64::MAX);
    let floor = seq.saturating_sub(retention);
    if floor > 0 {
        // Two indexed range reads; a no-op unless something fell out of the window.
        let removed: Option<i64> = transaction.query_row(
            "SELECT MAX(seq) FROM operation_events WHERE seq <= ?1",
            [floor],
            |r| r.get(0),
        )?;
        if let Some(removed) = removed {
            transaction.execute("DELETE FROM operation_events WHERE seq <= ?1", [floor])?;
            raise_removed_through(transaction, removed)?;
        }
    }
    Ok(())
}

/// Takes the exclusive, non-blocking lock on `<data_dir>/store.lock` for the store's lifetime.
/// While one process holds it, no other can open the store, so reopen recovery never marks
/// another live process's operations.
fn take_ownership(data_dir: &Path) -> Result<File> {
    let path = data_dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| {
            StoreError::unavailable(format!(
                "cannot open the lock file {} ({e}); check that the data dir is writable",
                path.display()
            ))
        })?;
    // A lock that looks held may be our own, briefly: a thread of this process that is
    // spawning a child shares every open file with it between fork and exec (the files are
    // close-on-exec, so never longer). A reopen racing that window retries for up to 200 ms.
    let mut attempts = 0;
    let outcome = loop {
        match file.try_lock() {
            Err(TryLockError::WouldBlock) if attempts < 40 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            outcome => break outcome,
        }
    };
    match outcome {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::unavailable(format!(
            "another Lomi process is using the data dir {}; quit it (or wait for it to exit), or use another data dir",
            data_dir.display()
        ))),
        Err(TryLockError::Error(e)) => Err(StoreError::unavailable(format!(
            "cannot lock {} ({e}); the data dir must be on a local file system that supports locks",
            path.display()
        ))),
    }
}

/// Opens one connection with the settings every connection must have: WAL, synchronous=FULL,
/// foreign keys, a busy timeout and the optional size cap. Each is read back or checked.
pub(crate) fn open_connection(path: &Path, options: &StoreOptions) -> Result<Connection> {
    let fail = |doing: &str, error| StoreError::from_sqlite(path, doing, error);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection =
        Connection::open_with_flags(path, flags).map_err(|e| fail("opening the database", e))?;
    connection
        .busy_timeout(options.busy_timeout)
        .map_err(|e| fail("setting the busy timeout", e))?;
    let journal: String = connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(|e| fail("switching to write-ahead logging", e))?;
    if !journal.eq_ignore_ascii_case("wal") {
        return Err(StoreError::unavailable(format!(
            "{} stayed in journal mode {journal:?} instead of WAL; check that its directory is writable and that {DATABASE_FILE}-wal and {DATABASE_FILE}-shm are regular files",
            path.display()
        )));
    }
    connection
        .pragma_update(None, "synchronous", "FULL")
        .map_err(|e| fail("setting synchronous=FULL", e))?;
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(|e| fail("enabling foreign keys", e))?;
    if let Some(pages) = options.max_page_count {
        let _applied: i64 = connection
            .pragma_update_and_check(None, "max_page_count", pages, |r| r.get(0))
            .map_err(|e| fail("setting the size cap", e))?;
    }
    Ok(connection)
}

/// An error inside a read or write body: a SQLite failure (translated once, with what was being
/// done) or a store error decided by the body itself.
pub(crate) enum Failure {
    Sqlite(rusqlite::Error),
    Store(StoreError),
}

impl Failure {
    pub(crate) fn into_store_error(self, path: &Path, doing: &str) -> StoreError {
        match self {
            Failure::Sqlite(error) => StoreError::from_sqlite(path, doing, error),
            Failure::Store(error) => error,
        }
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(error: rusqlite::Error) -> Self {
        Failure::Sqlite(error)
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Failure::Store(error)
    }
}

fn same_or_conflict(
    existing: Receipt,
    request: &ReservationRequest,
) -> Result<Reservation, StoreError> {
    if existing.fingerprint == request.fingerprint {
        Ok(Reservation {
            receipt: existing,
            created: false,
        })
    } else {
        Err(StoreError::IdempotencyConflict {
            operation_id: existing.operation_id,
        })
    }
}

fn not_found_operation(operation_id: &OperationId) -> StoreError {
    StoreError::NotFound {
        what: format!("operation {operation_id}"),
    }
}

fn project_text(key: &ReceiptKey) -> &str {
    key.project_id.as_ref().map_or("", |p| p.as_str())
}

pub(crate) fn to_sql_count(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn count<P: rusqlite::Params>(
    connection: &Connection,
    sql: &str,
    params: P,
) -> rusqlite::Result<u64> {
    let value: i64 = connection.query_row(sql, params, |r| r.get(0))?;
    Ok(u64::try_from(value).unwrap_or(0))
}

pub(crate) fn removed_through(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row(
        "SELECT value FROM store_meta WHERE name = 'events_removed_through_seq'",
        [],
        |r| r.get(0),
    )
}

pub(crate) fn raise_removed_through(connection: &Connection, seq: i64) -> rusqlite::Result<()> {
    connection.execute(
        "UPDATE store_meta SET value = MAX(value, ?1) WHERE name = 'events_removed_through_seq'",
        [seq],
    )?;
    Ok(())
}

pub(crate) const SETTLED_STATES: &str = SETTLED;
pub(crate) const UNSETTLED_STATES: &str = UNSETTLED;

fn query_by_key(connection: &Connection, key: &ReceiptKey) -> rusqlite::Result<Option<ReceiptRow>> {
    connection
        .prepare_cached(&format!(
            "SELECT {RECEIPT_COLUMNS} FROM receipts WHERE pairing_id = ?1 AND retry_epoch = ?2 \
             AND project_id = ?3 AND tool = ?4 AND request_key = ?5"
        ))?
        .query_row(
            params![
                key.pairing_id.as_str(),
                key.retry_epoch.as_str(),
                project_text(key),
                key.tool.0,
                key.request_key.as_str()
            ],
            ReceiptRow::read,
        )
        .optional()
}

fn query_by_id(
    connection: &Connection,
    operation_id: &OperationId,
) -> rusqlite::Result<Option<ReceiptRow>> {
    connection
        .prepare_cached(&format!(
            "SELECT {RECEIPT_COLUMNS} FROM receipts WHERE operation_id = ?1"
        ))?
        .query_row([operation_id.as_str()], ReceiptRow::read)
        .optional()
}

fn query_epoch(
    connection: &Connection,
    retry_epoch: &RetryEpoch,
) -> rusqlite::Result<Option<EpochRow>> {
    connection
        .query_row(
            &format!("SELECT {EPOCH_COLUMNS} FROM retry_epochs WHERE retry_epoch = ?1"),
            [retry_epoch.as_str()],
            EpochRow::read,
        )
        .optional()
}

pub(crate) fn query_retirement(
    connection: &Connection,
    retry_epoch: &RetryEpoch,
) -> rusqlite::Result<Option<Retirement>> {
    let row = connection
        .query_row(
            "SELECT pairing_id, retired_at, expires_at FROM retired_epochs WHERE retry_epoch = ?1",
            [retry_epoch.as_str()],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            },
        )
        .optional()?;
    // A stored pairing id that no longer parses is not a reason to let the epoch through.
    Ok(row.map(|(pairing, retired_at, expires_at)| Retirement {
        retry_epoch: retry_epoch.clone(),
        pairing_id: lomi_protocol::PairingId::parse(pairing).ok(),
        retired_at: Timestamp::from_millis(retired_at),
        valid_until: Timestamp::from_millis(expires_at),
    }))
}

pub(crate) fn decode_id<T>(
    kind: &str,
    text: String,
    parse: fn(String) -> Result<T, String>,
) -> Result<T> {
    parse(text).map_err(|e| StoreError::internal(format!("a stored {kind} is unreadable: {e}")))
}

fn decode_state(text: &str) -> Result<OperationState> {
    OperationState::parse(text).ok_or_else(|| {
        StoreError::internal(format!("a stored operation state {text:?} is unknown"))
    })
}

fn decode_effect(text: &str) -> Result<EffectState> {
    EffectState::parse(text)
        .ok_or_else(|| StoreError::internal(format!("a stored effect state {text:?} is unknown")))
}

/// A receipt as stored: plain SQL values, decoded into typed ids after the query.
pub(crate) struct ReceiptRow {
    operation_id: String,
    pairing_id: String,
    retry_epoch: String,
    project_id: String,
    tool: String,
    request_key: String,
    workspace_id: Option<String>,
    fingerprint: String,
    state: String,
    effect_state: String,
    created_at: i64,
    updated_at: i64,
    settled_at: Option<i64>,
    result_json: Option<String>,
    error_code: Option<String>,
    error_message: Option<String>,
    decided_by: Option<String>,
}

impl ReceiptRow {
    pub(crate) fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Self::read_from(row, 0)
    }

    /// Reads the receipt columns starting at column `first` (the history puts its own first).
    pub(crate) fn read_from(row: &Row<'_>, first: usize) -> rusqlite::Result<Self> {
        Ok(ReceiptRow {
            operation_id: row.get(first)?,
            pairing_id: row.get(first + 1)?,
            retry_epoch: row.get(first + 2)?,
            project_id: row.get(first + 3)?,
            tool: row.get(first + 4)?,
            request_key: row.get(first + 5)?,
            workspace_id: row.get(first + 6)?,
            fingerprint: row.get(first + 7)?,
            state: row.get(first + 8)?,
            effect_state: row.get(first + 9)?,
            created_at: row.get(first + 10)?,
            updated_at: row.get(first + 11)?,
            settled_at: row.get(first + 12)?,
            result_json: row.get(first + 13)?,
            error_code: row.get(first + 14)?,
            error_message: row.get(first + 15)?,
            decided_by: row.get(first + 16)?,
        })
    }

    pub(crate) fn decode(self) -> Result<Receipt> {
        use lomi_protocol::{PairingId, ProjectId, RequestKey, WorkspaceId};
        let project_id = if self.project_id.is_empty() {
            None
        } else {
            Some(decode_id("project id", self.project_id, ProjectId::parse)?)
        };
        let result = match self.result_json {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                StoreError::internal(format!(
                    "a stored result of {} is not JSON: {e}",
                    self.operation_id
                ))
            })?),
            None => None,
        };
        Ok(Receipt {
            key: ReceiptKey {
                pairing_id: decode_id("pairing id", self.pairing_id, PairingId::parse)?,
                retry_epoch: decode_id("retry epoch", self.retry_epoch, RetryEpoch::parse)?,
                project_id,
                tool: ToolName(self.tool),
                request_key: decode_id("request key", self.request_key, RequestKey::parse)?,
            },
            workspace_id: self
                .workspace_id
                .map(|w| decode_id("workspace id", w, WorkspaceId::parse))
                .transpose()?,
            operation_id: decode_id("operation id", self.operation_id, OperationId::parse)?,
            fingerprint: self.fingerprint,
            state: decode_state(&self.state)?,
            effect_state: decode_effect(&self.effect_state)?,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            settled_at: self.settled_at.map(Timestamp::from_millis),
            result,
            error_code: self.error_code,
            error_message: self.error_message,
            decided_by: self.decided_by,
        })
    }
}

struct EventRow {
    seq: i64,
    operation_id: String,
    pairing_id: String,
    retry_epoch: String,
    workspace_id: Option<String>,
    tool: String,
    state: String,
    effect_state: String,
    at: i64,
}

impl EventRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(EventRow {
            seq: row.get(0)?,
            operation_id: row.get(1)?,
            pairing_id: row.get(2)?,
            retry_epoch: row.get(3)?,
            workspace_id: row.get(4)?,
            tool: row.get(5)?,
            state: row.get(6)?,
            effect_state: row.get(7)?,
            at: row.get(8)?,
        })
    }

    fn decode(self) -> Result<OperationEvent> {
        use lomi_protocol::{PairingId, WorkspaceId};
        Ok(OperationEvent {
            seq: self.seq,
            operation_id: decode_id("operation id", self.operation_id, OperationId::parse)?,
            pairing_id: decode_id("pairing id", self.pairing_id, PairingId::parse)?,
            retry_epoch: decode_id("retry epoch", self.retry_epoch, RetryEpoch::parse)?,
            workspace_id: self
                .workspace_id
                .map(|w| decode_id("workspace id", w, WorkspaceId::parse))
                .transpose()?,
            tool: ToolName(self.tool),
            state: decode_state(&self.state)?,
            effect_state: decode_effect(&self.effect_state)?,
            at: Timestamp::from_millis(self.at),
        })
    }
}

struct EpochRow {
    retry_epoch: String,
    pairing_id: String,
    broker_instance_id: String,
    connection_id: String,
    workspace_id: String,
    created_at: i64,
    expires_at: i64,
}

impl EpochRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(EpochRow {
            retry_epoch: row.get(0)?,
            pairing_id: row.get(1)?,
            broker_instance_id: row.get(2)?,
            connection_id: row.get(3)?,
            workspace_id: row.get(4)?,
            created_at: row.get(5)?,
            expires_at: row.get(6)?,
        })
    }

    fn decode(self) -> Result<RetryEpochRecord> {
        use lomi_protocol::{BrokerInstanceId, ConnectionId, PairingId, WorkspaceId};
        Ok(RetryEpochRecord {
            retry_epoch: decode_id("retry epoch", self.retry_epoch, RetryEpoch::parse)?,
            pairing_id: decode_id("pairing id", self.pairing_id, PairingId::parse)?,
            broker_instance_id: decode_id(
                "broker instance id",
                self.broker_instance_id,
                BrokerInstanceId::parse,
            )?,
            connection_id: decode_id("connection id", self.connection_id, ConnectionId::parse)?,
            workspace_id: decode_id("workspace id", self.workspace_id, WorkspaceId::parse)?,
            created_at: Timestamp::from_millis(self.created_at),
            expires_at: Timestamp::from_millis(self.expires_at),
        })
    }
}

/// Ends a read or write body with a store error of its own (the transaction rolls back).
pub(crate) fn refuse<T>(error: StoreError) -> Result<T, Failure> {
    Err(Failure::Store(error))
}
