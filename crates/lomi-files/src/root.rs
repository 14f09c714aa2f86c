//! `ProjectRoot`: an open handle on the project root and the file operations beneath it. Every
//! path goes through `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from a directory handle,
//! so the check and the use are the same system call and a swapped-in symlink cannot redirect it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags, ResolveFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::content::{Encoding, LineEndings, Sniffer};
use crate::listing::read_entries;
use crate::{FilesError, paths};

/// Temp files of in-flight writes are named `<TEMP_PREFIX><pid>.<counter>` in the target's
/// directory. A write killed mid-way leaves one behind; listings hide these names (so they never
/// change a directory revision) and nothing else touches them. They are not cleaned up.
pub const TEMP_PREFIX: &str = ".lomi-tmp.";

/// How many times a resolution that raced with a rename elsewhere (`EAGAIN`) is retried.
const RESOLVE_ATTEMPTS: usize = 8;
/// How many times a file replaced while we waited for its lock is reopened.
const LOCK_ATTEMPTS: usize = 16;
const CHUNK: usize = 64 * 1024;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Caps on what one call may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest content [`ProjectRoot::write`] accepts; larger is [`FilesError::TooLarge`].
    pub max_write_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_write_bytes: 16 * 1024 * 1024,
        }
    }
}

/// What a write expects to find at its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// Nothing: the write creates the file and fails with `AlreadyExists` otherwise.
    Absent,
    /// A regular file whose disk revision (SHA-256 hex of its bytes) is this one.
    Revision(String),
}

/// What [`ProjectRoot::read`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The requested range, at most `max_bytes` long.
    pub bytes: Vec<u8>,
    /// The whole file's size in bytes.
    pub size: u64,
    /// SHA-256 hex of the whole file's bytes, whatever range was read.
    pub disk_revision: String,
    /// Detected over the whole file.
    pub encoding: Encoding,
    /// Detected over the whole file.
    pub line_endings: LineEndings,
    /// True when `max_bytes` cut the requested range short.
    pub truncated: bool,
}

/// What [`ProjectRoot::write`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWritten {
    /// The new disk revision: SHA-256 hex of the bytes written.
    pub disk_revision: String,
    pub size: u64,
}

/// An open handle on a project root. All operations resolve beneath it; it stays valid if the
/// root directory is renamed.
#[derive(Debug)]
pub struct ProjectRoot {
    dir: OwnedFd,
    limits: Limits,
}

/// SHA-256 hex of some bytes: the disk revision of a file with exactly these bytes.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn io_error(what: &str, rel: &str, errno: Errno) -> FilesError {
    FilesError::Io(format!("could not {what} {rel}: {errno}"))
}

/// A failed `mkdirat`: it made nothing, and a full disk is the person's to fix.
fn mkdir_error(rel: &str, errno: Errno) -> FilesError {
    match errno {
        Errno::NOSPC | Errno::DQUOT => FilesError::NoSpace(rel.to_owned()),
        other => resolve_error("create", rel, other),
    }
}

/// A failed write or sync of a temp file: a full disk is the person's to fix (the target file
/// is untouched, the temp file removed); anything else is an I/O fault.
fn write_error(what: &str, rel: &str, error: &std::io::Error) -> FilesError {
    match error.raw_os_error() {
        Some(code)
            if code == Errno::NOSPC.raw_os_error() || code == Errno::DQUOT.raw_os_error() =>
        {
            FilesError::NoSpace(rel.to_owned())
        }
        _ => FilesError::Io(format!("could not {what} {rel}: {error}")),
    }
}

