//! Running `git` for the Git tools: one project's repository at its canonical root, `git`
//! without a shell (every argument its own argv entry, literal pathspecs after `--`, no
//! prompts), in its own process group, with bounded output; and reading what it printed.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use lomi_protocol::tools::git::{GitStatusEntry, GitStatusView};
use lomi_protocol::{ErrorCode, ToolError};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

/// Git's messages are kept up to this many bytes; the rest is read and dropped.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024;
/// Status output past this is refused rather than parsed half-way.
const MAX_STATUS_BYTES: usize = 8 * 1024 * 1024;

/// Why a Git tool was refused or failed; each variant maps to one protocol error code.
#[derive(Debug)]
pub(crate) enum GitError {
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
    pub(crate) fn to_tool_error(&self) -> ToolError {
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
pub(crate) struct Output {
    pub(crate) success: bool,
    pub(crate) stdout: Vec<u8>,
    pub(crate) truncated: bool,
    pub(crate) stderr: String,
}

impl Output {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_owned()
    }

    /// Git's own explanation, for a refusal's message.
    pub(crate) fn explanation(&self) -> String {
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
pub(crate) struct Repository {
    root: PathBuf,
}

impl Repository {
    /// The project root, if it is the top of a Git working tree.
    pub(crate) async fn open(root: &Path) -> Result<Repository, GitError> {
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
    pub(crate) async fn run(
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
    pub(crate) async fn must(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Output, GitError> {
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
    pub(crate) async fn head(&self) -> Result<String, GitError> {
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
    pub(crate) async fn head_parent(&self) -> Result<Option<String>, GitError> {
        let output = self
            .run(&["rev-parse", "--verify", "-q", "HEAD^1"], &[], 256)
            .await?;
        Ok(output.success.then(|| output.text()))
    }

    pub(crate) async fn config(&self, key: &str) -> Result<String, GitError> {
        Ok(self.run(&["config", "--get", key], &[], 4096).await?.text())
    }

    /// The status; with `every_untracked_file`, each untracked file of an untracked directory
    /// (the person's Git view stages files), else the directory once, as Git shows it.
    pub(crate) async fn status(
        &self,
        every_untracked_file: bool,
    ) -> Result<GitStatusView, GitError> {
        let untracked = if every_untracked_file {
            "--untracked-files=all"
        } else {
            "--untracked-files=normal"
        };
        let output = self
            .run(
                &["status", "--porcelain=v2", "--branch", "-z", untracked],
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
pub(crate) fn git_path(rel: &str) -> Result<String, GitError> {
    crate::paths::dir(rel).map_err(|e| GitError::Invalid(e.to_string()))
}

/// A branch name Git's own rules will be asked about; this only keeps it from reading as an
/// option.
pub(crate) fn branch_name(name: &str) -> Result<(), GitError> {
    if name.is_empty() || name.starts_with('-') || name.contains('\0') {
        return Err(GitError::Invalid(format!(
            "{name:?} is not a branch name; use letters, digits, `/`, `-`, `_` or `.`, not starting with `-`"
        )));
    }
    Ok(())
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
