//! The person's requests over the local socket (`lomi pairing …`, `lomi decide …`, …): one
//! JSON request line in, one JSON reply line out. The desktop window makes the same calls
//! through `handle`, in process (store maintenance too: `storeStatus`, `storeReconcile`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use lomi_broker::Broker;
use lomi_protocol::control::{
    AndroidChoiceForgotten, ArchiveReason, ArchivedReceipt, BrokerStatus, BrowserProfile,
    ChatCancelled, ConfirmationSet, Decided, Decision, DocumentClosed, FeedItem, OperationShown,
    PairingApproved, PairingCreated, PairingDecided, PairingFamilies, PairingUsage, PolicyEntry,
    ProjectAdded, ProjectRemoved, ReconcileReport, RetiredEpoch, ShownReceipt, StateChange,
    StoreStatus, WarningLevel, WindowShown, WorkspaceRemoved, WriteFailure,
};
use lomi_protocol::tools::chat::ChatGetInput;
use lomi_protocol::tools::editor::TextEdit;
use lomi_protocol::tools::layout::LayoutNode;
use lomi_protocol::tools::session::PairingState;
use lomi_protocol::tools::settings::SettingsSection;
use lomi_protocol::{
    ConversationId, DocumentId, DomainRevision, DraftRevision, ErrorCode, Family, OperationId,
    OperationState, PairingId, ProjectId, Reply, SettingsRevision, Tool, ToolError, WorkspaceId,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

/// What answers control requests besides the broker: where the MCP endpoint is, and the
/// window of the process that runs the broker, if it has one.
#[derive(Clone)]
pub struct Front {
    pub http_url: String,
    /// Where `ShowWindow` goes; `None` when Lomi runs headless.
    pub show_window: Option<UnboundedSender<()>>,
}

/// What the person can ask of a running broker. Variants and fields are camelCase on the
/// wire (`{"pairingApprove":{"pairingId":…,"workspaces":[…]}}`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum ControlRequest {
    WorkspaceAdd {
        name: String,
        project: PathBuf,
    },
    WorkspaceList {},
    /// Removes a workspace and every grant of it (refused while it has open panels).
    WorkspaceRemove {
        workspace_id: WorkspaceId,
    },
    /// The person rearranged a workspace's panels (the window's splits and tab groups):
    /// compared with the revision they arranged from; the revision moves.
    WorkspaceLayout {
        workspace_id: WorkspaceId,
        expected_revision: DomainRevision,
        root: LayoutNode,
    },
    /// Adds a project directory to a workspace.
    ProjectAdd {
        workspace_id: WorkspaceId,
        project: PathBuf,
    },
    /// Removes a project from its workspace (not the last one).
    ProjectRemove {
        workspace_id: WorkspaceId,
        project_id: lomi_protocol::ProjectId,
    },
    PairingList {},
    PairingApprove {
        pairing_id: PairingId,
        workspaces: Vec<WorkspaceId>,
        /// Approve for the client's current session only.
        #[serde(default)]
        session: bool,
        /// The tool families it will see; absent or null: every family.
        #[serde(default)]
        families: Option<BTreeSet<Family>>,
    },
    /// Changes the tool families a pairing sees (null: every family).
    PairingFamilies {
        pairing_id: PairingId,
        families: Option<BTreeSet<Family>>,
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
        #[serde(default)]
        families: Option<BTreeSet<Family>>,
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
        /// Also keep this rule ("approve and always allow …", "deny and always deny …"):
        /// usually the decision's `suggestedRule`, as the person edited it. Saved before the
        /// decision is given; a rule that cannot be saved leaves the operation waiting.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remember: Option<lomi_protocol::rules::RuleDraft>,
    },
    /// The person's rules with each one's use (`lomi rule list`, Settings → Rules).
    RuleList {},
    /// A new rule, compared with the rules' revision when given.
    RuleAdd {
        rule: lomi_protocol::rules::RuleDraft,
        #[serde(default)]
        expected_revision: Option<SettingsRevision>,
    },
    RuleRemove {
        rule_id: lomi_protocol::RuleId,
        #[serde(default)]
        expected_revision: Option<SettingsRevision>,
    },
    /// Which rule would decide this call now, and why (`lomi rule test`).
    RuleTest {
        agent: PairingId,
        workspace_id: WorkspaceId,
        tool: String,
        /// What the call acts on: its kind, and the path, URL, command or package itself.
        #[serde(default)]
        subject: Option<lomi_protocol::rules::RuleSubject>,
    },
    /// Pauses every agent's changes, or one agent's (`lomi pause [--agent ID]`).
    Pause {
        #[serde(default)]
        agent: Option<PairingId>,
    },
    Resume {
        #[serde(default)]
        agent: Option<PairingId>,
    },
    /// What each agent did (`lomi activity`, the window's Activity).
    Activity {
        #[serde(default)]
        agent: Option<PairingId>,
    },
    Confirm {
        tool: String,
        confirm: bool,
    },
    Status {},
    /// The store's counts, caps, room left, warning level, oldest records and per-pairing use
    /// (`lomi store status`; the window's Settings → Storage).
    StoreStatus {},
    /// The person's maintenance: retire the retry epochs `retire` selects (none when absent),
    /// then move the settled receipts of retired and expired epochs to the history. With
    /// `apply: false` a preview: exactly what would be done now, nothing written.
    StoreReconcile {
        apply: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retire: Option<Retire>,
        /// How long an epoch must be quiet to count as idle (default 600 s).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idle_for_seconds: Option<u64>,
    },
    /// Receipts in the history: newest first (`lomi operation list --history`), or with
    /// `afterSeq` oldest first after that position (the export's pages).
    OperationHistory {
        limit: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_seq: Option<i64>,
    },
    /// Which tools wait for the person's decision, among every mutating tool.
    PolicyList {},
    /// Operations waiting for the person's decision, with what exactly each will do.
    DecisionList {},
    /// The newest operations with the client that made each (the window's feed).
    Feed {
        limit: usize,
    },
    /// A workspace's panels in layout order.
    PanelList {
        workspace_id: WorkspaceId,
    },
    /// Bring the window of the running Lomi to the front (a second launch of the app).
    ShowWindow {},
    /// A workspace's browser profile. With `persistent`, the person's choice for the browser
    /// panels created from now on: one persistent profile in the data dir, or a fresh one
    /// each. `delete` (only with `persistent: false`) also removes the folder, refused while
    /// a browser uses it. Without either, just reads the setting.
    BrowserProfile {
        workspace_id: WorkspaceId,
        #[serde(default)]
        persistent: Option<bool>,
        #[serde(default)]
        delete: bool,
    },
    /// The settings, one section or all, as the person sees them (every pairing; never a key).
    SettingsGet {
        #[serde(default)]
        section: Option<SettingsSection>,
    },
    /// The person's change to fields of one section (`lomi settings set`, the window's Save),
    /// compared with `expectedSettingsRevision` when given.
    SettingsSet {
        section: SettingsSection,
        values: serde_json::Map<String, Value>,
        #[serde(default)]
        expected_settings_revision: Option<SettingsRevision>,
    },
    /// Stores a provider's API key in the OS keyring (`key`), or removes it (no `key`). The
    /// answer says only `keyStored`.
    ProviderKey {
        name: String,
        #[serde(default)]
        key: Option<String>,
    },
    /// A workspace's conversations (`lomi chat list`, the window's Chat panel).
    ChatList {
        workspace_id: WorkspaceId,
    },
    /// A conversation's draft and a page of its messages (`lomi chat show`).
    ChatGet {
        conversation_id: ConversationId,
        #[serde(default)]
        after_seq: Option<u64>,
        #[serde(default)]
        max_bytes: Option<u32>,
    },
    ChatCreate {
        workspace_id: WorkspaceId,
        title: String,
    },
    /// The person renames a conversation (its revision moves).
    ChatRename {
        conversation_id: ConversationId,
        title: String,
    },
    /// The person's edit of a draft, compared with `expectedDraftRevision` when given.
    ChatDraft {
        conversation_id: ConversationId,
        text: String,
        #[serde(default)]
        expected_draft_revision: Option<DraftRevision>,
    },
    /// The person sends the draft (no decision, no receipt); answers once the reply streams.
    ChatSend {
        conversation_id: ConversationId,
        #[serde(default)]
        expected_draft_revision: Option<DraftRevision>,
        #[serde(default)]
        provider: Option<String>,
        #[serde(default)]
        model: Option<String>,
    },
    /// Stops the reply arriving in a conversation: the person's, or an agent's send (cancelled).
    ChatCancel {
        conversation_id: ConversationId,
    },
    /// The person opens a project file in the editor: the same document an agent's
    /// `lomi_editor_open` of the path gets (`lomi document open`).
    DocumentOpen {
        workspace_id: WorkspaceId,
        #[serde(default)]
        project_id: Option<ProjectId>,
        path: String,
    },
    /// An open document and the state of its file on disk (`lomi document show`).
    DocumentGet {
        document_id: DocumentId,
    },
    /// The person's edit, made against the text at `expectedBufferRevision`: when an agent
    /// edited since, it is moved over those edits, never refused for being late. `session`
    /// names the person's editor in the change feed.
    DocumentEdit {
        document_id: DocumentId,
        expected_buffer_revision: String,
        edits: Vec<TextEdit>,
        #[serde(default)]
        session: Option<String>,
    },
    /// The person saves the text at `expectedBufferRevision`; `overwrite` ("keep mine") writes
    /// over a file that changed on disk since it was opened or saved.
    DocumentSave {
        document_id: DocumentId,
        expected_buffer_revision: String,
        #[serde(default)]
        overwrite: bool,
    },
    /// The person takes the file's bytes on disk back into the document ("reload").
    DocumentReload {
        document_id: DocumentId,
    },
    DocumentClose {
        document_id: DocumentId,
        #[serde(default)]
        discard: bool,
    },
    /// One directory of a project's file tree (`""` is the root), `.git` left out.
    FileList {
        workspace_id: WorkspaceId,
        #[serde(default)]
        project_id: Option<ProjectId>,
        #[serde(default)]
        path: String,
    },
    /// The person's remembered Android attach decisions, by adb serial (`lomi android
    /// choices`; true: allowed).
    AndroidChoices {},
    /// Forgets the person's decision for a device, so its next attach waits for them again
    /// (`lomi android forget`).
    AndroidForget {
        serial: String,
    },
    /// The project's Git status (`lomi git status`).
    GitStatus {
        workspace_id: WorkspaceId,
        #[serde(default)]
        project_id: Option<ProjectId>,
    },
    /// One file's diff: the staged change, or the change not staged yet.
    GitDiff {
        workspace_id: WorkspaceId,
        #[serde(default)]
        project_id: Option<ProjectId>,
        path: String,
        #[serde(default)]
        staged: bool,
    },
    GitStage {
        workspace_id: WorkspaceId,
        #[serde(default)]
        project_id: Option<ProjectId>,
        paths: Vec<String>,
    },
    GitUnstage {
        workspace_id: WorkspaceId,
        #[serde(default)]
        project_id: Option<ProjectId>,
        paths: Vec<String>,
    },
    /// The person commits what is staged, if HEAD is still the `head` of the status they saw.
    GitCommit {
        workspace_id: WorkspaceId,
        #[serde(default)]
        project_id: Option<ProjectId>,
        message: String,
        expected_head_revision: String,
    },
}

