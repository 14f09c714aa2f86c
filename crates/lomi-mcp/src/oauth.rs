//! The MCP authorization flow over HTTP, Lomi being its own authorization server on the same
//! loopback origin: protected-resource and authorization-server metadata, client ID metadata
//! documents (cimd.rs) and dynamic client registration, `/authorize` (a page that waits while the person approves in Lomi), `/token`
//! (PKCE S256, refresh rotation) and `/revoke`. The rules live in `lomi_broker::oauth`; this
//! module speaks HTTP, forms and JSON, and checks Host and Origin on every endpoint.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lomi_broker::oauth::{AuthorizeOutcome, AuthorizeRequest, OAuthError, redirect_registered};
use serde_json::json;

use crate::Lomi;

/// What every OAuth endpoint needs: Lomi, the port it serves on, and the fetcher of client ID
/// metadata documents.
#[derive(Clone)]
pub struct OAuthState {
    pub lomi: Lomi,
    pub port: u16,
    pub documents: crate::cimd::Fetcher,
}

/// The OAuth routes, each behind the same Host and Origin rules as `/mcp`.
pub fn routes(state: OAuthState) -> axum::Router {
    use axum::routing::{get, post};
    axum::Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/authorize/status", get(authorize_status))
        .route("/authorize/continue", get(authorize_continue))
        .route("/token", post(token))
        .route("/revoke", post(revoke))
        .layer(axum::middleware::from_fn_with_state(state.port, local_only))
        .with_state(state)
}

/// The host a request named, if it is one of this endpoint's loopback names.
fn our_host(headers: &HeaderMap, port: u16) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let ours = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    ours.into_iter()
        .find(|ours| ours.eq_ignore_ascii_case(host))
}

/// Host must name this endpoint; a present Origin must be this endpoint's own (a web page
/// elsewhere in the person's browser cannot call it).
pub(crate) async fn local_only(
    State(port): State<u16>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let Some(host) = our_host(request.headers(), port) else {
        return (
            StatusCode::FORBIDDEN,
            "the Host header must name this Lomi endpoint (127.0.0.1, localhost or [::1] with its port)",
        )
            .into_response();
    };
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| origin.eq_ignore_ascii_case(&format!("http://{host}")));
        if !allowed {
            return (
                StatusCode::FORBIDDEN,
                "requests from other origins are refused",
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// `http://HOST:PORT`: the issuer, as the client addressed Lomi.
fn issuer(headers: &HeaderMap, port: u16) -> String {
    let host = our_host(headers, port).unwrap_or_else(|| format!("127.0.0.1:{port}"));
    format!("http://{host}")
}

/// The MCP endpoint as a resource (RFC 8707): `http://HOST:PORT/mcp`.
fn resource(headers: &HeaderMap, port: u16) -> String {
    format!("{}/mcp", issuer(headers, port))
}

/// Whether `asked` names this endpoint's `/mcp` under any of its loopback names.
fn is_our_resource(asked: &str, port: u16) -> bool {
    let asked = asked.trim_end_matches('/');
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|host| asked.eq_ignore_ascii_case(&format!("http://{host}:{port}/mcp")))
}

async fn resource_metadata(State(state): State<OAuthState>, headers: HeaderMap) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "resource": resource(&headers, state.port),
            "authorization_servers": [issuer(&headers, state.port)],
            "bearer_methods_supported": ["header"],
            "resource_name": "Lomi",
            "scopes_supported": scopes(),
        }),
    )
}

async fn server_metadata(State(state): State<OAuthState>, headers: HeaderMap) -> Response {
    let issuer = issuer(&headers, state.port);
    json_response(
        StatusCode::OK,
        json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "revocation_endpoint": format!("{issuer}/revoke"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": scopes(),
            "client_id_metadata_document_supported": true,
        }),
    )
}

