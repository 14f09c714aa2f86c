//! Key specs (`Control+a`, `Enter`, `F5`) parsed into the key events CDP dispatches.

use crate::Invalid;

/// A key as CDP wants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// The key's value (`a`, `Enter`, ` `).
    pub key: String,
    /// The physical key (`KeyA`, `Enter`, `Space`), empty when there is none.
    pub code: String,
    /// The Windows virtual key code (0 when there is none).
    pub key_code: u32,
    /// What the key types: none for a non-typing key or with Control or Meta held.
    pub text: Option<String>,
    /// CDP's modifier bits: Alt 1, Control 2, Meta 4, Shift 8.
    pub modifiers: u32,
}

/// A key spec as `lomi_browser_press` takes it: a character or a key name, after modifiers
/// joined with `+` (`Control+a`, `Shift+Tab`, `Control++`).
pub fn parse_key(spec: &str) -> Result<Key, Invalid> {
    let bad = || {
        Invalid(format!(
            "unknown key {spec:?}; use a character or Enter, Tab, Escape, Backspace, Delete, Space, \
             ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown, F1..F12, with modifiers such as Control+a"
        ))
    };
    let mut parts: Vec<&str> = spec.split('+').collect();
    // "Control++" names the plus key.
    if spec.ends_with("++") {
        parts.pop();
        if let Some(last) = parts.last_mut() {
            *last = "+";
        }
    }
    let name = parts.pop().filter(|n| !n.is_empty()).ok_or_else(bad)?;
    let mut modifiers = 0;
    for m in parts {
        modifiers |= match m {
            "Alt" => 1,
            "Control" | "Ctrl" => 2,
            "Meta" | "Command" => 4,
            "Shift" => 8,
            _ => return Err(bad()),
        };
    }
    let named: Option<(&str, &str, u32, Option<&str>)> = match name {
        "Enter" => Some(("Enter", "Enter", 13, Some("\r"))),
        "Tab" => Some(("Tab", "Tab", 9, None)),
        "Escape" | "Esc" => Some(("Escape", "Escape", 27, None)),
        "Backspace" => Some(("Backspace", "Backspace", 8, None)),
        "Delete" => Some(("Delete", "Delete", 46, None)),
        "Space" | " " => Some((" ", "Space", 32, Some(" "))),
        "ArrowUp" => Some(("ArrowUp", "ArrowUp", 38, None)),
        "ArrowDown" => Some(("ArrowDown", "ArrowDown", 40, None)),
        "ArrowLeft" => Some(("ArrowLeft", "ArrowLeft", 37, None)),
        "ArrowRight" => Some(("ArrowRight", "ArrowRight", 39, None)),
        "Home" => Some(("Home", "Home", 36, None)),
        "End" => Some(("End", "End", 35, None)),
        "PageUp" => Some(("PageUp", "PageUp", 33, None)),
        "PageDown" => Some(("PageDown", "PageDown", 34, None)),
        _ => None,
    };
    if let Some((key, code, key_code, text)) = named {
        return Ok(Key {
            key: key.to_owned(),
            code: code.to_owned(),
            key_code,
            text: if modifiers & 0b0110 == 0 {
                text.map(str::to_owned)
            } else {
                None
            },
            modifiers,
        });
    }
    if let Some(n) = name
        .strip_prefix('F')
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| (1..=12).contains(n))
    {
        return Ok(Key {
            key: name.to_owned(),
            code: name.to_owned(),
            key_code: 111 + n,
            text: None,
            modifiers,
        });
    }
    let mut chars = name.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return Err(bad());
    };
    let upper = c.to_ascii_uppercase();
    let (code, key_code) = if c.is_ascii_alphabetic() {
        (format!("Key{upper}"), upper as u32)
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), c as u32)
    } else {
        (String::new(), 0)
    };
    Ok(Key {
        key: c.to_string(),
        code,
        key_code,
        // With Control or Meta held a key types nothing (it is a shortcut).
        text: if modifiers & 0b0110 == 0 {
            Some(c.to_string())
        } else {
            None
        },
        modifiers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(key: &str, code: &str, key_code: u32, text: Option<&str>, modifiers: u32) -> Key {
        Key {
            key: key.to_owned(),
            code: code.to_owned(),
            key_code,
            text: text.map(str::to_owned),
            modifiers,
        }
    }

    #[test]
    fn known_keys() {
        let cases = [
            ("a", key("a", "KeyA", 65, Some("a"), 0)),
            ("Shift+a", key("a", "KeyA", 65, Some("a"), 8)),
            ("Control+a", key("a", "KeyA", 65, None, 2)),
            ("Enter", key("Enter", "Enter", 13, Some("\r"), 0)),
            ("Space", key(" ", "Space", 32, Some(" "), 0)),
            ("7", key("7", "Digit7", 55, Some("7"), 0)),
            ("F12", key("F12", "F12", 123, None, 0)),
            ("Control++", key("+", "", 0, None, 2)),
            ("Alt+Meta+Escape", key("Escape", "Escape", 27, None, 5)),
        ];
        for (spec, expected) in cases {
            assert_eq!(parse_key(spec), Ok(expected), "{spec:?}");
        }
    }

    #[test]
    fn unknown_keys_say_what_is_known() {
        for spec in ["", "+", "Hyper+a", "F13", "ab", "Control+"] {
            assert_eq!(
                parse_key(spec),
                Err(Invalid(format!(
                    "unknown key {spec:?}; use a character or Enter, Tab, Escape, Backspace, \
                     Delete, Space, ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown, F1..F12, \
                     with modifiers such as Control+a"
                ))),
                "{spec:?}"
            );
        }
    }
}
