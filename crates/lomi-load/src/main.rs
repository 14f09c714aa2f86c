//! The load benchmark's client: `bench/load` runs it against a release `lomi serve`. Each
//! session opens an MCP session (Streamable HTTP, protocol 2025-11-25) with the pairing's
//! token, connects to its own workspace and then calls one tool until the deadline: a
//! `lomi_file_write` of its own file, a `lomi_workspace_update` rename or layout change (of two
//! terminal panels it opened first), a panel opened and closed (`lomi_terminal_create` of
//! `sh` printing a line then `sleep`, then `lomi_terminal_close`: two mutations), or a read (`lomi_panel_list`, the
//! client's own ceiling). Saturated, a session sends its next call as
//! soon as the last one settled; paced (`--interval-ms`), each session sends at its share of the
//! rate, its phase spread so the sessions together send evenly. Prints one JSON object: the
//! steady-state rate (calls settled per second after the warm-up) and every steady call's
//! latency in milliseconds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mutation {
    File,
    Rename,
    Layout,
    Panel,
    Read,
}

#[derive(Debug, Parser)]
struct Args {
    /// The MCP endpoint, such as http://127.0.0.1:PORT/mcp.
    #[arg(long)]
    url: String,
    /// A bearer token whose pairing is granted every workspace below.
    #[arg(long)]
    token: String,
    /// One session per workspace.
    #[arg(long = "workspace", required = true)]
    workspaces: Vec<String>,
    #[arg(long, value_enum)]
    mutation: Mutation,
    /// Seconds measured, after the warm-up.
    #[arg(long)]
    seconds: f64,
    /// Seconds at the start left out of the figures (sessions opening, files being created).
    #[arg(long, default_value_t = 1.0)]
    warm_up: f64,
    /// Paced: the time between one session's calls; 0 for saturated.
    #[arg(long, default_value_t = 0.0)]
    interval_ms: f64,
}

struct Session {
    http: reqwest::Client,
    url: String,
    token: String,
    id: Option<String>,
    next: u64,
}

impl Session {
    async fn rpc(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        let reply = self.post(&body).await?;
        let mut message = if reply.0.starts_with("text/event-stream") {
            reply
                .1
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|message| message.get("id").is_some())
                .with_context(|| format!("no reply in the stream to {method}"))?
        } else {
            serde_json::from_str(&reply.1).with_context(|| format!("{method}: {}", reply.1))?
        };
        if let Some(error) = message.get("error") {
            bail!("{method}: {error}");
        }
        Ok(message["result"].take())
    }

    async fn post(&mut self, body: &Value) -> anyhow::Result<(String, String)> {
        let mut request = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .bearer_auth(&self.token)
            .body(body.to_string());
        if let Some(id) = &self.id {
            request = request.header("Mcp-Session-Id", id);
        }
        let response = request.send().await?;
        if let Some(id) = response.headers().get("mcp-session-id") {
            self.id = Some(id.to_str()?.to_owned());
        }
        let status = response.status();
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("HTTP {status}: {text}");
        }
        Ok((kind, text))
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> anyhow::Result<Value> {
        let mut result = self
            .rpc("tools/call", json!({"name": tool, "arguments": arguments}))
            .await?;
        Ok(result["structuredContent"].take())
    }
}

/// The operation's result once it succeeded; an error naming what the session saw otherwise.
fn succeeded(reply: &Value, what: &str) -> anyhow::Result<Value> {
    let data = &reply["data"];
    if reply["status"] != "ok" || data["state"] != "succeeded" {
        bail!("{what}: {reply}");
    }
    Ok(data["result"].clone())
}

/// One session's settled calls: (when it settled, since the start; its latency).
type Settled = Vec<(Duration, Duration)>;

