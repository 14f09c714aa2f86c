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
    /// An HTTP session: a bearer token if the request carries one, else a pairing bound to
    /// this MCP session, created on first use.
    HttpSession,
}

/// One MCP session's handler.
#[derive(Clone)]
pub struct LomiServer {
    lomi: Lomi,
    broker: Broker,
    tools: Arc<Vec<Tool>>,
    session: Arc<SessionPairing>,
    fixed: Option<PairingId>,
}

/// The pairing an unauthenticated HTTP session got; forgotten when the session ends.
struct SessionPairing {
    broker: Broker,
    pairing: Mutex<Option<PairingId>>,
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
        let fixed = match caller {
            Caller::Known(id) => Some(id),
            Caller::HttpSession => None,
        };
        LomiServer {
            session: Arc::new(SessionPairing {
                broker: broker.clone(),
                pairing: Mutex::new(None),
            }),
            lomi,
            broker,
            tools,
            fixed,
        }
    }

    /// The calling pairing. A bearer token Lomi never issued is refused rather than turned
    /// into a new pending pairing, so a client with a mistyped token learns it at once.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<PairingId, ToolError> {
        if let Some(id) = &self.fixed {
            return Ok(id.clone());
        }
        if let Some(token) = bearer_token(context) {
            return self.broker.pairing_by_secret(&token).ok_or_else(|| {
                ToolError::new(
                    ErrorCode::PairingRequired,
                    "the bearer token is not one Lomi issued; ask the person for a token from `lomi pairing create`, or connect without one and have the person approve the session",
                )
            });
        }
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

fn bearer_token(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<http::request::Parts>()?;
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

const INSTRUCTIONS: &str = "Lomi lets you work in the person's workspaces. Call lomi_pairing_status first: \
until the person approves this client in Lomi, other tools answer PAIRING_REQUIRED. Then \
lomi_workspace_list, lomi_connect (keep its retryEpoch), and pass retryEpoch plus your own \
requestKey to every mutation. A mutation returns an operation: follow it with \
lomi_operation_get until it settles, and read state and effectState before trusting an effect.";

impl ServerHandler for LomiServer {
    fn get_info(&self) -> InitializeResult {
        let info = json!({
            "protocolVersion": ProtocolVersion::V_2025_11_25,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "lomi", "title": "Lomi", "version": env!("CARGO_PKG_VERSION")},
            "instructions": INSTRUCTIONS,
        });
        serde_json::from_value(info).unwrap_or_else(|error| {
            tracing::error!("server info: {error}");
            InitializeResult::new(ServerCapabilities::default())
        })
    }

    /// Sessions carry pairings of clients without a token, so Lomi speaks the protocol
    /// versions that have sessions (2025-11-25 and older).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools.iter().any(|tool| tool.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "there is no tool {:?}; see tools/list or `lomi catalog`",
                    request.name
                ),
                None,
            ));
        }
        let answer = match self.caller(&context) {
            Ok(caller) => {
                let arguments = request.arguments.map(serde_json::Value::Object);
                crate::tools::call(&self.lomi, &caller, &request.name, arguments).await
            }
            Err(error) => crate::tools::refused(error),
        };
        serde_json::from_value::<CallToolResult>(answer.into_result())
            .map(CallToolResponse::from)
            .map_err(|error| {
                ErrorData::internal_error(format!("could not encode the result: {error}"), None)
            })
    }
}
