//! The replies to the person's control requests (`lomi …` over the local socket, and the
//! window in process): one type per reply shape, read back by `lomi` and generated into the
//! window's TypeScript. Replies a tool shares (a workspace, a document, a Git status) are the
//! tool's own types in `tools`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Reply;
use crate::catalog::{Family, Tool};
use crate::effect::Effect;
use crate::ids::{
    BrokerInstanceId, ConversationId, ConversationRevision, DocumentId, OperationId, PairingId,
    PanelId, ProjectId, RequestKey, RetryEpoch, WorkspaceId,
};
use crate::operation::{EffectState, OperationState};
use crate::rules::{RuleDraft, RuleRecord, Verdict};
use crate::time::Timestamp;
use crate::tools::operations::OperationView;
use crate::tools::session::{PairingState, ProjectView};

/// How a pairing proves itself on later calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PairingCredential {
    /// Ends with its MCP session.
    Session,
    /// A bearer token or the bridge's secret: survives reconnects and restarts.
    Token,
    /// Authorized through Lomi's OAuth flow; survives too, its client refreshes.
    Oauth,
}

/// A pairing as the person sees it in a list (`pairingList`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingSummary {
    pub pairing_id: PairingId,
    pub client_name: String,
    pub verification_code: String,
    pub state: PairingState,
    pub grants: Vec<WorkspaceId>,
    pub credential: PairingCredential,
    pub created_at: Timestamp,
    /// When the person approved, denied or revoked it.
    pub decided_at: Option<Timestamp>,
    /// The last call this pairing made on this broker instance (not kept across restarts).
    pub last_active_at: Option<Timestamp>,
    /// The tool families it sees; null is every family.
    pub families: Option<BTreeSet<Family>>,
    /// The families its client asked for, if it said (the approval starts from them).
    pub requested_families: Option<BTreeSet<Family>>,
    /// How a client that signs in (OAuth) identified itself; null for tokens and sessions.
    #[serde(default)]
    pub sign_in: Option<SignInClient>,
}

/// How a client that signs in identified itself, for the person deciding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignInClient {
    /// The host its sign-in sends the browser back to (127.0.0.1 or localhost for an app on
    /// this computer).
    pub redirect_host: String,
    /// The https URL of the client ID metadata document its name and redirect addresses came
    /// from; null when it registered itself with Lomi (its name is then its own say).
    pub metadata_url: Option<String>,
}

/// `pairingApprove`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingApproved {
    pub pairing_id: PairingId,
    pub state: PairingState,
    pub grants: Vec<WorkspaceId>,
    pub session: bool,
    /// The tool families it sees; null is every family.
    pub families: Option<BTreeSet<Family>>,
}

/// `pairingDeny` and `pairingRevoke`'s reply: where the pairing stands now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingDecided {
    pub pairing_id: PairingId,
    pub state: PairingState,
}

/// `pairingFamilies`' reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingFamilies {
    pub pairing_id: PairingId,
    /// The tool families it sees; null is every family.
    pub families: Option<BTreeSet<Family>>,
}

/// `pairingCreate`'s reply: the one-time bearer token and where to use it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingCreated {
    pub pairing_id: PairingId,
    /// Shown once; Lomi keeps only its hash.
    pub token: String,
    pub grants: Vec<WorkspaceId>,
    /// The MCP endpoint.
    pub url: String,
}

/// `workspaceRemove`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRemoved {
    pub workspace_id: WorkspaceId,
    pub removed: bool,
}

/// `projectAdd`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectAdded {
    pub workspace_id: WorkspaceId,
    pub project: ProjectView,
}

/// `projectRemove`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectRemoved {
    pub workspace_id: WorkspaceId,
    pub project_id: ProjectId,
    pub removed: bool,
}

/// The person's answer to a waiting operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approved,
    Denied,
}

/// `decide`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decided {
    pub operation_id: OperationId,
    pub decision: Decision,
    /// The rule the person saved with the decision ("approve and always allow …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRecord>,
}

/// `confirm`'s reply: whether the tool now waits for the person's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmationSet {
    pub tool: String,
    pub confirm: bool,
}

