//! Single files inside a project root for the runtimes: files a browser uploads or opens,
//! captures it saves, files a device gets or gives back. Confined by the kernel: every path is
//! opened with `openat2(RESOLVE_BENEATH)` from a handle on the root, so `..`, absolute paths
//! and symlinks cannot lead outside it.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, ResolveFlags};
use rustix::io::Errno;

fn lexical(rel: &str) -> Result<(), String> {
    if rel.is_empty() || rel.len() > 4096 || rel.contains('\0') {
        return Err(
            "path must be 1 to 4,096 bytes, relative to the project root, without NUL".to_owned(),
        );
    }
    if Path::new(rel)
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "{rel:?} leads outside the project: give a path relative to its root, without `..`"
        ));
    }
    Ok(())
}

fn open_root(root: &Path) -> Result<OwnedFd, String> {
    rustix::fs::open(
        root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("the project root {} is not available: {e}", root.display()))
}

fn beneath(dir: &OwnedFd, rel: &str, flags: OFlags) -> Result<OwnedFd, Errno> {
    crate::root::open_beneath(
        dir.as_fd(),
        rel,
        flags,
        Mode::empty(),
        ResolveFlags::empty(),
    )
}

fn why(rel: &str, errno: Errno) -> String {
    match errno {
        Errno::XDEV => format!("{rel:?} leads outside the project"),
        Errno::NOENT => format!("{rel:?} does not exist in the project"),
        other => format!("{rel:?}: {other}"),
    }
}

/// An existing regular file inside `root`, open for reading, and its size.
pub fn open_confined(root: &Path, rel: &str) -> Result<(File, u64), String> {
    lexical(rel)?;
    let dir = open_root(root)?;
    let fd = beneath(&dir, rel, OFlags::RDONLY).map_err(|e| why(rel, e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| why(rel, e))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(format!("{rel:?} is not a regular file"));
    }
    Ok((File::from(fd), u64::try_from(stat.st_size).unwrap_or(0)))
}

/// The real absolute path of an existing regular file inside `root`, for a program that
/// opens it by name (Chromium).
pub fn confined_existing_file(root: &Path, rel: &str) -> Result<PathBuf, String> {
    confined_existing(
        root,
        rel,
        rustix::fs::FileType::RegularFile,
        "a regular file",
    )
}

/// The real absolute path of an existing directory inside `root` (a terminal's working
/// directory); an empty `rel` is the root itself.
pub fn confined_existing_dir(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let rel = if rel.is_empty() { "." } else { rel };
    confined_existing(root, rel, rustix::fs::FileType::Directory, "a directory")
}

fn confined_existing(
    root: &Path,
    rel: &str,
    kind: rustix::fs::FileType,
    what: &str,
) -> Result<PathBuf, String> {
    lexical(rel)?;
    let dir = open_root(root)?;
    let fd = beneath(&dir, rel, OFlags::PATH).map_err(|e| why(rel, e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| why(rel, e))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != kind {
        return Err(format!("{rel:?} is not {what}"));
    }
    let real = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&fd)
    ))
    .map_err(|e| format!("cannot resolve {rel:?}: {e}"))?;
    let root_real = root
        .canonicalize()
        .map_err(|e| format!("the project root is not available: {e}"))?;
    if !real.starts_with(&root_real) {
        return Err(format!("{rel:?} leads outside the project"));
    }
    Ok(real)
}

/// Checks that `rel` could be written (its folder exists inside the project, and without
/// `overwrite` no file is there), before anything is asked of the device.
pub fn check_writable(root: &Path, rel: &str, overwrite: bool) -> Result<(), String> {
    let (parent, name) = parent_and_name(root, rel)?;
    exists_check(&parent, rel, &name, overwrite)
}

fn parent_and_name(root: &Path, rel: &str) -> Result<(OwnedFd, String), String> {
    lexical(rel)?;
    let path = Path::new(rel);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{rel:?} does not name a file"))?
        .to_owned();
    let parent_rel = path
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".to_owned());
    let root_fd = open_root(root)?;
    let parent = beneath(&root_fd, &parent_rel, OFlags::DIRECTORY | OFlags::RDONLY)
        .map_err(|e| why(&parent_rel, e))?;
    Ok((parent, name))
}

