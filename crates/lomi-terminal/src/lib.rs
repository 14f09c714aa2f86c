//! Lomi's terminal runtime: a real shell (or any program) in a real PTY, whose output agents read
//! and wait on, whose screen a person can watch, and whose whole session is killed on close.
//!
//! The runtime itself ([`Terminal`]) knows nothing of leases, receipts or MCP; [`panels`] puts
//! terminals behind the broker's panels, leases and operation engine (runtimes sit above the
//! broker, below MCP).
//!
//! - [`Terminal`] owns one PTY and the session of the process started on it.
//! - Output is kept twice: raw bytes in a bounded ring (for [`Terminal::output_since`] and
//!   [`Terminal::wait`]) and a `vt100` screen with bounded scrollback (for [`Terminal::screen`]).
//! - [`key_bytes`] turns the key names agents use into the bytes a terminal sends.
//!
//! Linux only: the session's processes are found through `/proc`. The terminal reaps its own
//! child; session processes orphaned by a kill are re-parented to PID 1 (or a subreaper), which
//! must reap them, or they linger as zombies (dead, holding no resources but a pid).

pub mod guard;
mod keys;
mod matcher;
mod output;
pub mod panels;
mod serve;
mod session;
mod terminal;

pub use keys::{KEY_NAMES, key_bytes};
pub use session::MARKER_VARIABLE;
pub use terminal::{
    ExitStatus, Interrupted, Output, Progress, Screen, Terminal, TerminalConfig, TerminalError,
    WaitFor, WaitOutcome,
};
