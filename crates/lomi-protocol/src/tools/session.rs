//! Session tools: pairing status, workspace and panel listings, connecting to a workspace,
//! and the workspace layout mutation.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, ToolDef};
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};

use crate::ids::{
    BrokerInstanceId, DomainRevision, PairingId, PanelId, ProjectId, RequestKey, RetryEpoch,
    WorkspaceId,
};
use crate::time::Timestamp;
use crate::tools::layout::LayoutNode;

/// Where a pairing stands with the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairingState {
    /// Waiting for the person to approve or deny it in Lomi.
    Pending,
    Approved,
    Denied,
    Revoked,
}

/// `lomi_pairing_status` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PairingStatus {
    pub state: PairingState,
    pub pairing_id: PairingId,
    /// The client name Lomi shows the person.
    pub client_name: String,
    /// The short code the person compares with the one shown in Lomi before approving.
    pub verification_code: String,
    /// What the person has to do, in words.
    pub message: String,
    /// Workspaces this pairing may use (empty until approved).
    pub granted_workspaces: Vec<WorkspaceId>,
    /// The person paused this agent's changes (PAUSED until they resume); reads still work.
    pub paused: bool,
}

/// A project (a directory on disk) in a workspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectView {
    pub project_id: ProjectId,
    pub name: String,
    /// Absolute path of the project root on the person's machine.
    pub root: String,
}

/// One workspace as a listing shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceView {
    pub workspace_id: WorkspaceId,
    pub name: String,
    /// The layout revision to pass as `expectedRevision` to layout mutations.
    pub domain_revision: DomainRevision,
    pub projects: Vec<ProjectView>,
    /// Panel ids in layout order: the layout's panels left to right, top to bottom.
    pub panel_order: Vec<PanelId>,
    /// How the panels are arranged (splits and tab groups); null when no panel is open.
    pub layout: Option<LayoutNode>,
    /// The person's choice for browser panels created from now on: one persistent profile
    /// (cookies, storage and sign-ins kept across panels) when true, a fresh one each when false.
    pub persistent_browser_profile: bool,
}

/// `lomi_workspace_list` output: only the workspaces granted to this pairing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceList {
    pub workspaces: Vec<WorkspaceView>,
}

