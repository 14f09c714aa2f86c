//! `AndroidError`: what went wrong talking to the adb server or a device, and the protocol
//! error code each case maps to.

use std::net::SocketAddrV4;

use lomi_protocol::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum AndroidError {
    #[error(
        "could not reach the adb server at {address}: {detail}; start it with `adb start-server` (or `adb -P PORT server` for another port)"
    )]
    ServerUnreachable {
        address: SocketAddrV4,
        detail: String,
    },
    #[error(
        "no device with serial `{serial}` is attached to the adb server; `adb devices` lists the serials it knows"
    )]
    DeviceNotFound { serial: String },
    #[error(
        "device `{serial}` is {state}, not ready for commands; reconnect it (and accept the USB debugging prompt if it asks)"
    )]
    DeviceNotReady { serial: String, state: String },
    #[error("lost device `{serial}` while running `{command}`: {detail}")]
    DeviceLost {
        serial: String,
        command: String,
        detail: String,
    },
    #[error(
        "device `{serial}` went away around `{command}` ({detail}); Lomi cannot tell whether the command took effect: look at the device before repeating it"
    )]
    OutcomeUnknown {
        serial: String,
        command: String,
        detail: String,
    },
    #[error(
        "the adb server at {address} stopped answering around `{command}` on device `{serial}` ({detail}); Lomi cannot tell whether the command took effect. Start the adb server again (`adb start-server`, or `adb -P PORT server` for another port), attach the device again with lomi_android_attach, and look at it before repeating the command"
    )]
    ServerLost {
        address: SocketAddrV4,
        serial: String,
        command: String,
        detail: String,
    },
    #[error("could not connect the adb server to {address}: {detail}")]
    ConnectFailed {
        address: SocketAddrV4,
        detail: String,
    },
    #[error("{0}")]
    InvalidInput(String),
    #[error("`{command}` failed on device `{serial}`: {output}")]
    CommandFailed {
        serial: String,
        command: String,
        output: String,
    },
    #[error("device `{serial}` did not finish `{command}` within {seconds} s")]
    TimedOut {
        serial: String,
        command: String,
        seconds: u64,
    },
    #[error("`{command}` printed more than {limit} bytes on device `{serial}`")]
    OutputTooLarge {
        serial: String,
        command: String,
        limit: usize,
    },
    #[error("the screenshot from device `{serial}` is not a whole PNG: {detail}")]
    BadCapture { serial: String, detail: String },
    #[error(
        "the UI of device `{serial}` never became idle in {attempts} `uiautomator dump` attempts (an animation or video keeps it busy); wait and retry, or turn off animations in Developer options"
    )]
    UiNotIdle { serial: String, attempts: u32 },
    #[error("could not read the UI dump from device `{serial}`: {detail}")]
    BadUiDump { serial: String, detail: String },
    #[error("device `{serial}` refused `{command}`: {output}")]
    Refused {
        serial: String,
        command: String,
        output: String,
    },
    #[error(
        "`{package}` is not installed on device `{serial}` ({output}); lomi_android_apps lists what is"
    )]
    NotInstalled {
        serial: String,
        package: String,
        output: String,
    },
    #[error("device `{serial}` has no file {path}")]
    NoDeviceFile { serial: String, path: String },
    #[error(
        "the SHA-256 of {path} differs between Lomi ({sent}) and device `{serial}` ({found}); the copy is not whole: try again"
    )]
    Mismatch {
        serial: String,
        path: String,
        sent: String,
        found: String,
    },
    #[error(
        "`{command}` stopped moving on device `{serial}` ({detail}); the device is still there, but what reached it is unknown"
    )]
    Stalled {
        serial: String,
        command: String,
        detail: String,
    },
    #[error(
        "{path} was copied, but device `{serial}` could not check it ({detail}); Lomi cannot say the copy is whole"
    )]
    Unverified {
        serial: String,
        path: String,
        detail: String,
    },
    #[error("cancelled")]
    Cancelled,
}

