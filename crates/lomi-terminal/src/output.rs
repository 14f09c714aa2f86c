//! The raw output ring: the newest bytes read from the PTY, at most a fixed number, addressed by
//! their position in everything ever read (the output cursor).

use std::collections::VecDeque;

pub(crate) struct OutputRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Bytes ever pushed; the ring holds `total - bytes.len() .. total`.
    total: u64,
}

/// A copied range of the ring; see [`crate::Output`] for the meaning of each field.
pub(crate) struct Slice {
    pub start: u64,
    pub end: u64,
    pub bytes: Vec<u8>,
    pub truncated_before: bool,
    pub more: bool,
}

impl OutputRing {
    pub fn new(capacity: usize) -> Self {
        OutputRing {
            // Grows as output arrives; a quiet terminal should not cost its whole capacity.
            bytes: VecDeque::with_capacity(capacity.min(64 * 1024)),
            capacity,
            total: 0,
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    fn first(&self) -> u64 {
        self.total - self.bytes.len() as u64
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let kept = &chunk[chunk.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + kept.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(kept);
    }

    /// Up to `max_bytes` from `cursor` on. A cursor older than the ring starts at the oldest byte
    /// kept (`truncated_before`); one past the end gives an empty slice at the end.
    pub fn since(&self, cursor: u64, max_bytes: usize) -> Slice {
        let first = self.first();
        let start = cursor.clamp(first, self.total);
        let available = usize::try_from(self.total - start).unwrap_or(usize::MAX);
        let taken = available.min(max_bytes);
        let skip = usize::try_from(start - first).unwrap_or(usize::MAX);
        let bytes = self.bytes.range(skip..skip + taken).copied().collect();
        Slice {
            start,
            end: start + taken as u64,
            bytes,
            truncated_before: cursor < first,
            more: taken < available,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        capacity: usize,
        pushes: &[&[u8]],
        cursor: u64,
        max: usize,
        expect: (&[u8], u64, bool, bool),
    ) {
        let mut ring = OutputRing::new(capacity);
        for push in pushes {
            ring.push(push);
        }
        assert!(ring.len() <= capacity);
        let slice = ring.since(cursor, max);
        assert_eq!(
            (
                slice.bytes.as_slice(),
                slice.start,
                slice.truncated_before,
                slice.more
            ),
            expect
        );
        assert_eq!(slice.end, slice.start + slice.bytes.len() as u64);
    }

    #[test]
    fn ring_keeps_the_newest_bytes_and_says_what_was_lost() {
        check(4, &[b"ab", b"cd"], 0, 10, (b"abcd", 0, false, false));
        check(4, &[b"ab", b"cdef"], 0, 10, (b"cdef", 2, true, false));
        check(4, &[b"abcdefgh"], 5, 10, (b"fgh", 5, false, false));
        check(4, &[b"abcdef"], 3, 2, (b"de", 3, false, true));
        check(4, &[b"ab"], 9, 10, (b"", 2, false, false));
        check(0, &[b"ab"], 0, 10, (b"", 2, true, false));
    }
}