/// Answers one control request, the person's Chat sends included (they wait for the
/// provider): what the local socket and the window call.
pub async fn answer(lomi: &crate::Lomi, front: &Front, request: ControlRequest) -> Value {
    let result = match request {
        ControlRequest::ChatSend {
            conversation_id,
            expected_draft_revision,
            provider,
            model,
        } => lomi
            .chat
            .send_for_person(
                &conversation_id,
                expected_draft_revision,
                provider.as_deref(),
                model.as_deref(),
            )
            .await
            .and_then(data),
        ControlRequest::ChatCancel { conversation_id } => lomi
            .chat
            .cancel_for_person(&conversation_id)
            .and_then(|()| {
                data(ChatCancelled {
                    conversation_id,
                    cancelled: true,
                })
            }),
        ControlRequest::DocumentOpen {
            workspace_id,
            project_id,
            path,
        } => (lomi.editor)
            .open_for_person(&workspace_id, project_id.as_ref(), path)
            .await
            .and_then(data),
        ControlRequest::DocumentGet { document_id } => (lomi.editor)
            .document_for_person(&document_id)
            .await
            .and_then(data),
        ControlRequest::DocumentEdit {
            document_id,
            expected_buffer_revision,
            edits,
            session,
        } => (lomi.editor)
            .edit_for_person(
                &document_id,
                &expected_buffer_revision,
                &edits,
                session.as_deref(),
            )
            .and_then(data),
        ControlRequest::DocumentSave {
            document_id,
            expected_buffer_revision,
            overwrite,
        } => (lomi.editor)
            .save_for_person(&document_id, &expected_buffer_revision, overwrite)
            .await
            .and_then(data),
        ControlRequest::DocumentReload { document_id } => (lomi.editor)
            .reload_for_person(&document_id)
            .await
            .and_then(data),
        ControlRequest::DocumentClose {
            document_id,
            discard,
        } => (lomi.editor.documents())
            .close(&document_id, discard)
            .and_then(|discarded| {
                data(DocumentClosed {
                    document_id,
                    discarded,
                })
            }),
        ControlRequest::FileList {
            workspace_id,
            project_id,
            path,
        } => (lomi.files)
            .list_for_person(&workspace_id, project_id.as_ref(), &path)
            .and_then(data),
        ControlRequest::GitStatus {
            workspace_id,
            project_id,
        } => (lomi.git)
            .status_for_person(&workspace_id, project_id.as_ref())
            .await
            .and_then(data),
        ControlRequest::GitDiff {
            workspace_id,
            project_id,
            path,
            staged,
        } => (lomi.git)
            .diff_for_person(&workspace_id, project_id.as_ref(), &path, staged)
            .await
            .and_then(data),
        ControlRequest::GitStage {
            workspace_id,
            project_id,
            paths,
        } => (lomi.git)
            .stage_for_person(&workspace_id, project_id.as_ref(), &paths, true)
            .await
            .and_then(data),
        ControlRequest::GitUnstage {
            workspace_id,
            project_id,
            paths,
        } => (lomi.git)
            .stage_for_person(&workspace_id, project_id.as_ref(), &paths, false)
            .await
            .and_then(data),
        ControlRequest::GitCommit {
            workspace_id,
            project_id,
            message,
            expected_head_revision,
        } => {
            (lomi.git)
                .commit_for_person(
                    &workspace_id,
                    project_id.as_ref(),
                    &message,
                    &expected_head_revision,
                )
                .await
        }
        ControlRequest::AndroidChoices {} => lomi.android.choices_for_person().and_then(data),
        ControlRequest::AndroidForget { serial } => (lomi.android.forget_for_person(&serial))
            .and_then(|forgotten| data(AndroidChoiceForgotten { serial, forgotten })),
        request => return handle(&lomi.broker, front, request),
    };
    Reply::from_result(result).to_value()
}

