//! What a device holds beyond its screen: files moved over adb's sync protocol (each checked
//! with the device's `sha256sum`), packages (`pm`), app processes (`am force-stop`, `pidof`),
//! the log (`logcat`) and the rotation settings. Blocking, like the rest of [`Device`].

use std::io::{self, Read, Write};

use adb_client::RustADBError;
use sha2::{Digest, Sha256};

use crate::AndroidError;
use crate::device::{Device, has_control};
use crate::sync::{Cancel, Sync, SyncError};

/// The largest file `pull` takes.
pub const MAX_PULL_BYTES: u64 = 256 << 20;
const TEXT_LIMIT: usize = 1 << 20;

/// Reads through to the sync session, hashing and counting.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buffer)?;
        self.hasher.update(&buffer[..read]);
        self.bytes += read as u64;
        Ok(read)
    }
}

/// Passes what the device sends to a sink, up to a limit, hashing each chunk as it arrives
/// (so the hash is ready when the last byte is). A failure of its own (the limit, the sink)
/// is kept apart from the stream's, which would mean the device.
struct Receiving<'a> {
    sink: &'a mut dyn Write,
    hasher: Sha256,
    bytes: u64,
    limit: u64,
    failure: Option<String>,
}

impl Write for Receiving<'_> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let failed = if self.bytes + buffer.len() as u64 > self.limit {
            Some(format!(
                "the file grew past {} bytes while it was read",
                self.limit
            ))
        } else {
            self.sink
                .write_all(buffer)
                .err()
                .map(|error| format!("cannot write the pulled file: {error}"))
        };
        if let Some(failure) = failed {
            self.failure = Some(failure.clone());
            return Err(io::Error::other(failure));
        }
        self.hasher.update(buffer);
        self.bytes += buffer.len() as u64;
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }
}

/// A device path Lomi hands to adb: absolute, no control characters, not too long.
pub(crate) fn check_device_path(path: &str) -> Result<(), AndroidError> {
    if !path.starts_with('/') || path.len() > 1024 || has_control(path) || path.ends_with('/') {
        return Err(AndroidError::InvalidInput(format!(
            "devicePath {path:?} must be an absolute file path on the device (such as /sdcard/Download/file.bin), at most 1,024 bytes, without control characters"
        )));
    }
    Ok(())
}

/// A package name: letters, digits, `_` and `.`, 1 to 255 characters.
pub(crate) fn check_package(package: &str) -> Result<(), AndroidError> {
    let valid = !package.is_empty()
        && package.len() <= 255
        && package
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if valid {
        Ok(())
    } else {
        Err(AndroidError::InvalidInput(format!(
            "`{package}` is not a package name; give one such as org.example.app"
        )))
    }
}

impl Device {
    /// What a failed sync exchange means for the caller.
    fn sync_error(&self, what: &str, error: SyncError, cancel: &Cancel) -> AndroidError {
        if cancel.is_cancelled() {
            return AndroidError::Cancelled;
        }
        match error {
            SyncError::Transport(detail) => {
                self.adb_error(what, RustADBError::ADBRequestFailed(detail))
            }
            SyncError::Failed(output) => AndroidError::Refused {
                serial: self.serial().to_owned(),
                command: what.to_owned(),
                output: output.trim().to_owned(),
            },
            // The stream broke or stalled: gone, or still there and stuck.
            SyncError::Io(error) => match self.confirm_still_there(what) {
                Err(gone) => gone,
                Ok(()) => AndroidError::Stalled {
                    serial: self.serial().to_owned(),
                    command: what.to_owned(),
                    detail: error.to_string(),
                },
            },
        }
    }

