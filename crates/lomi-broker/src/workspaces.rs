//! Workspaces: the listings agents read, the workspace mutation (rename, layout), the
//! person's own workspace and project commands, and each workspace's browser profile.

use std::path::{Path, PathBuf};

use lomi_protocol::tools::layout::{LayoutNode, MAX_LAYOUT_DEPTH};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::session::{
    LayoutChange, PanelList, PanelListInput, WorkspaceChange, WorkspaceList, WorkspaceUpdateInput,
    WorkspaceUpdateResult, WorkspaceView,
};
use lomi_protocol::{
    EffectState, ErrorCode, PairingId, ProjectId, RetryEpoch, ToolError, WorkspaceId,
};

use crate::Broker;
use crate::domain::{Project, Workspace, check_name};
use crate::engine::{Confirmation, EffectOutcome, Mutation, Permit};

/// The folder in the data dir that holds the persistent browser profiles, one per workspace.
pub const BROWSER_PROFILES_DIR: &str = "browser-profiles";

impl Broker {
    pub fn workspace_list(&self, caller: &PairingId) -> Result<WorkspaceList, ToolError> {
        let grants = self.authorize(caller)?;
        let domain = self.domain();
        let workspaces = domain
            .workspaces
            .iter()
            .filter(|w| grants.contains(&w.id))
            .map(Workspace::view)
            .collect();
        Ok(WorkspaceList { workspaces })
    }

    pub fn panel_list(
        &self,
        caller: &PairingId,
        input: &PanelListInput,
    ) -> Result<PanelList, ToolError> {
        let workspace = self.granted_workspace(caller, &input.workspace_id)?;
        let panels = self.workspace_panels(&workspace.id, &workspace.panel_order());
        Ok(PanelList {
            workspace_id: workspace.id,
            domain_revision: workspace.revision,
            panels,
        })
    }

    /// `lomi_workspace_update`: rename or reorder, compared and swapped by revision.
    pub async fn workspace_update(
        &self,
        caller: &PairingId,
        input: WorkspaceUpdateInput,
    ) -> Result<OperationView, ToolError> {
        self.granted_workspace(caller, &input.workspace_id)?;
        match &input.change {
            WorkspaceChange::Rename(rename) => {
                check_name("name", &rename.name).map_err(ToolError::invalid)?
            }
            WorkspaceChange::Layout(LayoutChange::PanelOrder(order)) => {
                let mut seen = std::collections::HashSet::new();
                if let Some(dup) = order.iter().find(|p| !seen.insert(*p)) {
                    return Err(ToolError::invalid(format!("panelOrder names {dup} twice")));
                }
            }
            WorkspaceChange::Layout(LayoutChange::Root(root)) => {
                if root.depth() > MAX_LAYOUT_DEPTH {
                    return Err(ToolError::invalid(format!(
                        "layout nests {} levels deep; at most {MAX_LAYOUT_DEPTH}",
                        root.depth()
                    )));
                }
            }
        }
        let workspace_id = input.workspace_id.clone();
        let expected = input.expected_revision;
        let mutation = Mutation {
            revision: Some(expected.to_string()),
            ..Mutation::of::<lomi_protocol::tools::session::WorkspaceUpdateTool>(
                (&input.retry_epoch, &input.request_key),
                &input,
                workspace_id.clone(),
                Permit::Workspace(workspace_id.clone()),
            )?
        };
        let check_id = workspace_id.clone();
        let layout = match &input.change {
            WorkspaceChange::Layout(layout) => Some(layout.clone()),
            WorkspaceChange::Rename(_) => None,
        };
        let check = move |broker: &Broker, (): &()| {
            broker.check_revision(&check_id, expected)?;
            match &layout {
                Some(layout) => broker.check_layout(&check_id, layout).map(|_| ()),
                None => Ok(()),
            }
        };
        let change = input.change;
        self.operate(
            caller,
            mutation,
            Confirmation::Policy,
            async { Ok(()) },
            check,
            move |(), context| async move {
                let broker = context.broker;
                let applied = broker.update_domain(|domain| {
                    let workspace = domain.workspace_at(&workspace_id, Some(expected))?;
                    match &change {
                        WorkspaceChange::Rename(rename) => workspace.name = rename.name.clone(),
                        WorkspaceChange::Layout(layout) => {
                            workspace.layout = layout_for(workspace, layout)?;
                        }
                    }
                    workspace.revision = workspace.revision.next();
                    Ok(workspace.view())
                });
                match applied {
                    Ok(workspace) => EffectOutcome::succeeded(&WorkspaceUpdateResult { workspace }),
                    Err(error) => EffectOutcome::Failed {
                        effect: EffectState::None,
                        error,
                    },
                }
            },
        )
        .await
    }