/// Maps an errno from resolving `rel` to what the caller can act on.
pub(crate) fn resolve_error(what: &str, rel: &str, errno: Errno) -> FilesError {
    match errno {
        Errno::XDEV => FilesError::Escape(format!(
            "{rel} leads outside the project root (through `..` or a symbolic link); \
             give a path to something inside the project"
        )),
        Errno::LOOP => FilesError::Escape(format!(
            "{rel} goes through a symbolic link that cannot be followed safely \
             (a /proc magic link, a loop, or a link where a plain file is required)"
        )),
        Errno::NOENT => FilesError::NotFound(rel.to_owned()),
        Errno::NOTDIR => FilesError::NotADirectory(rel.to_owned()),
        Errno::ISDIR => FilesError::NotAFile(format!("{rel} is a directory")),
        Errno::EXIST => FilesError::AlreadyExists(rel.to_owned()),
        Errno::NOTEMPTY => FilesError::DirectoryNotEmpty(rel.to_owned()),
        other => io_error(what, rel, other),
    }
}

/// `openat2` beneath `dir`, never following magic links; retries the kernel's `EAGAIN` (a rename
/// elsewhere raced the resolution and it could not prove the result stayed beneath).
pub(crate) fn open_beneath(
    dir: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
    mode: Mode,
    extra: ResolveFlags,
) -> Result<OwnedFd, Errno> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | extra;
    let mut last = Errno::AGAIN;
    for _ in 0..RESOLVE_ATTEMPTS {
        match rustix::fs::openat2(dir, path, flags | OFlags::CLOEXEC, mode, resolve) {
            Err(Errno::AGAIN) => last = Errno::AGAIN,
            other => return other,
        }
    }
    Err(last)
}

/// Opens a directory beneath `dir` for reading entries and fsync.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, path: &str, rel: &str) -> Result<OwnedFd, FilesError> {
    open_beneath(
        dir,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
        ResolveFlags::empty(),
    )
    .map_err(|errno| resolve_error("open directory", rel, errno))
}

fn is_regular(stat: &rustix::fs::Stat) -> bool {
    FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
}

/// Reads a whole stream into the hasher; the disk revision of an open file.
fn hash_file(file: &mut File, rel: &str) -> Result<String, FilesError> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; CHUNK];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => return Ok(hex::encode(hasher.finalize())),
            Ok(n) => hasher.update(&buffer[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(FilesError::Io(format!("could not read {rel}: {error}"))),
        }
    }
}

/// Fills `buffer` as far as the file allows; returns how much was read (less only at the end).
fn read_full(file: &mut File, buffer: &mut [u8], rel: &str) -> Result<usize, FilesError> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(FilesError::Io(format!("could not read {rel}: {error}"))),
        }
    }
    Ok(filled)
}

/// An existing regular file, opened and exclusively `flock`ed, and checked to still be the file
/// at its name once the lock is held (a concurrent Lomi writer renames a new file over it).
struct LockedFile {
    file: File,
    stat: rustix::fs::Stat,
}

fn lock_existing(parent: BorrowedFd<'_>, name: &str, rel: &str) -> Result<LockedFile, FilesError> {
    for _ in 0..LOCK_ATTEMPTS {
        // The name is one component in an already-confined directory; refuse a symlink here so a
        // write replaces exactly the entry that was checked.
        let fd = open_beneath(
            parent,
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS,
        )
        .map_err(|errno| match errno {
            Errno::LOOP => FilesError::NotAFile(format!(
                "{rel} is a symbolic link; name the file it points to instead"
            )),
            other => resolve_error("open", rel, other),
        })?;
        let stat = rustix::fs::fstat(&fd).map_err(|errno| io_error("inspect", rel, errno))?;
        if !is_regular(&stat) {
            return Err(FilesError::NotAFile(format!("{rel} is not a regular file")));
        }
        rustix::fs::flock(&fd, FlockOperation::LockExclusive)
            .map_err(|errno| io_error("lock", rel, errno))?;
        match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) if now.st_dev == stat.st_dev && now.st_ino == stat.st_ino => {
                return Ok(LockedFile {
                    file: File::from(fd),
                    stat,
                });
            }
            // Replaced or removed while we waited: look again.
            Ok(_) | Err(Errno::NOENT) => {}
            Err(errno) => return Err(io_error("inspect", rel, errno)),
        }
    }
    Err(FilesError::Io(format!(
        "{rel} kept being replaced while waiting to lock it; try again"
    )))
}

