//! The Git tools over the broker, through the `git` CLI: status and diff answer at once; stage,
//! commit and branch are operations under the project's permit. Git runs without a shell, with
//! every argument its own argv entry, literal pathspecs after `--`, and no prompts.

use std::path::{Path, PathBuf};

use lomi_broker::ProjectChange;
use lomi_broker::{Broker, EffectOutcome};
use lomi_protocol::definition::Serve;
use lomi_protocol::tools::git::{
    GitBranchInput, GitBranched, GitCommitInput, GitCommitted, GitDiffInput, GitDiffView,
    GitStageInput, GitStaged, GitStatusInput, GitStatusView,
};
use lomi_protocol::tools::git::{GitLogEntry, GitLogInput, GitLogTool, GitLogView};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::{EffectState, PairingId, ProjectId, ToolError, WorkspaceId};
use serde_json::Value;

pub(crate) mod repository;

use repository::{GitError, MAX_MESSAGE_BYTES, Repository, branch_name, git_path};

use crate::tools::{ProjectEffect, mutate};

const DEFAULT_DIFF_BYTES: u32 = 256 * 1024;
const MAX_DIFF_BYTES: u32 = 4 * 1024 * 1024;
const MAX_STAGE_PATHS: usize = 1000;
const DEFAULT_LOG_COMMITS: u32 = 20;
const MAX_LOG_COMMITS: u32 = 100;
/// Enough for the most commits asked for with long subject lines.
const MAX_LOG_BYTES: usize = 256 * 1024;
const COMMIT_UNDO: &str =
    "A commit cannot be undone by cancelling; make a new commit to change it.";

/// The Git tools of one broker.
#[derive(Clone)]
pub struct ProjectGit {
    broker: Broker,
}

/// `lomi_git_log`: the project's most recent commits from HEAD, newest first.
impl Serve<GitLogTool> for ProjectGit {
    type Answer = GitLogView;

    async fn serve(&self, caller: &PairingId, input: GitLogInput) -> Result<GitLogView, ToolError> {
        let limit = input.limit.unwrap_or(DEFAULT_LOG_COMMITS);
        if limit == 0 || limit > MAX_LOG_COMMITS {
            return Err(ToolError::invalid(format!(
                "limit must be 1 to {MAX_LOG_COMMITS}"
            )));
        }
        let repository = self
            .repository(caller, &input.workspace_id, input.project_id.as_ref())
            .await?;
        let born = repository
            .run(&["rev-parse", "--verify", "--quiet", "HEAD"], &[], 128)
            .await
            .map_err(|e| e.to_tool_error())?;
        if !born.success {
            // Before the first commit there is no history to read.
            return Ok(GitLogView {
                commits: Vec::new(),
                more: false,
            });
        }
        // One commit more than asked says whether there are more; NUL ends each commit and
        // the unit separator each field, neither of which a subject line holds.
        let count = (limit + 1).to_string();
        let output = repository
            .run(
                &[
                    "log",
                    "--no-color",
                    "-z",
                    "--format=%H%x1f%an%x1f%aI%x1f%s",
                    "-n",
                    &count,
                    "HEAD",
                    "--",
                ],
                &[],
                MAX_LOG_BYTES,
            )
            .await
            .map_err(|e| e.to_tool_error())?;
        if !output.success && !output.truncated {
            return Err(ToolError::invalid(format!(
                "git log refused: {}",
                output.explanation()
            )));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let mut records: Vec<&str> = text.split('\0').filter(|r| !r.is_empty()).collect();
        if output.truncated {
            // The last commit was cut off.
            records.pop();
        }
        let mut commits: Vec<GitLogEntry> = records
            .iter()
            .filter_map(|record| {
                let mut fields = record.splitn(4, '\u{1f}');
                Some(GitLogEntry {
                    commit: fields.next()?.to_owned(),
                    author: fields.next()?.to_owned(),
                    date: fields.next()?.to_owned(),
                    subject: fields.next()?.to_owned(),
                })
            })
            .collect();
        let more = output.truncated || commits.len() > limit as usize;
        commits.truncate(limit as usize);
        Ok(GitLogView { commits, more })
    }
}

/// What one Git mutation does, run inside its operation.
enum Change {
    Stage {
        paths: Vec<String>,
    },
    Commit {
        message: String,
        expected_head: String,
    },
    Branch {
        name: String,
        create: bool,
        allow_uncommitted: bool,
    },
}

impl ProjectGit {
    pub fn new(broker: Broker) -> Self {
        ProjectGit { broker }
    }

