//! The one error type of the files runtime; each variant maps to one protocol error code.

use lomi_protocol::{ErrorCode, ToolError};

/// Why a files operation was refused or failed. Messages say what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilesError {
    /// The path is not a plain project-relative path, or resolving it would leave the root.
    #[error("{0}")]
    Escape(String),
    /// Nothing exists at the path (or a parent directory is missing).
    #[error("{0} does not exist; list its directory to see what is there")]
    NotFound(String),
    /// The folder a new entry would go in does not exist.
    #[error(
        "the folder {parent} does not exist (for {path}); create it with lomi_dir_create, or pass createParents: true"
    )]
    ParentMissing { path: String, parent: String },
    /// The file changed since it was observed; `current` is its revision now.
    #[error("the file changed since it was read (current revision {current}); read it again")]
    RevisionMismatch { current: String },
    /// The target already exists and the operation never overwrites.
    #[error("{0} already exists; read it and pass its revision to replace it")]
    AlreadyExists(String),
    /// The content is over the configured cap; nothing was written.
    #[error("{size} bytes is over the {limit}-byte write limit; nothing was written")]
    TooLarge { limit: usize, size: usize },
    /// The path names something that is not a regular file (directory, symlink, device, …).
    #[error("{0}")]
    NotAFile(String),
    /// The path (or one of its parents) is not a directory.
    #[error("{0} is not a directory")]
    NotADirectory(String),
    /// Only empty directories are deleted.
    #[error("{0} is not empty; delete its entries first")]
    DirectoryNotEmpty(String),
    /// The disk (or the person's quota) is full: the new bytes did not fit, and the file was
    /// left as it was.
    #[error("no space left on the disk for {0}: nothing was written; free space, then try again")]
    NoSpace(String),
    /// The operating system failed in a way the caller cannot fix by changing the request.
    #[error("{0}")]
    Io(String),
}

impl FilesError {
    /// The protocol error code this error is reported with.
    pub fn code(&self) -> ErrorCode {
        match self {
            FilesError::Escape(_)
            | FilesError::TooLarge { .. }
            | FilesError::NotAFile(_)
            | FilesError::NotADirectory(_)
            | FilesError::DirectoryNotEmpty(_) => ErrorCode::InvalidArgument,
            FilesError::NotFound(_) | FilesError::ParentMissing { .. } => ErrorCode::NotFound,
            // "Create" is a write that expects no file: an existing one is a revision conflict.
            FilesError::RevisionMismatch { .. } | FilesError::AlreadyExists(_) => {
                ErrorCode::RevisionMismatch
            }
            FilesError::NoSpace(_) => ErrorCode::NoSpace,
            FilesError::Io(_) => ErrorCode::Internal,
        }
    }
}

impl From<FilesError> for ToolError {
    /// The error as an agent receives it: its code, its message, and the current revision
    /// when it is a revision conflict.
    fn from(e: FilesError) -> ToolError {
        let error = ToolError::new(e.code(), e.to_string());
        match e {
            FilesError::RevisionMismatch { current } => {
                error.with_details(serde_json::json!({ "currentRevision": current }))
            }
            _ => error,
        }
    }
}
