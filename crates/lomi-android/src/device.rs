//! `Device`: one serial on one adb server — its generation, screenshots, UI snapshots, input and
//! activity launches, each run through the adb server's `exec:` service with quoted arguments.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::SocketAddrV4;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use adb_client::server_device::ADBServerDevice;
use adb_client::{ADBDeviceExt, RustADBError};

use crate::AndroidError;
use crate::server::{DeviceState, transport_state};
use crate::shell::{command_line, input_text_argument};
use crate::ui::{self, UiSnapshot};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
/// The last chunk of every whole PNG: a zero-length IEND chunk and its CRC.
const PNG_END: &[u8] = b"\x00\x00\x00\x00IEND\xae\x42\x60\x82";
/// Bounds on what one command may print, so a misbehaving device cannot exhaust memory.
const TEXT_LIMIT: usize = 4 << 20;
const CAPTURE_LIMIT: usize = 64 << 20;
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// `uiautomator dump` attempts before giving up on an idle-state failure.
const UI_DUMP_ATTEMPTS: u32 = 3;

/// One device, by serial, on one adb server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    server: SocketAddrV4,
    serial: String,
}

/// Which boot of which device a panel talks to. It is the adb serial, the hardware serial
/// (`ro.serialno`) and the kernel's boot id (`/proc/sys/kernel/random/boot_id`) when the device
/// lets us read it. Without a boot id (the test fixture has none) a reboot of the same device is
/// not told apart; a different device behind the same adb serial still is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Generation(String);

impl Generation {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Generation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl Device {
    pub(crate) fn new(server: SocketAddrV4, serial: String) -> Device {
        Device { server, serial }
    }

    pub fn serial(&self) -> &str {
        &self.serial
    }

    pub(crate) fn server(&self) -> SocketAddrV4 {
        self.server
    }

    /// See [`Generation`] for what it is made of.
    pub fn generation(&self) -> Result<Generation, AndroidError> {
        let hardware_serial = self.run_text(&["getprop", "ro.serialno"])?;
        let boot_id = self.run_text(&["cat", "/proc/sys/kernel/random/boot_id"])?;
        let boot_id = boot_id.trim();
        let boot_id = if is_uuid(boot_id) {
            boot_id
        } else {
            "no-boot-id"
        };
        Ok(Generation(format!(
            "{}/{}/{}",
            self.serial,
            hardware_serial.trim(),
            boot_id
        )))
    }

    /// A screenshot (`screencap -p`), checked to be a whole PNG.
    pub fn capture_png(&self) -> Result<Vec<u8>, AndroidError> {
        let png = self.exec(&command_line(&["screencap", "-p"]), CAPTURE_LIMIT)?;
        check_png(&png).map_err(|detail| AndroidError::BadCapture {
            serial: self.serial.clone(),
            detail,
        })?;
        Ok(png)
    }

    /// The UI hierarchy (`uiautomator dump`), retried when the device reports that its UI never
    /// went idle, and cut to about `max_bytes` (see [`UiSnapshot`]).
    pub fn ui_snapshot(&self, max_bytes: usize) -> Result<UiSnapshot, AndroidError> {
        let (dump, attempts) =
            dump_with_retries(|| self.run_text(&["uiautomator", "dump", "/dev/tty"])).map_err(
                |error| match error {
                    DumpError::NotIdle(attempts) => AndroidError::UiNotIdle {
                        serial: self.serial.clone(),
                        attempts,
                    },
                    DumpError::Device(error) => error,
                },
            )?;
        ui::parse(&dump, max_bytes, attempts).map_err(|detail| AndroidError::BadUiDump {
            serial: self.serial.clone(),
            detail,
        })
    }

    pub fn tap(&self, x: u32, y: u32) -> Result<(), AndroidError> {
        self.input(&["tap", &x.to_string(), &y.to_string()])
    }

