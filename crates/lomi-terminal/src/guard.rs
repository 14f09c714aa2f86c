//! Guarded terminal lines: what an agent types into a terminal is read as lines (the text
//! since its last Enter, across inputs, with Backspace applied), and each line it ends is
//! checked against the person's rules before any of the input reaches the PTY. A line typed
//! with keys that let the shell change it (Tab completion, history, cursor moves) is marked
//! `edited`: Lomi cannot read what the shell will run then.

use std::sync::{Arc, Mutex};

use lomi_protocol::OperationId;

/// Longest line kept while it is typed; a longer one is checked by its first this many bytes
/// and marked edited (the shell's own limit is far above any command a rule names).
const MAX_LINE: usize = 64 * 1024;

/// One terminal's typed-but-not-entered line and the input held for the person, if any.
#[derive(Clone, Default)]
pub struct Guard {
    inner: Arc<Mutex<GuardState>>,
}

#[derive(Default)]
struct GuardState {
    typed: Typed,
    /// An input a rule held for the person: later inputs wait until it settles.
    held: Option<OperationId>,
}

/// The line being typed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Typed {
    pub text: String,
    pub edited: bool,
}

/// A line an input ends (with Enter).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub text: String,
    pub edited: bool,
}

impl Typed {
    /// Reads `bytes` as typed after this line: the lines they end, and the line left typed.
    pub fn after(&self, bytes: &[u8]) -> (Vec<Line>, Typed) {
        let mut typed = self.clone();
        let mut lines = Vec::new();
        let text = String::from_utf8_lossy(bytes);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' | '\n' => {
                    // "\r\n" is one Enter.
                    if c == '\r' && chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    let line = std::mem::take(&mut typed);
                    if !line.text.trim().is_empty() || line.edited {
                        lines.push(Line {
                            text: line.text,
                            edited: line.edited,
                        });
                    }
                }
                // Backspace (DEL or ^H).
                '\u{7f}' | '\u{8}' => {
                    typed.text.pop();
                }
                // Ctrl-C and Ctrl-U drop the line.
                '\u{3}' | '\u{15}' => typed = Typed::default(),
                // Escape sequences (arrows, Home, End, …), Tab, and other control keys let the
                // shell change the line.
                '\u{1b}' => {
                    typed.edited = true;
                    // Skip the rest of a CSI or SS3 sequence.
                    if matches!(chars.peek(), Some('[') | Some('O')) {
                        chars.next();
                        while let Some(&next) = chars.peek() {
                            chars.next();
                            if next.is_ascii_alphabetic() || next == '~' {
                                break;
                            }
                        }
                    }
                }
                c if c.is_control() => typed.edited = true,
                c => {
                    if typed.text.len() < MAX_LINE {
                        typed.text.push(c);
                    } else {
                        typed.edited = true;
                    }
                }
            }
        }
        (lines, typed)
    }
}

impl Guard {
    fn state(&self) -> std::sync::MutexGuard<'_, GuardState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The line typed so far.
    pub fn typed(&self) -> Typed {
        self.state().typed.clone()
    }

    /// The input was written: the line typed so far is now `typed`.
    pub fn written(&self, typed: Typed) {
        self.state().typed = typed;
    }

    /// The input held for the person, if one is still held.
    pub fn held(&self) -> Option<OperationId> {
        self.state().held.clone()
    }

    /// An input was held as operation `id`; what it typed is not typed until it runs.
    pub fn hold(&self, id: OperationId) {
        self.state().held = Some(id);
    }

    /// The held input settled (written, refused or cancelled): after it, the line typed is
    /// `typed` (what it left typed if it was written, nothing otherwise).
    pub fn release(&self, id: &OperationId, typed: Typed) {
        let mut state = self.state();
        if state.held.as_ref() == Some(id) {
            state.held = None;
            state.typed = typed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(typed: &Typed, text: &str) -> (Vec<Line>, Typed) {
        typed.after(text.as_bytes())
    }

    #[test]
    fn lines_are_read_across_inputs_with_backspace() {
        let (done, typed) = lines(&Typed::default(), "rm -rf ");
        assert!(done.is_empty());
        let (done, typed) = lines(&typed, "~/x\u{7f}\u{7f}\r");
        assert_eq!(
            done,
            vec![Line {
                text: "rm -rf ~".to_owned(),
                edited: false
            }]
        );
        assert_eq!(typed, Typed::default());
    }

    #[test]
    fn several_lines_and_a_partial_one() {
        let (done, typed) = lines(&Typed::default(), "ls\r\npwd\recho hi");
        let texts: Vec<&str> = done.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["ls", "pwd"]);
        assert_eq!(typed.text, "echo hi");
    }

    #[test]
    fn editing_keys_mark_the_line_and_ctrl_c_drops_it() {
        let (done, _) = lines(&Typed::default(), "\u{1b}[A\r");
        assert_eq!(
            done,
            vec![Line {
                text: String::new(),
                edited: true
            }]
        );
        let (done, _) = lines(&Typed::default(), "rm -r\tx\r");
        assert!(done[0].edited);
        let (done, typed) = lines(&Typed::default(), "rm -rf /\u{3}ls\r");
        assert_eq!(done[0].text, "ls");
        assert!(!done[0].edited && typed == Typed::default());
        // An empty Enter ends no line.
        assert!(lines(&Typed::default(), "\r").0.is_empty());
    }
}
