//! The two provider protocols, streaming: OpenAI-compatible Chat Completions (OpenAI,
//! OpenRouter, Ollama, LM Studio, vLLM, llama.cpp) and Anthropic Messages. A request either
//! fails before its reply starts (an HTTP error mapped to a code) or becomes a stream of
//! pieces of text, usage and an end.

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use lomi_protocol::tools::chat::ChatRole;
use lomi_protocol::tools::settings::ProviderKind;
use lomi_protocol::{ErrorCode, ToolError};
use serde_json::{Value, json};
use sse_stream::SseStream;

/// How long a provider may take to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a provider may stay silent, before its answer or between two pieces of a reply.
const SILENCE_TIMEOUT: Duration = Duration::from_secs(180);
/// The reply's length limit asked of Anthropic, which requires one.
const ANTHROPIC_MAX_TOKENS: u32 = 4096;
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// How much of a provider's error text a message quotes.
const QUOTED_ERROR_CHARS: usize = 300;

/// Everything one send asks of a provider.
pub struct ProviderRequest {
    pub kind: ProviderKind,
    pub provider: String,
    pub base_url: String,
    pub key: Option<String>,
    pub model: String,
    pub system: String,
    /// The conversation, oldest first, ending with the message being sent.
    pub messages: Vec<(ChatRole, String)>,
}

/// One piece of a streaming reply.
#[derive(Debug, PartialEq)]
pub enum Piece {
    Text(String),
    /// Token counts, as far as the provider gave them (input, output).
    Usage(Option<u64>, Option<u64>),
    /// The provider said the reply is complete.
    End,
}

/// A reply as it arrives; an `Err` is the provider failing part-way.
pub type Reply = Pin<Box<dyn Stream<Item = Result<Piece, ToolError>> + Send>>;

/// Installs rustls' process-wide crypto provider (ring), which every reqwest client of Lomi
/// needs; another part of Lomi may have installed it already, which is as good.
pub fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none()
        && let Err(_already) = rustls::crypto::ring::default_provider().install_default()
    {
        tracing::debug!("a rustls crypto provider was installed meanwhile");
    }
}

/// Makes the HTTP client every send uses.
pub fn client() -> Result<reqwest::Client, ToolError> {
    install_tls_provider();
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(SILENCE_TIMEOUT)
        .build()
        .map_err(|e| ToolError::internal(format!("cannot make the provider HTTP client: {e}")))
}

