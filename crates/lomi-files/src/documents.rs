//! `Documents`: the editor documents open in the broker process, keyed by `DocumentId` — the same
//! buffers the desktop app shows. Plain data: no MCP, no receipts; saving goes through
//! [`crate::editor`], which runs it as an operation.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use lomi_protocol::tools::editor::{
    ChangeOrigin, DiskState, DocumentEvent, EditorDocumentView, PersonEdited, TextEdit,
};
use lomi_protocol::{DocumentId, ErrorCode, ProjectId, ToolError, WorkspaceId};

use crate::{Encoding, Expected, FileWritten, FilesError, LineEndings, ProjectRoot};

const BOM: &[u8] = b"\xEF\xBB\xBF";
/// Most inserted text one edit call may carry.
pub const MAX_EDIT_TEXT: usize = 1024 * 1024;
/// Most replacements in one edit call.
pub const MAX_EDITS: usize = 1000;
/// How many changes of a document are kept to move the person's late edits over: a window
/// more than this many changes behind opens the document again.
pub const KEPT_CHANGES: usize = 4096;
/// How many document events wait for a slow follower before it must read the documents again.
const EVENTS_WAITING: usize = 1024;

/// One change of a document's text: from `revision - 1` to `revision`.
#[derive(Debug, Clone)]
struct Logged {
    revision: u64,
    edits: Vec<TextEdit>,
}

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
#[derive(Clone)]
pub struct Documents {
    inner: Arc<Mutex<HashMap<DocumentId, Document>>>,
    /// Each open document's latest changes (at most [`KEPT_CHANGES`]), oldest first. Locked
    /// after `inner`, never before.
    changes: Arc<Mutex<HashMap<DocumentId, VecDeque<Logged>>>>,
    /// Every change, save and close, for the person's window.
    events: tokio::sync::broadcast::Sender<DocumentEvent>,
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

/// Refuses edits that are not one valid change of a text of `length` characters.
fn check_edits(edits: &[TextEdit], length: u64) -> Result<(), ToolError> {
    if edits.is_empty() || edits.len() > MAX_EDITS {
        return Err(ToolError::invalid(format!("give 1 to {MAX_EDITS} edits")));
    }
    let inserted: usize = edits.iter().map(|e| e.text.len()).sum();
    if inserted > MAX_EDIT_TEXT {
        return Err(ToolError::invalid(format!(
            "the edits insert {inserted} bytes of text; at most {MAX_EDIT_TEXT} per call"
        )));
    }
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
    Ok(())
}

/// `edits` applied to `text` as one change, or why not.
pub(crate) fn apply_edits(text: &str, edits: &[TextEdit]) -> Result<String, ToolError> {
    // Character offset → byte offset, with one past the end.
    let mut offsets: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    offsets.push(text.len());
    let length = (offsets.len() - 1) as u64;
    check_edits(edits, length)?;
    let inserted: usize = edits.iter().map(|e| e.text.len()).sum();
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.start, e.end));
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

impl Default for Documents {
    fn default() -> Documents {
        Documents {
            inner: Arc::default(),
            changes: Arc::default(),
            events: tokio::sync::broadcast::channel(EVENTS_WAITING).0,
            projects: Arc::default(),
        }
    }
}

impl Documents {
    pub fn new() -> Documents {
        Documents::default()
    }