    /// A swipe from (x1, y1) to (x2, y2), over `duration_ms` when given.
    pub fn swipe(
        &self,
        from: (u32, u32),
        to: (u32, u32),
        duration_ms: Option<u32>,
    ) -> Result<(), AndroidError> {
        let mut words = vec![
            from.0.to_string(),
            from.1.to_string(),
            to.0.to_string(),
            to.1.to_string(),
        ];
        words.extend(duration_ms.map(|duration| duration.to_string()));
        let mut arguments = vec!["swipe"];
        arguments.extend(words.iter().map(String::as_str));
        self.input(&arguments)
    }

    /// Types `literal` exactly as given (see [`crate::shell::input_text_argument`] for the few
    /// texts that cannot be typed and are refused).
    pub fn text(&self, literal: &str) -> Result<(), AndroidError> {
        let argument = input_text_argument(literal)?;
        self.input(&["text", &argument])
    }

    /// A key event by number (`66`) or name (`KEYCODE_ENTER`).
    pub fn keyevent(&self, code: &str) -> Result<(), AndroidError> {
        let valid = !code.is_empty()
            && code
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || character == '_');
        if !valid {
            return Err(AndroidError::InvalidInput(format!(
                "`{code}` is not a key code; give a number such as 66 or a name such as KEYCODE_ENTER"
            )));
        }
        self.input(&["keyevent", code])
    }

    /// `am start -n COMPONENT` (`package/.Activity`); returns what `am` printed. The intent was
    /// delivered; that does not mean the app is ready.
    pub fn launch(&self, component: &str) -> Result<String, AndroidError> {
        let valid = component
            .split_once('/')
            .is_some_and(|(package, activity)| !package.is_empty() && !activity.is_empty());
        if !valid || has_control(component) {
            return Err(AndroidError::InvalidInput(format!(
                "`{component}` is not a component; give `package/.Activity` or `package/full.class.Name`"
            )));
        }
        self.start_activity(&["am", "start", "-n", component])
    }

    /// `am start -a ACTION [-d DATA] [-p PACKAGE]`: an implicit intent, such as a VIEW of a URL.
    /// Like [`Device::launch`], it confirms delivery only.
    pub fn launch_intent(
        &self,
        action: &str,
        data: Option<&str>,
        package: Option<&str>,
    ) -> Result<String, AndroidError> {
        let parts = [Some(action), data, package];
        if action.is_empty() || parts.into_iter().flatten().any(has_control) {
            return Err(AndroidError::InvalidInput(
                "an intent needs a non-empty action, and no part of it may hold control characters"
                    .into(),
            ));
        }
        let mut command = vec!["am", "start", "-a", action];
        if let Some(data) = data {
            command.extend(["-d", data]);
        }
        if let Some(package) = package {
            command.extend(["-p", package]);
        }
        self.start_activity(&command)
    }

    fn start_activity(&self, command: &[&str]) -> Result<String, AndroidError> {
        let output = self.run_effect(command, TEXT_LIMIT)?;
        let output = String::from_utf8_lossy(&output).trim().to_owned();
        if output.contains("Error") || output.contains("/system/bin/sh:") {
            return Err(self.failed(command, &output));
        }
        Ok(output)
    }

    /// The screen size in pixels (`wm size`; an override size wins over the physical one).
    pub fn screen_size(&self) -> Result<(u32, u32), AndroidError> {
        let output = self.run_text(&["wm", "size"])?;
        parse_screen_size(&output).ok_or_else(|| self.failed(&["wm", "size"], output.trim()))
    }

    /// Runs a shell command line as the person's policy allowed it (it is not quoted: shell
    /// syntax in it is the device shell's to interpret). Returns at most `limit` bytes of its
    /// output and whether more was cut off.
    pub fn shell(&self, command: &str, limit: usize) -> Result<(Vec<u8>, bool), AndroidError> {
        if command.trim().is_empty() || command.contains('\0') {
            return Err(AndroidError::InvalidInput(
                "the command is empty or holds a NUL byte".into(),
            ));
        }
        let (output, truncated) = self.exec_bounded(command, limit)?;
        self.confirm_still_there(command)?;
        Ok((output, truncated))
    }

