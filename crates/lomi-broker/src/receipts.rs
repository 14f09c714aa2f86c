//! Receipts as agents and the person read them: a mutation's answer, one operation, its
//! cancellation, the event feed, and the store's status.

use lomi_protocol::tools::operations::{
    EventPage, EventsReadInput, OperationEvent, OperationGetInput, OperationView, StoreStatusView,
    StoreWarningLevel,
};
use lomi_protocol::{ErrorCode, OperationId, PairingId, Tool, ToolError};
use lomi_store::ReceiptKey;

use crate::engine::view;
use crate::{Broker, store_error};

/// Default and largest page of `lomi_events_read`.
const DEFAULT_EVENTS: u32 = 100;
const MAX_EVENTS: u32 = 500;

impl Broker {
    /// What a mutating tool answers: the operation once settled, or as it stands after the
    /// bounded wait. The pairing may have been revoked while the call waited.
    pub async fn answer(
        &self,
        caller: &PairingId,
        id: &OperationId,
    ) -> Result<OperationView, ToolError> {
        self.wait_settled(id).await;
        self.authorize(caller)?;
        self.operation_view(id)
    }

    fn operation_view(&self, id: &OperationId) -> Result<OperationView, ToolError> {
        let receipt = self
            .inner
            .store
            .get(id)
            .map_err(store_error)?
            .ok_or_else(|| {
                ToolError::internal(format!("operation {id} vanished from the store"))
            })?;
        Ok(self.live_view(&receipt))
    }

    /// A receipt's view, with the result so far of a running operation that reports progress.
    fn live_view(&self, receipt: &lomi_store::Receipt) -> OperationView {
        let mut view = view(receipt);
        if view.result.is_none()
            && let Some(live) = self.live().get(&receipt.operation_id)
        {
            view.result = live.progress.clone();
        }
        view
    }

    /// A receipt the caller may see: its own pairing, through a retry epoch that is still
    /// valid on this instance. Anything else reads as NOT_FOUND.
    fn visible_receipt(
        &self,
        caller: &PairingId,
        input: &OperationGetInput,
    ) -> Result<lomi_store::Receipt, ToolError> {
        self.authorize(caller)?;
        let receipt = match input {
            OperationGetInput::ById(id) => self.inner.store.get(id).map_err(store_error)?,
            OperationGetInput::ByKey {
                retry_epoch,
                request_key,
                tool,
                project_id,
            } => {
                let tool = Tool::from_name(tool).ok_or_else(|| {
                    ToolError::invalid(format!(
                        "there is no tool {tool:?}; name the tool of the original request"
                    ))
                })?;
                let key = ReceiptKey {
                    pairing_id: caller.clone(),
                    retry_epoch: retry_epoch.clone(),
                    project_id: project_id.clone(),
                    tool: tool.tool_name(),
                    request_key: request_key.clone(),
                };
                match self.inner.store.lookup(&key).map_err(store_error)? {
                    Some(receipt) => Some(receipt),
                    // The seed needs projectId only when the connection has several projects:
                    // with one, a lookup without it means that one.
                    None if project_id.is_none() => match self.only_project(caller, retry_epoch) {
                        Some(project) => {
                            let key = ReceiptKey {
                                project_id: Some(project),
                                ..key
                            };
                            self.inner.store.lookup(&key).map_err(store_error)?
                        }
                        None => None,
                    },
                    None => None,
                }
            }
        };
        let not_found =
            || ToolError::not_found("no such operation among this connection's operations");
        let receipt = receipt.ok_or_else(not_found)?;
        if &receipt.key.pairing_id != caller {
            return Err(not_found());
        }
        match self.check_retry_epoch(caller, &receipt.key.retry_epoch, None) {
            Ok(_) => Ok(receipt),
            Err(error)
                if matches!(
                    error.code,
                    ErrorCode::PairingRevoked
                        | ErrorCode::PairingDenied
                        | ErrorCode::PairingRequired
                ) =>
            {
                Err(error)
            }
            Err(_) => Err(not_found()),
        }
    }

    pub fn operation_get(
        &self,
        caller: &PairingId,
        input: &OperationGetInput,
    ) -> Result<OperationView, ToolError> {
        self.visible_receipt(caller, input)
            .map(|r| self.live_view(&r))
    }

    pub async fn operation_cancel(
        &self,
        caller: &PairingId,
        id: &OperationId,
    ) -> Result<OperationView, ToolError> {
        let receipt = self.visible_receipt(caller, &OperationGetInput::ById(id.clone()))?;
        self.cancel_operation(&receipt)?;
        self.answer(caller, id).await
    }

