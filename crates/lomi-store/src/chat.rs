//! Chat's conversations and messages: reads, the draft compared and swapped by its revision,
//! and a reply written as it streams. Every change to messages or the title moves the
//! conversation's revision; every change to the draft moves the draft's.

use lomi_protocol::tools::chat::{ChatRole, MessageState};
use lomi_protocol::{ConversationId, OperationId, Timestamp, WorkspaceId};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::store::{Failure, refuse, to_sql_count};
use crate::{Result, Store, StoreError};

/// A conversation as stored, without its messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversationRecord {
    pub conversation_id: ConversationId,
    pub workspace_id: WorkspaceId,
    pub title: String,
    pub revision: u64,
    pub draft_text: String,
    pub draft_revision: u64,
    pub messages: u64,
    /// A reply is arriving (a message is `streaming`).
    pub streaming: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// One message as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageRecord {
    pub seq: u64,
    pub role: ChatRole,
    pub text: String,
    pub state: MessageState,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub operation_id: Option<OperationId>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A compare-and-set that found other revisions: the conversation as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stale(pub ConversationRecord);

/// What a send writes once the provider has accepted the request: the draft becomes the user
/// message, and an empty reply follows it, streaming.
#[derive(Clone, Debug)]
pub struct NewReply {
    pub conversation_id: ConversationId,
    pub expected_revision: u64,
    pub expected_draft_revision: u64,
    pub provider: String,
    pub model: String,
    pub operation_id: Option<OperationId>,
}

const CONVERSATION_COLUMNS: &str = "c.conversation_id, c.workspace_id, c.title, c.revision, c.draft_text, \
    c.draft_revision, (SELECT COUNT(*) FROM chat_messages m WHERE m.conversation_id = c.conversation_id), \
    c.created_at, c.updated_at, EXISTS (SELECT 1 FROM chat_messages m WHERE m.conversation_id = c.conversation_id \
    AND m.state = 'streaming')";
const MESSAGE_COLUMNS: &str = "seq, role, text, state, provider, model, operation_id, input_tokens, \
    output_tokens, created_at, updated_at";

