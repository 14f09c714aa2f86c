//! Starting and ending one Chromium process: Debian's `/usr/bin/chromium`, headless, with a
//! fresh profile (and temp dir) per browser that is removed when it ends, or a persistent
//! profile folder the person chose (only its temp dir is removed then). The process is bound
//! to Lomi's life: it gets SIGKILL when the thread that started it dies (`setpriv
//! --pdeathsig`), so it is started from one thread that lasts as long as Lomi; and it leads
//! its own process group so that ending it ends its helpers too.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::BrowserError;

/// The flags every Lomi browser runs with (a closed network, no background traffic), beside
/// the profile, the port and the window size.
pub const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    // Frames of every origin live in the page's renderer, so one snapshot walks them all and
    // refs of cross-origin iframes resolve like any other (docs/decisions.md, Browser).
    "--disable-site-isolation-trials",
    "--disable-features=IsolateOrigins,site-per-process,Translate,MediaRouter,OptimizationHints,DialMediaRouteProvider,AutofillServerCommunication",
    // Fewer processes: no zygote (the sandbox is off anyway) and the GPU and network
    // services inside the browser process.
    "--no-zygote",
    "--in-process-gpu",
    "--enable-features=NetworkServiceInProcess2",
    "--renderer-process-limit=4",
    // A page left behind is gone, not kept alive for Back: every navigation gets a fresh
    // document, and a browser driven through hundreds of navigations stays at its size
    // (docs/decisions.md, Browser panels).
    "--disable-back-forward-cache",
];

/// How long Chromium may take to print its DevTools address.
const START_LIMIT: Duration = Duration::from_secs(30);

/// Where Chromium is: `LOMI_CHROMIUM`, else Debian's `/usr/bin/chromium`.
pub fn chromium_path() -> PathBuf {
    std::env::var_os("LOMI_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// A running Chromium process and the profile it owns.
pub struct Process {
    child: Child,
    pid: u32,
    pub ws_url: String,
    /// The profile and temp dir; removed when this is dropped, once Chromium is gone (see
    /// `Drop`). With a persistent profile, only the temp dir is in it.
    profile: Option<tempfile::TempDir>,
    /// Chromium uses a persistent profile: let it finish writing before signalling it.
    persistent: bool,
    /// `end` ran: nothing of Chromium runs any more.
    ended: bool,
}

/// How long a browser with a persistent profile may take to quit by itself (after
/// `Browser.close`) before it is signalled, so that it can write its cookies and storage.
const PERSISTENT_QUIT_LIMIT: Duration = Duration::from_secs(5);

/// Makes a persistent profile folder (private to the user) if it is not there yet.
fn make_profile_dir(dir: &Path) -> Result<(), BrowserError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            BrowserError::Launch(format!(
                "cannot make the browser profile folder {}: {e}",
                dir.display()
            ))
        })
}