impl AndroidError {
    /// Whether the device may have acted on the command even though it failed: the device
    /// went away mid-command or did not answer in time. Otherwise the failure came before
    /// anything reached the device, or the device itself refused.
    pub fn effect_unknown(&self) -> bool {
        matches!(
            self,
            AndroidError::DeviceLost { .. }
                | AndroidError::OutcomeUnknown { .. }
                | AndroidError::ServerLost { .. }
                | AndroidError::TimedOut { .. }
                | AndroidError::Mismatch { .. }
                | AndroidError::Stalled { .. }
                | AndroidError::Unverified { .. }
        )
    }

    /// Whether the device is gone (or not ready), so its panel's runtime has ended.
    pub fn device_gone(&self) -> bool {
        matches!(
            self,
            AndroidError::DeviceNotFound { .. }
                | AndroidError::DeviceNotReady { .. }
                | AndroidError::DeviceLost { .. }
                | AndroidError::OutcomeUnknown { .. }
                | AndroidError::ServerLost { .. }
        )
    }

    /// What ended a panel's runtime, and what brings it back, when this error ended it.
    pub fn ending(&self) -> String {
        match self {
            AndroidError::ServerLost { address, .. } => format!(
                "the adb server at {address} stopped answering; start it again (`adb start-server`, or \
                 `adb -P PORT server` for another port), then attach the device again with lomi_android_attach \
                 (it gets a new generation)"
            ),
            _ => "lost its device; attach it again with lomi_android_attach (it gets a new generation)"
                .to_owned(),
        }
    }

    /// The protocol error code this error is reported as.
    pub fn code(&self) -> ErrorCode {
        match self {
            AndroidError::DeviceNotFound { .. }
            | AndroidError::NotInstalled { .. }
            | AndroidError::NoDeviceFile { .. } => ErrorCode::NotFound,
            // The device refused the request as given (a path it cannot write, an APK pm
            // rejects): the agent changes the request.
            AndroidError::Refused { .. } => ErrorCode::InvalidArgument,
            AndroidError::Mismatch { .. }
            | AndroidError::Stalled { .. }
            | AndroidError::Cancelled => ErrorCode::RuntimeUnavailable,
            AndroidError::InvalidInput(_) => ErrorCode::InvalidArgument,
            AndroidError::DeviceNotReady { .. } | AndroidError::Unverified { .. } => {
                ErrorCode::Unsupported
            }
            AndroidError::OutputTooLarge { .. } => ErrorCode::Unsupported,
            // The device or adb is gone or busy, not Lomi at fault (docs/errors.md).
            AndroidError::ServerUnreachable { .. }
            | AndroidError::DeviceLost { .. }
            | AndroidError::OutcomeUnknown { .. }
            | AndroidError::ServerLost { .. }
            | AndroidError::ConnectFailed { .. }
            | AndroidError::TimedOut { .. }
            | AndroidError::UiNotIdle { .. } => ErrorCode::RuntimeUnavailable,
            AndroidError::CommandFailed { .. }
            | AndroidError::BadCapture { .. }
            | AndroidError::BadUiDump { .. } => ErrorCode::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_what_the_caller_can_do() {
        let not_found = AndroidError::DeviceNotFound { serial: "x".into() };
        assert_eq!(not_found.code(), ErrorCode::NotFound);
        assert_eq!(
            AndroidError::InvalidInput("bad".into()).code(),
            ErrorCode::InvalidArgument
        );
        let offline = AndroidError::DeviceNotReady {
            serial: "x".into(),
            state: "offline".into(),
        };
        assert_eq!(offline.code(), ErrorCode::Unsupported);
        let lost = AndroidError::DeviceLost {
            serial: "x".into(),
            command: "input tap 1 1".into(),
            detail: "connection reset".into(),
        };
        assert_eq!(lost.code(), ErrorCode::RuntimeUnavailable);
        let busy = AndroidError::UiNotIdle {
            serial: "x".into(),
            attempts: 3,
        };
        assert_eq!(busy.code(), ErrorCode::RuntimeUnavailable);
    }
}
