//! One running Lomi: the broker with its MCP endpoint on loopback and its local socket, as
//! `lomi serve --headless` and the desktop app both run it. `broker.json` says where it
//! listens while it runs; `stop` ends operations and runtimes and removes it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use lomi_broker::{Broker, BrokerConfig};
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Lomi;
use crate::http::HttpEndpoint;

/// The file that tells other programs where the running broker listens.
pub const BROKER_FILE: &str = "broker.json";

/// How to start a host.
pub struct HostOptions {
    pub data_dir: PathBuf,
    /// Where the MCP endpoint listens (loopback only; port 0 picks a free port).
    pub http: SocketAddr,
    /// The adb server Android devices are reached through.
    pub adb_server: std::net::SocketAddrV4,
    /// Where a `ShowWindow` request from a second launch goes; `None` when there is no window
    /// (headless), and such requests are refused.
    pub show_window: Option<UnboundedSender<()>>,
}

/// The store options of `--store-cap N` (hidden, for tests; `LOMI_STORE_CAP`), the same for
/// `lomi serve` and the app: both caps at N, so a test fills the store in seconds.
pub fn store_options(store_cap: Option<usize>) -> lomi_store::StoreOptions {
    let mut options = lomi_store::StoreOptions::default();
    if let Some(cap) = store_cap {
        options.caps.receipts = cap;
        options.caps.retry_epochs = cap;
    }
    options
}

/// A started broker with its endpoints. Dropping it without `stop` leaves the tasks running
/// until the runtime ends; `stop` is the clean way out.
pub struct Host {
    lomi: Lomi,
    url: String,
    data_dir: PathBuf,
    shutdown: CancellationToken,
    http: JoinHandle<anyhow::Result<()>>,
    local: JoinHandle<()>,
}

impl Host {
    /// Opens the data dir's store (only one Lomi per data dir: a second one gets
    /// `STORE_UNAVAILABLE` from the store lock), binds the endpoint and the socket, and writes
    /// `broker.json`.
    pub async fn start(options: HostOptions) -> anyhow::Result<Host> {
        Self::start_with_store(options, lomi_store::StoreOptions::default()).await
    }

    /// [`Host::start`] with other store options (smaller caps make the end-to-end tests that
    /// fill the store fast; see `lomi serve --store-cap`).
    pub async fn start_with_store(
        options: HostOptions,
        store_options: lomi_store::StoreOptions,
    ) -> anyhow::Result<Host> {
        let HostOptions {
            data_dir,
            http,
            adb_server,
            show_window,
        } = options;
        let mut config = BrokerConfig::new(&data_dir);
        config.store_options = store_options;
        let broker = Broker::start(config)
            .with_context(|| format!("cannot start Lomi in {}", data_dir.display()))?;
        let endpoint = HttpEndpoint::bind(http)
            .await
            .with_context(|| format!("cannot listen on {http}"))?;
        let url = endpoint.url();
        // The network section shows where agents reach this Lomi.
        if let Err(error) = broker.note_mcp_url(&url) {
            tracing::warn!("could not record the MCP endpoint in the settings: {error}");
        }
        let socket = crate::local::bind(&data_dir).context("cannot open the local socket")?;
        let shutdown = CancellationToken::new();
        let lomi = Lomi::new(broker.clone()).with_adb_server(adb_server);
        let local = tokio::spawn(crate::local::serve(
            socket,
            lomi.clone(),
            crate::control::Front {
                http_url: url.clone(),
                show_window,
            },
            shutdown.clone(),
        ));
        let http = tokio::spawn(endpoint.serve(lomi.clone(), shutdown.clone()));
        let record = json!({
            "url": url,
            "pid": std::process::id(),
            "brokerInstanceId": broker.instance_id(),
            "socket": crate::local::socket_path(&data_dir),
        });
        write_private(
            &data_dir.join(BROKER_FILE),
            &serde_json::to_vec_pretty(&record)?,
        )?;
        Ok(Host {
            lomi,
            url,
            data_dir,
            shutdown,
            http,
            local,
        })
    }

    pub fn lomi(&self) -> &Lomi {
        &self.lomi
    }

    pub fn broker(&self) -> &Broker {
        &self.lomi.broker
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Stops taking requests, stops the broker's operations and every runtime, and removes
    /// `broker.json` and the socket.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let served = self.http.await;
        if let Err(error) = self.local.await {
            tracing::warn!("the local socket stopped abnormally: {error}");
        }
        self.lomi.shutdown().await;
        remove_if_present(&self.data_dir.join(BROKER_FILE));
        remove_if_present(&crate::local::socket_path(&self.data_dir));
        match served {
            Ok(result) => result,
            Err(error) => Err(anyhow::anyhow!(
                "the HTTP server stopped abnormally: {error}"
            )),
        }
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let temp = path.with_extension("json.tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .with_context(|| format!("cannot write {}", temp.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn remove_if_present(path: &Path) {
    if let Err(error) = std::fs::remove_file(path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("could not remove {}: {error}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(dir: &Path) -> HostOptions {
        HostOptions {
            data_dir: dir.to_owned(),
            http: "127.0.0.1:0".parse().expect("address"),
            adb_server: lomi_android::DEFAULT_ADDRESS,
            show_window: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_host_per_data_dir_and_a_clean_stop_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("temp dir");
        let host = Host::start(options(dir.path())).await.expect("start");
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(BROKER_FILE)).expect("broker.json"),
        )
        .expect("json");
        assert_eq!(record["url"], host.url());
        assert_eq!(record["pid"], std::process::id());
        assert!(crate::local::socket_path(dir.path()).exists());

        // The person's commands reach it over the socket.
        let status = crate::local::request(dir.path(), &crate::control::ControlRequest::Status {})
            .await
            .expect("status");
        assert_eq!(status["data"]["url"], host.url());

        let second = Host::start(options(dir.path())).await;
        let error = format!("{:#}", second.err().expect("a second host is refused"));
        assert!(error.contains("another Lomi process"), "{error}");

        host.stop().await.expect("stop");
        assert!(!dir.path().join(BROKER_FILE).exists());
        assert!(!crate::local::socket_path(dir.path()).exists());
        // Stopped means the store is free again.
        Host::start(options(dir.path()))
            .await
            .expect("restart")
            .stop()
            .await
            .expect("stop again");
    }
}
