//! The tools this crate serves: each one's handler, as the MCP dispatch calls it.

use lomi_protocol::definition::{Serve, ToolDef};
use lomi_protocol::{PairingId, ToolError, tools};

impl Serve<tools::session::PairingStatusTool> for crate::Broker {
    type Answer = lomi_protocol::tools::session::PairingStatus;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::session::PairingStatusTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        let _ = input;
        self.pairing_status(caller)
    }
}

impl Serve<tools::session::WorkspaceListTool> for crate::Broker {
    type Answer = lomi_protocol::tools::session::WorkspaceList;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::session::WorkspaceListTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        let _ = input;
        self.workspace_list(caller)
    }
}

impl Serve<tools::session::PanelListTool> for crate::Broker {
    type Answer = lomi_protocol::tools::session::PanelList;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::session::PanelListTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.panel_list(caller, &input)
    }
}

impl Serve<tools::session::ConnectTool> for crate::Broker {
    type Answer = lomi_protocol::tools::session::Connection;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::session::ConnectTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.connect(caller, &input)
    }
}

impl Serve<tools::session::WorkspaceUpdateTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::session::WorkspaceUpdateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.workspace_update(caller, input).await
    }
}

impl Serve<tools::operations::OperationGetTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::operations::OperationGetTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.operation_get(caller, &input)
    }
}

impl Serve<tools::operations::OperationCancelTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::operations::OperationCancelTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.operation_cancel(caller, &input.operation_id).await
    }
}

impl Serve<tools::operations::EventsReadTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::EventPage;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::operations::EventsReadTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.events_read(caller, &input)
    }
}

impl Serve<tools::terminal::LeaseAcquireTool> for crate::Broker {
    type Answer = lomi_protocol::tools::terminal::LeaseView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::terminal::LeaseAcquireTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.lease_acquire(caller, &input.panel_id, &input.generation)
    }
}

impl Serve<tools::terminal::LeaseReleaseTool> for crate::Broker {
    type Answer = lomi_protocol::tools::terminal::LeaseReleased;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::terminal::LeaseReleaseTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.lease_release(caller, &input.lease_id)
    }
}

impl Serve<tools::operations::StoreStatusTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::StoreStatusView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::operations::StoreStatusTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        let _ = input;
        self.store_status(caller)
    }
}

impl Serve<tools::settings::SettingsGetTool> for crate::Broker {
    type Answer = lomi_protocol::tools::settings::SettingsView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::settings::SettingsGetTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.settings_get(caller, &input)
    }
}

impl Serve<tools::settings::SettingsUpdateTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::settings::SettingsUpdateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.settings_update(caller, input).await
    }
}

impl Serve<tools::chat::ChatListTool> for crate::Broker {
    type Answer = lomi_protocol::tools::chat::ChatList;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::chat::ChatListTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.chat_list(caller, &input)
    }
}

impl Serve<tools::chat::ChatGetTool> for crate::Broker {
    type Answer = lomi_protocol::tools::chat::ConversationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::chat::ChatGetTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.chat_get(Some(caller), &input)
    }
}

impl Serve<tools::chat::ChatCreateTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::chat::ChatCreateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.chat_create(caller, input).await
    }
}

impl Serve<tools::chat::ChatDraftUpdateTool> for crate::Broker {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::chat::ChatDraftUpdateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.chat_draft_update(caller, input).await
    }
}
