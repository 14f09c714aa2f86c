//! The file tools over the broker: reads and listings answer at once; writes, creates, renames
//! and deletes are operations through the broker's engine, revision-checked by the runtime.

use std::path::PathBuf;

use base64::Engine;
use lomi_broker::{Broker, EffectOutcome, ProjectChange};
use lomi_protocol::tools::files::{
    DirCreateInput, DirCreated, DirEntryView, DirListInput, DirListView, FileChanged,
    FileCreateInput, FileDeleteInput, FileReadInput, FileReadView, FileRenameInput, FileWriteInput,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::settings::LineEndings;
use lomi_protocol::{EffectState, PairingId, ProjectId, ToolError, WorkspaceId};

use crate::{Encoding, Expected, FilesError, ProjectRoot};

const DEFAULT_READ_BYTES: u32 = 256 * 1024;
const MAX_READ_BYTES: u32 = 4 * 1024 * 1024;
const DEFAULT_LIST: u32 = 200;
const MAX_LIST: u32 = 1000;

/// The file tools of one broker.
#[derive(Clone)]
pub struct ProjectFiles {
    broker: Broker,
}

/// Exactly one of `text` or `base64`, as bytes.
fn content(text: &Option<String>, base64: &Option<String>) -> Result<Vec<u8>, ToolError> {
    match (text, base64) {
        (Some(text), None) => Ok(text.as_bytes().to_vec()),
        (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| ToolError::invalid(format!("base64 is not valid: {e}"))),
        (Some(_), Some(_)) => Err(ToolError::invalid(
            "give exactly one of text or base64, not both",
        )),
        (None, None) => Err(ToolError::invalid("give exactly one of text or base64")),
    }
}

/// What a change expects of the folder its new entry goes in.
#[derive(Default)]
struct Folder {
    /// Create the missing folders above the entry first.
    create_parents: bool,
    /// The folder's `directoryRevision` as the agent saw it.
    expected_revision: Option<String>,
}

impl Folder {
    /// Checks the folder's revision (if one is expected), then makes the missing folders.
    fn prepare(self, root: &ProjectRoot, path: &str) -> Result<(), FilesError> {
        if let Some(expected) = self.expected_revision {
            let current = root.parent_revision(path)?;
            if current != expected {
                return Err(FilesError::RevisionMismatch { current });
            }
        }
        if self.create_parents {
            root.create_parents(path)?;
        }
        Ok(())
    }
}

/// What one file mutation does, run inside its operation.
enum Change {
    Write {
        path: String,
        bytes: Vec<u8>,
        expected: Expected,
        folder: Folder,
    },
    CreateDir {
        path: String,
        folder: Folder,
    },
    Rename {
        from: String,
        to: String,
        expected: Option<String>,
        folder: Folder,
    },
    Delete {
        path: String,
        expected: String,
    },
}

impl ProjectFiles {
    pub fn new(broker: Broker) -> Self {
        ProjectFiles { broker }
    }

    fn root(
        &self,
        caller: &PairingId,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
    ) -> Result<(ProjectId, PathBuf), ToolError> {
        self.broker.project_root(caller, workspace, project)
    }

    fn open(root: &std::path::Path) -> Result<ProjectRoot, ToolError> {
        ProjectRoot::open(root).map_err(ToolError::from)
    }

    /// `lomi_file_read`.
    pub fn read(
        &self,
        caller: &PairingId,
        input: &FileReadInput,
    ) -> Result<FileReadView, ToolError> {
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_READ_BYTES);
        if max_bytes == 0 || max_bytes > MAX_READ_BYTES {
            return Err(ToolError::invalid(format!(
                "maxBytes must be 1 to {MAX_READ_BYTES}"
            )));
        }
        let (_, root) = self.root(caller, &input.workspace_id, input.project_id.as_ref())?;
        let range = match (input.offset, input.length) {
            (None, None) => None,
            (offset, length) => Some((offset.unwrap_or(0), length.unwrap_or(u64::MAX))),
        };
        let read = Self::open(&root)?
            .read(&input.path, range, max_bytes as usize)
            .map_err(ToolError::from)?;
        let (text, base64) = match String::from_utf8(read.bytes) {
            Ok(text) if read.encoding != Encoding::Binary => (Some(text), None),
            Ok(text) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(text.as_bytes())),
            ),
            Err(bytes) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(bytes.as_bytes())),
            ),
        };
        Ok(FileReadView {
            path: input.path.clone(),
            size: read.size,
            disk_revision: read.disk_revision,
            encoding: read.encoding.as_str().to_owned(),
            line_endings: read.line_endings.as_str().to_owned(),
            truncated: read.truncated,
            text,
            base64,
        })
    }

    /// One directory of the person's file tree (the root is ""): every entry but `.git`,
    /// directories first, then by name, at most [`MAX_LIST`]; confined like the file tools.
    pub fn list_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
        path: &str,
    ) -> Result<DirListView, ToolError> {
        let (_, root) = self.broker.project_root_for_person(workspace, project)?;
        let listing = Self::open(&root)?
            .list(path, 0, MAX_LIST as usize + 1)
            .map_err(ToolError::from)?;
        let mut entries: Vec<DirEntryView> = (listing.entries.into_iter())
            .filter(|e| e.name != ".git")
            .map(|e| DirEntryView {
                name: e.name,
                kind: e.kind.as_str().to_owned(),
                size: e.size,
                entry_revision: e.entry_revision,
            })
            .collect();
        entries.sort_by(|a, b| (a.kind != "dir", &a.name).cmp(&(b.kind != "dir", &b.name)));
        entries.truncate(MAX_LIST as usize);
        Ok(DirListView {
            path: path.to_owned(),
            next_offset: None,
            total: listing.total as u64,
            directory_revision: listing.directory_revision,
            entries,
        })
    }

    /// `lomi_dir_list`.
    pub fn list(&self, caller: &PairingId, input: &DirListInput) -> Result<DirListView, ToolError> {
        let limit = input.limit.unwrap_or(DEFAULT_LIST);
        if limit == 0 || limit > MAX_LIST {
            return Err(ToolError::invalid(format!("limit must be 1 to {MAX_LIST}")));
        }
        let offset = input.offset.unwrap_or(0);
        let (_, root) = self.root(caller, &input.workspace_id, input.project_id.as_ref())?;
        let listing = Self::open(&root)?
            .list(&input.path, offset as usize, limit as usize)
            .map_err(ToolError::from)?;
        let end = offset as u64 + listing.entries.len() as u64;
        Ok(DirListView {
            path: input.path.clone(),
            next_offset: (end < listing.total as u64)
                .then(|| u32::try_from(end).unwrap_or(u32::MAX)),
            total: listing.total as u64,
            directory_revision: listing.directory_revision,
            entries: listing
                .entries
                .into_iter()
                .map(|e| DirEntryView {
                    name: e.name,
                    kind: e.kind.as_str().to_owned(),
                    size: e.size,
                    entry_revision: e.entry_revision,
                })
                .collect(),
        })
    }

    pub async fn write(
        &self,
        caller: &PairingId,
        input: FileWriteInput,
    ) -> Result<OperationView, ToolError> {
        let bytes = content(&input.text, &input.base64)?;
        let change = Change::Write {
            path: input.path.clone(),
            bytes,
            expected: Expected::Revision(input.expected_disk_revision.clone()),
            folder: Folder::default(),
        };
        let revision = Some(input.expected_disk_revision.clone());
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::files::FileWriteTool>(&input, revision)?,
            change,
        )
        .await
    }

    pub async fn create(
        &self,
        caller: &PairingId,
        input: FileCreateInput,
    ) -> Result<OperationView, ToolError> {
        let mut bytes = content(&input.text, &input.base64)?;
        // New text files end their lines as the person's editor settings say; base64 content
        // is written byte for byte.
        if input.text.is_some() && self.broker.editor_settings().line_endings == LineEndings::Crlf {
            bytes = crlf(&bytes);
        }
        let change = Change::Write {
            path: input.path.clone(),
            bytes,
            expected: Expected::Absent,
            folder: Folder {
                create_parents: input.create_parents.unwrap_or(false),
                expected_revision: input.expected_parent_revision.clone(),
            },
        };
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::files::FileCreateTool>(&input, None)?,
            change,
        )
        .await
    }

    pub async fn rename(
        &self,
        caller: &PairingId,
        input: FileRenameInput,
    ) -> Result<OperationView, ToolError> {
        let change = Change::Rename {
            from: input.from.clone(),
            to: input.to.clone(),
            expected: input.expected_disk_revision.clone(),
            folder: Folder {
                create_parents: input.create_parents.unwrap_or(false),
                expected_revision: None,
            },
        };
        let revision = input.expected_disk_revision.clone();
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::files::FileRenameTool>(&input, revision)?,
            change,
        )
        .await
    }

    /// `lomi_dir_create`.
    pub async fn create_dir(
        &self,
        caller: &PairingId,
        input: DirCreateInput,
    ) -> Result<OperationView, ToolError> {
        let change = Change::CreateDir {
            path: input.path.clone(),
            folder: Folder {
                create_parents: input.create_parents.unwrap_or(false),
                expected_revision: input.expected_parent_revision.clone(),
            },
        };
        let revision = input.expected_parent_revision.clone();
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::files::DirCreateTool>(&input, revision)?,
            change,
        )
        .await
    }

    pub async fn delete(
        &self,
        caller: &PairingId,
        input: FileDeleteInput,
    ) -> Result<OperationView, ToolError> {
        let change = Change::Delete {
            path: input.path.clone(),
            expected: input.expected_revision.clone(),
        };
        let revision = Some(input.expected_revision.clone());
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::files::FileDeleteTool>(&input, revision)?,
            change,
        )
        .await
    }
}

