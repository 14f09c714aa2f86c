//! `lomi mcp`: the stdio bridge an agent launches. It proves its pairing with a secret kept in
//! the OS keyring (never in a file) and relays newline-delimited JSON-RPC between the agent's
//! stdio and the running broker's local socket.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use lomi_mcp::local::{Hello, McpHello};
use tokio::io::AsyncWriteExt;

/// The keyring service under which bridge secrets are kept; the user is the data dir.
const KEYRING_SERVICE: &str = "dev.lomi.bridge";

/// Where the bridge's secret is kept.
pub enum Kept {
    /// The OS keyring (Secret Service): kept until the person removes it.
    SecretService,
    /// The kernel keyring of this user (keyutils), where there is no Secret Service (a server
    /// reached over SSH): kept until the machine restarts.
    Kernel(String),
}

/// Reads this data dir's bridge secret from the OS keyring, creating it on first use; where
/// the Secret Service cannot be reached, from the kernel keyring instead. Never a file.
pub fn secret(data_dir: &Path) -> anyhow::Result<(String, Kept)> {
    match secret_service_secret(data_dir) {
        Ok(secret) => Ok((secret, Kept::SecretService)),
        Err(Reach::Unreachable(reason)) => {
            let secret = kernel_secret(data_dir).with_context(|| {
                format!(
                    "the OS keyring (Secret Service) is not reachable ({reason}), and neither is the \
                     kernel keyring; `lomi mcp` keeps its pairing secret in one of them and nowhere else"
                )
            })?;
            Ok((secret, Kept::Kernel(reason)))
        }
        Err(Reach::Failed(error)) => Err(error),
    }
}

/// The one line `lomi mcp` says about where its secret is, when it is not the OS keyring.
pub fn kept_note(kept: &Kept) -> Option<String> {
    match kept {
        Kept::SecretService => None,
        Kept::Kernel(reason) => Some(format!(
            "lomi mcp: the OS keyring (Secret Service) is not reachable here ({reason}); this \
             client's pairing secret is kept in the kernel keyring of this user until the machine \
             restarts, then the person approves it again"
        )),
    }
}

enum Reach {
    /// No Secret Service answers here (no D-Bus session, or none provides it).
    Unreachable(String),
    Failed(anyhow::Error),
}

fn secret_service_secret(data_dir: &Path) -> Result<String, Reach> {
    let store = zbus_secret_service_keyring_store::Store::new()
        .map_err(|error| Reach::Unreachable(first_line(&error)))?;
    keyring_core::set_default_store(store);
    let account = data_dir.display().to_string();
    let entry = keyring_core::Entry::new(KEYRING_SERVICE, &account)
        .map_err(|e| Reach::Failed(anyhow::anyhow!("keyring entry: {e}")))?;
    match entry.get_password() {
        Ok(secret) => Ok(secret),
        Err(keyring_core::Error::NoEntry) => {
            let secret = new_secret().map_err(Reach::Failed)?;
            entry.set_password(&secret).map_err(|e| {
                Reach::Failed(anyhow::anyhow!(
                    "cannot save the pairing secret in the OS keyring: {e}"
                ))
            })?;
            Ok(secret)
        }
        Err(
            error @ (keyring_core::Error::NoStorageAccess(_)
            | keyring_core::Error::PlatformFailure(_)),
        ) => Err(Reach::Unreachable(first_line(&error))),
        Err(error) => Err(Reach::Failed(anyhow::anyhow!(
            "cannot read the pairing secret from the OS keyring: {error}"
        ))),
    }
}

/// The secret in the user keyring (`@u`), which every login session of the user links, so a
/// client relaunched from another SSH login finds it; readable by this user only.
fn kernel_secret(data_dir: &Path) -> anyhow::Result<String> {
    use linux_keyutils::{KeyRing, KeyRingIdentifier};
    let description = format!("{KEYRING_SERVICE}:{}", data_dir.display());
    let ring = KeyRing::from_special_id(KeyRingIdentifier::User, true)
        .map_err(|e| anyhow::anyhow!("the user keyring: {e}"))?;
    if let Ok(key) = ring.search(&description) {
        let bytes = key
            .read_to_vec()
            .map_err(|e| anyhow::anyhow!("cannot read the pairing secret: {e}"))?;
        return String::from_utf8(bytes)
            .map_err(|_| anyhow::anyhow!("the kernel keyring's pairing secret is not text"));
    }
    let secret = new_secret()?;
    ring.add_key(&description, secret.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot save the pairing secret: {e}"))?;
    Ok(secret)
}

fn new_secret() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness for a secret: {e}"))?;
    Ok(hex::encode(bytes))
}

/// An error's first line, without the chain of causes each repeating it.
fn first_line(error: &dyn std::fmt::Display) -> String {
    error
        .to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Relays stdio to the broker until either side closes.
pub async fn relay(data_dir: &Path, client_name: String, secret: String) -> anyhow::Result<()> {
    let hello = Hello::Mcp(McpHello {
        client_name,
        secret,
    });
    let stream = lomi_mcp::local::connect(data_dir, &hello).await?;
    let (mut from_broker, mut to_broker) = stream.into_split();
    let done = Arc::new(tokio::sync::Notify::new());
    let upstream = async {
        let mut stdin = tokio::io::stdin();
        let copied = tokio::io::copy(&mut stdin, &mut to_broker).await;
        let _closed = to_broker.shutdown().await;
        copied
    };
    let downstream = async {
        let mut stdout = tokio::io::stdout();
        let copied = tokio::io::copy(&mut from_broker, &mut stdout).await;
        let _flushed = stdout.flush().await;
        done.notify_one();
        copied
    };
    // The broker closing ends the bridge (e.g. Lomi stopped); the agent closing stdin lets
    // the broker finish its answers first.
    tokio::select! {
        result = async { tokio::join!(upstream, downstream) } => {
            result.1.context("relay from Lomi")?;
        }
        () = done.notified() => {}
    }
    Ok(())
}