/// Stores or removes a provider's key in the keyring, then records `keyStored`. The key goes
/// to the keyring before the settings say so: a failed save leaves a stored key that the
/// settings do not mention yet, never a `keyStored: true` without a key.
fn provider_key(broker: &Broker, name: &str, key: Option<String>) -> Result<Value, ToolError> {
    lomi_broker::check_provider_name(name)?;
    if !broker.provider_exists(name) {
        return Err(ToolError::not_found(format!(
            "no provider {name:?}; add it first (`lomi settings set providers {name} '{{\"kind\":\"openai_compatible\",\"baseUrl\":\"https://…\",\"models\":[…]}}'`)"
        )));
    }
    if let Some(key) = &key {
        crate::provider_keys::check_key(key)?;
    }
    let stored = key.is_some();
    crate::provider_keys::save(broker.data_dir(), name, key)?;
    broker.provider_key_noted(name, stored).and_then(data)
}

/// Which retry epochs the person retires (`--retire idle|pairing ID|older-than D|epoch ID`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Retire {
    /// Every idle epoch (see `docs/decisions.md`: settled and quiet, or of an earlier instance).
    Idle {},
    Pairing {
        pairing_id: PairingId,
    },
    OlderThan {
        seconds: u64,
    },
    Epoch {
        retry_epoch: lomi_protocol::RetryEpoch,
    },
}

/// The store's maintenance run a reconcile request asks for.
pub fn maintenance(
    idle: lomi_store::IdleRule,
    retire: Option<&Retire>,
    idle_for_seconds: Option<u64>,
) -> lomi_store::Maintenance {
    use lomi_store::RetireSelector;
    let mut idle = idle;
    if let Some(seconds) = idle_for_seconds {
        idle.quiet_for = std::time::Duration::from_secs(seconds);
    }
    lomi_store::Maintenance {
        retire: retire.map(|r| match r {
            Retire::Idle {} => RetireSelector::Idle,
            Retire::Pairing { pairing_id } => RetireSelector::Pairing(pairing_id.clone()),
            Retire::OlderThan { seconds } => {
                RetireSelector::OlderThan(std::time::Duration::from_secs(*seconds))
            }
            Retire::Epoch { retry_epoch } => RetireSelector::Epoch(retry_epoch.clone()),
        }),
        idle,
    }
}

/// One archived receipt: everything the live receipt held, its trail, and when and why it
/// moved. One line of `lomi operation export --history`.
pub fn archived_receipt(archived: &lomi_store::ArchivedReceipt) -> ArchivedReceipt {
    let r = &archived.receipt;
    ArchivedReceipt {
        history_seq: archived.seq,
        operation_id: r.operation_id.clone(),
        pairing_id: r.key.pairing_id.clone(),
        retry_epoch: r.key.retry_epoch.clone(),
        project_id: r.key.project_id.clone(),
        tool: r.key.tool.0.clone(),
        request_key: r.key.request_key.clone(),
        workspace_id: r.workspace_id.clone(),
        fingerprint: r.fingerprint.clone(),
        state: r.state,
        effect_state: r.effect_state,
        created_at: r.created_at,
        updated_at: r.updated_at,
        settled_at: r.settled_at,
        result: r.result.clone(),
        error_code: r.error_code.clone(),
        error_message: r.error_message.clone(),
        trail: (archived.trail.iter())
            .map(|step| StateChange {
                state: step.state,
                effect_state: step.effect_state,
                at: step.at,
            })
            .collect(),
        archived_at: archived.archived_at,
        archived_because: match archived.archived_because {
            lomi_store::ArchiveReason::Retired => ArchiveReason::Retired,
            lomi_store::ArchiveReason::Expired => ArchiveReason::Expired,
        },
    }
}

/// The store's warning level as the wire names it.
fn warning_level(level: lomi_store::WarningLevel) -> WarningLevel {
    match level {
        lomi_store::WarningLevel::None => WarningLevel::None,
        lomi_store::WarningLevel::Warning => WarningLevel::Warning,
        lomi_store::WarningLevel::Critical => WarningLevel::Critical,
        lomi_store::WarningLevel::Full => WarningLevel::Full,
    }
}