/// An operation waiting for the person's decision, with exactly what it will do
/// (`decisionList`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwaitingDecision {
    pub operation_id: OperationId,
    #[schemars(with = "String")]
    pub tool: Tool,
    pub pairing_id: PairingId,
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    /// The tool's whole input, as the agent sent it (an object).
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub arguments: Value,
    /// What it will do, in the person's terms, read when it started waiting.
    pub effect: Effect,
    pub created_at: Timestamp,
    /// The narrowest useful rule for deciding calls like this one from now on (this agent,
    /// this workspace, this tool, this folder / origin / command / package), for "approve and
    /// always allow …" and "deny and always deny …"; the person may edit it before saving.
    pub suggested_rule: RuleDraft,
    /// What made it wait: `default` (the tool's "ask me before") or `rule:<id>`.
    pub decided_by: String,
}

/// One mutating tool and whether it waits for the person's decision (`policyList`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEntry {
    pub tool: String,
    /// The tool in plain words ("Delete files").
    pub label: String,
    pub family: Option<Family>,
    /// Its family in plain words ("Project files").
    pub family_label: String,
    pub confirm: bool,
}

/// One of the newest operations with the client that made it (`feed`, the window's feed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedItem {
    pub operation_id: OperationId,
    pub tool: String,
    pub state: OperationState,
    pub effect_state: EffectState,
    pub workspace_id: Option<WorkspaceId>,
    pub workspace_name: Option<String>,
    pub pairing_id: PairingId,
    pub client_name: Option<String>,
    pub updated_at: Timestamp,
    pub error_code: Option<String>,
}

/// A state an operation went through, and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateChange {
    pub state: OperationState,
    pub effect_state: EffectState,
    pub at: Timestamp,
}

/// One receipt in the history: everything the live receipt held, its trail, and when and why
/// it moved (`operationHistory`; a line of `lomi operation export --history`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchivedReceipt {
    pub history_seq: i64,
    pub operation_id: OperationId,
    pub pairing_id: PairingId,
    pub retry_epoch: RetryEpoch,
    pub project_id: Option<ProjectId>,
    pub tool: String,
    pub request_key: RequestKey,
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
    pub trail: Vec<StateChange>,
    pub archived_at: Timestamp,
    pub archived_because: ArchiveReason,
}

/// Why a receipt moved to the history: its retry epoch was retired, or it expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveReason {
    Retired,
    Expired,
}

/// A live receipt or one in the history, as `operationShow` found it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ShownReceipt {
    Live(Box<OperationView>),
    Archived(Box<ArchivedReceipt>),
}

/// `operationShow`'s reply: the receipt, with the states a live one went through, and for an
/// `outcome_unknown` one what to look at before doing anything again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationShown {
    #[serde(flatten)]
    pub receipt: ShownReceipt,
    /// The states a live receipt went through, as the event feed still holds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<StateChange>>,
    /// For an `outcome_unknown` receipt: what to look at for its tool's family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
    /// What decided it: `default` (the tool's "ask me before"), `rule:<id>`, `person` or
    /// `remembered`; absent on receipts older than the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// The store's warning level: 75 % of a cap (`warning`), 90 % (`critical`), at a cap (`full`);
/// ordered lowest first.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum WarningLevel {
    None,
    Warning,
    Critical,
    Full,
}

impl WarningLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            WarningLevel::None => "none",
            WarningLevel::Warning => "warning",
            WarningLevel::Critical => "critical",
            WarningLevel::Full => "full",
        }
    }
}

/// A time the store could not write at all; it lasts until a write commits again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteFailure {
    pub since: Timestamp,
    pub message: String,
}

/// One pairing's use of the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingUsage {
    pub pairing_id: PairingId,
    pub live_retry_epochs: u64,
    pub idle_retry_epochs: u64,
    pub ended_retry_epochs: u64,
    pub receipts: u64,
    pub unsettled_receipts: u64,
}

