//! What an operation waiting for the person's decision will do, in the person's terms: the
//! one shape the decision dialog, `lomi decisions` and the `decisionList` reply show. The
//! broker makes it (`Broker::effect`); this crate only says what it looks like.

use serde::{Deserialize, Serialize};

/// The most bytes of a diff, a file's first lines or a script an effect carries; longer is
/// cut at a line end and says so (`truncated`).
pub const MAX_EFFECT_TEXT_BYTES: usize = 16 * 1024;

/// What one operation will do: a sentence, then what exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    /// One sentence a person reads first: "Overwrite notes.txt (+2 −1 lines)".
    pub summary: String,
    #[serde(flatten)]
    pub detail: EffectDetail,
}

/// What exactly, by kind of effect (`kind` on the wire).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum EffectDetail {
    /// A file written or created: the unified diff from what is on disk now to what the
    /// operation writes. A binary file has sizes instead of a diff.
    FileWrite {
        path: String,
        /// No file there now: it will be created.
        creates: bool,
        /// `None` for a binary file, or when the file on disk could not be read (`note`).
        diff: Option<String>,
        truncated: bool,
        binary: bool,
        /// The size on disk now (`None`: no file, or unreadable).
        size_before: Option<u64>,
        size_after: u64,
        /// Why part of the effect could not be shown.
        note: Option<String>,
    },
    /// A file deleted: its size and first lines (binary: size only).
    FileDelete {
        path: String,
        size: Option<u64>,
        first_lines: Option<String>,
        truncated: bool,
        binary: bool,
        note: Option<String>,
    },
    /// A file or folder renamed or moved.
    Move { from: String, to: String },
    /// A commit: the changes staged now (its diff) and the message.
    Commit {
        message: String,
        files: Vec<String>,
        staged_diff: Option<String>,
        truncated: bool,
        note: Option<String>,
    },
    /// A Git change to some files, a branch or the index: what it acts on.
    Git { action: String, files: Vec<String> },
    /// Text that will be typed (into a terminal, a page or a phone).
    Typed { into: String, text: String },
    /// A command that will run (on a phone, or as a terminal's program).
    Command { on: String, command: String },
    /// A script that will run in a web page.
    Script { script: String, truncated: bool },
    /// An address a browser (or a phone) will open.
    Navigate { url: String },
    /// A message sent to a model provider, which cannot be taken back.
    ChatSend {
        message: Option<String>,
        conversation: Option<String>,
        provider: Option<String>,
        model: Option<String>,
        note: Option<String>,
    },
    /// An Android device an agent will use.
    Device {
        serial: String,
        model: Option<String>,
    },
    /// Anything else: what changes, as label and value pairs from the request.
    Change { facts: Vec<Fact> },
}

/// One label and value of a [`EffectDetail::Change`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    pub label: String,
    pub value: String,
}

/// `text` cut to at most [`MAX_EFFECT_TEXT_BYTES`], at a line end when one is near; whether
/// it was cut.
pub fn bounded(text: &str) -> (String, bool) {
    bounded_to(text, MAX_EFFECT_TEXT_BYTES)
}

/// `text` cut to at most `max` bytes (at a character boundary, and at a line end when there
/// is one in the second half); whether it was cut.
pub fn bounded_to(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    let cut = match cut.rfind('\n') {
        Some(line_end) if line_end >= max / 2 => &cut[..=line_end],
        _ => cut,
    };
    (cut.to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_a_line_end_and_a_character_boundary() {
        assert_eq!(bounded_to("short", 10), ("short".to_owned(), false));
        assert_eq!(
            bounded_to("line one\nline two\n", 12),
            ("line one\n".to_owned(), true)
        );
        // "é" is two bytes: a cut in its middle moves before it.
        assert_eq!(bounded_to("ééé", 3), ("é".to_owned(), true));
    }

    #[test]
    fn an_effect_is_flat_on_the_wire() {
        let effect = Effect {
            summary: "Rename a to b".to_owned(),
            detail: EffectDetail::Move {
                from: "a".to_owned(),
                to: "b".to_owned(),
            },
        };
        assert_eq!(
            serde_json::to_value(&effect).expect("json"),
            serde_json::json!({"summary": "Rename a to b", "kind": "move", "from": "a", "to": "b"})
        );
    }
}