/// One scope per tool family (`lomi:browser` …): a client that asks for some is offered
/// those at approval; asking for none (or all) offers every family.
fn scopes() -> Vec<String> {
    lomi_protocol::Family::ALL
        .iter()
        .map(|f| f.scope())
        .collect()
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn oauth_error(status: StatusCode, error: &OAuthError) -> Response {
    json_response(
        status,
        json!({"error": error.error, "error_description": error.description}),
    )
}

/// Dynamic client registration (RFC 7591): public clients with loopback or https redirects.
async fn register(State(state): State<OAuthState>, body: Bytes) -> Response {
    let Ok(metadata) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::new("invalid_client_metadata", "the body must be a JSON object"),
        );
    };
    let redirect_uris: Vec<String> = match metadata.get("redirect_uris") {
        Some(serde_json::Value::Array(uris)) => uris
            .iter()
            .filter_map(|u| u.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if let Some(method) = metadata
        .get("token_endpoint_auth_method")
        .and_then(|m| m.as_str())
        && method != "none"
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::new(
                "invalid_client_metadata",
                format!(
                    "token_endpoint_auth_method {method:?} is not offered: Lomi registers public clients (\"none\") that prove themselves with PKCE"
                ),
            ),
        );
    }
    let name = metadata
        .get("client_name")
        .and_then(|n| n.as_str())
        .unwrap_or("");
    match state.lomi.broker.oauth_register(name, &redirect_uris) {
        Ok(client) => json_response(
            StatusCode::CREATED,
            json!({
                "client_id": client.client_id,
                "client_id_issued_at": client.created_at.millis() / 1000,
                "client_name": client.client_name,
                "redirect_uris": client.redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }),
        ),
        Err(error) => oauth_error(StatusCode::BAD_REQUEST, &error),
    }
}

/// `application/x-www-form-urlencoded` (a body or a query) into one value per name; a name
/// given twice is an error (RFC 6749 §3.1).
fn form(bytes: &[u8]) -> Result<HashMap<String, String>, OAuthError> {
    let mut fields = HashMap::new();
    for (name, value) in url::form_urlencoded::parse(bytes) {
        if fields
            .insert(name.clone().into_owned(), value.into_owned())
            .is_some()
        {
            return Err(OAuthError::new(
                "invalid_request",
                format!("{name} is given more than once"),
            ));
        }
    }
    Ok(fields)
}

