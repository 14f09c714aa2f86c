//! The Git tools over the broker, through the `git` CLI: status and diff answer at once; stage,
//! commit and branch are operations under the project's permit. Git runs without a shell, with
//! every argument its own argv entry, literal pathspecs after `--`, and no prompts.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use lomi_broker::ProjectChange;
use lomi_broker::{Broker, EffectOutcome};
use lomi_protocol::tools::git::{
    GitBranchInput, GitBranched, GitCommitInput, GitCommitted, GitDiffInput, GitDiffView,
    GitStageInput, GitStaged, GitStatusEntry, GitStatusInput, GitStatusView,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::{EffectState, ErrorCode, PairingId, ProjectId, Tool, ToolError, WorkspaceId};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

const DEFAULT_DIFF_BYTES: u32 = 256 * 1024;
const MAX_DIFF_BYTES: u32 = 4 * 1024 * 1024;
/// Status output past this is refused rather than parsed half-way.
const MAX_STATUS_BYTES: usize = 8 * 1024 * 1024;
/// Git's messages are kept up to this many bytes; the rest is read and dropped.
const MAX_MESSAGE_BYTES: usize = 16 * 1024;
const MAX_STAGE_PATHS: usize = 1000;
const COMMIT_UNDO: &str =
    "A commit cannot be undone by cancelling; make a new commit to change it.";

/// The Git tools of one broker.
#[derive(Clone)]
pub struct ProjectGit {
    broker: Broker,
}

/// Why a Git tool was refused or failed; each variant maps to one protocol error code.
#[derive(Debug)]
enum GitError {
    /// The project is not (the top of) a Git repository, or `git` is not installed.
    Unsupported(String),
    /// The request cannot be done as asked (bad path or name, nothing staged, dirty tree…).
    Invalid(String),
    /// HEAD is not the commit the agent saw.
    HeadMoved { current: String },
    /// Git or the operating system failed in a way the request cannot fix.
    Io(String),
}

impl GitError {
    fn to_tool_error(&self) -> ToolError {
        match self {
            GitError::Unsupported(message) => ToolError::new(ErrorCode::Unsupported, message),
            GitError::Invalid(message) => ToolError::invalid(message),
            GitError::HeadMoved { current } => ToolError::new(
                ErrorCode::RevisionMismatch,
                format!(
                    "HEAD is {} now, not the commit you saw; read lomi_git_status again",
                    if current.is_empty() {
                        "unborn"
                    } else {
                        current
                    }
                ),
            )
            .with_details(serde_json::json!({ "currentRevision": current })),
            GitError::Io(message) => ToolError::new(ErrorCode::Internal, message),
        }
    }
}

/// What a finished `git` run printed (stdout bounded, stderr shortened).
struct Output {
    success: bool,
    stdout: Vec<u8>,
    truncated: bool,
    stderr: String,
}

impl Output {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_owned()
    }

    /// Git's own explanation, for a refusal's message.
    fn explanation(&self) -> String {
        let out = self.text();
        let err = self.stderr.trim();
        match (out.is_empty(), err.is_empty()) {
            (_, false) => err.to_owned(),
            (false, true) => out,
            (true, true) => "git gave no reason".to_owned(),
        }
    }
}

/// Ends what is left of a Git process group (the hooks of a Git that was killed).
fn end_group(group: u32) {
    let Some(pid) = i32::try_from(group)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    match rustix::process::kill_process_group(pid, rustix::process::Signal::KILL) {
        // Nothing left of it: the hooks had ended too.
        Ok(()) | Err(rustix::io::Errno::SRCH) => {}
        Err(error) => tracing::warn!("ending the processes git left behind failed: {error}"),
    }
}

/// One project's repository, at its canonical root.
struct Repository {
    root: PathBuf,
}

impl Repository {
    /// The project root, if it is the top of a Git working tree.
    async fn open(root: &Path) -> Result<Repository, GitError> {
        let root = std::fs::canonicalize(root)
            .map_err(|e| GitError::Io(format!("the project directory cannot be opened: {e}")))?;
        let repository = Repository { root };
        let inside = repository
            .run(&["rev-parse", "--is-inside-work-tree"], &[], 64)
            .await?;
        if !inside.success || inside.text() != "true" {
            return Err(GitError::Unsupported(
                "the project is not a Git repository (its root has no .git); Git tools need one"
                    .to_owned(),
            ));
        }
        Ok(repository)
    }

