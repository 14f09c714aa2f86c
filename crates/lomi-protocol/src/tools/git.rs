//! Git tools for a project that is a repository: bounded status and diff reads, and staging,
//! committing and branching as operations. A Git change cannot be undone by cancelling.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, Subject, ToolDef};
use crate::{Family, Tool};
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

/// `lomi_git_log` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitLogInput {
    pub workspace_id: WorkspaceId,
    pub project_id: Option<ProjectId>,
    /// How many commits, newest first (1 to 100; default 20).
    pub limit: Option<u32>,
}

/// One commit of `lomi_git_log`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitLogEntry {
    /// The commit's full SHA.
    pub commit: String,
    /// The author's name.
    pub author: String,
    /// The author date, ISO 8601 with its offset.
    pub date: String,
    /// The first line of the message.
    pub subject: String,
}

/// `lomi_git_log` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitLogView {
    /// Newest first, from HEAD; empty before the first commit.
    pub commits: Vec<GitLogEntry>,
    /// True when older commits were left out by `limit`.
    pub more: bool,
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

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_git_status`
pub struct GitStatusTool;

impl ToolDef for GitStatusTool {
    const TOOL: Tool = Tool::GitStatus;
    const NAME: &'static str = "lomi_git_status";
    const FAMILY: Option<Family> = Some(Family::Git);
    const LABEL: &'static str = "Read Git status";
    const TITLE: &'static str = "Git status";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "A repository's HEAD (head), branch and changed, staged or untracked paths.";
    type Input = GitStatusInput;
    type Output = GitStatusView;
}

/// `lomi_git_diff`
pub struct GitDiffTool;

impl ToolDef for GitDiffTool {
    const TOOL: Tool = Tool::GitDiff;
    const NAME: &'static str = "lomi_git_diff";
    const FAMILY: Option<Family> = Some(Family::Git);
    const LABEL: &'static str = "Read Git diffs";
    const TITLE: &'static str = "Git diff";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "The unified diff of the unstaged changes, or the staged ones.";
    type Input = GitDiffInput;
    type Output = GitDiffView;

    fn subject(input: &Self::Input) -> Subject {
        match &input.path {
            Some(path) => Subject::Paths(vec![path.clone()]),
            None => Subject::None,
        }
    }
}

/// `lomi_git_log`
pub struct GitLogTool;

impl ToolDef for GitLogTool {
    const TOOL: Tool = Tool::GitLog;
    const NAME: &'static str = "lomi_git_log";
    const FAMILY: Option<Family> = Some(Family::Git);
    const LABEL: &'static str = "Read Git history";
    const TITLE: &'static str = "Read the Git log";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "The project's most recent commits from HEAD, newest first: SHA, author, \
        date and subject, bounded by limit.";
    type Input = GitLogInput;
    type Output = GitLogView;
}

/// `lomi_git_stage`
pub struct GitStageTool;

impl ToolDef for GitStageTool {
    const TOOL: Tool = Tool::GitStage;
    const NAME: &'static str = "lomi_git_stage";
    const FAMILY: Option<Family> = Some(Family::Git);
    const LABEL: &'static str = "Stage files in Git";
    const TITLE: &'static str = "Stage changes";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Stages paths (new, changed or deleted) for the next commit.";
    type Input = GitStageInput;
    type Output = GitStaged;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Stage {
            paths: input.paths.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        Subject::Paths(input.paths.clone())
    }
}

/// `lomi_git_commit`
pub struct GitCommitTool;

impl ToolDef for GitCommitTool {
    const TOOL: Tool = Tool::GitCommit;
    const NAME: &'static str = "lomi_git_commit";
    const FAMILY: Option<Family> = Some(Family::Git);
    const LABEL: &'static str = "Commit to Git";
    const TITLE: &'static str = "Commit staged changes";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Commits what is staged, if HEAD is still expectedHeadRevision (\"\" unborn).";
    type Input = GitCommitInput;
    type Output = GitCommitted;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Commit {
            message: input.message.clone(),
        }
    }
}

/// `lomi_git_branch`
pub struct GitBranchTool;

impl ToolDef for GitBranchTool {
    const TOOL: Tool = Tool::GitBranch;
    const NAME: &'static str = "lomi_git_branch";
    const FAMILY: Option<Family> = Some(Family::Git);
    const LABEL: &'static str = "Create or switch Git branches";
    const TITLE: &'static str = "Create or switch a branch";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Creates a branch at HEAD and switches to it, or switches to an existing one.";
    type Input = GitBranchInput;
    type Output = GitBranched;

    fn preview(input: &Self::Input) -> Preview {
        Preview::Branch {
            name: input.name.clone(),
            create: input.create,
        }
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __git_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            GitStatus = $crate::tools::git::GitStatusTool => git as plain,
            GitDiff = $crate::tools::git::GitDiffTool => git as plain,
            GitLog = $crate::tools::git::GitLogTool => git as plain,
            GitStage = $crate::tools::git::GitStageTool => git as plain,
            GitCommit = $crate::tools::git::GitCommitTool => git as plain,
            GitBranch = $crate::tools::git::GitBranchTool => git as plain,
        ]);
    };
}
