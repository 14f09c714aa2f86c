//! The error codes of the result envelope, one enum with their wire names.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every error code Lomi answers with. The wire name is the SCREAMING_SNAKE_CASE variant name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    PairingRequired,
    PairingDenied,
    PairingRevoked,
    NotFound,
    InvalidArgument,
    RevisionMismatch,
    IdempotencyConflict,
    RetryEpochInvalid,
    RetryEpochExpired,
    LeaseRequired,
    LeaseExpired,
    GenerationMismatch,
    SnapshotStale,
    SequenceConflict,
    SequenceGap,
    ResourceExhausted,
    ResourceBusy,
    RuntimeUnavailable,
    StoreUnavailable,
    UserDenied,
    Paused,
    PersonOnly,
    Unsupported,
    CursorExpired,
    NoSpace,
    OutcomeUnknown,
    ProviderAuth,
    ProviderRateLimited,
    ProviderModelNotFound,
    ProviderRejected,
    ProviderUnavailable,
    Internal,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 32] = [
        ErrorCode::PairingRequired,
        ErrorCode::PairingDenied,
        ErrorCode::PairingRevoked,
        ErrorCode::NotFound,
        ErrorCode::InvalidArgument,
        ErrorCode::RevisionMismatch,
        ErrorCode::IdempotencyConflict,
        ErrorCode::RetryEpochInvalid,
        ErrorCode::RetryEpochExpired,
        ErrorCode::LeaseRequired,
        ErrorCode::LeaseExpired,
        ErrorCode::GenerationMismatch,
        ErrorCode::SnapshotStale,
        ErrorCode::SequenceConflict,
        ErrorCode::SequenceGap,
        ErrorCode::ResourceExhausted,
        ErrorCode::ResourceBusy,
        ErrorCode::RuntimeUnavailable,
        ErrorCode::StoreUnavailable,
        ErrorCode::UserDenied,
        ErrorCode::Paused,
        ErrorCode::PersonOnly,
        ErrorCode::Unsupported,
        ErrorCode::CursorExpired,
        ErrorCode::NoSpace,
        ErrorCode::OutcomeUnknown,
        ErrorCode::ProviderAuth,
        ErrorCode::ProviderRateLimited,
        ErrorCode::ProviderModelNotFound,
        ErrorCode::ProviderRejected,
        ErrorCode::ProviderUnavailable,
        ErrorCode::Internal,
    ];

    /// The code of a wire name, e.g. `PAIRING_REQUIRED`.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == name)
    }

    /// The wire name, e.g. `PAIRING_REQUIRED`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::PairingRequired => "PAIRING_REQUIRED",
            ErrorCode::PairingDenied => "PAIRING_DENIED",
            ErrorCode::PairingRevoked => "PAIRING_REVOKED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::RevisionMismatch => "REVISION_MISMATCH",
            ErrorCode::IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            ErrorCode::RetryEpochInvalid => "RETRY_EPOCH_INVALID",
            ErrorCode::RetryEpochExpired => "RETRY_EPOCH_EXPIRED",
            ErrorCode::LeaseRequired => "LEASE_REQUIRED",
            ErrorCode::LeaseExpired => "LEASE_EXPIRED",
            ErrorCode::GenerationMismatch => "GENERATION_MISMATCH",
            ErrorCode::SnapshotStale => "SNAPSHOT_STALE",
            ErrorCode::SequenceConflict => "SEQUENCE_CONFLICT",
            ErrorCode::SequenceGap => "SEQUENCE_GAP",
            ErrorCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            ErrorCode::ResourceBusy => "RESOURCE_BUSY",
            ErrorCode::RuntimeUnavailable => "RUNTIME_UNAVAILABLE",
            ErrorCode::StoreUnavailable => "STORE_UNAVAILABLE",
            ErrorCode::UserDenied => "USER_DENIED",
            ErrorCode::Paused => "PAUSED",
            ErrorCode::PersonOnly => "PERSON_ONLY",
            ErrorCode::Unsupported => "UNSUPPORTED",
            ErrorCode::CursorExpired => "CURSOR_EXPIRED",
            ErrorCode::NoSpace => "NO_SPACE",
            ErrorCode::OutcomeUnknown => "OUTCOME_UNKNOWN",
            ErrorCode::ProviderAuth => "PROVIDER_AUTH",
            ErrorCode::ProviderRateLimited => "PROVIDER_RATE_LIMITED",
            ErrorCode::ProviderModelNotFound => "PROVIDER_MODEL_NOT_FOUND",
            ErrorCode::ProviderRejected => "PROVIDER_REJECTED",
            ErrorCode::ProviderUnavailable => "PROVIDER_UNAVAILABLE",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// What the code means and what the caller should do about it (docs/errors.md holds the
    /// same words, checked by a test).
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorCode::PairingRequired => {
                "The connection is not paired yet: the person must approve it in Lomi (window or `lomi pairing approve`)."
            }
            ErrorCode::PairingDenied => "The person denied this pairing. Do not retry.",
            ErrorCode::PairingRevoked => {
                "The person revoked this pairing; its leases ended. Ask the person to pair again."
            }
            ErrorCode::NotFound => {
                "No such target among those this pairing may see (unknown or not granted)."
            }
            ErrorCode::InvalidArgument => {
                "The input does not match the tool's schema or its narrower native rules."
            }
            ErrorCode::RevisionMismatch => {
                "The expected revision is stale; `details.currentRevision` holds the current one. Re-observe first."
            }
            ErrorCode::IdempotencyConflict => {
                "This request key was already used with other arguments in this retry epoch."
            }
            ErrorCode::RetryEpochInvalid => {
                "The retry epoch is unknown to this broker instance (e.g. after a restart). Call lomi_connect again."
            }
            ErrorCode::RetryEpochExpired => {
                "The retry epoch is older than its 24-hour window, or the person ended it (store maintenance). Re-observe what you changed, then call lomi_connect again."
            }
            ErrorCode::LeaseRequired => "The tool needs a lease on the runtime; acquire one first.",
            ErrorCode::LeaseExpired => {
                "The lease ended (takeover by the person, revocation or release)."
            }
            ErrorCode::GenerationMismatch => {
                "The runtime was replaced since it was observed; re-observe its generation."
            }
            ErrorCode::SnapshotStale => {
                "The snapshot the reference came from no longer describes the page or screen; take a new one."
            }
            ErrorCode::SequenceConflict => {
                "This input sequence number was already used with another payload."
            }
            ErrorCode::SequenceGap => {
                "The input sequence number skips ahead; send the missing one first."
            }
            ErrorCode::ResourceExhausted => {
                "A cap is reached (e.g. 4,096 receipts); the person must run `lomi store reconcile --retire idle` (or use Settings → Storage), then you call lomi_connect again if your retry epoch was retired."
            }
            ErrorCode::ResourceBusy => {
                "Something the call needs is held by another panel (e.g. a workspace's persistent browser profile); `details` name it. Use or close that one first."
            }
            ErrorCode::RuntimeUnavailable => {
                "The runtime behind the panel stopped answering during the call (an Android device went away or timed out, the adb server cannot be reached, a device's UI stays busy, Chromium did not answer in time). For a mutation, what became of its effect is in `details.effectState` or in the receipt's `effectState`. Look at the panel before trying again."
            }
            ErrorCode::StoreUnavailable => {
                "Lomi could not write its private store; the effect was not started."
            }
            ErrorCode::UserDenied => {
                "The person declined: their decision on this operation, or one of their rules (`details.ruleId`). Do not retry it unchanged."
            }
            ErrorCode::Paused => {
                "The person paused agents' changes; reads still work. Wait until they resume (lomi_pairing_status shows it), then send again."
            }
            ErrorCode::PersonOnly => {
                "Only the person changes this (grants, pairings, confirmations, providers and their keys, network): agents may read it. Do not retry; ask the person."
            }
            ErrorCode::Unsupported => "The operation is not supported for this target.",
            ErrorCode::CursorExpired => {
                "The cursor is older than the retained event window; start again without a cursor."
            }
            ErrorCode::NoSpace => {
                "The disk holding the project is full (or over quota): nothing was written and the file is as it was. Ask the person to free space, then try again with a fresh request key."
            }
            ErrorCode::OutcomeUnknown => {
                "Lomi cannot establish what the operation's effect did (Lomi stopped while it ran, or the runtime failed mid-effect); it is never run again. Inspect the real resource before acting (docs/recovery.md), then use a fresh request key for a deliberate new attempt."
            }
            ErrorCode::ProviderAuth => {
                "The model provider refused the key (HTTP 401 or 403): the person must store a valid key (`lomi settings provider-key NAME`). Nothing was added to the conversation."
            }
            ErrorCode::ProviderRateLimited => {
                "The model provider is rate limiting (HTTP 429); `details.retryAfterSeconds` says how long it asked to wait, when it said. Nothing was added to the conversation; send again later with a fresh request key."
            }
            ErrorCode::ProviderModelNotFound => {
                "The model provider does not know the model (HTTP 404); pick one of the provider's models (lomi_settings_get, section providers). Nothing was added to the conversation."
            }
            ErrorCode::ProviderRejected => {
                "The model provider refused the request (another HTTP 4xx); `details.status` and the message say what it answered. Nothing was added to the conversation."
            }
            ErrorCode::ProviderUnavailable => {
                "The model provider could not be reached, failed (HTTP 5xx) or cut its reply short. The receipt's `effectState` says whether part of a reply was saved (`partial`). Try again later with a fresh request key."
            }
            ErrorCode::Internal => "An unexpected fault inside Lomi; the message says what failed.",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as it crosses a front door: a code to branch on, a message a person can act on,
/// and optional structured details (e.g. the current revision).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::new(ErrorCode::InvalidArgument, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ToolError::new(ErrorCode::NotFound, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ToolError::new(ErrorCode::Internal, message)
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_match_serde() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).expect("serialize");
            assert_eq!(json, Value::String(code.as_str().to_owned()));
            let back: ErrorCode = serde_json::from_value(json).expect("deserialize");
            assert_eq!(back, code);
        }
    }

    #[test]
    fn docs_list_every_code_with_its_meaning() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md");
        let docs = std::fs::read_to_string(path).expect("read docs/errors.md");
        let table = ErrorCode::ALL
            .iter()
            .map(|code| format!("| `{}` | {} |", code.as_str(), code.meaning()))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            docs.contains(&table),
            "docs/errors.md must list every code in this order, with these words:\n{table}"
        );
    }
}
