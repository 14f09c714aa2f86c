//! The local socket in the data dir (`lomi.sock`, user-only): the person's control requests
//! from the `lomi` command, and MCP streams from the `lomi mcp` stdio bridge.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::Lomi;
use rmcp::ServiceExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use crate::control::{self, ControlRequest};
use crate::server::{Caller, LomiServer, mcp_tools};

/// The socket's file name in the data dir.
pub const SOCKET_FILE: &str = "lomi.sock";

/// Longest first line a client may send.
const MAX_HELLO_BYTES: usize = 64 * 1024;

/// The first line on a connection: what the client wants.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Hello {
    /// One request of the person's; one reply line.
    Control(ControlRequest),
    /// An MCP stream (newline-delimited JSON-RPC) for the pairing this secret proves.
    Mcp(McpHello),
    /// The person's interactive view of a terminal panel: raw output out, raw keystrokes in.
    /// Typing is a takeover that ends every agent's lease on the panel.
    Attach(AttachHello),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachHello {
    pub panel_id: lomi_protocol::PanelId,
}

/// How much earlier output an attach replays so the person sees the current screen.
const ATTACH_REPLAY_BYTES: u64 = 256 * 1024;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpHello {
    pub client_name: String,
    /// The bridge's secret from the OS keyring; Lomi keeps only its SHA-256.
    pub secret: String,
}

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET_FILE)
}

/// Connects to the Lomi running for `data_dir` and sends the connection's first line, what
/// the client wants (a control request, an MCP stream, a terminal attach). The error says how
/// to start a Lomi when none answers.
pub async fn connect(data_dir: &Path, hello: &Hello) -> anyhow::Result<UnixStream> {
    let mut stream = UnixStream::connect(socket_path(data_dir))
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "no Lomi is running for {} ({e}); start it with `lomi serve --headless`",
                data_dir.display()
            )
        })?;
    let hello = serde_json::to_string(hello)?;
    stream.write_all(format!("{hello}\n").as_bytes()).await?;
    Ok(stream)
}

/// Binds the socket with user-only permissions. The caller owns the data dir's store, so a
/// socket file left by an earlier crash is stale and may be replaced.
pub fn bind(data_dir: &Path) -> anyhow::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let path = socket_path(data_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::anyhow!("cannot replace {}: {e}", path.display())),
    }
    let listener = UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Accepts connections until `shutdown` fires.
pub async fn serve(
    listener: UnixListener,
    lomi: Lomi,
    front: control::Front,
    shutdown: CancellationToken,
) {
    let tools = Arc::new(mcp_tools());
    // The user Lomi runs as: the socket file's owner, since Lomi made it.
    let owner = listener
        .local_addr()
        .ok()
        .and_then(|address| address.as_pathname().map(Path::to_path_buf))
        .and_then(|path| std::fs::metadata(path).ok())
        .map(|metadata| std::os::unix::fs::MetadataExt::uid(&metadata));
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!("local socket: {error}");
                    continue;
                }
            },
        };
        let lomi = lomi.clone();
        let tools = tools.clone();
        let front = front.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            if let Err(error) = connection(stream, owner, lomi, tools, front, shutdown).await {
                tracing::debug!("local connection ended: {error}");
            }
        });
    }
}

