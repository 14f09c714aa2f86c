//! `StoreError`: what can go wrong in the store, each kind mapped to one protocol error code,
//! with messages a person can act on. SQLite failures are translated here, once.

use std::path::Path;

use lomi_protocol::{EffectState, ErrorCode, OperationId, OperationState, RetryEpoch, Timestamp};

/// Errors the store returns. Callers branch on the variant; `code()` is what crosses the wire.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be opened, read or written (I/O error, full disk or size cap, a lock
    /// held by another program, an unwritable path, a schema from a newer Lomi). Nothing was
    /// written, so an effect guarded by this call must not start.
    #[error("Lomi's store is unavailable: {message}")]
    Unavailable { message: String },

    /// A cap (receipts or retry epochs) is reached; only deliberate maintenance frees room.
    #[error(
        "{what}; nothing was recorded. The person must free room: run `lomi store reconcile --retire idle` (or use Settings → Storage), which retires idle connections' retry epochs and moves their settled receipts to the history. Then call lomi_connect again if your retry epoch was retired"
    )]
    ResourceExhausted { what: String },

    /// The person retired this retry epoch (deliberate maintenance); nothing was recorded, and
    /// nothing will ever be recorded under it again.
    #[error(
        "the person ended retry epoch {retry_epoch} at {retired_at} (store maintenance); nothing was recorded. Re-observe the resources you changed (an earlier request may have taken effect), then call lomi_connect for a fresh retry epoch"
    )]
    RetryEpochRetired {
        retry_epoch: RetryEpoch,
        retired_at: Timestamp,
    },

    /// The receipt key was already used with a different fingerprint (other arguments, target
    /// generation or revision).
    #[error(
        "this request key was already used in this retry epoch with other arguments, by operation {operation_id}; inspect that operation, and use a fresh request key only for an intentionally different request"
    )]
    IdempotencyConflict { operation_id: OperationId },

    /// No such receipt or retry epoch.
    #[error("{what} is not recorded in the store")]
    NotFound { what: String },

    /// The requested step is not legal in the operation state machine; nothing was written.
    #[error(
        "operation {operation_id} cannot go from {from} to {to} with effect {effect}; nothing was written"
    )]
    IllegalTransition {
        operation_id: OperationId,
        from: OperationState,
        to: OperationState,
        effect: EffectState,
    },

    /// The receipt is not in the state the caller expected (someone else moved it first).
    #[error(
        "operation {operation_id} is {current}, not {expected} as expected; nothing was written, re-read the receipt"
    )]
    StateMismatch {
        operation_id: OperationId,
        expected: OperationState,
        current: OperationState,
    },

    /// Something that should not happen: an unreadable row, a reused operation id.
    #[error("internal store fault: {message}")]
    Internal { message: String },
}

impl StoreError {
    /// The protocol error code. `IllegalTransition` and `StateMismatch` are `INTERNAL`: the
    /// broker chooses every transition itself, so an illegal step is a broker bug, and a
    /// mismatch is a race the broker must resolve (re-read and report the current state)
    /// before anything reaches a client; the client's input was not at fault.
    pub fn code(&self) -> ErrorCode {
        match self {
            StoreError::Unavailable { .. } => ErrorCode::StoreUnavailable,
            StoreError::ResourceExhausted { .. } => ErrorCode::ResourceExhausted,
            StoreError::RetryEpochRetired { .. } => ErrorCode::RetryEpochExpired,
            StoreError::IdempotencyConflict { .. } => ErrorCode::IdempotencyConflict,
            StoreError::NotFound { .. } => ErrorCode::NotFound,
            StoreError::IllegalTransition { .. }
            | StoreError::StateMismatch { .. }
            | StoreError::Internal { .. } => ErrorCode::Internal,
        }
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        StoreError::Internal {
            message: message.into(),
        }
    }

    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        StoreError::Unavailable {
            message: message.into(),
        }
    }

    /// Translates a SQLite failure during `doing` on the database at `path`.
    pub(crate) fn from_sqlite(path: &Path, doing: &str, error: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode as Sqlite;
        let path = path.display();
        let hint = match &error {
            rusqlite::Error::SqliteFailure(failure, _) => match failure.code {
                Sqlite::DiskFull => Some(format!(
                    "the disk holding {path} is full or the store reached its size cap; free disk space, then try again"
                )),
                Sqlite::DatabaseBusy | Sqlite::DatabaseLocked => Some(format!(
                    "{path} is locked by another program (for example an open sqlite3 shell); close it and try again"
                )),
                Sqlite::ReadOnly | Sqlite::PermissionDenied | Sqlite::CannotOpen => Some(format!(
                    "{path} or its directory cannot be written; check that they are a writable file and directory"
                )),
                Sqlite::SystemIoFailure => Some(format!(
                    "the disk reported an I/O error for {path}; check the disk and free space"
                )),
                Sqlite::DatabaseCorrupt | Sqlite::NotADatabase => Some(format!(
                    "{path} is damaged or not a Lomi store; keep a copy of it and see the recovery guide"
                )),
                Sqlite::ConstraintViolation => {
                    return StoreError::internal(format!(
                        "{doing} broke a store constraint: {error}"
                    ));
                }
                _ => None,
            },
            rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::IntegralValueOutOfRange(..) => {
                return StoreError::internal(format!("{doing} found an unreadable row: {error}"));
            }
            _ => None,
        };
        let hint = hint.unwrap_or_else(|| format!("SQLite failed on {path}"));
        StoreError::unavailable(format!("{doing} failed ({error}): {hint}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_maps_to_one_code() {
        let operation_id = OperationId::from_random([1; 16]);
        let cases = [
            (StoreError::unavailable("x"), ErrorCode::StoreUnavailable),
            (
                StoreError::ResourceExhausted { what: "x".into() },
                ErrorCode::ResourceExhausted,
            ),
            (
                StoreError::IdempotencyConflict {
                    operation_id: operation_id.clone(),
                },
                ErrorCode::IdempotencyConflict,
            ),
            (
                StoreError::NotFound { what: "x".into() },
                ErrorCode::NotFound,
            ),
            (
                StoreError::RetryEpochRetired {
                    retry_epoch: RetryEpoch::from_random([2; 16]),
                    retired_at: Timestamp::from_millis(0),
                },
                ErrorCode::RetryEpochExpired,
            ),
            (
                StoreError::StateMismatch {
                    operation_id,
                    expected: OperationState::Queued,
                    current: OperationState::Running,
                },
                ErrorCode::Internal,
            ),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code, "{error}");
        }
    }

    #[test]
    fn full_disk_reads_as_unavailable_with_a_hint() {
        let failure = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let error = StoreError::from_sqlite(Path::new("/data/lomi.sqlite3"), "reserving", failure);
        assert_eq!(error.code(), ErrorCode::StoreUnavailable);
        assert!(error.to_string().contains("free disk space"), "{error}");
    }
}
