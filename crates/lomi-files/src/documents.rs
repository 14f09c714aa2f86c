//! `Documents`: the editor documents open in the broker process, keyed by `DocumentId` — the same
//! buffers the desktop app shows. Plain data: no MCP, no receipts; saving goes through
//! [`crate::editor`], which runs it as an operation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use lomi_protocol::tools::editor::{EditorDocumentView, TextEdit};
use lomi_protocol::{DocumentId, ErrorCode, ProjectId, ToolError, WorkspaceId};

use crate::{Encoding, Expected, FileWritten, FilesError, LineEndings, ProjectRoot};

const BOM: &[u8] = b"\xEF\xBB\xBF";
/// Most inserted text one edit call may carry.
pub const MAX_EDIT_TEXT: usize = 1024 * 1024;
/// Most replacements in one edit call.
pub const MAX_EDITS: usize = 1000;

/// One open document.
#[derive(Debug, Clone)]
pub struct Document {
    pub workspace_id: WorkspaceId,
    pub project_id: ProjectId,
    pub root: PathBuf,
    pub path: String,
    /// The text without the BOM, line endings as in the file.
    pub text: String,
    pub bom: bool,
    pub line_endings: LineEndings,
    pub buffer_revision: u64,
    /// The disk revision at open or last save: what a save expects to find.
    pub disk_revision: String,
    /// The text as opened or last saved; the document is dirty when `text` differs.
    pub saved_text: String,
}

impl Document {
    pub fn dirty(&self) -> bool {
        self.text != self.saved_text
    }

    /// The file's bytes for this text: the BOM back in front, line endings untouched.
    pub fn bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.text.len() + BOM.len());
        if self.bom {
            bytes.extend_from_slice(BOM);
        }
        bytes.extend_from_slice(self.text.as_bytes());
        bytes
    }

    pub fn view(&self, id: &DocumentId) -> EditorDocumentView {
        EditorDocumentView {
            document_id: id.clone(),
            path: self.path.clone(),
            buffer_revision: self.buffer_revision.to_string(),
            disk_revision: self.disk_revision.clone(),
            encoding: if self.bom {
                Encoding::Utf8Bom
            } else {
                Encoding::Utf8
            }
            .as_str()
            .to_owned(),
            line_endings: self.line_endings.as_str().to_owned(),
            dirty: self.dirty(),
            text: self.text.clone(),
        }
    }
}

/// The registry of open documents. Cheap to clone; clones share the documents.
#[derive(Clone, Default)]
pub struct Documents {
    inner: Arc<Mutex<HashMap<DocumentId, Document>>>,
    /// The project of every document opened here, kept after it closes: a save's receipt key
    /// names the project, so a retry of a save after its document closed still finds its
    /// receipt. One entry per document, for the broker's lifetime.
    projects: Arc<Mutex<HashMap<DocumentId, ProjectId>>>,
}

fn files_error(e: FilesError) -> ToolError {
    e.into()
}

/// A decimal `bufferRevision` as given by a client.
pub fn parse_revision(value: &str) -> Result<u64, ToolError> {
    value.parse::<u64>().map_err(|_| {
        ToolError::invalid(format!(
            "expectedBufferRevision {value:?} is not a decimal revision; use the bufferRevision of lomi_editor_open or lomi_editor_edit"
        ))
    })
}

fn mismatch(current: u64) -> ToolError {
    ToolError::new(
        ErrorCode::RevisionMismatch,
        format!(
            "the document changed (it is at bufferRevision {current}); open it again to see the text"
        ),
    )
    .with_details(serde_json::json!({ "currentRevision": current.to_string() }))
}

fn unknown(id: &DocumentId) -> ToolError {
    ToolError::not_found(format!(
        "no open document {id}; open the file with lomi_editor_open"
    ))
}

