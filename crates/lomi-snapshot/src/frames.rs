//! A snapshot's frames: each frame's text stitched below the iframe that holds it, and element
//! refs split into their frame's prefix and the element's number.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::Invalid;

/// One frame of a snapshot, as the tab remembers it.
#[derive(Clone, Debug)]
pub struct FrameRecord {
    pub frame_id: String,
    /// Lomi's isolated world in the frame (a CDP execution context id).
    pub context: i64,
    /// The owner iframe: (its frame's prefix, its element number).
    pub owner: Option<(String, u64)>,
}

/// Joins a frame's text with its child frames' text, each below its iframe line. `texts` holds
/// what the page helper answered for each frame (`{text, refs}`) by ref prefix.
pub fn stitch(
    prefix: &str,
    texts: &HashMap<String, Value>,
    records: &HashMap<String, FrameRecord>,
    indent: usize,
    lines: &mut Vec<String>,
    refs: &mut HashSet<String>,
) {
    let Some(taken) = texts.get(prefix) else {
        return;
    };
    if let Some(list) = taken["refs"].as_array() {
        refs.extend(list.iter().filter_map(|r| r.as_str().map(str::to_owned)));
    }
    // Child frames by the ref of their iframe element in this frame.
    let children: HashMap<String, &String> = records
        .iter()
        .filter_map(|(child, record)| {
            let (parent, number) = record.owner.as_ref()?;
            (parent == prefix).then(|| (format!("[{prefix}{number}]"), child))
        })
        .collect();
    let pad = " ".repeat(indent);
    for line in taken["text"].as_str().unwrap_or_default().lines() {
        let depth = line.len() - line.trim_start_matches(' ').len();
        lines.push(format!("{pad}{line}"));
        if line[depth..].starts_with("iframe")
            && let Some(child) = children
                .iter()
                .find(|(marker, _)| line.contains(marker.as_str()))
                .map(|(_, c)| *c)
        {
            stitch(child, texts, records, indent + depth + 1, lines, refs);
        }
    }
}

/// A ref's frame prefix (up to its last `e`) and its element number: `f2e17` is frame `f2e`,
/// element 17.
pub fn split_ref(element_ref: &str) -> Result<(&str, u64), Invalid> {
    let not_a_ref = || Invalid(format!("{element_ref:?} is not a ref"));
    let split = element_ref.rfind('e').ok_or_else(not_a_ref)?;
    let (prefix, number) = element_ref.split_at(split + 1);
    let number: u64 = number.parse().map_err(|_| not_a_ref())?;
    Ok((prefix, number))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refs_split_at_their_last_e() {
        assert_eq!(split_ref("e12"), Ok(("e", 12)));
        assert_eq!(split_ref("f2e17"), Ok(("f2e", 17)));
        for bad in ["", "17", "e", "f2e", "e1x", "e-1"] {
            assert_eq!(
                split_ref(bad),
                Err(Invalid(format!("{bad:?} is not a ref"))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_child_frame_is_stitched_below_its_iframe() {
        let texts = HashMap::from([
            (
                "e".to_owned(),
                json!({"text": "main\n iframe [e2]\nbutton [e3]", "refs": ["e2", "e3"]}),
            ),
            (
                "f1e".to_owned(),
                json!({"text": "link \"in\" [f1e1]", "refs": ["f1e1"]}),
            ),
        ]);
        let record = |owner: Option<(&str, u64)>| FrameRecord {
            frame_id: String::new(),
            context: 0,
            owner: owner.map(|(prefix, number)| (prefix.to_owned(), number)),
        };
        let records = HashMap::from([
            ("e".to_owned(), record(None)),
            ("f1e".to_owned(), record(Some(("e", 2)))),
        ]);
        let mut lines = Vec::new();
        let mut refs = HashSet::new();
        stitch("e", &texts, &records, 0, &mut lines, &mut refs);
        assert_eq!(
            lines,
            [
                "main",
                " iframe [e2]",
                "  link \"in\" [f1e1]",
                "button [e3]"
            ]
        );
        assert_eq!(refs, HashSet::from(["e2", "e3", "f1e1"].map(str::to_owned)));
    }
}
