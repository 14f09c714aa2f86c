//! The editor tools over the broker: open, edit and close are session bookkeeping on the shared
//! [`Documents`]; save and workspace close are operations through the broker's engine.

use lomi_broker::{Broker, Confirmation, EffectOutcome, LayoutChange, ProjectChange, to_json};
use lomi_protocol::definition::ToolCall;
use lomi_protocol::tools::editor::{
    DocumentAction, DocumentFailure, EditorCloseInput, EditorClosed, EditorDocumentView,
    EditorEditInput, EditorEdited, EditorOpenInput, EditorSaveInput, EditorSaved, PersonDocument,
    PersonEdited, TextEdit, WorkspaceCloseInput, WorkspaceClosed,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::{DocumentId, EffectState, PairingId, ProjectId, ToolError, WorkspaceId};

use crate::FilesError;
use crate::documents::{Document, Documents, SaveError, parse_revision};

/// The editor tools of one broker.
#[derive(Clone)]
pub struct ProjectEditor {
    broker: Broker,
    documents: Documents,
}

/// What a failed save settles as: a runtime IO failure leaves the file's state unknown.
fn save_failure(error: &SaveError) -> (EffectState, bool) {
    match error {
        SaveError::Files(FilesError::Io(_)) => (EffectState::Unknown, true),
        _ => (EffectState::None, false),
    }
}

impl ProjectEditor {
    pub fn new(broker: Broker) -> Self {
        ProjectEditor {
            broker,
            documents: Documents::new(),
        }
    }

    /// The shared documents (the desktop app shows and edits these).
    pub fn documents(&self) -> &Documents {
        &self.documents
    }

    /// A document the caller may use: its workspace and project must be granted.
    fn document(&self, caller: &PairingId, id: &DocumentId) -> Result<Document, ToolError> {
        let document = self.documents.get(id)?;
        self.broker
            .project_root(caller, &document.workspace_id, Some(&document.project_id))
            .map_err(|_| {
                ToolError::not_found(format!(
                    "no open document {id}; open the file with lomi_editor_open"
                ))
            })?;
        Ok(document)
    }

    /// `lomi_editor_open`.
    pub async fn open(
        &self,
        caller: &PairingId,
        input: EditorOpenInput,
    ) -> Result<EditorDocumentView, ToolError> {
        let (project_id, root) =
            self.broker
                .project_root(caller, &input.workspace_id, input.project_id.as_ref())?;
        let documents = self.documents.clone();
        let new_id = DocumentId::from_random(self.broker.random_bytes());
        tokio::task::spawn_blocking(move || {
            documents.open(&input.workspace_id, &project_id, &root, &input.path, new_id)
        })
        .await
        .map_err(|e| ToolError::internal(format!("opening the document stopped abnormally: {e}")))?
    }

    /// `lomi_editor_edit`: session bookkeeping, not an operation.
    pub fn edit(
        &self,
        caller: &PairingId,
        input: &EditorEditInput,
    ) -> Result<EditorEdited, ToolError> {
        let expected = parse_revision(&input.expected_buffer_revision)?;
        self.document(caller, &input.document_id)?;
        let document = self
            .documents
            .edit(&input.document_id, expected, &input.edits)?;
        Ok(EditorEdited {
            document_id: input.document_id.clone(),
            buffer_revision: document.buffer_revision.to_string(),
            dirty: document.dirty(),
            length: document.text.chars().count() as u64,
        })
    }

    /// `lomi_editor_close`: session bookkeeping, not an operation.
    pub fn close(
        &self,
        caller: &PairingId,
        input: &EditorCloseInput,
    ) -> Result<EditorClosed, ToolError> {
        self.document(caller, &input.document_id)?;
        let discarded = self
            .documents
            .close(&input.document_id, input.discard.unwrap_or(false))?;
        Ok(EditorClosed {
            document_id: input.document_id.clone(),
            discarded,
        })
    }

    /// `lomi_editor_save`: an operation, checked by the disk revision under the project's permit.
    pub async fn save(
        &self,
        caller: &PairingId,
        input: EditorSaveInput,
    ) -> Result<OperationView, ToolError> {
        let expected = parse_revision(&input.expected_buffer_revision)?;
        let workspace = self
            .broker
            .retry_epoch_workspace(caller, &input.retry_epoch)?;
        let project = self
            .documents
            .project_of(&input.document_id)
            .ok_or_else(|| {
                ToolError::not_found(format!(
                    "no open document {}; open the file with lomi_editor_open",
                    input.document_id
                ))
            })?;
        let request = ProjectChange {
            call: ToolCall::of::<lomi_protocol::tools::editor::EditorSaveTool>(&input)?,
            workspace: &workspace,
            project: Some(&project),
            retry_epoch: &input.retry_epoch,
            request_key: &input.request_key,
            revision: Some(input.expected_buffer_revision.clone()),
        };
        let documents = self.documents.clone();
        let id = input.document_id.clone();
        self.broker
            .change_project(
                caller,
                request,
                async {
                    let document = self.document(caller, &input.document_id)?;
                    if document.workspace_id != workspace {
                        return Err(ToolError::invalid(format!(
                            "document {} is not in this retry epoch's workspace {workspace}",
                            input.document_id
                        )));
                    }
                    Ok(document.path)
                },
                move |_root, path, _context| async move {
                    let saving = id.clone();
                    match lomi_broker::off_thread(move || documents.save(&saving, expected)).await {
                        Ok(written) => EffectOutcome::succeeded(&EditorSaved {
                            document_id: id,
                            path,
                            buffer_revision: expected.to_string(),
                            disk_revision: written.disk_revision,
                            size: written.size,
                        }),
                        Err(error) => match save_failure(&error) {
                            (effect, true) => EffectOutcome::Unknown {
                                effect,
                                message: format!(
                                    "the file system failed mid-save: {}",
                                    error.tool_error().message
                                ),
                            },
                            (effect, false) => EffectOutcome::Failed {
                                effect,
                                error: error.tool_error(),
                            },
                        },
                    }
                },
            )
            .await
    }

    /// The person opens a project file in the editor: the same document an agent opening the
    /// path gets, with the file's state on disk.
    pub async fn open_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
        path: String,
    ) -> Result<PersonDocument, ToolError> {
        let (project_id, root) = self.broker.project_root_for_person(workspace, project)?;
        let documents = self.documents.clone();
        let new_id = DocumentId::from_random(self.broker.random_bytes());
        let workspace = workspace.clone();
        lomi_broker::off_thread(move || {
            let view = documents.open(&workspace, &project_id, &root, &path, new_id)?;
            let disk = documents.disk_state(&view.document_id)?;
            Ok(PersonDocument {
                workspace_id: workspace,
                project_id,
                document: view,
                disk,
            })
        })
        .await
    }

    /// An open document as the person's window shows it, with the file's state on disk.
    pub async fn document_for_person(&self, id: &DocumentId) -> Result<PersonDocument, ToolError> {
        let documents = self.documents.clone();
        let id = id.clone();
        lomi_broker::off_thread(move || {
            let document = documents.get(&id)?;
            Ok(PersonDocument {
                disk: documents.disk_state(&id)?,
                workspace_id: document.workspace_id.clone(),
                project_id: document.project_id.clone(),
                document: document.view(&id),
            })
        })
        .await
    }

    /// The person's edit (`expectedBufferRevision` is the text it was made on): see
    /// [`Documents::edit_as_person`]. Not an operation: the person's own keystrokes.
    pub fn edit_for_person(
        &self,
        id: &DocumentId,
        base: &str,
        edits: &[TextEdit],
        session: Option<&str>,
    ) -> Result<PersonEdited, ToolError> {
        let base = parse_revision(base)?;
        self.documents.edit_as_person(id, base, edits, session)
    }

    /// The person saves the text at `expected` (what the window shows), under the project's
    /// permit; `overwrite` is "keep mine" after the file changed on disk.
    pub async fn save_for_person(
        &self,
        id: &DocumentId,
        expected: &str,
        overwrite: bool,
    ) -> Result<EditorSaved, ToolError> {
        let expected = parse_revision(expected)?;
        let document = self.documents.get(id)?;
        let _permit = self.broker.hold_project(&document.project_id).await;
        let documents = self.documents.clone();
        let saving = id.clone();
        let written =
            lomi_broker::off_thread(move || documents.save_over(&saving, expected, overwrite))
                .await
                .map_err(|e| e.tool_error())?;
        Ok(EditorSaved {
            document_id: id.clone(),
            path: document.path,
            buffer_revision: expected.to_string(),
            disk_revision: written.disk_revision,
            size: written.size,
        })
    }

    /// The person's "reload" after the file changed on disk (their unsaved edits are dropped).
    pub async fn reload_for_person(&self, id: &DocumentId) -> Result<PersonEdited, ToolError> {
        let document = self.documents.get(id)?;
        let _permit = self.broker.hold_project(&document.project_id).await;
        let documents = self.documents.clone();
        let id = id.clone();
        lomi_broker::off_thread(move || documents.reload(&id)).await
    }

    /// `lomi_workspace_close`: saves or discards the workspace's documents as named, then closes
    /// them all. A failed save closes nothing. Terminal panels are not closed here.
    pub async fn workspace_close(
        &self,
        caller: &PairingId,
        input: WorkspaceCloseInput,
    ) -> Result<OperationView, ToolError> {
        let named = input.documents.clone().unwrap_or_default();
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = named.iter().find(|d| !seen.insert(&d.document_id)) {
            return Err(ToolError::invalid(format!(
                "documents names {} twice",
                twice.document_id
            )));
        }
        let workspace_id = input.workspace_id.clone();
        let change = LayoutChange::of(
            ToolCall::of::<lomi_protocol::tools::editor::WorkspaceCloseTool>(&input)?,
            &input,
            None,
        )?;
        let documents = self.documents.clone();
        self.broker
            .change_layout(
                caller,
                change,
                Confirmation::Policy,
                async { Ok(()) },
                move |(), _context| {
                    lomi_broker::off_thread(move || {
                        close_documents(&documents, &workspace_id, &named)
                    })
                },
            )
            .await
    }
}