/// `lomi store status`, the same whether the broker or the command opened the store.
pub fn store_status(status: &lomi_store::StoreStatus) -> StoreStatus {
    StoreStatus {
        database_path: status.database_path.display().to_string(),
        schema_version: status.schema_version,
        receipts: status.receipts,
        receipt_cap: status.receipt_cap as u64,
        unsettled_receipts: status.unsettled_receipts,
        receipts_by_state: (status.receipts_by_state.iter())
            .map(|c| (c.state.as_str().to_owned(), c.count))
            .collect(),
        removable_receipts: status.removable_receipts,
        retry_epochs: status.retry_epochs,
        retry_epoch_cap: status.retry_epoch_cap as u64,
        expired_retry_epochs: status.expired_retry_epochs,
        oldest_receipt_at: status.oldest_receipt_at,
        oldest_retry_epoch_at: status.oldest_retry_epoch_at,
        events_retained: status.events_retained,
        event_retention: status.event_retention as u64,
        receipts_remaining: status.receipts_remaining,
        retry_epochs_remaining: status.retry_epochs_remaining,
        idle_retry_epochs: status.idle_retry_epochs,
        retired_retry_epochs: status.retired_retry_epochs,
        history_receipts: status.history_receipts,
        warning_level: warning_level(status.warning),
        write_failure: (status.write_failure.as_ref()).map(|f| WriteFailure {
            since: f.since,
            message: f.message.clone(),
        }),
        pairings: (status.pairings.iter())
            .map(|p| PairingUsage {
                pairing_id: p.pairing_id.clone(),
                live_retry_epochs: p.live_retry_epochs,
                idle_retry_epochs: p.idle_retry_epochs,
                ended_retry_epochs: p.ended_retry_epochs,
                receipts: p.receipts,
                unsettled_receipts: p.unsettled_receipts,
            })
            .collect(),
    }
}

/// What reconcile did (or would do), with the store's level after it (or now, for a
/// preview), so the window can update its notice.
pub fn reconcile_report(
    report: &lomi_store::ReconcileReport,
    after: &lomi_store::StoreStatus,
) -> ReconcileReport {
    ReconcileReport {
        retired: (report.retired.iter())
            .map(|e| RetiredEpoch {
                retry_epoch: e.retry_epoch.clone(),
                pairing_id: e.pairing_id.clone(),
                created_at: e.created_at,
                receipts: e.receipts,
                unsettled_receipts: e.unsettled_receipts,
            })
            .collect(),
        retry_epochs_retired: report.retired.len() as u64,
        tombstones_removed: report.tombstones_removed,
        retry_epochs_removed: report.retry_epochs_removed,
        receipts_archived: report.receipts_archived,
        events_removed: report.events_removed,
        ended_retry_epochs_kept: report.ended_retry_epochs_kept,
        warning_level: warning_level(after.warning),
        receipts_remaining: after.receipts_remaining,
    }
}

/// A typed reply as the envelope's `data`.
fn data<T: Serialize>(reply: T) -> Result<Value, ToolError> {
    serde_json::to_value(reply)
        .map_err(|e| ToolError::internal(format!("could not encode the reply: {e}")))
}

/// A store failure as the person's error.
fn store_error(error: lomi_store::StoreError) -> ToolError {
    ToolError::new(error.code(), error.to_string())
}

