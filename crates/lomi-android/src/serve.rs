//! The tools this crate serves: each one's handler, as the MCP dispatch calls it.

use lomi_protocol::definition::{Serve, ToolDef};
use lomi_protocol::{PairingId, ToolError, tools};

impl Serve<tools::android::AndroidDevicesTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::android::AndroidDeviceList;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidDevicesTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.devices(caller, &input).await
    }
}

impl Serve<tools::android::AndroidAttachTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidAttachTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.attach(caller, input).await
    }
}

impl Serve<tools::android::AndroidDetachTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidDetachTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.detach(caller, input).await
    }
}

impl Serve<tools::android::AndroidLaunchTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidLaunchTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.launch(caller, input).await
    }
}

impl Serve<tools::android::AndroidInputTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::android::AndroidInputAccepted;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidInputTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.input(caller, input).await
    }
}

impl Serve<tools::android::AndroidUiSnapshotTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::android::AndroidUiSnapshotView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidUiSnapshotTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.ui_snapshot(caller, input).await
    }
}

impl Serve<tools::android::AndroidCaptureTool> for crate::panels::AndroidPanels {
    type Answer = (lomi_protocol::tools::android::AndroidCaptureView, Vec<u8>);

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidCaptureTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.capture(caller, input).await
    }
}

impl Serve<tools::android::AndroidShellTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidShellTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.shell(caller, input).await
    }
}

impl Serve<tools::android::AndroidPushTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidPushTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.push(caller, input).await
    }
}

impl Serve<tools::android::AndroidPullTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidPullTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.pull(caller, input).await
    }
}

impl Serve<tools::android::AndroidInstallTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidInstallTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.install(caller, input).await
    }
}

impl Serve<tools::android::AndroidUninstallTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidUninstallTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.uninstall(caller, input).await
    }
}

impl Serve<tools::android::AndroidAppsTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::android::AndroidAppsView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidAppsTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.apps(caller, input).await
    }
}

impl Serve<tools::android::AndroidStopTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidStopTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.stop(caller, input).await
    }
}

impl Serve<tools::android::AndroidOpenUrlTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidOpenUrlTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.open_url(caller, input).await
    }
}

impl Serve<tools::android::AndroidLogcatTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::android::AndroidLogcatView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidLogcatTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.logcat(caller, input).await
    }
}

impl Serve<tools::android::AndroidOrientationTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::android::AndroidOrientationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidOrientationTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.orientation(caller, input).await
    }
}

impl Serve<tools::android::AndroidRotateTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidRotateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.rotate(caller, input).await
    }
}

impl Serve<tools::android::AndroidCaptureSetTool> for crate::panels::AndroidPanels {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::android::AndroidCaptureSetTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.capture_set(caller, input).await
    }
}
