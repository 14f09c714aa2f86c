//! `AdbServer`: one adb server by address — the devices it lists (with model and API level) and
//! `adb connect` for devices reached over TCP.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::time::Duration;

use adb_client::RustADBError;
use adb_client::server::{ADBServer, DeviceState as AdbState};

use crate::AndroidError;
use crate::device::{Device, properties};

/// The adb server's default address.
pub const DEFAULT_ADDRESS: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 5037);

/// An adb server Lomi talks to. Only at [`DEFAULT_ADDRESS`] is the server started when it is not
/// running (`adb start-server` knows no other port); at any other address the caller owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdbServer {
    address: SocketAddrV4,
}

/// A device the adb server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub serial: String,
    pub state: DeviceState,
    /// `ro.product.model`; `None` when the device is not ready or does not say.
    pub model: Option<String>,
    /// `ro.build.version.sdk`; `None` when the device is not ready or does not say.
    pub api_level: Option<u32>,
}

/// A device's state as the adb server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceState {
    /// Ready for commands (`device`).
    Ready,
    Offline,
    /// The person has not accepted this computer's USB debugging key yet.
    Unauthorized,
    /// Any other state (`bootloader`, `recovery`, …), as adb spells it.
    Other(String),
}

impl Default for AdbServer {
    /// The adb server at [`DEFAULT_ADDRESS`].
    fn default() -> AdbServer {
        AdbServer::new(DEFAULT_ADDRESS)
    }
}

impl AdbServer {
    pub fn new(address: SocketAddrV4) -> AdbServer {
        AdbServer { address }
    }

    pub fn address(&self) -> SocketAddrV4 {
        self.address
    }

    /// Every device the server lists; model and API level are read from ready devices.
    pub fn devices(&self) -> Result<Vec<DeviceInfo>, AndroidError> {
        let listed = self
            .client()
            .devices()
            .map_err(|error| self.unreachable(&error))?;
        let mut devices = Vec::with_capacity(listed.len());
        for listed in listed {
            let state = DeviceState::from(&listed.state);
            // A device that goes away between the listing and `getprop` is still listed, with
            // no model or API level, rather than failing the whole list.
            let properties = match state {
                DeviceState::Ready => properties(&self.device(&listed.identifier)).ok(),
                _ => None,
            }
            .unwrap_or_default();
            let model = properties.get("ro.product.model").cloned();
            let api_level = properties
                .get("ro.build.version.sdk")
                .and_then(|sdk| sdk.parse().ok());
            devices.push(DeviceInfo {
                serial: listed.identifier,
                state,
                model,
                api_level,
            });
        }
        Ok(devices)
    }

    /// The model the adb server lists for `serial` (`adb devices -l`, from the device's own
    /// connection banner), without asking the device anything: what the person is shown
    /// before they decide whether an agent may use it. `None`: not listed, or no model given.
    pub fn listed_model(&self, serial: &str) -> Result<Option<String>, AndroidError> {
        let listed = self
            .client()
            .devices_long()
            .map_err(|error| self.unreachable(&error))?;
        Ok(listed
            .into_iter()
            .find(|device| device.identifier == serial)
            .map(|device| device.model.replace('_', " "))
            .filter(|model| !model.is_empty()))
    }

    /// Asks the server to connect to a device listening on TCP (`adb connect HOST:PORT`). The
    /// device is then listed under the serial `HOST:PORT`, possibly after a moment.
    pub fn connect(&self, device_address: SocketAddrV4) -> Result<(), AndroidError> {
        self.client()
            .connect_device(device_address)
            .map_err(|error| match error {
                RustADBError::ADBRequestFailed(detail) => AndroidError::ConnectFailed {
                    address: device_address,
                    detail: detail.trim().to_owned(),
                },
                other => self.unreachable(&other),
            })
    }

    /// The device with this serial. Nothing is checked until a command runs: an unknown serial
    /// then fails with [`AndroidError::DeviceNotFound`].
    pub fn device(&self, serial: &str) -> Device {
        Device::new(self.address, serial.to_owned())
    }

    fn client(&self) -> ADBServer {
        if self.address == DEFAULT_ADDRESS {
            ADBServer::new(self.address)
        } else {
            // adb_client runs `<adb path> start-server` before each request to a loopback
            // address, which would start a second server on the default port. `true` makes that
            // step a no-op; if it is missing the spawn fails and adb_client only logs it.
            ADBServer::new_from_path(self.address, Some("true".to_owned()))
        }
    }

    fn unreachable(&self, error: &RustADBError) -> AndroidError {
        AndroidError::ServerUnreachable {
            address: self.address,
            detail: error.to_string(),
        }
    }
}

impl From<&AdbState> for DeviceState {
    fn from(state: &AdbState) -> DeviceState {
        match state {
            AdbState::Device => DeviceState::Ready,
            AdbState::Offline => DeviceState::Offline,
            AdbState::Unauthorized => DeviceState::Unauthorized,
            other => DeviceState::Other(other.to_string()),
        }
    }
}

impl std::fmt::Display for DeviceState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceState::Ready => formatter.write_str("ready"),
            DeviceState::Offline => formatter.write_str("offline"),
            DeviceState::Unauthorized => formatter.write_str("unauthorized"),
            DeviceState::Other(state) => formatter.write_str(state),
        }
    }
}

/// Asks the adb server what state it has for `serial` (`host-serial:SERIAL:get-state`), over a
/// connection of its own: `Ok(None)` when it knows no such device. A cheap local round trip,
/// used after a command to tell a finished stream from a device that went away under it.
pub(crate) fn transport_state(
    server: SocketAddrV4,
    serial: &str,
) -> std::io::Result<Option<DeviceState>> {
    const TIMEOUT: Duration = Duration::from_secs(5);
    let mut stream = TcpStream::connect_timeout(&server.into(), TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let request = format!("host-serial:{serial}:get-state");
    stream.write_all(format!("{:04x}{request}", request.len()).as_bytes())?;
    let mut status = [0u8; 4];
    stream.read_exact(&mut status)?;
    let mut length = [0u8; 4];
    stream.read_exact(&mut length)?;
    let length = std::str::from_utf8(&length)
        .ok()
        .and_then(|hex| usize::from_str_radix(hex, 16).ok())
        .ok_or_else(|| std::io::Error::other("the adb server sent a bad length"))?;
    let mut message = vec![0u8; length.min(4096)];
    stream.read_exact(&mut message)?;
    let message = String::from_utf8_lossy(&message).trim().to_owned();
    match &status {
        b"OKAY" => Ok(Some(match message.as_str() {
            "device" => DeviceState::Ready,
            "offline" => DeviceState::Offline,
            "unauthorized" => DeviceState::Unauthorized,
            _ => DeviceState::Other(message),
        })),
        b"FAIL" if message.contains("not found") => Ok(None),
        _ => Err(std::io::Error::other(format!(
            "the adb server answered get-state with: {message}"
        ))),
    }
}
