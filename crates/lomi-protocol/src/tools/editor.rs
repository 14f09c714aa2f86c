//! Editor document tools: open, edit, save and close the shared documents the person also sees,
//! with `bufferRevision` for the text and `diskRevision` for the file; and workspace close with
//! its dirty-document guard.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, Subject, ToolDef};
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};

use crate::ids::{DocumentId, DomainRevision, ProjectId, RequestKey, RetryEpoch, WorkspaceId};

/// `lomi_editor_open` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorOpenInput {
    pub workspace_id: WorkspaceId,
    // Optional when the workspace has one project.
    pub project_id: Option<ProjectId>,
    // Relative to the project root; never absolute, never `..`. Opening a path that is already
    // open returns the same document.
    pub path: String,
}

/// An open document as it stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorDocumentView {
    pub document_id: DocumentId,
    pub path: String,
    /// Decimal counter of the text; every edit (yours or the person's) raises it.
    pub buffer_revision: String,
    /// SHA-256 of the file's bytes when it was opened or last saved.
    pub disk_revision: String,
    /// utf8 or utf8_bom (the BOM is not part of `text`; saving writes it back).
    pub encoding: String,
    /// lf, crlf, cr, mixed or none, as found at open; `text` keeps them exactly.
    pub line_endings: String,
    /// True when the text differs from what was opened or last saved.
    pub dirty: bool,
    pub text: String,
}

/// Characters start..end become text; a CRLF counts as two.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TextEdit {
    pub start: u64,
    pub end: u64,
    pub text: String,
}

/// `lomi_editor_edit` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorEditInput {
    pub document_id: DocumentId,
    // The `bufferRevision` you last saw; anything else is REVISION_MISMATCH with the current one.
    pub expected_buffer_revision: String,
    // 1 to 1,000 non-overlapping edits against the same text, applied as one change; at most
    // 1 MiB of inserted text in all.
    pub edits: Vec<TextEdit>,
}

/// `lomi_editor_edit` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorEdited {
    pub document_id: DocumentId,
    pub buffer_revision: String,
    pub dirty: bool,
    /// Length of the new text in characters.
    pub length: u64,
}

/// `lomi_editor_save` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorSaveInput {
    pub document_id: DocumentId,
    // The `bufferRevision` you want written; a newer edit is REVISION_MISMATCH.
    pub expected_buffer_revision: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of a save.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorSaved {
    pub document_id: DocumentId,
    pub path: String,
    pub buffer_revision: String,
    /// The file's new disk revision.
    pub disk_revision: String,
    pub size: u64,
}

/// `lomi_editor_close` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorCloseInput {
    pub document_id: DocumentId,
    // Drop unsaved changes. Without it a dirty document is refused (INVALID_ARGUMENT).
    pub discard: Option<bool>,
}

/// `lomi_editor_close` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorClosed {
    pub document_id: DocumentId,
    /// True when unsaved changes were dropped.
    pub discarded: bool,
}

/// What workspace close does with one open document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DocumentAction {
    Save,
    Discard,
}

// One document named in a workspace close.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentDisposition {
    pub document_id: DocumentId,
    // save or discard.
    pub action: DocumentAction,
}

/// `lomi_workspace_close` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceCloseInput {
    pub workspace_id: WorkspaceId,
    // The workspace's current domainRevision.
    pub expected_revision: DomainRevision,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
    // What to do with each open document; every dirty one must be named.
    pub documents: Option<Vec<DocumentDisposition>>,
}

/// A document whose save failed during a workspace close.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentFailure {
    pub document_id: DocumentId,
    pub path: String,
    pub code: crate::ErrorCode,
    pub message: String,
}

/// The result of a workspace close. On failure the receipt's `result.details` has this shape
/// with `closed: false`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceClosed {
    pub workspace_id: WorkspaceId,
    /// True when the workspace's documents were closed.
    pub closed: bool,
    pub saved: Vec<DocumentId>,
    pub discarded: Vec<DocumentId>,
    pub failed: Vec<DocumentFailure>,
    /// Every document that was closed (saved, discarded or clean).
    pub closed_documents: Vec<DocumentId>,
}

/// Who made a change to a shared document: an agent (`lomi_editor_edit`), the person (the
/// window or `lomi document edit`), or the file on disk (the person's reload).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeOrigin {
    Agent,
    Person,
    Disk,
}

/// What happened to an open document: the person's change feed, one event per change in
/// `bufferRevision` order, so the window shows an agent's edit as it is made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum DocumentEvent {
    /// The text changed to `bufferRevision` by `edits` (character offsets of the text before).
    Changed {
        document_id: DocumentId,
        buffer_revision: String,
        edits: Vec<TextEdit>,
        origin: ChangeOrigin,
        /// The person's editor that made it (what it sent as `session`).
        session: Option<String>,
        dirty: bool,
    },
    /// The text at `bufferRevision` was written; `dirty` if it changed since.
    Saved {
        document_id: DocumentId,
        buffer_revision: String,
        disk_revision: String,
        dirty: bool,
    },
    Closed {
        document_id: DocumentId,
    },
}

impl DocumentEvent {
    pub fn document_id(&self) -> &DocumentId {
        match self {
            DocumentEvent::Changed { document_id, .. }
            | DocumentEvent::Saved { document_id, .. }
            | DocumentEvent::Closed { document_id } => document_id,
        }
    }
}

/// What the window's document feed sends: an event of the document it follows, or that it fell
/// behind the feed (then it reads the document again).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum DocumentFeedMessage {
    Event(DocumentEvent),
    Lagged(FeedLagged),
}