    async fn repository(
        &self,
        caller: &PairingId,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
    ) -> Result<Repository, ToolError> {
        let (_, root) = self.broker.project_root(caller, workspace, project)?;
        Repository::open(&root).await.map_err(|e| e.to_tool_error())
    }

    /// `lomi_git_status`.
    pub async fn status(
        &self,
        caller: &PairingId,
        input: &GitStatusInput,
    ) -> Result<GitStatusView, ToolError> {
        let repository = self
            .repository(caller, &input.workspace_id, input.project_id.as_ref())
            .await?;
        repository
            .status(false)
            .await
            .map_err(|e| e.to_tool_error())
    }

    /// `lomi_git_diff`.
    pub async fn diff(
        &self,
        caller: &PairingId,
        input: &GitDiffInput,
    ) -> Result<GitDiffView, ToolError> {
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_DIFF_BYTES);
        if max_bytes == 0 || max_bytes > MAX_DIFF_BYTES {
            return Err(ToolError::invalid(format!(
                "maxBytes must be 1 to {MAX_DIFF_BYTES}"
            )));
        }
        let path = match &input.path {
            Some(path) => Some(git_path(path).map_err(|e| e.to_tool_error())?),
            None => None,
        };
        let repository = self
            .repository(caller, &input.workspace_id, input.project_id.as_ref())
            .await?;
        diff(
            &repository,
            input.staged.unwrap_or(false),
            path.as_deref(),
            max_bytes,
        )
        .await
    }

    /// `lomi_git_stage`.
    pub async fn stage(
        &self,
        caller: &PairingId,
        input: GitStageInput,
    ) -> Result<OperationView, ToolError> {
        if input.paths.is_empty() || input.paths.len() > MAX_STAGE_PATHS {
            return Err(ToolError::invalid(format!(
                "give 1 to {MAX_STAGE_PATHS} paths to stage"
            )));
        }
        let paths = input
            .paths
            .iter()
            .map(|p| git_path(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_tool_error())?;
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::git::GitStageTool>(&input, None)?,
            Change::Stage { paths },
        )
        .await
    }

    /// `lomi_git_commit`.
    pub async fn commit(
        &self,
        caller: &PairingId,
        input: GitCommitInput,
    ) -> Result<OperationView, ToolError> {
        if input.message.trim().is_empty() {
            return Err(ToolError::invalid("give a commit message"));
        }
        let change = Change::Commit {
            message: input.message.clone(),
            expected_head: input.expected_head_revision.clone(),
        };
        let revision = Some(input.expected_head_revision.clone());
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::git::GitCommitTool>(&input, revision)?,
            change,
        )
        .await
    }

    /// `lomi_git_branch`.
    pub async fn branch(
        &self,
        caller: &PairingId,
        input: GitBranchInput,
    ) -> Result<OperationView, ToolError> {
        branch_name(&input.name).map_err(|e| e.to_tool_error())?;
        let change = Change::Branch {
            name: input.name.clone(),
            create: input.create,
            allow_uncommitted: input.allow_uncommitted.unwrap_or(false),
        };
        mutate(
            &self.broker,
            caller,
            ProjectChange::of::<lomi_protocol::tools::git::GitBranchTool>(&input, None)?,
            change,
        )
        .await
    }
}

/// A unified diff of the index against HEAD (`staged`) or of the working tree against the
/// index, for one path or all, at most `max_bytes` long.
async fn diff(
    repository: &Repository,
    staged: bool,
    path: Option<&str>,
    max_bytes: u32,
) -> Result<GitDiffView, ToolError> {
    // No external diff programs or text conversion filters: the bytes as Git stores them.
    let mut args = vec!["diff", "--no-color", "--no-ext-diff", "--no-textconv"];
    if staged {
        args.push("--cached");
    }
    args.push("--");
    if let Some(path) = path {
        args.push(path);
    }
    let output = repository
        .run(&args, &[], max_bytes as usize)
        .await
        .map_err(|e| e.to_tool_error())?;
    if !output.success && !output.truncated {
        return Err(ToolError::invalid(format!(
            "git diff refused: {}",
            output.explanation()
        )));
    }
    Ok(GitDiffView {
        diff: String::from_utf8_lossy(&output.stdout).into_owned(),
        truncated: output.truncated,
    })
}

/// Who the person's commit is by when the repository names no one (a configured identity is
/// never overridden).
const PERSON: (&str, &str) = ("Lomi user", "user@lomi.invalid");
/// Who an agent's commit is by when the repository names no one.
const AGENT: (&str, &str) = ("Lomi agent", "agent@lomi.invalid");

