//! `lomi chat list|show|create|rename|draft|send|cancel`: a workspace's Chat from a terminal, through
//! the running Lomi's control socket, the same requests the window's Chat panel sends.

use std::path::Path;

use crate::person::ask;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use lomi_mcp::control::ControlRequest;
use lomi_protocol::control::{ChatCancelled, ChatSendStarted};
use lomi_protocol::tools::chat::{
    ChatList, ChatRole, ConversationSummary, ConversationView, DraftUpdated, MessageState,
};
use lomi_protocol::{ConversationId, DraftRevision, WorkspaceId};

use crate::person::{render, wire_name};

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

fn render_list(list: &ChatList) {
    for c in &list.conversations {
        println!(
            "{}  {}  ({} messages, revision {}, draft revision {})",
            c.conversation_id, c.title, c.message_count, c.conversation_revision, c.draft_revision
        );
    }
}

fn render_conversation(view: &ConversationView) {
    render_summary(&view.summary);
    for m in &view.messages {
        let by = match (m.role, &m.model) {
            (ChatRole::Assistant, Some(model)) => format!("assistant ({model})"),
            (role, _) => wire_name(&role),
        };
        let state = match m.state {
            MessageState::Complete => String::new(),
            other => format!(" [{}]", wire_name(&other)),
        };
        println!("\n#{} {by}{state}:\n{}", m.seq, m.text);
    }
    println!(
        "\ndraft (revision {}): {}",
        view.draft.draft_revision, view.draft.text
    );
}

fn render_summary(c: &ConversationSummary) {
    println!(
        "{}  {}  (revision {})",
        c.conversation_id, c.title, c.conversation_revision
    );
}

fn render_draft(d: &DraftUpdated) {
    println!(
        "{}: draft at revision {}",
        d.conversation_id, d.draft_revision
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
            let current: ConversationView = ask(
                data_dir,
                &ControlRequest::ChatGet {
                    conversation_id: conversation_id.clone(),
                    after_seq: None,
                    max_bytes: Some(1024),
                },
            )
            .await?;
            let updated: DraftUpdated = ask(
                data_dir,
                &ControlRequest::ChatDraft {
                    conversation_id: conversation_id.clone(),
                    text,
                    expected_draft_revision: Some(current.draft.draft_revision),
                },
            )
            .await?;
            Some(updated.draft_revision)
        }
        None => None,
    };
    let sent: ChatSendStarted = ask(
        data_dir,
        &ControlRequest::ChatSend {
            conversation_id: conversation_id.clone(),
            expected_draft_revision: expected,
            provider,
            model,
        },
    )
    .await?;
    let seq = sent.reply_seq;
    eprintln!("sent to {} ({}); reply #{seq}:", sent.provider, sent.model);
    if !follow {
        return Ok(());
    }
    let mut shown = 0;
    loop {
        let view: ConversationView = ask(
            data_dir,
            &ControlRequest::ChatGet {
                conversation_id: conversation_id.clone(),
                after_seq: Some(seq - 1),
                max_bytes: Some(512 * 1024),
            },
        )
        .await?;
        let reply = view.messages.first().context("the reply is missing")?;
        let now = reply.text.as_str();
        if now.len() > shown && now.is_char_boundary(shown) {
            crate::print_out(&now[shown..])?;
            shown = now.len();
        }
        match reply.state {
            MessageState::Streaming => tokio::time::sleep(FOLLOW_EVERY).await,
            MessageState::Complete => {
                println!();
                return Ok(());
            }
            other => anyhow::bail!(
                "the reply ended {}; what arrived is kept",
                wire_name(&other)
            ),
        }
    }
}

/// Runs a chat command against the running Lomi.
pub fn run(data_dir: &Path, command: ChatCommand) -> anyhow::Result<()> {
    let runtime = crate::runtime()?;
    let (request, json, render): (ControlRequest, bool, crate::Render) = match command {
        ChatCommand::List { workspace_id, json } => (
            ControlRequest::ChatList { workspace_id },
            json,
            render(render_list),
        ),
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
            render(render_conversation),
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
            render(render_summary),
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
            render(render_summary),
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
            render(render_draft),
        ),
        ChatCommand::Cancel { conversation_id } => (
            ControlRequest::ChatCancel { conversation_id },
            false,
            render(|_: &ChatCancelled| println!("cancelled")),
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