async fn connection(
    stream: UnixStream,
    owner: Option<u32>,
    lomi: Lomi,
    tools: Arc<Vec<rmcp::model::Tool>>,
    front: control::Front,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    // Only the user Lomi runs as is served, whatever the socket's mode says (the socket and
    // its data dir are user-only; a mode changed by hand, or root, must not open it to others).
    let peer = stream.peer_cred().ok();
    if owner.is_none() || peer.map(|cred| cred.uid()) != owner {
        tracing::warn!(
            "local socket: refused a connection from uid {:?} (Lomi runs as {owner:?})",
            peer.map(|cred| cred.uid())
        );
        let reply = lomi_protocol::Reply::<()>::error(lomi_protocol::ToolError::new(
            lomi_protocol::ErrorCode::PairingDenied,
            "refused: this socket serves only the user Lomi runs as; another user's program \
             connects over Lomi's HTTP endpoint and is paired by the person",
        ));
        let (_, mut write) = stream.into_split();
        write
            .write_all(format!("{}\n", reply.to_value()).as_bytes())
            .await?;
        return Ok(());
    }
    // The person's requests must come from the person: a process inside a terminal Lomi runs
    // for an agent (same user, same socket) is refused them.
    let from_agent_terminal = peer
        .and_then(|cred| cred.pid())
        .and_then(session_of)
        .is_some_and(|session| lomi.terminals.session_ids().contains(&session));
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    let read_bytes = (&mut reader)
        .take(MAX_HELLO_BYTES as u64)
        .read_line(&mut line)
        .await?;
    if read_bytes == 0 {
        return Ok(());
    }
    let hello: Hello = match serde_json::from_str(line.trim_end()) {
        Ok(hello) => hello,
        Err(error) => {
            let reply = lomi_protocol::Reply::<()>::error(lomi_protocol::ToolError::invalid(
                format!("not a request Lomi understands: {error}"),
            ));
            write
                .write_all(format!("{}\n", reply.to_value()).as_bytes())
                .await?;
            return Ok(());
        }
    };
    if from_agent_terminal && !matches!(hello, Hello::Mcp(_)) {
        let reply = lomi_protocol::Reply::<()>::error(lomi_protocol::ToolError::new(
            lomi_protocol::ErrorCode::PairingDenied,
            "refused: this comes from a terminal Lomi runs for an agent; the person's commands \
             (approve, decide, grant, attach) only work from the person's own terminal",
        ));
        write
            .write_all(format!("{}\n", reply.to_value()).as_bytes())
            .await?;
        return Ok(());
    }
    match hello {
        Hello::Control(request) => {
            let reply = control::answer(&lomi, &front, request).await;
            write.write_all(format!("{reply}\n").as_bytes()).await?;
            write.shutdown().await?;
        }
        Hello::Attach(hello) => attach(reader, write, lomi, hello.panel_id, shutdown).await?,
        Hello::Mcp(hello) => {
            let pairing = match lomi.broker.pairing_by_secret(&hello.secret) {
                Some(id) => id,
                None => match lomi
                    .broker
                    .pairing_begin(&hello.client_name, Some(&hello.secret))
                {
                    Ok(id) => id,
                    Err(refused) => {
                        tracing::warn!("a bridge was refused: {}", refused.message);
                        return Ok(());
                    }
                },
            };
            let broker = lomi.broker.clone();
            let server = LomiServer::new(lomi, tools, Caller::Known(pairing.clone()));
            let running = server.serve((reader, write)).await;
            if let Ok(running) = running {
                tokio::select! {
                    _ = running.waiting() => {}
                    () = shutdown.cancelled() => {}
                }
            }
            // A pairing approved for this session only ends with its stream.
            broker.pairing_session_ended(&pairing);
        }
    }
    Ok(())
}

/// Streams a terminal to the person and their keystrokes to it, until either side ends.
async fn attach(
    mut reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    mut write: tokio::net::unix::OwnedWriteHalf,
    lomi: Lomi,
    panel: lomi_protocol::PanelId,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Some(runtime) = lomi.terminals.runtime_for_person(&panel) else {
        let reply = lomi_protocol::Reply::<()>::error(lomi_protocol::ToolError::not_found(
            format!("no terminal panel {panel} is running"),
        ));
        write
            .write_all(format!("{}\n", reply.to_value()).as_bytes())
            .await?;
        return Ok(());
    };
    let ready = lomi_protocol::Reply::ok(lomi_protocol::control::TerminalAttached {
        panel_id: panel.clone(),
        terminal_session_id: runtime.session_id.clone(),
        generation: runtime.generation.clone(),
    });
    write
        .write_all(format!("{}\n", ready.to_value()).as_bytes())
        .await?;
    let terminal = runtime.terminal;
    let mut progress = terminal.progress();
    let mut cursor = terminal.output_cursor().saturating_sub(ATTACH_REPLAY_BYTES);
    let mut keys = [0u8; 4096];
    loop {
        // Send everything new first, so the person sees what the agent saw.
        loop {
            let output = terminal.output_since(cursor, 64 * 1024);
            if !output.bytes.is_empty() {
                write.write_all(&output.bytes).await?;
            }
            cursor = output.end;
            if !output.more {
                break;
            }
        }
        if terminal.exit_status().is_some() {
            return Ok(());
        }
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            changed = progress.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
            read = tokio::io::AsyncReadExt::read(&mut reader, &mut keys) => {
                let n = read?;
                if n == 0 {
                    return Ok(());
                }
                // Every keystroke is the person's: any lease an agent holds (or took again
                // meanwhile) ends.
                lomi.broker.takeover(&panel);
                terminal.write(&keys[..n]).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            }
        }
    }
}

/// The session id of a process (field 6 of /proc/PID/stat, read after the command name, which
/// may itself contain spaces and parentheses).
fn session_of(pid: i32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(3)?.parse().ok()
}

/// Sends one control request to the running broker and returns its envelope.
pub async fn request(
    data_dir: &Path,
    request: &ControlRequest,
) -> anyhow::Result<serde_json::Value> {
    let stream = connect(data_dir, &Hello::Control(request.clone())).await?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    Ok(serde_json::from_str(line.trim_end())?)
}
