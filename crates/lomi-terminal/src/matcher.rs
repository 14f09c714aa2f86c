//! What `wait` matches against: the output as text, with escape sequences and control characters
//! (except newline and tab) removed, searched across read-chunk boundaries.

/// How much matched-against text is kept behind the newest byte: a match can span at most this
/// much text. The window is trimmed only when it is twice this long, so trimming stays cheap.
const KEEP: usize = 32 * 1024;

pub(crate) enum Pattern {
    Text(String),
    Regex(regex::Regex),
}

/// Finds a pattern in output fed to it in order, reporting where the match ends in raw output.
pub(crate) struct Matcher {
    pattern: Pattern,
    escapes: Escapes,
    /// An incomplete UTF-8 character, with each byte's raw offset.
    pending: Vec<(u8, u64)>,
    text: String,
    /// The raw output offset of each byte of `text`.
    offsets: Vec<u64>,
    /// The raw offset of the next byte to feed.
    next: u64,
}

impl Matcher {
    pub fn new(pattern: Pattern, since: u64) -> Self {
        Matcher {
            pattern,
            escapes: Escapes::Ground,
            pending: Vec::new(),
            text: String::new(),
            offsets: Vec::new(),
            next: since,
        }
    }

    /// The raw offset of the next byte this matcher needs.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Output before `to` is gone; restart there.
    pub fn skip_to(&mut self, to: u64) {
        self.escapes = Escapes::Ground;
        self.pending.clear();
        self.text.clear();
        self.offsets.clear();
        self.next = to;
    }

    /// Feeds raw output starting at offset `start` (bytes before `next()` are ignored) and
    /// returns the raw offset just past the first match, if there is one now.
    pub fn feed(&mut self, start: u64, bytes: &[u8]) -> Option<u64> {
        let skip = usize::try_from(self.next.saturating_sub(start)).unwrap_or(usize::MAX);
        for (index, &byte) in bytes.iter().enumerate().skip(skip) {
            let offset = start + index as u64;
            if self.escapes.keeps(byte) {
                self.push(byte, offset);
            }
        }
        self.next = self.next.max(start + bytes.len() as u64);
        let found = self.find();
        if found.is_none() && self.text.len() > 2 * KEEP {
            let mut cut = self.text.len() - KEEP;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.offsets.drain(..cut);
        }
        found
    }

    /// The raw offset just past the first match in the text kept now.
    pub fn find(&self) -> Option<u64> {
        let (start, end) = match &self.pattern {
            Pattern::Text(needle) => self
                .text
                .find(needle.as_str())
                .map(|start| (start, start + needle.len())),
            Pattern::Regex(regex) => regex.find(&self.text).map(|m| (m.start(), m.end())),
        }?;
        Some(if end > start {
            self.offsets[end - 1] + 1
        } else {
            // An empty match: where the next byte of text came from.
            self.offsets.get(start).copied().unwrap_or(self.next)
        })
    }

    fn push(&mut self, byte: u8, offset: u64) {
        if self.pending.is_empty() && byte.is_ascii() {
            self.text.push(char::from(byte));
            self.offsets.push(offset);
            return;
        }
        self.pending.push((byte, offset));
        let bytes: Vec<u8> = self.pending.iter().map(|(byte, _)| *byte).collect();
        match std::str::from_utf8(&bytes) {
            Ok(character) => {
                self.text.push_str(character);
                self.offsets
                    .extend(self.pending.drain(..).map(|(_, offset)| offset));
            }
            // Incomplete: the rest of the character is in the next byte or chunk.
            Err(error) if error.error_len().is_none() => {}
            // Invalid: the first byte becomes U+FFFD and the rest are read again.
            Err(_) => {
                let rest: Vec<(u8, u64)> = self.pending.drain(1..).collect();
                let (_, first) = self.pending[0];
                self.pending.clear();
                self.text.push(char::REPLACEMENT_CHARACTER);
                self.offsets.extend([first; 3]);
                for (byte, offset) in rest {
                    self.push(byte, offset);
                }
            }
        }
    }
}