/// A page a person reads in their browser, with `body` (already escaped) inside.
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <style>body{{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em;color:#1d2330}}\
         code{{background:#eef3fb;padding:2px 6px;border-radius:4px}}.code{{font-size:28px;letter-spacing:4px}}\
         .muted{{color:#667085}}</style></head><body><h1>{title}</h1>{body}</body></html>",
        title = escape(title)
    );
    let mut response = (status, axum::response::Html(html)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Sends the browser back to the client with `params` (and the issuer, RFC 9207).
fn back_to_client(redirect_uri: &str, params: &[(&str, &str)], issuer: &str) -> Response {
    let Ok(mut url) = url::Url::parse(redirect_uri) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Lomi cannot continue",
            "<p>The client's redirect address is not a URL.</p>",
        );
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in params {
            query.append_pair(name, value);
        }
        query.append_pair("iss", issuer);
    }
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(location) = HeaderValue::from_str(url.as_str()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `/authorize`: checks the request, starts a pending pairing and shows the page that waits
/// for the person. Errors before the client and its redirect URI are known are shown here;
/// later ones go back to the client (RFC 6749 §4.1.2.1).
async fn authorize(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let issuer = issuer(&headers, state.port);
    let fields = match form(uri.query().unwrap_or("").as_bytes()) {
        Ok(fields) => fields,
        Err(error) => {
            return page(
                StatusCode::BAD_REQUEST,
                "Lomi cannot continue",
                &format!("<p>{}</p>", escape(&error.description)),
            );
        }
    };
    let get = |name: &str| fields.get(name).map(String::as_str);
    let client = match get("client_id") {
        // A client ID metadata document: fetched and checked now, the client kept as it says.
        Some(id) if crate::cimd::is_document_url(id) => {
            let known = match state.documents.fetch(id).await {
                Ok(document) => state.lomi.broker.oauth_client_from_document(
                    &document.client_id,
                    &document.client_name,
                    &document.redirect_uris,
                ),
                Err(error) => Err(error),
            };
            match known {
                Ok(client) => Some(client),
                Err(error) => {
                    tracing::info!("client metadata document refused: {}", error.description);
                    return page(
                        StatusCode::BAD_REQUEST,
                        "Lomi cannot continue",
                        &format!(
                            "<p id=\"refusal\">{}</p><p>Nothing was sent to the client. Tell its maker, or start again from the client.</p>",
                            escape(&error.description)
                        ),
                    );
                }
            }
        }
        Some(id) => state.lomi.broker.oauth_client(id),
        None => None,
    };
    let Some(client) = client else {
        return page(
            StatusCode::BAD_REQUEST,
            "Lomi cannot continue",
            "<p>The client that sent you here is not registered with this Lomi. Start again from the client.</p>",
        );
    };
    let Some(redirect_uri) = get("redirect_uri").filter(|u| redirect_registered(&client, u)) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Lomi cannot continue",
            "<p>The redirect address is not one this client registered, so Lomi does not send you there.</p>",
        );
    };
    let client_state = get("state");
    let fail = |error: &str, description: &str| {
        let mut params = vec![("error", error), ("error_description", description)];
        if let Some(s) = client_state {
            params.push(("state", s));
        }
        back_to_client(redirect_uri, &params, &issuer)
    };
    if get("response_type") != Some("code") {
        return fail(
            "unsupported_response_type",
            "Lomi answers response_type=code only",
        );
    }
    let Some(challenge) = get("code_challenge").filter(|c| (43..=128).contains(&c.len())) else {
        return fail(
            "invalid_request",
            "code_challenge (PKCE, 43 to 128 characters) is required",
        );
    };
    if get("code_challenge_method") != Some("S256") {
        return fail("invalid_request", "code_challenge_method must be S256");
    }
    let resource = match get("resource") {
        Some(asked) if !is_our_resource(asked, state.port) => {
            return fail(
                "invalid_target",
                "resource must be this Lomi's MCP endpoint",
            );
        }
        Some(asked) => asked.to_owned(),
        None => resource(&headers, state.port),
    };
    // Scopes name tool families; other scopes (offline_access, …) ask for nothing more.
    let families: std::collections::BTreeSet<lomi_protocol::Family> = get("scope")
        .unwrap_or("")
        .split_ascii_whitespace()
        .filter_map(lomi_protocol::Family::from_scope)
        .collect();
    let started = state.lomi.broker.oauth_authorize(AuthorizeRequest {
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.to_owned(),
        code_challenge: challenge.to_owned(),
        state: client_state.map(str::to_owned),
        resource,
        families: (!families.is_empty()).then_some(families),
    });
    let started = match started {
        Ok(started) => started,
        Err(error) => return fail(error.error, &error.description),
    };
    let request = escape(&started.request_id);
    let redirect_host = url::Url::parse(redirect_uri)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let source = if client.metadata_document {
        format!(
            "its metadata document at <code id=\"metadata-source\">{}</code>",
            escape(&client.client_id)
        )
    } else {
        "<span id=\"metadata-source\">its own registration with this Lomi (not checked)</span>"
            .to_owned()
    };
    let body = format!(
        "<p><strong id=\"client\">{client}</strong> asks to work in your Lomi.</p>\
         <p>It sends you back to <strong id=\"redirect-host\">{redirect_host}</strong>; its name comes from {source}.</p>\
         <p>Verification code:<br><code class=\"code\" id=\"verification-code\">{code}</code></p>\
         <p>Approve it in Lomi's window, choosing the workspaces it may use, or on the command line:<br>\
         <code>lomi pairing approve {pairing} --workspace WORKSPACE_ID</code></p>\
         <p class=\"muted\" id=\"waiting\" data-request=\"{request}\">This page goes on by itself once you decide.</p>\
         <noscript><meta http-equiv=\"refresh\" content=\"3;url=/authorize/continue?request={request}\"></noscript>\
         <script>(function(){{var r=\"{request}\";function poll(){{fetch(\"/authorize/status?request=\"+r)\
         .then(function(a){{return a.json()}}).then(function(s){{if(s.state===\"pending\"){{setTimeout(poll,1000)}}\
         else{{location.href=\"/authorize/continue?request=\"+r}}}}).catch(function(){{setTimeout(poll,2000)}})}}poll()}})();</script>",
        client = escape(&started.client_name),
        redirect_host = escape(&redirect_host),
        code = escape(&started.verification_code),
        pairing = escape(started.pairing_id.as_str()),
    );
    page(StatusCode::OK, "Approve in Lomi", &body)
}

fn request_id(uri: &axum::http::Uri) -> String {
    form(uri.query().unwrap_or("").as_bytes())
        .ok()
        .and_then(|mut f| f.remove("request"))
        .unwrap_or_default()
}

/// Where an authorization stands, for the waiting page's script.
async fn authorize_status(State(state): State<OAuthState>, uri: axum::http::Uri) -> Response {
    let outcome = state.lomi.broker.oauth_authorize_outcome(&request_id(&uri));
    let name = match outcome {
        AuthorizeOutcome::Pending => "pending",
        AuthorizeOutcome::Approved { .. } => "approved",
        AuthorizeOutcome::Denied { .. } => "denied",
        AuthorizeOutcome::Expired => "expired",
    };
    json_response(StatusCode::OK, json!({"state": name}))
}

/// Sends the browser back to the client with the code (approved) or `access_denied`; a page
/// while the person has not decided, or when the request expired.
async fn authorize_continue(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let issuer = issuer(&headers, state.port);
    let request = request_id(&uri);
    match state.lomi.broker.oauth_authorize_outcome(&request) {
        AuthorizeOutcome::Approved {
            redirect_uri,
            code,
            state: client_state,
        } => {
            let mut params = vec![("code", code.as_str())];
            if let Some(s) = client_state.as_deref() {
                params.push(("state", s));
            }
            back_to_client(&redirect_uri, &params, &issuer)
        }
        AuthorizeOutcome::Denied {
            redirect_uri,
            state: client_state,
        } => {
            let mut params = vec![
                ("error", "access_denied"),
                ("error_description", "the person denied this client in Lomi"),
            ];
            if let Some(s) = client_state.as_deref() {
                params.push(("state", s));
            }
            back_to_client(&redirect_uri, &params, &issuer)
        }
        AuthorizeOutcome::Pending => {
            let request = escape(&request);
            page(
                StatusCode::OK,
                "Approve in Lomi",
                &format!(
                    "<p>Still waiting for your decision in Lomi.</p>\
                     <meta http-equiv=\"refresh\" content=\"3;url=/authorize/continue?request={request}\">"
                ),
            )
        }
        AuthorizeOutcome::Expired => page(
            StatusCode::BAD_REQUEST,
            "This request expired",
            "<p>Lomi no longer waits for this request (it was not decided within 10 minutes, or Lomi restarted). Start again from the client.</p>",
        ),
    }
}

/// `/token`: an authorization code with its PKCE verifier, or a refresh token.
async fn token(State(state): State<OAuthState>, body: Bytes) -> Response {
    let fields = match form(&body) {
        Ok(fields) => fields,
        Err(error) => return oauth_error(StatusCode::BAD_REQUEST, &error),
    };
    let get = |name: &str| fields.get(name).map(String::as_str);
    let missing = |name: &str| {
        oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::new("invalid_request", format!("{name} is required")),
        )
    };
    let Some(client_id) = get("client_id") else {
        return missing("client_id");
    };
    if state.lomi.broker.oauth_client(client_id).is_none() {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            &OAuthError::new("invalid_client", "unknown client_id; register first"),
        );
    }
    if let Some(resource) = get("resource")
        && !is_our_resource(resource, state.port)
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::new(
                "invalid_target",
                "resource must be this Lomi's MCP endpoint",
            ),
        );
    }
    let issued = match get("grant_type") {
        Some("authorization_code") => {
            let (Some(code), Some(redirect_uri), Some(verifier)) =
                (get("code"), get("redirect_uri"), get("code_verifier"))
            else {
                return missing("code, redirect_uri and code_verifier");
            };
            state.lomi.broker.oauth_exchange_code(
                client_id,
                code,
                redirect_uri,
                verifier,
                get("resource"),
            )
        }
        Some("refresh_token") => {
            let Some(refresh) = get("refresh_token") else {
                return missing("refresh_token");
            };
            state.lomi.broker.oauth_refresh(client_id, refresh)
        }
        Some(other) => Err(OAuthError::new(
            "unsupported_grant_type",
            format!("grant_type {other:?} is not offered; use authorization_code or refresh_token"),
        )),
        None => return missing("grant_type"),
    };
    match issued {
        Ok(tokens) => json_response(StatusCode::OK, json!(tokens)),
        Err(error) => oauth_error(StatusCode::BAD_REQUEST, &error),
    }
}