/// What a file change made: the tools' result types.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Applied {
    File(FileChanged),
    Dir(DirCreated),
}

/// What a file or Git tool does to its project, run in its operation's effect with the
/// project's root.
pub(crate) trait ProjectEffect: Send + 'static {
    fn apply(self, root: PathBuf) -> impl Future<Output = EffectOutcome> + Send;
}

/// One file or Git mutation through the engine, under the project's permit: the runtime's own
/// check (a disk revision, the head) happens at dispatch, so two writers with the same expected
/// revision cannot both win, and Lomi's file and Git changes to a project never interleave.
pub(crate) async fn mutate(
    broker: &Broker,
    caller: &PairingId,
    request: ProjectChange<'_>,
    change: impl ProjectEffect,
) -> Result<OperationView, ToolError> {
    broker
        .change_project(
            caller,
            request,
            async { Ok(()) },
            move |root, (), _context| change.apply(root),
        )
        .await
}

impl ProjectEffect for Change {
    async fn apply(self, root: PathBuf) -> EffectOutcome {
        match lomi_broker::off_thread(move || apply(&root, self)).await {
            Ok(changed) => EffectOutcome::succeeded(&changed),
            Err(FilesError::Io(message)) => EffectOutcome::Unknown {
                effect: EffectState::Unknown,
                message: format!("the file system failed mid-change: {message}"),
            },
            Err(e) => EffectOutcome::Failed {
                effect: EffectState::None,
                error: e.into(),
            },
        }
    }
}

