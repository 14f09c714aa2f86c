//! Snapshot text: the lines the page helper built, filtered by `find`, compared with an earlier
//! snapshot, and bounded by `maxBytes` so a large page never floods the agent.

use std::collections::HashMap;

use lomi_protocol::json_escaped_len as escaped_len;

/// What the agent asked of a snapshot.
#[derive(Clone, Debug, Default)]
pub struct SnapshotOptions {
    /// The room the tree has in the answer, counted as sent (JSON-escaped).
    pub max_bytes: usize,
    /// The agent's own maxBytes, named in the note of a cut-short answer.
    pub asked_bytes: usize,
    pub find: Option<String>,
    pub since_snapshot_id: Option<String>,
    /// The first line to answer with.
    pub from_line: usize,
}

/// A snapshot's tree as answered: the text and where it stopped.
#[derive(Clone, Debug)]
pub struct Rendered {
    pub text: String,
    pub truncated: bool,
    /// Lines of the whole tree (after find and since).
    pub lines: usize,
    /// The line the next answer starts at, when lines were left out after this one's.
    pub next_from_line: Option<usize>,
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

/// The lines `options` asks for: those matching `find` (with their ancestors), the changes from
/// `since` (an earlier snapshot's lines) if given, from `from_line` on, within `max_bytes`.
pub fn render(lines: &[String], since: Option<&[String]>, options: &SnapshotOptions) -> Rendered {
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
    let from = options.from_line.min(total);
    let mut text = String::new();
    if from > 0 {
        text.push_str(&format!(
            "… lines 0 to {} are in earlier answers\n",
            from - 1
        ));
    }
    // Room for the closing note.
    let room = options.max_bytes.saturating_sub(160);
    let mut used = escaped_len(&text);
    let mut next = total;
    for (i, line) in chosen.iter().enumerate().skip(from) {
        let cost = escaped_len(line) + 2;
        if used + cost > room {
            next = i;
            if i == from {
                // A line longer than the room: its start, so that every answer moves on.
                let (start, _) =
                    lomi_protocol::json_escaped_prefix(line, room.saturating_sub(used + 8));
                text.push_str(start);
                text.push_str(" …\n");
                next = i + 1;
            }
            break;
        }
        text.push_str(line);
        text.push('\n');
        used += cost;
    }
    let truncated = next < total;
    if truncated {
        let left: usize = chosen[next..].iter().map(|l| l.len() + 1).sum();
        text.push_str(&format!(
            "… {} more lines ({left} bytes) not shown within maxBytes {}; go on with fromLine {next}, or narrow with find\n",
            total - next,
            options.asked_bytes
        ));
    }
    Rendered {
        text,
        truncated,
        lines: total,
        next_from_line: truncated.then_some(next),
    }
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
            asked_bytes: 1792,
            ..SnapshotOptions::default()
        };
        let out = render(&tree, None, &options);
        assert!(out.truncated);
        assert!(escaped_len(&out.text) <= 1024, "{}", escaped_len(&out.text));
        let next = out.next_from_line.expect("where to go on");
        assert_eq!(out.lines, 1000);
        assert!(out.text.contains(&format!(
            "{} more lines ({} bytes) not shown within maxBytes 1792; go on with fromLine {next}",
            1000 - next,
            tree[next..].iter().map(|l| l.len() + 1).sum::<usize>()
        )));
        // The next page starts where this one stopped, and every line is in one of them.
        let mut seen = out
            .text
            .lines()
            .filter(|l| l.starts_with("listitem"))
            .count();
        let mut from = next;
        while from < 1000 {
            let page = render(
                &tree,
                None,
                &SnapshotOptions {
                    from_line: from,
                    ..options.clone()
                },
            );
            assert!(page.text.contains(&format!("listitem \"{from}\"")));
            seen += page
                .text
                .lines()
                .filter(|l| l.starts_with("listitem"))
                .count();
            from = page.next_from_line.unwrap_or(1000);
        }
        assert_eq!(seen, 1000);
    }

    #[test]
    fn a_line_longer_than_the_room_is_cut_and_paging_moves_on() {
        let tree = vec!["a".repeat(5000), "short".to_owned(), "b".repeat(5000)];
        let options = SnapshotOptions {
            max_bytes: 512,
            asked_bytes: 1280,
            ..SnapshotOptions::default()
        };
        let mut from = 0;
        let mut pages = 0;
        while from < tree.len() {
            let page = render(
                &tree,
                None,
                &SnapshotOptions {
                    from_line: from,
                    ..options.clone()
                },
            );
            assert!(
                escaped_len(&page.text) <= 512,
                "{}",
                escaped_len(&page.text)
            );
            let next = page.next_from_line.unwrap_or(tree.len());
            assert!(next > from, "stuck at line {from}");
            from = next;
            pages += 1;
        }
        assert!(pages <= 3, "{pages}");
    }

    #[test]
    fn the_bound_counts_bytes_as_sent() {
        // Quotes and backslashes take two bytes in the answer's JSON.
        let tree: Vec<String> = (0..200).map(|i| format!("text \"\\\"{i}\\\"\"")).collect();
        let options = SnapshotOptions {
            max_bytes: 2048,
            asked_bytes: 2048,
            ..SnapshotOptions::default()
        };
        let out = render(&tree, None, &options);
        assert!(out.truncated);
        assert!(escaped_len(&out.text) <= 2048, "{}", escaped_len(&out.text));
        assert!(out.text.len() < 1800);
    }
}