/// `lomi_terminal_close`, `lomi_browser_close` and `lomi_android_detach` input: one panel,
/// compared by its workspace's revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PanelCloseInput {
    pub workspace_id: WorkspaceId,
    pub panel_id: PanelId,
    pub expected_revision: DomainRevision,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_panel_list` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PanelListInput {
    // The workspace whose panels to list.
    pub workspace_id: WorkspaceId,
}

/// What a panel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PanelKind {
    Terminal,
    Browser,
    Android,
    Document,
}

/// One panel of a workspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PanelView {
    pub panel_id: PanelId,
    pub kind: PanelKind,
    pub title: String,
    pub project_id: Option<ProjectId>,
    /// The current runtime generation, when the panel has a live runtime.
    pub generation: Option<String>,
}

/// `lomi_panel_list` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PanelList {
    pub workspace_id: WorkspaceId,
    pub domain_revision: DomainRevision,
    pub panels: Vec<PanelView>,
}

/// `lomi_connect` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectInput {
    // An approved workspace from `lomi_workspace_list`.
    pub workspace_id: WorkspaceId,
}

/// `lomi_connect` output: a retry epoch for durable request identity in this workspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Connection {
    pub workspace_id: WorkspaceId,
    /// Pass this with every mutation's `requestKey`; keep it to look receipts up after a lost reply.
    pub retry_epoch: RetryEpoch,
    pub expires_at: Timestamp,
    pub broker_instance_id: BrokerInstanceId,
    pub domain_revision: DomainRevision,
    pub projects: Vec<ProjectView>,
}

/// `lomi_workspace_update` input: one change to a workspace, compared and swapped by revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceUpdateInput {
    pub workspace_id: WorkspaceId,
    // The `domainRevision` from a fresh workspace or panel listing.
    pub expected_revision: DomainRevision,
    // From `lomi_connect` for this workspace.
    pub retry_epoch: RetryEpoch,
    // Your durable name for this request; reuse it (with the same arguments) only to retry.
    pub request_key: RequestKey,
    // Exactly one change.
    pub change: WorkspaceChange,
}

/// Exactly one of `rename` or `layout`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "WorkspaceChangeArguments")]
pub enum WorkspaceChange {
    // Give the workspace a new display name.
    Rename(RenameChange),
    // Rearrange the workspace's panels.
    Layout(LayoutChange),
}

/// Exactly one of `rename` or `layout`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceChangeArguments {
    // Give the workspace a new display name.
    pub rename: Option<RenameChange>,
    // Rearrange the workspace's panels.
    pub layout: Option<LayoutChange>,
}

impl TryFrom<WorkspaceChangeArguments> for WorkspaceChange {
    type Error = String;

    fn try_from(a: WorkspaceChangeArguments) -> Result<Self, String> {
        match (a.rename, a.layout) {
            (Some(rename), None) => Ok(WorkspaceChange::Rename(rename)),
            (None, Some(layout)) => Ok(WorkspaceChange::Layout(layout)),
            (Some(_), Some(_)) => {
                Err("change takes exactly one of rename or layout, not both".to_owned())
            }
            (None, None) => Err("change takes exactly one of rename or layout".to_owned()),
        }
    }
}

impl schemars::JsonSchema for WorkspaceChange {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WorkspaceChange".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::exactly_one_of(
            WorkspaceChangeArguments::json_schema(generator),
            &[&["rename"], &["layout"]],
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameChange {
    // 1 to 120 characters, no control characters.
    pub name: String,
}

/// Exactly one of `root` (the whole new arrangement) or `panelOrder` (the same arrangement,
/// its panels in a new order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "LayoutChangeArguments")]
pub enum LayoutChange {
    Root(LayoutNode),
    PanelOrder(Vec<PanelId>),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LayoutChangeArguments {
    // The new arrangement: every open panel of the workspace exactly once, in nested splits
    // (at most 6 deep) whose leaves are tab groups.
    pub root: Option<LayoutNode>,
    // Every panel of the workspace exactly once, in the new order; the splits and tab groups
    // stay as they are.
    pub panel_order: Option<Vec<PanelId>>,
}

impl TryFrom<LayoutChangeArguments> for LayoutChange {
    type Error = String;

    fn try_from(a: LayoutChangeArguments) -> Result<Self, String> {
        match (a.root, a.panel_order) {
            (Some(root), None) => Ok(LayoutChange::Root(root)),
            (None, Some(order)) => Ok(LayoutChange::PanelOrder(order)),
            (Some(_), Some(_)) => {
                Err("layout takes exactly one of root or panelOrder, not both".to_owned())
            }
            (None, None) => Err("layout takes exactly one of root or panelOrder".to_owned()),
        }
    }
}

impl schemars::JsonSchema for LayoutChange {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LayoutChange".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::exactly_one_of(
            LayoutChangeArguments::json_schema(generator),
            &[&["root"], &["panelOrder"]],
        )
    }
}

/// The confirmed result of a `lomi_workspace_update` operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceUpdateResult {
    pub workspace: WorkspaceView,
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_pairing_status`
pub struct PairingStatusTool;

impl ToolDef for PairingStatusTool {
    const TOOL: Tool = Tool::PairingStatus;
    const NAME: &'static str = "lomi_pairing_status";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "See whether it is paired";
    const TITLE: &'static str = "Pairing status";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "Whether the person approved this client, with the code they compare. Answers \
        before approval.";
    const BEFORE_APPROVAL: bool = true;
    type Input = crate::tools::NoArguments;
    type Output = PairingStatus;
}

/// `lomi_workspace_list`
pub struct WorkspaceListTool;

impl ToolDef for WorkspaceListTool {
    const TOOL: Tool = Tool::WorkspaceList;
    const NAME: &'static str = "lomi_workspace_list";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "List workspaces";
    const TITLE: &'static str = "List workspaces";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "The granted workspaces with projects, panels and domainRevision.";
    type Input = crate::tools::NoArguments;
    type Output = WorkspaceList;
}

