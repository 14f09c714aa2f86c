//! One host connection: the CNXN handshake, then streams. Each OPEN runs its service at once and
//! its output goes out as WRTE chunks, one at a time, each waiting for the host's OKAY, then CLSE.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufReader};
use std::net::TcpStream;

use crate::protocol::{
    A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_VERSION, A_WRTE, MAX_PAYLOAD, MAX_PAYLOAD_BEFORE_CONNECT,
    Packet,
};
use crate::services::Reply;

/// No `shell_v2`: the host then uses the legacy shell (raw bytes, no exit codes).
const BANNER: &str = "device::ro.product.name=lomi_fixture;ro.product.model=LomiFixture;ro.product.device=lomi;features=cmd";

/// A stream we opened in answer to the host's OPEN.
struct Stream {
    remote_id: u32,
    pending: VecDeque<Vec<u8>>,
}

/// Serves the connection until the host closes it or it fails; errors end the connection only.
pub(crate) fn serve(stream: TcpStream, run: impl FnMut(&str) -> Option<Reply>) {
    if let Err(error) = serve_until_error(stream, run)
        && error.kind() != io::ErrorKind::UnexpectedEof
    {
        eprintln!("lomi-adb-fixture: connection ended: {error}");
    }
}

fn serve_until_error(
    stream: TcpStream,
    mut run: impl FnMut(&str) -> Option<Reply>,
) -> io::Result<()> {
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
                let reply = std::str::from_utf8(name).ok().and_then(&mut run);
                let Some(Reply { output, duration }) = reply else {
                    // No such service: refuse the stream (arg0 0 means "failed open").
                    Packet::new(A_CLSE, 0, remote_id, Vec::new()).write(&mut writer)?;
                    continue;
                };
                let local_id = next_local_id;
                next_local_id = next_local_id.wrapping_add(1).max(1);
                Packet::new(A_OKAY, local_id, remote_id, Vec::new()).write(&mut writer)?;
                // A command that takes time on a device (a slow swipe) keeps its stream open
                // that long; this connection serves nothing else meanwhile, like a busy device.
                if !duration.is_zero() {
                    std::thread::sleep(duration);
                }
                let pending = output.chunks(max_payload).map(<[u8]>::to_vec).collect();
                let mut opened = Stream { remote_id, pending };
                if send_next(&mut writer, local_id, &mut opened)? {
                    streams.insert(local_id, opened);
                }
            }
            // The host took our last WRTE: send the next chunk, or close once all is out.
            A_OKAY => {
                let local_id = packet.arg1;
                if let Some(opened) = streams.get_mut(&local_id)
                    && !send_next(&mut writer, local_id, opened)?
                {
                    streams.remove(&local_id);
                }
            }
            // Input to a stream (for example shell stdin): acknowledged and ignored.
            A_WRTE => {
                let local_id = packet.arg1;
                if let Some(opened) = streams.get(&local_id) {
                    Packet::new(A_OKAY, local_id, opened.remote_id, Vec::new())
                        .write(&mut writer)?;
                }
            }
            A_CLSE => {
                streams.remove(&packet.arg1);
            }
            // AUTH, STLS, SYNC and anything newer: we never asked for them, so ignore them.
            _ => {}
        }
    }
}

/// Sends the stream's next chunk, or CLSE when none is left; true while the stream stays open.
fn send_next(writer: &mut TcpStream, local_id: u32, stream: &mut Stream) -> io::Result<bool> {
    match stream.pending.pop_front() {
        Some(chunk) => {
            Packet::new(A_WRTE, local_id, stream.remote_id, chunk).write(writer)?;
            Ok(true)
        }
        None => {
            Packet::new(A_CLSE, local_id, stream.remote_id, Vec::new()).write(writer)?;
            Ok(false)
        }
    }
}