/// Answers one control request with an envelope.
pub fn handle(broker: &Broker, front: &Front, request: ControlRequest) -> Value {
    let http_url = front.http_url.as_str();
    let result: Result<Value, ToolError> = match request {
        ControlRequest::WorkspaceAdd { name, project } => broker
            .workspace_add(&name, &project)
            .and_then(|w| data(w.view())),
        ControlRequest::WorkspaceList {} => data(
            broker
                .workspaces()
                .iter()
                .map(|w| w.view())
                .collect::<Vec<_>>(),
        ),
        ControlRequest::WorkspaceRemove { workspace_id } => {
            broker.workspace_remove(&workspace_id).and_then(|()| {
                data(WorkspaceRemoved {
                    workspace_id,
                    removed: true,
                })
            })
        }
        ControlRequest::WorkspaceLayout {
            workspace_id,
            expected_revision,
            root,
        } => broker
            .layout_set_by_person(&workspace_id, expected_revision, root)
            .and_then(data),
        ControlRequest::ProjectAdd {
            workspace_id,
            project,
        } => broker.project_add(&workspace_id, &project).and_then(|p| {
            data(ProjectAdded {
                workspace_id,
                project: p.view(),
            })
        }),
        ControlRequest::ProjectRemove {
            workspace_id,
            project_id,
        } => broker
            .project_remove(&workspace_id, &project_id)
            .and_then(|()| {
                data(ProjectRemoved {
                    workspace_id,
                    project_id,
                    removed: true,
                })
            }),
        ControlRequest::PairingList {} => data(broker.pairing_list()),
        ControlRequest::PairingApprove {
            pairing_id,
            workspaces,
            session,
            families,
        } => broker
            .pairing_approve_families(&pairing_id, &workspaces, session, families.clone())
            .and_then(|()| {
                data(PairingApproved {
                    pairing_id,
                    state: PairingState::Approved,
                    grants: workspaces,
                    session,
                    families,
                })
            }),
        ControlRequest::PairingFamilies {
            pairing_id,
            families,
        } => broker
            .pairing_set_families(&pairing_id, families.clone())
            .and_then(|()| {
                data(PairingFamilies {
                    pairing_id,
                    families,
                })
            }),
        ControlRequest::PairingDeny { pairing_id } => {
            broker.pairing_deny(&pairing_id).and_then(|()| {
                data(PairingDecided {
                    pairing_id,
                    state: PairingState::Denied,
                })
            })
        }
        ControlRequest::PairingRevoke { pairing_id } => {
            broker.pairing_revoke(&pairing_id).and_then(|()| {
                data(PairingDecided {
                    pairing_id,
                    state: PairingState::Revoked,
                })
            })
        }
        ControlRequest::PairingCreate {
            name,
            workspaces,
            families,
        } => broker
            .pairing_create(&name, &workspaces, families)
            .and_then(|created| {
                data(PairingCreated {
                    pairing_id: created.pairing_id,
                    token: created.token,
                    grants: created.grants,
                    url: http_url.to_owned(),
                })
            }),
        ControlRequest::OperationList { limit } => {
            broker.operations(limit.clamp(1, 4_096)).and_then(data)
        }
        ControlRequest::OperationShow { operation_id } => {
            operation_shown(broker, &operation_id).and_then(data)
        }
        ControlRequest::OperationHistory { limit, after_seq } => {
            let limit = limit.clamp(1, 4_096);
            let page = match after_seq {
                Some(after) => broker.store().history_after(after, limit),
                None => broker.store().history_list(limit, 0),
            };
            page.map_err(store_error)
                .and_then(|items| data(items.iter().map(archived_receipt).collect::<Vec<_>>()))
        }
        ControlRequest::Decide {
            operation_id,
            approve,
            remember,
        } => broker
            .decide_remembering(&operation_id, approve, remember)
            .and_then(|rule| {
                let decision = if approve {
                    Decision::Approved
                } else {
                    Decision::Denied
                };
                data(Decided {
                    operation_id,
                    decision,
                    rule,
                })
            }),
        ControlRequest::RuleList {} => broker.rules_view().and_then(data),
        ControlRequest::RuleAdd {
            rule,
            expected_revision,
        } => broker
            .rule_add(rule, expected_revision)
            .and_then(|_| broker.rules_view())
            .and_then(data),
        ControlRequest::RuleRemove {
            rule_id,
            expected_revision,
        } => broker
            .rule_remove(&rule_id, expected_revision)
            .and_then(|()| broker.rules_view())
            .and_then(data),
        ControlRequest::RuleTest {
            agent,
            workspace_id,
            tool,
            subject,
        } => match Tool::from_name(&tool) {
            None => Err(ToolError::invalid(format!(
                "{tool} is not a tool of Lomi's catalog (`lomi catalog` lists them)"
            ))),
            Some(tool) => {
                let subject = lomi_broker::call_subject(subject.as_ref());
                data(broker.rule_test(&agent, &workspace_id, tool, &subject))
            }
        },
        ControlRequest::Pause { agent } => broker
            .pause(agent.as_ref())
            .and_then(|()| broker.rules_view())
            .and_then(data),
        ControlRequest::Resume { agent } => broker
            .resume(agent.as_ref())
            .and_then(|()| broker.rules_view())
            .and_then(data),
        ControlRequest::Activity { agent } => broker.agent_activity(agent.as_ref()).and_then(data),
        ControlRequest::Confirm { tool, confirm } => broker
            .set_confirmation(&tool, confirm)
            .and_then(|()| data(ConfirmationSet { tool, confirm })),
        ControlRequest::StoreStatus {} => (broker.store().status(&broker.idle_rule()))
            .map_err(store_error)
            .and_then(|status| data(store_status(&status))),
        ControlRequest::StoreReconcile {
            apply,
            retire,
            idle_for_seconds,
        } => {
            let maintenance = maintenance(broker.idle_rule(), retire.as_ref(), idle_for_seconds);
            let store = broker.store();
            let report = if apply {
                store.reconcile(&maintenance)
            } else {
                store.reconcile_preview(&maintenance)
            };
            if apply {
                broker.note_change(lomi_broker::Area::Operations);
            }
            report
                .and_then(|r| Ok((r, store.status(&broker.idle_rule())?)))
                .map_err(store_error)
                .and_then(|(r, status)| data(reconcile_report(&r, &status)))
        }
        ControlRequest::PolicyList {} => data(policy(broker)),
        ControlRequest::PanelList { workspace_id } => data(broker.panels_for_person(&workspace_id)),
        ControlRequest::DecisionList {} => data(broker.awaiting_decisions()),
        ControlRequest::Feed { limit } => feed(broker, limit.clamp(1, 500)).and_then(data),
        ControlRequest::BrowserProfile {
            workspace_id,
            persistent,
            delete,
        } => browser_profile(broker, &workspace_id, persistent, delete).and_then(data),
        ControlRequest::SettingsGet { section } => data(broker.settings_for_person(section)),
        ControlRequest::SettingsSet {
            section,
            values,
            expected_settings_revision,
        } => broker
            .settings_change(section, &values, expected_settings_revision)
            .and_then(data),
        ControlRequest::ProviderKey { name, key } => provider_key(broker, &name, key),
        ControlRequest::ChatList { workspace_id } => {
            if broker.workspaces().iter().any(|w| w.id == workspace_id) {
                broker.chat_list_of(&workspace_id).and_then(data)
            } else {
                Err(ToolError::not_found(format!(
                    "no workspace {workspace_id}; see `lomi workspace list`"
                )))
            }
        }
        ControlRequest::ChatGet {
            conversation_id,
            after_seq,
            max_bytes,
        } => broker
            .chat_get(
                None,
                &ChatGetInput {
                    conversation_id,
                    after_seq,
                    max_bytes,
                },
            )
            .and_then(data),
        ControlRequest::ChatCreate {
            workspace_id,
            title,
        } => broker
            .chat_create_for_person(&workspace_id, &title)
            .and_then(data),
        ControlRequest::ChatRename {
            conversation_id,
            title,
        } => broker
            .chat_rename_for_person(&conversation_id, &title)
            .and_then(data),
        ControlRequest::ChatDraft {
            conversation_id,
            text,
            expected_draft_revision,
        } => broker
            .chat_draft_for_person(&conversation_id, expected_draft_revision, &text)
            .and_then(data),
        ControlRequest::ChatSend { .. } | ControlRequest::ChatCancel { .. } => {
            Err(ToolError::internal(
                "Chat sends are answered by control::answer, which has the provider client",
            ))
        }
        ControlRequest::DocumentOpen { .. }
        | ControlRequest::DocumentGet { .. }
        | ControlRequest::DocumentEdit { .. }
        | ControlRequest::DocumentSave { .. }
        | ControlRequest::DocumentReload { .. }
        | ControlRequest::DocumentClose { .. }
        | ControlRequest::FileList { .. }
        | ControlRequest::GitStatus { .. }
        | ControlRequest::GitDiff { .. }
        | ControlRequest::GitStage { .. }
        | ControlRequest::GitUnstage { .. }
        | ControlRequest::GitCommit { .. }
        | ControlRequest::AndroidChoices {}
        | ControlRequest::AndroidForget { .. } => Err(ToolError::internal(
            "documents, files, Git and Android choices are answered by control::answer, which has their runtimes",
        )),
        ControlRequest::ShowWindow {} => match &front.show_window {
            Some(window) => window
                .send(())
                .map_err(|_| ToolError::internal("the window is closing"))
                .and_then(|()| data(WindowShown { shown: true })),
            None => Err(ToolError::new(
                lomi_protocol::ErrorCode::Unsupported,
                "this Lomi runs headless (`lomi serve --headless`); it has no window to show",
            )),
        },
        ControlRequest::Status {} => data(BrokerStatus {
            broker_instance_id: broker.instance_id().clone(),
            url: http_url.to_owned(),
            pid: std::process::id(),
        }),
    };
    Reply::from_result(result).to_value()
}

/// Every mutating tool with whether it waits for the person, grouped by family in the
/// families' order: each with its words ("Delete files") and its family's ("Project files").
fn policy(broker: &Broker) -> Vec<PolicyEntry> {
    let confirmed = broker.confirmation_policy();
    let mut tools: Vec<lomi_protocol::catalog::ToolSpec> = lomi_protocol::catalog::catalog()
        .into_iter()
        .filter(|t| t.kind == lomi_protocol::catalog::ToolKind::Mutation)
        .collect();
    // A stable sort: within a family, the catalog's order.
    tools.sort_by_key(|t| t.tool.family());
    tools
        .iter()
        .map(|t| {
            let family = t.tool.family();
            PolicyEntry {
                tool: t.name.to_owned(),
                label: t.tool.label().to_owned(),
                family,
                family_label: family.map_or("Lomi", Family::label).to_owned(),
                confirm: confirmed.contains(&t.tool),
            }
        })
        .collect()
}

/// How many of an operation's state changes its receipt view lists (an operation has a
/// handful: queued, awaiting_user, running, cancelling, settled).
const TIMELINE_LIMIT: usize = 16;

