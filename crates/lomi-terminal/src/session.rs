//! The processes of a terminal's session, found through `/proc`, and signals sent to all of them.
//!
//! Killing the child's process group is not enough: an interactive shell puts every job (`sleep
//! 1000 &`, a pipeline) in its own group. All of them share the child's session, though, because
//! the child is the session leader. A process that calls `setsid` itself (a daemon) escapes.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The pids of the session's processes that can still run (zombies are dead already; only their
/// parent can remove them). Never includes this process.
pub(crate) fn live_members(session: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = i32::try_from(std::process::id()).unwrap_or(-1);
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != own)
        .filter(|&pid| stat(pid).is_some_and(|stat| stat.session == session && stat.runnable()))
        .collect()
}

/// Sends `signal` to each live process of the session; a process that is gone by then is skipped.
pub(crate) fn signal_all(session: i32, signal: Signal) {
    for pid in live_members(session) {
        match kill(Pid::from_raw(pid), signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(error) => {
                tracing::debug!(pid, %signal, %error, "could not signal a session member")
            }
        }
    }
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
        assert!(!live_members(session).contains(&own));
    }
}