fn exists_check(parent: &OwnedFd, rel: &str, name: &str, overwrite: bool) -> Result<(), String> {
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) if !overwrite => Err(format!(
            "{rel:?} exists; pass overwrite: true to replace it"
        )),
        Ok(stat)
            if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                != rustix::fs::FileType::RegularFile =>
        {
            Err(format!("{rel:?} is not a regular file"))
        }
        Ok(_) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(why(rel, e)),
    }
}

/// Writes `bytes` to `rel` inside `root` atomically (a temp file in the same folder, fsync,
/// rename, folder fsync). Without `overwrite`, an existing file is refused.
pub fn write_confined(root: &Path, rel: &str, bytes: &[u8], overwrite: bool) -> Result<(), String> {
    let mut pending = PendingFile::create(root, rel, overwrite)?;
    pending
        .write_all(bytes)
        .map_err(|error| format!("cannot write {rel:?}: {error}"))?;
    pending.commit()
}

/// How many written bytes may wait before their writeback is started, so the disk works while
/// the rest still arrives and the final fsync has little left to do.
const WRITEBACK_STEP: u64 = 1 << 20;

/// A file being written into the project as its bytes arrive: a temp file beside `rel`
/// until [`PendingFile::commit`] makes it `rel` (fsync, rename, folder fsync). Dropped without
/// a commit, the temp file is removed and the project is as it was.
pub struct PendingFile {
    parent: OwnedFd,
    temp: String,
    name: String,
    rel: String,
    overwrite: bool,
    file: File,
    written: u64,
    flushed: u64,
    committed: bool,
}

impl PendingFile {
    /// Checks `rel` as [`check_writable`] does and creates the temp file.
    pub fn create(root: &Path, rel: &str, overwrite: bool) -> Result<PendingFile, String> {
        let (parent, name) = parent_and_name(root, rel)?;
        exists_check(&parent, rel, &name, overwrite)?;
        let temp = format!(".lomi-tmp.{}.{name}", std::process::id());
        let fd = rustix::fs::openat(
            &parent,
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| why(rel, e))?;
        Ok(PendingFile {
            parent,
            temp,
            name,
            rel: rel.to_owned(),
            overwrite,
            file: File::from(fd),
            written: 0,
            flushed: 0,
            committed: false,
        })
    }

    /// Makes the written bytes the file `rel`, durably.
    pub fn commit(mut self) -> Result<(), String> {
        let rel = self.rel.clone();
        self.file
            .sync_all()
            .map_err(|error| format!("cannot write {rel:?}: {error}"))?;
        let renamed = if self.overwrite {
            rustix::fs::renameat(
                &self.parent,
                self.temp.as_str(),
                &self.parent,
                self.name.as_str(),
            )
        } else {
            rustix::fs::renameat_with(
                &self.parent,
                self.temp.as_str(),
                &self.parent,
                self.name.as_str(),
                RenameFlags::NOREPLACE,
            )
        };
        renamed.map_err(|e| why(&rel, e))?;
        self.committed = true;
        rustix::fs::fsync(&self.parent).map_err(|e| why(&rel, e))
    }
}

impl Write for PendingFile {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        let written = self.file.write(buffer)?;
        self.written += written as u64;
        if self.written - self.flushed >= WRITEBACK_STEP {
            // On Linux, DONTNEED starts writeback of the range's dirty pages without waiting
            // for it (and then lets their cache go, which this file does not read again).
            let (from, length) = (self.flushed, self.written - self.flushed);
            if let Err(error) = rustix::fs::fadvise(
                &self.file,
                from,
                std::num::NonZeroU64::new(length),
                rustix::fs::Advice::DontNeed,
            ) {
                tracing::debug!("starting writeback of {}: {error}", self.rel);
            }
            self.flushed = self.written;
        }
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.committed
            && let Err(error) =
                rustix::fs::unlinkat(&self.parent, self.temp.as_str(), AtFlags::empty())
        {
            tracing::warn!("could not remove {}: {error}", self.temp);
        }
    }
}