impl Process {
    /// Starts Chromium with a fresh profile, or with `persistent` as its profile folder, and
    /// waits for its DevTools address.
    pub async fn start(
        chromium: &Path,
        width: u32,
        height: u32,
        persistent: Option<&Path>,
    ) -> Result<Process, BrowserError> {
        // Only temp folders named lomi-chromium-* are ever removed here; a persistent
        // profile lives in Lomi's data dir and is never touched.
        remove_abandoned_profiles();
        let profile = tempfile::Builder::new()
            .prefix("lomi-chromium-")
            .tempdir()
            .map_err(|e| BrowserError::Launch(format!("cannot make a profile directory: {e}")))?;
        let user_data_dir = match persistent {
            Some(dir) => {
                make_profile_dir(dir)?;
                dir.to_path_buf()
            }
            None => profile.path().join("profile"),
        };
        let tmp = profile.path().join("tmp");
        std::fs::create_dir(&tmp)
            .map_err(|e| BrowserError::Launch(format!("cannot make a temp directory: {e}")))?;
        let mut command = Command::new("setpriv");
        command
            .arg("--pdeathsig")
            .arg("KILL")
            .arg("--")
            .arg(chromium)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", user_data_dir.display()))
            .arg(format!("--window-size={width},{height}"))
            .arg("--remote-debugging-address=127.0.0.1")
            .arg("--remote-debugging-port=0")
            .arg("about:blank")
            // Chromium's own temp files (SingletonSocket folders) go into the profile folder.
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let child = spawn_from_lasting_thread(command).await.map_err(|e| {
            BrowserError::Launch(format!("cannot start {}: {e}", chromium.display()))
        })?;
        let pid = child
            .id()
            .ok_or_else(|| BrowserError::Launch("Chromium exited at once".to_owned()))?;
        // Who owns this profile, so that a later start can remove it if Lomi was killed.
        if let Err(error) = std::fs::write(profile.path().join(OWNER_FILE), pid.to_string()) {
            tracing::debug!("cannot record the profile's owner: {error}");
        }
        // From here on, a start that fails or is dropped ends Chromium through `Drop`.
        let mut process = Process {
            child,
            pid,
            ws_url: String::new(),
            profile: Some(profile),
            persistent: persistent.is_some(),
            ended: false,
        };
        let stderr = process
            .child
            .stderr
            .take()
            .ok_or_else(|| BrowserError::Launch("no stderr from Chromium".to_owned()))?;
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        let found = tokio::time::timeout(START_LIMIT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return Some(url.trim().to_owned());
                }
                if seen.len() < 20 {
                    seen.push(line);
                }
            }
            None
        })
        .await;
        process.ws_url = match found {
            Ok(Some(url)) => url,
            Ok(None) | Err(_) => {
                return Err(BrowserError::Launch(format!(
                    "Chromium did not open its DevTools port; it said: {}",
                    seen.join(" | ")
                )));
            }
        };
        // Keep reading so that Chromium never blocks on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(target: "chromium", "{line}");
            }
        });
        Ok(process)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits until the process exits (it crashed, was killed, or was closed).
    pub async fn wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.wait().await.ok()
    }

    /// Ends the process group: SIGTERM, then SIGKILL after `grace`; reaps the process.
    pub async fn end(&mut self, grace: Duration) {
        if self.persistent && self.child.try_wait().ok().flatten().is_none() {
            // Asked to quit already (Browser.close): it writes its profile on the way out.
            let _quit = tokio::time::timeout(PERSISTENT_QUIT_LIMIT, self.child.wait()).await;
        }
        if self.child.try_wait().ok().flatten().is_none() {
            if let Err(error) = killpg(Pid::from_raw(self.pid as i32), Signal::SIGTERM) {
                tracing::debug!("SIGTERM to Chromium's group {}: {error}", self.pid);
            }
            if tokio::time::timeout(grace, self.child.wait())
                .await
                .is_err()
            {
                kill_group(self.pid);
                let _status = self.child.wait().await;
            }
        }
        // Helpers that outlived the browser process are in the same group.
        kill_group(self.pid);
        group_gone(self.pid).await;
        self.ended = true;
    }
}

impl Drop for Process {
    /// Ends a Chromium dropped without `end`: its start stopped half-way (it failed, or the
    /// operation starting it was cancelled). `kill_on_drop` would reach Chromium's own process
    /// only; its helpers would go on writing into its folder while it is removed, leaving it
    /// behind. So the whole group is killed, and the folder removed once none of it runs.
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        kill_group(self.pid);
        let (pid, folder) = (self.pid, self.profile.take());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                group_gone(pid).await;
                drop(folder);
            });
        }
    }
}

/// How long Chromium's process group may take to die after SIGKILL before its folder is
/// removed anyway.
const GROUP_EXIT_LIMIT: Duration = Duration::from_secs(2);

/// Waits (at most `GROUP_EXIT_LIMIT`) until no process of the group `leader` leads runs.
async fn group_gone(leader: u32) {
    let deadline = Instant::now() + GROUP_EXIT_LIMIT;
    while group_runs(leader) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether a process of the group `leader` leads can still run (zombies are dead already),
/// from `/proc/PID/stat`: `pid (comm) state ppid pgrp …`, counted from the last `)`.
fn group_runs(leader: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some(close) = stat.rfind(')') else {
                return false;
            };
            let mut fields = stat[close + 1..].split_whitespace();
            let state = fields.next();
            let group = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
            group == Some(leader) && !matches!(state, Some("Z" | "X" | "x"))
        })
}

/// Spawns `command` from one thread that lasts as long as Lomi. The parent-death signal a
/// browser gets (`setpriv --pdeathsig`) fires when the *thread* that forked it ends, not the
/// process; the runtime's threads come and go (a worker that waits on the disk hands its work
/// to a new thread and may later end idle), so a browser started from one of them was killed
/// mid-work, at random, more often the busier Lomi was.
pub(crate) async fn spawn_from_lasting_thread(command: Command) -> std::io::Result<Child> {
    type Job = (
        Command,
        tokio::runtime::Handle,
        tokio::sync::oneshot::Sender<std::io::Result<Child>>,
    );
    static SPAWNER: std::sync::OnceLock<std::io::Result<std::sync::mpsc::Sender<Job>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("lomi-spawner".to_owned())
            .spawn(move || {
                // Lives until the process ends: the channel's sender is static.
                while let Ok((mut command, runtime, reply)) = queue.recv() {
                    // The child is registered with the runtime that reaps it.
                    let _entered = runtime.enter();
                    let _gone = reply.send(command.spawn());
                }
            })
            .map(|_| jobs)
    });
    let jobs = match spawner {
        Ok(jobs) => jobs.clone(),
        Err(error) => {
            return Err(std::io::Error::new(
                error.kind(),
                format!("cannot start Lomi's process spawner thread: {error}"),
            ));
        }
    };
    let ended = || std::io::Error::other("Lomi's process spawner thread ended");
    let (reply, answer) = tokio::sync::oneshot::channel();
    jobs.send((command, tokio::runtime::Handle::current(), reply))
        .map_err(|_| ended())?;
    answer.await.map_err(|_| ended())?
}

