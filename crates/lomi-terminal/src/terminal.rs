//! One terminal: a process in a PTY, the reader that feeds its output ring and screen, the task
//! that reaps it, and the handle agents and people use to write, read, wait, interrupt and close.

use std::future::poll_fn;
use std::num::NonZeroU16;
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite as _};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::matcher::{Matcher, Pattern};
use crate::output::OutputRing;
use crate::session;

/// How much is read from the PTY at once; big enough that a flood is read as fast as it comes.
const READ_CHUNK: usize = 64 * 1024;
/// How long, after the process exits, its last output may take to be read before the exit is
/// published anyway (a background job that keeps the PTY open would otherwise delay it forever).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// How long `close` keeps sending SIGKILL to a session that will not die (a process stuck in
/// the kernel) before it gives up on the stragglers and only waits for its own child.
const KILL_PERSISTENCE: Duration = Duration::from_secs(10);
/// Longest window title kept, in bytes.
const MAX_TITLE: usize = 4096;

/// What to run and how big its terminal is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalConfig {
    /// The program and its arguments. Empty starts the user's shell, interactive: `$SHELL` if that
    /// file exists, else `/bin/bash`, else `/bin/sh`.
    pub argv: Vec<String>,
    /// The working directory; it must exist.
    pub cwd: PathBuf,
    /// Added to the inherited environment (later entries win). `TERM` defaults to
    /// `xterm-256color` and `PWD` to `cwd`.
    pub env: Vec<(String, String)>,
    /// Marks every process the terminal starts (`LOMI_TERMINAL` in its environment, inherited
    /// by its children), so that close ends the ones that left its session too.
    pub marker: Option<String>,
    pub rows: u16,
    pub cols: u16,
    /// Raw output kept for `output_since` and `wait`, in bytes (default 4 MiB).
    pub scrollback_bytes: usize,
    /// Lines of screen scrollback kept (default 5 000).
    pub scrollback_lines: usize,
}

impl TerminalConfig {
    /// The user's shell in `cwd`, 24 rows by 80 columns, default scrollback.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        TerminalConfig {
            argv: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            marker: None,
            rows: 24,
            cols: 80,
            scrollback_bytes: 4 * 1024 * 1024,
            scrollback_lines: 5_000,
        }
    }
}

/// How the terminal's process ended: an exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExitStatus {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl From<std::process::ExitStatus> for ExitStatus {
    fn from(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt as _;
        ExitStatus {
            code: status.code(),
            signal: status.signal(),
        }
    }
}

/// What a person would see: the visible rows as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    pub rows: u16,
    pub cols: u16,
    /// The visible rows, top to bottom, trailing spaces trimmed.
    pub lines: Vec<String>,
    pub cursor_row: u16,
    pub cursor_col: u16,
    /// True while a full-screen program (less, vim, top) has switched to the alternate screen.
    pub alternate_screen: bool,
    /// The window title the program set (OSC 0 or 2), empty if none.
    pub title: String,
}

/// A range of raw output (escape sequences included), by output cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The cursor of the first byte returned.
    pub start: u64,
    /// The cursor just past the last byte returned: pass it as the next `since`.
    pub end: u64,
    pub bytes: Vec<u8>,
    /// The requested cursor was older than the bytes still kept; output between it and `start`
    /// is lost.
    pub truncated_before: bool,
    /// More output exists after `end` (the read was cut at `max_bytes`).
    pub more: bool,
}

/// What `wait` waits for.
#[derive(Debug, Clone)]
pub enum WaitFor {
    /// This text appears in the output (escape sequences and control characters other than
    /// newline and tab removed before matching; a match spans at most 32 KiB).
    Text(String),
    /// This regex matches the output, cleaned as for `Text`.
    Regex(regex::Regex),
    /// No output arrives for this long.
    Idle(Duration),
    /// The process exits.
    Exit,
}

/// How a `wait` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Matched; `at` is the output cursor just past the matched text, a `since` for the next wait.
    Matched {
        at: u64,
    },
    /// The output was quiet for the requested time.
    Idle,
    /// The process exited (for text and regex waits: without the output having matched).
    Exited(ExitStatus),
    TimedOut,
}