fn unreadable(what: &str) -> Failure {
    Failure::Store(StoreError::internal(format!(
        "a stored {what} is unreadable"
    )))
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn read_conversation(row: &Row<'_>) -> rusqlite::Result<ConversationRow> {
    row.try_into()
}

type ConversationRow = (
    String,
    String,
    String,
    i64,
    String,
    i64,
    i64,
    i64,
    i64,
    bool,
);

fn decode_conversation(row: ConversationRow) -> Result<ConversationRecord, Failure> {
    let (
        id,
        workspace,
        title,
        revision,
        draft_text,
        draft_revision,
        messages,
        created,
        updated,
        streaming,
    ) = row;
    Ok(ConversationRecord {
        conversation_id: ConversationId::parse(id).map_err(|_| unreadable("conversation id"))?,
        workspace_id: WorkspaceId::parse(workspace).map_err(|_| unreadable("workspace id"))?,
        title,
        revision: count(revision),
        draft_text,
        draft_revision: count(draft_revision),
        messages: count(messages),
        streaming,
        created_at: Timestamp::from_millis(created),
        updated_at: Timestamp::from_millis(updated),
    })
}

fn conversation(
    connection: &Connection,
    id: &ConversationId,
) -> Result<Option<ConversationRecord>, Failure> {
    let row = connection
        .prepare_cached(&format!(
            "SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.conversation_id = ?1"
        ))?
        .query_row([id.as_str()], read_conversation)
        .optional()?;
    row.map(decode_conversation).transpose()
}

fn existing(connection: &Connection, id: &ConversationId) -> Result<ConversationRecord, Failure> {
    match conversation(connection, id)? {
        Some(found) => Ok(found),
        None => refuse(StoreError::NotFound {
            what: format!("conversation {id}"),
        }),
    }
}

type MessageRow = (
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    i64,
    i64,
);

fn read_message(row: &Row<'_>) -> rusqlite::Result<MessageRow> {
    row.try_into()
}

fn decode_message(row: MessageRow) -> Result<MessageRecord, Failure> {
    let (seq, role, text, state, provider, model, operation, input, output, created, updated) = row;
    Ok(MessageRecord {
        seq: count(seq),
        role: ChatRole::parse(&role).ok_or_else(|| unreadable("message role"))?,
        text,
        state: MessageState::parse(&state).ok_or_else(|| unreadable("message state"))?,
        provider,
        model,
        operation_id: operation
            .map(OperationId::parse)
            .transpose()
            .map_err(|_| unreadable("operation id"))?,
        input_tokens: input.map(count),
        output_tokens: output.map(count),
        created_at: Timestamp::from_millis(created),
        updated_at: Timestamp::from_millis(updated),
    })
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Marks replies left streaming `interrupted` (reopen recovery, in its transaction).
pub(crate) fn interrupt_streaming(transaction: &Connection, now: Timestamp) -> Result<(), Failure> {
    transaction.execute(
        "UPDATE conversations SET revision = revision + 1, updated_at = ?1 WHERE conversation_id IN \
         (SELECT conversation_id FROM chat_messages WHERE state = 'streaming')",
        [now.millis()],
    )?;
    transaction.execute(
        "UPDATE chat_messages SET state = 'interrupted', updated_at = ?1 WHERE state = 'streaming'",
        [now.millis()],
    )?;
    Ok(())
}

impl Store {
    /// Records a new, empty conversation (revision 1, an empty draft at revision 1).
    pub fn chat_create(
        &self,
        id: &ConversationId,
        workspace: &WorkspaceId,
        title: &str,
    ) -> Result<ConversationRecord> {
        let (id, workspace, title) = (id.clone(), workspace.clone(), title.to_owned());
        self.write("creating a conversation", move |transaction, now| {
            transaction.execute(
                "INSERT INTO conversations (conversation_id, workspace_id, title, revision, draft_text, \
                 draft_revision, created_at, updated_at) VALUES (?1, ?2, ?3, 1, '', 1, ?4, ?4)",
                params![id.as_str(), workspace.as_str(), title, now.millis()],
            )?;
            existing(transaction, &id)
        })
    }

    /// A workspace's conversations, most recently changed first, at most `limit`.
    pub fn chat_list(
        &self,
        workspace: &WorkspaceId,
        limit: usize,
    ) -> Result<Vec<ConversationRecord>> {
        self.read("listing conversations", |connection| {
            let mut statement = connection.prepare_cached(&format!(
                "SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.workspace_id = ?1 \
                 ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ?2"
            ))?;
            let rows = statement
                .query_map(
                    params![workspace.as_str(), to_sql_count(limit)],
                    read_conversation,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(decode_conversation).collect()
        })
    }

    pub fn chat_conversation(&self, id: &ConversationId) -> Result<Option<ConversationRecord>> {
        self.read("reading a conversation", |connection| {
            conversation(connection, id)
        })
    }

    /// Messages with `seq > after_seq`, oldest first, at most `limit`.
    pub fn chat_messages(
        &self,
        id: &ConversationId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<MessageRecord>> {
        self.read("reading messages", |connection| {
            let mut statement = connection.prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM chat_messages WHERE conversation_id = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3"
            ))?;
            let rows = statement
                .query_map(
                    params![id.as_str(), to_i64(after_seq), to_sql_count(limit)],
                    read_message,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(decode_message).collect()
        })
    }

    /// Replaces the draft if it is at `expected` (`None`: whatever it is, for the person's
    /// window without a revision). `Ok(Err(Stale))` when it is not.
    pub fn chat_set_draft(
        &self,
        id: &ConversationId,
        expected: Option<u64>,
        text: &str,
    ) -> Result<Result<ConversationRecord, Stale>> {
        let (id, text) = (id.clone(), text.to_owned());
        self.write("saving a draft", move |transaction, now| {
            let current = existing(transaction, &id)?;
            if expected.is_some_and(|e| e != current.draft_revision) {
                return Ok(Err(Stale(current)));
            }
            transaction.execute(
                "UPDATE conversations SET draft_text = ?2, draft_revision = draft_revision + 1, \
                 updated_at = ?3 WHERE conversation_id = ?1",
                params![id.as_str(), text, now.millis()],
            )?;
            Ok(Ok(existing(transaction, &id)?))
        })
    }

    /// Renames a conversation (the person's); moves its revision.
    pub fn chat_rename(&self, id: &ConversationId, title: &str) -> Result<ConversationRecord> {
        let (id, title) = (id.clone(), title.to_owned());
        self.write("renaming a conversation", move |transaction, now| {
            existing(transaction, &id)?;
            transaction.execute(
                "UPDATE conversations SET title = ?2, revision = revision + 1, updated_at = ?3 \
                 WHERE conversation_id = ?1",
                params![id.as_str(), title, now.millis()],
            )?;
            existing(transaction, &id)
        })
    }

    /// The send's first write, once the provider accepted the request: if both revisions are
    /// as expected and the draft is not empty, the draft becomes the next user message, an
    /// empty streaming reply follows, and the draft is emptied; in one transaction. Answers
    /// the conversation after it and the reply's seq.
    pub fn chat_begin_reply(
        &self,
        reply: &NewReply,
    ) -> Result<Result<(ConversationRecord, u64), Stale>> {
        let reply = reply.clone();
        self.write("saving a sent message", move |transaction, now| {
            let id = &reply.conversation_id;
            let current = existing(transaction, id)?;
            if current.revision != reply.expected_revision
                || current.draft_revision != reply.expected_draft_revision
            {
                return Ok(Err(Stale(current)));
            }
            let last: i64 = transaction.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM chat_messages WHERE conversation_id = ?1",
                [id.as_str()],
                |r| r.get(0),
            )?;
            let operation = reply.operation_id.as_ref().map(|o| o.as_str().to_owned());
            let mut insert = transaction.prepare_cached(
                "INSERT INTO chat_messages (conversation_id, seq, role, text, state, provider, model, \
                 operation_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
            )?;
            insert.execute(params![
                id.as_str(),
                last + 1,
                ChatRole::User.as_str(),
                current.draft_text,
                MessageState::Complete.as_str(),
                reply.provider,
                reply.model,
                operation,
                now.millis()
            ])?;
            insert.execute(params![
                id.as_str(),
                last + 2,
                ChatRole::Assistant.as_str(),
                "",
                MessageState::Streaming.as_str(),
                reply.provider,
                reply.model,
                operation,
                now.millis()
            ])?;
            drop(insert);
            transaction.execute(
                "UPDATE conversations SET draft_text = '', draft_revision = draft_revision + 1, \
                 revision = revision + 2, updated_at = ?2 WHERE conversation_id = ?1",
                params![id.as_str(), now.millis()],
            )?;
            Ok(Ok((existing(transaction, id)?, count(last + 2))))
        })
    }

    /// The reply's text so far, while it streams (the revision stays: the message is the same).
    pub fn chat_reply_text(&self, id: &ConversationId, seq: u64, text: &str) -> Result<()> {
        let (id, text) = (id.clone(), text.to_owned());
        self.write("saving a reply as it arrives", move |transaction, now| {
            transaction.execute(
                "UPDATE chat_messages SET text = ?3, updated_at = ?4 \
                 WHERE conversation_id = ?1 AND seq = ?2 AND state = 'streaming'",
                params![id.as_str(), to_i64(seq), text, now.millis()],
            )?;
            Ok(())
        })
    }

    /// Settles a streaming reply with its final text, state and token counts; moves the
    /// conversation's revision.
    pub fn chat_settle_reply(
        &self,
        id: &ConversationId,
        seq: u64,
        state: MessageState,
        text: &str,
        tokens: (Option<u64>, Option<u64>),
    ) -> Result<ConversationRecord> {
        let (id, text) = (id.clone(), text.to_owned());
        self.write("settling a reply", move |transaction, now| {
            let changed = transaction.execute(
                "UPDATE chat_messages SET text = ?3, state = ?4, input_tokens = ?5, output_tokens = ?6, \
                 updated_at = ?7 WHERE conversation_id = ?1 AND seq = ?2 AND state = 'streaming'",
                params![
                    id.as_str(),
                    to_i64(seq),
                    text,
                    state.as_str(),
                    tokens.0.map(to_i64),
                    tokens.1.map(to_i64),
                    now.millis()
                ],
            )?;
            if changed == 1 {
                transaction.execute(
                    "UPDATE conversations SET revision = revision + 1, updated_at = ?2 \
                     WHERE conversation_id = ?1",
                    params![id.as_str(), now.millis()],
                )?;
            }
            existing(transaction, &id)
        })
    }
}
