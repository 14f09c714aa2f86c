//! Watching the directories of a project the person has open in the file tree, so a file an
//! agent or a terminal creates, changes or removes shows up at once. Linux inotify through
//! rustix, one watch per directory the person expanded (not the whole project: a large tree
//! would exhaust the inotify watch limit), `.git` never watched. Changes are gathered for a
//! short while and reported once per directory, as project-relative directory paths.

use std::collections::{BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;
use tokio::io::unix::AsyncFd;

use crate::paths;

/// How long changes are gathered before they are reported: a build or a checkout that
/// writes hundreds of files is one report, not hundreds.
pub const SETTLE: Duration = Duration::from_millis(150);
/// Most directories one watch follows.
pub const MAX_DIRECTORIES: usize = 4096;

/// One project's watched directories; dropping it stops the watch.
pub struct TreeWatch {
    root: PathBuf,
    fd: Arc<AsyncFd<OwnedFd>>,
    directories: Arc<Mutex<HashMap<i32, String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TreeWatch {
    /// Starts watching (no directory yet; see [`TreeWatch::follow`]). `report` gets the
    /// directories that changed; when it answers false (its window went away) the watch ends.
    /// Call within a Tokio runtime.
    pub fn start(
        root: &Path,
        report: impl Fn(Vec<String>) -> bool + Send + 'static,
    ) -> std::io::Result<TreeWatch> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        // `AsyncFd` owns the `OwnedFd`, so the descriptor cannot be closed while registered:
        // the I/O-safety concern behind `new`'s deprecation does not arise here.
        #[allow(deprecated)]
        let fd = Arc::new(AsyncFd::new(fd)?);
        let directories: Arc<Mutex<HashMap<i32, String>>> = Arc::default();
        let task = tokio::spawn(follow(fd.clone(), directories.clone(), report));
        Ok(TreeWatch {
            root: root.to_path_buf(),
            fd,
            directories,
            task,
        })
    }

    /// Follows the project directory `rel` ("" is the root) from now on.
    pub fn follow(&self, rel: &str) -> Result<(), crate::FilesError> {
        let rel = match paths::dir(rel)? {
            root if root == "." => String::new(),
            rel => rel,
        };
        if rel.split('/').any(|part| part == ".git") {
            return Ok(());
        }
        let mut directories = self.directories.lock().unwrap_or_else(|e| e.into_inner());
        if directories.len() >= MAX_DIRECTORIES {
            return Err(crate::FilesError::TooLarge {
                limit: MAX_DIRECTORIES,
                size: directories.len() + 1,
            });
        }
        let path = if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(&rel)
        };
        let flags = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::DELETE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW;
        let wd = inotify::add_watch(self.fd.get_ref(), &path, flags).map_err(|errno| {
            crate::FilesError::Io(format!("cannot watch {}: {errno}", path.display()))
        })?;
        directories.insert(wd, rel);
        Ok(())
    }
}

async fn follow(
    fd: Arc<AsyncFd<OwnedFd>>,
    directories: Arc<Mutex<HashMap<i32, String>>>,
    report: impl Fn(Vec<String>) -> bool,
) {
    let mut buffer = vec![MaybeUninit::<u8>::uninit(); 16 * 1024];
    loop {
        let mut changed = BTreeSet::new();
        if drain(&fd, &directories, &mut buffer, &mut changed)
            .await
            .is_err()
        {
            return;
        }
        // More changes of the same burst arrive while this waits; they join this report.
        tokio::time::sleep(SETTLE).await;
        if read_ready(&fd, &directories, &mut buffer, &mut changed).is_err() {
            return;
        }
        if !changed.is_empty() && !report(changed.into_iter().collect()) {
            return;
        }
    }
}

/// Waits for the first events and reads what is there.
async fn drain(
    fd: &AsyncFd<OwnedFd>,
    directories: &Mutex<HashMap<i32, String>>,
    buffer: &mut [MaybeUninit<u8>],
    changed: &mut BTreeSet<String>,
) -> std::io::Result<()> {
    loop {
        let mut guard = fd.readable().await?;
        guard.clear_ready();
        read_ready(fd, directories, buffer, changed)?;
        if !changed.is_empty() {
            return Ok(());
        }
    }
}

/// Reads every event queued now, noting the directory each is about.
fn read_ready(
    fd: &AsyncFd<OwnedFd>,
    directories: &Mutex<HashMap<i32, String>>,
    buffer: &mut [MaybeUninit<u8>],
    changed: &mut BTreeSet<String>,
) -> std::io::Result<()> {
    let mut reader = inotify::Reader::new(fd.get_ref(), buffer);
    loop {
        let event = match reader.next() {
            Ok(event) => event,
            Err(Errno::AGAIN) => return Ok(()),
            Err(errno) => return Err(errno.into()),
        };
        let mut directories = directories.lock().unwrap_or_else(|e| e.into_inner());
        if event.events().contains(ReadFlags::QUEUE_OVERFLOW) {
            // Events were lost: every followed directory may have changed.
            changed.extend(directories.values().cloned());
            continue;
        }
        let Some(dir) = directories.get(&event.wd()).cloned() else {
            continue;
        };
        if event.events().contains(ReadFlags::IGNORED) {
            // The directory itself is gone (or moved): its parent shows it.
            directories.remove(&event.wd());
            changed.insert(parent(&dir));
            continue;
        }
        let name = event.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref() == Some(".git") || dir.split('/').any(|p| p == ".git") {
            continue;
        }
        if name
            .as_deref()
            .is_some_and(|n| n.starts_with(crate::TEMP_PREFIX))
        {
            // Lomi's own write in progress; its rename onto the name is the change.
            continue;
        }
        changed.insert(dir);
    }
}

fn parent(dir: &str) -> String {
    dir.rsplit_once('/')
        .map(|(parent, _)| parent.to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reports_each_changed_directory_once_and_never_git() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("src")).expect("src");
        std::fs::create_dir_all(dir.path().join(".git")).expect(".git");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let watch = TreeWatch::start(dir.path(), move |dirs| tx.send(dirs).is_ok()).expect("watch");
        watch.follow("").expect("root");
        watch.follow("src").expect("src");
        watch.follow(".git").expect("ignored, not refused");
        std::fs::write(dir.path().join(".git/index"), b"x").expect("git's own write");
        std::fs::write(dir.path().join("src/a.rs"), b"a").expect("write");
        std::fs::write(dir.path().join("src/b.rs"), b"b").expect("write");
        std::fs::write(dir.path().join("top.txt"), b"t").expect("write");
        let got = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("a report")
            .expect("open");
        assert_eq!(got, ["", "src"]);
        std::fs::write(dir.path().join(".git/HEAD"), b"x").expect("git's own write");
        let quiet = tokio::time::timeout(SETTLE * 4, rx.recv()).await;
        assert!(quiet.is_err(), "{quiet:?}");
        assert!(watch.follow("../outside").is_err());
    }
}