/// Where the stripper is inside an escape sequence (ECMA-48: ESC, CSI, OSC and other strings).
#[derive(Clone, Copy)]
enum Escapes {
    Ground,
    Escape,
    /// `ESC` followed by intermediates (`ESC ( B`, `ESC # 8`): ends at a final byte.
    EscapeIntermediate,
    /// `ESC [`: ends at a byte in 0x40..=0x7e.
    Csi,
    /// `ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _`: ends at BEL or `ESC \`.
    String,
    StringEscape,
}

impl Escapes {
    /// Advances over one byte; true when the byte is text to match against.
    fn keeps(&mut self, byte: u8) -> bool {
        const ESC: u8 = 0x1b;
        match *self {
            Escapes::Ground => match byte {
                ESC => {
                    *self = Escapes::Escape;
                    false
                }
                b'\n' | b'\t' => true,
                0x00..=0x1f | 0x7f => false,
                _ => true,
            },
            Escapes::Escape => {
                *self = match byte {
                    b'[' => Escapes::Csi,
                    b']' | b'P' | b'X' | b'^' | b'_' => Escapes::String,
                    0x20..=0x2f => Escapes::EscapeIntermediate,
                    ESC => Escapes::Escape,
                    _ => Escapes::Ground,
                };
                false
            }
            Escapes::EscapeIntermediate => {
                if !(0x20..=0x2f).contains(&byte) {
                    *self = Escapes::Ground;
                }
                false
            }
            Escapes::Csi => {
                match byte {
                    ESC => *self = Escapes::Escape,
                    0x40..=0x7e => *self = Escapes::Ground,
                    _ => {}
                }
                false
            }
            Escapes::String => {
                match byte {
                    0x07 => *self = Escapes::Ground,
                    ESC => *self = Escapes::StringEscape,
                    _ => {}
                }
                false
            }
            Escapes::StringEscape => {
                *self = match byte {
                    ESC => Escapes::StringEscape,
                    b'\\' => Escapes::Ground,
                    _ => Escapes::String,
                };
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` in order from offset 0 and returns where the first match ended.
    fn check(pattern: Pattern, since: u64, chunks: &[&[u8]], expect: Option<u64>) {
        let mut matcher = Matcher::new(pattern, since);
        let mut start = 0;
        let mut found = matcher.find();
        for chunk in chunks {
            if found.is_some() {
                break;
            }
            found = matcher.feed(start, chunk);
            start += chunk.len() as u64;
        }
        assert_eq!(found, expect);
    }

    fn text(needle: &str) -> Pattern {
        Pattern::Text(needle.to_owned())
    }

    #[test]
    fn text_matches_across_chunks_and_escapes() {
        check(text("hello"), 0, &[b"say hel", b"lo!"], Some(9));
        check(text("hello"), 0, &[b"\x1b[1mhel\x1b[0m", b"lo"], Some(13));
        check(text("title"), 0, &[b"\x1b]0;title\x07x"], None);
        check(
            text("title"),
            0,
            &[b"\x1b]0;tit", b"le\x1b\\title"],
            Some(16),
        );
        check(text("ab"), 0, &[b"a\r", b"b"], Some(3));
        check(text("x"), 0, &[b"\x1b(Bx"], Some(4));
    }

    #[test]
    fn output_before_since_is_not_matched() {
        check(text("done"), 4, &[b"done", b" done"], Some(9));
        check(text("done"), 2, &[b"done"], None);
    }

    #[test]
    fn utf8_split_across_chunks_still_matches() {
        let bytes = "é-ok".as_bytes();
        check(text("é-ok"), 0, &[&bytes[..1], &bytes[1..]], Some(5));
        check(text("\u{fffd}ok"), 0, &[b"\xffok"], Some(3));
    }

    #[test]
    fn regex_matches_and_long_output_stays_bounded() {
        let regex = |pattern: &str| Pattern::Regex(regex::Regex::new(pattern).expect("regex"));
        check(regex(r"code=\d+;"), 0, &[b"code=4", b"2;"], Some(8));
        let filler = vec![b'a'; 5 * KEEP];
        let mut matcher = Matcher::new(text("end"), 0);
        assert_eq!(matcher.feed(0, &filler), None);
        assert!(matcher.text.len() <= 2 * KEEP && matcher.offsets.len() == matcher.text.len());
        assert_eq!(
            matcher.feed(filler.len() as u64, b"end"),
            Some(filler.len() as u64 + 3)
        );
    }
}