/// `lomi_panel_list`
pub struct PanelListTool;

impl ToolDef for PanelListTool {
    const TOOL: Tool = Tool::PanelList;
    const NAME: &'static str = "lomi_panel_list";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "List panels";
    const TITLE: &'static str = "List panels";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "A workspace's panels with their runtime generations and domainRevision.";
    type Input = PanelListInput;
    type Output = PanelList;
}

/// `lomi_connect`
pub struct ConnectTool;

impl ToolDef for ConnectTool {
    const TOOL: Tool = Tool::Connect;
    const NAME: &'static str = "lomi_connect";
    const FAMILY: Option<Family> = None;
    const LABEL: &'static str = "Connect to a workspace";
    const TITLE: &'static str = "Connect to a workspace";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = Annotations {
        idempotent_hint: false,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Connects to a granted workspace; returns the retryEpoch every mutation needs.";
    type Input = ConnectInput;
    type Output = Connection;
}

/// `lomi_workspace_update`
pub struct WorkspaceUpdateTool;

impl ToolDef for WorkspaceUpdateTool {
    const TOOL: Tool = Tool::WorkspaceUpdate;
    const NAME: &'static str = "lomi_workspace_update";
    const FAMILY: Option<Family> = Some(Family::Workspace);
    const LABEL: &'static str = "Rearrange or rename a workspace";
    const TITLE: &'static str = "Update a workspace";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Renames a workspace or rearranges its panels.";
    type Input = WorkspaceUpdateInput;
    type Output = WorkspaceUpdateResult;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Workspace(Box::new(input.change.clone()))
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __session_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            PairingStatus = $crate::tools::session::PairingStatusTool => broker as plain,
            WorkspaceList = $crate::tools::session::WorkspaceListTool => broker as plain,
            PanelList = $crate::tools::session::PanelListTool => broker as plain,
            Connect = $crate::tools::session::ConnectTool => broker as plain,
            WorkspaceUpdate = $crate::tools::session::WorkspaceUpdateTool => broker as plain,
        ]);
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strict::decode;
    use serde_json::json;

    fn update(change: serde_json::Value) -> Result<WorkspaceUpdateInput, String> {
        decode::<WorkspaceUpdateInput>(
            "lomi_workspace_update",
            Some(json!({
                "workspaceId": "ws_1",
                "expectedRevision": "1",
                "retryEpoch": "re_1",
                "requestKey": "k",
                "change": change,
            })),
        )
        .map_err(|e| e.message)
    }

    #[test]
    fn a_change_is_exactly_one_variant() {
        assert!(matches!(
            update(json!({"rename": {"name": "x"}})).map(|u| u.change),
            Ok(WorkspaceChange::Rename(_))
        ));
        assert!(matches!(
            update(json!({"layout": {"panelOrder": []}})).map(|u| u.change),
            Ok(WorkspaceChange::Layout(_))
        ));
        let root = json!({"tabs": {"panels": ["pn_a"]}});
        assert!(matches!(
            update(json!({"layout": {"root": root}})).map(|u| u.change),
            Ok(WorkspaceChange::Layout(LayoutChange::Root(_)))
        ));
        let two = update(json!({"layout": {"root": root, "panelOrder": []}}));
        assert!(
            two.as_ref()
                .is_err_and(|m| m.contains("exactly one of root or panelOrder, not both")),
            "{two:?}"
        );
        let both = update(json!({"rename": {"name": "x"}, "layout": {"panelOrder": []}}));
        assert!(
            both.as_ref()
                .is_err_and(|m| m.contains("exactly one of rename or layout, not both")),
            "{both:?}"
        );
        let none = update(json!({}));
        assert!(
            none.as_ref()
                .is_err_and(|m| m.contains("exactly one of rename or layout")),
            "{none:?}"
        );
        let unknown = update(json!({"move": {}}));
        assert!(
            unknown
                .as_ref()
                .is_err_and(|m| m.contains("unknown field `move`")),
            "{unknown:?}"
        );
    }
}