    fn input(&self, arguments: &[&str]) -> Result<(), AndroidError> {
        let mut command = vec!["input"];
        command.extend_from_slice(arguments);
        // `input` prints nothing when it worked; anything else is its complaint.
        let output = self.run_effect(&command, TEXT_LIMIT)?;
        let output = String::from_utf8_lossy(&output);
        if output.trim().is_empty() {
            Ok(())
        } else {
            Err(self.failed(&command, output.trim()))
        }
    }

    pub(crate) fn failed(&self, command: &[&str], output: &str) -> AndroidError {
        AndroidError::CommandFailed {
            serial: self.serial.clone(),
            command: command.join(" "),
            output: output.to_owned(),
        }
    }

    /// Runs quoted words that change the device, then makes sure the device is still there.
    /// Without shell_v2 a command's stream ends the same way whether the command finished or
    /// the device went away under it; the adb server's state for the device tells them apart.
    pub(crate) fn run_effect(&self, words: &[&str], limit: usize) -> Result<Vec<u8>, AndroidError> {
        let command = command_line(words);
        let output = self.exec(&command, limit)?;
        self.confirm_still_there(&command)?;
        Ok(output)
    }

    pub(crate) fn confirm_still_there(&self, command: &str) -> Result<(), AndroidError> {
        let unknown = |detail: String| AndroidError::OutcomeUnknown {
            serial: self.serial.clone(),
            command: command.to_owned(),
            detail,
        };
        let mut state = transport_state(self.server, &self.serial);
        // A server being killed can accept the question and die before it answers (a reset,
        // an early end): asked again a moment later, a gone server refuses the connection.
        if matches!(&state, Err(error) if error.kind() != io::ErrorKind::ConnectionRefused) {
            std::thread::sleep(std::time::Duration::from_millis(200));
            state = transport_state(self.server, &self.serial);
        }
        match state {
            Ok(Some(DeviceState::Ready)) => Ok(()),
            Ok(Some(state)) => Err(unknown(format!("the device is {state} now"))),
            Ok(None) => Err(unknown("the adb server no longer lists the device".into())),
            // The server itself is gone: the device may be fine, but nothing reaches it now.
            Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
                Err(AndroidError::ServerLost {
                    address: self.server,
                    serial: self.serial.clone(),
                    command: command.to_owned(),
                    detail: error.to_string(),
                })
            }
            Err(error) => Err(unknown(format!(
                "the adb server could not say whether the device is still there: {error}"
            ))),
        }
    }

    /// Runs the quoted words and returns their output as text.
    pub(crate) fn run_text(&self, words: &[&str]) -> Result<String, AndroidError> {
        let output = self.exec(&command_line(words), TEXT_LIMIT)?;
        Ok(String::from_utf8_lossy(&output).into_owned())
    }

    /// Runs `command` through `exec:` and collects its output. adb_client's `exec` reads the
    /// output on a thread of its own and returns before it is done; the thread drops the
    /// writer when the stream ends, which is how we know the output is complete.
    fn exec(&self, command: &str, limit: usize) -> Result<Vec<u8>, AndroidError> {
        let (bytes, overflowed) = self.exec_bounded(command, limit)?;
        if overflowed {
            return Err(AndroidError::OutputTooLarge {
                serial: self.serial.clone(),
                command: command.to_owned(),
                limit,
            });
        }
        Ok(bytes)
    }

    /// Like [`Device::exec`], but output past `limit` is cut off (the stream is closed there)
    /// and reported as the second value rather than as an error.
    pub(crate) fn exec_bounded(
        &self,
        command: &str,
        limit: usize,
    ) -> Result<(Vec<u8>, bool), AndroidError> {
        let mut device = ADBServerDevice::new(self.serial.clone(), Some(self.server));
        let (done, finished) = mpsc::channel::<()>();
        let collected = Arc::new(Mutex::new(Collected::default()));
        let writer = Collector {
            collected: Arc::clone(&collected),
            limit,
            _done: done,
        };
        device
            .exec(command, &mut io::empty(), Box::new(writer))
            .map_err(|error| self.adb_error(command, error))?;
        match finished.recv_timeout(COMMAND_TIMEOUT) {
            Err(RecvTimeoutError::Disconnected) => {}
            Ok(()) | Err(RecvTimeoutError::Timeout) => {
                return Err(AndroidError::TimedOut {
                    serial: self.serial.clone(),
                    command: command.to_owned(),
                    seconds: COMMAND_TIMEOUT.as_secs(),
                });
            }
        }
        // Dropping `device` here shuts the stream down (also on the timeout path above).
        drop(device);
        let collected =
            std::mem::take(&mut *collected.lock().unwrap_or_else(PoisonError::into_inner));
        Ok((collected.bytes, collected.overflowed))
    }

    /// Whether the adb server is gone: a moment after a broken stream (a killed server's
    /// last accepted connections break first), a new connection to it is refused.
    fn server_gone(&self) -> bool {
        std::thread::sleep(std::time::Duration::from_millis(100));
        matches!(
            std::net::TcpStream::connect_timeout(
                &std::net::SocketAddr::V4(self.server),
                std::time::Duration::from_millis(500),
            ),
            Err(error) if error.kind() == io::ErrorKind::ConnectionRefused
        )
    }

    pub(crate) fn adb_error(&self, command: &str, error: RustADBError) -> AndroidError {
        match error {
            RustADBError::ADBRequestFailed(detail) => {
                let detail = detail.trim().to_owned();
                if detail.contains("not found") {
                    AndroidError::DeviceNotFound {
                        serial: self.serial.clone(),
                    }
                } else if let Some(state) = ["offline", "unauthorized", "connecting", "authorizing"]
                    .into_iter()
                    .find(|state| detail.contains(state))
                {
                    AndroidError::DeviceNotReady {
                        serial: self.serial.clone(),
                        state: state.to_owned(),
                    }
                } else {
                    AndroidError::DeviceLost {
                        serial: self.serial.clone(),
                        command: command.to_owned(),
                        detail,
                    }
                }
            }
            RustADBError::IOError(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
                AndroidError::ServerUnreachable {
                    address: self.server,
                    detail: error.to_string(),
                }
            }
            // The stream broke: the device went away, or the adb server itself did (killed
            // under the command). A server that is gone refuses a new connection.
            RustADBError::IOError(error) if self.server_gone() => AndroidError::ServerLost {
                address: self.server,
                serial: self.serial.clone(),
                command: command.to_owned(),
                detail: error.to_string(),
            },
            RustADBError::IOError(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                AndroidError::DeviceLost {
                    serial: self.serial.clone(),
                    command: command.to_owned(),
                    detail: "the adb server closed the stream; the device probably disconnected"
                        .to_owned(),
                }
            }
            other => AndroidError::DeviceLost {
                serial: self.serial.clone(),
                command: command.to_owned(),
                detail: other.to_string(),
            },
        }
    }
}