/// `operationShow`: the live receipt with `timeline` (the states it went through and when,
/// as the event feed still holds them), or the receipt in the history (it has left the feed).
fn operation_shown(broker: &Broker, id: &OperationId) -> Result<OperationShown, ToolError> {
    let (receipt, timeline, decided_by) = match broker.operation(id) {
        Ok(op) => {
            let decided_by = (broker.store().get(id).map_err(store_error)?)
                .and_then(|receipt| receipt.decided_by);
            let events = broker
                .store()
                .events_of(id, TIMELINE_LIMIT)
                .map_err(store_error)?;
            let timeline = (events.iter())
                .map(|e| StateChange {
                    state: e.state,
                    effect_state: e.effect_state,
                    at: e.at,
                })
                .collect();
            (ShownReceipt::Live(Box::new(op)), Some(timeline), decided_by)
        }
        // Not live: it may have moved to the history.
        Err(error) if error.code == ErrorCode::NotFound => {
            match broker.store().history_get(id).map_err(store_error)? {
                Some(archived) => (
                    ShownReceipt::Archived(Box::new(archived_receipt(&archived))),
                    None,
                    archived.receipt.decided_by.clone(),
                ),
                None => return Err(error),
            }
        }
        Err(error) => return Err(error),
    };
    let recovery = recovery(&receipt);
    Ok(OperationShown {
        receipt,
        timeline,
        recovery,
        decided_by,
    })
}

/// What to look at for the tool's family before doing anything again, for a receipt whose
/// outcome is unknown.
fn recovery(receipt: &ShownReceipt) -> Option<String> {
    let (tool, state) = match receipt {
        ShownReceipt::Live(op) => (op.tool.as_str(), op.state),
        ShownReceipt::Archived(archived) => (archived.tool.as_str(), archived.state),
    };
    let family = Tool::from_name(tool).and_then(Tool::family)?;
    (state == OperationState::OutcomeUnknown).then(|| family.recovery_steps().to_owned())
}

/// The newest receipts with the name of the client whose operation each is.
fn feed(broker: &Broker, limit: usize) -> Result<Vec<FeedItem>, ToolError> {
    let receipts = broker
        .store()
        .list_receipts(limit, 0)
        .map_err(store_error)?;
    let names: std::collections::HashMap<PairingId, String> = broker
        .pairing_list()
        .into_iter()
        .map(|p| (p.pairing_id, p.client_name))
        .collect();
    let workspaces: std::collections::HashMap<WorkspaceId, String> = broker
        .workspaces()
        .into_iter()
        .map(|w| (w.id, w.name))
        .collect();
    Ok(receipts
        .iter()
        .map(|r| FeedItem {
            operation_id: r.operation_id.clone(),
            tool: r.key.tool.0.clone(),
            state: r.state,
            effect_state: r.effect_state,
            workspace_id: r.workspace_id.clone(),
            workspace_name: (r.workspace_id.as_ref()).and_then(|w| workspaces.get(w).cloned()),
            pairing_id: r.key.pairing_id.clone(),
            client_name: names.get(&r.key.pairing_id).cloned(),
            updated_at: r.updated_at,
            error_code: r.error_code.clone(),
        })
        .collect())
}

