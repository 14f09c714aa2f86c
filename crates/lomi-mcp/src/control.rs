//! The person's requests over the local socket (`lomi pairing …`, `lomi decide …`, …): one
//! JSON request line in, one JSON reply line out. The desktop window makes the same calls.

use std::path::PathBuf;

use lomi_broker::Broker;
use lomi_protocol::{OperationId, PairingId, Reply, ToolError, WorkspaceId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the person can ask of a running broker.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum ControlRequest {
    WorkspaceAdd {
        name: String,
        project: PathBuf,
    },
    WorkspaceList {},
    PairingList {},
    PairingApprove {
        pairing_id: PairingId,
        workspaces: Vec<WorkspaceId>,
    },
    PairingDeny {
        pairing_id: PairingId,
    },
    PairingRevoke {
        pairing_id: PairingId,
    },
    PairingCreate {
        name: String,
        workspaces: Vec<WorkspaceId>,
    },
    OperationList {
        limit: usize,
    },
    OperationShow {
        operation_id: OperationId,
    },
    Decide {
        operation_id: OperationId,
        approve: bool,
    },
    Confirm {
        tool: String,
        confirm: bool,
    },
    Status {},
    /// The store's counts, caps and oldest records (`lomi store status`).
    StoreStatus {},
    /// What reconcile would remove (`apply: false`), or remove it (`apply: true`).
    StoreReconcile {
        apply: bool,
    },
}

/// `lomi store status` as JSON, the same whether the broker or the command opened the store.
pub fn store_status_json(status: &lomi_store::StoreStatus) -> Value {
    let by_state: serde_json::Map<String, Value> = status
        .receipts_by_state
        .iter()
        .map(|c| (c.state.as_str().to_owned(), json!(c.count)))
        .collect();
    json!({
        "databasePath": status.database_path,
        "schemaVersion": status.schema_version,
        "receipts": status.receipts,
        "receiptCap": status.receipt_cap,
        "unsettledReceipts": status.unsettled_receipts,
        "receiptsByState": by_state,
        "removableReceipts": status.removable_receipts,
        "retryEpochs": status.retry_epochs,
        "retryEpochCap": status.retry_epoch_cap,
        "expiredRetryEpochs": status.expired_retry_epochs,
        "oldestReceiptAt": status.oldest_receipt_at,
        "oldestRetryEpochAt": status.oldest_retry_epoch_at,
        "eventsRetained": status.events_retained,
    })
}

/// What reconcile removed (or would remove), as JSON.
pub fn reconcile_json(report: &lomi_store::ReconcileReport) -> Value {
    json!({
        "retryEpochsRemoved": report.retry_epochs_removed,
        "receiptsRemoved": report.receipts_removed,
        "eventsRemoved": report.events_removed,
        "expiredRetryEpochsKept": report.expired_retry_epochs_kept,
    })
}

/// Answers one control request with an envelope.
pub fn handle(broker: &Broker, request: ControlRequest, http_url: &str) -> Value {
    let result: Result<Value, ToolError> = match request {
        ControlRequest::WorkspaceAdd { name, project } => broker.workspace_add(&name, &project).map(|w| json!(w.view())),
        ControlRequest::WorkspaceList {} => {
            Ok(json!(broker.workspaces().iter().map(|w| w.view()).collect::<Vec<_>>()))
        }
        ControlRequest::PairingList {} => Ok(json!(broker.pairing_list())),
        ControlRequest::PairingApprove { pairing_id, workspaces } => {
            broker.pairing_approve(&pairing_id, &workspaces).map(|()| json!({"pairingId": pairing_id, "state": "approved", "grants": workspaces}))
        }
        ControlRequest::PairingDeny { pairing_id } => {
            broker.pairing_deny(&pairing_id).map(|()| json!({"pairingId": pairing_id, "state": "denied"}))
        }
        ControlRequest::PairingRevoke { pairing_id } => {
            broker.pairing_revoke(&pairing_id).map(|()| json!({"pairingId": pairing_id, "state": "revoked"}))
        }
        ControlRequest::PairingCreate { name, workspaces } => broker.pairing_create(&name, &workspaces).map(|created| {
            json!({
                "pairingId": created.pairing_id,
                "token": created.token,
                "grants": created.grants,
                "url": http_url,
            })
        }),
        ControlRequest::OperationList { limit } => broker.operations(limit.clamp(1, 4_096)).map(|ops| json!(ops)),
        ControlRequest::OperationShow { operation_id } => broker.operation(&operation_id).map(|op| json!(op)),
        ControlRequest::Decide { operation_id, approve } => broker
            .decide(&operation_id, approve)
            .map(|()| json!({"operationId": operation_id, "decision": if approve { "approved" } else { "denied" }})),
        ControlRequest::Confirm { tool, confirm } => {
            broker.set_confirmation(&tool, confirm).map(|()| json!({"tool": tool, "confirm": confirm}))
        }
        ControlRequest::StoreStatus {} => broker
            .store()
            .status()
            .map(|status| store_status_json(&status))
            .map_err(|e| ToolError::new(e.code(), e.to_string())),
        ControlRequest::StoreReconcile { apply } => {
            let report = if apply { broker.store().reconcile() } else { broker.store().reconcile_preview() };
            report.map(|r| reconcile_json(&r)).map_err(|e| ToolError::new(e.code(), e.to_string()))
        }
        ControlRequest::Status {} => Ok(json!({
            "brokerInstanceId": broker.instance_id(),
            "url": http_url,
            "pid": std::process::id(),
        })),
    };
    Reply::from_result(result).to_value()
}
