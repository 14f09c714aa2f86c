//! Lomi's private SQLite store: durable operation receipts, retry epochs, the operation-event
//! feed, caps, reopen recovery and maintenance. Only this crate knows SQL.

mod clock;
mod error;
mod fingerprint;
mod maintenance;
mod records;
mod schema;
mod store;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::StoreError;
pub use fingerprint::{canonical_json, fingerprint};
pub use maintenance::{ReconcileReport, StateCount, StoreStatus};
pub use records::{
    EventPage, OperationEvent, Outcome, OutcomeError, Receipt, ReceiptKey, RecoveryReport,
    Reservation, ReservationRequest, RetryEpochRecord,
};
pub use schema::SCHEMA_VERSION;
pub use store::{Caps, DATABASE_FILE, LOCK_FILE, Store, StoreOptions};

/// Results of store calls.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