async fn session(
    mut session: Session,
    workspace: String,
    mutation: Mutation,
    start: Instant,
    end: Instant,
    interval: Duration,
    phase: Duration,
) -> anyhow::Result<Settled> {
    session
        .rpc(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "lomi-load", "version": "1"}}),
        )
        .await?;
    let notified = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    session.post(&notified).await?;
    let connected = session
        .call("lomi_connect", json!({"workspaceId": workspace}))
        .await?;
    let epoch = connected["data"]["retryEpoch"].clone();
    let mut revision = connected["data"]["domainRevision"].clone();
    let path = format!("load-{workspace}.txt");
    if let Mutation::File = mutation {
        let created = session
            .call(
                "lomi_file_create",
                json!({"workspaceId": workspace, "path": path, "text": "0\n",
                       "retryEpoch": epoch, "requestKey": "load-0"}),
            )
            .await?;
        revision = succeeded(&created, "lomi_file_create")?["diskRevision"].clone();
    }
    let mut panels = Vec::new();
    if let Mutation::Layout = mutation {
        for n in 0..2 {
            let created = open_panel(&mut session, &workspace, &revision, &epoch, n).await?;
            revision = created["domainRevision"].clone();
            panels.push(created["panelId"].clone());
        }
    }
    let mut settled = Settled::new();
    let mut next_at = Instant::now() + phase;
    let mut n = 0u64;
    while Instant::now() < end {
        n += 1;
        if !interval.is_zero() {
            next_at += interval;
            tokio::time::sleep_until(next_at.into()).await;
        }
        let key = format!("load-{n}");
        let started = Instant::now();
        match mutation {
            Mutation::Read => {
                let reply = session
                    .call("lomi_panel_list", json!({"workspaceId": workspace}))
                    .await?;
                if reply["status"] != "ok" {
                    bail!("lomi_panel_list: {reply}");
                }
            }
            Mutation::File => {
                let reply = session
                    .call(
                        "lomi_file_write",
                        json!({"workspaceId": workspace, "path": path,
                               "expectedDiskRevision": revision, "text": format!("{n}\n"),
                               "retryEpoch": epoch, "requestKey": key}),
                    )
                    .await?;
                revision = succeeded(&reply, "lomi_file_write")?["diskRevision"].clone();
            }
            Mutation::Layout => {
                let direction = if n.is_multiple_of(2) { "row" } else { "column" };
                let root = json!({"split": {"direction": direction, "children": [
                    {"tabs": {"panels": [panels[0]]}}, {"tabs": {"panels": [panels[1]]}},
                ]}});
                let reply = session
                    .call(
                        "lomi_workspace_update",
                        json!({"workspaceId": workspace, "expectedRevision": revision,
                               "change": {"layout": {"root": root}},
                               "retryEpoch": epoch, "requestKey": key}),
                    )
                    .await?;
                revision =
                    succeeded(&reply, "lomi_workspace_update")?["workspace"]["domainRevision"]
                        .clone();
            }
            Mutation::Panel => {
                let created = open_panel(&mut session, &workspace, &revision, &epoch, n).await?;
                let now = Instant::now();
                settled.push((now - start, now - started));
                let started = Instant::now();
                let reply = session
                    .call(
                        "lomi_terminal_close",
                        json!({"workspaceId": workspace, "panelId": created["panelId"],
                               "expectedRevision": created["domainRevision"],
                               "retryEpoch": epoch, "requestKey": format!("close-{n}")}),
                    )
                    .await?;
                let reply = settle(&mut session, reply).await?;
                revision = succeeded(&reply, "lomi_terminal_close")?["domainRevision"].clone();
                let now = Instant::now();
                settled.push((now - start, now - started));
                continue;
            }
            Mutation::Rename => {
                let reply = session
                    .call(
                        "lomi_workspace_update",
                        json!({"workspaceId": workspace, "expectedRevision": revision,
                               "change": {"rename": {"name": format!("load {n}")}},
                               "retryEpoch": epoch, "requestKey": key}),
                    )
                    .await?;
                revision =
                    succeeded(&reply, "lomi_workspace_update")?["workspace"]["domainRevision"]
                        .clone();
            }
        }
        let now = Instant::now();
        settled.push((now - start, now - started));
    }
    Ok(settled)
}

/// Opens a terminal panel running `sleep` (after one line: a terminal is confirmed by its
/// first output) and answers its result.
async fn open_panel(
    session: &mut Session,
    workspace: &str,
    revision: &Value,
    epoch: &Value,
    n: u64,
) -> anyhow::Result<Value> {
    let reply = session
        .call(
            "lomi_terminal_create",
            json!({"workspaceId": workspace, "cwdRelative": "", "title": format!("load {n}"),
                   "argv": ["sh", "-c", "echo ready; exec sleep 3600"], "expectedRevision": revision,
                   "retryEpoch": epoch, "requestKey": format!("open-{n}")}),
        )
        .await?;
    let settled = settle(session, reply).await?;
    succeeded(&settled, "lomi_terminal_create")
}

/// Follows an operation answered still running (a process starting can outlast the call's
/// wait) with `lomi_operation_get` until it settles.
async fn settle(session: &mut Session, mut reply: Value) -> anyhow::Result<Value> {
    let running = |reply: &Value| {
        matches!(
            reply["data"]["state"].as_str(),
            Some("queued" | "running" | "awaiting_user")
        )
    };
    let limit = Instant::now() + Duration::from_secs(60);
    while running(&reply) {
        if Instant::now() > limit {
            bail!("the operation did not settle within 60 s: {reply}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        let id = reply["data"]["operationId"].clone();
        reply = session
            .call("lomi_operation_get", json!({"operationId": id}))
            .await?;
    }
    Ok(reply)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // Two threads: the client should leave the machine's CPUs to the server it measures.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    // Plain HTTP to loopback; reqwest still wants a TLS provider chosen.
    if rustls::crypto::CryptoProvider::get_default().is_none()
        && let Err(_already) = rustls::crypto::ring::default_provider().install_default()
    {
        // Another thread chose one first: any provider does.
    }
    let http = reqwest::Client::builder()
        .http1_only()
        .pool_max_idle_per_host(args.workspaces.len() * 2)
        .timeout(Duration::from_secs(60))
        .build()?;
    let start = Instant::now();
    let warm_up = Duration::from_secs_f64(args.warm_up);
    let end = start + warm_up + Duration::from_secs_f64(args.seconds);
    let interval = Duration::from_secs_f64(args.interval_ms / 1000.0);
    let sessions = args.workspaces.len() as u32;
    let token = Arc::new(args.token);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, workspace) in args.workspaces.into_iter().enumerate() {
        let client = Session {
            http: http.clone(),
            url: args.url.clone(),
            token: token.to_string(),
            id: None,
            next: 0,
        };
        let phase = interval * i as u32 / sessions;
        tasks.spawn(session(
            client,
            workspace,
            args.mutation,
            start,
            end,
            interval,
            phase,
        ));
    }
    let mut steady = Vec::new();
    let mut last = warm_up;
    while let Some(done) = tasks.join_next().await {
        for (at, latency) in done?? {
            if at >= warm_up {
                last = last.max(at);
                steady.push(latency.as_secs_f64() * 1000.0);
            }
        }
    }
    let window = (last - warm_up).as_secs_f64();
    if steady.is_empty() || window <= 0.0 {
        bail!("no call settled after the warm-up");
    }
    println!(
        "{}",
        json!({"rate": steady.len() as f64 / window, "latenciesMs": steady})
    );
    Ok(())
}
