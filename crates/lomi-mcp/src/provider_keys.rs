//! Model providers' API keys in the OS keyring (Secret Service), one entry per data dir and
//! provider. Lomi writes and removes them for the person; no tool or control request reads one
//! back; only Chat's provider send reads one (`load`), to send it to that provider.

use std::path::Path;
use std::sync::Arc;

use lomi_protocol::{ErrorCode, ToolError};

/// The keyring service under which provider keys are kept; the user is `<data dir>#<name>`.
const KEYRING_SERVICE: &str = "dev.lomi.provider";
/// The longest key Lomi accepts, in bytes.
const MAX_KEY_BYTES: usize = 8 * 1024;

/// Checks a key the person gives: 1 to 8 KiB of printable characters (a trailing newline
/// from stdin is already gone).
pub fn check_key(key: &str) -> Result<(), ToolError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "a provider key is 1 to {MAX_KEY_BYTES} bytes on one line, without control characters"
        )));
    }
    Ok(())
}

/// Stores `key` for provider `name` of this data dir, or removes it (`None`; removing a key
/// that is not there is fine). The keyring's client runs its own executor, so it runs on a
/// thread of its own, never inside the async runtime.
pub fn save(data_dir: &Path, name: &str, key: Option<String>) -> Result<(), ToolError> {
    let account = format!("{}#{name}", data_dir.display());
    let work = move || -> Result<(), String> {
        let entry = entry(&account)?;
        match key {
            Some(key) => entry.set_password(&key).map_err(|e| e.to_string()),
            None => match entry.delete_credential() {
                Ok(()) | Err(keyring_core::Error::NoEntry) => Ok(()),
                Err(e) => Err(e.to_string()),
            },
        }
    };
    on_keyring_thread(work)?.map_err(|why| {
        ToolError::new(
            ErrorCode::RuntimeUnavailable,
            format!(
                "cannot reach the OS keyring (Secret Service): {why}; Lomi keeps provider keys there and nowhere else, so nothing was changed"
            ),
        )
    })
}

/// Provider `name`'s key of this data dir, for a send to that provider.
pub fn load(data_dir: &Path, name: &str) -> Result<String, ToolError> {
    let account = format!("{}#{name}", data_dir.display());
    let work = move || {
        entry(&account).and_then(|entry| match entry.get_password() {
            Ok(key) => Ok(Some(key)),
            Err(keyring_core::Error::NoEntry) => Ok(None),
            Err(e) => Err(e.to_string()),
        })
    };
    match on_keyring_thread(work)? {
        Ok(Some(key)) => Ok(key),
        Ok(None) => Err(ToolError::new(
            ErrorCode::ProviderAuth,
            format!(
                "the settings say provider {name}'s key is stored, but the OS keyring has none; the person stores it again with `lomi settings provider-key {name}`"
            ),
        )),
        Err(why) => Err(ToolError::new(
            ErrorCode::RuntimeUnavailable,
            format!(
                "cannot reach the OS keyring (Secret Service) for provider {name}'s key: {why}; nothing was sent"
            ),
        )),
    }
}

fn entry(account: &str) -> Result<keyring_core::Entry, String> {
    let store: Arc<keyring_core::CredentialStore> =
        zbus_secret_service_keyring_store::Store::new().map_err(|e| e.to_string())?;
    keyring_core::Entry::new_in_store(&store, KEYRING_SERVICE, account).map_err(|e| e.to_string())
}

/// Runs keyring work on a thread of its own: the keyring's client runs its own executor,
/// never inside the async runtime.
fn on_keyring_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    std::thread::Builder::new()
        .name("lomi-keyring".to_owned())
        .spawn(work)
        .map_err(|e| ToolError::internal(format!("cannot start the keyring thread: {e}")))?
        .join()
        .map_err(|_| ToolError::internal("the keyring thread stopped abnormally"))
}
