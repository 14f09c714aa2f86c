//! The tools this crate serves: each one's handler, as the MCP dispatch calls it.

use lomi_protocol::definition::{Serve, ToolDef};
use lomi_protocol::{PairingId, ToolError, tools};

impl Serve<tools::chat::ChatSendTool> for crate::ChatSends {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::chat::ChatSendTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.send(caller, input).await
    }
}
