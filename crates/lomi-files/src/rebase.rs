//! Rebasing the person's edit over the edits made since the text it was made against.
//!
//! An edit set is a list of replacements (`start..end` becomes `text`, character offsets of the
//! same base text, not overlapping). Both sides' edits are taken as changes to the base's
//! characters and gaps: a replacement deletes its characters and inserts its text in the gap
//! before its first one. Merged, a character is kept only when neither side deleted it, and
//! every inserted text is kept, in its gap; when both sides insert into the same gap, the edit
//! that was already applied comes first. So the person's typed text is never dropped, whatever
//! an agent changed around it, and [`rebase`] is the one transformation that reaches the merged
//! text from either side (the window's `frontend/src/rebase.ts` is the same rules, and both are
//! checked against `frontend/src/rebase-cases.json`).

use lomi_protocol::tools::editor::TextEdit;

/// `edits` sorted, with touching replacements joined (`3..3 "a"` and `3..5 "b"` are `3..5
/// "ab"`), so every gap has at most one insertion and every range one owner. Assumes the
/// edits are valid for one text (within it, not overlapping).
pub fn normalize(edits: &[TextEdit]) -> Vec<TextEdit> {
    let mut sorted: Vec<TextEdit> = edits
        .iter()
        .filter(|e| e.start != e.end || !e.text.is_empty())
        .cloned()
        .collect();
    sorted.sort_by_key(|e| (e.start, e.end));
    let mut out: Vec<TextEdit> = Vec::with_capacity(sorted.len());
    for edit in sorted {
        match out.last_mut() {
            Some(last) if last.end == edit.start => {
                last.end = edit.end;
                last.text.push_str(&edit.text);
            }
            _ => out.push(edit),
        }
    }
    out
}

fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// Where base gap `gap` is once `applied` (normalized) is applied: before or after the text
/// `applied` inserted there. A gap inside a range `applied` replaced is at the end of its text.
fn gap_position(applied: &[TextEdit], gap: u64, after_insert: bool) -> u64 {
    let mut shift: i64 = 0;
    for edit in applied {
        let inserted = chars(&edit.text) as i64;
        if gap < edit.start {
            break;
        }
        if gap == edit.start {
            let at = (edit.start as i64 + shift) as u64;
            return if after_insert {
                at + inserted as u64
            } else {
                at
            };
        }
        if gap <= edit.end {
            return (edit.start as i64 + shift + inserted) as u64;
        }
        shift += inserted - (edit.end - edit.start) as i64;
    }
    (gap as i64 + shift) as u64
}

/// `edits`, made against the same base text as `applied`, moved onto the text `applied`
/// produced. `applied_first`: where both insert into the same gap, `applied`'s text comes
/// first. For any base, `apply(apply(base, b), rebase(a, b, true))` equals
/// `apply(apply(base, a), rebase(b, a, false))`.
pub fn rebase(edits: &[TextEdit], applied: &[TextEdit], applied_first: bool) -> Vec<TextEdit> {
    let edits = normalize(edits);
    let applied = normalize(applied);
    let mut out = Vec::new();
    for edit in &edits {
        let at = gap_position(&applied, edit.start, applied_first);
        if !edit.text.is_empty() {
            out.push(TextEdit {
                start: at,
                end: at,
                text: edit.text.clone(),
            });
        }
        // The characters of `edit.start..edit.end` that `applied` kept, in runs that no
        // insertion of `applied` splits; each run is deleted where it now is.
        let mut from = edit.start;
        while from < edit.end {
            if let Some(deleted) = applied.iter().find(|o| o.start <= from && from < o.end) {
                from = deleted.end;
                continue;
            }
            let to = (applied.iter().map(|o| o.start))
                .find(|&start| start > from)
                .map_or(edit.end, |start| start.min(edit.end));
            let start = gap_position(&applied, from, true);
            out.push(TextEdit {
                start,
                end: start + (to - from),
                text: String::new(),
            });
            from = to;
        }
    }
    normalize(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::apply_edits;

    fn edit(start: u64, end: u64, text: &str) -> TextEdit {
        TextEdit {
            start,
            end,
            text: text.to_owned(),
        }
    }

    fn apply(text: &str, edits: &[TextEdit]) -> String {
        if edits.is_empty() {
            return text.to_owned();
        }
        apply_edits(text, edits).unwrap_or_else(|e| panic!("{text:?} {edits:?}: {e:?}"))
    }

    /// The cases the window's rebase is checked against too.
    #[derive(serde::Deserialize)]
    struct Case {
        base: String,
        person: Vec<TextEdit>,
        agent: Vec<TextEdit>,
        merged: String,
    }

    #[test]
    fn the_persons_edit_lands_on_the_agents_text() {
        let cases: Vec<Case> =
            serde_json::from_str(include_str!("../../../frontend/src/rebase-cases.json"))
                .expect("rebase-cases.json");
        assert!(cases.len() >= 8);
        for case in cases {
            let after_agent = apply(&case.base, &case.agent);
            let moved = rebase(&case.person, &case.agent, true);
            assert_eq!(
                apply(&after_agent, &moved),
                case.merged,
                "base {:?}, person {:?}, agent {:?}, moved {moved:?}",
                case.base,
                case.person,
                case.agent
            );
            let after_person = apply(&case.base, &case.person);
            let agent_moved = rebase(&case.agent, &case.person, false);
            assert_eq!(apply(&after_person, &agent_moved), case.merged);
        }
    }

    /// A small deterministic generator: no test depends on chance.
    struct Numbers(u64);

    impl Numbers {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }

        fn edits(&mut self, length: u64) -> Vec<TextEdit> {
            let mut out = Vec::new();
            let mut at = 0;
            while at <= length && out.len() < 4 {
                let start = at + self.below(length - at + 1);
                let end = start + self.below((length - start).min(3) + 1);
                let text = ["", "x", "yz", "é🙂"][self.below(4) as usize];
                out.push(edit(start, end, text));
                at = end + 1;
                if self.below(3) == 0 {
                    break;
                }
            }
            out
        }
    }

    #[test]
    fn both_orders_reach_one_text_and_keep_every_insertion() {
        let mut numbers = Numbers(0x9E37_79B9_7F4A_7C15);
        for round in 0..20_000 {
            let base: String = ["", "a", "abc", "ab🙂de", "abcdefgh"][round % 5].to_owned();
            let length = chars(&base);
            let (a, b) = (numbers.edits(length), numbers.edits(length));
            let one = apply(&apply(&base, &b), &rebase(&a, &b, true));
            let other = apply(&apply(&base, &a), &rebase(&b, &a, false));
            assert_eq!(one, other, "base {base:?}, a {a:?}, b {b:?}");
            let inserted: usize = a.iter().chain(&b).map(|e| e.text.chars().count()).sum();
            let kept = one.chars().count();
            assert!(kept >= inserted, "base {base:?}, a {a:?}, b {b:?}: {one:?}");
        }
    }
}