/// An interrupt was delivered (not necessarily obeyed) to this process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted {
    pub process_group: i32,
}

/// Watched by `progress()`: changes as output arrives (coalesced) and once at exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    pub output_cursor: u64,
    pub exited: Option<ExitStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TerminalError {
    #[error("could not start the terminal: {0}")]
    Spawn(String),
    #[error("terminal input/output failed: {0}")]
    Io(String),
    #[error(
        "the terminal's process has exited; close its panel with lomi_terminal_close, then start a new terminal with lomi_terminal_create"
    )]
    Exited,
    /// A write that failed after part of the input was in the PTY.
    #[error("{written} bytes of the input were written before it stopped: {cause}")]
    PartlyWritten {
        written: usize,
        cause: Box<TerminalError>,
    },
    #[error("a terminal needs at least 1 row and 1 column")]
    InvalidSize,
}

/// A process running in its own PTY and session. Clones share it; dropping the last clone kills
/// the session (best effort: `close` is the orderly way).
#[derive(Clone)]
pub struct Terminal {
    inner: Arc<Inner>,
}

/// What the handle owns. Background tasks hold only `Shared`, so the last `Terminal` dropped
/// drops this and kills the session.
struct Inner {
    shared: Arc<Shared>,
    /// The PTY's write half. A std mutex, held only within one poll, never across an await; so
    /// `resize` can stay synchronous.
    writer: Mutex<pty_process::OwnedWritePty>,
    /// Serializes whole writes, so concurrent writers do not interleave.
    write_order: tokio::sync::Mutex<()>,
    /// A duplicate of the PTY's master side, to ask for its foreground process group.
    master: OwnedFd,
    /// One close at a time.
    closing: tokio::sync::Mutex<()>,
}

/// State the reader and reaper tasks share with the handle.
struct Shared {
    pid: u32,
    /// The child's session id, which is its pid: it is the session leader.
    session: i32,
    marker: Option<String>,
    state: Mutex<State>,
    progress: watch::Sender<Progress>,
    /// True once the reader saw the end of output.
    output_done: watch::Sender<bool>,
    /// True once the session had no live process after the child exited. From then on nothing is
    /// signalled, since the pid (and so the session id) may be reused.
    session_gone: AtomicBool,
}

struct State {
    parser: vt100::Parser<Titles>,
    ring: OutputRing,
    exit: Option<ExitStatus>,
}

/// Keeps the window title the program sets.
#[derive(Default)]
struct Titles {
    title: String,
}

impl vt100::Callbacks for Titles {
    fn set_window_title(&mut self, _screen: &mut vt100::Screen, title: &[u8]) {
        let title = &title[..title.len().min(MAX_TITLE)];
        self.title = String::from_utf8_lossy(title).into_owned();
    }
}

