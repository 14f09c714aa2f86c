//! Operation tools: receipts by id or by key, cancellation, the event feed, store status.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::ToolDef;
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};
use crate::ids::{OperationId, ProjectId, RequestKey, RetryEpoch, WorkspaceId};
use crate::operation::{EffectState, OperationState};
use crate::time::Timestamp;

/// A receipt as its connection sees it. `operationId` acknowledges admission only: read
/// `state`, `effectState` and `result` before trusting an effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperationView {
    pub operation_id: OperationId,
    pub tool: String,
    pub state: OperationState,
    pub effect_state: EffectState,
    pub workspace_id: Option<WorkspaceId>,
    pub project_id: Option<ProjectId>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub settled_at: Option<Timestamp>,
    /// The tool's typed result once confirmed (see the tool's description).
    pub result: Option<Value>,
    /// Why it failed, was cancelled or is unknown.
    pub error: Option<OperationError>,
}

/// The failure recorded on a receipt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperationError {
    pub code: ErrorCode,
    pub message: String,
}

/// `lomi_operation_get` input: exactly one of `operationId`, or the original request's key
/// `{retryEpoch, requestKey, tool, projectId?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "OperationGetArguments")]
pub enum OperationGetInput {
    ById(OperationId),
    ByKey {
        retry_epoch: RetryEpoch,
        request_key: RequestKey,
        tool: String,
        project_id: Option<ProjectId>,
    },
}

// Exactly one of `operationId`, or the original request's key `{retryEpoch, requestKey, tool, projectId?}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperationGetArguments {
    // The operationId an earlier call returned.
    pub operation_id: Option<OperationId>,
    // Key lookup: the original request's retryEpoch.
    pub retry_epoch: Option<RetryEpoch>,
    // Key lookup: the original request's requestKey.
    pub request_key: Option<RequestKey>,
    // Key lookup: the tool the original request called, e.g. `lomi_terminal_create`.
    pub tool: Option<String>,
    // Key lookup: the original anchor projectId, when the connection has several projects.
    pub project_id: Option<ProjectId>,
}

impl TryFrom<OperationGetArguments> for OperationGetInput {
    type Error = String;

    fn try_from(a: OperationGetArguments) -> Result<Self, String> {
        let any_key = a.retry_epoch.is_some()
            || a.request_key.is_some()
            || a.tool.is_some()
            || a.project_id.is_some();
        match (a.operation_id, any_key) {
            (Some(id), false) => Ok(OperationGetInput::ById(id)),
            (Some(_), true) => Err(
                "give either operationId or the key {retryEpoch, requestKey, tool, projectId?}, not both"
                    .to_owned(),
            ),
            (None, false) => Err(
                "give operationId, or the key {retryEpoch, requestKey, tool, projectId?}".to_owned(),
            ),
            (None, true) => match (a.retry_epoch, a.request_key, a.tool) {
                (Some(retry_epoch), Some(request_key), Some(tool)) => {
                    Ok(OperationGetInput::ByKey { retry_epoch, request_key, tool, project_id: a.project_id })
                }
                _ => Err("a key lookup needs retryEpoch, requestKey and tool".to_owned()),
            },
        }
    }
}

impl schemars::JsonSchema for OperationGetInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OperationGetInput".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::exactly_one_of(
            OperationGetArguments::json_schema(generator),
            &[&["operationId"], &["retryEpoch", "requestKey", "tool"]],
        )
    }
}

/// `lomi_operation_cancel` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperationCancelInput {
    // An operation of this connection. Queued or waiting work is cancelled; running work is
    // asked to stop and settles with whatever effect it really reached.
    pub operation_id: OperationId,
}

/// `lomi_events_read` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsReadInput {
    // The connection whose operations to follow (from `lomi_connect`).
    pub retry_epoch: RetryEpoch,
    // `nextCursor` of the previous page; omit to start from the oldest retained event.
    pub cursor: Option<String>,
    // At most this many events (1 to 500, default 100).
    pub max_events: Option<u32>,
}

/// One operation state change. Metadata only: never output bytes, never proof of effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperationEvent {
    pub cursor: String,
    pub operation_id: OperationId,
    pub tool: String,
    pub state: OperationState,
    pub effect_state: EffectState,
    pub at: Timestamp,
}

