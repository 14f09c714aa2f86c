//! Quoting for the device shell: every argument Lomi sends is single-quoted, so text with shell
//! metacharacters reaches the device literally instead of being interpreted.

use crate::AndroidError;

/// `word` as one single-quoted shell word (`'` becomes `'\''`).
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A command line of quoted words.
pub fn command_line(words: &[&str]) -> String {
    words
        .iter()
        .map(|word| quote(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The argument for `input text`: Android types `%s` as a space and splits on real spaces, so
/// spaces are sent as `%s`. A literal `%s` cannot be typed that way, and `input text` cannot
/// type control characters, so both are refused rather than silently changed.
pub fn input_text_argument(literal: &str) -> Result<String, AndroidError> {
    if literal.is_empty() {
        return Err(AndroidError::InvalidInput(
            "the text to type is empty; give at least one character".into(),
        ));
    }
    if literal.contains("%s") {
        return Err(AndroidError::InvalidInput(
            "the text contains `%s`, which Android's `input text` types as a space; split the text around it"
                .into(),
        ));
    }
    if let Some(control) = literal.chars().find(|character| character.is_control()) {
        return Err(AndroidError::InvalidInput(format!(
            "the text contains the control character {control:?}, which `input text` cannot type; send it as a key event instead"
        )));
    }
    Ok(literal.replace(' ', "%s"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_metacharacters_literal() {
        let check = |word: &str, expected: &str| assert_eq!(quote(word), expected, "{word}");
        check("plain", "'plain'");
        check("", "''");
        check("a b;c", "'a b;c'");
        check("it's", r"'it'\''s'");
        check("$(x) `y` \\", "'$(x) `y` \\'");
        assert_eq!(command_line(&["input", "tap", "1"]), "'input' 'tap' '1'");
    }

    #[test]
    fn input_text_encodes_spaces_and_refuses_what_it_cannot_type() {
        assert_eq!(
            input_text_argument("a b;rm -rf /$(x)'q").ok().as_deref(),
            Some("a%sb;rm%s-rf%s/$(x)'q")
        );
        for refused in ["", "100%s", "line\nbreak"] {
            let error = input_text_argument(refused).err();
            assert!(
                matches!(error, Some(AndroidError::InvalidInput(_))),
                "{refused:?}"
            );
        }
    }
}