    /// `lomi_events_read`: the caller connection's operation state changes after a cursor.
    pub fn events_read(
        &self,
        caller: &PairingId,
        input: &EventsReadInput,
    ) -> Result<EventPage, ToolError> {
        let max = input.max_events.unwrap_or(DEFAULT_EVENTS);
        if max == 0 || max > MAX_EVENTS {
            return Err(ToolError::invalid(format!(
                "maxEvents must be 1 to {MAX_EVENTS}"
            )));
        }
        let epoch = self.check_retry_epoch(caller, &input.retry_epoch, None)?;
        // A cursor is `OPERATIONS.PANELS`: a position in each of the two feeds.
        // A cursor without its panel part starts the panel feed at the oldest kept event.
        let (after, panels_after): (i64, Option<u64>) = match &input.cursor {
            None => (0, None),
            Some(text) => {
                let bad =
                    || ToolError::invalid(format!("cursor {text:?} is not a cursor Lomi gave out"));
                let (operations, panels) = match text.split_once('.') {
                    Some((operations, panels)) => (
                        operations,
                        Some(lomi_protocol::parse_decimal(panels).ok_or_else(bad)?),
                    ),
                    None => (text.as_str(), None),
                };
                let operations = lomi_protocol::parse_decimal(operations)
                    .and_then(|n| i64::try_from(n).ok())
                    .ok_or_else(bad)?;
                (operations, panels)
            }
        };
        let (panel_events, panels_next) =
            self.panel_events_after(&epoch.workspace_id, panels_after, max as usize)?;
        // Scan a bounded window of the shared log and keep this connection's events; a page
        // can be empty while the cursor still moves on.
        let page = self
            .inner
            .store
            .events_after(after, MAX_EVENTS as usize)
            .map_err(store_error)?;
        if after > page.newest_seq {
            return Err(ToolError::invalid(format!(
                "cursor {after} is not a cursor Lomi gave out; read without a cursor to start"
            )));
        }
        if after > 0 && page.cursor_expired(after) {
            return Err(ToolError::new(
                ErrorCode::CursorExpired,
                "the cursor is older than the retained events; read again without a cursor and re-observe operations",
            ));
        }
        let mut events = Vec::new();
        let mut next = after;
        for event in page.events {
            if events.len() == max as usize {
                break;
            }
            next = event.seq;
            if event.retry_epoch == input.retry_epoch && &event.pairing_id == caller {
                events.push(OperationEvent {
                    cursor: event.seq.to_string(),
                    operation_id: event.operation_id,
                    tool: event.tool.0,
                    state: event.state,
                    effect_state: event.effect_state,
                    at: event.at,
                });
            }
        }
        Ok(EventPage {
            events,
            panel_events,
            next_cursor: format!("{next}.{panels_next}"),
        })
    }

    pub fn store_status(&self, caller: &PairingId) -> Result<StoreStatusView, ToolError> {
        self.authorize(caller)?;
        let status = self
            .inner
            .store
            .status(&self.idle_rule())
            .map_err(store_error)?;
        Ok(StoreStatusView {
            receipts: status.receipts,
            receipt_cap: status.receipt_cap as u64,
            unsettled_receipts: status.unsettled_receipts,
            removable_receipts: status.removable_receipts,
            retry_epochs: status.retry_epochs,
            retry_epoch_cap: status.retry_epoch_cap as u64,
            expired_retry_epochs: status.expired_retry_epochs,
            oldest_receipt_at: status.oldest_receipt_at,
            oldest_retry_epoch_at: status.oldest_retry_epoch_at,
            receipts_remaining: status.receipts_remaining,
            retry_epochs_remaining: status.retry_epochs_remaining,
            warning_level: match status.warning {
                lomi_store::WarningLevel::None => StoreWarningLevel::None,
                lomi_store::WarningLevel::Warning => StoreWarningLevel::Warning,
                lomi_store::WarningLevel::Critical => StoreWarningLevel::Critical,
                lomi_store::WarningLevel::Full => StoreWarningLevel::Full,
            },
            maintenance: match status.warning {
                lomi_store::WarningLevel::None => "Room is left. Only the person frees room: `lomi store reconcile --retire idle` (or Settings → Storage) retires idle connections' retry epochs and moves their settled receipts to the history.",
                lomi_store::WarningLevel::Warning | lomi_store::WarningLevel::Critical => "The store is filling up: tell the person to run `lomi store reconcile --retire idle` (or use Settings → Storage). A retired retry epoch is refused afterwards: re-observe, then lomi_connect again.",
                lomi_store::WarningLevel::Full => "The store is full: new operations are RESOURCE_EXHAUSTED until the person runs `lomi store reconcile --retire idle` (or uses Settings → Storage). Then re-observe and lomi_connect again if your retry epoch was retired.",
            }
            .to_owned(),
        })
    }

    /// Every receipt, newest first, for the person (`lomi operation list`).
    pub fn operations(&self, limit: usize) -> Result<Vec<OperationView>, ToolError> {
        let receipts = self
            .inner
            .store
            .list_receipts(limit, 0)
            .map_err(store_error)?;
        Ok(receipts.iter().map(view).collect())
    }

    /// One receipt, for the person (`lomi operation show`).
    pub fn operation(&self, id: &OperationId) -> Result<OperationView, ToolError> {
        self.inner
            .store
            .get(id)
            .map_err(store_error)?
            .map(|r| self.live_view(&r))
            .ok_or_else(|| ToolError::not_found(format!("no operation {id}")))
    }
}
