//! Lomi's private SQLite store: durable operation receipts, retry epochs, the operation-event
//! feed, caps, reopen recovery, maintenance (retiring epochs) and the append-only receipt
//! history. Only this crate knows SQL.

mod chat;
mod clock;
mod error;
mod fingerprint;
mod history;
mod maintenance;
mod records;
mod schema;
mod store;
mod writer;

pub use chat::{ConversationRecord, MessageRecord, NewReply, Stale};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::StoreError;
pub use fingerprint::{canonical_json, fingerprint};
pub use maintenance::{
    IdleRule, Maintenance, PairingUsage, ReconcileReport, RetireSelector, RetiredEpoch, StateCount,
    StoreStatus, WarningLevel,
};
pub use records::{
    ActivityRow, ArchiveReason, ArchivedReceipt, EventPage, OperationEvent, Outcome, OutcomeError,
    Receipt, ReceiptKey, RecoveryReport, Reservation, ReservationRequest, Retirement,
    RetryEpochRecord, TrailStep,
};
pub use schema::SCHEMA_VERSION;
pub use store::{Caps, DATABASE_FILE, LOCK_FILE, Store, StoreOptions};
pub use writer::WriteFailure;

/// Results of store calls.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
