//! What a file's bytes look like: encoding and line endings, detected while the bytes stream
//! through the hasher, so a read never holds more than the requested range in memory.

/// How a file's bytes are encoded, as far as the bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Valid UTF-8 without a byte-order mark (also the empty file).
    Utf8,
    /// Valid UTF-8 that starts with the byte-order mark `EF BB BF`.
    Utf8Bom,
    /// Starts with the byte-order mark `FF FE` and has an even length.
    Utf16Le,
    /// Starts with the byte-order mark `FE FF` and has an even length.
    Utf16Be,
    /// Not UTF-8, but no NUL and no control bytes other than tab, newline, form feed and escape:
    /// text in some single-byte encoding (Latin-1, Windows-1252, …). Edit it as bytes.
    Latin1,
    /// Anything else (NUL bytes, control bytes, odd-length UTF-16). Never edit it as text.
    Binary,
}

impl Encoding {
    /// The name the protocol gives the encoding.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf8",
            Encoding::Utf8Bom => "utf8_bom",
            Encoding::Utf16Le => "utf16le",
            Encoding::Utf16Be => "utf16be",
            Encoding::Latin1 => "latin1",
            Encoding::Binary => "binary",
        }
    }
}

/// Which line endings the text uses. Binary files report `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEndings {
    /// Only `\n`.
    Lf,
    /// Only `\r\n`.
    Crlf,
    /// Only a lone `\r`.
    Cr,
    /// More than one kind.
    Mixed,
    /// No line break at all (or a binary file).
    None,
}

impl LineEndings {
    /// The name the protocol gives the line endings.
    pub fn as_str(self) -> &'static str {
        match self {
            LineEndings::Lf => "lf",
            LineEndings::Crlf => "crlf",
            LineEndings::Cr => "cr",
            LineEndings::Mixed => "mixed",
            LineEndings::None => "none",
        }
    }
}

/// Counts line breaks over code units (bytes for UTF-8 and single-byte text, 16-bit units for
/// UTF-16), carrying a trailing `\r` across chunk boundaries.
#[derive(Default)]
struct LineCounter {
    lf: u64,
    crlf: u64,
    cr: u64,
    pending_cr: bool,
}

impl LineCounter {
    fn unit(&mut self, unit: u16) {
        match (self.pending_cr, unit) {
            (true, 0x0A) => {
                self.crlf += 1;
                self.pending_cr = false;
                return;
            }
            (true, _) => self.cr += 1,
            (false, 0x0A) => self.lf += 1,
            (false, _) => {}
        }
        self.pending_cr = unit == 0x0D;
    }