    /// Runs `git <args>` in the project, keeping at most `limit` bytes of stdout; a longer
    /// output stops the process and sets `truncated`.
    async fn run(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        limit: usize,
    ) -> Result<Output, GitError> {
        let mut command = Command::new("git");
        // Only the project itself is a repository: Git must not find one in a parent directory.
        if let Some(parent) = self.root.parent() {
            command.env("GIT_CEILING_DIRECTORIES", parent);
        }
        command
            .arg("-C")
            .arg(&self.root)
            // A repository's config must not start a monitor program on a read.
            .args(["-c", "core.fsmonitor=false"])
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so the hooks it runs can be ended with it (below).
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                GitError::Unsupported("git is not installed on this computer".to_owned())
            }
            _ => GitError::Io(format!("git could not be started: {e}")),
        })?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(GitError::Io("git's output could not be read".to_owned()));
        };
        let stderr = tokio::spawn(read_bounded(stderr, MAX_MESSAGE_BYTES));
        let (stdout, truncated) = read_bounded(stdout, limit)
            .await
            .map_err(|e| GitError::Io(format!("reading git's output failed: {e}")))?;
        if truncated {
            // Enough was read; stopping git is what bounds the read.
            child
                .start_kill()
                .map_err(|e| GitError::Io(format!("stopping git failed: {e}")))?;
        }
        let group = child.id();
        let status = child
            .wait()
            .await
            .map_err(|e| GitError::Io(format!("waiting for git failed: {e}")))?;
        let killed = std::os::unix::process::ExitStatusExt::signal(&status);
        if let (Some(_), Some(group)) = (killed, group) {
            // Git was killed in the middle of its work: a hook it was running (which holds
            // Git's stderr) has nobody to report to any more and would hold this call until
            // it ends on its own.
            end_group(group);
        }
        let (stderr, _) = stderr
            .await
            .map_err(|e| GitError::Io(format!("reading git's messages failed: {e}")))?
            .map_err(|e| GitError::Io(format!("reading git's messages failed: {e}")))?;
        let mut stderr = String::from_utf8_lossy(&stderr).into_owned();
        if let Some(signal) = killed
            && !truncated
        {
            stderr.push_str(&format!("\ngit was killed by signal {signal}"));
        }
        Ok(Output {
            success: status.success() && !truncated,
            stdout,
            truncated,
            stderr,
        })
    }

    /// A command that must succeed; a refusal is `Invalid` with Git's reason.
    async fn must(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output, GitError> {
        let output = self.run(args, env, MAX_MESSAGE_BYTES).await?;
        if output.success {
            Ok(output)
        } else {
            Err(GitError::Invalid(format!(
                "git {} refused: {}",
                args.first().copied().unwrap_or_default(),
                output.explanation()
            )))
        }
    }

    /// HEAD's full SHA, or "" on an unborn branch.
    async fn head(&self) -> Result<String, GitError> {
        let output = self
            .run(&["rev-parse", "--verify", "-q", "HEAD"], &[], 256)
            .await?;
        Ok(if output.success {
            output.text()
        } else {
            String::new()
        })
    }

    /// The first parent of HEAD, if any.
    async fn head_parent(&self) -> Result<Option<String>, GitError> {
        let output = self
            .run(&["rev-parse", "--verify", "-q", "HEAD^1"], &[], 256)
            .await?;
        Ok(output.success.then(|| output.text()))
    }

    async fn config(&self, key: &str) -> Result<String, GitError> {
        Ok(self.run(&["config", "--get", key], &[], 4096).await?.text())
    }

    async fn status(&self) -> Result<GitStatusView, GitError> {
        let output = self
            .run(
                &["status", "--porcelain=v2", "--branch", "-z"],
                &[],
                MAX_STATUS_BYTES,
            )
            .await?;
        if output.truncated {
            return Err(GitError::Invalid(format!(
                "the status is over {MAX_STATUS_BYTES} bytes; ignore generated files in .gitignore"
            )));
        }
        if !output.success {
            return Err(GitError::Io(format!(
                "git status failed: {}",
                output.explanation()
            )));
        }
        parse_status(&output.stdout)
    }
}