/// The effect of a workspace close, run off the async threads (saves are file IO).
fn close_documents(
    documents: &Documents,
    workspace_id: &lomi_protocol::WorkspaceId,
    named: &[lomi_protocol::tools::editor::DocumentDisposition],
) -> EffectOutcome {
    let open = documents.of_workspace(workspace_id);
    if let Some(stranger) = named
        .iter()
        .find(|n| !open.iter().any(|(id, _)| id == &n.document_id))
    {
        return EffectOutcome::Failed {
            effect: EffectState::None,
            error: ToolError::invalid(format!(
                "{} is not an open document of workspace {workspace_id}",
                stranger.document_id
            )),
        };
    }
    let action = |id: &DocumentId| {
        named
            .iter()
            .find(|n| &n.document_id == id)
            .map(|n| n.action)
    };
    let unnamed: Vec<&(DocumentId, Document)> = open
        .iter()
        .filter(|(id, d)| d.dirty() && action(id).is_none())
        .collect();
    if !unnamed.is_empty() {
        let dirty: Vec<_> = (unnamed.iter())
            .map(|(id, d)| serde_json::json!({ "documentId": id, "path": d.path }))
            .collect();
        let paths: Vec<&str> = unnamed.iter().map(|(_, d)| d.path.as_str()).collect();
        return EffectOutcome::Failed {
            effect: EffectState::None,
            error: ToolError::invalid(format!(
                "these documents have unsaved changes and were not named with save or discard: {}",
                paths.join(", ")
            ))
            .with_details(serde_json::json!({ "dirty": dirty })),
        };
    }
    let mut result = WorkspaceClosed {
        workspace_id: workspace_id.clone(),
        closed: false,
        saved: Vec::new(),
        discarded: Vec::new(),
        failed: Vec::new(),
        closed_documents: Vec::new(),
    };
    let mut unknown = None;
    for (id, document) in &open {
        if action(id) != Some(DocumentAction::Save) || !document.dirty() {
            continue;
        }
        match documents.save(id, document.buffer_revision) {
            Ok(_) => result.saved.push(id.clone()),
            Err(error) => {
                if save_failure(&error).1 {
                    unknown = Some(id.clone());
                }
                let error = error.tool_error();
                result.failed.push(DocumentFailure {
                    document_id: id.clone(),
                    path: document.path.clone(),
                    code: error.code,
                    message: error.message,
                });
            }
        }
    }
    if let Some(first) = result.failed.first() {
        let effect = if unknown.is_some() {
            EffectState::Unknown
        } else if result.saved.is_empty() {
            EffectState::None
        } else {
            EffectState::Partial
        };
        let names: Vec<String> = result
            .failed
            .iter()
            .map(|f| format!("{} ({})", f.path, f.message))
            .collect();
        let saved = result.saved.len();
        let error = ToolError::new(
            first.code,
            format!(
                "not closed: {} document(s) could not be saved: {}; {saved} saved",
                result.failed.len(),
                names.join("; ")
            ),
        );
        // The message names every failure; the details add the whole result when it can be
        // written (see `to_json`).
        let error = match to_json(&result) {
            Ok(details) => error.with_details(details),
            Err(_) => error,
        };
        return EffectOutcome::Failed { effect, error };
    }
    for (id, _) in &open {
        // Whatever is dropped at this moment is listed: the edits named for discard, and an
        // edit made (by the person, say) after the document was saved above. An error means
        // the document was closed meanwhile (by the person): nothing is left to close.
        if let Ok(dropped) = documents.close(id, true) {
            if dropped {
                result.discarded.push(id.clone());
            }
            result.closed_documents.push(id.clone());
        }
    }
    result.closed = true;
    EffectOutcome::succeeded(&result)
}