/// The file in a profile folder that names the Chromium process using it.
const OWNER_FILE: &str = "lomi-owner-pid";

/// Removes the profile folders of browsers whose process is gone: a Lomi killed with SIGKILL
/// cannot remove its own (its browsers die with it).
fn remove_abandoned_profiles() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with("lomi-chromium-")
        {
            continue;
        }
        let owner = std::fs::read_to_string(entry.path().join(OWNER_FILE))
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        let Some(owner) = owner else { continue };
        let alive = match nix::sys::signal::kill(Pid::from_raw(owner), None) {
            Ok(()) => true,
            Err(errno) => errno != nix::errno::Errno::ESRCH,
        };
        if !alive && let Err(error) = std::fs::remove_dir_all(entry.path()) {
            tracing::debug!("cannot remove {}: {error}", entry.path().display());
        }
    }
}

/// The Chromium process using a profile folder, from the `SingletonLock` Chromium keeps in
/// it (`<host>-<pid>`), if that process is alive.
pub fn profile_user(dir: &Path) -> Option<u32> {
    let lock = std::fs::read_link(dir.join("SingletonLock")).ok()?;
    let pid: i32 = lock.to_str()?.rsplit_once('-')?.1.parse().ok()?;
    let alive = match nix::sys::signal::kill(Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(errno) => errno != nix::errno::Errno::ESRCH,
    };
    alive.then_some(pid as u32)
}

/// Removes a persistent profile folder at the person's request; refused while a Chromium
/// uses it. Returns whether there was a folder to remove.
pub fn delete_profile(dir: &Path) -> Result<bool, String> {
    if let Some(pid) = profile_user(dir) {
        return Err(format!(
            "Chromium (pid {pid}) is using the profile {}; close its browser panel first",
            dir.display()
        ));
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(format!("cannot remove {}: {error}", dir.display())),
    }
}

/// SIGKILL to the whole process group (gone already is fine).
pub fn kill_group(pid: u32) {
    if let Err(error) = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL)
        && error != nix::errno::Errno::ESRCH
    {
        tracing::debug!("SIGKILL to Chromium's group {pid}: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts `sleep 300` (longer than any wait here) bound to its parent thread's life (as a browser is) from a thread
    /// that then ends, as the runtime's threads do; answers whether it still runs.
    fn survives_its_asking_thread(spawn_from_lasting: bool) -> bool {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let handle = runtime.handle().clone();
        let mut child = std::thread::spawn(move || {
            handle.block_on(async {
                let mut command = Command::new("setpriv");
                command
                    .args(["--pdeathsig", "KILL", "--", "sleep", "300"])
                    .kill_on_drop(true);
                let child = if spawn_from_lasting {
                    spawn_from_lasting_thread(command).await
                } else {
                    command.spawn()
                };
                // setpriv sets the signal before it runs `sleep`: wait until `sleep` runs
                // (however long a busy machine takes), so this thread ends with the signal in
                // place. Not "until it is no longer setpriv": right after the spawn the child
                // may still carry this thread's name (a vfork'd parent runs again before the
                // child's exec renames it).
                if let Ok(child) = &child
                    && let Some(pid) = child.id()
                {
                    let deadline = Instant::now() + Duration::from_secs(60);
                    while !std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|name| name.trim() == "sleep")
                    {
                        assert!(Instant::now() < deadline, "setpriv never ran sleep");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                child
            })
        })
        .join()
        .expect("the asking thread")
        .expect("spawned");
        runtime.block_on(async {
            // A child bound to the ended thread is killed at once, noticed here within 60 s
            // even on a busy machine; one that is not must still run after a second.
            let watch = if spawn_from_lasting { 1 } else { 60 };
            let deadline = Instant::now() + Duration::from_secs(watch);
            while Instant::now() < deadline {
                if child.try_wait().expect("status").is_some() {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            true
        })
    }

    #[test]
    fn a_browser_outlives_the_runtime_thread_that_started_it() {
        // The fault itself: bound to a thread that ends, the child is killed with it.
        assert!(!survives_its_asking_thread(false));
        assert!(survives_its_asking_thread(true));
    }
}