    /// The project of the retry epoch's workspace, when it has exactly one.
    pub(crate) fn only_project(&self, caller: &PairingId, epoch: &RetryEpoch) -> Option<ProjectId> {
        let record = self.inner.store.retry_epoch(epoch).ok().flatten()?;
        if &record.pairing_id != caller {
            return None;
        }
        let domain = self.domain();
        let workspace = domain
            .workspaces
            .iter()
            .find(|w| w.id == record.workspace_id)?;
        match workspace.projects.as_slice() {
            [only] => Some(only.id.clone()),
            _ => None,
        }
    }

    /// The layout `change` makes of the workspace as it is now, or INVALID_ARGUMENT with what
    /// to fix.
    fn check_layout(
        &self,
        id: &WorkspaceId,
        change: &LayoutChange,
    ) -> Result<Option<LayoutNode>, ToolError> {
        let domain = self.domain();
        let workspace = domain
            .workspaces
            .iter()
            .find(|w| &w.id == id)
            .ok_or_else(|| Self::not_granted(id))?;
        layout_for(workspace, change)
    }

    /// The person rearranged a workspace's panels in the window: compared with the revision
    /// they arranged from, checked like an agent's change, and the revision moves.
    pub fn layout_set_by_person(
        &self,
        id: &WorkspaceId,
        expected: lomi_protocol::DomainRevision,
        root: LayoutNode,
    ) -> Result<WorkspaceView, ToolError> {
        self.update_domain(|domain| {
            let workspace = person_workspace(domain, id)?;
            if workspace.revision != expected {
                return Err(revision_mismatch(workspace));
            }
            workspace.layout = layout_for(workspace, &LayoutChange::Root(root))?;
            workspace.revision = workspace.revision.next();
            Ok(workspace.view())
        })
    }

    /// REVISION_MISMATCH (with the current revision) unless the workspace is at `expected`.
    pub fn check_revision(
        &self,
        id: &WorkspaceId,
        expected: lomi_protocol::DomainRevision,
    ) -> Result<(), ToolError> {
        let domain = self.domain();
        match domain.workspaces.iter().find(|w| &w.id == id) {
            Some(workspace) if workspace.revision != expected => Err(revision_mismatch(workspace)),
            Some(_) => Ok(()),
            None => Err(Self::not_granted(id)),
        }
    }

    // ---- the person's commands ----