impl Terminal {
    /// Starts `config.argv` (or the user's shell) in a new PTY and session. Must be called inside
    /// a tokio runtime: it starts a task reading output and one reaping the process.
    pub fn spawn(config: TerminalConfig) -> Result<Terminal, TerminalError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            TerminalError::Spawn("Terminal::spawn must be called inside a tokio runtime".into())
        })?;
        let rows = NonZeroU16::new(config.rows).ok_or(TerminalError::InvalidSize)?;
        let cols = NonZeroU16::new(config.cols).ok_or(TerminalError::InvalidSize)?;
        if !config.cwd.is_dir() {
            return Err(TerminalError::Spawn(format!(
                "the working directory {} does not exist or is not a directory",
                config.cwd.display()
            )));
        }
        let argv = if config.argv.is_empty() {
            vec![default_shell(), "-i".to_owned()]
        } else {
            config.argv.clone()
        };

        let (pty, pts) = pty_process::open().map_err(|error| {
            TerminalError::Spawn(format!("could not open a pseudo-terminal: {error}"))
        })?;
        pty.resize(pty_process::Size::new(config.rows, config.cols))
            .map_err(|error| {
                TerminalError::Spawn(format!("could not size the terminal: {error}"))
            })?;
        let master = pty.as_fd().try_clone_to_owned().map_err(|error| {
            TerminalError::Spawn(format!(
                "could not duplicate the terminal's descriptor: {error}"
            ))
        })?;

        let mut command = pty_process::Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(&config.cwd)
            .env("TERM", "xterm-256color");
        if config.cwd.is_absolute() {
            // Shells trust PWD when it names the cwd; an inherited one would name ours.
            command = command.env("PWD", &config.cwd);
        }
        for (key, value) in &config.env {
            command = command.env(key, value);
        }
        if let Some(marker) = &config.marker {
            command = command.env(session::MARKER_VARIABLE, marker);
        }
        let child = command.spawn(pts).map_err(|error| {
            TerminalError::Spawn(format!(
                "could not run {:?} in {}: {error}",
                argv[0],
                config.cwd.display()
            ))
        })?;
        let pid = child.id().ok_or_else(|| {
            TerminalError::Spawn("the process was gone before it could be tracked".into())
        })?;
        let session = i32::try_from(pid)
            .map_err(|_| TerminalError::Spawn(format!("pid {pid} does not fit a pid_t")))?;

        let (reader, writer) = pty.into_split();
        let shared = Arc::new(Shared {
            pid,
            session,
            marker: config.marker.clone(),
            state: Mutex::new(State {
                parser: vt100::Parser::new_with_callbacks(
                    rows,
                    cols,
                    config.scrollback_lines,
                    Titles::default(),
                ),
                ring: OutputRing::new(config.scrollback_bytes),
                exit: None,
            }),
            progress: watch::Sender::new(Progress::default()),
            output_done: watch::Sender::new(false),
            session_gone: AtomicBool::new(false),
        });
        runtime.spawn(read_output(Arc::clone(&shared), reader));
        runtime.spawn(reap(Arc::clone(&shared), child));
        tracing::debug!(pid, argv = ?argv, cwd = %config.cwd.display(), "terminal started");
        Ok(Terminal {
            inner: Arc::new(Inner {
                shared,
                writer: Mutex::new(writer),
                write_order: tokio::sync::Mutex::new(()),
                master,
                closing: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// The pid of the process started (the session leader).
    pub fn pid(&self) -> u32 {
        self.inner.shared.pid
    }

    /// Waits until the process printed anything; false if it did not within `timeout` (or exited
    /// without output).
    pub async fn first_output(&self, timeout: Duration) -> bool {
        let mut progress = self.progress();
        let seen = tokio::time::timeout(
            timeout,
            progress.wait_for(|p| p.output_cursor > 0 || p.exited.is_some()),
        )
        .await;
        // Timing out is an answer too: the cursor says whether output came.
        drop(seen);
        self.output_cursor() > 0
    }

    /// Writes `bytes` to the terminal as typed input, all of them, in order; concurrent writes
    /// are serialized. Waits while the program does not read (the PTY's input buffer is full).
    pub async fn write(&self, bytes: &[u8]) -> Result<(), TerminalError> {
        let _order = self.inner.write_order.lock().await;
        if self.exit_status().is_some() {
            return Err(TerminalError::Exited);
        }
        let mut written = 0;
        while written < bytes.len() {
            let rest = &bytes[written..];
            let count = poll_fn(|context| {
                let mut writer = lock(&self.inner.writer);
                Pin::new(&mut *writer).poll_write(context, rest)
            })
            .await
            .map_err(|error| self.io_error(&error))
            .and_then(|count| match count {
                0 => Err(TerminalError::Io("the terminal accepted no input".into())),
                count => Ok(count),
            })
            .map_err(|cause| match written {
                0 => cause,
                written => TerminalError::PartlyWritten {
                    written,
                    cause: Box::new(cause),
                },
            })?;
            written += count;
        }
        Ok(())
    }

    /// The screen as a person sees it now.
    pub fn screen(&self) -> Screen {
        let state = self.inner.shared.lock_state();
        let screen = state.parser.screen();
        let (rows, cols) = screen.size();
        let (cursor_row, cursor_col) = screen.cursor_position();
        Screen {
            rows: rows.get(),
            cols: cols.get(),
            lines: screen
                .rows(0, cols.get())
                .map(|line| line.trim_end_matches(' ').to_owned())
                .collect(),
            cursor_row,
            cursor_col,
            alternate_screen: screen.alternate_screen(),
            title: state.parser.callbacks().title.clone(),
        }
    }

    /// How many bytes were ever read from the PTY: the cursor of the next byte of output.
    pub fn output_cursor(&self) -> u64 {
        self.inner.shared.lock_state().ring.total()
    }

    /// Up to `max_bytes` of raw output from `cursor` on (see [`Output`]).
    pub fn output_since(&self, cursor: u64, max_bytes: usize) -> Output {
        let slice = self.inner.shared.lock_state().ring.since(cursor, max_bytes);
        Output {
            start: slice.start,
            end: slice.end,
            bytes: slice.bytes,
            truncated_before: slice.truncated_before,
            more: slice.more,
        }
    }

    /// Raw output bytes held now (at most `scrollback_bytes`).
    pub fn retained_bytes(&self) -> usize {
        self.inner.shared.lock_state().ring.len()
    }

    /// Screen scrollback lines held now (at most `scrollback_lines`).
    pub fn retained_lines(&self) -> usize {
        self.inner
            .shared
            .lock_state()
            .parser
            .screen()
            .scrollback_len()
    }

    /// Waits for `until` in output at or after cursor `since`, or `timeout`. Wakes on new output
    /// and on exit, never on a timer. Text and regex waits see only output still held: under a
    /// flood, output older than `scrollback_bytes` may pass unmatched.
    pub async fn wait(&self, until: WaitFor, since: u64, timeout: Duration) -> WaitOutcome {
        let deadline = Instant::now() + timeout;
        let pattern = match until {
            WaitFor::Text(text) => Pattern::Text(text),
            WaitFor::Regex(regex) => Pattern::Regex(regex),
            WaitFor::Idle(quiet) => return self.wait_idle(quiet, deadline).await,
            WaitFor::Exit => return self.wait_exit(deadline).await,
        };
        let mut progress = self.progress();
        let mut matcher = Matcher::new(pattern, since);
        if let Some(at) = matcher.find() {
            return WaitOutcome::Matched { at };
        }
        loop {
            // Read progress first: if it says exited, the output read below is all there is.
            let exited = progress.borrow_and_update().exited;
            loop {
                let output = self.output_since(matcher.next(), READ_CHUNK);
                if output.truncated_before {
                    matcher.skip_to(output.start);
                }
                if let Some(at) = matcher.feed(output.start, &output.bytes) {
                    return WaitOutcome::Matched { at };
                }
                if !output.more {
                    break;
                }
            }
            if let Some(status) = exited {
                return WaitOutcome::Exited(status);
            }
            tokio::select! {
                changed = progress.changed() => {
                    if changed.is_err() {
                        return WaitOutcome::TimedOut;
                    }
                }
                () = tokio::time::sleep_until(deadline) => return WaitOutcome::TimedOut,
            }
        }
    }

    async fn wait_idle(&self, quiet: Duration, deadline: Instant) -> WaitOutcome {
        let mut progress = self.progress();
        let mut cursor = progress.borrow_and_update().output_cursor;
        let mut quiet_until = Instant::now() + quiet;
        loop {
            if let Some(status) = progress.borrow().exited {
                return WaitOutcome::Exited(status);
            }
            tokio::select! {
                changed = progress.changed() => {
                    if changed.is_err() {
                        return WaitOutcome::TimedOut;
                    }
                    let now = progress.borrow_and_update().output_cursor;
                    if now != cursor {
                        cursor = now;
                        quiet_until = Instant::now() + quiet;
                    }
                }
                () = tokio::time::sleep_until(quiet_until) => return WaitOutcome::Idle,
                () = tokio::time::sleep_until(deadline) => return WaitOutcome::TimedOut,
            }
        }
    }

    async fn wait_exit(&self, deadline: Instant) -> WaitOutcome {
        let mut progress = self.progress();
        match tokio::time::timeout_at(deadline, progress.wait_for(|p| p.exited.is_some())).await {
            Ok(Ok(progress)) => progress
                .exited
                .map_or(WaitOutcome::TimedOut, WaitOutcome::Exited),
            Ok(Err(_)) | Err(_) => WaitOutcome::TimedOut,
        }
    }

    /// Sends SIGINT to the PTY's foreground process group (what Ctrl-C does, but also when the
    /// program turned Ctrl-C off). Only delivers it: the program may ignore it.
    pub fn interrupt(&self) -> Result<Interrupted, TerminalError> {
        if self.exit_status().is_some() {
            return Err(TerminalError::Exited);
        }
        let group = nix::unistd::tcgetpgrp(&self.inner.master).map_err(|error| {
            TerminalError::Io(format!(
                "could not find the foreground process group: {error}"
            ))
        })?;
        // 0 or 1 would signal this process's own group or every process: never.
        if group.as_raw() <= 1 || group == nix::unistd::getpgrp() {
            return Err(TerminalError::Io(format!(
                "the terminal reports no foreground process group ({group})"
            )));
        }
        killpg(group, Signal::SIGINT).map_err(|error| {
            TerminalError::Io(format!(
                "could not interrupt process group {group}: {error}"
            ))
        })?;
        Ok(Interrupted {
            process_group: group.as_raw(),
        })
    }

    /// Ends the whole session: SIGHUP and SIGTERM (and SIGCONT, so stopped jobs see them) to
    /// every process in it, SIGKILL to whatever is left after `grace`; then reaps the process
    /// and returns how it ended. Safe to call again, and after the process exited on its own.
    pub async fn close(&self, grace: Duration) -> ExitStatus {
        let _closing = self.inner.closing.lock().await;
        let shared = &self.inner.shared;
        if !shared.session_gone.load(Ordering::SeqCst) || shared.marker.is_some() {
            for signal in [Signal::SIGHUP, Signal::SIGTERM, Signal::SIGCONT] {
                session::signal_all(shared.members(), signal);
            }
            // Only the child is ours to be told about; the rest of the session has to be
            // watched in /proc, so this polls, briefly at first.
            let deadline = Instant::now() + grace;
            let mut pause = Duration::from_millis(2);
            while !session::live_members(shared.members()).is_empty() && Instant::now() < deadline {
                tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now())))
                    .await;
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            let give_up = Instant::now() + KILL_PERSISTENCE;
            loop {
                let left = session::live_members(shared.members());
                if left.is_empty() {
                    break;
                }
                if Instant::now() >= give_up {
                    tracing::warn!(
                        session = shared.session,
                        ?left,
                        "session processes survive SIGKILL"
                    );
                    break;
                }
                session::signal_all(shared.members(), Signal::SIGKILL);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            shared.session_gone.store(true, Ordering::SeqCst);
        }
        let mut progress = self.progress();
        let status = progress
            .wait_for(|p| p.exited.is_some())
            .await
            .ok()
            .and_then(|p| p.exited);
        status.unwrap_or(ExitStatus {
            code: None,
            signal: None,
        })
    }

    /// How the process ended, once it has (kept after exit).
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.inner.shared.lock_state().exit
    }

    /// A failure of this terminal as an agent reads it: when its process exited, how (once
    /// that is known) and what to do next.
    pub fn failure(&self, error: TerminalError) -> String {
        match (error, self.exit_status()) {
            (TerminalError::Exited, Some(status)) => {
                let how = match (status.code, status.signal) {
                    (_, Some(signal)) => format!("has exited (killed by signal {signal})"),
                    (Some(code), None) => format!("has exited with code {code}"),
                    (None, None) => "has exited".to_owned(),
                };
                format!(
                    "the terminal's process {how}; its output can still be read with lomi_terminal_read; \
                     close its panel with lomi_terminal_close, then start a new terminal with lomi_terminal_create"
                )
            }
            (error, _) => error.to_string(),
        }
    }

    /// Watches output progress and exit.
    pub fn progress(&self) -> watch::Receiver<Progress> {
        self.inner.shared.progress.subscribe()
    }

    /// Resizes the terminal; the program gets SIGWINCH from the kernel.
    pub fn resize(&self, rows: u16, cols: u16) -> Result<(), TerminalError> {
        let (Some(rows_nonzero), Some(cols_nonzero)) =
            (NonZeroU16::new(rows), NonZeroU16::new(cols))
        else {
            return Err(TerminalError::InvalidSize);
        };
        if self.exit_status().is_some() {
            return Err(TerminalError::Exited);
        }
        lock(&self.inner.writer)
            .resize(pty_process::Size::new(rows, cols))
            .map_err(|error| {
                TerminalError::Io(format!("could not resize the terminal: {error}"))
            })?;
        self.inner
            .shared
            .lock_state()
            .parser
            .set_size(rows_nonzero, cols_nonzero);
        Ok(())
    }

    fn io_error(&self, error: &std::io::Error) -> TerminalError {
        if error.raw_os_error() == Some(nix::errno::Errno::EIO as i32)
            || self.exit_status().is_some()
        {
            TerminalError::Exited
        } else {
            TerminalError::Io(error.to_string())
        }
    }
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Terminal")
            .field("pid", &self.pid())
            .field("exit_status", &self.exit_status())
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let members = self.shared.members();
        if !self.shared.session_gone.swap(true, Ordering::SeqCst) || members.marker.is_some() {
            // No grace: nobody is left to wait for an orderly end. The reaper task still reaps
            // the child if the runtime is running.
            session::signal_all(members, Signal::SIGKILL);
        }
    }
}