    /// The device's own SHA-256 of a file (`sha256sum`).
    pub fn device_sha256(&self, path: &str) -> Result<String, AndroidError> {
        let output = self.run_text(&["sha256sum", path])?;
        let digest = output.split_whitespace().next().unwrap_or_default();
        if digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()) {
            Ok(digest.to_ascii_lowercase())
        } else {
            Err(AndroidError::Refused {
                serial: self.serial().to_owned(),
                command: format!("sha256sum {path}"),
                output: output.trim().to_owned(),
            })
        }
    }

    /// Sends `source` to `path` over the sync protocol; returns its size and SHA-256 once the
    /// device's `sha256sum` agrees. Stops with [`AndroidError::Cancelled`] once `cancel` fires.
    pub fn push(
        &self,
        source: impl Read,
        path: &str,
        cancel: &Cancel,
    ) -> Result<(u64, String), AndroidError> {
        check_device_path(path)?;
        let what = format!("push {path}");
        let mut reader = Hashing {
            inner: source,
            hasher: Sha256::new(),
            bytes: 0,
        };
        let modified = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| {
                u32::try_from(elapsed.as_secs()).unwrap_or(u32::MAX)
            });
        let sent = Sync::open(self.server(), self.serial(), cancel).and_then(|mut sync| {
            sync.send(&mut reader, path, modified)?;
            sync.quit();
            Ok(())
        });
        sent.map_err(|error| self.sync_error(&what, error, cancel))?;
        let sha256 = hex::encode(reader.hasher.finalize());
        // A device without `sha256sum` (older than Android 6) has the file, unchecked.
        let on_device = self.device_sha256(path).map_err(|error| match error {
            AndroidError::Refused { serial, output, .. } => AndroidError::Unverified {
                serial,
                path: path.to_owned(),
                detail: output,
            },
            other => other,
        })?;
        if on_device != sha256 {
            return Err(AndroidError::Mismatch {
                serial: self.serial().to_owned(),
                path: path.to_owned(),
                sent: sha256,
                found: on_device,
            });
        }
        Ok((reader.bytes, sha256))
    }

    /// Receives `path` over the sync protocol (at most `limit` bytes) into `sink`; returns its
    /// size and SHA-256 once they match the device's `sha256sum`. On an error, `sink` may hold
    /// part of the file.
    pub fn pull(
        &self,
        path: &str,
        limit: u64,
        sink: &mut dyn Write,
        cancel: &Cancel,
    ) -> Result<(u64, String), AndroidError> {
        check_device_path(path)?;
        let what = format!("pull {path}");
        let mut sync = Sync::open(self.server(), self.serial(), cancel)
            .map_err(|error| self.sync_error(&what, error, cancel))?;
        let stat = sync
            .stat(path)
            .map_err(|error| self.sync_error(&what, error, cancel))?;
        if stat.mode == 0 {
            return Err(AndroidError::NoDeviceFile {
                serial: self.serial().to_owned(),
                path: path.to_owned(),
            });
        }
        if stat.mode & 0o170_000 != 0o100_000 {
            return Err(AndroidError::InvalidInput(format!(
                "{path} is not a regular file on the device"
            )));
        }
        if u64::from(stat.size) > limit {
            return Err(AndroidError::InvalidInput(format!(
                "{path} has {} bytes; Lomi pulls at most {limit}",
                stat.size
            )));
        }
        let mut receiving = Receiving {
            sink,
            hasher: Sha256::new(),
            bytes: 0,
            limit,
            failure: None,
        };
        // The device hashes its file while it sends it, on a second connection, rather than
        // after: the two reads of the file overlap and the check waits for the slower one.
        // Both must see the same bytes, as before; a file that changes meanwhile is a mismatch.
        let (received, on_device) = std::thread::scope(|scope| {
            let device_hash = scope.spawn(|| self.device_sha256(path));
            let received = sync.receive(path, &mut receiving);
            let on_device = device_hash.join().unwrap_or_else(|_| {
                Err(AndroidError::Stalled {
                    serial: self.serial().to_owned(),
                    command: format!("sha256sum {path}"),
                    detail: "the check's thread panicked".to_owned(),
                })
            });
            (received, on_device)
        });
        if let Some(failure) = receiving.failure {
            return Err(AndroidError::InvalidInput(failure));
        }
        received.map_err(|error| self.sync_error(&what, error, cancel))?;
        sync.quit();
        let on_device = on_device?;
        let sha256 = hex::encode(receiving.hasher.finalize());
        if sha256 != on_device {
            return Err(AndroidError::Mismatch {
                serial: self.serial().to_owned(),
                path: path.to_owned(),
                sent: on_device,
                found: sha256,
            });
        }
        Ok((receiving.bytes, sha256))
    }

    /// `pm install OPTIONS PATH` of an APK already on the device; `Ok` only on `Success`.
    pub fn pm_install(&self, path: &str, options: &[&str]) -> Result<String, AndroidError> {
        let mut command = vec!["pm", "install"];
        command.extend_from_slice(options);
        command.push(path);
        let output = self.run_effect(&command, TEXT_LIMIT)?;
        let output = String::from_utf8_lossy(&output).trim().to_owned();
        if output.lines().any(|line| line.trim() == "Success") {
            Ok(output)
        } else {
            Err(AndroidError::Refused {
                serial: self.serial().to_owned(),
                command: command.join(" "),
                output,
            })
        }
    }

    /// Removes a file (`rm -f`), as after an install.
    pub fn remove_file(&self, path: &str) -> Result<(), AndroidError> {
        check_device_path(path)?;
        self.run_effect(&["rm", "-f", path], TEXT_LIMIT).map(|_| ())
    }

    /// `versionCode` and `versionName` as the package manager reports them (`dumpsys package`).
    pub fn package_version(
        &self,
        package: &str,
    ) -> Result<(Option<u64>, Option<String>), AndroidError> {
        check_package(package)?;
        let output = self.run_text(&["dumpsys", "package", package])?;
        let value = |key: &str| {
            output.lines().find_map(|line| {
                let at = line.find(key)?;
                let rest = &line[at + key.len()..];
                Some(
                    rest.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
        };
        Ok((
            value("versionCode=").and_then(|code| code.parse().ok()),
            value("versionName=").filter(|name| !name.is_empty()),
        ))
    }

    /// Installed packages and their version codes (`pm list packages --show-versioncode`).
    pub fn packages(
        &self,
        include_system: bool,
    ) -> Result<Vec<(String, Option<u64>)>, AndroidError> {
        let mut command = vec!["pm", "list", "packages", "--show-versioncode"];
        if !include_system {
            command.push("-3");
        }
        let output = self.run_text(&command)?;
        let mut packages: Vec<(String, Option<u64>)> = output
            .lines()
            .filter_map(|line| {
                let rest = line.trim().strip_prefix("package:")?;
                let mut words = rest.split_whitespace();
                let name = words.next()?.to_owned();
                let code = words
                    .find_map(|word| word.strip_prefix("versionCode:"))
                    .and_then(|code| code.parse().ok());
                Some((name, code))
            })
            .collect();
        packages.sort();
        Ok(packages)
    }

    /// `pm uninstall PACKAGE`; `Ok` only on `Success`.
    pub fn uninstall(&self, package: &str) -> Result<(), AndroidError> {
        check_package(package)?;
        let output = self.run_effect(&["pm", "uninstall", package], TEXT_LIMIT)?;
        let output = String::from_utf8_lossy(&output).trim().to_owned();
        if output.lines().any(|line| line.trim() == "Success") {
            Ok(())
        } else if output.contains("DELETE_FAILED_INTERNAL_ERROR")
            || output.contains("Unknown package")
        {
            Err(AndroidError::NotInstalled {
                serial: self.serial().to_owned(),
                package: package.to_owned(),
                output,
            })
        } else {
            Err(AndroidError::Refused {
                serial: self.serial().to_owned(),
                command: format!("pm uninstall {package}"),
                output,
            })
        }
    }

    /// `am force-stop PACKAGE` (it prints nothing when it ran).
    pub fn force_stop(&self, package: &str) -> Result<(), AndroidError> {
        check_package(package)?;
        let command = ["am", "force-stop", package];
        let output = self.run_effect(&command, TEXT_LIMIT)?;
        let output = String::from_utf8_lossy(&output);
        if output.trim().is_empty() {
            Ok(())
        } else {
            Err(AndroidError::Refused {
                serial: self.serial().to_owned(),
                command: command.join(" "),
                output: output.trim().to_owned(),
            })
        }
    }

    /// The pid of a package's running process (`pidof`), if it runs.
    pub fn pidof(&self, package: &str) -> Result<Option<u32>, AndroidError> {
        check_package(package)?;
        let output = self.run_text(&["pidof", package])?;
        Ok(output
            .split_whitespace()
            .next()
            .and_then(|pid| pid.parse().ok()))
    }

    /// `logcat -d` with epoch times in microseconds and the given options; at most `limit`
    /// bytes of output, and whether more was cut off.
    pub fn logcat(
        &self,
        options: &[String],
        limit: usize,
    ) -> Result<(Vec<u8>, bool), AndroidError> {
        let mut words = vec![
            "logcat",
            "-d",
            "-v",
            "threadtime",
            "-v",
            "epoch",
            "-v",
            "usec",
        ];
        words.extend(options.iter().map(String::as_str));
        self.exec_bounded(&crate::shell::command_line(&words), limit)
    }

    /// The rotation setting (0 to 3) and whether auto-rotate is on.
    pub fn rotation(&self) -> Result<(u32, bool), AndroidError> {
        let rotation = self.run_text(&["settings", "get", "system", "user_rotation"])?;
        let auto = self.run_text(&["settings", "get", "system", "accelerometer_rotation"])?;
        // A device that never had it set answers `null`: the natural orientation.
        let rotation = rotation.trim().parse().unwrap_or(0);
        Ok((rotation, auto.trim() == "1"))
    }

    /// Turns auto-rotate off and sets the rotation.
    pub fn set_rotation(&self, rotation: u32) -> Result<(), AndroidError> {
        for command in [
            ["settings", "put", "system", "accelerometer_rotation", "0"],
            [
                "settings",
                "put",
                "system",
                "user_rotation",
                &rotation.to_string(),
            ],
        ] {
            let output = self.run_effect(&command, TEXT_LIMIT)?;
            let output = String::from_utf8_lossy(&output);
            if !output.trim().is_empty() {
                return Err(AndroidError::Refused {
                    serial: self.serial().to_owned(),
                    command: command.join(" "),
                    output: output.trim().to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The screen density in dpi (`wm density`; an override wins), if the device says.
    pub fn density(&self) -> Result<Option<u32>, AndroidError> {
        let output = self.run_text(&["wm", "density"])?;
        let read = |label: &str| {
            output
                .lines()
                .find_map(|line| line.trim().strip_prefix(label))
                .and_then(|value| value.trim().parse().ok())
        };
        Ok(read("Override density:").or_else(|| read("Physical density:")))
    }
}