/// Progress of a panel's runtime: its output cursor moved, or its process exited. Metadata
/// only: read the terminal for the bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PanelEvent {
    pub panel_id: crate::ids::PanelId,
    /// `output` or `exited`.
    pub kind: String,
    /// The panel's output cursor at the time (pass it as `sinceCursor` to read from there).
    pub output_cursor: String,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
    pub at: Timestamp,
}

/// `lomi_events_read` output; continue with `nextCursor` even when both lists are empty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventPage {
    /// State changes of this connection's operations.
    pub events: Vec<OperationEvent>,
    /// Progress of the panels in this connection's workspace.
    pub panel_events: Vec<PanelEvent>,
    pub next_cursor: String,
}

/// `lomi_store_status` output: counts, caps and the oldest records of the receipt store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreStatusView {
    pub receipts: u64,
    pub receipt_cap: u64,
    pub unsettled_receipts: u64,
    pub removable_receipts: u64,
    pub retry_epochs: u64,
    pub retry_epoch_cap: u64,
    pub expired_retry_epochs: u64,
    pub oldest_receipt_at: Option<Timestamp>,
    pub oldest_retry_epoch_at: Option<Timestamp>,
    /// New receipts the store admits before RESOURCE_EXHAUSTED.
    pub receipts_remaining: u64,
    /// New retry epochs (lomi_connect calls) the store admits before RESOURCE_EXHAUSTED.
    pub retry_epochs_remaining: u64,
    /// How full the fuller of the two caps is.
    pub warning_level: StoreWarningLevel,
    /// What to do when a cap is near: maintenance needs the person.
    pub maintenance: String,
}

/// `none` below 75 % of both caps, `warning` at 75 % of either, `critical` at 90 %, `full` at a
/// cap (new operations or connections answer RESOURCE_EXHAUSTED).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StoreWarningLevel {
    None,
    Warning,
    Critical,
    Full,
}

impl From<OperationError> for ToolError {
    fn from(e: OperationError) -> Self {
        ToolError::new(e.code, e.message)
    }
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_operation_get`
pub struct OperationGetTool;

impl ToolDef for OperationGetTool {
    const TOOL: Tool = Tool::OperationGet;
    const NAME: &'static str = "lomi_operation_get";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "Follow its operations";
    const TITLE: &'static str = "Get an operation";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "An operation's receipt, by operationId or by the original retryEpoch, requestKey \
        and tool.";
    type Input = OperationGetInput;
    type Output = OperationView;
}

/// `lomi_operation_cancel`
pub struct OperationCancelTool;

impl ToolDef for OperationCancelTool {
    const TOOL: Tool = Tool::OperationCancel;
    const NAME: &'static str = "lomi_operation_cancel";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "Cancel its operations";
    const TITLE: &'static str = "Cancel an operation";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Cancels queued or waiting work, or asks running work to stop; undoes nothing.";
    type Input = OperationCancelInput;
    type Output = OperationView;
}

/// `lomi_events_read`
pub struct EventsReadTool;

impl ToolDef for EventsReadTool {
    const TOOL: Tool = Tool::EventsRead;
    const NAME: &'static str = "lomi_events_read";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "Read its operations' events";
    const TITLE: &'static str = "Read operation events";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Operation state changes of a connection after cursor; continue with nextCursor, \
        even after an empty page.";
    type Input = EventsReadInput;
    type Output = EventPage;
}

/// `lomi_store_status`
pub struct StoreStatusTool;

impl ToolDef for StoreStatusTool {
    const TOOL: Tool = Tool::StoreStatus;
    const NAME: &'static str = "lomi_store_status";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "Read Lomi's storage use";
    const TITLE: &'static str = "Receipt store status";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Counts, caps and oldest records of Lomi's receipt store.";
    type Input = crate::tools::NoArguments;
    type Output = StoreStatusView;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __operations_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            OperationGet = $crate::tools::operations::OperationGetTool => broker as plain,
            OperationCancel = $crate::tools::operations::OperationCancelTool => broker as plain,
            EventsRead = $crate::tools::operations::EventsReadTool => broker as plain,
        ]);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            StoreStatus = $crate::tools::operations::StoreStatusTool => broker as plain,
        ]);
    };
}