impl Shared {
    /// The terminal's processes: its session while its id still names it, and its marked ones.
    fn members(&self) -> session::Members<'_> {
        session::Members {
            session: (!self.session_gone.load(Ordering::SeqCst)).then_some(self.session),
            marker: self.marker.as_deref(),
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn ingest(&self, bytes: &[u8]) {
        let cursor = {
            let mut state = self.lock_state();
            state.parser.process(bytes);
            state.ring.push(bytes);
            state.ring.total()
        };
        self.progress
            .send_modify(|progress| progress.output_cursor = cursor);
    }
}

/// A poisoned lock only means another thread panicked mid-update; the data is still the best
/// there is, and a terminal must stay usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `$SHELL` if it exists, else `/bin/bash`, else `/bin/sh`.
fn default_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|shell| !shell.is_empty() && Path::new(shell).is_file())
        .or_else(|| {
            Path::new("/bin/bash")
                .is_file()
                .then(|| "/bin/bash".to_owned())
        })
        .unwrap_or_else(|| "/bin/sh".to_owned())
}

/// Reads output until the PTY has no writer left (EIO on Linux), feeding the ring and screen.
async fn read_output(shared: Arc<Shared>, mut reader: impl AsyncRead + Unpin) {
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) => break,
            Ok(count) => shared.ingest(&buffer[..count]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            // The last process holding the terminal closed it: the end of output, not a failure.
            Err(error) if error.raw_os_error() == Some(nix::errno::Errno::EIO as i32) => break,
            Err(error) => {
                tracing::warn!(pid = shared.pid, %error, "reading the terminal failed");
                break;
            }
        }
    }
    shared.output_done.send_replace(true);
}

/// Waits for the child, lets the reader catch up, then records and announces the exit.
async fn reap(shared: Arc<Shared>, mut child: tokio::process::Child) {
    let status = match child.wait().await {
        Ok(status) => ExitStatus::from(status),
        Err(error) => {
            tracing::warn!(pid = shared.pid, %error, "could not reap the terminal's process");
            ExitStatus {
                code: None,
                signal: None,
            }
        }
    };
    let mut done = shared.output_done.subscribe();
    let drained = tokio::time::timeout(DRAIN_AFTER_EXIT, done.wait_for(|done| *done))
        .await
        .is_ok_and(|waited| waited.is_ok());
    if !drained {
        tracing::debug!(
            pid = shared.pid,
            "the terminal stays open after its process exited"
        );
    }
    shared.lock_state().exit = Some(status);
    shared
        .progress
        .send_modify(|progress| progress.exited = Some(status));
    let session_only = session::Members {
        session: Some(shared.session),
        marker: None,
    };
    if session::live_members(session_only).is_empty() {
        shared.session_gone.store(true, Ordering::SeqCst);
    }
    tracing::debug!(pid = shared.pid, ?status, "terminal process exited");
}
