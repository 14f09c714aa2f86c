//! A tab's network: waiting for its requests to go quiet, and the body of a response.

use std::time::Duration;

use base64::prelude::{BASE64_STANDARD, Engine as _};
use serde_json::json;

use super::Tab;
use crate::BrowserError;

/// How long the network stays quiet before a wait calls it idle.
const NETWORK_QUIET: Duration = Duration::from_millis(500);

impl Tab {
    /// Waits until no request of the tab has been in flight for [`NETWORK_QUIET`].
    pub(super) async fn network_idle(&self, deadline: tokio::time::Instant) -> bool {
        self.network_quiet(deadline, NETWORK_QUIET).await
    }

    /// Waits until no request of the tab has been in flight for `quiet`.
    pub(super) async fn network_quiet(
        &self,
        deadline: tokio::time::Instant,
        quiet: Duration,
    ) -> bool {
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !self
                .wait_until(left, |state| state.in_flight.is_empty())
                .await
            {
                return false;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left < quiet {
                return false;
            }
            // Quiet long enough unless a request starts meanwhile.
            if !self
                .wait_until(quiet, |state| !state.in_flight.is_empty())
                .await
            {
                return true;
            }
        }
    }

    /// The response body of one of this tab's requests (CDP request id): the bytes, and whether
    /// Chromium gave them as base64 (a body that is not text).
    pub async fn response_body(&self, request_id: &str) -> Result<(Vec<u8>, bool), BrowserError> {
        let answer = self
            .raw(
                "Network.getResponseBody",
                json!({ "requestId": request_id }),
            )
            .await?;
        let body = answer["body"].as_str().unwrap_or_default();
        if answer["base64Encoded"] == true {
            let bytes = BASE64_STANDARD
                .decode(body)
                .map_err(|error| BrowserError::Cdp(format!("the body was not base64: {error}")))?;
            Ok((bytes, true))
        } else {
            Ok((body.as_bytes().to_vec(), false))
        }
    }
}
