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

/// Reads this data dir's bridge secret from the keyring, creating it on first use.
pub fn secret(data_dir: &Path) -> anyhow::Result<String> {
    let store = zbus_secret_service_keyring_store::Store::new().context(
        "cannot reach the OS keyring (Secret Service); `lomi mcp` keeps its pairing secret there and nowhere else",
    )?;
    keyring_core::set_default_store(store);
    let account = data_dir.display().to_string();
    let entry = keyring_core::Entry::new(KEYRING_SERVICE, &account).context("keyring entry")?;
    match entry.get_password() {
        Ok(secret) => Ok(secret),
        Err(keyring_core::Error::NoEntry) => {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| anyhow::anyhow!("no randomness for a secret: {e}"))?;
            let secret = hex::encode(bytes);
            entry
                .set_password(&secret)
                .context("cannot save the pairing secret in the OS keyring")?;
            Ok(secret)
        }
        Err(error) => Err(anyhow::anyhow!(
            "cannot read the pairing secret from the OS keyring: {error}"
        )),
    }
}

/// Relays stdio to the broker until either side closes.
pub async fn relay(data_dir: &Path, client_name: String, secret: String) -> anyhow::Result<()> {
    let path = lomi_mcp::local::socket_path(data_dir);
    let stream = tokio::net::UnixStream::connect(&path)
        .await
        .with_context(|| {
            format!(
                "no Lomi is running for {} (start it with `lomi serve --headless`)",
                data_dir.display()
            )
        })?;
    let (mut from_broker, mut to_broker) = stream.into_split();
    let hello = serde_json::to_string(&Hello::Mcp(McpHello {
        client_name,
        secret,
    }))?;
    to_broker.write_all(format!("{hello}\n").as_bytes()).await?;
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