/// `getprop` (every property in one round trip) as a map.
pub(crate) fn properties(device: &Device) -> Result<HashMap<String, String>, AndroidError> {
    let listing = device.run_text(&["getprop"])?;
    Ok(parse_properties(&listing))
}

/// Lines of `[key]: [value]`; anything else is skipped.
fn parse_properties(listing: &str) -> HashMap<String, String> {
    listing
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once("]: [")?;
            Some((
                key.strip_prefix('[')?.to_owned(),
                value.strip_suffix(']')?.to_owned(),
            ))
        })
        .collect()
}

/// `wm size` output: `Physical size: WxH`, then `Override size: WxH` when one is set.
fn parse_screen_size(output: &str) -> Option<(u32, u32)> {
    let size = |prefix: &str| {
        output.lines().find_map(|line| {
            let (width, height) = line.trim().strip_prefix(prefix)?.trim().split_once('x')?;
            Some((width.parse().ok()?, height.parse().ok()?))
        })
    };
    size("Override size:").or_else(|| size("Physical size:"))
}

pub(crate) fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

fn check_png(png: &[u8]) -> Result<(), String> {
    if !png.starts_with(PNG_SIGNATURE) {
        let start = String::from_utf8_lossy(&png[..png.len().min(80)]).into_owned();
        return Err(if png.is_empty() {
            "the device sent nothing".to_owned()
        } else {
            format!("no PNG signature; the device said: {start}")
        });
    }
    if !png.ends_with(PNG_END) {
        return Err(format!("cut off after {} bytes (no IEND chunk)", png.len()));
    }
    Ok(())
}

fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text
            .chars()
            .all(|character| character.is_ascii_hexdigit() || character == '-')
}

enum DumpError {
    NotIdle(u32),
    Device(AndroidError),
}

/// Runs `dump` until it does not report an idle-state failure, at most [`UI_DUMP_ATTEMPTS`]
/// times; returns the dump and how many attempts it took.
fn dump_with_retries(
    mut dump: impl FnMut() -> Result<String, AndroidError>,
) -> Result<(String, u32), DumpError> {
    for attempt in 1..=UI_DUMP_ATTEMPTS {
        let output = dump().map_err(DumpError::Device)?;
        if !output.contains("ERROR: could not get idle state") {
            return Ok((output, attempt));
        }
    }
    Err(DumpError::NotIdle(UI_DUMP_ATTEMPTS))
}

#[derive(Default)]
struct Collected {
    bytes: Vec<u8>,
    overflowed: bool,
}

/// The writer adb_client's reading thread fills; dropping it (when the stream ends) drops
/// `_done`, which wakes [`Device::exec`].
struct Collector {
    collected: Arc<Mutex<Collected>>,
    limit: usize,
    _done: mpsc::Sender<()>,
}

impl Write for Collector {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let mut collected = self
            .collected
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if collected.bytes.len() + buffer.len() > self.limit {
            let room = self.limit - collected.bytes.len();
            collected.bytes.extend_from_slice(&buffer[..room]);
            collected.overflowed = true;
            return Err(io::Error::other("output limit reached"));
        }
        collected.bytes.extend_from_slice(buffer);
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screen_sizes_prefer_the_override() {
        assert_eq!(
            parse_screen_size("Physical size: 1080x2400\n"),
            Some((1080, 2400))
        );
        assert_eq!(
            parse_screen_size("Physical size: 1080x2400\nOverride size: 720x1600\n"),
            Some((720, 1600))
        );
        assert_eq!(parse_screen_size("wm: not found\n"), None);
    }

    #[test]
    fn properties_parse_from_a_getprop_listing() {
        let properties = parse_properties(
            "[ro.product.model]: [Pixel 8]\n[ro.build.version.sdk]: [34]\nnoise\n",
        );
        assert_eq!(properties["ro.product.model"], "Pixel 8");
        assert_eq!(properties["ro.build.version.sdk"], "34");
        assert_eq!(properties.len(), 2);
    }

    #[test]
    fn captures_must_be_whole_pngs() {
        let mut png = PNG_SIGNATURE.to_vec();
        png.extend_from_slice(PNG_END);
        assert_eq!(check_png(&png), Ok(()));
        assert!(check_png(b"").is_err());
        assert!(check_png(b"/system/bin/sh: screencap: not found").is_err());
        assert!(check_png(PNG_SIGNATURE).is_err());
    }

    #[test]
    fn ui_dumps_are_retried_while_the_ui_is_busy() {
        let busy = "ERROR: could not get idle state.\n";
        let mut outputs = vec![busy, busy, "<hierarchy/>"].into_iter();
        let result = dump_with_retries(|| Ok(outputs.next().unwrap_or_default().to_owned()));
        assert!(matches!(result, Ok((ref dump, 3)) if dump == "<hierarchy/>"));

        let result = dump_with_retries(|| Ok(busy.to_owned()));
        assert!(matches!(result, Err(DumpError::NotIdle(3))));
    }
}
