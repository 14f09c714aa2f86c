//! Named keys an agent can press, as the bytes an xterm-compatible terminal sends for them.

/// Every name [`key_bytes`] knows, in a stable order (for tool descriptions and tests).
pub const KEY_NAMES: &[&str] = &[
    "Enter",
    "Tab",
    "Backspace",
    "Escape",
    "Up",
    "Down",
    "Left",
    "Right",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "Delete",
    "Ctrl-A",
    "Ctrl-B",
    "Ctrl-C",
    "Ctrl-D",
    "Ctrl-E",
    "Ctrl-F",
    "Ctrl-G",
    "Ctrl-H",
    "Ctrl-I",
    "Ctrl-J",
    "Ctrl-K",
    "Ctrl-L",
    "Ctrl-M",
    "Ctrl-N",
    "Ctrl-O",
    "Ctrl-P",
    "Ctrl-Q",
    "Ctrl-R",
    "Ctrl-S",
    "Ctrl-T",
    "Ctrl-U",
    "Ctrl-V",
    "Ctrl-W",
    "Ctrl-X",
    "Ctrl-Y",
    "Ctrl-Z",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
];

/// Ctrl-A (0x01) to Ctrl-Z (0x1a), one byte each; a static so the slices live forever.
static CONTROL: [[u8; 1]; 26] = {
    let mut table = [[0u8; 1]; 26];
    let mut index = 0;
    while index < 26 {
        table[index][0] = index as u8 + 1;
        index += 1;
    }
    table
};

/// The bytes for a named key: "Enter", "Tab", "Backspace", "Escape", "Up", "Down", "Left",
/// "Right", "Home", "End", "PageUp", "PageDown", "Delete", "Ctrl-A".."Ctrl-Z", "F1".."F12".
/// Names are matched ignoring ASCII case; an unknown name gives `None`.
///
/// Cursor keys are the normal-mode sequences (`ESC [ A`); full-screen programs that switch to
/// application cursor mode (less, vim) accept those too.
pub fn key_bytes(name: &str) -> Option<&'static [u8]> {
    if let Some(letter) = name
        .strip_prefix("Ctrl-")
        .or_else(|| name.strip_prefix("ctrl-"))
        .or_else(|| name.strip_prefix("CTRL-"))
    {
        let mut chars = letter.chars();
        return match (chars.next(), chars.next()) {
            (Some(letter), None) if letter.is_ascii_alphabetic() => {
                let index = usize::from(letter.to_ascii_uppercase() as u8 - b'A');
                Some(&CONTROL[index][..])
            }
            _ => None,
        };
    }
    let bytes: &'static [u8] = match name.to_ascii_lowercase().as_str() {
        "enter" => b"\r",
        "tab" => b"\t",
        "backspace" => b"\x7f",
        "escape" => b"\x1b",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "home" => b"\x1b[H",
        "end" => b"\x1b[F",
        "pageup" => b"\x1b[5~",
        "pagedown" => b"\x1b[6~",
        "delete" => b"\x1b[3~",
        "f1" => b"\x1bOP",
        "f2" => b"\x1bOQ",
        "f3" => b"\x1bOR",
        "f4" => b"\x1bOS",
        "f5" => b"\x1b[15~",
        "f6" => b"\x1b[17~",
        "f7" => b"\x1b[18~",
        "f8" => b"\x1b[19~",
        "f9" => b"\x1b[20~",
        "f10" => b"\x1b[21~",
        "f11" => b"\x1b[23~",
        "f12" => b"\x1b[24~",
        _ => return None,
    };
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_letters_are_their_alphabet_index() {
        assert_eq!(key_bytes("Ctrl-A"), Some(&[1u8][..]));
        assert_eq!(key_bytes("ctrl-c"), Some(&[3u8][..]));
        assert_eq!(key_bytes("Ctrl-Z"), Some(&[26u8][..]));
        assert_eq!(key_bytes("Ctrl-"), None);
        assert_eq!(key_bytes("Ctrl-AB"), None);
        assert_eq!(key_bytes("Ctrl-1"), None);
    }
}
