//! Paths inside a project root for the browser: files to upload, file: URLs to open, and
//! captures to save. Every path is resolved by the kernel with `openat2(RESOLVE_BENEATH)` from a
//! handle on the root, so `..`, absolute paths and symlinks cannot lead outside it.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

fn lexical(rel: &str) -> Result<(), String> {
    if rel.is_empty() || rel.contains('\0') {
        return Err("a project path must be non-empty and without NUL".to_owned());
    }
    if Path::new(rel)
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "{rel:?} must be relative to the project root, without `..`"
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

fn beneath(dir: &OwnedFd, rel: &str, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let mut last = Errno::AGAIN;
    for _ in 0..8 {
        match rustix::fs::openat2(dir.as_fd(), rel, flags | OFlags::CLOEXEC, mode, resolve) {
            Err(Errno::AGAIN) => last = Errno::AGAIN,
            other => return other,
        }
    }
    Err(last)
}

fn why(rel: &str, errno: Errno) -> String {
    match errno {
        Errno::XDEV => format!("{rel:?} leads outside the project"),
        Errno::NOENT => format!("{rel:?} does not exist in the project"),
        other => format!("{rel:?}: {other}"),
    }
}

/// The real absolute path of an existing regular file inside `root`, for Chromium to read.
pub fn confined_existing_file(root: &Path, rel: &str) -> Result<PathBuf, String> {
    lexical(rel)?;
    let dir = open_root(root)?;
    let fd = beneath(&dir, rel, OFlags::PATH, Mode::empty()).map_err(|e| why(rel, e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| why(rel, e))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(format!("{rel:?} is not a regular file"));
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

/// Writes `bytes` to `rel` inside `root` atomically (a temp file in the same directory, then a
/// rename). Without `overwrite`, an existing file is refused.
pub fn write_confined(root: &Path, rel: &str, bytes: &[u8], overwrite: bool) -> Result<(), String> {
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
    let parent = beneath(
        &root_fd,
        &parent_rel,
        OFlags::DIRECTORY | OFlags::RDONLY,
        Mode::empty(),
    )
    .map_err(|e| why(&parent_rel, e))?;
    if !overwrite {
        match rustix::fs::statat(
            &parent,
            name.as_str(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(_) => {
                return Err(format!(
                    "{rel:?} exists; pass overwrite: true to replace it"
                ));
            }
            Err(Errno::NOENT) => {}
            Err(e) => return Err(why(rel, e)),
        }
    }
    let temp = format!(".lomi-tmp.{}.{name}", std::process::id());
    let fd = rustix::fs::openat(
        &parent,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| why(rel, e))?;
    let mut file = std::fs::File::from(fd);
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(error) = written {
        let _removed = rustix::fs::unlinkat(&parent, temp.as_str(), rustix::fs::AtFlags::empty());
        return Err(format!("cannot write {rel:?}: {error}"));
    }
    let renamed = if overwrite {
        rustix::fs::renameat(&parent, temp.as_str(), &parent, name.as_str())
    } else {
        rustix::fs::renameat_with(
            &parent,
            temp.as_str(),
            &parent,
            name.as_str(),
            rustix::fs::RenameFlags::NOREPLACE,
        )
    };
    if let Err(error) = renamed {
        let _removed = rustix::fs::unlinkat(&parent, temp.as_str(), rustix::fs::AtFlags::empty());
        return Err(why(rel, error));
    }
    rustix::fs::fsync(&parent).map_err(|e| why(rel, e))?;
    Ok(())
}
