//! What agents and the person ask of the broker: listings, connections and retry epochs,
//! the workspace mutation, receipts, cancellation, the event feed, store status, and the
//! person's own workspace and operation commands.

use std::path::{Path, PathBuf};

use lomi_protocol::tools::layout::{LayoutNode, MAX_LAYOUT_DEPTH};
use lomi_protocol::tools::operations::{
    EventPage, EventsReadInput, OperationEvent, OperationGetInput, OperationView, StoreStatusView,
    StoreWarningLevel,
};
use lomi_protocol::tools::session::{
    ConnectInput, Connection, LayoutChange, PanelList, PanelListInput, WorkspaceChange,
    WorkspaceList, WorkspaceUpdateInput, WorkspaceUpdateResult, WorkspaceView,
};
use lomi_protocol::{
    ConnectionId, EffectState, ErrorCode, OperationId, PairingId, ProjectId, RetryEpoch, Tool,
    ToolError, WorkspaceId,
};
use lomi_store::{ReceiptKey, RetryEpochRecord};

use crate::domain::{Project, Workspace, check_name};
use crate::engine::{Confirmation, EffectOutcome, Mutation, Permit, view};
use crate::{Broker, RETRY_EPOCH_LIFETIME, store_error, waiting_on_disk};

/// Default and largest page of `lomi_events_read`.
const DEFAULT_EVENTS: u32 = 100;
const MAX_EVENTS: u32 = 500;
/// The folder in the data dir that holds the persistent browser profiles, one per workspace.
pub const BROWSER_PROFILES_DIR: &str = "browser-profiles";

impl Broker {
    fn not_granted(workspace: &WorkspaceId) -> ToolError {
        ToolError::not_found(format!(
            "no workspace {workspace} among those granted to this client"
        ))
    }

    /// The granted workspace, or NOT_FOUND (never saying whether it exists).
    pub(crate) fn granted_workspace(
        &self,
        caller: &PairingId,
        id: &WorkspaceId,
    ) -> Result<Workspace, ToolError> {
        let grants = self.authorize(caller)?;
        if !grants.contains(id) {
            return Err(Self::not_granted(id));
        }
        self.domain()
            .workspaces
            .iter()
            .find(|w| &w.id == id)
            .cloned()
            .ok_or_else(|| Self::not_granted(id))
    }

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

    /// `lomi_connect`: a new connection and its retry epoch, durably recorded.
    pub fn connect(
        &self,
        caller: &PairingId,
        input: &ConnectInput,
    ) -> Result<Connection, ToolError> {
        let workspace = self.granted_workspace(caller, &input.workspace_id)?;
        let now = self.now();
        let lifetime = i64::try_from(RETRY_EPOCH_LIFETIME.as_millis()).unwrap_or(i64::MAX);
        let record = RetryEpochRecord {
            retry_epoch: RetryEpoch::from_random(self.inner.entropy.bytes16()),
            pairing_id: caller.clone(),
            broker_instance_id: self.inner.instance.clone(),
            connection_id: ConnectionId::from_random(self.inner.entropy.bytes16()),
            workspace_id: workspace.id.clone(),
            created_at: now,
            expires_at: now.plus_millis(lifetime),
        };
        waiting_on_disk(|| self.inner.store.create_retry_epoch(&record)).map_err(store_error)?;
        Ok(Connection {
            workspace_id: workspace.id.clone(),
            retry_epoch: record.retry_epoch,
            expires_at: record.expires_at,
            broker_instance_id: self.inner.instance.clone(),
            domain_revision: workspace.revision,
            projects: workspace.projects.iter().map(Project::view).collect(),
        })
    }

