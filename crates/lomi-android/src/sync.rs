//! adb's file sync protocol, spoken to the adb server directly (`host:transport:SERIAL`, then
//! `sync:`; STAT, SEND/DATA/DONE, RECV, QUIT), so a transfer can be stopped at once: a
//! [`Cancel`] shuts its socket down, which ends whatever read or write is blocked on it.
//! (adb_client's push buffers the whole file into the socket and waits for the device.)

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The largest DATA chunk the sync protocol allows.
const DATA_MAX: usize = 64 * 1024;
/// How long one read or write may block before the transfer counts as stalled.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// Stops a transfer from another thread.
#[derive(Default)]
pub struct Cancel {
    flag: AtomicBool,
    stream: Mutex<Option<TcpStream>>,
}

impl Cancel {
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let stream = self.stream.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stream) = stream.as_ref()
            && let Err(error) = stream.shutdown(Shutdown::Both)
        {
            tracing::debug!("shutting a cancelled transfer's socket: {error}");
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

/// What went wrong in a sync exchange.
#[derive(Debug)]
pub(crate) enum SyncError {
    /// The adb server refused the transport (no such device, offline…), in its words.
    Transport(String),
    /// The device answered FAIL, in its words.
    Failed(String),
    /// The connection broke or stalled (or was cancelled: see [`Cancel::is_cancelled`]).
    Io(io::Error),
}

impl From<io::Error> for SyncError {
    fn from(error: io::Error) -> SyncError {
        SyncError::Io(error)
    }
}

/// A `stat` answer: mode 0 means there is no such file.
pub(crate) struct Stat {
    pub mode: u32,
    pub size: u32,
}

pub(crate) struct Sync {
    stream: TcpStream,
}

fn request(stream: &mut TcpStream, text: &str) -> Result<(), SyncError> {
    stream.write_all(format!("{:04x}{text}", text.len()).as_bytes())?;
    let mut status = [0u8; 4];
    stream.read_exact(&mut status)?;
    if &status == b"OKAY" {
        return Ok(());
    }
    let mut length = [0u8; 4];
    stream.read_exact(&mut length)?;
    let length = std::str::from_utf8(&length)
        .ok()
        .and_then(|hex| usize::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
        .min(4096);
    let mut message = vec![0u8; length];
    stream.read_exact(&mut message)?;
    Err(SyncError::Transport(
        String::from_utf8_lossy(&message).into_owned(),
    ))
}

impl Sync {
    /// A sync session with `serial` through the adb server; `cancel` can end it from now on.
    pub(crate) fn open(
        server: SocketAddrV4,
        serial: &str,
        cancel: &Cancel,
    ) -> Result<Sync, SyncError> {
        let mut stream = TcpStream::connect_timeout(&server.into(), IO_TIMEOUT)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        *cancel.stream.lock().unwrap_or_else(PoisonError::into_inner) = Some(stream.try_clone()?);
        if cancel.is_cancelled() {
            return Err(SyncError::Io(io::Error::other("cancelled")));
        }
        request(&mut stream, &format!("host:transport:{serial}"))?;
        request(&mut stream, "sync:")?;
        Ok(Sync { stream })
    }

    fn send_request(&mut self, id: &[u8; 4], payload: &[u8]) -> Result<(), SyncError> {
        let length =
            u32::try_from(payload.len()).map_err(|_| io::Error::other("payload too long"))?;
        let mut bytes = Vec::with_capacity(8 + payload.len());
        bytes.extend_from_slice(id);
        bytes.extend_from_slice(&length.to_le_bytes());
        bytes.extend_from_slice(payload);
        self.stream.write_all(&bytes)?;
        Ok(())
    }

    fn header(&mut self) -> Result<([u8; 4], u32), SyncError> {
        let mut header = [0u8; 8];
        self.stream.read_exact(&mut header)?;
        let id = [header[0], header[1], header[2], header[3]];
        Ok((
            id,
            u32::from_le_bytes([header[4], header[5], header[6], header[7]]),
        ))
    }

    fn failure(&mut self, length: u32) -> SyncError {
        let mut message = vec![0u8; (length as usize).min(64 * 1024)];
        match self.stream.read_exact(&mut message) {
            Ok(()) => SyncError::Failed(String::from_utf8_lossy(&message).into_owned()),
            Err(error) => SyncError::Io(error),
        }
    }

    pub(crate) fn stat(&mut self, path: &str) -> Result<Stat, SyncError> {
        self.send_request(b"STAT", path.as_bytes())?;
        let mut answer = [0u8; 16];
        self.stream.read_exact(&mut answer)?;
        if &answer[..4] != b"STAT" {
            return Err(SyncError::Io(io::Error::other(
                "the device answered STAT with something else",
            )));
        }
        let word = |at: usize| {
            u32::from_le_bytes([answer[at], answer[at + 1], answer[at + 2], answer[at + 3]])
        };
        Ok(Stat {
            mode: word(4),
            size: word(8),
        })
    }

    /// Sends `source` to `path` (mode 0644); the device's OKAY ends it.
    pub(crate) fn send(
        &mut self,
        source: &mut dyn Read,
        path: &str,
        modified: u32,
    ) -> Result<(), SyncError> {
        self.send_request(b"SEND", format!("{path},33188").as_bytes())?;
        let mut buffer = vec![0u8; DATA_MAX];
        loop {
            let read = source.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            self.send_request(b"DATA", &buffer[..read])?;
        }
        self.stream.write_all(b"DONE")?;
        self.stream.write_all(&modified.to_le_bytes())?;
        match self.header()? {
            (id, _) if &id == b"OKAY" => Ok(()),
            (id, length) if &id == b"FAIL" => Err(self.failure(length)),
            _ => Err(SyncError::Io(io::Error::other(
                "the device answered SEND with something else",
            ))),
        }
    }

    /// Receives `path` into `sink`.
    pub(crate) fn receive(&mut self, path: &str, sink: &mut dyn Write) -> Result<(), SyncError> {
        self.send_request(b"RECV", path.as_bytes())?;
        let mut buffer = vec![0u8; DATA_MAX];
        loop {
            match self.header()? {
                (id, length) if &id == b"DATA" => {
                    let length = length as usize;
                    if length > DATA_MAX {
                        return Err(SyncError::Io(io::Error::other("a DATA chunk over 64 KiB")));
                    }
                    self.stream.read_exact(&mut buffer[..length])?;
                    sink.write_all(&buffer[..length])?;
                }
                (id, _) if &id == b"DONE" => return Ok(()),
                (id, length) if &id == b"FAIL" => return Err(self.failure(length)),
                _ => {
                    return Err(SyncError::Io(io::Error::other(
                        "the device answered RECV with something else",
                    )));
                }
            }
        }
    }

    pub(crate) fn quit(mut self) {
        if let Err(error) = self.send_request(b"QUIT", &[]) {
            tracing::debug!("ending a sync session: {error:?}");
        }
    }
}
