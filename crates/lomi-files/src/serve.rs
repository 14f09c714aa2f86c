//! The tools this crate serves: each one's handler, as the MCP dispatch calls it.

use lomi_protocol::definition::{Serve, ToolDef};
use lomi_protocol::{PairingId, ToolError, tools};

impl Serve<tools::files::FileReadTool> for crate::tools::ProjectFiles {
    type Answer = lomi_protocol::tools::files::FileReadView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::files::FileReadTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.read(caller, &input)
    }
}

impl Serve<tools::files::FileWriteTool> for crate::tools::ProjectFiles {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::files::FileWriteTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.write(caller, input).await
    }
}

impl Serve<tools::files::FileCreateTool> for crate::tools::ProjectFiles {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::files::FileCreateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.create(caller, input).await
    }
}

impl Serve<tools::files::FileRenameTool> for crate::tools::ProjectFiles {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::files::FileRenameTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.rename(caller, input).await
    }
}

impl Serve<tools::files::FileDeleteTool> for crate::tools::ProjectFiles {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::files::FileDeleteTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.delete(caller, input).await
    }
}

impl Serve<tools::files::DirCreateTool> for crate::tools::ProjectFiles {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::files::DirCreateTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.create_dir(caller, input).await
    }
}

impl Serve<tools::files::DirListTool> for crate::tools::ProjectFiles {
    type Answer = lomi_protocol::tools::files::DirListView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::files::DirListTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.list(caller, &input)
    }
}

impl Serve<tools::editor::EditorOpenTool> for crate::editor::ProjectEditor {
    type Answer = lomi_protocol::tools::editor::EditorDocumentView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::editor::EditorOpenTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.open(caller, input).await
    }
}

impl Serve<tools::editor::EditorEditTool> for crate::editor::ProjectEditor {
    type Answer = lomi_protocol::tools::editor::EditorEdited;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::editor::EditorEditTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.edit(caller, &input)
    }
}

impl Serve<tools::editor::EditorSaveTool> for crate::editor::ProjectEditor {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::editor::EditorSaveTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.save(caller, input).await
    }
}

impl Serve<tools::editor::EditorCloseTool> for crate::editor::ProjectEditor {
    type Answer = lomi_protocol::tools::editor::EditorClosed;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::editor::EditorCloseTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.close(caller, &input)
    }
}

impl Serve<tools::editor::WorkspaceCloseTool> for crate::editor::ProjectEditor {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::editor::WorkspaceCloseTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.workspace_close(caller, input).await
    }
}

impl Serve<tools::git::GitStatusTool> for crate::git::ProjectGit {
    type Answer = lomi_protocol::tools::git::GitStatusView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::git::GitStatusTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.status(caller, &input).await
    }
}

impl Serve<tools::git::GitDiffTool> for crate::git::ProjectGit {
    type Answer = lomi_protocol::tools::git::GitDiffView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::git::GitDiffTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.diff(caller, &input).await
    }
}

impl Serve<tools::git::GitStageTool> for crate::git::ProjectGit {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::git::GitStageTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.stage(caller, input).await
    }
}

impl Serve<tools::git::GitCommitTool> for crate::git::ProjectGit {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::git::GitCommitTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.commit(caller, input).await
    }
}

impl Serve<tools::git::GitBranchTool> for crate::git::ProjectGit {
    type Answer = lomi_protocol::tools::operations::OperationView;

    async fn serve(
        &self,
        caller: &PairingId,
        input: <tools::git::GitBranchTool as ToolDef>::Input,
    ) -> Result<Self::Answer, ToolError> {
        self.branch(caller, input).await
    }
}