/// Writes a file into the project from an operation's effect, off the async threads
/// (atomically, refusing an existing one unless `overwrite`), and settles with `result`.
pub async fn write_into(
    root: PathBuf,
    path: String,
    bytes: Vec<u8>,
    overwrite: bool,
    result: impl serde::Serialize + Send,
) -> lomi_broker::EffectOutcome {
    match lomi_broker::off_thread(move || write_confined(&root, &path, &bytes, overwrite)).await {
        Ok(()) => lomi_broker::EffectOutcome::succeeded(&result),
        Err(why) => lomi_broker::EffectOutcome::Failed {
            effect: lomi_protocol::EffectState::None,
            error: lomi_protocol::ToolError::invalid(why),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_in_the_project() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path().join("project");
        std::fs::create_dir(&root).expect("the root");
        std::fs::write(dir.path().join("secret"), b"s").expect("a file outside");
        std::fs::write(root.join("a.txt"), b"abc").expect("a file inside");
        std::os::unix::fs::symlink("../secret", root.join("link")).expect("a symlink");
        assert_eq!(open_confined(&root, "a.txt").map(|(_, size)| size), Ok(3));
        for escaping in ["../secret", "/etc/passwd", "link", "sub/../../secret"] {
            let refused = open_confined(&root, escaping).err().unwrap_or_default();
            assert!(
                refused.contains("outside") || refused.contains("does not exist"),
                "{escaping}: {refused}"
            );
        }
        assert!(write_confined(&root, "../out.txt", b"x", false).is_err());
        assert!(write_confined(&root, "a.txt", b"x", false).is_err());
        assert_eq!(write_confined(&root, "b.txt", b"xyz", false), Ok(()));
        assert_eq!(write_confined(&root, "a.txt", b"new", true), Ok(()));
        assert_eq!(
            std::fs::read(root.join("a.txt")).ok(),
            Some(b"new".to_vec())
        );
        assert!(!dir.path().join("out.txt").exists());
    }

    #[test]
    fn a_pending_file_appears_only_when_committed() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path();
        let names = || {
            let mut names: Vec<String> = std::fs::read_dir(root)
                .map(|entries| {
                    entries
                        .filter_map(|entry| entry.ok())
                        .map(|entry| entry.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names
        };
        let mut dropped = PendingFile::create(root, "a.bin", false).expect("a pending file");
        dropped.write_all(b"part").expect("written");
        drop(dropped);
        assert!(names().is_empty(), "{:?}", names());

        let mut pending = PendingFile::create(root, "a.bin", false).expect("a pending file");
        let big = vec![7u8; (WRITEBACK_STEP as usize) * 2 + 5];
        pending.write_all(&big).expect("written");
        assert!(!root.join("a.bin").exists());
        pending.commit().expect("committed");
        assert_eq!(std::fs::read(root.join("a.bin")).ok(), Some(big));
        assert_eq!(names(), ["a.bin"]);
        assert!(PendingFile::create(root, "a.bin", false).is_err());
        assert!(PendingFile::create(root, "../a.bin", true).is_err());
    }

    #[test]
    fn a_working_directory_stays_in_the_project() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join("src/deep")).expect("folders");
        std::fs::create_dir(dir.path().join("elsewhere")).expect("a folder outside");
        std::fs::write(root.join("a.txt"), b"abc").expect("a file inside");
        std::os::unix::fs::symlink("../elsewhere", root.join("out")).expect("a symlink out");
        std::os::unix::fs::symlink("src/deep", root.join("in")).expect("a symlink in");
        let real = root.canonicalize().expect("real root");
        assert_eq!(confined_existing_dir(&root, ""), Ok(real.clone()));
        assert_eq!(
            confined_existing_dir(&root, "src/deep"),
            Ok(real.join("src/deep"))
        );
        assert_eq!(
            confined_existing_dir(&root, "in"),
            Ok(real.join("src/deep"))
        );
        for (refused, says) in [
            ("out", "outside"),
            ("../elsewhere", "outside"),
            ("/tmp", "outside"),
            ("a.txt", "is not a directory"),
            ("missing", "does not exist"),
        ] {
            let why = confined_existing_dir(&root, refused)
                .err()
                .unwrap_or_default();
            assert!(why.contains(says), "{refused}: {why}");
        }
    }
}
