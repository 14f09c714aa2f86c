//! The MCP handler: tools/list from the catalog, tools/call through the broker, and the
//! caller's identity (a bearer token, the local bridge's secret, or the MCP session itself).

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use lomi_broker::Broker;

use crate::Lomi;
use lomi_protocol::{ErrorCode, PairingId, ToolError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

/// Who is calling, as far as the transport can tell.
pub enum Caller {
    /// A pairing proven by the transport (the local socket's hello).
    Known(PairingId),
    /// An HTTP session: a bearer token if the request carries one (unknown ones answered as
    /// the guard says), else a pairing bound to this MCP session, created on first use.
    HttpSession(Arc<BearerGuard>),
}

/// Unknown bearer tokens are answered ever more slowly per source: the first
/// [`FREE_STRIKES`] at once, then each after a delay that doubles up to [`MAX_STRIKE_DELAY`],
/// until the source sent none for [`STRIKE_MEMORY`]. A token Lomi issued is never delayed, so a
/// program guessing tokens cannot slow the person's own agents; every loopback address counts
/// as one source, as one program can send from any of them.
#[derive(Default)]
pub struct BearerGuard {
    strikes: Mutex<std::collections::HashMap<std::net::IpAddr, Strikes>>,
}

#[derive(Clone, Copy)]
struct Strikes {
    count: u32,
    last: std::time::Instant,
}

pub const FREE_STRIKES: u32 = 5;
pub const MAX_STRIKE_DELAY: std::time::Duration = std::time::Duration::from_secs(5);
pub const STRIKE_MEMORY: std::time::Duration = std::time::Duration::from_secs(10 * 60);
/// Sources remembered at once (beyond loopback there are none on a loopback-only endpoint).
const MAX_SOURCES: usize = 1024;

impl BearerGuard {
    /// Records an unknown token from `source`; answers how long to wait before saying so.
    pub fn strike(&self, source: Option<std::net::SocketAddr>) -> std::time::Duration {
        let key = match source.map(|s| s.ip()) {
            Some(ip) if ip.is_loopback() => std::net::IpAddr::from([127, 0, 0, 1]),
            Some(ip) => ip,
            None => std::net::IpAddr::from([0, 0, 0, 0]),
        };
        let now = std::time::Instant::now();
        let mut strikes = self.strikes.lock().unwrap_or_else(|e| e.into_inner());
        if strikes.len() >= MAX_SOURCES {
            strikes.retain(|_, s| now.duration_since(s.last) < STRIKE_MEMORY);
        }
        let entry = strikes.entry(key).or_insert(Strikes {
            count: 0,
            last: now,
        });
        if now.duration_since(entry.last) >= STRIKE_MEMORY {
            entry.count = 0;
        }
        entry.count = entry.count.saturating_add(1);
        entry.last = now;
        strike_delay(entry.count)
    }
}

/// The delay before answering the `count`th unknown token in a row from one source.
pub fn strike_delay(count: u32) -> std::time::Duration {
    if count <= FREE_STRIKES {
        return std::time::Duration::ZERO;
    }
    let doubling = (count - FREE_STRIKES - 1).min(16);
    (std::time::Duration::from_millis(100) * (1u32 << doubling)).min(MAX_STRIKE_DELAY)
}

/// One MCP session's handler.
#[derive(Clone)]
pub struct LomiServer {
    lomi: Lomi,
    broker: Broker,
    tools: Arc<Vec<Tool>>,
    session: Arc<SessionPairing>,
    fixed: Option<PairingId>,
    guard: Option<Arc<BearerGuard>>,
}

/// The pairing an unauthenticated HTTP session got; forgotten when the session ends.
struct SessionPairing {
    broker: Broker,
    pairing: Mutex<Option<PairingId>>,
    /// What this session's client was last shown by `tools/list`.
    listed: Mutex<Listed>,
}

/// The pairing a session's tool list was made for, and what it showed: nothing before the
/// person approved it, then its families.
#[derive(Default)]
struct Listed {
    pairing: Option<PairingId>,
    approved: bool,
    families: Option<std::collections::BTreeSet<lomi_protocol::Family>>,
}

impl Drop for SessionPairing {
    fn drop(&mut self) {
        let pairing = self
            .pairing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(id) = pairing {
            self.broker.pairing_session_ended(&id);
        }
    }
}

/// The MCP tool list, built once from the catalog.
pub fn mcp_tools() -> Vec<Tool> {
    lomi_protocol::catalog::catalog()
        .iter()
        .filter_map(
            |spec| match serde_json::from_value::<Tool>(spec.to_json()) {
                Ok(tool) => Some(tool),
                Err(error) => {
                    tracing::error!("tool {} cannot be described to MCP: {error}", spec.name);
                    None
                }
            },
        )
        .collect()
}

impl LomiServer {
    pub fn new(lomi: Lomi, tools: Arc<Vec<Tool>>, caller: Caller) -> Self {
        let broker = lomi.broker.clone();
        let (fixed, guard) = match caller {
            Caller::Known(id) => (Some(id), None),
            Caller::HttpSession(guard) => (None, Some(guard)),
        };
        LomiServer {
            session: Arc::new(SessionPairing {
                broker: broker.clone(),
                pairing: Mutex::new(None),
                listed: Mutex::new(Listed::default()),
            }),
            lomi,
            broker,
            tools,
            fixed,
            guard,
        }
    }

    /// The calling pairing. A bearer token Lomi never issued is refused rather than turned into a new pending pairing, so a client with a mistyped
    /// token learns it at once; repeated ones are answered after the guard's delay.
    async fn caller(&self, context: &RequestContext<RoleServer>) -> Result<PairingId, ToolError> {
        if let Some(id) = &self.fixed {
            return Ok(id.clone());
        }
        if let Some(token) = bearer_token(&context.extensions) {
            if let Some(id) = self.broker.pairing_by_secret(&token) {
                return Ok(id);
            }
            let delay = match &self.guard {
                Some(guard) => guard.strike(source_address(context)),
                None => std::time::Duration::ZERO,
            };
            tokio::time::sleep(delay).await;
            let mut message = "the bearer token is not one Lomi issued; ask the person for a token from `lomi pairing create`, or connect without one and have the person approve the session".to_owned();
            if !delay.is_zero() {
                message.push_str(&format!(
                    "; after repeated unknown tokens from this address each is answered {} ms late",
                    delay.as_millis()
                ));
            }
            return Err(ToolError::new(ErrorCode::PairingRequired, message));
        }
        self.session_pairing(context)
    }

    /// The pairing this request comes from, if it already has one: never starts a pairing.
    fn known_caller(&self, extensions: &rmcp::model::Extensions) -> Option<PairingId> {
        if let Some(id) = &self.fixed {
            return Some(id.clone());
        }
        if let Some(token) = bearer_token(extensions) {
            return self.broker.pairing_by_secret(&token);
        }
        self.session
            .pairing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Tells this session's client when what its tool list showed changes (the person approved
    /// or revoked it, or changed its families), until the session ends.
    fn watch_families(&self, peer: rmcp::Peer<RoleServer>) {
        let session = Arc::downgrade(&self.session);
        let mut changed = self.broker.families_changed();
        tokio::spawn(async move {
            while changed.changed().await.is_ok() {
                let Some(session) = session.upgrade() else {
                    return;
                };
                if peer.is_transport_closed() {
                    return;
                }
                let pairing = {
                    let listed = session.listed.lock().unwrap_or_else(|e| e.into_inner());
                    listed.pairing.clone()
                };
                let pairing = pairing.or_else(|| {
                    session
                        .pairing
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone()
                });
                let Some(pairing) = pairing else { continue };
                let approved = session.broker.pairing_approved(&pairing);
                let now = session.broker.pairing_families(&pairing);
                let moved = {
                    let mut listed = session.listed.lock().unwrap_or_else(|e| e.into_inner());
                    let moved = listed.approved != approved || listed.families != now;
                    listed.pairing = Some(pairing);
                    listed.approved = approved;
                    listed.families = now;
                    moved
                };
                drop(session);
                if moved && peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// The pairing bound to this MCP session, asked for on first use.
    fn session_pairing(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<PairingId, ToolError> {
        let mut pairing = self
            .session
            .pairing
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // A pending pairing that expired is asked for again, not a dead end for the session.
        if let Some(id) = pairing.as_ref()
            && self.broker.pairing_known(id)
        {
            return Ok(id.clone());
        }
        let name = context
            .peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .unwrap_or_else(|| "MCP client".to_owned());
        // Refused while too many wait: nothing is kept, so a later call asks again.
        let id = self.broker.pairing_begin(&name, None)?;
        *pairing = Some(id.clone());
        Ok(id)
    }
}

fn source_address(context: &RequestContext<RoleServer>) -> Option<std::net::SocketAddr> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    parts
        .extensions
        .get::<crate::http::Source>()
        .map(|source| source.0)
}

fn bearer_token(extensions: &rmcp::model::Extensions) -> Option<String> {
    let parts = extensions.get::<http::request::Parts>()?;
    let value = parts
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    Some(token.trim().to_owned())
}

/// The server's instructions: how to start, and the glossary of what every tool shares, said
/// once here instead of in each tool's description and field briefs (what a model is shown of
/// the catalog has a budget, lomi-protocol's tests/catalog.rs; docs/decisions.md says what
/// moved where).
const INSTRUCTIONS: &str = "Lomi lets you work in the person's workspaces. Call lomi_pairing_status first: \
until the person approves this client in Lomi, other tools answer PAIRING_REQUIRED. Then \
lomi_workspace_list and lomi_connect.\n\
Glossary:\n\
- Answers: structuredContent is {controlApiVersion, status: \"ok\", data} or {status: \"error\", \
code, message, details}. `lomi catalog` has every tool's complete output schema.\n\
- Ids (workspaceId, projectId, panelId, leaseId, operationId, documentId) are copied from Lomi's \
answers. projectId may be left out when the workspace has one project. Paths are relative to the \
project root (\"\" is the root), never absolute, never `..`.\n\
- A panel's runtime has a generation (terminalSessionId, browserGeneration, generation): pass the \
one from the create result or lomi_panel_list; an old one is GENERATION_MISMATCH. Where it is \
optional, it is checked when given.\n\
- Revisions are compare-and-set tokens from your latest read: expectedRevision is the workspace's \
domainRevision (lomi_workspace_list, lomi_panel_list); expectedDiskRevision a file's diskRevision; \
expectedParentRevision and expectedDirectoryRevision a folder's directoryRevision (lomi_dir_list); \
expectedBufferRevision a document's bufferRevision; expectedHeadRevision lomi_git_status's head; \
expectedSettingsRevision, expectedConversationRevision and expectedDraftRevision likewise. A stale \
one is REVISION_MISMATCH with the current one in details.\n\
- Mutations take retryEpoch (from lomi_connect, 24 h) and requestKey, your own name for the \
request (1 to 128 of A-Z a-z 0-9 . _ : -). The same key with the same arguments returns the \
earlier operation; other arguments are IDEMPOTENCY_CONFLICT. Never make a new key to get past \
a doubt or a denial.\n\
- A mutation returns an operation {operationId, state, effectState, result, error}: follow it with \
lomi_operation_get until it settles (succeeded, failed, cancelled, outcome_unknown). isError \
false alone does not prove an effect. awaiting_user means the person decides (a denial is \
USER_DENIED). After outcome_unknown, look at the real resource before doing anything again.\n\
- Leases: input to a terminal or device needs a leaseId (from the create or attach result, or \
lomi_lease_acquire) and inputSequence, a decimal one more than the lease's last; the same \
sequence with the same payload acknowledges the earlier input instead of sending it again.\n\
- Refs: a snapshot (browser or Android) has a snapshotId and refs such as e12; pass both to act \
on an element. After the page or screen changed they are SNAPSHOT_STALE: take a new snapshot. \
Points (x, y) are viewport CSS pixels in a browser, screen pixels on a device.\n\
- Pages: pass a previous answer's nextCursor (as cursor or sinceCursor; nextFromLine as \
fromLine, nextSeq as afterSeq) to read on. maxBytes, limit and timeoutMs bound an answer and \
have defaults; a value out of range is INVALID_ARGUMENT naming the range. A left-out setting \
takes the person's settings (lomi_settings_get).\n\
- save (captures, response bodies) also writes the file into the project, as an operation with \
its own retryEpoch and requestKey.";

impl ServerHandler for LomiServer {
    fn get_info(&self) -> InitializeResult {
        let info = json!({
            "protocolVersion": ProtocolVersion::V_2025_11_25,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "lomi", "title": "Lomi", "version": env!("CARGO_PKG_VERSION")},
            "instructions": INSTRUCTIONS,
        });
        serde_json::from_value(info).unwrap_or_else(|error| {
            tracing::error!("server info: {error}");
            InitializeResult::new(ServerCapabilities::default())
        })
    }

    /// The stateless revision (2026-07-28) beside the handshake-era ones: a stateless request
    /// reaches this handler only with a token (`oauth::challenge` answers 401 to one without),
    /// while a handshake-era client without a token pairs through its session.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        self.watch_families(context.peer);
    }

    /// The session tools and the families the caller's pairing sees; no tool at all to a
    /// client the person has not approved (pending, denied, revoked, or no pairing yet).
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let pairing = if self.fixed.is_none() && bearer_token(&context.extensions).is_none() {
            // A client without a token reaches this only where the person lets such clients
            // pair for their session: listing the tools asks for that pairing, so the person
            // sees it at once (and a refusal while too many wait lists nothing).
            self.session_pairing(&context).ok()
        } else {
            self.known_caller(&context.extensions)
        };
        let approved = pairing
            .as_ref()
            .is_some_and(|id| self.broker.pairing_approved(id));
        let families = pairing
            .as_ref()
            .and_then(|id| self.broker.pairing_families(id));
        let tools = self
            .tools
            .iter()
            .filter(|tool| {
                approved
                    && lomi_protocol::Tool::from_name(&tool.name)
                        .is_some_and(|tool| lomi_protocol::catalog::sees(families.as_ref(), tool))
            })
            .cloned()
            .collect();
        *self
            .session
            .listed
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Listed {
            pairing,
            approved,
            families,
        };
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let unknown = || {
            ErrorData::invalid_params(
                format!(
                    "there is no tool {:?}; see tools/list or `lomi catalog`",
                    request.name
                ),
                None,
            )
        };
        let Some(tool) = lomi_protocol::Tool::from_name(&request.name)
            .filter(|_| self.tools.iter().any(|tool| tool.name == request.name))
        else {
            return Err(unknown());
        };
        // rmcp moves a request's `_meta` into the context; look in both.
        let token = context.meta.get_progress_token().or_else(|| {
            request
                .meta
                .as_ref()
                .and_then(|meta| meta.get_progress_token())
        });
        let answer = match self.caller(&context).await {
            // A tool of a family the person did not give this pairing is not there for it.
            Ok(caller) if !self.broker.pairing_sees(&caller, tool) => return Err(unknown()),
            Ok(caller) => {
                {
                    let mut listed = self
                        .session
                        .listed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    if listed.pairing.is_none() {
                        listed.pairing = Some(caller.clone());
                    }
                }
                let arguments = request.arguments.map(serde_json::Value::Object);
                let forwarding = token.map(|token| {
                    forward_progress(
                        &self.lomi.broker,
                        token,
                        &caller,
                        &request.name,
                        arguments.as_ref(),
                        context.peer.clone(),
                    )
                });
                let answer =
                    crate::tools::call(&self.lomi, &caller, &request.name, arguments).await;
                if let Some(forwarding) = forwarding {
                    forwarding.abort();
                }
                answer
            }
            Err(error) => crate::tools::refused(error),
        };
        serde_json::from_value::<CallToolResult>(answer.into_result())
            .map(|mut result| {
                // Required in the stateless revision; the library drops it for older peers.
                result.result_type = Some(rmcp::model::ResultType::COMPLETE);
                CallToolResponse::from(result)
            })
            .map_err(|error| {
                ErrorData::internal_error(format!("could not encode the result: {error}"), None)
            })
    }
}

/// While a call runs, sends the client a progress notification (with its `progressToken`)
/// for each progress note of the operation this call is: the caller's, of this tool, with
/// this call's requestKey. Ends when the returned task is aborted (the call answered).
fn forward_progress(
    broker: &Broker,
    token: rmcp::model::ProgressToken,
    caller: &PairingId,
    name: &str,
    arguments: Option<&serde_json::Value>,
    peer: rmcp::Peer<RoleServer>,
) -> tokio::task::JoinHandle<()> {
    let mut notes = broker.progress_notes();
    let tool = lomi_protocol::Tool::from_name(name);
    let key = arguments.and_then(lomi_protocol::strict::request_key);
    let caller = caller.clone();
    tokio::spawn(async move {
        let (Some(tool), Some(key)) = (tool, key) else {
            return;
        };
        loop {
            let note = match notes.recv().await {
                Ok(note) => note,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if note.pairing != caller || note.tool != tool || note.request_key != key {
                continue;
            }
            let mut progress =
                rmcp::model::ProgressNotificationParam::new(token.clone(), note.done as f64);
            progress.total = Some(note.total as f64);
            progress.message = Some(note.message);
            if let Err(error) = peer.notify_progress(progress).await {
                tracing::debug!("a progress notification was not sent: {error}");
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn unknown_tokens_wait_longer_each_time_up_to_the_cap() {
        let delays: Vec<Duration> = (1..=12).map(strike_delay).collect();
        assert!(delays[..5].iter().all(Duration::is_zero), "{delays:?}");
        assert_eq!(delays[5], Duration::from_millis(100));
        assert_eq!(delays[6], Duration::from_millis(200));
        assert_eq!(delays[11], MAX_STRIKE_DELAY);
        assert_eq!(strike_delay(u32::MAX), MAX_STRIKE_DELAY);
    }

    #[test]
    fn every_loopback_address_is_one_source_and_others_their_own() {
        let guard = BearerGuard::default();
        let from = |ip: &str| {
            Some(std::net::SocketAddr::new(
                ip.parse().expect("an address"),
                40000,
            ))
        };
        for _ in 0..FREE_STRIKES {
            assert!(guard.strike(from("127.0.0.1")).is_zero());
        }
        assert!(!guard.strike(from("127.0.0.9")).is_zero());
        assert!(!guard.strike(from("::1")).is_zero());
        assert!(guard.strike(from("10.0.0.1")).is_zero());
    }

    /// `tools/list` for a pairing given every family, as sent (compact JSON), stays within its
    /// budget: what a client receives before its first call. Its tools are the catalog's
    /// `tools`, so the two budgets of what a model is shown, held on the catalog by
    /// lomi-protocol's tests/catalog.rs, are the listing's too.
    #[test]
    fn the_tool_listing_stays_within_its_budget() {
        const TOOLS_LIST: usize = 110_000;
        let listing =
            serde_json::to_value(ListToolsResult::with_all_items(mcp_tools())).expect("json");
        let catalog = lomi_protocol::catalog::catalog_json();
        assert_eq!(listing["tools"], catalog["tools"]);
        let bytes = serde_json::to_vec(&listing).expect("json").len();
        println!("tools/list for every family: {bytes} bytes");
        assert!(
            bytes <= TOOLS_LIST,
            "tools/list is {bytes} bytes, over its {TOOLS_LIST}-byte budget"
        );
    }
}
