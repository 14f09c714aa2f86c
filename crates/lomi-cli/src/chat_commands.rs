//! `lomi chat list|show|create|rename|draft|send|cancel`: a workspace's Chat from a terminal, through
//! the running Lomi's control socket, the same requests the window's Chat panel sends.

use std::path::Path;

use crate::person::ask;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use lomi_mcp::control::ControlRequest;
use lomi_protocol::{ConversationId, DraftRevision, WorkspaceId};
use serde_json::Value;

/// How often `send` looks at the reply while it arrives.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// A workspace's conversations, newest first.
    List {
        workspace_id: WorkspaceId,
        #[arg(long)]
        json: bool,
    },
    /// A conversation: its messages and its draft.
    Show {
        conversation_id: ConversationId,
        /// Only messages after this seq.
        #[arg(long)]
        after: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// A new conversation in a workspace.
    Create {
        workspace_id: WorkspaceId,
        title: String,
        #[arg(long)]
        json: bool,
    },
    /// Rename a conversation (its revision moves).
    Rename {
        conversation_id: ConversationId,
        title: String,
        #[arg(long)]
        json: bool,
    },
    /// Replace a conversation's draft.
    Draft {
        conversation_id: ConversationId,
        text: String,
        /// Change only if the draft is still at this revision.
        #[arg(long, value_name = "REVISION")]
        expected_revision: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Send the draft (or TEXT, which becomes the draft first) to the provider and print the
    /// reply as it arrives.
    Send {
        conversation_id: ConversationId,
        #[arg(long)]
        text: Option<String>,
        /// A provider's name; the chat settings' default otherwise.
        #[arg(long)]
        provider: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// Answer once the provider accepted, without following the reply.
        #[arg(long)]
        no_follow: bool,
    },
    /// Stop the reply arriving in a conversation, yours or an agent's (what arrived is kept).
    Cancel { conversation_id: ConversationId },
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("")
}

fn render_list(list: &Value) {
    for c in list["conversations"].as_array().into_iter().flatten() {
        println!(
            "{}  {}  ({} messages, revision {}, draft revision {})",
            text(&c["conversationId"]),
            text(&c["title"]),
            c["messageCount"],
            text(&c["conversationRevision"]),
            text(&c["draftRevision"])
        );
    }
}

fn render_conversation(view: &Value) {
    println!(
        "{}  {}  (revision {})",
        text(&view["conversationId"]),
        text(&view["title"]),
        text(&view["conversationRevision"])
    );
    for m in view["messages"].as_array().into_iter().flatten() {
        let by = match (text(&m["role"]), m["model"].as_str()) {
            ("assistant", Some(model)) => format!("assistant ({model})"),
            (role, _) => role.to_owned(),
        };
        let state = match text(&m["state"]) {
            "complete" => String::new(),
            other => format!(" [{other}]"),
        };
        println!("\n#{} {by}{state}:\n{}", m["seq"], text(&m["text"]));
    }
    println!(
        "\ndraft (revision {}): {}",
        text(&view["draft"]["draftRevision"]),
        text(&view["draft"]["text"])
    );
}

fn render_summary(c: &Value) {
    println!(
        "{}  {}  (revision {})",
        text(&c["conversationId"]),
        text(&c["title"]),
        text(&c["conversationRevision"])
    );
}

fn render_draft(d: &Value) {
    println!(
        "{}: draft at revision {}",
        text(&d["conversationId"]),
        text(&d["draftRevision"])
    );
}

/// Sends, then prints the reply's text as it grows until it settles.
async fn send(
    data_dir: &Path,
    conversation_id: ConversationId,
    draft: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    follow: bool,
) -> anyhow::Result<()> {
    let expected = match draft {
        Some(text) => {
            let current = ask(
                data_dir,
                &ControlRequest::ChatGet {
                    conversation_id: conversation_id.clone(),
                    after_seq: None,
                    max_bytes: Some(1024),
                },
            )
            .await?;
            let revision: u64 = text_of(&current["draft"]["draftRevision"])
                .parse()
                .context("the draft's revision")?;
            let updated = ask(
                data_dir,
                &ControlRequest::ChatDraft {
                    conversation_id: conversation_id.clone(),
                    text,
                    expected_draft_revision: Some(DraftRevision(revision)),
                },
            )
            .await?;
            Some(DraftRevision(
                text_of(&updated["draftRevision"])
                    .parse()
                    .context("the draft's revision")?,
            ))
        }
        None => None,
    };
    let sent = ask(
        data_dir,
        &ControlRequest::ChatSend {
            conversation_id: conversation_id.clone(),
            expected_draft_revision: expected,
            provider,
            model,
        },
    )
    .await?;
    let seq = sent["replySeq"].as_u64().context("the reply's seq")?;
    eprintln!(
        "sent to {} ({}); reply #{seq}:",
        text(&sent["provider"]),
        text(&sent["model"])
    );
    if !follow {
        return Ok(());
    }
    let mut shown = 0;
    loop {
        let view = ask(
            data_dir,
            &ControlRequest::ChatGet {
                conversation_id: conversation_id.clone(),
                after_seq: Some(seq - 1),
                max_bytes: Some(512 * 1024),
            },
        )
        .await?;
        let reply = &view["messages"][0];
        let now = text(&reply["text"]);
        if now.len() > shown && now.is_char_boundary(shown) {
            crate::print_out(&now[shown..])?;
            shown = now.len();
        }
        match text(&reply["state"]) {
            "streaming" => tokio::time::sleep(FOLLOW_EVERY).await,
            "complete" => {
                println!();
                return Ok(());
            }
            other => anyhow::bail!("the reply ended {other}; what arrived is kept"),
        }
    }
}

fn text_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Runs a chat command against the running Lomi.
pub fn run(data_dir: &Path, command: ChatCommand) -> anyhow::Result<()> {
    let runtime = crate::runtime()?;
    let (request, json, render): (ControlRequest, bool, crate::Render) = match command {
        ChatCommand::List { workspace_id, json } => {
            (ControlRequest::ChatList { workspace_id }, json, render_list)
        }
        ChatCommand::Show {
            conversation_id,
            after,
            json,
        } => (
            ControlRequest::ChatGet {
                conversation_id,
                after_seq: after,
                max_bytes: Some(512 * 1024),
            },
            json,
            render_conversation,
        ),
        ChatCommand::Create {
            workspace_id,
            title,
            json,
        } => (
            ControlRequest::ChatCreate {
                workspace_id,
                title,
            },
            json,
            render_summary,
        ),
        ChatCommand::Rename {
            conversation_id,
            title,
            json,
        } => (
            ControlRequest::ChatRename {
                conversation_id,
                title,
            },
            json,
            render_summary,
        ),
        ChatCommand::Draft {
            conversation_id,
            text,
            expected_revision,
            json,
        } => (
            ControlRequest::ChatDraft {
                conversation_id,
                text,
                expected_draft_revision: expected_revision.map(DraftRevision),
            },
            json,
            render_draft,
        ),
        ChatCommand::Cancel { conversation_id } => (
            ControlRequest::ChatCancel { conversation_id },
            false,
            |_| println!("cancelled"),
        ),
        ChatCommand::Send {
            conversation_id,
            text,
            provider,
            model,
            no_follow,
        } => {
            return runtime.block_on(send(
                data_dir,
                conversation_id,
                text,
                provider,
                model,
                !no_follow,
            ));
        }
    };
    runtime.block_on(crate::person::send(data_dir, request, json, render))
}
