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
        ControlRequest::Status {} => Ok(json!({
            "brokerInstanceId": broker.instance_id(),
            "url": http_url,
            "pid": std::process::id(),
        })),
    };
    Reply::from_result(result).to_value()
}