    /// Adds a workspace with one project directory.
    pub fn workspace_add(&self, name: &str, project_root: &Path) -> Result<Workspace, ToolError> {
        check_name("the workspace name", name).map_err(ToolError::invalid)?;
        let root = project_root
            .canonicalize()
            .map_err(|e| ToolError::invalid(format!("project {}: {e}", project_root.display())))?;
        if !root.is_dir() {
            return Err(ToolError::invalid(format!(
                "project {} is not a directory",
                root.display()
            )));
        }
        let project_name = root.file_name().map_or_else(
            || root.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let workspace = Workspace {
            id: WorkspaceId::from_random(self.inner.entropy.bytes16()),
            name: name.to_owned(),
            revision: lomi_protocol::DomainRevision(1),
            projects: vec![Project {
                id: ProjectId::from_random(self.inner.entropy.bytes16()),
                name: project_name,
                root,
            }],
            layout: None,
            persistent_browser_profile: false,
        };
        let mut added = workspace.clone();
        self.update_domain(|domain| {
            // The person's default for new workspaces (Settings → browser).
            let mut workspace = workspace;
            workspace.persistent_browser_profile =
                domain.settings.browser.persistent_profile_default;
            added.persistent_browser_profile = workspace.persistent_browser_profile;
            domain.workspaces.push(workspace);
            Ok(())
        })?;
        Ok(added)
    }

    pub fn workspaces(&self) -> Vec<Workspace> {
        self.domain().workspaces.clone()
    }

    /// Adds a project directory to a workspace (a change of its domain: the revision goes up).
    pub fn project_add(
        &self,
        workspace: &WorkspaceId,
        project_root: &Path,
    ) -> Result<Project, ToolError> {
        let root = project_root
            .canonicalize()
            .map_err(|e| ToolError::invalid(format!("project {}: {e}", project_root.display())))?;
        if !root.is_dir() {
            return Err(ToolError::invalid(format!(
                "project {} is not a directory",
                root.display()
            )));
        }
        let project = Project {
            id: ProjectId::from_random(self.inner.entropy.bytes16()),
            name: root.file_name().map_or_else(
                || root.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            root,
        };
        let added = project.clone();
        self.update_domain(|domain| {
            let target = person_workspace(domain, workspace)?;
            if target.projects.iter().any(|p| p.root == project.root) {
                return Err(ToolError::invalid(format!(
                    "{} is already a project of workspace {}",
                    project.root.display(),
                    target.name
                )));
            }
            target.projects.push(project);
            target.revision = target.revision.next();
            Ok(())
        })?;
        Ok(added)
    }

    /// Removes a project from its workspace. Refused while a panel of that project is open,
    /// and for the last project (remove the workspace instead).
    pub fn project_remove(
        &self,
        workspace: &WorkspaceId,
        project: &ProjectId,
    ) -> Result<(), ToolError> {
        let open = self
            .panels_for_person(workspace)
            .iter()
            .any(|panel| panel.project_id.as_ref() == Some(project));
        self.update_domain(|domain| {
            let target = person_workspace(domain, workspace)?;
            if !target.projects.iter().any(|p| &p.id == project) {
                return Err(ToolError::not_found(format!(
                    "workspace {} has no project {project}",
                    target.name
                )));
            }
            if target.projects.len() == 1 {
                return Err(ToolError::invalid(format!(
                    "{project} is the only project of workspace {}; remove the workspace instead",
                    target.name
                )));
            }
            if open {
                return Err(ToolError::invalid(format!(
                    "a panel of project {project} is open; close it first"
                )));
            }
            target.projects.retain(|p| &p.id != project);
            target.revision = target.revision.next();
            Ok(())
        })
    }

    /// Removes a workspace and every grant of it. Refused while it has open panels.
    pub fn workspace_remove(&self, workspace: &WorkspaceId) -> Result<(), ToolError> {
        self.update_domain(|domain| {
            let target = person_workspace(domain, workspace)?;
            if target.layout.is_some() {
                return Err(ToolError::invalid(format!(
                    "workspace {} has {} open panel(s); close them first",
                    target.name,
                    target.panel_order().len()
                )));
            }
            domain.workspaces.retain(|w| &w.id != workspace);
            for pairing in &mut domain.pairings {
                pairing.grants.retain(|g| g != workspace);
            }
            Ok(())
        })
    }

    /// Where a workspace's persistent browser profile lives (whether or not it is chosen).
    pub fn browser_profile_dir(&self, workspace: &WorkspaceId) -> PathBuf {
        self.data_dir()
            .join(BROWSER_PROFILES_DIR)
            .join(workspace.to_string())
    }

    /// The persistent browser profile of a workspace, when the person chose one.
    pub fn persistent_browser_profile(&self, workspace: &WorkspaceId) -> Option<PathBuf> {
        let chosen = self
            .domain()
            .workspaces
            .iter()
            .any(|w| &w.id == workspace && w.persistent_browser_profile);
        chosen.then(|| self.browser_profile_dir(workspace))
    }

    /// The person's choice: the workspace's browser panels created from now on keep a
    /// persistent profile (`true`) or get a fresh one each (`false`). Running browsers keep
    /// the profile they started with; the folder is never removed here.
    pub fn set_persistent_browser_profile(
        &self,
        workspace: &WorkspaceId,
        persistent: bool,
    ) -> Result<(), ToolError> {
        self.update_domain(|domain| {
            person_workspace(domain, workspace)?.persistent_browser_profile = persistent;
            Ok(())
        })
    }
}

/// The layout a [`LayoutChange`] makes of `workspace`: a new arrangement of exactly its open
/// panels, or its arrangement refilled in a new panel order.
fn layout_for(
    workspace: &crate::domain::Workspace,
    change: &LayoutChange,
) -> Result<Option<LayoutNode>, ToolError> {
    let open = workspace.panel_order();
    match change {
        LayoutChange::Root(root) => {
            root.check(&open).map_err(ToolError::invalid)?;
            Ok(Some(root.clone()))
        }
        LayoutChange::PanelOrder(order) => {
            let (mut wanted, mut have) = (order.clone(), open);
            wanted.sort();
            have.sort();
            if wanted != have {
                return Err(ToolError::invalid(
                    "panelOrder must name every panel of the workspace exactly once",
                ));
            }
            Ok(workspace
                .layout
                .as_ref()
                .map(|layout| layout.refilled(&mut order.iter().cloned())))
        }
    }
}

pub(crate) fn revision_mismatch(workspace: &Workspace) -> ToolError {
    ToolError::new(
        ErrorCode::RevisionMismatch,
        format!(
            "workspace {} is at revision {}; re-read it (lomi_workspace_list) and decide again",
            workspace.id, workspace.revision
        ),
    )
    .with_details(serde_json::json!({ "currentRevision": workspace.revision }))
}

fn person_workspace<'a>(
    domain: &'a mut crate::Domain,
    id: &WorkspaceId,
) -> Result<&'a mut Workspace, ToolError> {
    domain
        .workspaces
        .iter_mut()
        .find(|w| &w.id == id)
        .ok_or_else(|| {
            ToolError::not_found(format!("no workspace {id}; see `lomi workspace list`"))
        })
}
