//! The tools this crate serves: each one's handler, as the MCP dispatch calls it.

use lomi_protocol::definition::{Serve, ToolDef};
use lomi_protocol::{PairingId, ToolError, tools};

impl Serve<tools::terminal::TerminalCreateTool> for crate::panels::TerminalPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::terminal::TerminalCreateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.create(caller, input).await
    }
}

impl Serve<tools::terminal::TerminalInputTool> for crate::panels::TerminalPanels {
    type Answer = lomi_protocol::tools::terminal::InputAccepted;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::terminal::TerminalInputTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.input(caller, input).await
    }
}

impl Serve<tools::terminal::TerminalReadTool> for crate::panels::TerminalPanels {
    type Answer = lomi_protocol::tools::terminal::TerminalReadView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::terminal::TerminalReadTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.read(caller, input).await
    }
}

impl Serve<tools::terminal::TerminalInterruptTool> for crate::panels::TerminalPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::terminal::TerminalInterruptTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.interrupt(caller, input).await
    }
}

impl Serve<tools::terminal::TerminalCloseTool> for crate::panels::TerminalPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::terminal::TerminalCloseTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.close(caller, input).await
    }
}