/// `storeStatus`' reply (`lomi store status`; the window's Settings → Storage), the same
/// whether the broker or the command opened the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreStatus {
    pub database_path: String,
    pub schema_version: u32,
    pub receipts: u64,
    pub receipt_cap: u64,
    pub unsettled_receipts: u64,
    /// Receipts by state (every state, with 0 for none).
    pub receipts_by_state: BTreeMap<String, u64>,
    pub removable_receipts: u64,
    pub retry_epochs: u64,
    pub retry_epoch_cap: u64,
    pub expired_retry_epochs: u64,
    pub oldest_receipt_at: Option<Timestamp>,
    pub oldest_retry_epoch_at: Option<Timestamp>,
    pub events_retained: u64,
    pub event_retention: u64,
    pub receipts_remaining: u64,
    pub retry_epochs_remaining: u64,
    pub idle_retry_epochs: u64,
    pub retired_retry_epochs: u64,
    pub history_receipts: u64,
    pub warning_level: WarningLevel,
    /// Set while the store's writes fail (a full disk, an I/O error): since when, and why.
    pub write_failure: Option<WriteFailure>,
    pub pairings: Vec<PairingUsage>,
}

/// A retry epoch a reconcile retires (or would).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetiredEpoch {
    pub retry_epoch: RetryEpoch,
    pub pairing_id: PairingId,
    pub created_at: Timestamp,
    pub receipts: u64,
    pub unsettled_receipts: u64,
}

/// `storeReconcile`'s reply: what it did, or with `apply: false` what it would do now, and
/// the warning level after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconcileReport {
    pub retired: Vec<RetiredEpoch>,
    pub retry_epochs_retired: u64,
    pub tombstones_removed: u64,
    pub retry_epochs_removed: u64,
    pub receipts_archived: u64,
    pub events_removed: u64,
    pub ended_retry_epochs_kept: u64,
    pub warning_level: WarningLevel,
    pub receipts_remaining: u64,
}

impl ReconcileReport {
    /// Nothing retired, moved or removed.
    pub fn is_empty(&self) -> bool {
        self.retry_epochs_retired == 0
            && self.receipts_archived == 0
            && self.retry_epochs_removed == 0
            && self.tombstones_removed == 0
    }
}

/// `browserProfile`'s reply: a workspace's browser profile choice and its folder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserProfile {
    pub workspace_id: WorkspaceId,
    pub persistent: bool,
    pub path: String,
    pub exists: bool,
    pub deleted: bool,
}

/// `showWindow`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowShown {
    pub shown: bool,
}

/// `status`' reply: which broker answers, and where its MCP endpoint is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatus {
    pub broker_instance_id: BrokerInstanceId,
    pub url: String,
    pub pid: u32,
}

/// `chatSend`'s reply: the reply is streaming.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatSendStarted {
    pub conversation_id: ConversationId,
    pub reply_seq: u64,
    pub conversation_revision: ConversationRevision,
    pub provider: String,
    pub model: String,
}

/// `chatCancel`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatCancelled {
    pub conversation_id: ConversationId,
    pub cancelled: bool,
}

/// `documentClose`'s reply: whether unsaved edits were thrown away.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentClosed {
    pub document_id: DocumentId,
    pub discarded: bool,
}

/// The first line of `lomi terminal attach`'s stream: the panel's terminal is attached; its
/// raw output follows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalAttached {
    pub panel_id: PanelId,
    pub terminal_session_id: String,
    pub generation: String,
}

/// `androidForget`'s reply: whether the person had a decision for the device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AndroidChoiceForgotten {
    pub serial: String,
    pub forgotten: bool,
}

/// The desktop app's Lomi: where it listens and keeps its data (the window's Settings shows
/// the client configs from it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    pub url: String,
    pub data_dir: String,
    pub broker_instance_id: BrokerInstanceId,
    pub version: String,
}

/// What the desktop app's overview channel sends: the whole overview first, then only the
/// parts that changed (an absent part is unchanged). Each part is the envelope its control
/// request answers (`workspaceList`, `pairingList`, …), except `panels` (workspace id → its
/// `panelList`), `captures` (Android panel id → its latest capture's sequence, which says when
/// to fetch it) and `chat` (how often Chat changed: the window reads its conversations again
/// when it moves).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Overview {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces: Option<Reply<Vec<crate::tools::session::WorkspaceView>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panels: Option<BTreeMap<String, Reply<Vec<crate::tools::session::PanelView>>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captures: Option<BTreeMap<String, u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairings: Option<Reply<Vec<PairingSummary>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Reply<Vec<AwaitingDecision>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feed: Option<Reply<Vec<FeedItem>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Reply<Vec<PolicyEntry>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Reply<crate::tools::settings::SettingsView>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<Reply<StoreStatus>>,
}

