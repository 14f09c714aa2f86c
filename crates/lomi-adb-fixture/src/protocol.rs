//! The ADB transport's framing: a 24-byte little-endian header (command, arg0, arg1, data length,
//! data checksum, magic) followed by the payload.

use std::io::{self, Read, Write};

pub(crate) const A_CNXN: u32 = u32::from_le_bytes(*b"CNXN");
pub(crate) const A_OPEN: u32 = u32::from_le_bytes(*b"OPEN");
pub(crate) const A_OKAY: u32 = u32::from_le_bytes(*b"OKAY");
pub(crate) const A_WRTE: u32 = u32::from_le_bytes(*b"WRTE");
pub(crate) const A_CLSE: u32 = u32::from_le_bytes(*b"CLSE");

/// The protocol version that lets both sides skip the payload checksum.
pub(crate) const A_VERSION: u32 = 0x0100_0001;
/// Our largest payload; the connection uses the smaller of this and the host's.
pub(crate) const MAX_PAYLOAD: usize = 256 * 1024;
/// The payload limit before CNXN has been exchanged (`MAX_PAYLOAD_V1` in adb).
pub(crate) const MAX_PAYLOAD_BEFORE_CONNECT: usize = 4096;
/// The largest payload we accept from a host (adb's own `MAX_PAYLOAD`).
const MAX_INCOMING_PAYLOAD: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Packet {
    pub command: u32,
    pub arg0: u32,
    pub arg1: u32,
    pub data: Vec<u8>,
}

impl Packet {
    pub(crate) fn new(command: u32, arg0: u32, arg1: u32, data: Vec<u8>) -> Packet {
        Packet {
            command,
            arg0,
            arg1,
            data,
        }
    }

    /// Reads one packet. The host's checksum is not checked: hosts at version 0x01000001 send 0.
    pub(crate) fn read(reader: &mut impl Read) -> io::Result<Packet> {
        let mut header = [0u8; 24];
        reader.read_exact(&mut header)?;
        let word = |index: usize| {
            let mut bytes = [0u8; 4];
            bytes.copy_from_slice(&header[index * 4..index * 4 + 4]);
            u32::from_le_bytes(bytes)
        };
        let (command, arg0, arg1, length, magic) = (word(0), word(1), word(2), word(3), word(5));
        if magic != command ^ 0xffff_ffff {
            return Err(invalid(format!(
                "bad magic {magic:#010x} for command {command:#010x}"
            )));
        }
        let length = usize::try_from(length).map_err(|_| invalid("payload length".into()))?;
        if length > MAX_INCOMING_PAYLOAD {
            return Err(invalid(format!(
                "payload of {length} bytes is over the limit"
            )));
        }
        let mut data = vec![0u8; length];
        reader.read_exact(&mut data)?;
        Ok(Packet {
            command,
            arg0,
            arg1,
            data,
        })
    }

    /// Writes the packet with adb's checksum (a byte sum), which hosts check until CNXN is done.
    pub(crate) fn write(&self, writer: &mut impl Write) -> io::Result<()> {
        let length =
            u32::try_from(self.data.len()).map_err(|_| invalid("payload too big".into()))?;
        let checksum = self
            .data
            .iter()
            .fold(0u32, |sum, byte| sum.wrapping_add(u32::from(*byte)));
        let mut bytes = Vec::with_capacity(24 + self.data.len());
        for word in [
            self.command,
            self.arg0,
            self.arg1,
            length,
            checksum,
            self.command ^ 0xffff_ffff,
        ] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(&self.data);
        writer.write_all(&bytes)?;
        writer.flush()
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_round_trips_with_magic_and_checksum() {
        let packet = Packet::new(A_WRTE, 7, 9, b"hi".to_vec());
        let mut bytes = Vec::new();
        packet.write(&mut bytes).expect("writing to a Vec");
        assert_eq!(&bytes[..4], b"WRTE");
        assert_eq!(
            &bytes[16..20],
            &(u32::from(b'h') + u32::from(b'i')).to_le_bytes()
        );
        assert_eq!(
            Packet::read(&mut bytes.as_slice()).expect("reading back"),
            packet
        );
    }

    #[test]
    fn a_bad_magic_is_refused() {
        let mut bytes = Vec::new();
        Packet::new(A_OKAY, 1, 2, Vec::new())
            .write(&mut bytes)
            .expect("writing to a Vec");
        bytes[20] ^= 1;
        assert!(Packet::read(&mut bytes.as_slice()).is_err());
    }
}
