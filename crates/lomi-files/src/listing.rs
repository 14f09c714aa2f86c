//! Directory listings with entry and directory revisions. Entries are `lstat`ed, never followed,
//! and never read, so listing a big directory costs one `stat` per entry.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::root::{ProjectRoot, TEMP_PREFIX, open_dir, resolve_error};
use crate::{FilesError, paths};

/// What an entry is, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl EntryKind {
    /// The name the protocol gives the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "dir",
            EntryKind::Symlink => "symlink",
            EntryKind::Other => "other",
        }
    }
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name. A name that is not UTF-8 is shown with replacement characters and
    /// cannot be addressed through this API.
    pub name: String,
    pub kind: EntryKind,
    /// `lstat` size: bytes for a file, the target's length for a symlink.
    pub size: u64,
    /// SHA-256 hex of `kind, size, mtime (ns), ctime (ns), device, inode` from `lstat`. Any write
    /// through Lomi (a new inode), a rename onto the name, a chmod or an in-place edit changes it.
    /// Not content-based: an in-place rewrite of the same size within one filesystem timestamp
    /// tick, by a program that restores the timestamps, is not seen. Use the disk revision from a
    /// read to compare contents.
    pub entry_revision: String,
}

/// A page of a directory's entries, sorted by name (byte order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirListing {
    pub entries: Vec<DirEntry>,
    /// How many entries the whole directory has (Lomi's own temp files are not counted).
    pub total: usize,
    /// SHA-256 hex of every entry's `(name, kind, entry_revision)` in order, not just this page.
    pub directory_revision: String,
}

impl ProjectRoot {
    /// Lists a directory (the empty path or `.` is the root), `limit` entries from `offset`.
    /// Symlinks inside the path are followed while they stay beneath the root; symlinks among the
    /// entries are reported as `Symlink` and not followed. In-flight or abandoned write temp files
    /// (names starting with [`TEMP_PREFIX`]) are hidden.
    pub fn list(&self, rel: &str, offset: usize, limit: usize) -> Result<DirListing, FilesError> {
        let path = paths::dir(rel)?;
        let dir = open_dir(self.fd(), &path, rel)?;
        let (all, directory_revision) = read_entries(dir, rel)?;
        let total = all.len();
        let entries = all.into_iter().skip(offset).take(limit).collect();
        Ok(DirListing {
            entries,
            total,
            directory_revision,
        })
    }
}

/// Every entry of an open directory, sorted, and the directory revision over them.
pub(crate) fn read_entries(dir: OwnedFd, rel: &str) -> Result<(Vec<DirEntry>, String), FilesError> {
    let stat_fd = dir
        .try_clone()
        .map_err(|error| FilesError::Io(format!("could not list {rel}: {error}")))?;
    let reader = rustix::fs::Dir::new(dir).map_err(|errno| resolve_error("list", rel, errno))?;
    let mut entries: Vec<(Vec<u8>, DirEntry)> = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|errno| resolve_error("list", rel, errno))?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." || raw.starts_with(TEMP_PREFIX.as_bytes()) {
            continue;
        }
        let stat = match rustix::fs::statat(
            stat_fd.as_fd(),
            entry.file_name(),
            AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) => stat,
            // Removed between reading the name and stating it: it is no longer listed.
            Err(Errno::NOENT) => continue,
            Err(errno) => return Err(resolve_error("inspect an entry of", rel, errno)),
        };
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => EntryKind::File,
            FileType::Directory => EntryKind::Dir,
            FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Other,
        };
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        let fingerprint = format!(
            "{}\0{size}\0{}.{}\0{}.{}\0{}:{}",
            kind.as_str(),
            stat.st_mtime,
            stat.st_mtime_nsec,
            stat.st_ctime,
            stat.st_ctime_nsec,
            stat.st_dev,
            stat.st_ino,
        );
        entries.push((
            raw.to_vec(),
            DirEntry {
                name: String::from_utf8_lossy(raw).into_owned(),
                kind,
                size,
                entry_revision: hex::encode(Sha256::digest(fingerprint.as_bytes())),
            },
        ));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hasher = Sha256::new();
    for (raw, entry) in &entries {
        // Length-prefixed so no two different listings hash the same bytes.
        hasher.update((raw.len() as u64).to_le_bytes());
        hasher.update(raw);
        hasher.update(entry.kind.as_str().as_bytes());
        hasher.update(entry.entry_revision.as_bytes());
    }
    let revision = hex::encode(hasher.finalize());
    Ok((
        entries.into_iter().map(|(_, entry)| entry).collect(),
        revision,
    ))
}
