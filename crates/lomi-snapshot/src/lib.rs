//! The pure half of Lomi's browser snapshots: frames' text stitched into one tree, rendered
//! for the agent (`find`, `sinceSnapshotId`, `fromLine`, `maxBytes`), and the parsing of element
//! refs and key specs. Plain functions over text; the browser itself is lomi-browser's.

mod frames;
#[doc(hidden)]
pub mod fuzzing;
mod key;
mod render;

use std::fmt;

pub use frames::{FrameRecord, split_ref, stitch};
pub use key::{Key, parse_key};
pub use render::{Rendered, SnapshotOptions, render};

/// A ref or key spec that is not one. Its text is what the agent reads (lomi-browser answers
/// it as an invalid argument).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid(String);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}