fn apply(root: &std::path::Path, change: Change) -> Result<Applied, FilesError> {
    let root = ProjectRoot::open(root)?;
    let changed = match change {
        Change::Write {
            path,
            bytes,
            expected,
            folder,
        } => {
            folder.prepare(&root, &path)?;
            let written = root.write(&path, &bytes, expected)?;
            FileChanged {
                path,
                disk_revision: Some(written.disk_revision),
                size: Some(written.size),
            }
        }
        Change::CreateDir { path, folder } => {
            folder.prepare(&root, &path)?;
            root.create_dir(&path, false)?;
            let listed = root.list(&path, 0, 0)?;
            return Ok(Applied::Dir(DirCreated {
                path,
                directory_revision: listed.directory_revision,
            }));
        }
        Change::Rename {
            from,
            to,
            expected,
            folder,
        } => {
            folder.prepare(&root, &to)?;
            root.rename(&from, &to, expected)?;
            // The rename has happened: whatever the read-back finds (a directory, a symlink),
            // the operation reports the change, never "nothing changed".
            let read = root.read(&to, Some((0, 0)), 0).ok();
            FileChanged {
                path: to,
                disk_revision: read.as_ref().map(|r| r.disk_revision.clone()),
                size: read.map(|r| r.size),
            }
        }
        Change::Delete { path, expected } => {
            root.delete(&path, &expected)?;
            FileChanged {
                path,
                disk_revision: None,
                size: None,
            }
        }
    };
    Ok(Applied::File(changed))
}

/// `bytes` with every line feed not already after a carriage return made CRLF.
fn crlf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 16);
    let mut previous = 0u8;
    for &byte in bytes {
        if byte == b'\n' && previous != b'\r' {
            out.push(b'\r');
        }
        out.push(byte);
        previous = byte;
    }
    out
}

#[cfg(test)]
mod line_ending_tests {
    #[test]
    fn crlf_turns_bare_line_feeds_only() {
        assert_eq!(super::crlf(b"a\nb\r\nc\n"), b"a\r\nb\r\nc\r\n".to_vec());
        assert_eq!(super::crlf(b""), Vec::<u8>::new());
    }
}
