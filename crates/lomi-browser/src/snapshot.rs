//! Snapshot text: the lines the page helper built, filtered by `find`, compared with an earlier
//! snapshot, and bounded by `maxBytes` so a large page never floods the agent.

use std::collections::HashMap;

use lomi_protocol::tools::browser::{DialogView, FrameView};

/// What the agent asked of a snapshot.
#[derive(Clone, Debug, Default)]
pub struct SnapshotOptions {
    pub max_bytes: usize,
    pub find: Option<String>,
    pub since_snapshot_id: Option<String>,
}

/// A finished snapshot.
#[derive(Clone, Debug)]
pub struct SnapshotText {
    pub snapshot_id: String,
    pub navigation_id: String,
    pub url: String,
    pub title: String,
    pub text: String,
    pub truncated: bool,
    pub refs: u32,
    pub frames: Vec<FrameView>,
    pub dialog: Option<DialogView>,
}

pub(crate) struct Rendered {
    pub text: String,
    pub truncated: bool,
}

fn depth(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Lines containing `needle` (case-insensitive) with every ancestor line, in order.
fn find(lines: &[String], needle: &str) -> Vec<String> {
    let needle = needle.to_lowercase();
    let mut keep = vec![false; lines.len()];
    // The open ancestors of the current line: (depth, index).
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let d = depth(line);
        while stack.last().is_some_and(|(sd, _)| *sd >= d) {
            stack.pop();
        }
        if line.to_lowercase().contains(&needle) {
            keep[i] = true;
            for (_, a) in &stack {
                keep[*a] = true;
            }
        }
        stack.push((d, i));
    }
    lines
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(l, _)| l.clone())
        .collect()
}

/// What changed from `old` to `new`: lines after the common start and end, as `- ` (gone)
/// and `+ ` (new), each side keeping its order.
fn diff(old: &[String], new: &[String]) -> Vec<String> {
    let start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let end = old[start..]
        .iter()
        .rev()
        .zip(new[start..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_mid = &old[start..old.len() - end];
    let new_mid = &new[start..new.len() - end];
    let mut counts: HashMap<&str, isize> = HashMap::new();
    for line in old_mid {
        *counts.entry(line.as_str()).or_default() += 1;
    }
    for line in new_mid {
        *counts.entry(line.as_str()).or_default() -= 1;
    }
    let mut out = Vec::new();
    let mut removed = counts.clone();
    for line in old_mid {
        let n = removed.entry(line.as_str()).or_default();
        if *n > 0 {
            out.push(format!("- {line}"));
            *n -= 1;
        }
    }
    let mut added = counts;
    for line in new_mid {
        let n = added.entry(line.as_str()).or_default();
        if *n < 0 {
            out.push(format!("+ {line}"));
            *n += 1;
        }
    }
    out
}

pub(crate) fn render(
    lines: &[String],
    since: Option<&[String]>,
    options: &SnapshotOptions,
) -> Rendered {
    let mut chosen: Vec<String> = match &options.find {
        Some(needle) => find(lines, needle),
        None => lines.to_vec(),
    };
    if let Some(old) = since {
        let old = match &options.find {
            Some(needle) => find(old, needle),
            None => old.to_vec(),
        };
        chosen = diff(&old, &chosen);
    }
    let total = chosen.len();
    let mut text = String::new();
    let mut kept = 0;
    for line in &chosen {
        // Room for the closing note.
        if text.len() + line.len() + 1 > options.max_bytes.saturating_sub(96) {
            break;
        }
        text.push_str(line);
        text.push('\n');
        kept += 1;
    }
    let truncated = kept < total;
    if truncated {
        text.push_str(&format!(
            "… {} more lines not shown (maxBytes {}); narrow with find, or raise maxBytes\n",
            total - kept,
            options.max_bytes
        ));
    }
    Rendered { text, truncated }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn find_keeps_ancestors() {
        let tree = lines(
            "list\n listitem\n  link \"a\" [e1]\n listitem\n  link \"b\" [e2]\nbutton \"Go\" [e3]",
        );
        assert_eq!(
            find(&tree, "\"B\""),
            lines("list\n listitem\n  link \"b\" [e2]")
        );
    }

    #[test]
    fn diff_shows_changes_only() {
        let old = lines("a\nb\nc\nd");
        let new = lines("a\nb\nx\nd");
        assert_eq!(diff(&old, &new), lines("- c\n+ x"));
    }

    #[test]
    fn bound_says_what_is_left_out() {
        let tree: Vec<String> = (0..1000).map(|i| format!("listitem \"{i}\"")).collect();
        let options = SnapshotOptions {
            max_bytes: 1024,
            ..SnapshotOptions::default()
        };
        let out = render(&tree, None, &options);
        assert!(out.truncated);
        assert!(out.text.len() <= 1024, "{}", out.text.len());
        assert!(out.text.contains("more lines not shown"));
    }
}
