//! The tools this crate serves: each one's handler, as the MCP dispatch calls it.

use lomi_protocol::definition::ToolCall;
use lomi_protocol::definition::{Serve, ToolDef};
use lomi_protocol::{PairingId, ToolError, tools};

impl Serve<tools::browser::BrowserCreateTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserCreateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.create(caller, input).await
    }
}

impl Serve<tools::browser::BrowserNavigateTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserNavigateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.navigate(caller, input).await
    }
}

impl Serve<tools::browser::BrowserSnapshotTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::browser::SnapshotView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserSnapshotTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.snapshot(caller, input).await
    }
}

impl Serve<tools::browser::BrowserWaitTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::browser::WaitView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserWaitTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.wait(caller, input).await
    }
}

impl Serve<tools::browser::BrowserClickTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserClickTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.click(caller, input).await
    }
}

impl Serve<tools::browser::BrowserTypeTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserTypeTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.type_text(caller, input).await
    }
}

impl Serve<tools::browser::BrowserPressTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserPressTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.press(caller, input).await
    }
}

impl Serve<tools::browser::BrowserSelectTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserSelectTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.select(caller, input).await
    }
}

impl Serve<tools::browser::BrowserHoverTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserHoverTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.hover(caller, input).await
    }
}

impl Serve<tools::browser::BrowserScrollTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserScrollTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.scroll(caller, input).await
    }
}

impl Serve<tools::browser::BrowserUploadTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserUploadTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.upload(caller, input).await
    }
}

impl Serve<tools::browser::BrowserDialogTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserDialogTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.dialog(caller, input).await
    }
}

impl Serve<tools::browser::BrowserTabListTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::browser::TabList;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserTabListTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.tab_list(caller, input).await
    }
}

impl Serve<tools::browser::BrowserTabOpenTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserTabOpenTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.tab(
            caller,
            (
                ToolCall::of::<lomi_protocol::tools::browser::BrowserTabOpenTool>(&input)?,
                crate::panels::TabAction::Open,
            ),
            input,
        )
        .await
    }
}

impl Serve<tools::browser::BrowserTabSwitchTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserTabSwitchTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.tab(
            caller,
            (
                ToolCall::of::<lomi_protocol::tools::browser::BrowserTabSwitchTool>(&input)?,
                crate::panels::TabAction::Switch,
            ),
            input,
        )
        .await
    }
}

impl Serve<tools::browser::BrowserTabCloseTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserTabCloseTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.tab(
            caller,
            (
                ToolCall::of::<lomi_protocol::tools::browser::BrowserTabCloseTool>(&input)?,
                crate::panels::TabAction::Close,
            ),
            input,
        )
        .await
    }
}

impl Serve<tools::browser::BrowserConsoleTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::browser::ConsolePage;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserConsoleTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.console(caller, &input)
    }
}

impl Serve<tools::browser::BrowserNetworkTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::browser::NetworkPage;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserNetworkTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.network(caller, &input)
    }
}

impl Serve<tools::browser::BrowserEvaluateTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserEvaluateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.evaluate(caller, input).await
    }
}

impl Serve<tools::browser::BrowserCaptureTool> for crate::panels::BrowserPanels {
    type Answer = (lomi_protocol::tools::browser::CaptureView, Vec<u8>);

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserCaptureTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.capture(caller, input).await
    }
}

impl Serve<tools::browser::BrowserDragTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserDragTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.drag(caller, input).await
    }
}

impl Serve<tools::browser::BrowserFillTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserFillTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.fill(caller, input).await
    }
}

impl Serve<tools::browser::BrowserEmulateTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserEmulateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.emulate(caller, input).await
    }
}

impl Serve<tools::browser::BrowserPdfTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserPdfTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.pdf(caller, input).await
    }
}

impl Serve<tools::browser::BrowserNetworkBodyTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::browser::NetworkBody;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserNetworkBodyTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.network_body(caller, input).await
    }
}

impl Serve<tools::browser::BrowserCaptureSetTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserCaptureSetTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.capture_set(caller, input).await
    }
}

impl Serve<tools::browser::BrowserCloseTool> for crate::panels::BrowserPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::browser::BrowserCloseTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.close(caller, input).await
    }
}