    fn finish(mut self) -> LineEndings {
        if self.pending_cr {
            self.cr += 1;
        }
        match (self.lf > 0, self.crlf > 0, self.cr > 0) {
            (false, false, false) => LineEndings::None,
            (true, false, false) => LineEndings::Lf,
            (false, true, false) => LineEndings::Crlf,
            (false, false, true) => LineEndings::Cr,
            _ => LineEndings::Mixed,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Bytes,
    Utf16Le,
    Utf16Be,
}

/// Streams a file's bytes and reports its [`Encoding`] and [`LineEndings`] at the end.
pub(crate) struct Sniffer {
    family: Option<Family>,
    utf8_bom: bool,
    utf8_valid: bool,
    /// The incomplete UTF-8 sequence (or odd UTF-16 byte) at the end of the previous chunk.
    carry: Vec<u8>,
    has_nul: bool,
    has_control: bool,
    length: u64,
    lines: LineCounter,
}

impl Sniffer {
    pub(crate) fn new() -> Sniffer {
        Sniffer {
            family: None,
            utf8_bom: false,
            utf8_valid: true,
            carry: Vec::new(),
            has_nul: false,
            has_control: false,
            length: 0,
            lines: LineCounter::default(),
        }
    }

    /// Feeds the next chunk. The first chunk must hold the first 3 bytes of the file unless the
    /// file is shorter (the reader fills its first buffer before feeding).
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if self.family.is_none() {
            self.utf8_bom = chunk.starts_with(&[0xEF, 0xBB, 0xBF]);
        }
        let family = *self.family.get_or_insert(match chunk {
            [0xFF, 0xFE, ..] => Family::Utf16Le,
            [0xFE, 0xFF, ..] => Family::Utf16Be,
            _ => Family::Bytes,
        });
        self.length += chunk.len() as u64;
        match family {
            Family::Bytes => self.feed_bytes(chunk),
            Family::Utf16Le | Family::Utf16Be => self.feed_utf16(chunk, family),
        }
    }

    fn feed_bytes(&mut self, chunk: &[u8]) {
        for &byte in chunk {
            self.lines.unit(u16::from(byte));
            if byte == 0 {
                self.has_nul = true;
            } else if byte < 0x20 && !matches!(byte, b'\t' | b'\n' | b'\r' | 0x0C | 0x1B) {
                self.has_control = true;
            }
        }
        if !self.utf8_valid {
            return;
        }
        let joined;
        let bytes = if self.carry.is_empty() {
            chunk
        } else {
            joined = [self.carry.as_slice(), chunk].concat();
            &joined
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => self.carry.clear(),
            // An incomplete sequence at the very end may be completed by the next chunk.
            Err(error) if error.error_len().is_none() => {
                self.carry = bytes[error.valid_up_to()..].to_vec();
            }
            Err(_) => self.utf8_valid = false,
        }
    }

    fn feed_utf16(&mut self, chunk: &[u8], family: Family) {
        let mut bytes = std::mem::take(&mut self.carry);
        bytes.extend_from_slice(chunk);
        let pairs = bytes.chunks_exact(2);
        let rest = pairs.remainder().to_vec();
        for pair in pairs {
            let pair = [pair[0], pair[1]];
            let unit = if family == Family::Utf16Le {
                u16::from_le_bytes(pair)
            } else {
                u16::from_be_bytes(pair)
            };
            self.lines.unit(unit);
        }
        self.carry = rest;
    }

    pub(crate) fn finish(self) -> (Encoding, LineEndings) {
        let encoding = match self.family {
            None => Encoding::Utf8,
            Some(Family::Utf16Le | Family::Utf16Be) if self.length % 2 == 1 => Encoding::Binary,
            Some(Family::Utf16Le) => Encoding::Utf16Le,
            Some(Family::Utf16Be) => Encoding::Utf16Be,
            Some(Family::Bytes) => {
                let utf8 = self.utf8_valid && self.carry.is_empty();
                if self.has_nul {
                    Encoding::Binary
                } else if utf8 {
                    if self.utf8_bom {
                        Encoding::Utf8Bom
                    } else {
                        Encoding::Utf8
                    }
                } else if self.has_control {
                    Encoding::Binary
                } else {
                    Encoding::Latin1
                }
            }
        };
        let lines = if encoding == Encoding::Binary {
            LineEndings::None
        } else {
            self.lines.finish()
        };
        (encoding, lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff(chunks: &[&[u8]]) -> (Encoding, LineEndings) {
        let mut sniffer = Sniffer::new();
        for chunk in chunks {
            sniffer.feed(chunk);
        }
        sniffer.finish()
    }

    #[test]
    fn detects_encodings_and_line_endings() {
        use Encoding::*;
        use LineEndings as L;
        let cases: &[(&[&[u8]], Encoding, LineEndings)] = &[
            (&[], Utf8, L::None),
            (&[b"a\nb\n"], Utf8, L::Lf),
            (&[b"a\r\nb\r\n"], Utf8, L::Crlf),
            (&[b"a\r", b"\nb"], Utf8, L::Crlf),
            (&[b"a\rb\r"], Utf8, L::Cr),
            (&[b"a\r\nb\n"], Utf8, L::Mixed),
            (&[b"\xEF\xBB\xBFhi\r\n"], Utf8Bom, L::Crlf),
            (&[b"caf\xC3", b"\xA9\n"], Utf8, L::Lf),
            (&[b"caf\xE9\n"], Latin1, L::Lf),
            (&[b"caf\xC3"], Latin1, L::None),
            (&[b"\xFF\xFEa\x00\r\x00\n\x00"], Utf16Le, L::Crlf),
            (&[b"\xFE\xFF\x00a\x00\n"], Utf16Be, L::Lf),
            (&[b"\xFF\xFEa"], Binary, L::None),
            (&[b"\x00\x01\n"], Binary, L::None),
            (&[b"\x89PNG\r\n\x1a\n"], Binary, L::None),
        ];
        for (chunks, encoding, lines) in cases {
            assert_eq!(sniff(chunks), (*encoding, *lines), "{chunks:?}");
        }
    }
}
