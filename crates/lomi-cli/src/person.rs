//! The person's commands against the running broker, over the local socket: workspaces,
//! pairings and grants, decisions, and every receipt.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use lomi_mcp::control::ControlRequest;
use lomi_protocol::control::{
    AwaitingDecision, Decided, PairingApproved, PairingCreated, PairingDecided, PairingFamilies,
    PairingSummary, PolicyEntry, ProjectAdded, ProjectRemoved, WorkspaceRemoved,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::session::{PairingState, WorkspaceView};
use lomi_protocol::{
    Effect, EffectDetail, Family, OperationId, PairingId, ProjectId, Reply, WorkspaceId,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Add a workspace with one project directory; prints its ids.
    Add {
        #[arg(long)]
        name: String,
        /// The project's root directory.
        #[arg(long)]
        project: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// List workspaces with their projects and revisions.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a workspace and every pairing's grant of it (refused while it has panels).
    Remove {
        workspace_id: WorkspaceId,
        #[arg(long)]
        json: bool,
    },
    /// Add another project directory to a workspace.
    AddProject {
        workspace_id: WorkspaceId,
        /// The project's root directory.
        project: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Remove a project from its workspace (a workspace keeps at least one; its files stay).
    RemoveProject {
        workspace_id: WorkspaceId,
        project_id: ProjectId,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PairingCommand {
    /// List pairings: pending ones wait for you.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending pairing, granting the named workspaces (repeat --workspace).
    Approve {
        pairing_id: PairingId,
        #[arg(long = "workspace")]
        workspaces: Vec<WorkspaceId>,
        /// Only for the client's current session: it is pending again after it reconnects.
        #[arg(long)]
        session: bool,
        /// Show it only this family of tools (repeat; workspace, terminal, files, editor, git,
        /// browser, android, chat). Default: the families its client asked for, or every family.
        #[arg(long = "family", value_parser = family)]
        families: Vec<Family>,
        #[arg(long)]
        json: bool,
    },
    /// Change which tool families an approved pairing sees; its client is told at once.
    Families {
        pairing_id: PairingId,
        /// A family it sees (repeat).
        #[arg(long = "family", value_parser = family, required_unless_present = "all")]
        families: Vec<Family>,
        /// Every family, including ones a later Lomi adds.
        #[arg(long, conflicts_with = "families")]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Deny a pending pairing.
    Deny {
        pairing_id: PairingId,
        #[arg(long)]
        json: bool,
    },
    /// Revoke an approved pairing at once.
    Revoke {
        pairing_id: PairingId,
        #[arg(long)]
        json: bool,
    },
    /// Create an approved pairing ahead, with a bearer token and a client config to paste.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long = "workspace")]
        workspaces: Vec<WorkspaceId>,
        /// Show it only this family of tools (repeat). Default: every family.
        #[arg(long = "family", value_parser = family)]
        families: Vec<Family>,
        #[arg(long)]
        json: bool,
    },
}

/// A tool family named on the command line.
fn family(name: &str) -> Result<Family, String> {
    Family::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        format!(
            "no tool family {name:?}; the families are {}",
            names.join(", ")
        )
    })
}

/// The families given with `--family`, or every family (`None`) when none was.
pub fn chosen_families(families: Vec<Family>) -> Option<std::collections::BTreeSet<Family>> {
    (!families.is_empty()).then(|| families.into_iter().collect())
}

#[derive(Debug, Subcommand)]
pub enum OperationCommand {
    /// Every receipt, newest first, including outcome_unknown ones.
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
        /// List the history instead: settled receipts that maintenance moved out of the live
        /// store (their retry epochs were retired or expired).
        #[arg(long)]
        history: bool,
    },
    /// One receipt in full, live or in the history.
    Show {
        operation_id: OperationId,
        #[arg(long)]
        json: bool,
    },
    /// Write the whole history as JSON Lines (one receipt per line, oldest first) to FILE, or
    /// to standard output without FILE or with `-`.
    Export {
        /// What to export (the history is the one choice for now; required, so a later choice
        /// cannot change what this command means).
        #[arg(long, required = true)]
        history: bool,
        file: Option<std::path::PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Decision {
    Approve,
    Deny,
}

/// Sends `request` to the running Lomi; its data as sent, or the envelope's error as one line.
pub async fn ask_data(data_dir: &Path, request: &ControlRequest) -> anyhow::Result<Value> {
    let reply = lomi_mcp::local::request(data_dir, request).await?;
    match serde_json::from_value::<Reply<Value>>(reply).context("Lomi's reply")? {
        Reply::Ok { data, .. } => Ok(data),
        Reply::Error { code, message, .. } => anyhow::bail!("{code}: {message}"),
    }
}

/// Sends `request` to the running Lomi; its data as the reply's type.
pub async fn ask<T: DeserializeOwned>(
    data_dir: &Path,
    request: &ControlRequest,
) -> anyhow::Result<T> {
    decode(ask_data(data_dir, request).await?)
}

/// A reply's data as its type.
pub fn decode<T: DeserializeOwned>(data: Value) -> anyhow::Result<T> {
    serde_json::from_value(data).context("Lomi's reply is not what this lomi expects")
}

/// How a command prints a reply's data: decoded into the reply's type, then shown.
pub type Render = Box<dyn FnOnce(Value) -> anyhow::Result<()>>;

/// Prints a reply of type `T` with `show`.
pub fn render<T: DeserializeOwned>(show: impl FnOnce(&T) + 'static) -> Render {
    Box::new(move |data| {
        show(&decode::<T>(data)?);
        Ok(())
    })
}

/// Sends `request` and prints the answer (as sent with `json`); an error envelope becomes one
/// line and exit 1.
pub async fn send(
    data_dir: &Path,
    request: ControlRequest,
    json: bool,
    render: Render,
) -> anyhow::Result<()> {
    let data = ask_data(data_dir, &request).await?;
    if json {
        crate::print_out(&serde_json::to_string_pretty(&data)?)
    } else {
        render(data)
    }
}

/// Ids and names joined for a line, or `none`.
fn listed<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|item| item.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn render_workspace(w: &WorkspaceView) {
    println!(
        "{}  {}  (revision {})",
        w.workspace_id, w.name, w.domain_revision
    );
    for p in &w.projects {
        println!("    project {}  {}", p.project_id, p.root);
    }
}

pub fn render_project_added(v: &ProjectAdded) {
    println!(
        "workspace {}: project {} added  {}",
        v.workspace_id, v.project.project_id, v.project.root
    );
}

pub fn render_project_removed(v: &ProjectRemoved) {
    println!(
        "workspace {}: project {} removed",
        v.workspace_id, v.project_id
    );
}

pub fn render_workspace_removed(v: &WorkspaceRemoved) {
    println!("workspace {} removed", v.workspace_id);
}

pub fn render_workspaces(list: &Vec<WorkspaceView>) {
    if list.is_empty() {
        println!("no workspaces; add one with `lomi workspace add --name NAME --project PATH`");
    }
    for w in list {
        render_workspace(w);
    }
}

/// An enum's value as the wire names it (a pairing state, a message role).
pub fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::new(),
    }
}

pub fn render_pairings(list: &Vec<PairingSummary>) {
    if list.is_empty() {
        println!("no pairings");
    }
    for p in list {
        let families = match (&p.families, &p.requested_families) {
            (None, Some(asked)) if p.state == PairingState::Pending => {
                format!("asks for {}", listed(asked.iter().map(|f| f.name())))
            }
            (None, _) => "all".to_owned(),
            (Some(list), _) => listed(list.iter().map(|f| f.name())),
        };
        println!(
            "{}  {:<8}  code {}  \"{}\"  ({})  grants: {}  tools: {}",
            p.pairing_id,
            wire_name(&p.state),
            p.verification_code,
            p.client_name,
            wire_name(&p.credential),
            if p.grants.is_empty() {
                "none".to_owned()
            } else {
                listed(&p.grants)
            },
            if families.is_empty() {
                "session tools only".to_owned()
            } else {
                families
            }
        );
    }
}

/// Each waiting operation: its id, tool and client, then what it will do (its effect: the
/// diff, the file, the command, the message), then its exact arguments.
pub fn render_decisions(list: &Vec<AwaitingDecision>) {
    for d in list {
        println!(
            "{}  {}  (pairing {}, workspace {})",
            d.operation_id, d.tool, d.pairing_id, d.workspace_id
        );
        print!("{}", effect_text(&d.effect));
        println!("    arguments: {}", d.arguments);
    }
}

/// An effect as a person reads it in a terminal: the sentence, then what exactly, indented.
pub fn effect_text(effect: &Effect) -> String {
    let mut out = format!("    {}\n", effect.summary);
    let mut line = |label: &str, value: &str| out.push_str(&format!("    {label}: {value}\n"));
    let mut lines = Vec::new();
    match &effect.detail {
        EffectDetail::FileWrite {
            path,
            diff,
            truncated,
            size_before,
            size_after,
            note,
            ..
        } => {
            line("file", path);
            let before = size_before.map_or("none".to_owned(), |s| format!("{s} bytes"));
            line("size", &format!("{before} → {size_after} bytes"));
            if let Some(note) = note {
                line("note", note);
            }
            if let Some(diff) = diff {
                lines.push(("diff", diff.clone(), *truncated));
            }
        }
        EffectDetail::FileDelete {
            path,
            size,
            first_lines,
            truncated,
            note,
            ..
        } => {
            line("file", path);
            if let Some(size) = size {
                line("size", &format!("{size} bytes"));
            }
            if let Some(note) = note {
                line("note", note);
            }
            if let Some(first) = first_lines {
                lines.push(("first lines", first.clone(), *truncated));
            }
        }
        EffectDetail::Move { from, to } => {
            line("from", from);
            line("to", to);
        }
        EffectDetail::Commit {
            message,
            files,
            staged_diff,
            truncated,
            note,
        } => {
            lines.push(("message", message.clone(), false));
            line("staged files", &files.join(", "));
            if let Some(note) = note {
                line("note", note);
            }
            if let Some(diff) = staged_diff {
                lines.push(("staged diff", diff.clone(), *truncated));
            }
        }
        EffectDetail::Git { action, files } => {
            line("action", action);
            line("files", &files.join(", "));
        }
        EffectDetail::Typed { into, text } => {
            line("into", into);
            lines.push(("text", text.clone(), false));
        }
        EffectDetail::Command { on, command } => {
            line("on", on);
            lines.push(("command", command.clone(), false));
        }
        EffectDetail::Script { script, truncated } => {
            lines.push(("script", script.clone(), *truncated));
        }
        EffectDetail::Navigate { url } => line("address", url),
        EffectDetail::ChatSend {
            message,
            conversation,
            provider,
            model,
            note,
        } => {
            line("provider", provider.as_deref().unwrap_or("unknown"));
            line("model", model.as_deref().unwrap_or("unknown"));
            if let Some(conversation) = conversation {
                line("conversation", conversation);
            }
            if let Some(note) = note {
                line("note", note);
            }
            if let Some(message) = message {
                lines.push(("message", message.clone(), false));
            }
        }
        EffectDetail::Device { serial, model } => {
            line("serial", serial);
            line("model", model.as_deref().unwrap_or("not known"));
        }
        EffectDetail::Change { facts } => {
            for fact in facts {
                line(&fact.label, &fact.value);
            }
        }
    }
    for (label, body, truncated) in lines {
        out.push_str(&format!("    {label}:\n"));
        for text in body.lines() {
            out.push_str(&format!("      {text}\n"));
        }
        if truncated {
            out.push_str("      … (cut here; the rest is not shown)\n");
        }
    }
    out
}

/// Every mutating tool, grouped by family in plain words, ticked when it waits for you.
pub fn render_policy(list: &Vec<PolicyEntry>) {
    let mut family = "";
    for t in list {
        if t.family_label != family {
            println!("{}", t.family_label);
            family = &t.family_label;
        }
        println!(
            "  [{}] {:<44} {}",
            if t.confirm { "x" } else { " " },
            t.label,
            t.tool
        );
    }
}

pub fn render_pairing_decided(v: &PairingDecided) {
    println!("{}: {}", v.pairing_id, wire_name(&v.state));
}

pub fn render_pairing_approved(v: &PairingApproved) {
    println!("{}: {}", v.pairing_id, wire_name(&v.state));
}

pub fn render_decided(v: &Decided) {
    println!("{}: {}", v.operation_id, wire_name(&v.decision));
}

pub fn render_families(v: &PairingFamilies) {
    let families = match &v.families {
        None => "every tool family".to_owned(),
        Some(list) if list.is_empty() => "the session tools only".to_owned(),
        Some(list) => listed(list.iter().map(|f| f.name())),
    };
    println!("{}: sees {families}", v.pairing_id);
}

pub fn render_created(v: &PairingCreated) {
    let (url, token) = (&v.url, &v.token);
    println!("pairing {} created and approved", v.pairing_id);
    println!("bearer token (shown once; keep it secret): {token}");
    println!();
    println!("Claude Code:");
    println!(
        "  claude mcp add --transport http lomi {url} --header \"Authorization: Bearer {token}\""
    );
    println!();
    println!("VS Code (.vscode/mcp.json):");
    let config = serde_json::json!({
        "servers": {"lomi": {"type": "http", "url": url, "headers": {"Authorization": format!("Bearer {token}")}}}
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&config).unwrap_or_default()
    );
}

pub fn render_operations(list: &Vec<OperationView>) {
    if list.is_empty() {
        println!("no operations");
    }
    for op in list {
        println!(
            "{}  {:<15}  effect {:<8}  {}  key {}  at {}",
            op.operation_id,
            op.state.as_str(),
            op.effect_state.as_str(),
            op.tool,
            op.request_key,
            op.created_at
        );
    }
}

/// A receipt in full, as JSON (`lomi operation show`, `lomi confirm`).
pub fn render_operation(op: &Value) {
    println!("{}", serde_json::to_string_pretty(op).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use lomi_protocol::{Effect, EffectDetail};

    use super::effect_text;

    fn check(effect: EffectDetail, summary: &str, expected: &str) {
        let text = effect_text(&Effect {
            summary: summary.to_owned(),
            detail: effect,
        });
        assert_eq!(text, expected, "as printed:\n{text}");
    }

    #[test]
    fn a_write_reads_as_its_sizes_and_diff() {
        check(
            EffectDetail::FileWrite {
                path: "notes.txt".to_owned(),
                creates: false,
                diff: Some("--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-two\n+2\n".to_owned()),
                truncated: true,
                binary: false,
                size_before: Some(4),
                size_after: 2,
                note: None,
            },
            "Overwrite notes.txt (+1 −1 lines)",
            "    Overwrite notes.txt (+1 −1 lines)
    file: notes.txt
    size: 4 bytes → 2 bytes
    diff:
      --- a/notes.txt
      +++ b/notes.txt
      @@ -1 +1 @@
      -two
      +2
      … (cut here; the rest is not shown)
",
        );
    }

    #[test]
    fn a_chat_send_reads_as_provider_model_and_message() {
        check(
            EffectDetail::ChatSend {
                message: Some("Pack light".to_owned()),
                conversation: Some("Trip".to_owned()),
                provider: Some("local".to_owned()),
                model: None,
                note: None,
            },
            "Send a message to a model provider. It cannot be taken back.",
            "    Send a message to a model provider. It cannot be taken back.
    provider: local
    model: unknown
    conversation: Trip
    message:
      Pack light
",
        );
    }
}
