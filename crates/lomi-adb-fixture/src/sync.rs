//! adb's file sync service (`sync:`): STAT, SEND, RECV and QUIT requests over one stream, each
//! an id, a little-endian length and a payload, answered from the fixture's files.

use crate::screen::FixtureState;

/// The largest DATA chunk, as adbd sends them (`SYNC_DATA_MAX`).
const DATA_MAX: usize = 64 * 1024;
const REGULAR_FILE: u32 = 0o100_644;
const DIRECTORY: u32 = 0o040_771;

/// One open `sync:` stream: the bytes the host sent that do not form a request yet, and a file
/// being received.
#[derive(Default)]
pub(crate) struct SyncSession {
    input: Vec<u8>,
    receiving: Option<(String, Vec<u8>)>,
    /// The host sent QUIT (or broke the protocol): the stream closes once its output is out.
    pub(crate) finished: bool,
}

impl SyncSession {
    /// Takes bytes the host wrote and returns what the device answers to the requests they
    /// complete.
    pub(crate) fn feed(&mut self, data: &[u8], state: &mut FixtureState) -> Vec<u8> {
        self.input.extend_from_slice(data);
        let mut out = Vec::new();
        while !self.finished && self.input.len() >= 8 {
            let id: [u8; 4] = [self.input[0], self.input[1], self.input[2], self.input[3]];
            let length =
                u32::from_le_bytes([self.input[4], self.input[5], self.input[6], self.input[7]]);
            // SEND ends with DONE whose length field is the file's mtime, not a payload size.
            let payload_length = if self.receiving.is_some() && &id == b"DONE" {
                0
            } else {
                length as usize
            };
            if self.input.len() < 8 + payload_length {
                break;
            }
            let payload: Vec<u8> = self.input[8..8 + payload_length].to_vec();
            self.input.drain(..8 + payload_length);
            self.request(&id, payload, state, &mut out);
        }
        out
    }

    fn request(
        &mut self,
        id: &[u8; 4],
        payload: Vec<u8>,
        state: &mut FixtureState,
        out: &mut Vec<u8>,
    ) {
        let path = String::from_utf8_lossy(&payload).into_owned();
        match (self.receiving.take(), id) {
            (Some((path, mut bytes)), b"DATA") => {
                bytes.extend_from_slice(&payload);
                self.receiving = Some((path, bytes));
            }
            (Some((path, bytes)), b"DONE") => match state.write_file(&path, bytes) {
                Ok(()) => status(out, b"OKAY", &[]),
                Err(error) => status(out, b"FAIL", error.as_bytes()),
            },
            (Some(_), _) => {
                status(out, b"FAIL", b"expected DATA or DONE after SEND");
                self.finished = true;
            }
            (None, b"STAT") => {
                let (mode, size) = match state.files.get(&path) {
                    Some(bytes) => (REGULAR_FILE, u32::try_from(bytes.len()).unwrap_or(u32::MAX)),
                    None if state.is_directory(&path) => (DIRECTORY, 4096),
                    None => (0, 0),
                };
                out.extend_from_slice(b"STAT");
                for word in [mode, size, if mode == 0 { 0 } else { 1_700_000_000 }] {
                    out.extend_from_slice(&word.to_le_bytes());
                }
            }
            (None, b"SEND") => {
                // "PATH,MODE": the mode is after the last comma.
                let path = path
                    .rsplit_once(',')
                    .map_or(path.as_str(), |(path, _)| path);
                self.receiving = Some((path.to_owned(), Vec::new()));
            }
            (None, b"RECV") => match state.files.get(&path) {
                Some(bytes) => {
                    for chunk in bytes.chunks(DATA_MAX) {
                        status(out, b"DATA", chunk);
                    }
                    status(out, b"DONE", &[]);
                }
                None if state.is_directory(&path) => {
                    status(out, b"FAIL", format!("{path}: is a directory").as_bytes());
                }
                None => status(out, b"FAIL", b"open failed: No such file or directory"),
            },
            (None, b"QUIT") => self.finished = true,
            (None, other) => {
                let message = format!("unknown sync command {}", String::from_utf8_lossy(other));
                status(out, b"FAIL", message.as_bytes());
                self.finished = true;
            }
        }
    }
}

/// An id, the payload's length and the payload.
fn status(out: &mut Vec<u8>, id: &[u8; 4], payload: &[u8]) {
    out.extend_from_slice(id);
    out.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        status(&mut bytes, id, payload);
        bytes
    }

    #[test]
    fn send_stat_recv_and_refusals() {
        let mut state = FixtureState::default();
        let mut session = SyncSession::default();
        let mut sent = request(b"SEND", b"/data/local/tmp/a.txt,33206");
        sent.extend(request(b"DATA", b"hello "));
        sent.extend(request(b"DATA", b"world"));
        sent.extend_from_slice(b"DONE");
        sent.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        // Split anywhere, as WRTE packets may be.
        let (first, second) = sent.split_at(13);
        assert!(session.feed(first, &mut state).is_empty());
        assert_eq!(session.feed(second, &mut state), b"OKAY\0\0\0\0");
        assert_eq!(state.files["/data/local/tmp/a.txt"], b"hello world");

        let stat = session.feed(&request(b"STAT", b"/data/local/tmp/a.txt"), &mut state);
        assert_eq!(&stat[..4], b"STAT");
        assert_eq!(
            u32::from_le_bytes([stat[4], stat[5], stat[6], stat[7]]),
            REGULAR_FILE
        );
        assert_eq!(
            u32::from_le_bytes([stat[8], stat[9], stat[10], stat[11]]),
            11
        );
        let missing = session.feed(&request(b"STAT", b"/data/local/tmp/none"), &mut state);
        assert_eq!(missing, [b"STAT".as_slice(), &[0; 12]].concat());

        let received = session.feed(&request(b"RECV", b"/data/local/tmp/a.txt"), &mut state);
        assert_eq!(
            received,
            [request(b"DATA", b"hello world"), request(b"DONE", b"")].concat()
        );
        let refused = session.feed(&request(b"RECV", b"/nope"), &mut state);
        assert!(refused.starts_with(b"FAIL"));

        let mut system = request(b"SEND", b"/system/x,420");
        system.extend_from_slice(b"DONE\0\0\0\0");
        assert!(session.feed(&system, &mut state).starts_with(b"FAIL"));
        assert!(session.feed(&request(b"QUIT", b""), &mut state).is_empty());
        assert!(session.finished);
    }
}
