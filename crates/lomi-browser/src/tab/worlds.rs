//! Lomi's isolated world in each frame of a tab: the helper (walker.js) called there, what it
//! answers before an action, and the acknowledgements its listeners send through the `lomiAck`
//! binding.

use std::time::Duration;

use serde_json::{Value, json};

use super::{ACK_LIMIT, ActionError, Tab, WALKER, WORLD};
use crate::BrowserError;

/// How long an acknowledgement may trail the dialog its event opened.
const DIALOG_ACK_GRACE: Duration = Duration::from_millis(500);

impl Tab {
    /// Lomi's world in a frame: the one its events announced, or a new one.
    pub(super) async fn world(&self, frame: &str) -> Result<i64, BrowserError> {
        if let Some((context, _)) = self.lock().worlds.get(frame) {
            return Ok(*context);
        }
        let made = self
            .raw(
                "Page.createIsolatedWorld",
                json!({ "frameId": frame, "worldName": WORLD }),
            )
            .await?;
        let context = made["executionContextId"]
            .as_i64()
            .ok_or_else(|| BrowserError::Cdp("no execution context for Lomi's world".to_owned()))?;
        self.lock()
            .worlds
            .entry(frame.to_owned())
            .or_insert((context, String::new()));
        Ok(context)
    }

    /// Lomi's world in the main frame's current document.
    pub(super) async fn main_world(&self) -> Result<i64, BrowserError> {
        let main = self.lock().main_frame.clone();
        self.world(&main).await
    }

    /// Calls `__lomi.<call>` in a world (installing the helper there first if needed) and
    /// returns the value.
    pub(super) async fn helper(&self, context: i64, call: &str) -> Result<Value, BrowserError> {
        let expression = format!(
            "(() => {{ if (!globalThis.__lomi) {{ {WALKER} }} return globalThis.__lomi.{call}; }})()"
        );
        let answer = self
            .raw(
                "Runtime.evaluate",
                json!({
                    "expression": expression, "contextId": context, "returnByValue": true,
                    "awaitPromise": true,
                }),
            )
            .await
            .map_err(|error| match error {
                BrowserError::Cdp(message) if message.contains("context") => {
                    BrowserError::Stale(format!("the frame's document is gone ({message})"))
                }
                other => other,
            })?;
        if let Some(details) = answer.get("exceptionDetails") {
            let text = details["exception"]["description"]
                .as_str()
                .or_else(|| details["text"].as_str())
                .unwrap_or("an exception");
            return Err(BrowserError::Cdp(format!(
                "Lomi's page helper failed: {text}"
            )));
        }
        Ok(answer["result"]["value"].clone())
    }

    pub(super) fn token(&self) -> String {
        let mut state = self.lock();
        state.next_token += 1;
        format!("{}-{}", self.id, state.next_token)
    }

    /// Checks what a helper answered before an action: stale refs and refusals.
    pub(super) fn checked(answer: Value, element_ref: &str) -> Result<Value, BrowserError> {
        if answer["stale"] == true {
            return Err(BrowserError::Stale(format!(
                "{element_ref} is no longer in the page (it was removed or re-rendered); take a new snapshot"
            )));
        }
        if let Some(error) = answer["error"].as_str() {
            return Err(BrowserError::Invalid(error.to_owned()));
        }
        if answer.is_null() {
            return Err(BrowserError::Cdp(
                "Lomi's page helper gave no answer".to_owned(),
            ));
        }
        Ok(answer)
    }

    /// Waits for the page's acknowledgement of `token`.
    pub(super) async fn acknowledged(&self, token: &str) -> Result<String, Unconfirmed> {
        let token = token.to_owned();
        let seen = self
            .wait_until(ACK_LIMIT, |state| {
                state.acks.contains_key(&token) || state.dialog.is_some()
            })
            .await;
        // The page acknowledges before its own handlers run, so a dialog the event opened comes
        // after the acknowledgement; but the two arrive on separate channels, and the dialog
        // may be seen first. Its acknowledgement is then on its way.
        if seen && !self.lock().acks.contains_key(&token) {
            self.wait_until(DIALOG_ACK_GRACE, |state| state.acks.contains_key(&token))
                .await;
        }
        let mut state = self.lock();
        if let Some(kind) = state.acks.remove(&token) {
            return Ok(kind);
        }
        drop(state);
        if let Some(gone) = self.browser.gone() {
            return Err(Unconfirmed(gone.to_string()));
        }
        if seen {
            return Err(Unconfirmed(
                "a dialog opened before the event was confirmed".to_owned(),
            ));
        }
        Err(Unconfirmed(format!(
            "the page did not confirm the event within {} s",
            ACK_LIMIT.as_secs()
        )))
    }

    /// A round trip through Lomi's world of the main frame that the event pump sees after
    /// every event the page sent before it. Best effort: a page between documents has no world.
    pub(super) async fn fence(&self) {
        let Ok(context) = self.main_world().await else {
            return;
        };
        let token = self.token();
        if self
            .helper(context, &format!("fence({})", json!(token)))
            .await
            .is_err()
        {
            return;
        }
        self.wait_until(ACK_LIMIT, |state| state.acks.contains_key(&token))
            .await;
        self.lock().acks.remove(&token);
    }
}

/// The page did not confirm an event that was dispatched.
pub(super) struct Unconfirmed(pub(super) String);

/// An event the page did not confirm is the action's `Unconfirmed`.
impl From<Unconfirmed> for ActionError {
    fn from(unconfirmed: Unconfirmed) -> Self {
        ActionError::Unconfirmed(unconfirmed.0)
    }
}
