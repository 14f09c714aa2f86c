//! `lomi files list`, `lomi git status|diff|stage|unstage|commit` and `lomi document
//! open|show|save|reload`: a project's files, Git and editor documents from a terminal,
//! through the running Lomi's control socket, the same requests the window's views send.

use std::path::Path;

use clap::{Args, Subcommand};
use lomi_mcp::control::ControlRequest;
use lomi_protocol::{DocumentId, ProjectId, WorkspaceId};
use serde_json::Value;

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

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("")
}

fn render_listing(v: &Value) {
    for entry in v["entries"].as_array().into_iter().flatten() {
        let slash = if entry["kind"] == "dir" { "/" } else { "" };
        println!("{}{slash}", text(&entry["name"]));
    }
}

fn render_status(v: &Value) {
    println!(
        "{} at {}",
        v["branch"].as_str().unwrap_or("(detached)"),
        v["head"].as_str().unwrap_or("(no commit yet)")
    );
    for entry in v["entries"].as_array().into_iter().flatten() {
        println!(
            "  staged: {:<12} not staged: {:<12} {}",
            text(&entry["index"]),
            text(&entry["worktree"]),
            text(&entry["path"])
        );
    }
}

fn render_document(v: &Value) {
    let document = &v["document"];
    println!(
        "{}  {}  revision {}{}  disk: {}",
        text(&document["documentId"]),
        text(&document["path"]),
        text(&document["bufferRevision"]),
        if document["dirty"] == true {
            " (unsaved)"
        } else {
            ""
        },
        text(&v["disk"])
    );
    print!("{}", text(&document["text"]));
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
        render_listing,
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
            render_status,
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
            |v| print!("{}", text(&v["diff"])),
        ),
        GitCommand::Stage { project, paths } => (
            ControlRequest::GitStage {
                workspace_id: project.workspace_id,
                project_id: project.project,
                paths,
            },
            project.json,
            |_| println!("staged"),
        ),
        GitCommand::Unstage { project, paths } => (
            ControlRequest::GitUnstage {
                workspace_id: project.workspace_id,
                project_id: project.project,
                paths,
            },
            project.json,
            |_| println!("unstaged"),
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
            |v| println!("committed {}", text(&v["commit"])),
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
            render_document,
        ),
        DocumentCommand::Show { document_id, json } => (
            ControlRequest::DocumentGet { document_id },
            json,
            render_document,
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
            |v| println!("saved {} ({} bytes)", text(&v["path"]), v["size"]),
        ),
        DocumentCommand::Reload { document_id, json } => {
            (ControlRequest::DocumentReload { document_id }, json, |v| {
                println!("reloaded at revision {}", text(&v["bufferRevision"]))
            })
        }
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