/// `/revoke` (RFC 7009): always 200 for a well-formed request.
async fn revoke(State(state): State<OAuthState>, body: Bytes) -> Response {
    let fields = match form(&body) {
        Ok(fields) => fields,
        Err(error) => return oauth_error(StatusCode::BAD_REQUEST, &error),
    };
    let Some(token) = fields.get("token") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::new("invalid_request", "token is required"),
        );
    };
    state.lomi.broker.oauth_revoke_token(token);
    json_response(StatusCode::OK, json!({}))
}

/// In front of `/mcp`: a request without a token is answered 401 pointing at the
/// protected-resource metadata, at every revision, which is what starts a client's sign-in
/// (unless the person lets handshake-era clients pair for their session), and an OAuth access
/// token Lomi no longer knows (expired, or Lomi restarted) is answered 401 `invalid_token` so
/// the client refreshes it. A bearer token the person created is checked by the MCP handler.
pub async fn challenge(
    State(state): State<OAuthState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let headers = request.headers();
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let metadata = format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        issuer(headers, state.port)
    );
    match token {
        Some(token)
            if token.starts_with("lomi_at_")
                && state.lomi.broker.pairing_by_secret(token).is_none() =>
        {
            return unauthorized(
                &format!(
                    "Bearer error=\"invalid_token\", error_description=\"the access token expired or Lomi no longer knows it\", resource_metadata=\"{metadata}\""
                ),
                "the access token expired or Lomi no longer knows it; refresh it",
            );
        }
        Some(_) => {}
        // Every revision: a client signs in when it is challenged. Only where the person lets
        // clients pair for their session (`network.sessionPairing`) does a handshake-era one
        // without a token go on, to a pending pairing bound to its MCP session.
        None if is_stateless(headers) || !state.lomi.broker.session_pairing_allowed() => {
            return unauthorized(
                &format!("Bearer resource_metadata=\"{metadata}\""),
                "Lomi's MCP endpoint needs a token: sign in with the client's MCP authorization (Lomi opens a page to approve it), or use a token from `lomi pairing create`, or the stdio bridge `lomi mcp`",
            );
        }
        None => {}
    }
    if !is_stateless(request.headers()) {
        return next.run(request).await;
    }
    // The body was read whole by the body limit in front of this layer.
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, crate::http::MAX_BODY_BYTES).await else {
        return (
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        )
            .into_response();
    };
    if let Some(mismatch) = header_mismatch(&parts.headers, &bytes) {
        return mismatch;
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The stateless revision's standard headers (SEP-2243) say what the body does: `Mcp-Method`
/// is the request's method and, for a call naming a tool, prompt or resource, `Mcp-Name` is that
/// name (values compared exactly, around whitespace trimmed). A request whose headers say
/// otherwise is refused 400 with HeaderMismatch (-32020) before anything runs, so a proxy that
/// routes or filters by the headers sees what Lomi does.
fn header_mismatch(headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    let method = message.get("method")?.as_str()?;
    let id = message
        .get("id")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim_matches([' ', '\t']).to_owned())
    };
    let refuse = |what: String| {
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32020, "message": what},
        });
        Some(json_response(StatusCode::BAD_REQUEST, body))
    };
    // Each standard header must be there and say what the body says.
    let check = |name: &str, shown: &str, expected: &str| match header(name) {
        None => refuse(format!(
            "the {shown} header is missing; it must be {expected:?}"
        )),
        Some(said) if said != expected => refuse(format!(
            "the {shown} header says {said:?} but the body says {expected:?}"
        )),
        Some(_) => None,
    };
    if let Some(refused) = check("mcp-method", "Mcp-Method", method) {
        return Some(refused);
    }
    let params = message.get("params");
    let named = match method {
        "tools/call" | "prompts/get" => params.and_then(|p| p.get("name")),
        "resources/read" => params.and_then(|p| p.get("uri")),
        _ => None,
    }
    .and_then(|v| v.as_str());
    if let Some(name) = named {
        return check("mcp-name", "Mcp-Name", name);
    }
    None
}

/// Whether the request speaks the stateless revision (it names it in `MCP-Protocol-Version`).
fn is_stateless(headers: &HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= "2026-07-28")
}

fn unauthorized(challenge: &str, message: &str) -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, message.to_owned()).into_response();
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
