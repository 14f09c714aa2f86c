//! A finished snapshot as a tab answers it. Its text (frames stitched, `find`, `since`,
//! `maxBytes`) is rendered by lomi-snapshot.

use lomi_protocol::tools::browser::{DialogView, FrameView};

/// A finished snapshot.
#[derive(Clone, Debug)]
pub struct SnapshotText {
    pub snapshot_id: String,
    pub navigation_id: String,
    pub url: String,
    pub title: String,
    pub text: String,
    pub truncated: bool,
    pub lines: u32,
    pub next_from_line: Option<u32>,
    pub refs: u32,
    pub frames: Vec<FrameView>,
    pub dialog: Option<DialogView>,
    /// The main document is still being parsed (a navigation just committed): the tree may
    /// be empty or partial.
    pub loading: bool,
}
