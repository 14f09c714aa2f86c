//! Android runtimes over the adb server: listing devices, screenshots, UI snapshots and input.
//!
//! The API is synchronous because `adb_client` is; async callers wrap each call in
//! `tokio::task::spawn_blocking`. Every device command goes through the adb server's `exec:`
//! service, so arguments are shell-quoted here (see [`shell`]) and reach the device literally.

mod device;
mod error;
mod server;
pub mod shell;
mod ui;

pub use device::{Device, Generation};
pub use error::AndroidError;
pub use server::{AdbServer, DeviceInfo, DeviceState};
pub use ui::{Bounds, UiNode, UiSnapshot};
