//! Android runtimes over the adb server: listing devices, screenshots, UI snapshots and input,
//! and (in [`panels`]) the Android tools over the broker.
//!
//! The device API is synchronous because `adb_client` is; [`panels`] wraps each call in
//! `tokio::task::spawn_blocking`. Every device command goes through the adb server's `exec:`
//! service, so arguments are shell-quoted here (see [`shell`]) and reach the device literally.

mod apk;
mod device;
mod error;
mod packages;
pub mod panels;
mod screen;
mod serve;
mod server;
pub mod shell;
mod sync;
mod ui;

pub use device::{Device, Generation};
pub use error::AndroidError;
pub use server::{AdbServer, DEFAULT_ADDRESS, DeviceInfo, DeviceState};
pub use ui::{Bounds, UiNode, UiSnapshot};
