//! Ways in for Lomi's fuzzer (`fuzz/`): snapshot stitching and rendering as the browser uses
//! them (the fuzzer parses refs and keys with the crate's own `split_ref` and `parse_key`).
//! Not for other callers; each function calls the real code and nothing else.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::{FrameRecord, SnapshotOptions, render, stitch};

/// One frame's part of a snapshot: its ref prefix, what the page helper answered for it
/// (`{text, refs}`), and the iframe element that holds it (the parent's prefix and the element's
/// number). Owners form a tree, as Chromium's frame tree does: a frame's owner comes before it.
pub struct Frame {
    pub prefix: String,
    pub taken: Value,
    pub owner: Option<(String, u64)>,
}

/// Stitches frames into snapshot lines (the first frame is the main one) and renders them as
/// `lomi_browser_snapshot` would, against `since` (an earlier snapshot's lines) if given.
/// Returns the lines, the refs and the rendered text.
pub fn snapshot(
    frames: Vec<Frame>,
    since: Option<&[String]>,
    options: &SnapshotOptions,
) -> (Vec<String>, HashSet<String>, String) {
    let main = frames.first().map(|frame| frame.prefix.clone());
    let mut texts = HashMap::new();
    let mut records = HashMap::new();
    for (index, frame) in frames.into_iter().enumerate() {
        records.insert(
            frame.prefix.clone(),
            FrameRecord {
                frame_id: format!("frame{index}"),
                context: index as i64,
                owner: frame.owner,
            },
        );
        texts.insert(frame.prefix, frame.taken);
    }
    let mut lines = Vec::new();
    let mut refs = HashSet::new();
    if let Some(main) = main {
        stitch(&main, &texts, &records, 0, &mut lines, &mut refs);
    }
    let rendered = render(&lines, since, options);
    (lines, refs, rendered.text)
}