/// The Git requests of the person (the window's Git view, `lomi git …`): no receipts, but
/// each change holds the project's permit like an agent's, and reuses the same Git runs.
impl ProjectGit {
    async fn repository_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
    ) -> Result<(ProjectId, std::path::PathBuf, Repository), ToolError> {
        let (project, root) = self.broker.project_root_for_person(workspace, project)?;
        let repository = Repository::open(&root)
            .await
            .map_err(|e| e.to_tool_error())?;
        Ok((project, root, repository))
    }

    pub async fn status_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
    ) -> Result<GitStatusView, ToolError> {
        let (_, _, repository) = self.repository_for_person(workspace, project).await?;
        repository.status(true).await.map_err(|e| e.to_tool_error())
    }

    /// One file's diff, staged or not. A file Git does not track yet reads as all added
    /// (read through the project's confinement, like the file tools).
    pub async fn diff_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
        path: &str,
        staged: bool,
    ) -> Result<GitDiffView, ToolError> {
        let path = git_path(path).map_err(|e| e.to_tool_error())?;
        let (_, root, repository) = self.repository_for_person(workspace, project).await?;
        let untracked = !staged
            && (repository
                .status(true)
                .await
                .map_err(|e| e.to_tool_error())?)
            .entries
            .iter()
            .any(|e| e.path == path && e.worktree == "untracked");
        if !untracked {
            return diff(&repository, staged, Some(&path), DEFAULT_DIFF_BYTES).await;
        }
        lomi_broker::off_thread(move || {
            let read = crate::ProjectRoot::open(&root)
                .and_then(|r| r.read(&path, None, DEFAULT_DIFF_BYTES as usize))
                .map_err(ToolError::from)?;
            Ok(new_file_diff(&path, &read.bytes, read.truncated))
        })
        .await
    }

    pub async fn stage_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
        paths: &[String],
        stage_them: bool,
    ) -> Result<GitStaged, ToolError> {
        if paths.is_empty() || paths.len() > MAX_STAGE_PATHS {
            return Err(ToolError::invalid(format!(
                "give 1 to {MAX_STAGE_PATHS} paths"
            )));
        }
        let paths = (paths.iter().map(|p| git_path(p)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_tool_error())?;
        let (project, _, repository) = self.repository_for_person(workspace, project).await?;
        let _permit = self.broker.hold_project(&project).await;
        if stage_them {
            stage(&repository, paths).await
        } else {
            unstage(&repository, paths).await
        }
        .map_err(|e| e.to_tool_error())
    }

    /// The person's commit of what is staged, if HEAD is still `expected_head`.
    pub async fn commit_for_person(
        &self,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
        message: &str,
        expected_head: &str,
    ) -> Result<Value, ToolError> {
        if message.trim().is_empty() {
            return Err(ToolError::invalid("give a commit message"));
        }
        let (project, _, repository) = self.repository_for_person(workspace, project).await?;
        let _permit = self.broker.hold_project(&project).await;
        match commit(&repository, message, expected_head, PERSON).await {
            EffectOutcome::Succeeded(result) => Ok(result),
            EffectOutcome::Failed { error, .. } => Err(error),
            EffectOutcome::Unknown { message, .. } => Err(ToolError::internal(message)),
            EffectOutcome::Cancelled { .. } | EffectOutcome::Stopped(_) => {
                Err(ToolError::internal("the commit was stopped"))
            }
        }
    }
}

/// A file Git does not track, as a diff that adds every line.
fn new_file_diff(path: &str, bytes: &[u8], truncated: bool) -> GitDiffView {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return GitDiffView {
            diff: format!("new file {path}\nBinary file {path} added\n"),
            truncated,
        };
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut diff = format!(
        "new file {path}\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        diff.push('+');
        diff.push_str(line);
        diff.push('\n');
    }
    GitDiffView { diff, truncated }
}

fn refused(error: GitError) -> EffectOutcome {
    match error {
        GitError::Io(message) => EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message,
        },
        error => EffectOutcome::Failed {
            effect: EffectState::None,
            error: error.to_tool_error(),
        },
    }
}

impl ProjectEffect for Change {
    async fn apply(self, root: PathBuf) -> EffectOutcome {
        apply(&root, self).await
    }
}

async fn apply(root: &Path, change: Change) -> EffectOutcome {
    let repository = match Repository::open(root).await {
        Ok(repository) => repository,
        Err(error) => return refused(error),
    };
    match change {
        Change::Stage { paths } => settled(stage(&repository, paths).await),
        Change::Commit {
            message,
            expected_head,
        } => commit(&repository, &message, &expected_head, AGENT).await,
        Change::Branch {
            name,
            create,
            allow_uncommitted,
        } => settled(branch(&repository, &name, create, allow_uncommitted).await),
    }
}