/// A browser panel as the person's window shows it: its active tab's address and title and a
/// JPEG of the viewport (the desktop app's `browser_watch` channel).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserView {
    pub generation: String,
    pub tab_id: Option<String>,
    pub url: String,
    pub title: String,
    /// The viewport as a JPEG, base64; absent while there is nothing to show.
    pub jpeg_base64: Option<String>,
    /// Why there is no image (the browser is gone, a dialog is open, …).
    pub note: Option<String>,
}

/// What the desktop app's `browser_watch` channel sends: a view, or `{"ended": true}` once the
/// panel's browser is gone (nothing follows it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum BrowserViewMessage {
    View(BrowserView),
    Ended(BrowserEnded),
}

/// `{"ended": true}`: the panel's browser is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BrowserEnded {
    #[schemars(extend("const" = true))]
    ended: bool,
}

impl BrowserViewMessage {
    pub const ENDED: BrowserViewMessage = BrowserViewMessage::Ended(BrowserEnded { ended: true });
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    use super::*;

    /// The browser view's end keeps the JSON the window read before it was typed.
    #[test]
    fn a_browser_views_end_is_the_same_json() {
        let ended = serde_json::to_value(BrowserViewMessage::ENDED).expect("serialises");
        assert_eq!(ended, json!({"ended": true}));
    }

    /// `wire` is a reply as Lomi sent it before these types existed (built with `json!`): it
    /// reads as `T` and is written back exactly, field for field.
    fn check<T: DeserializeOwned + Serialize>(wire: Value) {
        let typed: T = serde_json::from_value(wire.clone())
            .unwrap_or_else(|e| panic!("{wire} does not read as the reply type: {e}"));
        assert_eq!(serde_json::to_value(&typed).expect("json"), wire);
    }

    const PAIRING: &str = "pr_0123456789abcdef0123456789abcdef";
    const WORKSPACE: &str = "ws_0123456789abcdef0123456789abcdef";
    const OPERATION: &str = "op_0123456789abcdef0123456789abcdef";
    const EPOCH: &str = "re_0123456789abcdef0123456789abcdef";
    const AT: &str = "2026-01-02T03:04:05.000Z";

