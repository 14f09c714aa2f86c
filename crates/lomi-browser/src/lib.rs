//! Lomi's browser runtime: one headless Chromium per browser panel (Debian's `/usr/bin/chromium`
//! over chromiumoxide), its tabs, snapshots whose element refs are scoped to the snapshot and
//! its document, actions confirmed by the page itself, console and network logs, captures,
//! and the browser tools over the broker. The snapshot text and the parsing of refs and keys
//! are lomi-snapshot's (plain functions, fuzzed without a browser).

mod browser;
mod direct;
mod launch;
pub mod panels;
mod serve;
mod snapshot;
mod tab;

pub use browser::{Browser, BrowserOptions, Exit};
pub use launch::{FLAGS, chromium_path, delete_profile, profile_user};
pub use lomi_files::confine::{confined_existing_file, write_confined};
pub use lomi_snapshot::SnapshotOptions;
pub use snapshot::SnapshotText;
pub use tab::{
    ActionError, ActionResult, CaptureArea, CaptureLimit, Committed, Destination, Emulation, Tab,
    Taken, Target, WaitFor, Waited,
};

/// Why a browser call failed, one variant per way the caller should react.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// Chromium did not start.
    #[error("{0}")]
    Launch(String),
    /// The browser process is gone (crashed, killed or closed).
    #[error("the browser is gone: {0}")]
    Gone(String),
    /// A snapshot or ref no longer names what it did (navigation, node gone, older snapshot).
    #[error("{0}")]
    Stale(String),
    /// The request cannot be carried out as asked.
    #[error("{0}")]
    Invalid(String),
    /// Waiting for the page ran out of time.
    #[error("{0}")]
    Timeout(String),
    /// Chromium answered with an error.
    #[error("Chromium: {0}")]
    Cdp(String),
}

/// A ref or key spec that is not one: the agent reads its message as it is.
impl From<lomi_snapshot::Invalid> for BrowserError {
    fn from(error: lomi_snapshot::Invalid) -> Self {
        BrowserError::Invalid(error.to_string())
    }
}