fn body(request: &ProviderRequest) -> Value {
    let turns = request
        .messages
        .iter()
        .map(|(role, text)| json!({"role": role.as_str(), "content": text}));
    match request.kind {
        ProviderKind::OpenaiCompatible => {
            let mut messages = Vec::new();
            if !request.system.is_empty() {
                messages.push(json!({"role": "system", "content": request.system}));
            }
            messages.extend(turns);
            json!({
                "model": request.model,
                "messages": messages,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        }
        ProviderKind::Anthropic => {
            let mut body = json!({
                "model": request.model,
                "max_tokens": ANTHROPIC_MAX_TOKENS,
                "messages": turns.collect::<Vec<_>>(),
                "stream": true,
            });
            if !request.system.is_empty() {
                body["system"] = json!(request.system);
            }
            body
        }
    }
}

/// The endpoint, after each SDK's own convention for a base URL: OpenAI's ends in `/v1`,
/// Anthropic's is the host.
fn endpoint(request: &ProviderRequest) -> String {
    let base = request.base_url.trim_end_matches('/');
    match request.kind {
        ProviderKind::OpenaiCompatible => format!("{base}/chat/completions"),
        ProviderKind::Anthropic => format!("{base}/v1/messages"),
    }
}

fn cut(text: &str) -> String {
    let mut cut: String = text.chars().take(QUOTED_ERROR_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// The provider's own words from an error body (`{"error": {"message": …}}` in both APIs).
fn error_text(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
    });
    cut(message.unwrap_or(body.trim()))
}

/// Maps an HTTP error answer to a code an agent can act on.
pub fn http_error(
    provider: &str,
    model: &str,
    status: u16,
    retry_after: Option<u64>,
    body: &str,
) -> ToolError {
    let said = error_text(body);
    let details = json!({"status": status, "provider": provider, "retryAfterSeconds": retry_after});
    let (code, message) = match status {
        401 | 403 => (
            ErrorCode::ProviderAuth,
            format!(
                "provider {provider} refused the key (HTTP {status}: {said}); the person stores a valid one with `lomi settings provider-key {provider}`"
            ),
        ),
        429 => (
            ErrorCode::ProviderRateLimited,
            match retry_after {
                Some(seconds) => format!(
                    "provider {provider} is rate limiting (HTTP 429: {said}); it asks to wait {seconds} s before sending again"
                ),
                None => format!(
                    "provider {provider} is rate limiting (HTTP 429: {said}); wait before sending again"
                ),
            },
        ),
        404 => (
            ErrorCode::ProviderModelNotFound,
            format!(
                "provider {provider} does not know model {model:?} (HTTP 404: {said}); pick one of its models"
            ),
        ),
        400..=499 => (
            ErrorCode::ProviderRejected,
            format!("provider {provider} refused the request (HTTP {status}: {said})"),
        ),
        _ => (
            ErrorCode::ProviderUnavailable,
            format!("provider {provider} failed (HTTP {status}: {said}); try again later"),
        ),
    };
    ToolError::new(code, message).with_details(details)
}

fn network_error(provider: &str, error: &reqwest::Error) -> ToolError {
    let what = if error.is_timeout() {
        "did not answer in time"
    } else if error.is_connect() {
        "cannot be reached"
    } else {
        "broke off the connection"
    };
    // reqwest's message, with its causes: "error sending request … Connection refused".
    let mut because = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        because.push_str(": ");
        because.push_str(&cause.to_string());
        source = cause.source();
    }
    ToolError::new(
        ErrorCode::ProviderUnavailable,
        format!("provider {provider} {what} ({because}); check its base URL and the network"),
    )
    .with_details(json!({"provider": provider, "network": true}))
}

/// `Retry-After` in seconds (the HTTP-date form is not used by model providers).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Sends the request; answers the reply stream once the provider accepted it (HTTP 2xx), or
/// the provider's refusal.
pub async fn start(
    client: &reqwest::Client,
    request: &ProviderRequest,
) -> Result<Reply, ToolError> {
    let mut http = client
        .post(endpoint(request))
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body(request).to_string());
    if let Some(key) = &request.key {
        http = match request.kind {
            ProviderKind::OpenaiCompatible => http.bearer_auth(key),
            ProviderKind::Anthropic => http.header("x-api-key", key),
        };
    }
    if request.kind == ProviderKind::Anthropic {
        http = http.header("anthropic-version", ANTHROPIC_VERSION);
    }
    let response = http
        .send()
        .await
        .map_err(|e| network_error(&request.provider, &e))?;
    let status = response.status();
    if !status.is_success() {
        let after = retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        return Err(http_error(
            &request.provider,
            &request.model,
            status.as_u16(),
            after,
            &text,
        ));
    }
    let provider = request.provider.clone();
    let kind = request.kind;
    let events = SseStream::from_bytes_stream(response.bytes_stream());
    let mut parser = Parser::new(kind, provider.clone());
    let pieces = events.flat_map(move |event| {
        let pieces = match event {
            Ok(event) => parser.event(event.event.as_deref(), event.data.as_deref()),
            Err(error) => vec![Err(cut_short(&provider, &error.to_string()))],
        };
        futures_util::stream::iter(pieces)
    });
    Ok(Box::pin(pieces))
}

fn cut_short(provider: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::ProviderUnavailable,
        format!("provider {provider} cut its reply short ({why}); what arrived is kept"),
    )
    .with_details(json!({"provider": provider, "cut": true}))
}

/// What the stream ended without: the provider's end marker.
pub fn ended_early(provider: &str) -> ToolError {
    cut_short(provider, "the stream ended before the reply was complete")
}

/// Turns one protocol's SSE events into pieces.
struct Parser {
    kind: ProviderKind,
    provider: String,
    input_tokens: Option<u64>,
}

impl Parser {
    fn new(kind: ProviderKind, provider: String) -> Self {
        Parser {
            kind,
            provider,
            input_tokens: None,
        }
    }

    fn event(&mut self, name: Option<&str>, data: Option<&str>) -> Vec<Result<Piece, ToolError>> {
        let Some(data) = data else {
            return Vec::new();
        };
        if self.kind == ProviderKind::OpenaiCompatible && data.trim() == "[DONE]" {
            return vec![Ok(Piece::End)];
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(e) => {
                return vec![Err(cut_short(
                    &self.provider,
                    &format!("an event that is not JSON: {e}"),
                ))];
            }
        };
        if name == Some("error") || value.get("error").is_some_and(|e| !e.is_null()) {
            return vec![Err(cut_short(&self.provider, &error_text(data)))];
        }
        match self.kind {
            ProviderKind::OpenaiCompatible => self.openai(&value),
            ProviderKind::Anthropic => self.anthropic(name, &value),
        }
    }