/// Reads all of `reader`, keeping the first `limit` bytes; says whether there was more.
/// Reading on past the limit (and dropping it) keeps a chatty process from blocking.
async fn read_bounded(
    mut reader: impl AsyncRead + Unpin,
    limit: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = reader.read(&mut chunk).await?;
        if n == 0 {
            return Ok((kept, false));
        }
        let room = limit - kept.len();
        if n > room {
            kept.extend_from_slice(&chunk[..room]);
            return Ok((kept, true));
        }
        kept.extend_from_slice(&chunk[..n]);
    }
}

fn change_name(code: char) -> &'static str {
    match code {
        '.' => "unmodified",
        'M' => "modified",
        'T' => "type_changed",
        'A' => "added",
        'D' => "deleted",
        'R' => "renamed",
        'C' => "copied",
        'U' => "unmerged",
        _ => "unknown",
    }
}

/// Parses `git status --porcelain=v2 --branch -z`.
fn parse_status(raw: &[u8]) -> Result<GitStatusView, GitError> {
    let text = String::from_utf8_lossy(raw);
    let mut records = text.split('\0').filter(|r| !r.is_empty());
    let mut view = GitStatusView {
        head: None,
        branch: None,
        entries: Vec::new(),
        clean: true,
    };
    let malformed = |record: &str| GitError::Io(format!("unexpected git status line {record:?}"));
    while let Some(record) = records.next() {
        let (kind, rest) = record.split_once(' ').ok_or_else(|| malformed(record))?;
        match kind {
            "#" => {
                if let Some(oid) = rest.strip_prefix("branch.oid ") {
                    view.head = (oid != "(initial)").then(|| oid.to_owned());
                } else if let Some(head) = rest.strip_prefix("branch.head ") {
                    view.branch = (head != "(detached)").then(|| head.to_owned());
                }
            }
            // Ordinary (8 fields before the path), renamed or copied (9, then the original
            // path as its own record) and unmerged (10) entries.
            "1" | "2" | "u" => {
                let fields = match kind {
                    "1" => 8,
                    "2" => 9,
                    _ => 10,
                };
                let parts: Vec<&str> = rest.splitn(fields, ' ').collect();
                let (Some(xy), Some(path)) = (parts.first(), parts.get(fields - 1)) else {
                    return Err(malformed(record));
                };
                let mut codes = xy.chars();
                let (Some(x), Some(y)) = (codes.next(), codes.next()) else {
                    return Err(malformed(record));
                };
                if kind == "2" {
                    records.next().ok_or_else(|| malformed(record))?;
                }
                let (index, worktree) = if kind == "u" {
                    ("unmerged", "unmerged")
                } else {
                    (change_name(x), change_name(y))
                };
                view.entries.push(GitStatusEntry {
                    path: (*path).to_owned(),
                    index: index.to_owned(),
                    worktree: worktree.to_owned(),
                });
            }
            "?" => view.entries.push(GitStatusEntry {
                path: rest.to_owned(),
                index: "untracked".to_owned(),
                worktree: "untracked".to_owned(),
            }),
            "!" => {}
            _ => return Err(malformed(record)),
        }
    }
    view.clean = view.entries.is_empty();
    Ok(view)
}

/// A project-relative path for Git: the file tools' lexical rules (no absolute path, no `..`,
/// no NUL), normalised. Git itself refuses paths through a symlink or outside the work tree.
fn git_path(rel: &str) -> Result<String, GitError> {
    crate::paths::dir(rel).map_err(|e| GitError::Invalid(e.to_string()))
}

