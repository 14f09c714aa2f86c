//! Lomi's project-files runtime: every path is relative to a project root and is resolved by the
//! kernel (`openat2` with `RESOLVE_BENEATH`), so no `..`, absolute path or symlink leads outside.
//!
//! The runtime (`ProjectRoot`) is plain data and functions: no MCP, no receipts; it owns
//! confinement, revisions and atomic writes. [`tools`] puts it behind the broker's operations;
//! [`documents`] holds the shared editor documents and [`editor`] serves their tools;
//! [`git`] serves the Git tools of a project that is a repository.
//!
//! Revisions (all lowercase SHA-256 hex):
//! - `disk_revision`: SHA-256 of the file's exact bytes (the seed's `expectedDiskRevision`).
//! - `entry_revision`: SHA-256 of the entry's `lstat` metadata (kind, size, mtime, ctime, device,
//!   inode). Cheap: a listing never reads file contents. See [`DirEntry::entry_revision`].
//! - `directory_revision`: SHA-256 of the sorted `(name, kind, entry_revision)` list of every
//!   entry (not just the page), so it changes exactly when the listing changes.

pub mod capture_set;
pub mod confine;
mod content;
pub mod documents;
pub mod editor;
mod error;
pub mod git;
mod listing;
mod paths;
pub mod preview;
pub mod rebase;
mod root;
mod serve;
pub mod tools;
pub mod watch;

pub use content::{Encoding, LineEndings};
pub use error::FilesError;
pub use listing::{DirEntry, DirListing, EntryKind};
pub use root::{Expected, FileRead, FileWritten, Limits, ProjectRoot, TEMP_PREFIX};
