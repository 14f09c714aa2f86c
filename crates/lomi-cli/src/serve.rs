//! `lomi serve --headless`: the broker with its MCP endpoint and local socket (a
//! `lomi_mcp::host::Host`, the same one the desktop app runs), until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::Path;

use lomi_mcp::host::{Host, HostOptions};

pub async fn run(
    data_dir: &Path,
    http: SocketAddr,
    adb_server: std::net::SocketAddrV4,
    store_cap: Option<usize>,
) -> anyhow::Result<()> {
    let host = Host::start_with_store(
        HostOptions {
            data_dir: data_dir.to_owned(),
            http,
            adb_server,
            show_window: None,
        },
        lomi_mcp::host::store_options(store_cap),
    )
    .await?;
    let broker = host.broker();
    let url = host.url();
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
        "  Add the MCP endpoint to your agent's client (`lomi connect claude-code`, or e.g. `claude mcp add --transport http lomi URL`);"
    );
    println!(
        "  when it signs in, approve it with `lomi pairing list` and `lomi pairing approve ID --workspace W`,"
    );
    println!("  or create a token ahead with `lomi pairing create --name NAME --workspace W`.");
    println!("  Stop with Ctrl+C.");

    wait_for_signal().await;
    host.stop().await
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
