//! Git tools for a project that is a repository: bounded status and diff reads, and staging,
//! committing and branching as operations. A Git change cannot be undone by cancelling.

use serde::{Deserialize, Serialize};

use crate::ids::{ProjectId, RequestKey, RetryEpoch, WorkspaceId};

/// `lomi_git_status` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitStatusInput {
    pub workspace_id: WorkspaceId,
    // Optional when the workspace has one project.
    pub project_id: Option<ProjectId>,
}

/// One changed path of `lomi_git_status`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitStatusEntry {
    /// Relative to the project root (the new path of a rename).
    pub path: String,
    /// The staged change: unmodified, modified, added, deleted, renamed, copied, type_changed,
    /// unmerged or untracked.
    pub index: String,
    /// The unstaged change in the working tree, with the same words as `index`.
    pub worktree: String,
}

/// `lomi_git_status` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitStatusView {
    /// The HEAD commit's full SHA; absent on an unborn branch. Pass it as
    /// `expectedHeadRevision` to commit ("" when absent).
    pub head: Option<String>,
    /// The current branch; absent when HEAD is detached.
    pub branch: Option<String>,
    /// Changed, staged and untracked paths (ignored files are not listed).
    pub entries: Vec<GitStatusEntry>,
    /// True when there is nothing to commit and nothing untracked.
    pub clean: bool,
}

/// `lomi_git_diff` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitDiffInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    // True for the staged changes (index against HEAD); default false, the unstaged changes
    // (working tree against the index).
    pub staged: Option<bool>,
    // Limit the diff to this file or directory, relative to the project root.
    pub path: Option<String>,
    // Most bytes of diff to return (1 to 4,194,304; default 262,144).
    pub max_bytes: Option<u32>,
}

/// `lomi_git_diff` output: a unified diff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitDiffView {
    /// The unified diff (invalid UTF-8 replaced); empty when nothing differs.
    pub diff: String,
    /// True when the diff was longer than `maxBytes` and was cut.
    pub truncated: bool,
}

/// `lomi_git_stage` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitStageInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    // Files or directories to stage (new, changed or deleted), relative to the project root;
    // never absolute, never `..`.
    pub paths: Vec<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_git_commit` input: commits what is staged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitCommitInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    // The commit message.
    pub message: String,
    // The `head` of `lomi_git_status` as you last read it ("" for an unborn branch). If HEAD
    // moved since, nothing is committed: REVISION_MISMATCH with the current HEAD in
    // `details.currentRevision`.
    pub expected_head_revision: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_git_branch` input: creates and switches to a branch, or switches to an existing one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitBranchInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    // The branch name.
    pub name: String,
    // True to create the branch at HEAD (it must not exist); false to switch to an existing one.
    pub create: bool,
    // Switch even when the working tree has uncommitted changes (Git carries them over, or
    // refuses if they would be overwritten). Default false: uncommitted changes refuse.
    pub allow_uncommitted: Option<bool>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_git_stage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitStaged {
    pub paths: Vec<String>,
}

/// The confirmed result of `lomi_git_commit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitCommitted {
    /// The new commit's full SHA (the new HEAD).
    pub commit: String,
    /// The previous HEAD; absent for the first commit of a branch.
    pub parent: Option<String>,
    /// How to take it back.
    pub undo: String,
}

/// The confirmed result of `lomi_git_branch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitBranched {
    /// The branch now checked out.
    pub branch: String,
    /// Its HEAD commit; absent on an unborn branch.
    pub head: Option<String>,
}