/// Checks a locked file's disk revision against the expected one.
fn check_revision(locked: &mut LockedFile, expected: &str, rel: &str) -> Result<(), FilesError> {
    let current = hash_file(&mut locked.file, rel)?;
    if current == expected {
        Ok(())
    } else {
        Err(FilesError::RevisionMismatch { current })
    }
}

/// A new temp file in `parent`, created exclusively with at most `mode`'s permissions.
fn create_temp(parent: BorrowedFd<'_>, mode: u32, rel: &str) -> Result<(File, String), FilesError> {
    for _ in 0..64 {
        let name = format!(
            "{TEMP_PREFIX}{}.{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        match open_beneath(
            parent,
            &name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(mode),
            ResolveFlags::NO_SYMLINKS,
        ) {
            Ok(fd) => return Ok((File::from(fd), name)),
            Err(Errno::EXIST) => {}
            Err(errno) => return Err(io_error("create a temp file next to", rel, errno)),
        }
    }
    Err(FilesError::Io(format!(
        "could not find a free temp file name next to {rel}"
    )))
}

fn fsync_dir(dir: BorrowedFd<'_>, rel: &str) -> Result<(), FilesError> {
    rustix::fs::fsync(dir).map_err(|errno| {
        FilesError::Io(format!(
            "the change to {rel} was made but its directory could not be synced to disk: {errno}"
        ))
    })
}

