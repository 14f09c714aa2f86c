//! Project file tools: read, write, create, rename, delete and list, with the seed's revision
//! rules (`expectedDiskRevision` is the SHA-256 of the file's exact bytes).

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, Subject, ToolDef};
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};

use crate::ids::{ProjectId, RequestKey, RetryEpoch, WorkspaceId};

/// `lomi_file_read` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileReadInput {
    pub workspace_id: WorkspaceId,
    // Optional when the workspace has one project.
    pub project_id: Option<ProjectId>,
    // Relative to the project root; never absolute, never `..`.
    pub path: String,
    // First byte to read (default 0).
    pub offset: Option<u64>,
    // How many bytes from `offset` (default: to the end).
    pub length: Option<u64>,
    // Most bytes to return (1 to 4,194,304; default 262,144).
    pub max_bytes: Option<u32>,
}

/// `lomi_file_read` output. `diskRevision`, `encoding` and `lineEndings` describe the whole
/// file. The bytes come as `text` when they are valid UTF-8, else as `base64`: binary is
/// never mangled into text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileReadView {
    pub path: String,
    pub size: u64,
    pub disk_revision: String,
    /// utf8, utf8_bom, utf16le, utf16be, latin1 or binary.
    pub encoding: String,
    /// lf, crlf, cr, mixed or none.
    pub line_endings: String,
    pub truncated: bool,
    pub text: Option<String>,
    pub base64: Option<String>,
}

/// Exactly one of text (UTF-8) or base64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["text"]}, {"required": ["base64"]}]))]
pub struct FileWriteInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    pub path: String,
    // The `diskRevision` of the file as you last read it; a file changed since is
    // REVISION_MISMATCH with the current revision in `details`.
    pub expected_disk_revision: String,
    pub text: Option<String>,
    pub base64: Option<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_file_create` input: fails if the path exists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["text"]}, {"required": ["base64"]}]))]
pub struct FileCreateInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    pub path: String,
    pub text: Option<String>,
    pub base64: Option<String>,
    // Create the missing folders above the file first (default false: a missing folder is
    // NOT_FOUND, and says so).
    pub create_parents: Option<bool>,
    // The `directoryRevision` of the file's folder from lomi_dir_list: create only if the
    // folder is as you saw it (else REVISION_MISMATCH with the current one).
    pub expected_parent_revision: Option<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_file_rename` input: never overwrites an existing target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileRenameInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    pub from: String,
    pub to: String,
    // The source file's `diskRevision`, to rename only what you saw.
    pub expected_disk_revision: Option<String>,
    // Create the missing folders above `to` first (default false).
    pub create_parents: Option<bool>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_file_delete` input: a file (by its `diskRevision`) or an empty directory (by its
/// `directoryRevision`). Waits for the person's decision by default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileDeleteInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    pub path: String,
    pub expected_revision: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_dir_create` input: makes a folder that does not exist yet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirCreateInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    // The new folder, relative to the project root.
    pub path: String,
    // Create the missing folders above it too (default false).
    pub create_parents: Option<bool>,
    // The `directoryRevision` of the folder it goes in, from lomi_dir_list: create only if
    // that folder is as you saw it.
    pub expected_parent_revision: Option<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of lomi_dir_create.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirCreated {
    pub path: String,
    /// The new folder's `directoryRevision` (it is empty).
    pub directory_revision: String,
}

/// The confirmed result of a write, create, rename or delete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileChanged {
    pub path: String,
    /// The new disk revision (absent after a delete).
    pub disk_revision: Option<String>,
    pub size: Option<u64>,
}

/// `lomi_dir_list` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirListInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    // Relative to the project root; "" for the root.
    pub path: String,
    pub offset: Option<u32>,
    // 1 to 1,000 entries (default 200).
    pub limit: Option<u32>,
}

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirEntryView {
    pub name: String,
    /// file, dir, symlink or other.
    pub kind: String,
    pub size: u64,
    /// Changes when the entry changes (from its metadata; not the content hash).
    pub entry_revision: String,
}