    /// Checks that a retry epoch belongs to the caller, this broker instance and (if given)
    /// the workspace, and has not expired.
    pub(crate) fn check_retry_epoch(
        &self,
        caller: &PairingId,
        epoch: &RetryEpoch,
        workspace: Option<&WorkspaceId>,
    ) -> Result<RetryEpochRecord, ToolError> {
        self.authorize(caller)?;
        let invalid = || {
            ToolError::new(
                ErrorCode::RetryEpochInvalid,
                format!(
                    "retry epoch {epoch} is not valid for this connection of this Lomi instance; call lomi_connect for a fresh one"
                ),
            )
        };
        // A retired epoch is refused before anything else (its row may already be gone). The
        // store checks again inside the reserve transaction, so a retirement that lands after
        // this check still refuses the reservation.
        if let Some(retired) = self.inner.store.retirement(epoch).map_err(store_error)? {
            if retired.pairing_id.as_ref() != Some(caller) {
                return Err(invalid());
            }
            return Err(store_error(lomi_store::StoreError::RetryEpochRetired {
                retry_epoch: epoch.clone(),
                retired_at: retired.retired_at,
            }));
        }
        let record = self
            .inner
            .store
            .retry_epoch(epoch)
            .map_err(store_error)?
            .ok_or_else(invalid)?;
        if &record.pairing_id != caller || record.broker_instance_id != self.inner.instance {
            return Err(invalid());
        }
        if let Some(workspace) = workspace
            && &record.workspace_id != workspace
        {
            return Err(ToolError::invalid(format!(
                "retry epoch {epoch} belongs to workspace {}, not {workspace}; call lomi_connect for that workspace",
                record.workspace_id
            )));
        }
        if record.expires_at <= self.now() {
            return Err(ToolError::new(
                ErrorCode::RetryEpochExpired,
                format!(
                    "retry epoch {epoch} expired at {}; call lomi_connect for a fresh one",
                    record.expires_at
                ),
            ));
        }
        // The grant may have been narrowed since the connection was made.
        self.granted_workspace(caller, &record.workspace_id)?;
        Ok(record)
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

    /// What a mutating tool answers: the operation once settled, or as it stands after the
    /// bounded wait. The pairing may have been revoked while the call waited.
    pub async fn answer(
        &self,
        caller: &PairingId,
        id: &OperationId,
    ) -> Result<OperationView, ToolError> {
        self.wait_settled(id).await;
        self.authorize(caller)?;
        self.operation_view(id)
    }

    /// The workspace a valid retry epoch of the caller belongs to.
    pub fn retry_epoch_workspace(
        &self,
        caller: &PairingId,
        epoch: &RetryEpoch,
    ) -> Result<WorkspaceId, ToolError> {
        self.check_retry_epoch(caller, epoch, None)
            .map(|record| record.workspace_id)
    }

    /// The project of the retry epoch's workspace, when it has exactly one.
    fn only_project(&self, caller: &PairingId, epoch: &RetryEpoch) -> Option<ProjectId> {
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

    fn operation_view(&self, id: &OperationId) -> Result<OperationView, ToolError> {
        let receipt = self
            .inner
            .store
            .get(id)
            .map_err(store_error)?
            .ok_or_else(|| {
                ToolError::internal(format!("operation {id} vanished from the store"))
            })?;
        Ok(self.live_view(&receipt))
    }

    /// A receipt's view, with the result so far of a running operation that reports progress.
    fn live_view(&self, receipt: &lomi_store::Receipt) -> OperationView {
        let mut view = view(receipt);
        if view.result.is_none()
            && let Some(live) = self.live().get(&receipt.operation_id)
        {
            view.result = live.progress.clone();
        }
        view
    }

    /// A receipt the caller may see: its own pairing, through a retry epoch that is still
    /// valid on this instance. Anything else reads as NOT_FOUND.
    fn visible_receipt(
        &self,
        caller: &PairingId,
        input: &OperationGetInput,
    ) -> Result<lomi_store::Receipt, ToolError> {
        self.authorize(caller)?;
        let receipt = match input {
            OperationGetInput::ById(id) => self.inner.store.get(id).map_err(store_error)?,
            OperationGetInput::ByKey {
                retry_epoch,
                request_key,
                tool,
                project_id,
            } => {
                let tool = Tool::from_name(tool).ok_or_else(|| {
                    ToolError::invalid(format!(
                        "there is no tool {tool:?}; name the tool of the original request"
                    ))
                })?;
                let key = ReceiptKey {
                    pairing_id: caller.clone(),
                    retry_epoch: retry_epoch.clone(),
                    project_id: project_id.clone(),
                    tool: tool.tool_name(),
                    request_key: request_key.clone(),
                };
                match self.inner.store.lookup(&key).map_err(store_error)? {
                    Some(receipt) => Some(receipt),
                    // The seed needs projectId only when the connection has several projects:
                    // with one, a lookup without it means that one.
                    None if project_id.is_none() => match self.only_project(caller, retry_epoch) {
                        Some(project) => {
                            let key = ReceiptKey {
                                project_id: Some(project),
                                ..key
                            };
                            self.inner.store.lookup(&key).map_err(store_error)?
                        }
                        None => None,
                    },
                    None => None,
                }
            }
        };
        let not_found =
            || ToolError::not_found("no such operation among this connection's operations");
        let receipt = receipt.ok_or_else(not_found)?;
        if &receipt.key.pairing_id != caller {
            return Err(not_found());
        }
        match self.check_retry_epoch(caller, &receipt.key.retry_epoch, None) {
            Ok(_) => Ok(receipt),
            Err(error)
                if matches!(
                    error.code,
                    ErrorCode::PairingRevoked
                        | ErrorCode::PairingDenied
                        | ErrorCode::PairingRequired
                ) =>
            {
                Err(error)
            }
            Err(_) => Err(not_found()),
        }
    }

    pub fn operation_get(
        &self,
        caller: &PairingId,
        input: &OperationGetInput,
    ) -> Result<OperationView, ToolError> {
        self.visible_receipt(caller, input)
            .map(|r| self.live_view(&r))
    }

    pub async fn operation_cancel(
        &self,
        caller: &PairingId,
        id: &OperationId,
    ) -> Result<OperationView, ToolError> {
        let receipt = self.visible_receipt(caller, &OperationGetInput::ById(id.clone()))?;
        self.cancel_operation(&receipt)?;
        self.answer(caller, id).await
    }

    /// `lomi_events_read`: the caller connection's operation state changes after a cursor.
    pub fn events_read(
        &self,
        caller: &PairingId,
        input: &EventsReadInput,
    ) -> Result<EventPage, ToolError> {
        let max = input.max_events.unwrap_or(DEFAULT_EVENTS);
        if max == 0 || max > MAX_EVENTS {
            return Err(ToolError::invalid(format!(
                "maxEvents must be 1 to {MAX_EVENTS}"
            )));
        }
        let epoch = self.check_retry_epoch(caller, &input.retry_epoch, None)?;
        // A cursor is `OPERATIONS.PANELS`: a position in each of the two feeds.
        // A cursor without its panel part starts the panel feed at the oldest kept event.
        let (after, panels_after): (i64, Option<u64>) = match &input.cursor {
            None => (0, None),
            Some(text) => {
                let bad =
                    || ToolError::invalid(format!("cursor {text:?} is not a cursor Lomi gave out"));
                let (operations, panels) = match text.split_once('.') {
                    Some((operations, panels)) => (
                        operations,
                        Some(lomi_protocol::parse_decimal(panels).ok_or_else(bad)?),
                    ),
                    None => (text.as_str(), None),
                };
                let operations = lomi_protocol::parse_decimal(operations)
                    .and_then(|n| i64::try_from(n).ok())
                    .ok_or_else(bad)?;
                (operations, panels)
            }
        };
        let (panel_events, panels_next) =
            self.panel_events_after(&epoch.workspace_id, panels_after, max as usize)?;
        // Scan a bounded window of the shared log and keep this connection's events; a page
        // can be empty while the cursor still moves on.
        let page = self
            .inner
            .store
            .events_after(after, MAX_EVENTS as usize)
            .map_err(store_error)?;
        if after > page.newest_seq {
            return Err(ToolError::invalid(format!(
                "cursor {after} is not a cursor Lomi gave out; read without a cursor to start"
            )));
        }
        if after > 0 && page.cursor_expired(after) {
            return Err(ToolError::new(
                ErrorCode::CursorExpired,
                "the cursor is older than the retained events; read again without a cursor and re-observe operations",
            ));
        }
        let mut events = Vec::new();
        let mut next = after;
        for event in page.events {
            if events.len() == max as usize {
                break;
            }
            next = event.seq;
            if event.retry_epoch == input.retry_epoch && &event.pairing_id == caller {
                events.push(OperationEvent {
                    cursor: event.seq.to_string(),
                    operation_id: event.operation_id,
                    tool: event.tool.0,
                    state: event.state,
                    effect_state: event.effect_state,
                    at: event.at,
                });
            }
        }
        Ok(EventPage {
            events,
            panel_events,
            next_cursor: format!("{next}.{panels_next}"),
        })
    }

    pub fn store_status(&self, caller: &PairingId) -> Result<StoreStatusView, ToolError> {
        self.authorize(caller)?;
        let status = self
            .inner
            .store
            .status(&self.idle_rule())
            .map_err(store_error)?;
        Ok(StoreStatusView {
            receipts: status.receipts,
            receipt_cap: status.receipt_cap as u64,
            unsettled_receipts: status.unsettled_receipts,
            removable_receipts: status.removable_receipts,
            retry_epochs: status.retry_epochs,
            retry_epoch_cap: status.retry_epoch_cap as u64,
            expired_retry_epochs: status.expired_retry_epochs,
            oldest_receipt_at: status.oldest_receipt_at,
            oldest_retry_epoch_at: status.oldest_retry_epoch_at,
            receipts_remaining: status.receipts_remaining,
            retry_epochs_remaining: status.retry_epochs_remaining,
            warning_level: match status.warning {
                lomi_store::WarningLevel::None => StoreWarningLevel::None,
                lomi_store::WarningLevel::Warning => StoreWarningLevel::Warning,
                lomi_store::WarningLevel::Critical => StoreWarningLevel::Critical,
                lomi_store::WarningLevel::Full => StoreWarningLevel::Full,
            },
            maintenance: match status.warning {
                lomi_store::WarningLevel::None => "Room is left. Only the person frees room: `lomi store reconcile --retire idle` (or Settings → Storage) retires idle connections' retry epochs and moves their settled receipts to the history.",
                lomi_store::WarningLevel::Warning | lomi_store::WarningLevel::Critical => "The store is filling up: tell the person to run `lomi store reconcile --retire idle` (or use Settings → Storage). A retired retry epoch is refused afterwards: re-observe, then lomi_connect again.",
                lomi_store::WarningLevel::Full => "The store is full: new operations are RESOURCE_EXHAUSTED until the person runs `lomi store reconcile --retire idle` (or uses Settings → Storage). Then re-observe and lomi_connect again if your retry epoch was retired.",
            }
            .to_owned(),
        })
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

    /// Every receipt, newest first, for the person (`lomi operation list`).
    pub fn operations(&self, limit: usize) -> Result<Vec<OperationView>, ToolError> {
        let receipts = self
            .inner
            .store
            .list_receipts(limit, 0)
            .map_err(store_error)?;
        Ok(receipts.iter().map(view).collect())
    }

    /// One receipt, for the person (`lomi operation show`).
    pub fn operation(&self, id: &OperationId) -> Result<OperationView, ToolError> {
        self.inner
            .store
            .get(id)
            .map_err(store_error)?
            .map(|r| self.live_view(&r))
            .ok_or_else(|| ToolError::not_found(format!("no operation {id}")))
    }

    /// The tools that wait for the person's decision before they run.
    pub fn confirmation_policy(&self) -> std::collections::BTreeSet<Tool> {
        self.domain().policy.confirm_tools.clone()
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

    /// Marks a tool as needing the person's decision before it runs (or clears the mark).
    pub fn set_confirmation(&self, name: &str, confirm: bool) -> Result<(), ToolError> {
        let tool = Tool::from_name(name)
            .filter(|t| t.kind() == lomi_protocol::catalog::ToolKind::Mutation)
            .ok_or_else(|| {
                ToolError::invalid(format!("{name} is not a mutating tool of Lomi's catalog"))
            })?;
        self.update_domain(|domain| {
            if confirm {
                domain.policy.confirm_tools.insert(tool);
            } else {
                domain.policy.confirm_tools.remove(&tool);
            }
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