/// `{"kind": "lagged"}`: the window fell behind the document feed and missed events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FeedLagged {
    Lagged,
}

/// The file behind a document compared with the bytes it was opened with or last saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiskState {
    Same,
    /// Someone else wrote the file: saving would overwrite their bytes.
    Changed,
    Deleted,
}

/// A document as the person's window opens it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersonDocument {
    pub workspace_id: WorkspaceId,
    pub project_id: ProjectId,
    pub document: EditorDocumentView,
    pub disk: DiskState,
}

/// The person's edit as it landed: moved over the edits made since its base, if any.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersonEdited {
    pub document_id: DocumentId,
    pub buffer_revision: String,
    /// The edits as applied to the text before `bufferRevision`.
    pub edits: Vec<TextEdit>,
    /// True when edits were made since the base, so the person's edit was moved over them.
    pub rebased: bool,
    pub dirty: bool,
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_editor_open`
pub struct EditorOpenTool;

impl ToolDef for EditorOpenTool {
    const TOOL: Tool = Tool::EditorOpen;
    const NAME: &'static str = "lomi_editor_open";
    const FAMILY: Option<Family> = Some(Family::Editor);
    const LABEL: &'static str = "Open documents";
    const TITLE: &'static str = "Open an editor document";
    const KIND: ToolKind = ToolKind::Control;
    // It changes no file, but it opens a document the person sees in the window.
    const ANNOTATIONS: Annotations = Annotations {
        read_only_hint: false,
        ..READ
    };
    const DESCRIPTION: &'static str = "Opens a UTF-8 file as the editor document the person also sees (the same one if \
        open): its documentId, bufferRevision and text.";
    type Input = EditorOpenInput;
    type Output = EditorDocumentView;

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

/// `lomi_editor_edit`
pub struct EditorEditTool;

impl ToolDef for EditorEditTool {
    const TOOL: Tool = Tool::EditorEdit;
    const NAME: &'static str = "lomi_editor_edit";
    const FAMILY: Option<Family> = Some(Family::Editor);
    const LABEL: &'static str = "Edit documents";
    const TITLE: &'static str = "Edit an editor document";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = Annotations {
        read_only_hint: false,
        idempotent_hint: false,
        ..READ
    };
    const DESCRIPTION: &'static str = "Replaces character ranges (start..end, Unicode scalar values) of a document's \
        text as one change; save writes the file.";
    type Input = EditorEditInput;
    type Output = EditorEdited;
}

/// `lomi_editor_save`
pub struct EditorSaveTool;

impl ToolDef for EditorSaveTool {
    const TOOL: Tool = Tool::EditorSave;
    const NAME: &'static str = "lomi_editor_save";
    const FAMILY: Option<Family> = Some(Family::Editor);
    const LABEL: &'static str = "Save documents to disk";
    const TITLE: &'static str = "Save an editor document";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Writes a document to its file, refused if the file changed on disk since.";
    type Input = EditorSaveInput;
    type Output = EditorSaved;

    fn preview(input: &Self::Input) -> Preview {
        Preview::SaveDocument {
            document: input.document_id.clone(),
        }
    }
}

/// `lomi_editor_close`
pub struct EditorCloseTool;

impl ToolDef for EditorCloseTool {
    const TOOL: Tool = Tool::EditorClose;
    const NAME: &'static str = "lomi_editor_close";
    const FAMILY: Option<Family> = Some(Family::Editor);
    const LABEL: &'static str = "Close documents";
    const TITLE: &'static str = "Close an editor document";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = Annotations {
        read_only_hint: false,
        destructive_hint: true,
        ..READ
    };
    const DESCRIPTION: &'static str = "Closes a document; unsaved changes need discard: true.";
    type Input = EditorCloseInput;
    type Output = EditorClosed;
}

/// `lomi_workspace_close`
pub struct WorkspaceCloseTool;

impl ToolDef for WorkspaceCloseTool {
    const TOOL: Tool = Tool::WorkspaceClose;
    const NAME: &'static str = "lomi_workspace_close";
    const FAMILY: Option<Family> = Some(Family::Workspace);
    const LABEL: &'static str = "Close a workspace";
    const TITLE: &'static str = "Close a workspace's documents";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Saves or discards each open document as documents names them (every unsaved \
        one), then closes them all.";
    type Input = WorkspaceCloseInput;
    type Output = WorkspaceClosed;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __editor_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            EditorOpen = $crate::tools::editor::EditorOpenTool => editor as plain,
            EditorEdit = $crate::tools::editor::EditorEditTool => editor as plain,
            EditorSave = $crate::tools::editor::EditorSaveTool => editor as plain,
            EditorClose = $crate::tools::editor::EditorCloseTool => editor as plain,
            WorkspaceClose = $crate::tools::editor::WorkspaceCloseTool => editor as plain,
        ]);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(message: DocumentFeedMessage) -> serde_json::Value {
        serde_json::to_value(message).expect("a feed message serialises")
    }

    /// The document feed's messages keep the JSON the window read before they were typed.
    #[test]
    fn the_document_feed_sends_the_same_json() {
        let lagged = wire(DocumentFeedMessage::Lagged(FeedLagged::Lagged));
        assert_eq!(lagged, serde_json::json!({"kind": "lagged"}));
        let id = DocumentId::from_random([0; 16]);
        let closed = wire(DocumentFeedMessage::Event(DocumentEvent::Closed {
            document_id: id.clone(),
        }));
        assert_eq!(
            closed,
            serde_json::json!({"kind": "closed", "documentId": id.as_str()})
        );
    }
}
