//! Streamable HTTP on loopback: `http://127.0.0.1:PORT/mcp`, with Host and Origin checks, a
//! body cap, and one handler per MCP session.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::Lomi;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::server::{Caller, LomiServer, mcp_tools};

/// Largest request body Lomi reads (bigger ones get 413).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long an MCP session may sit idle before Lomi ends it.
pub const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// A bound listener, ready to serve.
pub struct HttpEndpoint {
    listener: tokio::net::TcpListener,
    pub address: SocketAddr,
}

impl HttpEndpoint {
    /// Binds a loopback address; anything else is refused before a socket is opened.
    pub async fn bind(address: SocketAddr) -> anyhow::Result<HttpEndpoint> {
        if !address.ip().is_loopback() {
            anyhow::bail!(
                "{address} is not a loopback address; Lomi's MCP endpoint listens on 127.0.0.1 or ::1 only"
            );
        }
        let listener = tokio::net::TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        Ok(HttpEndpoint { listener, address })
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Serves until `shutdown` fires.
    pub async fn serve(self, lomi: Lomi, shutdown: CancellationToken) -> anyhow::Result<()> {
        use axum::serve::ListenerExt;
        let router = router(lomi, self.address, shutdown.clone());
        // Replies go out as several small writes (SSE events); without TCP_NODELAY, Nagle's
        // algorithm and the peer's delayed ACK add ~40 ms to every call.
        let listener = self.listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::warn!("TCP_NODELAY: {error}");
            }
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await?;
        Ok(())
    }
}

/// The app, without a socket, so tests can drive it directly.
pub fn router(lomi: Lomi, address: SocketAddr, shutdown: CancellationToken) -> axum::Router {
    let port = address.port();
    let hosts = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    // Browsers send Origin; only Lomi's own pages on this endpoint may call it. `null`
    // (sandboxed frames, file: pages) is refused.
    let origins = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(shutdown.child_token());
    let tools = Arc::new(mcp_tools());
    // An idle session ends after half an hour; its session-bound pairing ends with it.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let service = StreamableHttpService::new(
        move || {
            Ok(LomiServer::new(
                lomi.clone(),
                tools.clone(),
                Caller::HttpSession,
            ))
        },
        Arc::new(sessions),
        config,
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(session_end_answers_no_content))
}

/// A session ended by DELETE is answered 204 No Content: the MCP library answers 202, which
/// the MCP Python SDK takes for a failure ("Session termination failed: 202") and warns
/// about at the end of every session.
async fn session_end_answers_no_content(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let ending = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if ending && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}
