//! Streamable HTTP on loopback: `http://127.0.0.1:PORT/mcp`, with Host and Origin checks, a
//! body cap, and one handler per MCP session.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::Lomi;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::server::{BearerGuard, Caller, LomiServer, mcp_tools};

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

    /// Serves until `shutdown` fires: at most [`HttpLimits::max_connections`] connections at
    /// once (one more is answered 503 and closed), each closed when a request's header does
    /// not arrive within [`HttpLimits::header_timeout`] (an idle keep-alive connection too),
    /// and a request whose body does not arrive within [`HttpLimits::body_timeout`] is
    /// answered 408. A slow or hoarding local program cannot use up Lomi's file descriptors,
    /// which its store needs too.
    pub async fn serve(self, lomi: Lomi, shutdown: CancellationToken) -> anyhow::Result<()> {
        let limits = HttpLimits::from_env();
        let router = router(lomi, self.address, shutdown.clone(), limits);
        let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
        let connections = tokio_util::task::TaskTracker::new();
        loop {
            let (stream, source) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors (EMFILE) and the like pass; the listener
                        // waits a moment instead of spinning.
                        tracing::warn!("cannot accept a connection: {error}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = shutdown.cancelled() => break,
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                refuse_over_cap(&stream, limits.max_connections);
                continue;
            };
            // Replies go out as several small writes (SSE events); without TCP_NODELAY,
            // Nagle's algorithm and the peer's delayed ACK add ~40 ms to every call.
            if let Err(error) = stream.set_nodelay(true) {
                tracing::warn!("TCP_NODELAY: {error}");
            }
            let service = router.clone().layer(axum::Extension(Source(source)));
            connections.spawn(serve_connection(
                stream,
                service,
                limits,
                shutdown.clone(),
                slot,
            ));
        }
        // Open streams end with the shutdown token; a client that does not go is not waited
        // for long.
        connections.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("{} connections still open at shutdown", connections.len());
        }
        Ok(())
    }
}

/// How long a stopping Lomi waits for its open connections to end.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The peer address of the connection a request came on.
#[derive(Clone, Copy, Debug)]
pub struct Source(pub SocketAddr);

/// What one client connection may hold.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    /// Connections open at once; the next one is answered 503 and closed.
    pub max_connections: usize,
    /// How long a request's header may take to arrive, counted from when the connection
    /// waits for it (so an idle keep-alive connection is closed after this long).
    pub header_timeout: std::time::Duration,
    /// How long a request's body may take to arrive once its header has.
    pub body_timeout: std::time::Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 512,
            header_timeout: std::time::Duration::from_secs(30),
            body_timeout: std::time::Duration::from_secs(30),
        }
    }
}

impl HttpLimits {
    /// The defaults, with `LOMI_HTTP_MAX_CONNECTIONS`, `LOMI_HTTP_HEADER_TIMEOUT_MS` and
    /// `LOMI_HTTP_BODY_TIMEOUT_MS` (for tests, which cannot wait half a minute) over them.
    pub fn from_env() -> Self {
        fn var(name: &str) -> Option<u64> {
            std::env::var(name).ok()?.parse().ok()
        }
        let mut limits = HttpLimits::default();
        if let Some(n) = var("LOMI_HTTP_MAX_CONNECTIONS") {
            limits.max_connections = n.max(1) as usize;
        }
        if let Some(ms) = var("LOMI_HTTP_HEADER_TIMEOUT_MS") {
            limits.header_timeout = std::time::Duration::from_millis(ms.max(1));
        }
        if let Some(ms) = var("LOMI_HTTP_BODY_TIMEOUT_MS") {
            limits.body_timeout = std::time::Duration::from_millis(ms.max(1));
        }
        limits
    }
}

/// Answers a connection over the cap with 503 and closes it, without waiting on the peer: the
/// few bytes fit any socket buffer, and a peer that does not read loses only the message.
fn refuse_over_cap(stream: &tokio::net::TcpStream, cap: usize) {
    let message = format!(
        "Lomi already serves {cap} connections, its limit; close idle ones or retry in a moment\n"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{message}",
        message.len()
    );
    if let Err(error) = stream.try_write(answer.as_bytes()) {
        tracing::debug!("the refusal could not be written: {error}");
    }
    tracing::warn!("a connection over the cap of {cap} was refused");
}

/// Serves one connection with HTTP/1.1 until either side ends it; `slot` is its place under
/// the connection cap, given back when it closes.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    service: axum::Router,
    limits: HttpLimits,
    shutdown: CancellationToken,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let service = hyper_util::service::TowerToHyperService::new(service);
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        served = connection.as_mut() => {
            if let Err(error) = served {
                tracing::debug!("connection ended: {error}");
            }
        }
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            if let Err(error) = connection.await {
                tracing::debug!("connection ended at shutdown: {error}");
            }
        }
    }
    drop(slot);
}

/// A request whose body does not arrive within the limit is answered 408 (and one over
/// [`MAX_BODY_BYTES`] 413) before the MCP layer sees it.
async fn body_deadline(
    axum::extract::State(limits): axum::extract::State<HttpLimits>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, MAX_BODY_BYTES);
    match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(bytes)) => {
            let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
            next.run(request).await
        }
        Ok(Err(error)) if is_over_length(&error) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over Lomi's limit of {MAX_BODY_BYTES} bytes"),
        )
            .into_response(),
        Ok(Err(error)) => (
            StatusCode::BAD_REQUEST,
            format!("the request body could not be read: {error}"),
        )
            .into_response(),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} ms; send it whole, then retry",
                limits.body_timeout.as_millis()
            ),
        )
            .into_response(),
    }
}

fn is_over_length(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = source {
        if error.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// The app, without a socket, so tests can drive it directly.
pub fn router(
    lomi: Lomi,
    address: SocketAddr,
    shutdown: CancellationToken,
    limits: HttpLimits,
) -> axum::Router {
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
    let oauth = crate::oauth::OAuthState {
        lomi: lomi.clone(),
        port,
        documents: crate::cimd::Fetcher::from_env(),
    };
    let tools = Arc::new(mcp_tools());
    let guard = Arc::new(BearerGuard::default());
    // An idle session ends after half an hour; its session-bound pairing ends with it.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let service = StreamableHttpService::new(
        move || {
            Ok(LomiServer::new(
                lomi.clone(),
                tools.clone(),
                Caller::HttpSession(guard.clone()),
            ))
        },
        Arc::new(sessions),
        config,
    );
    // Host and Origin are checked before anything else (a foreign one is 403, not a sign-in
    // challenge), then a request without a token is challenged.
    let mcp = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(
            oauth.clone(),
            crate::oauth::challenge,
        ))
        .layer(axum::middleware::from_fn_with_state(
            port,
            crate::oauth::local_only,
        ));
    mcp.merge(crate::oauth::routes(oauth))
        .layer(axum::middleware::from_fn_with_state(limits, body_deadline))
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