/// `browserProfile`: reads or changes a workspace's browser profile choice (see the variant).
fn browser_profile(
    broker: &Broker,
    workspace: &WorkspaceId,
    persistent: Option<bool>,
    delete: bool,
) -> Result<BrowserProfile, ToolError> {
    if !broker.workspaces().iter().any(|w| &w.id == workspace) {
        return Err(ToolError::not_found(format!(
            "no workspace {workspace}; see `lomi workspace list`"
        )));
    }
    if delete && persistent != Some(false) {
        return Err(ToolError::invalid(
            "delete removes the profile folder when the persistent profile is turned off; ask for both (`--fresh --delete`)",
        ));
    }
    let dir = broker.browser_profile_dir(workspace);
    if delete && let Some(pid) = lomi_browser::profile_user(&dir) {
        return Err(ToolError::new(
            ErrorCode::ResourceBusy,
            format!(
                "a browser (Chromium pid {pid}) is using the profile {}; close the workspace's browser panel first, nothing was changed",
                dir.display()
            ),
        ));
    }
    if let Some(persistent) = persistent {
        broker.set_persistent_browser_profile(workspace, persistent)?;
    }
    let deleted = if delete {
        lomi_browser::delete_profile(&dir).map_err(ToolError::internal)?
    } else {
        false
    };
    Ok(BrowserProfile {
        workspace_id: workspace.clone(),
        persistent: broker.persistent_browser_profile(workspace).is_some(),
        path: dir.display().to_string(),
        exists: dir.is_dir(),
        deleted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn receipt(state: &str) -> ShownReceipt {
        let op = serde_json::from_value(json!({
            "operationId": "op_0123456789abcdef0123456789abcdef",
            "tool": "lomi_git_commit", "state": state, "effectState": "unknown",
            "workspaceId": null, "projectId": null,
            "retryEpoch": "re_0123456789abcdef0123456789abcdef", "requestKey": "commit-1",
            "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z",
            "settledAt": null, "result": null, "error": null,
        }))
        .expect("an operation view");
        ShownReceipt::Live(Box::new(op))
    }

    #[test]
    fn an_unknown_outcome_says_what_to_look_at_for_its_tool() {
        let shown = OperationShown {
            receipt: receipt("outcome_unknown"),
            timeline: Some(vec![]),
            recovery: recovery(&receipt("outcome_unknown")),
            decided_by: None,
        };
        let wire = json!(shown);
        assert_eq!(
            wire["recovery"],
            json!(Family::Git.recovery_steps()),
            "{wire}"
        );
        assert_eq!(wire["timeline"], json!([]), "{wire}");
        assert_eq!(
            wire["tool"], "lomi_git_commit",
            "the receipt's own fields: {wire}"
        );
        assert_eq!(recovery(&receipt("succeeded")), None);
        let decided = OperationShown {
            receipt: receipt("succeeded"),
            timeline: None,
            recovery: None,
            decided_by: Some("person".to_owned()),
        };
        assert_eq!(json!(decided)["decidedBy"], "person");
    }

    fn broker(dir: &std::path::Path) -> Broker {
        Broker::start(lomi_broker::BrokerConfig::new(dir)).expect("broker")
    }

    #[test]
    fn requests_are_camel_case_on_the_wire() {
        let request: ControlRequest = serde_json::from_value(json!({
            "pairingApprove": {"pairingId": "pa_0123456789abcdef0123456789abcdef", "workspaces": [], "session": true}
        }))
        .expect("camelCase fields");
        assert!(matches!(
            request,
            ControlRequest::PairingApprove { session: true, .. }
        ));
        let plain: ControlRequest = serde_json::from_value(json!({
            "pairingApprove": {"pairingId": "pa_0123456789abcdef0123456789abcdef", "workspaces": []}
        }))
        .expect("session defaults to false");
        assert!(matches!(
            plain,
            ControlRequest::PairingApprove { session: false, .. }
        ));
        let wire = serde_json::to_value(ControlRequest::StoreReconcile {
            apply: true,
            retire: None,
            idle_for_seconds: None,
        })
        .expect("json");
        assert_eq!(wire, json!({"storeReconcile": {"apply": true}}));
        let retire: ControlRequest = serde_json::from_value(json!({
            "storeReconcile": {"apply": false, "retire": {"pairing": {"pairingId": "pa_0123456789abcdef0123456789abcdef"}}, "idleForSeconds": 5}
        }))
        .expect("a retire selector");
        assert!(matches!(
            retire,
            ControlRequest::StoreReconcile {
                apply: false,
                retire: Some(Retire::Pairing { .. }),
                idle_for_seconds: Some(5)
            }
        ));
        assert!(
            serde_json::from_value::<ControlRequest>(
                json!({"pairingDeny": {"pairing_id": "pa_x"}})
            )
            .is_err(),
            "snake_case fields are refused"
        );
    }

    #[test]
    fn the_browser_profile_choice_is_the_persons_and_survives_a_restart() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("project");
        std::fs::create_dir(&project).expect("project");
        let front = Front {
            http_url: "http://127.0.0.1:1/mcp".into(),
            show_window: None,
        };
        let workspace = {
            let broker = broker(&dir.path().join("data"));
            let workspace = broker.workspace_add("W", &project).expect("workspace").id;
            let request: ControlRequest = serde_json::from_value(json!({
                "browserProfile": {"workspaceId": workspace, "persistent": true}
            }))
            .expect("camelCase request");
            let reply = handle(&broker, &front, request);
            assert_eq!(reply["data"]["persistent"], true, "{reply}");
            let refused = handle(
                &broker,
                &front,
                ControlRequest::BrowserProfile {
                    workspace_id: workspace.clone(),
                    persistent: None,
                    delete: true,
                },
            );
            assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
            workspace
        };
        let broker = broker(&dir.path().join("data"));
        let expected = dir
            .path()
            .join("data")
            .join("browser-profiles")
            .join(workspace.to_string());
        assert_eq!(
            broker.persistent_browser_profile(&workspace),
            Some(expected.clone())
        );
        let read = handle(
            &broker,
            &front,
            ControlRequest::BrowserProfile {
                workspace_id: workspace.clone(),
                persistent: None,
                delete: false,
            },
        );
        assert_eq!(read["data"]["persistent"], true, "{read}");
        std::fs::create_dir_all(expected.join("Default")).expect("a profile");
        let off = handle(
            &broker,
            &front,
            ControlRequest::BrowserProfile {
                workspace_id: workspace.clone(),
                persistent: Some(false),
                delete: true,
            },
        );
        assert_eq!(
            (
                off["data"]["persistent"].clone(),
                off["data"]["deleted"].clone()
            ),
            (json!(false), json!(true)),
            "{off}"
        );
        assert!(!expected.exists());
        assert_eq!(broker.persistent_browser_profile(&workspace), None);
    }

    #[tokio::test]
    async fn show_window_reaches_the_window_or_says_there_is_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        let broker = broker(dir.path());
        let headless = Front {
            http_url: "http://127.0.0.1:1/mcp".into(),
            show_window: None,
        };
        let reply = handle(&broker, &headless, ControlRequest::ShowWindow {});
        assert_eq!(
            (reply["status"].as_str(), reply["code"].as_str()),
            (Some("error"), Some("UNSUPPORTED"))
        );

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let windowed = Front {
            http_url: headless.http_url.clone(),
            show_window: Some(tx),
        };
        let reply = handle(&broker, &windowed, ControlRequest::ShowWindow {});
        assert_eq!(reply["status"], "ok", "{reply}");
        assert_eq!(rx.try_recv(), Ok(()));
    }

    #[tokio::test]
    async fn the_policy_lists_every_mutating_tool_and_the_feed_names_no_one_yet() {
        let dir = tempfile::tempdir().expect("temp dir");
        let broker = broker(dir.path());
        let front = Front {
            http_url: String::new(),
            show_window: None,
        };
        let policy = handle(&broker, &front, ControlRequest::PolicyList {});
        let tools = policy["data"].as_array().expect("list");
        let confirmed: Vec<&str> = tools
            .iter()
            .filter(|t| t["confirm"] == true)
            .filter_map(|t| t["tool"].as_str())
            .collect();
        assert!(confirmed.contains(&"lomi_file_delete"), "{confirmed:?}");
        assert!(
            !confirmed.contains(&"lomi_workspace_update"),
            "{confirmed:?}"
        );
        assert!(
            tools.iter().all(|t| t["tool"] != "lomi_workspace_list"),
            "read-only tools are not listed"
        );
        assert!(tools.iter().any(|t| t["tool"] == "lomi_workspace_update"));
        // Each in plain words, grouped by family in the families' order.
        let delete = tools
            .iter()
            .find(|t| t["tool"] == "lomi_file_delete")
            .expect("file delete listed");
        assert_eq!(
            (&delete["label"], &delete["familyLabel"], &delete["family"]),
            (
                &json!("Delete files"),
                &json!("Project files"),
                &json!("files")
            )
        );
        let families: Vec<&str> = tools.iter().filter_map(|t| t["family"].as_str()).collect();
        let mut grouped = families.clone();
        grouped.dedup();
        let mut distinct = grouped.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            grouped.len(),
            distinct.len(),
            "a family split in two: {families:?}"
        );
        let feed = handle(&broker, &front, ControlRequest::Feed { limit: 10 });
        assert_eq!(feed["data"], json!([]));
        let decisions = handle(&broker, &front, ControlRequest::DecisionList {});
        assert_eq!(decisions["data"], json!([]));
    }

    /// The window and the CLI send the same `settingsSet`: it moves the section's revision, a
    /// stale `expectedSettingsRevision` is REVISION_MISMATCH with the current one, and a key
    /// for an unknown provider is refused before the keyring is asked.
    #[test]
    fn the_persons_settings_requests_move_the_same_revisions() {
        let dir = tempfile::tempdir().expect("temp dir");
        let broker = broker(dir.path());
        let front = Front {
            http_url: "http://127.0.0.1:1/mcp".to_owned(),
            show_window: None,
        };
        let set = |expected: Option<u64>, cols: u64| {
            let request: ControlRequest = serde_json::from_value(json!({"settingsSet": {
                "section": "terminal", "values": {"cols": cols},
                "expectedSettingsRevision": expected.map(|r| r.to_string()),
            }}))
            .expect("a settingsSet request");
            handle(&broker, &front, request)
        };
        let saved = set(Some(1), 90);
        assert_eq!(saved["data"]["settingsRevision"], "2", "{saved}");
        let cli = set(None, 91);
        assert_eq!(cli["data"]["settingsRevision"], "3", "{cli}");
        let stale = set(Some(2), 92);
        assert_eq!(stale["code"], "REVISION_MISMATCH", "{stale}");
        assert_eq!(stale["details"]["currentRevision"], "3", "{stale}");
        let got = handle(
            &broker,
            &front,
            ControlRequest::SettingsGet { section: None },
        );
        assert_eq!(got["data"]["terminal"]["cols"], 91, "{got}");
        let key = handle(
            &broker,
            &front,
            ControlRequest::ProviderKey {
                name: "nobody".to_owned(),
                key: Some("sk-x".to_owned()),
            },
        );
        assert_eq!(key["code"], "NOT_FOUND", "{key}");
        assert!(!key.to_string().contains("sk-x"), "{key}");
    }

    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let output = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .expect("git runs");
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// The window's editor, file tree and Git view through the same requests the CLI sends:
    /// the person's late keystroke lands over an agent's edit, the agent's stale edit is
    /// refused, the save writes what the person sees, and the person stages and commits it.
    #[tokio::test]
    async fn the_persons_document_files_and_git_requests() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("project");
        std::fs::create_dir(&project).expect("project");
        git(&project, &["init", "-q", "-b", "main"]);
        git(&project, &["config", "user.name", "Person"]);
        git(
            &project,
            &["config", "user.email", "person@example.invalid"],
        );
        std::fs::write(project.join("notes.txt"), "one\ntwo\n").expect("file");
        git(&project, &["add", "notes.txt"]);
        git(&project, &["commit", "-q", "-m", "first"]);
        let lomi = crate::Lomi::new(broker(&dir.path().join("data")));
        let front = Front {
            http_url: String::new(),
            show_window: None,
        };
        let workspace = lomi
            .broker
            .workspace_add("W", &project)
            .expect("workspace")
            .id;
        let ask = |request: Value| {
            let request: ControlRequest = serde_json::from_value(request).expect("a request");
            answer(&lomi, &front, request)
        };
        let tree = ask(json!({"fileList": {"workspaceId": workspace, "path": ""}})).await;
        let names: Vec<&str> = (tree["data"]["entries"].as_array().expect("entries").iter())
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert_eq!(names, ["notes.txt"], "no .git: {tree}");

        let opened =
            ask(json!({"documentOpen": {"workspaceId": workspace, "path": "notes.txt"}})).await;
        assert_eq!(opened["data"]["disk"], "same", "{opened}");
        let id: DocumentId =
            serde_json::from_value(opened["data"]["document"]["documentId"].clone()).expect("id");
        let mut feed = lomi.editor.documents().subscribe();
        lomi.editor
            .documents()
            .edit(
                &id,
                1,
                &[TextEdit {
                    start: 0,
                    end: 3,
                    text: "ONE".into(),
                }],
            )
            .expect("the agent's edit");
        let late = ask(json!({"documentEdit": {
            "documentId": id, "expectedBufferRevision": "1", "session": "window",
            "edits": [{"start": 8, "end": 8, "text": "three\n"}],
        }}))
        .await;
        assert_eq!(
            (
                late["data"]["bufferRevision"].as_str(),
                late["data"]["rebased"].as_bool()
            ),
            (Some("3"), Some(true)),
            "{late}"
        );
        let stale = lomi
            .editor
            .documents()
            .edit(
                &id,
                2,
                &[TextEdit {
                    start: 0,
                    end: 0,
                    text: "x".into(),
                }],
            )
            .expect_err("the agent's stale edit");
        assert_eq!(stale.code, ErrorCode::RevisionMismatch);
        let origins: Vec<String> = std::iter::from_fn(|| feed.try_recv().ok())
            .map(|e| json!(e)["origin"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(origins, ["agent", "person"]);
        let behind =
            ask(json!({"documentSave": {"documentId": id, "expectedBufferRevision": "2"}})).await;
        assert_eq!(behind["code"], "REVISION_MISMATCH", "{behind}");
        let saved =
            ask(json!({"documentSave": {"documentId": id, "expectedBufferRevision": "3"}})).await;
        assert_eq!(saved["status"], "ok", "{saved}");
        assert_eq!(
            std::fs::read_to_string(project.join("notes.txt")).expect("read"),
            "ONE\ntwo\nthree\n"
        );

        std::fs::write(project.join("new.txt"), "made by an agent\n").expect("file");
        let status = ask(json!({"gitStatus": {"workspaceId": workspace}})).await;
        let entries = status["data"]["entries"]
            .as_array()
            .expect("entries")
            .clone();
        assert_eq!(entries.len(), 2, "{status}");
        let untracked =
            ask(json!({"gitDiff": {"workspaceId": workspace, "path": "new.txt"}})).await;
        assert!(
            untracked["data"]["diff"]
                .as_str()
                .expect("diff")
                .contains("+made by an agent"),
            "{untracked}"
        );
        let modified =
            ask(json!({"gitDiff": {"workspaceId": workspace, "path": "notes.txt"}})).await;
        assert!(
            modified["data"]["diff"]
                .as_str()
                .expect("diff")
                .contains("+three"),
            "{modified}"
        );
        let staged =
            ask(json!({"gitStage": {"workspaceId": workspace, "paths": ["new.txt", "notes.txt"]}}))
                .await;
        assert_eq!(staged["status"], "ok", "{staged}");
        let unstaged =
            ask(json!({"gitUnstage": {"workspaceId": workspace, "paths": ["notes.txt"]}})).await;
        assert_eq!(unstaged["status"], "ok", "{unstaged}");
        let cached =
            ask(json!({"gitDiff": {"workspaceId": workspace, "path": "new.txt", "staged": true}}))
                .await;
        assert!(
            cached["data"]["diff"]
                .as_str()
                .expect("diff")
                .contains("+made by an agent")
        );
        let head = status["data"]["head"].as_str().expect("head").to_owned();
        let moved = ask(json!({"gitCommit": {"workspaceId": workspace, "message": "Add new.txt", "expectedHeadRevision": "0000000"}})).await;
        assert_eq!(moved["code"], "REVISION_MISMATCH", "{moved}");
        let committed = ask(json!({"gitCommit": {"workspaceId": workspace, "message": "Add new.txt", "expectedHeadRevision": head}})).await;
        assert_eq!(committed["status"], "ok", "{committed}");
        assert_eq!(
            git(&project, &["log", "-1", "--format=%s %an"]),
            "Add new.txt Person"
        );
        assert_eq!(
            git(&project, &["show", "--name-only", "--format=", "HEAD"]),
            "new.txt"
        );
    }
}