    fn openai(&mut self, value: &Value) -> Vec<Result<Piece, ToolError>> {
        let mut pieces = Vec::new();
        if let Some(text) = value
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            pieces.push(Ok(Piece::Text(text.to_owned())));
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            pieces.push(Ok(Piece::Usage(
                usage.get("prompt_tokens").and_then(Value::as_u64),
                usage.get("completion_tokens").and_then(Value::as_u64),
            )));
        }
        pieces
    }

    fn anthropic(&mut self, name: Option<&str>, value: &Value) -> Vec<Result<Piece, ToolError>> {
        let kind = name.or_else(|| value.get("type").and_then(Value::as_str));
        match kind {
            Some("message_start") => {
                self.input_tokens = value
                    .pointer("/message/usage/input_tokens")
                    .and_then(Value::as_u64);
                Vec::new()
            }
            Some("content_block_delta") => value
                .pointer("/delta/text")
                .and_then(Value::as_str)
                .map(|text| vec![Ok(Piece::Text(text.to_owned()))])
                .unwrap_or_default(),
            Some("message_delta") => vec![Ok(Piece::Usage(
                self.input_tokens,
                value
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64),
            ))],
            Some("message_stop") => vec![Ok(Piece::End)],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(
        kind: ProviderKind,
        events: &[(Option<&str>, &str)],
    ) -> Vec<Result<Piece, ErrorCode>> {
        let mut parser = Parser::new(kind, "p".to_owned());
        events
            .iter()
            .flat_map(|(name, data)| parser.event(*name, Some(data)))
            .map(|piece| piece.map_err(|e| e.code))
            .collect()
    }

    #[test]
    fn openai_chunks_usage_and_done() {
        let got = pieces(
            ProviderKind::OpenaiCompatible,
            &[
                (
                    None,
                    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
                ),
                (
                    None,
                    r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
                ),
                (
                    None,
                    r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
                ),
                (
                    None,
                    r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
                ),
                (None, "[DONE]"),
            ],
        );
        assert_eq!(
            got,
            vec![
                Ok(Piece::Text("Hel".into())),
                Ok(Piece::Text("lo".into())),
                Ok(Piece::Usage(Some(5), Some(2))),
                Ok(Piece::End)
            ]
        );
    }

    #[test]
    fn anthropic_events() {
        let got = pieces(
            ProviderKind::Anthropic,
            &[
                (
                    Some("message_start"),
                    r#"{"type":"message_start","message":{"usage":{"input_tokens":7}}}"#,
                ),
                (Some("ping"), r#"{"type":"ping"}"#),
                (
                    Some("content_block_delta"),
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
                ),
                (
                    Some("message_delta"),
                    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
                ),
                (Some("message_stop"), r#"{"type":"message_stop"}"#),
            ],
        );
        assert_eq!(
            got,
            vec![
                Ok(Piece::Text("Hi".into())),
                Ok(Piece::Usage(Some(7), Some(1))),
                Ok(Piece::End)
            ]
        );
        let failed = pieces(
            ProviderKind::Anthropic,
            &[(
                Some("error"),
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )],
        );
        assert_eq!(failed, vec![Err(ErrorCode::ProviderUnavailable)]);
    }

    #[test]
    fn http_errors_map_to_codes() {
        let cases = [
            (401, None, ErrorCode::ProviderAuth, "refused the key"),
            (429, Some(7), ErrorCode::ProviderRateLimited, "wait 7 s"),
            (
                404,
                None,
                ErrorCode::ProviderModelNotFound,
                "does not know model",
            ),
            (
                400,
                None,
                ErrorCode::ProviderRejected,
                "refused the request",
            ),
            (
                503,
                None,
                ErrorCode::ProviderUnavailable,
                "failed (HTTP 503",
            ),
        ];
        for (status, after, code, words) in cases {
            let error = http_error(
                "p",
                "m",
                status,
                after,
                r#"{"error":{"message":"said so"}}"#,
            );
            assert_eq!(error.code, code, "{status}");
            assert!(error.message.contains(words), "{status}: {}", error.message);
            assert!(
                error.message.contains("said so"),
                "{status}: {}",
                error.message
            );
        }
    }
}