/// A branch name Git's own rules will be asked about; this only keeps it from reading as an
/// option.
fn branch_name(name: &str) -> Result<(), GitError> {
    if name.is_empty() || name.starts_with('-') || name.contains('\0') {
        return Err(GitError::Invalid(format!(
            "{name:?} is not a branch name; use letters, digits, `/`, `-`, `_` or `.`, not starting with `-`"
        )));
    }
    Ok(())
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
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
        repository.status().await.map_err(|e| e.to_tool_error())
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
        // No external diff programs or text conversion filters: the bytes as Git stores them.
        let mut args = vec!["diff", "--no-color", "--no-ext-diff", "--no-textconv"];
        if input.staged.unwrap_or(false) {
            args.push("--cached");
        }
        args.push("--");
        if let Some(path) = &path {
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
        self.mutate(
            caller,
            ProjectChange::of(Tool::GitStage, &input, None),
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
        self.mutate(
            caller,
            ProjectChange::of(Tool::GitCommit, &input, revision),
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
        self.mutate(
            caller,
            ProjectChange::of(Tool::GitBranch, &input, None),
            change,
        )
        .await
    }

    /// One Git mutation through the engine, under the project's permit (shared with the file
    /// tools), so Lomi's own changes to the project never interleave with it.
    async fn mutate(
        &self,
        caller: &PairingId,
        request: ProjectChange<'_>,
        change: Change,
    ) -> Result<OperationView, ToolError> {
        self.broker
            .change_project(
                caller,
                request,
                async { Ok(()) },
                move |root, (), _context| async move { apply(&root, change).await },
            )
            .await
    }
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

async fn apply(root: &Path, change: Change) -> EffectOutcome {
    let repository = match Repository::open(root).await {
        Ok(repository) => repository,
        Err(error) => return refused(error),
    };
    let done = match change {
        Change::Stage { paths } => stage(&repository, paths).await.map(|v| to_value(&v)),
        Change::Commit {
            message,
            expected_head,
        } => return commit(&repository, &message, &expected_head).await,
        Change::Branch {
            name,
            create,
            allow_uncommitted,
        } => branch(&repository, &name, create, allow_uncommitted)
            .await
            .map(|v| to_value(&v)),
    };
    match done {
        Ok(result) => EffectOutcome::Succeeded(result),
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

async fn commit(repository: &Repository, message: &str, expected_head: &str) -> EffectOutcome {
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
        (
            "user.name",
            ["GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"],
            "Lomi agent",
        ),
        (
            "user.email",
            ["GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"],
            "agent@lomi.invalid",
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
                Ok(parent) => EffectOutcome::Succeeded(to_value(&GitCommitted {
                    commit: after,
                    parent,
                    undo: COMMIT_UNDO.to_owned(),
                })),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_v2() {
        let raw = b"# branch.oid 1111111111111111111111111111111111111111\0# branch.head main\0\
1 .M N... 100644 100644 100644 aaaa bbbb src/a b.rs\0\
2 R. N... 100644 100644 100644 aaaa bbbb R100 new.rs\0old.rs\0\
u UU N... 100644 100644 100644 100644 a b c both.rs\0\
? notes.txt\0";
        let view = parse_status(raw).expect("parses");
        assert_eq!(
            view.head.as_deref(),
            Some("1111111111111111111111111111111111111111")
        );
        assert_eq!(view.branch.as_deref(), Some("main"));
        let entries: Vec<(&str, &str, &str)> = view
            .entries
            .iter()
            .map(|e| (e.path.as_str(), e.index.as_str(), e.worktree.as_str()))
            .collect();
        assert_eq!(
            entries,
            [
                ("src/a b.rs", "unmodified", "modified"),
                ("new.rs", "renamed", "unmodified"),
                ("both.rs", "unmerged", "unmerged"),
                ("notes.txt", "untracked", "untracked"),
            ]
        );
        assert!(!view.clean);

        let unborn =
            parse_status(b"# branch.oid (initial)\0# branch.head (detached)\0").expect("parses");
        assert_eq!(
            (unborn.head, unborn.branch, unborn.clean),
            (None, None, true)
        );
    }

    #[test]
    fn paths_and_names_are_refused_before_git() {
        for bad in ["../x", "/etc/passwd", "a/../../x", "a\0b"] {
            assert!(
                matches!(git_path(bad), Err(GitError::Invalid(_))),
                "{bad:?}"
            );
        }
        assert_eq!(git_path("./-rf").ok().as_deref(), Some("-rf"));
        for bad in ["", "-f", "a\0b"] {
            assert!(branch_name(bad).is_err(), "{bad:?}");
        }
    }
}
