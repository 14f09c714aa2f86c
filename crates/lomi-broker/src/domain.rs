//! The person's durable domain: workspaces with their projects and layout revision, pairings
//! with their grants, and the confirmation policy. Kept in `domain.json` in the data dir.

use std::collections::BTreeSet;
use std::path::PathBuf;

use lomi_protocol::tools::layout::LayoutNode;
use lomi_protocol::tools::session::{PairingState, ProjectView, WorkspaceView};
use lomi_protocol::{
    DomainRevision, Family, PairingId, PanelId, ProjectId, Timestamp, Tool, WorkspaceId,
};
use serde::{Deserialize, Serialize};

/// Everything in `domain.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub workspaces: Vec<Workspace>,
    pub pairings: Vec<Pairing>,
    pub policy: Policy,
    /// The person's settings sections (`settings.rs`).
    #[serde(default)]
    pub settings: crate::settings::Settings,
    /// Clients registered with Lomi's OAuth authorization server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oauth_clients: Vec<crate::oauth::OAuthClient>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    pub id: WorkspaceId,
    pub name: String,
    pub revision: DomainRevision,
    pub projects: Vec<Project>,
    /// How the open panels are arranged; `None` while none is open. Panels do not survive a
    /// restart, so neither does this (the field is still read from older `domain.json` files
    /// that kept a flat `panelOrder`, which is ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutNode>,
    /// The person chose that this workspace's browser panels keep one persistent Chromium
    /// profile (`browser-profiles/<workspaceId>` in the data dir) instead of a fresh one each.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent_browser_profile: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: ProjectId,
    pub name: String,
    pub root: PathBuf,
}

/// How a pairing proves itself on a new transport session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Credential {
    /// Bound to one MCP transport session; gone when that session ends or Lomi restarts.
    Session,
    /// A secret whose SHA-256 Lomi keeps: a bearer token or the stdio bridge's keyring secret.
    SecretHash(String),
    /// Authorized through Lomi's OAuth flow: short-lived access tokens and a rotated refresh
    /// token, each kept as its SHA-256.
    OAuth(crate::oauth::OAuthGrant),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pairing {
    pub id: PairingId,
    pub client_name: String,
    pub verification_code: String,
    pub state: PairingState,
    pub credential: Credential,
    pub grants: Vec<WorkspaceId>,
    pub created_at: Timestamp,
    pub decided_at: Option<Timestamp>,
    /// Approved for one session only: a secret-bound pairing that ends with its current
    /// connection (the person chose "approve for this session").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session_only: bool,
    /// The tool families it sees; `None` is every family, including ones a later Lomi adds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_families"
    )]
    pub families: Option<BTreeSet<Family>>,
    /// The families its client asked for (an OAuth client's scopes), which the person's
    /// approval starts from; `None`: it did not say.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_families"
    )]
    pub requested_families: Option<BTreeSet<Family>>,
}

impl Pairing {
    /// Session-bound pairings (and those approved for one session) die with their transport
    /// session and are not written to disk.
    pub fn is_durable(&self) -> bool {
        matches!(
            self.credential,
            Credential::SecretHash(_) | Credential::OAuth(_)
        ) && !self.session_only
    }
}

/// Which mutating tools wait for the person's decision (`awaiting_user`) before they run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(deserialize_with = "known_tools")]
    pub confirm_tools: BTreeSet<Tool>,
    /// The tools of [`confirmed_by_default`] already applied to this policy, so a default that
    /// a newer Lomi adds reaches an existing data dir once, and a tool the person turned off
    /// stays off.
    #[serde(default = "defaults_before_tracking", deserialize_with = "known_tools")]
    pub applied_defaults: BTreeSet<Tool>,
    /// The person's rules, in the order they were made (`lomi rule`; `rules.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<lomi_protocol::rules::RuleRecord>,
    /// Every agent's changes are paused (`lomi pause`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Agents whose changes are paused one by one (`lomi pause --agent`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub paused_agents: BTreeSet<PairingId>,
}

/// The families named in `domain.json` that this Lomi has (a later Lomi's unknown family is
/// dropped: the pairing sees less, never more, and the domain still loads).
fn known_families<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<BTreeSet<Family>>, D::Error> {
    let names = Option::<Vec<String>>::deserialize(deserializer)?;
    Ok(names.map(|names| {
        names
            .iter()
            .filter_map(|name| {
                let family = Family::from_name(name);
                if family.is_none() {
                    tracing::warn!(
                        "domain.json names a tool family this Lomi does not have: {name}"
                    );
                }
                family
            })
            .collect()
    }))
}

/// The tools named in `domain.json` that this Lomi has; a name an older or newer Lomi wrote
/// for a tool this one does not serve is dropped, not an error that would lose the domain.
fn known_tools<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeSet<Tool>, D::Error> {
    let names = Vec::<String>::deserialize(deserializer)?;
    Ok(names
        .iter()
        .filter_map(|name| {
            let tool = Tool::from_name(name);
            if tool.is_none() {
                tracing::warn!("domain.json names a tool this Lomi does not have: {name}");
            }
            tool
        })
        .collect())
}

