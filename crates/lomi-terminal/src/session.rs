//! The processes of a terminal's session, found through `/proc`, and signals sent to all of them.
//!
//! Killing the child's process group is not enough: an interactive shell puts every job (`sleep
//! 1000 &`, a pipeline) in its own group. All of them share the child's session, though, because
//! the child is the session leader. A process that calls `setsid` itself (a daemon, `nohup
//! setsid …`) leaves the session, so every process a terminal starts also carries its marker in
//! the environment ([`MARKER_VARIABLE`]), which its children inherit: close ends those too, and
//! the next start of Lomi ends what a killed one left. A program that clears its own
//! environment and leaves the session escapes both.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment variable every process of a terminal carries: `LOMI_TERMINAL=<marker>`.
pub const MARKER_VARIABLE: &str = "LOMI_TERMINAL";

/// The processes of one terminal: its session (while its id still names it) and every process
/// carrying its marker.
#[derive(Clone, Copy)]
pub(crate) struct Members<'a> {
    pub session: Option<i32>,
    pub marker: Option<&'a str>,
}

/// Every other process's pid, from `/proc`.
fn other_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = i32::try_from(std::process::id()).unwrap_or(-1);
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != own)
        .collect()
}

/// A process's terminal marker, read from its environment as it started (only processes of
/// this user can be read).
fn marker_of(pid: i32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{MARKER_VARIABLE}=");
    environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// The pids of the terminal's processes that can still run (zombies are dead already; only
/// their parent can remove them). Never includes this process.
pub(crate) fn live_members(members: Members<'_>) -> Vec<i32> {
    other_pids()
        .into_iter()
        .filter(|&pid| {
            stat(pid).is_some_and(|stat| {
                stat.runnable()
                    && (Some(stat.session) == members.session
                        || members
                            .marker
                            .is_some_and(|marker| marker_of(pid).as_deref() == Some(marker)))
            })
        })
        .collect()
}

/// Live processes whose marker starts with `prefix`, with their marker: what the terminals of
/// an earlier Lomi on the same data left running.
pub fn marked(prefix: &str) -> Vec<(i32, String)> {
    other_pids()
        .into_iter()
        .filter_map(|pid| {
            let marker = marker_of(pid).filter(|marker| marker.starts_with(prefix))?;
            stat(pid).filter(Stat::runnable).map(|_| (pid, marker))
        })
        .collect()
}

/// Sends `signal` to each process; one that is gone by then is skipped.
pub fn signal_pids(pids: &[i32], signal: Signal) {
    for &pid in pids {
        match kill(Pid::from_raw(pid), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(error) => {
                tracing::debug!(pid, %signal, %error, "could not signal a terminal's process")
            }
        }
    }
}

/// Ends the processes the terminals of an earlier Lomi on this data dir left running (it was
/// killed, or a program left its terminal's session): SIGTERM, then SIGKILL after the grace.
/// Returns how many there were.
pub(crate) fn end_leftovers(data_key: &str, owner: &str, grace: std::time::Duration) -> usize {
    let leftovers = || -> Vec<i32> {
        marked(&format!("{data_key}."))
            .into_iter()
            .filter(|(_, marker)| !marker.starts_with(owner))
            .map(|(pid, _)| pid)
            .collect()
    };
    let found = leftovers();
    if found.is_empty() {
        return 0;
    }
    tracing::warn!(
        "ending {} process(es) that agents' terminals of an earlier Lomi on this data left running: {found:?}",
        found.len()
    );
    signal_pids(&found, Signal::SIGTERM);
    let deadline = std::time::Instant::now() + grace;
    while !leftovers().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    signal_pids(&leftovers(), Signal::SIGKILL);
    found.len()
}

/// Sends `signal` to each live process of the terminal; a process that is gone by then is
/// skipped.
pub(crate) fn signal_all(members: Members<'_>, signal: Signal) {
    signal_pids(&live_members(members), signal);
}

struct Stat {
    state: char,
    session: i32,
}

impl Stat {
    fn runnable(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Fields of `/proc/PID/stat`: `pid (comm) state ppid pgrp session …`; `comm` may hold spaces and
/// parentheses, so the fields are counted from the last `)`.
fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &text[text.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let session = fields.nth(2)?.parse().ok()?;
    Some(Stat { state, session })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_but_never_listed() {
        let own = i32::try_from(std::process::id()).expect("pid fits i32");
        let session = stat(own).expect("own /proc stat").session;
        let members = Members {
            session: Some(session),
            marker: None,
        };
        assert!(!live_members(members).contains(&own));
    }
}
