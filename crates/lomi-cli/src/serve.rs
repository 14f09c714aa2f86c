//! `lomi serve --headless`: the broker with its MCP endpoint and local socket, until SIGINT or
//! SIGTERM. Writes `broker.json` once ready and removes it on a clean exit.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use lomi_broker::{Broker, BrokerConfig};
use lomi_mcp::http::HttpEndpoint;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The file that tells other programs where the running broker listens.
pub const BROKER_FILE: &str = "broker.json";

pub async fn run(
    data_dir: &Path,
    http: SocketAddr,
    adb_server: std::net::SocketAddrV4,
) -> anyhow::Result<()> {
    let broker = Broker::start(BrokerConfig::new(data_dir))
        .with_context(|| format!("cannot start Lomi in {}", data_dir.display()))?;
    let endpoint = HttpEndpoint::bind(http)
        .await
        .with_context(|| format!("cannot listen on {http}"))?;
    let url = endpoint.url();
    let socket = lomi_mcp::local::bind(data_dir).context("cannot open the local socket")?;
    let shutdown = CancellationToken::new();
    let lomi = lomi_mcp::Lomi::new(broker.clone()).with_adb_server(adb_server);

    let local = tokio::spawn(lomi_mcp::local::serve(
        socket,
        lomi.clone(),
        url.clone(),
        shutdown.clone(),
    ));
    let server = tokio::spawn(endpoint.serve(lomi.clone(), shutdown.clone()));

    let broker_file = data_dir.join(BROKER_FILE);
    let record = json!({
        "url": url,
        "pid": std::process::id(),
        "brokerInstanceId": broker.instance_id(),
        "socket": lomi_mcp::local::socket_path(data_dir),
    });
    write_private(&broker_file, &serde_json::to_vec_pretty(&record)?)?;

    let recovered = broker.recovered_operations();
    println!("Lomi is running (headless).");
    println!("  MCP endpoint:  {url}");
    println!("  data dir:      {}", data_dir.display());
    println!("  adb server:    {adb_server}");
    if recovered > 0 {
        println!(
            "  {recovered} unfinished operation(s) from before the last stop are now outcome_unknown: `lomi operation list`"
        );
    }
    if broker.workspaces().is_empty() {
        println!("  No workspace yet: `lomi workspace add --name NAME --project PATH`");
    }
    println!(
        "  When an agent connects, approve it with `lomi pairing list` and `lomi pairing approve ID --workspace W`,"
    );
    println!("  or create a token ahead with `lomi pairing create --name NAME --workspace W`.");
    println!("  Stop with Ctrl+C.");

    wait_for_signal().await;
    shutdown.cancel();
    let served = server.await;
    let _local = local.await;
    lomi.shutdown().await;
    remove_if_present(&broker_file);
    remove_if_present(&lomi_mcp::local::socket_path(data_dir));
    match served {
        Ok(result) => result,
        Err(error) => Err(anyhow::anyhow!(
            "the HTTP server stopped abnormally: {error}"
        )),
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
    match (terminate, interrupt) {
        (Ok(mut terminate), Ok(mut interrupt)) => {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
        }
        _ => {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
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
        eprintln!("lomi: could not remove {}: {error}", path.display());
    }
}
