//! Reading the append-only receipt history (settled receipts of retired or expired retry
//! epochs, moved there by maintenance): list, show and export for the person. Nothing here
//! writes; the triggers of schema step 3 refuse any change to a history row.

use lomi_protocol::{OperationId, Timestamp};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::records::{ArchiveReason, ArchivedReceipt, TrailStep};
use crate::store::{Failure, RECEIPT_COLUMNS, ReceiptRow, to_sql_count};
use crate::{Result, Store, StoreError};

fn history_columns() -> String {
    format!("seq, trail_json, archived_at, archived_because, {RECEIPT_COLUMNS}")
}

struct HistoryRow {
    seq: i64,
    trail_json: String,
    archived_at: i64,
    archived_because: String,
    receipt: ReceiptRow,
}

impl HistoryRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(HistoryRow {
            seq: row.get(0)?,
            trail_json: row.get(1)?,
            archived_at: row.get(2)?,
            archived_because: row.get(3)?,
            receipt: ReceiptRow::read_from(row, 4)?,
        })
    }

    fn decode(self) -> Result<ArchivedReceipt> {
        let receipt = self.receipt.decode()?;
        let unreadable = |what: &str| {
            StoreError::internal(format!(
                "the history's {what} of {} is unreadable",
                receipt.operation_id
            ))
        };
        let steps: Vec<serde_json::Value> =
            serde_json::from_str(&self.trail_json).map_err(|_| unreadable("trail"))?;
        let trail = steps
            .iter()
            .map(|step| {
                Some(TrailStep {
                    state: lomi_protocol::OperationState::parse(step["state"].as_str()?)?,
                    effect_state: lomi_protocol::EffectState::parse(step["effectState"].as_str()?)?,
                    at: Timestamp::from_millis(step["at"].as_i64()?),
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| unreadable("trail"))?;
        let archived_because = match self.archived_because.as_str() {
            "retired" => ArchiveReason::Retired,
            "expired" => ArchiveReason::Expired,
            _ => return Err(unreadable("reason")),
        };
        Ok(ArchivedReceipt {
            seq: self.seq,
            receipt,
            trail,
            archived_at: Timestamp::from_millis(self.archived_at),
            archived_because,
        })
    }
}

fn rows(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<HistoryRow>, Failure> {
    let mut statement = connection.prepare(sql)?;
    let rows = statement
        .query_map(params, HistoryRow::read)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

impl Store {
    /// Archived receipts, newest first (by when they were archived, then created).
    pub fn history_list(&self, limit: usize, offset: usize) -> Result<Vec<ArchivedReceipt>> {
        let found = self.read("listing the receipt history", |c| {
            rows(
                c,
                &format!(
                    "SELECT {} FROM receipt_history ORDER BY seq DESC LIMIT ?1 OFFSET ?2",
                    history_columns()
                ),
                params![to_sql_count(limit), to_sql_count(offset)],
            )
        })?;
        found.into_iter().map(HistoryRow::decode).collect()
    }

    /// Archived receipts with `seq > after_seq`, oldest first: the export, page by page.
    pub fn history_after(&self, after_seq: i64, limit: usize) -> Result<Vec<ArchivedReceipt>> {
        let found = self.read("exporting the receipt history", |c| {
            rows(
                c,
                &format!(
                    "SELECT {} FROM receipt_history WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                    history_columns()
                ),
                params![after_seq, to_sql_count(limit)],
            )
        })?;
        found.into_iter().map(HistoryRow::decode).collect()
    }

    /// One archived receipt by operation id.
    pub fn history_get(&self, operation_id: &OperationId) -> Result<Option<ArchivedReceipt>> {
        let found = self.read("reading the receipt history", |c| {
            Ok(c.query_row(
                &format!(
                    "SELECT {} FROM receipt_history WHERE operation_id = ?1",
                    history_columns()
                ),
                [operation_id.as_str()],
                HistoryRow::read,
            )
            .optional()?)
        })?;
        found.map(HistoryRow::decode).transpose()
    }
}