/// `lomi_dir_list` output, sorted by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirListView {
    pub path: String,
    pub entries: Vec<DirEntryView>,
    pub total: u64,
    /// Changes exactly when the listing (any page) changes.
    pub directory_revision: String,
    pub next_offset: Option<u32>,
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_file_read`
pub struct FileReadTool;

impl ToolDef for FileReadTool {
    const TOOL: Tool = Tool::FileRead;
    const NAME: &'static str = "lomi_file_read";
    const FAMILY: Option<Family> = Some(Family::Files);
    const LABEL: &'static str = "Read files";
    const TITLE: &'static str = "Read a file";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Reads a project file (or a byte range) with its diskRevision; UTF-8 as text, \
        else base64.";
    type Input = FileReadInput;
    type Output = FileReadView;

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

/// `lomi_file_write`
pub struct FileWriteTool;

impl ToolDef for FileWriteTool {
    const TOOL: Tool = Tool::FileWrite;
    const NAME: &'static str = "lomi_file_write";
    const FAMILY: Option<Family> = Some(Family::Files);
    const LABEL: &'static str = "Overwrite files";
    const TITLE: &'static str = "Write a file";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Replaces an existing file's bytes atomically, by its diskRevision.";
    type Input = FileWriteInput;
    type Output = FileChanged;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Write {
            path: input.path.clone(),
            text: input.text.clone(),
            base64: input.base64.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

/// `lomi_file_create`
pub struct FileCreateTool;

impl ToolDef for FileCreateTool {
    const TOOL: Tool = Tool::FileCreate;
    const NAME: &'static str = "lomi_file_create";
    const FAMILY: Option<Family> = Some(Family::Files);
    const LABEL: &'static str = "Create files";
    const TITLE: &'static str = "Create a file";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Creates a new file; an existing path is REVISION_MISMATCH.";
    type Input = FileCreateInput;
    type Output = FileChanged;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Write {
            path: input.path.clone(),
            text: input.text.clone(),
            base64: input.base64.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

/// `lomi_file_rename`
pub struct FileRenameTool;

impl ToolDef for FileRenameTool {
    const TOOL: Tool = Tool::FileRename;
    const NAME: &'static str = "lomi_file_rename";
    const FAMILY: Option<Family> = Some(Family::Files);
    const LABEL: &'static str = "Rename or move files";
    const TITLE: &'static str = "Rename a file";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Renames or moves a file in the project; never overwrites.";
    type Input = FileRenameInput;
    type Output = FileChanged;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Move {
            from: input.from.clone(),
            to: input.to.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.from.clone(), input.to.clone()])
    }
}

/// `lomi_file_delete`
pub struct FileDeleteTool;

impl ToolDef for FileDeleteTool {
    const TOOL: Tool = Tool::FileDelete;
    const NAME: &'static str = "lomi_file_delete";
    const FAMILY: Option<Family> = Some(Family::Files);
    const LABEL: &'static str = "Delete files";
    const TITLE: &'static str = "Delete a file";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Deletes a file (by diskRevision) or an empty folder (by directoryRevision).";
    // Deleting a file cannot be undone.
    const ASKS_BY_DEFAULT: bool = true;
    type Input = FileDeleteInput;
    type Output = FileChanged;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Delete {
            path: input.path.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

/// `lomi_dir_create`
pub struct DirCreateTool;

impl ToolDef for DirCreateTool {
    const TOOL: Tool = Tool::DirCreate;
    const NAME: &'static str = "lomi_dir_create";
    const FAMILY: Option<Family> = Some(Family::Files);
    const LABEL: &'static str = "Create folders";
    const TITLE: &'static str = "Create a folder";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Makes a folder in the project.";
    type Input = DirCreateInput;
    type Output = DirCreated;

    fn preview(input: &Self::Input) -> Preview {
        Preview::CreateFolder {
            path: input.path.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

/// `lomi_dir_list`
pub struct DirListTool;

impl ToolDef for DirListTool {
    const TOOL: Tool = Tool::DirList;
    const NAME: &'static str = "lomi_dir_list";
    const FAMILY: Option<Family> = Some(Family::Files);
    const LABEL: &'static str = "List folders";
    const TITLE: &'static str = "List a directory";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Lists a project folder, paged, with each entry's revision and the \
        directoryRevision.";
    type Input = DirListInput;
    type Output = DirListView;

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __files_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            FileRead = $crate::tools::files::FileReadTool => files as plain,
            FileWrite = $crate::tools::files::FileWriteTool => files as plain,
            FileCreate = $crate::tools::files::FileCreateTool => files as plain,
            FileRename = $crate::tools::files::FileRenameTool => files as plain,
            FileDelete = $crate::tools::files::FileDeleteTool => files as plain,
            DirCreate = $crate::tools::files::DirCreateTool => files as plain,
            DirList = $crate::tools::files::DirListTool => files as plain,
        ]);
    };
}
