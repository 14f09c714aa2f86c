//! Changes to a project (file tools, editor saves, Git, a browser capture saved into the
//! project) through the engine: keyed in their project, run one at a time under its permit.

use std::future::Future;
use std::path::PathBuf;

use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::{PairingId, ProjectId, RequestKey, RetryEpoch, Tool, ToolError, WorkspaceId};
use serde_json::Value;

use crate::{Broker, Confirmation, EffectContext, EffectOutcome, Mutation, Permit};

/// One change to a project as the engine sees it: its request identity, where it acts and
/// what its fingerprint binds.
pub struct ProjectChange<'a> {
    pub tool: Tool,
    pub workspace: &'a WorkspaceId,
    /// The project named; `None` is the workspace's only project.
    pub project: Option<&'a ProjectId>,
    pub retry_epoch: &'a RetryEpoch,
    pub request_key: &'a RequestKey,
    /// The tool's whole input, for the receipt's fingerprint.
    pub payload: Value,
    /// The revision the change is compared against, if any.
    pub revision: Option<String>,
}

/// An input of a tool that changes a project: it names the workspace, maybe the project, and
/// its request identity, with the same field names on every such tool.
pub trait ProjectRequest: serde::Serialize {
    fn place(&self) -> (&WorkspaceId, Option<&ProjectId>, &RetryEpoch, &RequestKey);
}

macro_rules! project_requests {
    ($($input:ty),* $(,)?) => {
        $(impl ProjectRequest for $input {
            fn place(&self) -> (&WorkspaceId, Option<&ProjectId>, &RetryEpoch, &RequestKey) {
                (&self.workspace_id, self.project_id.as_ref(), &self.retry_epoch, &self.request_key)
            }
        })*
    };
}

project_requests!(
    lomi_protocol::tools::files::FileWriteInput,
    lomi_protocol::tools::files::FileCreateInput,
    lomi_protocol::tools::files::FileRenameInput,
    lomi_protocol::tools::files::FileDeleteInput,
    lomi_protocol::tools::files::DirCreateInput,
    lomi_protocol::tools::git::GitStageInput,
    lomi_protocol::tools::git::GitCommitInput,
    lomi_protocol::tools::git::GitBranchInput,
);

impl<'a> ProjectChange<'a> {
    /// The change a project tool's input asks for, compared by `revision` when it names one.
    pub fn of(
        tool: Tool,
        input: &'a impl ProjectRequest,
        revision: Option<String>,
    ) -> Result<Self, ToolError> {
        let (workspace, project, retry_epoch, request_key) = input.place();
        Ok(ProjectChange {
            tool,
            workspace,
            project,
            retry_epoch,
            request_key,
            payload: crate::to_json(input)?,
            revision,
        })
    }
}

impl ProjectChange<'_> {
    /// The change as a mutation of `project` (the project it names, resolved).
    pub fn mutation(self, project: ProjectId) -> Mutation {
        Mutation {
            tool: self.tool,
            retry_epoch: self.retry_epoch.clone(),
            request_key: self.request_key.clone(),
            workspace_id: self.workspace.clone(),
            project_id: Some(project.clone()),
            payload: self.payload,
            generation: None,
            revision: self.revision,
            permit: Permit::Project(project),
        }
    }
}

impl Broker {
    /// The root of a project of a workspace, for the person (who may use every workspace):
    /// the named project, or the workspace's only one.
    pub fn project_root_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
    ) -> Result<(ProjectId, PathBuf), ToolError> {
        let workspaces = self.workspaces();
        let found = (workspaces.iter().find(|w| &w.id == workspace)).ok_or_else(|| {
            ToolError::not_found(format!(
                "no workspace {workspace}; see `lomi workspace list`"
            ))
        })?;
        let project = match project {
            Some(id) => found.projects.iter().find(|p| &p.id == id),
            None if found.projects.len() == 1 => found.projects.first(),
            None => {
                return Err(ToolError::invalid(
                    "this workspace has several projects; name one with projectId",
                ));
            }
        }
        .ok_or_else(|| ToolError::not_found("no such project in this workspace"))?;
        Ok((project.id.clone(), project.root.clone()))
    }

    /// Waits for a project's permit, the one every agent's change to the project holds while
    /// it runs: the person's own change (a save, a commit) holds it too, so it never
    /// interleaves with an agent's file or Git operation.
    pub async fn hold_project(&self, project: &ProjectId) -> tokio::sync::OwnedMutexGuard<()> {
        self.permit(&Permit::Project(project.clone()).key())
            .lock_owned()
            .await
    }

    /// The project a request is keyed by. A project the request names keys it as it is, so
    /// its root is looked up only after the prior receipt and a retry finds that receipt even
    /// if the project left the workspace since; a request that names none means the
    /// workspace's only project.
    pub fn key_project(
        &self,
        caller: &PairingId,
        workspace: &WorkspaceId,
        named: Option<&ProjectId>,
    ) -> Result<ProjectId, ToolError> {
        match named {
            Some(project) => Ok(project.clone()),
            None => Ok(self.project_root(caller, workspace, None)?.0),
        }
    }

    /// Runs a [`ProjectChange`] in the engine's order under the project's permit: `find`
    /// (after the prior receipt was looked for) gives what the effect needs besides the
    /// project's root; the effect runs with both. Its own revision checks belong in the
    /// effect, under the permit, so two changes made against the same revision cannot both
    /// win.
    pub async fn change_project<L, Find, Run, Fut>(
        &self,
        caller: &PairingId,
        change: ProjectChange<'_>,
        find: Find,
        effect: Run,
    ) -> Result<OperationView, ToolError>
    where
        L: Send + 'static,
        Find: Future<Output = Result<L, ToolError>>,
        Run: FnOnce(PathBuf, L, EffectContext) -> Fut + Send + 'static,
        Fut: Future<Output = EffectOutcome> + Send + 'static,
    {
        let project = self.key_project(caller, change.workspace, change.project)?;
        let workspace = change.workspace.clone();
        let named = project.clone();
        self.operate(
            caller,
            change.mutation(project),
            Confirmation::Policy,
            async move {
                let (_, root) = self.project_root(caller, &workspace, Some(&named))?;
                Ok((root, find.await?))
            },
            |_, _| Ok(()),
            move |(root, found), context| effect(root, found, context),
        )
        .await
    }
}
