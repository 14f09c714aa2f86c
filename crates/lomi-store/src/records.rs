//! The plain data the store hands out and takes in: receipt keys and receipts, reservations,
//! outcomes, retry-epoch records, operation events and the reopen recovery report.

use lomi_protocol::{
    BrokerInstanceId, ConnectionId, EffectState, OperationId, OperationState, PairingId, ProjectId,
    RequestKey, RetryEpoch, Timestamp, ToolName, WorkspaceId,
};
use serde_json::Value;

/// The durable identity of a request: a second reservation with the same key is a retry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReceiptKey {
    pub pairing_id: PairingId,
    pub retry_epoch: RetryEpoch,
    /// The anchor project, when the connection has one; stored as `''` when absent so the
    /// UNIQUE constraint treats "no project" as one value.
    pub project_id: Option<ProjectId>,
    pub tool: ToolName,
    pub request_key: RequestKey,
}

/// What the broker asks the store to record before it dispatches anything.
#[derive(Clone, Debug, PartialEq)]
pub struct ReservationRequest {
    pub key: ReceiptKey,
    /// The id for a new receipt (randomness is the caller's); ignored on a retry.
    pub operation_id: OperationId,
    /// The workspace the operation targets, if any (for the event feed).
    pub workspace_id: Option<WorkspaceId>,
    /// See [`crate::fingerprint`].
    pub fingerprint: String,
    /// What decided that it runs, waits or is refused (see [`Receipt::decided_by`]).
    pub decided_by: Option<String>,
}

/// The answer to a reservation: the receipt, and whether this call created it.
#[derive(Clone, Debug, PartialEq)]
pub struct Reservation {
    pub receipt: Receipt,
    /// False when the key was already reserved with the same fingerprint: a retry, which must
    /// not dispatch again.
    pub created: bool,
}

/// One operation's durable receipt.
#[derive(Clone, Debug, PartialEq)]
pub struct Receipt {
    pub operation_id: OperationId,
    pub key: ReceiptKey,
    pub workspace_id: Option<WorkspaceId>,
    pub fingerprint: String,
    pub state: OperationState,
    pub effect_state: EffectState,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub settled_at: Option<Timestamp>,
    pub result: Option<Value>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    /// What decided it: `default` (the tool's "ask me before" setting), `rule:<id>` (one of
    /// the person's rules) or `person` (their decision on it); `None` for older receipts.
    pub decided_by: Option<String>,
}

/// A typed result and/or an error recorded with a transition. When a transition carries an
/// outcome, it replaces the receipt's result and error columns as a whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub result: Option<Value>,
    pub error: Option<OutcomeError>,
}

/// A failure recorded on a receipt: a protocol error code name and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutcomeError {
    pub code: String,
    pub message: String,
}

/// A retry epoch as the broker issued it at `lomi_connect`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryEpochRecord {
    pub retry_epoch: RetryEpoch,
    pub pairing_id: PairingId,
    pub broker_instance_id: BrokerInstanceId,
    pub connection_id: ConnectionId,
    pub workspace_id: WorkspaceId,
    pub created_at: Timestamp,
    /// The broker's 24 h rule decides this; the store only compares it with its clock.
    pub expires_at: Timestamp,
}

/// One row of the operation-event feed: a state change of one receipt.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationEvent {
    pub seq: i64,
    pub operation_id: OperationId,
    pub pairing_id: PairingId,
    pub retry_epoch: RetryEpoch,
    pub workspace_id: Option<WorkspaceId>,
    pub tool: ToolName,
    pub state: OperationState,
    pub effect_state: EffectState,
    pub at: Timestamp,
}

/// A bounded page of the event feed.
#[derive(Clone, Debug, PartialEq)]
pub struct EventPage {
    /// Events with `seq > after_seq`, in order, at most `limit`.
    pub events: Vec<OperationEvent>,
    /// The lowest seq still stored, if any event is.
    pub oldest_retained_seq: Option<i64>,
    /// The highest seq ever removed (by retention pruning or reconcile); 0 if none.
    pub removed_through_seq: i64,
    /// The highest seq ever assigned; 0 if none. A client with nothing new keeps this cursor.
    pub newest_seq: i64,
}

impl EventPage {
    /// True when events after `after_seq` were removed before the client read them: the broker
    /// answers CURSOR_EXPIRED. Seqs are never reused, so this is exact.
    pub fn cursor_expired(&self, after_seq: i64) -> bool {
        after_seq < self.removed_through_seq
    }
}

/// What `Store::open` did to receipts left unsettled by the previous process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Every receipt that was queued, awaiting_user, running or cancelling and is now
    /// outcome_unknown with effect unknown. None of them is ever dispatched again.
    pub marked_outcome_unknown: Vec<OperationId>,
}

/// The tombstone of a retry epoch the person retired: refused from then on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retirement {
    pub retry_epoch: RetryEpoch,
    /// The pairing the epoch was issued to (`None` only if the stored id is unreadable).
    pub pairing_id: Option<PairingId>,
    pub retired_at: Timestamp,
    /// When the epoch would have expired anyway; the tombstone is kept at least until then.
    pub valid_until: Timestamp,
}

/// Why a receipt left the live store for the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveReason {
    /// Its retry epoch was retired by the person.
    Retired,
    /// Its retry epoch's 24-hour window had passed.
    Expired,
}

impl ArchiveReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveReason::Retired => "retired",
            ArchiveReason::Expired => "expired",
        }
    }
}

/// One state the receipt went through, as the event feed recorded it before archiving (the
/// oldest steps may be missing when the feed had already pruned them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrailStep {
    pub state: OperationState,
    pub effect_state: EffectState,
    pub at: Timestamp,
}

/// A settled receipt in the append-only history, exactly as it was in the live store.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchivedReceipt {
    /// Position in the history (1, 2, …; never reused): the export's order and cursor.
    pub seq: i64,
    pub receipt: Receipt,
    pub trail: Vec<TrailStep>,
    pub archived_at: Timestamp,
    pub archived_because: ArchiveReason,
}

/// One receipt as the person's activity view counts it.
#[derive(Clone, Debug, PartialEq)]
pub struct ActivityRow {
    pub pairing_id: String,
    pub tool: String,
    pub state: String,
    pub error_code: Option<String>,
    pub decided_by: Option<String>,
    pub created_at: Timestamp,
    pub settled_at: Option<Timestamp>,
}
