//! One host connection: the CNXN handshake, then streams. A command's OPEN runs it at once; a
//! `sync:` stream or a streamed install answers what the host writes. Output goes out as WRTE
//! chunks, one at a time, each waiting for the host's OKAY, then CLSE.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufReader};
use std::net::TcpStream;

use crate::Shared;
use crate::protocol::{
    A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_VERSION, A_WRTE, MAX_PAYLOAD, MAX_PAYLOAD_BEFORE_CONNECT,
    Packet,
};
use crate::services::{self, Opened, Reply};
use crate::sync::SyncSession;

/// No `shell_v2`: the host then uses the legacy shell (raw bytes, no exit codes).
const BANNER: &str = "device::ro.product.name=lomi_fixture;ro.product.model=LomiFixture;ro.product.device=lomi;features=cmd";

/// What a stream does with the bytes the host writes to it.
enum Input {
    /// Ignored (a command's stdin).
    Ignored,
    /// adb's file sync requests.
    Sync(SyncSession),
    /// A command that reads `remaining` more bytes of stdin before it runs (a streamed
    /// `cmd package install -S SIZE`).
    Stdin {
        words: Vec<String>,
        remaining: usize,
        collected: Vec<u8>,
    },
}

/// A stream we opened in answer to the host's OPEN.
struct Stream {
    remote_id: u32,
    pending: VecDeque<Vec<u8>>,
    /// A WRTE of ours the host has not acknowledged yet.
    in_flight: bool,
    input: Input,
    /// Close once everything pending is out.
    closing: bool,
}

/// Serves the connection until the host closes it or it fails; errors end the connection only.
pub(crate) fn serve(stream: TcpStream, shared: &Shared) {
    if let Err(error) = serve_until_error(stream, shared)
        && error.kind() != io::ErrorKind::UnexpectedEof
    {
        eprintln!("lomi-adb-fixture: connection ended: {error}");
    }
}

fn serve_until_error(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut max_payload = MAX_PAYLOAD_BEFORE_CONNECT;
    let mut streams: HashMap<u32, Stream> = HashMap::new();
    let mut next_local_id: u32 = 1;
    loop {
        let packet = Packet::read(&mut reader)?;
        match packet.command {
            A_CNXN => {
                let host_max = usize::try_from(packet.arg1).unwrap_or(MAX_PAYLOAD);
                max_payload = host_max.clamp(MAX_PAYLOAD_BEFORE_CONNECT, MAX_PAYLOAD);
                streams.clear();
                let reply_max = u32::try_from(MAX_PAYLOAD).unwrap_or(u32::MAX);
                Packet::new(A_CNXN, A_VERSION, reply_max, BANNER.as_bytes().to_vec())
                    .write(&mut writer)?;
            }
            A_OPEN => {
                let remote_id = packet.arg0;
                let name = packet.data.strip_suffix(b"\0").unwrap_or(&packet.data);
                let opened = std::str::from_utf8(name).ok().and_then(|service| {
                    if shared.log_services {
                        crate::log_service(service);
                    }
                    services::open(service, &mut shared.state())
                });
                let Some(opened) = opened else {
                    // No such service: refuse the stream (arg0 0 means "failed open").
                    Packet::new(A_CLSE, 0, remote_id, Vec::new()).write(&mut writer)?;
                    continue;
                };
                let local_id = next_local_id;
                next_local_id = next_local_id.wrapping_add(1).max(1);
                Packet::new(A_OKAY, local_id, remote_id, Vec::new()).write(&mut writer)?;
                let mut opened_stream = Stream {
                    remote_id,
                    pending: VecDeque::new(),
                    in_flight: false,
                    input: Input::Ignored,
                    closing: true,
                };
                match opened {
                    Opened::Reply(Reply { output, duration }) => {
                        // A command that takes time on a device (a slow swipe) keeps its stream
                        // open that long; this connection serves nothing else meanwhile, like a
                        // busy device.
                        if !duration.is_zero() {
                            std::thread::sleep(duration);
                        }
                        opened_stream.queue(&output, max_payload);
                    }
                    Opened::Sync => {
                        opened_stream.input = Input::Sync(SyncSession::default());
                        opened_stream.closing = false;
                    }
                    Opened::Stdin { words, length } => {
                        opened_stream.input = Input::Stdin {
                            words,
                            remaining: length,
                            collected: Vec::new(),
                        };
                        opened_stream.closing = false;
                        opened_stream.take_input(&[], shared, max_payload);
                    }
                }
                if opened_stream.flush(&mut writer, local_id, shared)? {
                    streams.insert(local_id, opened_stream);
                }
            }
            // The host took our last WRTE: send the next chunk, or close once all is out.
            A_OKAY => {
                let local_id = packet.arg1;
                if let Some(opened) = streams.get_mut(&local_id) {
                    opened.in_flight = false;
                    if !opened.flush(&mut writer, local_id, shared)? {
                        streams.remove(&local_id);
                    }
                }
            }
            // Input to a stream: acknowledged, then given to what reads it.
            A_WRTE => {
                let local_id = packet.arg1;
                if let Some(opened) = streams.get_mut(&local_id) {
                    Packet::new(A_OKAY, local_id, opened.remote_id, Vec::new())
                        .write(&mut writer)?;
                    opened.take_input(&packet.data, shared, max_payload);
                    if !opened.flush(&mut writer, local_id, shared)? {
                        streams.remove(&local_id);
                    }
                }
            }
            A_CLSE => {
                streams.remove(&packet.arg1);
            }
            // AUTH, STLS and anything newer: we never asked for them, so ignore them.
            _ => {}
        }
    }
}

impl Stream {
    fn queue(&mut self, output: &[u8], max_payload: usize) {
        self.pending
            .extend(output.chunks(max_payload).map(<[u8]>::to_vec));
    }

    fn take_input(&mut self, data: &[u8], shared: &Shared, max_payload: usize) {
        let output = match &mut self.input {
            Input::Ignored => return,
            Input::Sync(session) => {
                // `setprop lomi.fixture.sync_ms MS`: a slow link, for tests that stop a
                // transfer half-way.
                let delay = shared.state().sync_ms;
                if delay > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(delay));
                }
                let output = session.feed(data, &mut shared.state());
                self.closing = session.finished;
                output
            }
            Input::Stdin {
                words,
                remaining,
                collected,
            } => {
                let taken = data.len().min(*remaining);
                collected.extend_from_slice(&data[..taken]);
                *remaining -= taken;
                if *remaining > 0 {
                    return;
                }
                self.closing = true;
                let output = services::with_stdin(words, collected, &mut shared.state());
                self.input = Input::Ignored;
                output
            }
        };
        self.queue(&output, max_payload);
    }

    /// Sends the next chunk unless one is in flight, or CLSE once all is out and the stream is
    /// done; false once closed.
    fn flush(
        &mut self,
        writer: &mut TcpStream,
        local_id: u32,
        shared: &Shared,
    ) -> io::Result<bool> {
        if self.in_flight {
            return Ok(true);
        }
        match self.pending.pop_front() {
            Some(chunk) => {
                if matches!(self.input, Input::Sync(_)) {
                    let delay = shared.state().sync_ms;
                    if delay > 0 {
                        std::thread::sleep(std::time::Duration::from_millis(delay));
                    }
                }
                Packet::new(A_WRTE, local_id, self.remote_id, chunk).write(writer)?;
                self.in_flight = true;
                Ok(true)
            }
            None if self.closing => {
                Packet::new(A_CLSE, local_id, self.remote_id, Vec::new()).write(writer)?;
                Ok(false)
            }
            None => Ok(true),
        }
    }
}