/// `edits` applied to `text` as one change, or why not.
fn apply_edits(text: &str, edits: &[TextEdit]) -> Result<String, ToolError> {
    if edits.is_empty() || edits.len() > MAX_EDITS {
        return Err(ToolError::invalid(format!("give 1 to {MAX_EDITS} edits")));
    }
    let inserted: usize = edits.iter().map(|e| e.text.len()).sum();
    if inserted > MAX_EDIT_TEXT {
        return Err(ToolError::invalid(format!(
            "the edits insert {inserted} bytes of text; at most {MAX_EDIT_TEXT} per call"
        )));
    }
    // Character offset → byte offset, with one past the end.
    let mut offsets: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    offsets.push(text.len());
    let length = (offsets.len() - 1) as u64;
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.start, e.end));
    let mut previous_end = 0u64;
    for (n, edit) in sorted.iter().enumerate() {
        if edit.start > edit.end || edit.end > length {
            return Err(ToolError::invalid(format!(
                "edit {}..{} is outside the text (0..{length} characters) or reversed",
                edit.start, edit.end
            )));
        }
        if n > 0 && edit.start < previous_end {
            return Err(ToolError::invalid(format!(
                "edit {}..{} overlaps another edit; edits must not overlap",
                edit.start, edit.end
            )));
        }
        previous_end = edit.end;
    }
    let mut out = String::with_capacity(text.len() + inserted);
    let mut at = 0usize;
    for edit in sorted {
        let start = offsets[edit.start as usize];
        let end = offsets[edit.end as usize];
        out.push_str(&text[at..start]);
        out.push_str(&edit.text);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

impl Documents {
    pub fn new() -> Documents {
        Documents::default()
    }

    fn map(&self) -> MutexGuard<'_, HashMap<DocumentId, Document>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens `path` of the project at `root`, or returns the document already open for it.
    /// `new_id` names a new document. Only UTF-8 text (with or without BOM) opens.
    pub fn open(
        &self,
        workspace_id: &WorkspaceId,
        project_id: &ProjectId,
        root: &Path,
        path: &str,
        new_id: DocumentId,
    ) -> Result<EditorDocumentView, ToolError> {
        if let Some(view) = self.find(workspace_id, project_id, path) {
            return Ok(view);
        }
        let project = ProjectRoot::open(root).map_err(files_error)?;
        let max = project.limits().max_write_bytes;
        let read = project.read(path, None, max).map_err(files_error)?;
        if read.truncated {
            return Err(ToolError::new(
                ErrorCode::Unsupported,
                format!("{path} is larger than {max} bytes; read it with lomi_file_read instead"),
            ));
        }
        let bom = match read.encoding {
            Encoding::Utf8 => false,
            Encoding::Utf8Bom => true,
            other => {
                return Err(ToolError::new(
                    ErrorCode::Unsupported,
                    format!(
                        "{path} is {} and only UTF-8 text opens in the editor; use lomi_file_read and lomi_file_write for its bytes",
                        other.as_str()
                    ),
                ));
            }
        };
        let body = if bom {
            &read.bytes[BOM.len()..]
        } else {
            &read.bytes[..]
        };
        let text = String::from_utf8(body.to_vec()).map_err(|_| {
            ToolError::new(ErrorCode::Unsupported, format!("{path} is not valid UTF-8"))
        })?;
        let document = Document {
            workspace_id: workspace_id.clone(),
            project_id: project_id.clone(),
            root: root.to_path_buf(),
            path: path.to_owned(),
            saved_text: text.clone(),
            text,
            bom,
            line_endings: read.line_endings,
            buffer_revision: 1,
            disk_revision: read.disk_revision,
        };
        let mut map = self.map();
        // Another open of the same path may have won while the file was read.
        if let Some((id, existing)) = map.iter().find(|(_, d)| {
            &d.workspace_id == workspace_id && &d.project_id == project_id && d.path == path
        }) {
            return Ok(existing.view(id));
        }
        let view = document.view(&new_id);
        (self.projects.lock().unwrap_or_else(|e| e.into_inner()))
            .insert(new_id.clone(), project_id.clone());
        map.insert(new_id, document);
        Ok(view)
    }

    fn find(
        &self,
        workspace_id: &WorkspaceId,
        project_id: &ProjectId,
        path: &str,
    ) -> Option<EditorDocumentView> {
        self.map()
            .iter()
            .find(|(_, d)| {
                &d.workspace_id == workspace_id && &d.project_id == project_id && d.path == path
            })
            .map(|(id, d)| d.view(id))
    }

    /// The project of a document opened here, open or closed since.
    pub fn project_of(&self, id: &DocumentId) -> Option<ProjectId> {
        let projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        projects.get(id).cloned()
    }

    /// A copy of one document.
    pub fn get(&self, id: &DocumentId) -> Result<Document, ToolError> {
        self.map().get(id).cloned().ok_or_else(|| unknown(id))
    }

    /// The open documents of a workspace, sorted by id.
    pub fn of_workspace(&self, workspace_id: &WorkspaceId) -> Vec<(DocumentId, Document)> {
        let mut documents: Vec<_> = self
            .map()
            .iter()
            .filter(|(_, d)| &d.workspace_id == workspace_id)
            .map(|(id, d)| (id.clone(), d.clone()))
            .collect();
        documents.sort_by(|a, b| a.0.cmp(&b.0));
        documents
    }

    /// An agent's edit, compared by buffer revision.
    pub fn edit(
        &self,
        id: &DocumentId,
        expected: u64,
        edits: &[TextEdit],
    ) -> Result<Document, ToolError> {
        self.change(id, Some(expected), edits)
    }

    /// The person's edit (from the desktop app): always against the current text, and it raises
    /// the revision so an agent's edit made against the older text is refused.
    pub fn edit_as_person(
        &self,
        id: &DocumentId,
        edits: &[TextEdit],
    ) -> Result<Document, ToolError> {
        self.change(id, None, edits)
    }

    fn change(
        &self,
        id: &DocumentId,
        expected: Option<u64>,
        edits: &[TextEdit],
    ) -> Result<Document, ToolError> {
        let mut map = self.map();
        let document = map.get_mut(id).ok_or_else(|| unknown(id))?;
        if let Some(expected) = expected
            && expected != document.buffer_revision
        {
            return Err(mismatch(document.buffer_revision));
        }
        document.text = apply_edits(&document.text, edits)?;
        document.buffer_revision += 1;
        Ok(document.clone())
    }

    /// Writes the document at buffer revision `expected` to its file, expecting the disk
    /// revision of its open or last save. Blocking (file IO): run it off the async threads.
    pub fn save(&self, id: &DocumentId, expected: u64) -> Result<FileWritten, SaveError> {
        let snapshot = self.get(id).map_err(SaveError::Refused)?;
        if snapshot.buffer_revision != expected {
            return Err(SaveError::Refused(mismatch(snapshot.buffer_revision)));
        }
        let root = ProjectRoot::open(&snapshot.root).map_err(SaveError::Files)?;
        let written = root
            .write(
                &snapshot.path,
                &snapshot.bytes(),
                Expected::Revision(snapshot.disk_revision.clone()),
            )
            .map_err(SaveError::Files)?;
        if let Some(document) = self.map().get_mut(id) {
            document.disk_revision = written.disk_revision.clone();
            // A person's edit made during the write stays unsaved (dirty).
            document.saved_text = snapshot.text;
        }
        Ok(written)
    }

    /// Closes a document; a dirty one only with `discard`. Returns whether changes were dropped.
    pub fn close(&self, id: &DocumentId, discard: bool) -> Result<bool, ToolError> {
        let mut map = self.map();
        let document = map.get(id).ok_or_else(|| unknown(id))?;
        let dirty = document.dirty();
        if dirty && !discard {
            return Err(ToolError::invalid(format!(
                "{} has unsaved changes; save it, or close with discard: true to drop them",
                document.path
            )));
        }
        map.remove(id);
        Ok(dirty)
    }
}

/// Why a save did not write.
#[derive(Debug)]
pub enum SaveError {
    /// Refused before touching the file (unknown document, newer buffer revision).
    Refused(ToolError),
    /// The files runtime refused or failed (a changed file is `RevisionMismatch`).
    Files(FilesError),
}

impl SaveError {
    pub fn tool_error(&self) -> ToolError {
        match self {
            SaveError::Refused(error) => error.clone(),
            SaveError::Files(error) => files_error(error.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(start: u64, end: u64, text: &str) -> TextEdit {
        TextEdit {
            start,
            end,
            text: text.to_owned(),
        }
    }

    #[test]
    fn applies_edits_by_character_offsets() {
        let cases: &[(&str, Vec<TextEdit>, Result<&str, ()>)] = &[
            ("héllo\r\n", vec![edit(1, 2, "e")], Ok("hello\r\n")),
            ("abc", vec![edit(3, 3, "d"), edit(0, 0, ">")], Ok(">abcd")),
            ("abc", vec![edit(0, 2, ""), edit(1, 3, "")], Err(())),
            ("abc", vec![edit(2, 4, "")], Err(())),
            ("abc", vec![edit(2, 1, "")], Err(())),
            ("abc", vec![], Err(())),
        ];
        for (text, edits, want) in cases {
            let got = apply_edits(text, edits).map_err(|_| ());
            assert_eq!(
                got.as_deref(),
                want.as_ref().map(|s| *s),
                "{text:?} {edits:?}"
            );
        }
    }
}