impl ProjectRoot {
    /// Opens the project root (following symlinks in `root` itself: the person chose it).
    pub fn open(root: &Path) -> Result<ProjectRoot, FilesError> {
        let dir = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| {
            FilesError::Io(format!(
                "could not open the project root {}: {errno}",
                root.display()
            ))
        })?;
        Ok(ProjectRoot {
            dir,
            limits: Limits::default(),
        })
    }

    /// The same root with other caps.
    pub fn with_limits(self, limits: Limits) -> ProjectRoot {
        ProjectRoot { limits, ..self }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Reads a regular file. `range` is `(offset, length)`; `None` is the whole file. At most
    /// `max_bytes` are returned (`truncated` says when fewer than asked). The disk revision,
    /// encoding and line endings always describe the whole file, so the whole file is read.
    /// Symlinks inside the project are followed as long as they stay beneath the root.
    pub fn read(
        &self,
        rel: &str,
        range: Option<(u64, u64)>,
        max_bytes: usize,
    ) -> Result<FileRead, FilesError> {
        let path = paths::file(rel)?;
        let full = format!("{}/{}", path.parent, path.name);
        // NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file.
        let fd = open_beneath(
            self.fd(),
            &full,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
            ResolveFlags::empty(),
        )
        .map_err(|errno| resolve_error("open", rel, errno))?;
        let stat = rustix::fs::fstat(&fd).map_err(|errno| io_error("inspect", rel, errno))?;
        if !is_regular(&stat) {
            return Err(FilesError::NotAFile(format!("{rel} is not a regular file")));
        }
        let mut file = File::from(fd);
        let (start, wanted) = range.unwrap_or((0, u64::MAX));
        let end = start.saturating_add(wanted);
        let mut bytes = Vec::new();
        let mut hasher = Sha256::new();
        let mut sniffer = Sniffer::new();
        let mut buffer = vec![0; CHUNK];
        let mut position = 0u64;
        let mut truncated = false;
        loop {
            let n = read_full(&mut file, &mut buffer, rel)?;
            if n == 0 {
                break;
            }
            let chunk = &buffer[..n];
            hasher.update(chunk);
            sniffer.feed(chunk);
            let chunk_end = position + n as u64;
            let from = start.clamp(position, chunk_end);
            let to = end.clamp(position, chunk_end);
            if from < to {
                let slice = &chunk[(from - position) as usize..(to - position) as usize];
                let room = max_bytes - bytes.len();
                if slice.len() > room {
                    truncated = true;
                }
                bytes.extend_from_slice(&slice[..slice.len().min(room)]);
            }
            position = chunk_end;
        }
        let (encoding, line_endings) = sniffer.finish();
        Ok(FileRead {
            bytes,
            size: position,
            disk_revision: hex::encode(hasher.finalize()),
            encoding,
            line_endings,
            truncated,
        })
    }

    /// The first `max_bytes` of a regular file and its whole size, resolved exactly as
    /// [`ProjectRoot::read`] resolves it, without reading the rest: what a person deciding on
    /// a change to it is shown. `Ok(None)`: nothing at `rel`.
    pub fn peek(&self, rel: &str, max_bytes: usize) -> Result<Option<(Vec<u8>, u64)>, FilesError> {
        let path = paths::file(rel)?;
        let full = format!("{}/{}", path.parent, path.name);
        let fd = match open_beneath(
            self.fd(),
            &full,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
            ResolveFlags::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(errno) => return Err(resolve_error("open", rel, errno)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|errno| io_error("inspect", rel, errno))?;
        if !is_regular(&stat) {
            return Err(FilesError::NotAFile(format!("{rel} is not a regular file")));
        }
        let mut bytes = vec![0; max_bytes.min(usize::try_from(stat.st_size).unwrap_or(0))];
        let n = read_full(&mut File::from(fd), &mut bytes, rel)?;
        bytes.truncate(n);
        Ok(Some((bytes, u64::try_from(stat.st_size).unwrap_or(0))))
    }

    /// Writes a whole file atomically: a temp file in the same directory, fsync, rename over the
    /// name, fsync of the directory. A reader sees the old bytes or the new, never a mix.
    ///
    /// - The existing file's permission bits are kept (owner and group are not: the new file
    ///   belongs to this process's user).
    /// - The entry is *replaced*, never written through: a hard link to a file outside the
    ///   project becomes a new, separate file and the outside file is left as it was. A final
    ///   component that is a symlink is refused (`NotAFile`); write the file it points to.
    /// - Concurrent Lomi writers are serialized by an exclusive `flock` on the existing file, so
    ///   of two writes expecting the same revision exactly one succeeds. Programs that do not take
    ///   the lock (an editor) are not held off between the check and the rename.
    /// - Parent directories are not created here (`ParentMissing`); see [`ProjectRoot::create_dir`].
    pub fn write(
        &self,
        rel: &str,
        bytes: &[u8],
        expected: Expected,
    ) -> Result<FileWritten, FilesError> {
        let path = paths::file(rel)?;
        if bytes.len() > self.limits.max_write_bytes {
            return Err(FilesError::TooLarge {
                limit: self.limits.max_write_bytes,
                size: bytes.len(),
            });
        }
        let parent = self.open_parent(&path, rel)?;
        let parent = parent.as_fd();
        // Held until after the rename, so a second writer waits and then sees the new file.
        let locked = match &expected {
            Expected::Absent => {
                match rustix::fs::statat(parent, path.name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(_) => return Err(FilesError::AlreadyExists(rel.to_owned())),
                    Err(Errno::NOENT) => None,
                    Err(errno) => return Err(resolve_error("inspect", rel, errno)),
                }
            }
            Expected::Revision(revision) => {
                let mut locked = lock_existing(parent, path.name, rel)?;
                check_revision(&mut locked, revision, rel)?;
                Some(locked)
            }
        };
        let mode = locked.as_ref().map(|locked| locked.stat.st_mode & 0o7777);
        // Never more permissive than the final file while the new bytes sit under the temp name.
        let (mut temp, temp_name) = create_temp(parent, mode.unwrap_or(0o666) & 0o777, rel)?;
        let replace = locked.is_some();
        let result = (|| {
            temp.write_all(bytes)
                .map_err(|error| write_error("write", rel, &error))?;
            if let Some(mode) = mode {
                rustix::fs::fchmod(&temp, Mode::from_raw_mode(mode))
                    .map_err(|errno| io_error("keep the permissions of", rel, errno))?;
            }
            temp.sync_all()
                .map_err(|error| write_error("sync", rel, &error))?;
            if replace {
                rustix::fs::renameat(parent, &temp_name, parent, path.name)
                    .map_err(|errno| resolve_error("replace", rel, errno))
            } else {
                create_no_replace(parent, &temp_name, path.name, rel)
            }
        })();
        if let Err(error) = result {
            return Err(
                match rustix::fs::unlinkat(parent, &temp_name, AtFlags::empty()) {
                    Ok(()) => error,
                    Err(errno) => FilesError::Io(format!(
                        "{error}; and the temp file {temp_name} could not be removed: {errno}"
                    )),
                },
            );
        }
        fsync_dir(parent, rel)?;
        drop(locked);
        Ok(FileWritten {
            disk_revision: sha256_hex(bytes),
            size: bytes.len() as u64,
        })
    }

    /// Renames a file or directory; both paths beneath the root. Never overwrites an existing
    /// target (`AlreadyExists`). With `expected_from`, the source must be a regular file with that
    /// disk revision (checked under the same lock writers take). A symlink is moved as a link;
    /// if it now points outside, it is refused when used, like any other.
    pub fn rename(
        &self,
        from: &str,
        to: &str,
        expected_from: Option<String>,
    ) -> Result<(), FilesError> {
        let source = paths::file(from)?;
        let target = paths::file(to)?;
        let source_dir = open_dir(self.fd(), &source.parent, from)?;
        let target_dir = self.open_parent(&target, to)?;
        let locked = match expected_from {
            Some(revision) => {
                let mut locked = lock_existing(source_dir.as_fd(), source.name, from)?;
                check_revision(&mut locked, &revision, from)?;
                Some(locked)
            }
            None => None,
        };
        rustix::fs::renameat_with(
            &source_dir,
            source.name,
            &target_dir,
            target.name,
            RenameFlags::NOREPLACE,
        )
        .map_err(|errno| match errno {
            Errno::EXIST => FilesError::AlreadyExists(to.to_owned()),
            Errno::NOENT => FilesError::NotFound(from.to_owned()),
            other => resolve_error("rename", &format!("{from} to {to}"), other),
        })?;
        fsync_dir(target_dir.as_fd(), to)?;
        fsync_dir(source_dir.as_fd(), from)?;
        drop(locked);
        Ok(())
    }

    /// The folder a file path goes in; a missing one is `ParentMissing`, which says how to make it.
    fn open_parent(&self, path: &paths::FilePath<'_>, rel: &str) -> Result<OwnedFd, FilesError> {
        open_dir(self.fd(), &path.parent, rel).map_err(|error| match error {
            FilesError::NotFound(_) => FilesError::ParentMissing {
                path: rel.to_owned(),
                parent: path.parent.clone(),
            },
            other => other,
        })
    }

    /// Creates the directory `rel`, which must not exist yet (`AlreadyExists`). With `parents`,
    /// each missing directory above it is created first; without, a missing one is
    /// `ParentMissing`. Every directory is made one name at a time inside a parent opened
    /// beneath the root, so nothing is created outside it.
    pub fn create_dir(&self, rel: &str, parents: bool) -> Result<(), FilesError> {
        let path = paths::file(rel)?;
        if parents {
            self.create_parents(rel)?;
        }
        let parent = self.open_parent(&path, rel)?;
        rustix::fs::mkdirat(&parent, path.name, Mode::from_raw_mode(0o777))
            .map_err(|errno| mkdir_error(rel, errno))?;
        fsync_dir(parent.as_fd(), rel)
    }

    /// Creates each missing directory above the entry `rel` (not `rel` itself).
    pub fn create_parents(&self, rel: &str) -> Result<(), FilesError> {
        let path = paths::file(rel)?;
        if path.parent == "." {
            return Ok(());
        }
        let parts: Vec<&str> = path.parent.split('/').collect();
        for depth in 1..=parts.len() {
            let here = parts[..depth].join("/");
            match open_dir(self.fd(), &here, rel) {
                Ok(_) => continue,
                Err(FilesError::NotFound(_)) => {}
                Err(other) => return Err(other),
            }
            let above = if depth == 1 {
                ".".to_owned()
            } else {
                parts[..depth - 1].join("/")
            };
            let above = open_dir(self.fd(), &above, rel)?;
            match rustix::fs::mkdirat(&above, parts[depth - 1], Mode::from_raw_mode(0o777)) {
                // Made meanwhile by someone else: as good, if it is a directory (checked when
                // the next step opens it).
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(mkdir_error(&here, errno)),
            }
            fsync_dir(above.as_fd(), &here)?;
        }
        Ok(())
    }

    /// The directory revision of the folder an entry `rel` is (or would be) in, as
    /// [`ProjectRoot::list`] gives it.
    pub fn parent_revision(&self, rel: &str) -> Result<String, FilesError> {
        let path = paths::file(rel)?;
        let parent = self.open_parent(&path, rel)?;
        read_entries(parent, rel).map(|(_, revision)| revision)
    }

    /// Deletes a regular file whose disk revision is `expected`, or an empty directory whose
    /// directory revision (from [`ProjectRoot::list`]) is `expected`. Anything else (a symlink, a
    /// device) is `NotAFile`. A symlink is never followed here.
    pub fn delete(&self, rel: &str, expected: &str) -> Result<(), FilesError> {
        let path = paths::file(rel)?;
        let parent = open_dir(self.fd(), &path.parent, rel)?;
        let parent = parent.as_fd();
        let stat = rustix::fs::statat(parent, path.name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| resolve_error("inspect", rel, errno))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {
                let mut locked = lock_existing(parent, path.name, rel)?;
                check_revision(&mut locked, expected, rel)?;
                rustix::fs::unlinkat(parent, path.name, AtFlags::empty())
                    .map_err(|errno| resolve_error("delete", rel, errno))?;
            }
            FileType::Directory => {
                let dir = open_beneath(
                    parent,
                    path.name,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
                    Mode::empty(),
                    ResolveFlags::NO_SYMLINKS,
                )
                .map_err(|errno| resolve_error("open directory", rel, errno))?;
                let current = crate::listing::read_entries(dir, rel)?.1;
                if current != expected {
                    return Err(FilesError::RevisionMismatch { current });
                }
                rustix::fs::unlinkat(parent, path.name, AtFlags::REMOVEDIR)
                    .map_err(|errno| resolve_error("delete", rel, errno))?;
            }
            _ => {
                return Err(FilesError::NotAFile(format!(
                    "{rel} is not a regular file or a directory; only those are deleted"
                )));
            }
        }
        fsync_dir(parent, rel)
    }
}

/// Moves the temp file to `name` only if nothing is there. Falls back to `link` + `unlink` on a
/// filesystem without `RENAME_NOREPLACE` (both refuse an existing target atomically).
fn create_no_replace(
    parent: BorrowedFd<'_>,
    temp_name: &str,
    name: &str,
    rel: &str,
) -> Result<(), FilesError> {
    match rustix::fs::renameat_with(parent, temp_name, parent, name, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::INVAL) => {
            rustix::fs::linkat(parent, temp_name, parent, name, AtFlags::empty())
                .map_err(|errno| resolve_error("create", rel, errno))?;
            rustix::fs::unlinkat(parent, temp_name, AtFlags::empty())
                .map_err(|errno| io_error("remove the temp file next to", rel, errno))
        }
        Err(errno) => Err(resolve_error("create", rel, errno)),
    }
}