    #[test]
    fn the_replies_keep_their_wire_shapes() {
        check::<PairingApproved>(json!({
            "pairingId": PAIRING, "state": "approved", "grants": [WORKSPACE], "session": false,
            "families": null,
        }));
        check::<PairingApproved>(json!({
            "pairingId": PAIRING, "state": "approved", "grants": [], "session": true,
            "families": ["files", "git"],
        }));
        check::<PairingFamilies>(json!({"pairingId": PAIRING, "families": null}));
        check::<PairingDecided>(json!({"pairingId": PAIRING, "state": "denied"}));
        check::<PairingDecided>(json!({"pairingId": PAIRING, "state": "revoked"}));
        check::<PairingCreated>(json!({
            "pairingId": PAIRING, "token": "secret", "grants": [WORKSPACE],
            "url": "http://127.0.0.1:1/mcp",
        }));
        check::<PairingSummary>(json!({
            "pairingId": PAIRING, "clientName": "Claude", "verificationCode": "ABCD-EFGH",
            "state": "pending", "grants": [], "credential": "oauth", "createdAt": AT,
            "decidedAt": null, "lastActiveAt": null, "families": null,
            "requestedFamilies": ["browser"],
            "signIn": null,
        }));
        check::<WorkspaceRemoved>(json!({"workspaceId": WORKSPACE, "removed": true}));
        check::<ProjectRemoved>(json!({
            "workspaceId": WORKSPACE, "projectId": "pj_0123456789abcdef0123456789abcdef",
            "removed": true,
        }));
        check::<Decided>(json!({"operationId": OPERATION, "decision": "approved"}));
        check::<Decided>(json!({"operationId": OPERATION, "decision": "denied"}));
        check::<ConfirmationSet>(json!({"tool": "lomi_file_delete", "confirm": false}));
        check::<PolicyEntry>(json!({
            "tool": "lomi_file_delete", "label": "Delete files", "family": "files",
            "familyLabel": "Project files", "confirm": true,
        }));
        check::<PolicyEntry>(json!({
            "tool": "lomi_x", "label": "X", "family": null, "familyLabel": "Lomi", "confirm": false,
        }));
        check::<FeedItem>(json!({
            "operationId": OPERATION, "tool": "lomi_file_write", "state": "succeeded",
            "effectState": "complete", "workspaceId": WORKSPACE, "workspaceName": "W",
            "pairingId": PAIRING, "clientName": null, "updatedAt": AT, "errorCode": null,
        }));
        check::<ArchivedReceipt>(json!({
            "historySeq": 7, "operationId": OPERATION, "pairingId": PAIRING,
            "retryEpoch": EPOCH, "projectId": null, "tool": "lomi_file_write",
            "requestKey": "write-1", "workspaceId": WORKSPACE, "fingerprint": "abc",
            "state": "failed", "effectState": "none", "createdAt": AT, "updatedAt": AT,
            "settledAt": AT, "result": null, "errorCode": "NOT_FOUND", "errorMessage": "gone",
            "trail": [{"state": "queued", "effectState": "none", "at": AT}],
            "archivedAt": AT, "archivedBecause": "retired",
        }));
        check::<StoreStatus>(json!({
            "databasePath": "/data/lomi.sqlite3", "schemaVersion": 4, "receipts": 3,
            "receiptCap": 100, "unsettledReceipts": 1,
            "receiptsByState": {"queued": 1, "succeeded": 2}, "removableReceipts": 0,
            "retryEpochs": 1, "retryEpochCap": 10, "expiredRetryEpochs": 0,
            "oldestReceiptAt": AT, "oldestRetryEpochAt": null, "eventsRetained": 9,
            "eventRetention": 1000, "receiptsRemaining": 97, "retryEpochsRemaining": 9,
            "idleRetryEpochs": 0, "retiredRetryEpochs": 0, "historyReceipts": 0,
            "warningLevel": "none", "writeFailure": {"since": AT, "message": "disk full; free space"},
            "pairings": [{
                "pairingId": PAIRING, "liveRetryEpochs": 1, "idleRetryEpochs": 0,
                "endedRetryEpochs": 0, "receipts": 3, "unsettledReceipts": 1,
            }],
        }));
        check::<ReconcileReport>(json!({
            "retired": [{
                "retryEpoch": EPOCH, "pairingId": PAIRING, "createdAt": AT, "receipts": 2,
                "unsettledReceipts": 0,
            }],
            "retryEpochsRetired": 1, "tombstonesRemoved": 0, "retryEpochsRemoved": 1,
            "receiptsArchived": 2, "eventsRemoved": 4, "endedRetryEpochsKept": 0,
            "warningLevel": "critical", "receiptsRemaining": 5,
        }));
        check::<BrowserProfile>(json!({
            "workspaceId": WORKSPACE, "persistent": false, "path": "/data/browser-profiles/x",
            "exists": false, "deleted": true,
        }));
        check::<WindowShown>(json!({"shown": true}));
        check::<BrokerStatus>(json!({
            "brokerInstanceId": "bi_0123456789abcdef0123456789abcdef",
            "url": "http://127.0.0.1:1/mcp", "pid": 42,
        }));
        check::<ChatCancelled>(json!({
            "conversationId": "cv_0123456789abcdef0123456789abcdef", "cancelled": true,
        }));
        check::<DocumentClosed>(json!({
            "documentId": "doc_0123456789abcdef0123456789abcdef", "discarded": false,
        }));
        check::<AndroidChoiceForgotten>(json!({"serial": "emulator-5554", "forgotten": true}));
        check::<AppInfo>(json!({
            "url": "http://127.0.0.1:1/mcp", "dataDir": "/home/p/.local/share/lomi",
            "brokerInstanceId": "bi_0123456789abcdef0123456789abcdef", "version": "0.1.0",
        }));
        check::<TerminalAttached>(json!({
            "panelId": "pn_0123456789abcdef0123456789abcdef", "terminalSessionId": "s1",
            "generation": "g1",
        }));
    }