/// A Git change that happened (its typed result) or was refused.
fn settled<T: serde::Serialize>(done: Result<T, GitError>) -> EffectOutcome {
    match done {
        Ok(result) => EffectOutcome::succeeded(&result),
        Err(error) => refused(error),
    }
}

/// `git add` checks every pathspec before it writes the index, so a refusal stages nothing.
async fn stage(repository: &Repository, paths: Vec<String>) -> Result<GitStaged, GitError> {
    let mut args = vec!["add", "--"];
    args.extend(paths.iter().map(String::as_str));
    repository.must(&args, &[]).await?;
    Ok(GitStaged { paths })
}

/// `git reset` of the paths' index entries to HEAD's (or their removal on an unborn branch);
/// the working tree is not touched.
async fn unstage(repository: &Repository, paths: Vec<String>) -> Result<GitStaged, GitError> {
    let mut args = vec!["reset", "-q", "--"];
    args.extend(paths.iter().map(String::as_str));
    repository.must(&args, &[]).await?;
    Ok(GitStaged { paths })
}

async fn commit(
    repository: &Repository,
    message: &str,
    expected_head: &str,
    (name, email): (&str, &str),
) -> EffectOutcome {
    let before = match repository.head().await {
        Ok(head) => head,
        Err(error) => return refused(error),
    };
    if before != expected_head {
        return refused(GitError::HeadMoved { current: before });
    }
    // A repository without an identity still takes the agent's commit, under a name that says
    // who made it; a configured identity is never overridden.
    let mut env = Vec::new();
    for (key, variables, fallback) in [
        ("user.name", ["GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"], name),
        (
            "user.email",
            ["GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"],
            email,
        ),
    ] {
        match repository.config(key).await {
            Ok(value) if value.is_empty() => {
                env.extend(variables.into_iter().map(|v| (v, fallback)));
            }
            Ok(_) => {}
            Err(error) => return refused(error),
        }
    }
    let committed = repository
        .run(&["commit", "-m", message], &env, MAX_MESSAGE_BYTES)
        .await;
    let after = repository.head().await;
    match (committed, after) {
        (Ok(output), Ok(after)) if output.success && after != before && !after.is_empty() => {
            // The parent is read back, not assumed: it is what Git really recorded.
            match repository.head_parent().await {
                Ok(parent) => EffectOutcome::succeeded(&GitCommitted {
                    commit: after,
                    parent,
                    undo: COMMIT_UNDO.to_owned(),
                }),
                Err(error) => EffectOutcome::Unknown {
                    effect: EffectState::Unknown,
                    message: format!("committed {after}, but its parent cannot be read: {error:?}"),
                },
            }
        }
        (Ok(output), Ok(after)) if after == before => EffectOutcome::Failed {
            effect: EffectState::None,
            error: ToolError::invalid(format!("nothing was committed: {}", output.explanation())),
        },
        (Ok(output), Ok(after)) => EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message: format!(
                "git commit exited {}, and HEAD is now {after}: {}",
                if output.success {
                    "cleanly"
                } else {
                    "with an error"
                },
                output.explanation()
            ),
        },
        (Err(error), _) | (_, Err(error)) => EffectOutcome::Unknown {
            effect: EffectState::Unknown,
            message: format!("whether the commit was made is unknown: {error:?}"),
        },
    }
}

async fn branch(
    repository: &Repository,
    name: &str,
    create: bool,
    allow_uncommitted: bool,
) -> Result<GitBranched, GitError> {
    repository
        .must(&["check-ref-format", "--branch", name], &[])
        .await
        .map_err(|_| GitError::Invalid(format!("{name:?} is not a valid branch name")))?;
    if !allow_uncommitted {
        let changed = repository
            .must(&["status", "--porcelain", "--untracked-files=no"], &[])
            .await?;
        let count = changed.text().lines().count();
        if count > 0 {
            return Err(GitError::Invalid(format!(
                "the working tree has uncommitted changes in {count} tracked path(s); commit them \
                 first, or pass allowUncommitted: true to carry them to {name}"
            )));
        }
    }
    // `--no-guess`: switching never creates a branch from a remote one by surprise.
    let args: &[&str] = if create {
        &["switch", "--create", name]
    } else {
        &["switch", "--no-guess", name]
    };
    repository.must(args, &[]).await?;
    let head = repository.head().await?;
    Ok(GitBranched {
        branch: name.to_owned(),
        head: (!head.is_empty()).then_some(head),
    })
}
