//! One command sent straight to a page over its own DevTools connection. chromiumoxide holds
//! back its answer to `Page.navigate` until the new document's load and runs navigations one at
//! a time, so a stopped or same-document navigation blocked the next one for 30 s; Lomi sends
//! that command this way and follows the page's events on the main connection as before.

use async_tungstenite::tungstenite::Message;
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::BrowserError;
use crate::tab::ActionError;

/// Sends `method` to the page `target` of the Chromium whose DevTools endpoint is `devtools`
/// (`host:port`) and returns its result. The connection lives for this one command. A failure
/// before the command was sent, and Chromium's refusal, are `Refused`; a connection lost after
/// sending is `Dispatched` (the command may have taken effect).
pub(crate) async fn page_command(
    devtools: &str,
    target: &str,
    method: &str,
    params: Value,
) -> Result<Value, ActionError> {
    let gone = |what: String| BrowserError::Gone(format!("{what} ({method})"));
    let url = format!("ws://{devtools}/devtools/page/{target}");
    let (mut socket, _response) =
        async_tungstenite::tokio::connect_async(url)
            .await
            .map_err(|error| {
                ActionError::Refused(gone(format!(
                    "the page's DevTools cannot be reached: {error}"
                )))
            })?;
    let request = json!({ "id": 1, "method": method, "params": params });
    socket
        .send(Message::Text(request.to_string().into()))
        .await
        .map_err(|error| {
            ActionError::Dispatched(gone(format!(
                "the page's DevTools connection failed: {error}"
            )))
        })?;
    while let Some(message) = socket.next().await {
        // Lost after sending: the navigation may have started.
        let message = message.map_err(|error| {
            ActionError::Dispatched(gone(format!(
                "the page's DevTools connection failed: {error}"
            )))
        })?;
        let Message::Text(text) = message else {
            continue;
        };
        // Events the page sends on this connection (none are enabled) are skipped.
        let Ok(answer) = serde_json::from_str::<Value>(text.as_str()) else {
            continue;
        };
        if answer["id"] != 1 {
            continue;
        }
        if let Err(error) = socket.close(None).await {
            tracing::debug!("closing a page's DevTools connection: {error}");
        }
        return match answer.get("error") {
            // Chromium refused the command as given (an invalid URL, say): nothing happened.
            Some(error) => Err(ActionError::Refused(BrowserError::Invalid(format!(
                "Chromium refused {method}: {}",
                error["message"].as_str().unwrap_or("no reason given")
            )))),
            None => Ok(answer["result"].clone()),
        };
    }
    Err(ActionError::Dispatched(gone(
        "the page's DevTools connection closed before answering".to_owned(),
    )))
}
