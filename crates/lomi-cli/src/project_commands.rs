//! `lomi files list`, `lomi git status|diff|stage|unstage|commit` and `lomi document
//! open|show|save|reload`: a project's files, Git and editor documents from a terminal,
//! through the running Lomi's control socket, the same requests the window's views send.

use std::path::Path;

use clap::{Args, Subcommand};
use lomi_mcp::control::ControlRequest;
use lomi_protocol::tools::editor::{EditorSaved, PersonDocument, PersonEdited};
use lomi_protocol::tools::files::DirListView;
use lomi_protocol::tools::git::{GitCommitted, GitDiffView, GitStaged, GitStatusView};
use lomi_protocol::{DocumentId, ProjectId, WorkspaceId};

use crate::person::{render, wire_name};

/// Which project: the workspace's only one, or the one named.
#[derive(Debug, Args)]
pub struct Project {
    workspace_id: WorkspaceId,
    /// Needed when the workspace has several projects.
    #[arg(long)]
    project: Option<ProjectId>,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub enum FilesCommand {
    /// One directory of a project (the root by default), `.git` left out.
    List {
        #[command(flatten)]
        project: Project,
        #[arg(default_value = "")]
        path: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum GitCommand {
    /// The project's status: each changed file, staged and not.
    Status {
        #[command(flatten)]
        project: Project,
    },
    /// One file's change not staged yet (or with --staged, its staged change).
    Diff {
        #[command(flatten)]
        project: Project,
        path: String,
        #[arg(long)]
        staged: bool,
    },
    Stage {
        #[command(flatten)]
        project: Project,
        #[arg(required = true)]
        paths: Vec<String>,
    },
    Unstage {
        #[command(flatten)]
        project: Project,
        #[arg(required = true)]
        paths: Vec<String>,
    },
    /// Commit what is staged, if HEAD is still HEAD (the `head` of `lomi git status`).
    Commit {
        #[command(flatten)]
        project: Project,
        #[arg(long, short)]
        message: String,
        #[arg(long, value_name = "HEAD")]
        expected_head: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum DocumentCommand {
    /// Open a project file in the editor (the document agents edit too).
    Open {
        #[command(flatten)]
        project: Project,
        path: String,
    },
    /// An open document's text, revision and state on disk.
    Show {
        document_id: DocumentId,
        #[arg(long)]
        json: bool,
    },
    /// Save the text at REVISION; --overwrite writes over a file changed on disk.
    Save {
        document_id: DocumentId,
        #[arg(long, value_name = "REVISION")]
        expected_revision: String,
        #[arg(long)]
        overwrite: bool,
        #[arg(long)]
        json: bool,
    },
    /// Take the file's bytes on disk back into the document.
    Reload {
        document_id: DocumentId,
        #[arg(long)]
        json: bool,
    },
}

fn render_listing(v: &DirListView) {
    for entry in &v.entries {
        let slash = if entry.kind == "dir" { "/" } else { "" };
        println!("{}{slash}", entry.name);
    }
}

fn render_status(v: &GitStatusView) {
    println!(
        "{} at {}",
        v.branch.as_deref().unwrap_or("(detached)"),
        v.head.as_deref().unwrap_or("(no commit yet)")
    );
    for entry in &v.entries {
        println!(
            "  staged: {:<12} not staged: {:<12} {}",
            entry.index, entry.worktree, entry.path
        );
    }
}

fn render_document(v: &PersonDocument) {
    let document = &v.document;
    println!(
        "{}  {}  revision {}{}  disk: {}",
        document.document_id,
        document.path,
        document.buffer_revision,
        if document.dirty { " (unsaved)" } else { "" },
        wire_name(&v.disk)
    );
    print!("{}", document.text);
}

pub fn run_files(data_dir: &Path, command: FilesCommand) -> anyhow::Result<()> {
    let FilesCommand::List { project, path } = command;
    send(
        data_dir,
        ControlRequest::FileList {
            workspace_id: project.workspace_id,
            project_id: project.project,
            path,
        },
        project.json,
        render(render_listing),
    )
}

pub fn run_git(data_dir: &Path, command: GitCommand) -> anyhow::Result<()> {
    let (request, json, render): (ControlRequest, bool, crate::Render) = match command {
        GitCommand::Status { project } => (
            ControlRequest::GitStatus {
                workspace_id: project.workspace_id,
                project_id: project.project,
            },
            project.json,
            render(render_status),
        ),
        GitCommand::Diff {
            project,
            path,
            staged,
        } => (
            ControlRequest::GitDiff {
                workspace_id: project.workspace_id,
                project_id: project.project,
                path,
                staged,
            },
            project.json,
            render(|v: &GitDiffView| print!("{}", v.diff)),
        ),
        GitCommand::Stage { project, paths } => (
            ControlRequest::GitStage {
                workspace_id: project.workspace_id,
                project_id: project.project,
                paths,
            },
            project.json,
            render(|_: &GitStaged| println!("staged")),
        ),
        GitCommand::Unstage { project, paths } => (
            ControlRequest::GitUnstage {
                workspace_id: project.workspace_id,
                project_id: project.project,
                paths,
            },
            project.json,
            render(|_: &GitStaged| println!("unstaged")),
        ),
        GitCommand::Commit {
            project,
            message,
            expected_head,
        } => (
            ControlRequest::GitCommit {
                workspace_id: project.workspace_id,
                project_id: project.project,
                message,
                expected_head_revision: expected_head,
            },
            project.json,
            render(|v: &GitCommitted| println!("committed {}", v.commit)),
        ),
    };
    send(data_dir, request, json, render)
}

pub fn run_document(data_dir: &Path, command: DocumentCommand) -> anyhow::Result<()> {
    let (request, json, render): (ControlRequest, bool, crate::Render) = match command {
        DocumentCommand::Open { project, path } => (
            ControlRequest::DocumentOpen {
                workspace_id: project.workspace_id,
                project_id: project.project,
                path,
            },
            project.json,
            render(render_document),
        ),
        DocumentCommand::Show { document_id, json } => (
            ControlRequest::DocumentGet { document_id },
            json,
            render(render_document),
        ),
        DocumentCommand::Save {
            document_id,
            expected_revision,
            overwrite,
            json,
        } => (
            ControlRequest::DocumentSave {
                document_id,
                expected_buffer_revision: expected_revision,
                overwrite,
            },
            json,
            render(|v: &EditorSaved| println!("saved {} ({} bytes)", v.path, v.size)),
        ),
        DocumentCommand::Reload { document_id, json } => (
            ControlRequest::DocumentReload { document_id },
            json,
            render(|v: &PersonEdited| println!("reloaded at revision {}", v.buffer_revision)),
        ),
    };
    send(data_dir, request, json, render)
}

fn send(
    data_dir: &Path,
    request: ControlRequest,
    json: bool,
    render: crate::Render,
) -> anyhow::Result<()> {
    crate::runtime()?.block_on(crate::person::send(data_dir, request, json, render))
}