    /// Every document event from now on (the window's feed). A follower that falls more than
    /// a thousand events behind is told it lagged and reads the documents again.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<DocumentEvent> {
        self.events.subscribe()
    }

    fn publish(&self, event: DocumentEvent) {
        // Nobody following (no window) is not an error: the event is for whoever follows.
        if self.events.receiver_count() > 0 {
            self.events.send(event).ok();
        }
    }

    fn changes(&self) -> MutexGuard<'_, HashMap<DocumentId, VecDeque<Logged>>> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner())
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
        let mut map = self.map();
        let document = map.get_mut(id).ok_or_else(|| unknown(id))?;
        if expected != document.buffer_revision {
            return Err(mismatch(document.buffer_revision));
        }
        document.text = apply_edits(&document.text, edits)?;
        document.buffer_revision += 1;
        let document = document.clone();
        self.record(&document, id, edits.to_vec(), ChangeOrigin::Agent, None);
        drop(map);
        Ok(document)
    }

    /// The person's edit, made against the text at `base`. Never refused for being late: when
    /// edits were made since `base` (an agent's, say), the person's edit is moved over them
    /// (see [`crate::rebase`]) and lands on the current text, with every character the person
    /// typed. Refused only when it is not a valid change of the text at `base`, or when `base`
    /// is older than the changes kept ([`KEPT_CHANGES`]).
    pub fn edit_as_person(
        &self,
        id: &DocumentId,
        base: u64,
        edits: &[TextEdit],
        session: Option<&str>,
    ) -> Result<PersonEdited, ToolError> {
        let mut map = self.map();
        let document = map.get_mut(id).ok_or_else(|| unknown(id))?;
        let current = document.buffer_revision;
        if base > current {
            return Err(ToolError::invalid(format!(
                "bufferRevision {base} is ahead of the document (it is at {current})"
            )));
        }
        let mut moved = edits.to_vec();
        if base < current {
            let changes = self.changes();
            let since: Vec<&Logged> = changes
                .get(id)
                .map(|log| log.iter().filter(|l| l.revision > base).collect())
                .unwrap_or_default();
            if since.len() as u64 != current - base {
                return Err(mismatch(current));
            }
            // Checked against the text it was made on: its length then is today's length
            // with the later changes taken back.
            let length_then =
                since
                    .iter()
                    .rev()
                    .fold(document.text.chars().count() as i64, |length, logged| {
                        length
                            - logged
                                .edits
                                .iter()
                                .map(|e| e.text.chars().count() as i64 - (e.end - e.start) as i64)
                                .sum::<i64>()
                    });
            check_edits(edits, length_then.max(0) as u64)?;
            for logged in since {
                moved = crate::rebase::rebase(&moved, &logged.edits, true);
            }
            if moved.is_empty() {
                // Everything it replaced was replaced already and it inserts nothing.
                return Ok(PersonEdited {
                    document_id: id.clone(),
                    buffer_revision: current.to_string(),
                    edits: moved,
                    rebased: true,
                    dirty: document.dirty(),
                });
            }
        }
        document.text = apply_edits(&document.text, &moved)?;
        document.buffer_revision += 1;
        let document = document.clone();
        self.record(
            &document,
            id,
            moved.clone(),
            ChangeOrigin::Person,
            session.map(str::to_owned),
        );
        drop(map);
        Ok(PersonEdited {
            document_id: id.clone(),
            buffer_revision: document.buffer_revision.to_string(),
            edits: moved,
            rebased: base < current,
            dirty: document.dirty(),
        })
    }

    /// Logs and announces the change by `edits` that made `document` (called under the lock
    /// of `inner`, so changes are logged and announced in revision order).
    fn record(
        &self,
        document: &Document,
        id: &DocumentId,
        edits: Vec<TextEdit>,
        origin: ChangeOrigin,
        session: Option<String>,
    ) {
        let revision = document.buffer_revision;
        let mut changes = self.changes();
        let log = changes.entry(id.clone()).or_default();
        if log.len() == KEPT_CHANGES {
            log.pop_front();
        }
        log.push_back(Logged {
            revision,
            edits: edits.clone(),
        });
        drop(changes);
        self.publish(DocumentEvent::Changed {
            document_id: id.clone(),
            buffer_revision: revision.to_string(),
            edits,
            origin,
            session,
            dirty: document.dirty(),
        });
    }

    /// Writes the document at buffer revision `expected` to its file, expecting the disk
    /// revision of its open or last save. Blocking (file IO): run it off the async threads.
    pub fn save(&self, id: &DocumentId, expected: u64) -> Result<FileWritten, SaveError> {
        self.save_over(id, expected, false)
    }

    /// [`Documents::save`], or with `overwrite` the person's "keep mine" after the file
    /// changed on disk: it expects the bytes there now (or no file), so it still refuses to
    /// overwrite a change made after the person looked.
    pub fn save_over(
        &self,
        id: &DocumentId,
        expected: u64,
        overwrite: bool,
    ) -> Result<FileWritten, SaveError> {
        let snapshot = self.get(id).map_err(SaveError::Refused)?;
        if snapshot.buffer_revision != expected {
            return Err(SaveError::Refused(mismatch(snapshot.buffer_revision)));
        }
        let root = ProjectRoot::open(&snapshot.root).map_err(SaveError::Files)?;
        let on_disk = if overwrite {
            match root.read(&snapshot.path, Some((0, 0)), 0) {
                Ok(read) => Expected::Revision(read.disk_revision),
                Err(FilesError::NotFound(_)) => Expected::Absent,
                Err(error) => return Err(SaveError::Files(error)),
            }
        } else {
            Expected::Revision(snapshot.disk_revision.clone())
        };
        let written = root
            .write(&snapshot.path, &snapshot.bytes(), on_disk)
            .map_err(SaveError::Files)?;
        let mut map = self.map();
        if let Some(document) = map.get_mut(id) {
            document.disk_revision = written.disk_revision.clone();
            // A person's edit made during the write stays unsaved (dirty).
            document.saved_text = snapshot.text;
            self.publish(DocumentEvent::Saved {
                document_id: id.clone(),
                buffer_revision: expected.to_string(),
                disk_revision: written.disk_revision.clone(),
                dirty: document.dirty(),
            });
        }
        Ok(written)
    }

    /// The file now, compared with the bytes the document was opened with or last saved.
    /// Blocking (file IO).
    pub fn disk_state(&self, id: &DocumentId) -> Result<DiskState, ToolError> {
        let document = self.get(id)?;
        let root = ProjectRoot::open(&document.root).map_err(files_error)?;
        Ok(match root.read(&document.path, Some((0, 0)), 0) {
            Ok(read) if read.disk_revision == document.disk_revision => DiskState::Same,
            Ok(_) => DiskState::Changed,
            Err(FilesError::NotFound(_)) => DiskState::Deleted,
            Err(error) => return Err(files_error(error)),
        })
    }

    /// The person's "reload": the document takes the file's text as it is now, as one change
    /// (so a late edit of the person's still lands, on the reloaded text), and is clean.
    /// Blocking (file IO).
    pub fn reload(&self, id: &DocumentId) -> Result<PersonEdited, ToolError> {
        let document = self.get(id)?;
        let root = ProjectRoot::open(&document.root).map_err(files_error)?;
        let max = root.limits().max_write_bytes;
        let read = root.read(&document.path, None, max).map_err(files_error)?;
        let body = match read.encoding {
            Encoding::Utf8 if !read.truncated => &read.bytes[..],
            Encoding::Utf8Bom if !read.truncated => &read.bytes[BOM.len()..],
            _ => {
                return Err(ToolError::new(
                    ErrorCode::Unsupported,
                    format!(
                        "{} is no longer UTF-8 text under {max} bytes; it cannot be reloaded into the editor",
                        document.path
                    ),
                ));
            }
        };
        let text = String::from_utf8(body.to_vec()).map_err(|_| {
            ToolError::new(
                ErrorCode::Unsupported,
                format!("{} is not valid UTF-8", document.path),
            )
        })?;
        let mut map = self.map();
        let open = map.get_mut(id).ok_or_else(|| unknown(id))?;
        let edits = vec![TextEdit {
            start: 0,
            end: open.text.chars().count() as u64,
            text: text.clone(),
        }];
        open.text = text.clone();
        open.saved_text = text;
        open.bom = read.encoding == Encoding::Utf8Bom;
        open.line_endings = read.line_endings;
        open.disk_revision = read.disk_revision;
        open.buffer_revision += 1;
        let reloaded = open.clone();
        self.record(&reloaded, id, edits.clone(), ChangeOrigin::Disk, None);
        drop(map);
        Ok(PersonEdited {
            document_id: id.clone(),
            buffer_revision: reloaded.buffer_revision.to_string(),
            edits,
            rebased: false,
            dirty: false,
        })
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
        self.changes().remove(id);
        self.publish(DocumentEvent::Closed {
            document_id: id.clone(),
        });
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