/// What the defaults were before policies recorded which defaults they had applied (a fact
/// of old `domain.json` files, not of today's definitions).
fn defaults_before_tracking() -> BTreeSet<Tool> {
    BTreeSet::from([Tool::FileDelete])
}

impl Policy {
    /// Whether the person paused `agent`'s changes (every agent's, or this one's).
    pub fn pauses(&self, agent: &PairingId) -> bool {
        self.paused || self.paused_agents.contains(agent)
    }

    /// Applies the defaults this policy has not seen yet; true if it changed.
    pub fn apply_new_defaults(&mut self) -> bool {
        let mut changed = false;
        for tool in confirmed_by_default() {
            if self.applied_defaults.insert(tool) {
                self.confirm_tools.insert(tool);
                changed = true;
            }
        }
        changed
    }
}

/// Tools that wait for the person unless they say otherwise, as their definitions say
/// (`ToolDef::ASKS_BY_DEFAULT`, with the reason beside it).
pub fn confirmed_by_default() -> impl Iterator<Item = Tool> {
    Tool::ALL
        .iter()
        .copied()
        .filter(|tool| tool.asks_by_default())
}

impl Default for Policy {
    fn default() -> Self {
        let defaults: BTreeSet<Tool> = confirmed_by_default().collect();
        Policy {
            confirm_tools: defaults.clone(),
            applied_defaults: defaults,
            rules: Vec::new(),
            paused: false,
            paused_agents: BTreeSet::new(),
        }
    }
}

impl Domain {
    /// The workspace `id` an operation changes, compared by its revision when `expected` is
    /// given: NOT_FOUND once the person removed it, REVISION_MISMATCH (with the current
    /// revision) once it moved past `expected`.
    pub(crate) fn workspace_at(
        &mut self,
        id: &WorkspaceId,
        expected: Option<DomainRevision>,
    ) -> Result<&mut Workspace, lomi_protocol::ToolError> {
        let workspace = self
            .workspaces
            .iter_mut()
            .find(|w| &w.id == id)
            .ok_or_else(|| {
                lomi_protocol::ToolError::not_found(format!("workspace {id} was removed"))
            })?;
        if let Some(expected) = expected
            && workspace.revision != expected
        {
            return Err(crate::workspaces::revision_mismatch(workspace));
        }
        Ok(workspace)
    }
}

impl Workspace {
    /// The open panels in layout order.
    pub fn panel_order(&self) -> Vec<PanelId> {
        self.layout
            .as_ref()
            .map(LayoutNode::leaves)
            .unwrap_or_default()
    }

    pub fn view(&self) -> WorkspaceView {
        WorkspaceView {
            workspace_id: self.id.clone(),
            name: self.name.clone(),
            domain_revision: self.revision,
            projects: self.projects.iter().map(Project::view).collect(),
            panel_order: self.panel_order(),
            layout: self.layout.clone(),
            persistent_browser_profile: self.persistent_browser_profile,
        }
    }
}

impl Project {
    pub fn view(&self) -> ProjectView {
        ProjectView {
            project_id: self.id.clone(),
            name: self.name.clone(),
            root: self.root.display().to_string(),
        }
    }
}

/// Checks a display name: 1 to 120 characters, no control characters.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let count = name.chars().count();
    if count == 0 || count > 120 {
        return Err(format!(
            "{what} must have 1 to 120 characters (has {count})"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("{what} must not contain control characters"));
    }
    if name.trim().is_empty() {
        return Err(format!("{what} must not be blank"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_defaults_reach_old_policies_once_and_choices_stay() {
        // A policy written before defaults were tracked, where the person turned deletes off.
        let mut old: Policy =
            serde_json::from_str(r#"{"confirmTools": []}"#).expect("an old policy parses");
        assert!(old.apply_new_defaults());
        assert!(old.confirm_tools.contains(&Tool::AndroidShell));
        assert!(!old.confirm_tools.contains(&Tool::FileDelete));
        old.confirm_tools.remove(&Tool::AndroidShell);
        assert!(!old.apply_new_defaults());
        assert!(!old.confirm_tools.contains(&Tool::AndroidShell));
        assert!(!Policy::default().apply_new_defaults());
    }

    #[test]
    fn a_tool_name_this_lomi_does_not_have_is_dropped_not_fatal() {
        let policy: Policy = serde_json::from_str(
            r#"{"confirmTools": ["lomi_file_delete", "lomi_gone_tool"], "appliedDefaults": []}"#,
        )
        .expect("a policy naming an unknown tool still loads");
        assert_eq!(policy.confirm_tools, BTreeSet::from([Tool::FileDelete]));
    }
}
