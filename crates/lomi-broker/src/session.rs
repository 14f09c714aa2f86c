//! An agent's session with the broker: which workspaces it was granted, its connections and
//! retry epochs, and the person's "ask me before" policy.

use lomi_protocol::tools::session::{ConnectInput, Connection};
use lomi_protocol::{ConnectionId, ErrorCode, PairingId, RetryEpoch, Tool, ToolError, WorkspaceId};
use lomi_store::RetryEpochRecord;

use crate::domain::{Project, Workspace};
use crate::{Broker, RETRY_EPOCH_LIFETIME, store_error, waiting_on_disk};

impl Broker {
    pub(crate) fn not_granted(workspace: &WorkspaceId) -> ToolError {
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

    /// The workspace a valid retry epoch of the caller belongs to.
    pub fn retry_epoch_workspace(
        &self,
        caller: &PairingId,
        epoch: &RetryEpoch,
    ) -> Result<WorkspaceId, ToolError> {
        self.check_retry_epoch(caller, epoch, None)
            .map(|record| record.workspace_id)
    }

    /// The tools that wait for the person's decision before they run.
    pub fn confirmation_policy(&self) -> std::collections::BTreeSet<Tool> {
        self.domain().policy.confirm_tools.clone()
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