    /// `operationShow` is the receipt's own fields with `timeline` (live) and `recovery` (an
    /// unknown outcome) beside them.
    #[test]
    fn a_shown_operation_is_its_receipt_with_timeline_and_recovery() {
        let archived = json!({
            "historySeq": 7, "operationId": OPERATION, "pairingId": PAIRING,
            "retryEpoch": EPOCH, "projectId": null, "tool": "lomi_git_commit",
            "requestKey": "commit-1", "workspaceId": null, "fingerprint": "abc",
            "state": "outcome_unknown", "effectState": "unknown", "createdAt": AT,
            "updatedAt": AT, "settledAt": AT, "result": null, "errorCode": null,
            "errorMessage": null, "trail": [], "archivedAt": AT, "archivedBecause": "expired",
        });
        let shown = OperationShown {
            receipt: ShownReceipt::Archived(Box::new(
                serde_json::from_value(archived.clone()).expect("an archived receipt"),
            )),
            timeline: None,
            recovery: Some("look at git status".to_owned()),
            decided_by: None,
        };
        let mut expected = archived;
        expected["recovery"] = json!("look at git status");
        assert_eq!(serde_json::to_value(&shown).expect("json"), expected);
    }
}

/// One of the person's rules with how often it decided (`ruleList`, Settings → Rules).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleUse {
    #[serde(flatten)]
    pub record: RuleRecord,
    /// Operations this rule decided, from the receipts (kept and history).
    pub operations: u64,
    /// Terminal lines this rule decided since Lomi started (lines leave no receipt).
    pub lines: u64,
    pub last_used_at: Option<Timestamp>,
    /// The rule's expiry has passed: it no longer decides.
    pub expired: bool,
}

/// `ruleList`'s reply (and `ruleAdd`'s, `ruleRemove`'s, `pause`'s): the rules section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RulesView {
    pub settings_revision: crate::SettingsRevision,
    pub rules: Vec<RuleUse>,
    pub paused: bool,
    pub paused_agents: Vec<PairingId>,
}

/// `ruleTest`'s reply: what would decide a call, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleTested {
    pub verdict: Verdict,
    /// `default` or `rule:<id>`.
    pub decided_by: String,
    pub rule: Option<RuleRecord>,
    /// In words: which rule and why it beat the others, or that the tool's default decides.
    pub why: String,
}

/// One tool's use by one agent (`activity`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolActivity {
    pub tool: String,
    /// Calls since Lomi started (reads and changes), and how many answered with an error.
    pub calls: u64,
    pub errors: u64,
    /// Call times since Lomi started, in milliseconds (absent with no calls).
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
    /// Operations (receipts, kept and in the history).
    pub operations: u64,
}

/// A count of something, by what it is called.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counted {
    pub name: String,
    pub count: u64,
}

/// Calls and operations in one hour.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HourActivity {
    pub hour_start: Timestamp,
    pub calls: u64,
    pub operations: u64,
}

/// What one agent did (`activity`): calls from this start, operations from the receipts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentActivity {
    pub pairing_id: PairingId,
    pub client_name: String,
    pub last_seen: Option<Timestamp>,
    pub paused: bool,
    pub calls: u64,
    pub operations: u64,
    /// Operations by how they ended or stand (`succeeded`, `failed`, `awaiting_user`, …).
    pub operations_by_state: Vec<Counted>,
    /// Operations refused (`USER_DENIED`), by who refused: `person`, `rule:<id>`,
    /// `remembered`.
    pub denials: Vec<Counted>,
    /// Failed operations and refused calls, by error code.
    pub errors_by_code: Vec<Counted>,
    /// What decided its operations: `default`, `rule:<id>`, `person`, `remembered`.
    pub decided_by: Vec<Counted>,
    pub tools: Vec<ToolActivity>,
    /// The last 24 hours, oldest first (hours with nothing left out).
    pub hours: Vec<HourActivity>,
}

/// `activity`'s reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityView {
    /// When this Lomi started: calls, call times and call errors count from then.
    pub since: Timestamp,
    pub agents: Vec<AgentActivity>,
}
