//! Chat's conversations over the store: who may see them (the workspace's grant), reads
//! bounded by bytes, and the agent's create and draft update as operations compared by the
//! draft's revision. The provider send itself is `lomi-chat`'s, over these.

use lomi_protocol::tools::chat::{
    ChatCreateInput, ChatDraftUpdateInput, ChatGetInput, ChatList, ChatListInput, ChatMessage,
    ConversationCreated, ConversationSummary, ConversationView, Draft, DraftUpdated,
};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::settings::{ChatSettings, Provider, ProvidersSettings};
use lomi_protocol::{
    ConversationId, ConversationRevision, DraftRevision, EffectState, ErrorCode, PairingId,
    ToolError, WorkspaceId,
};
use lomi_store::{ConversationRecord, MessageRecord, NewReply, Stale};

use crate::engine::{Confirmation, EffectOutcome, Mutation, Permit};
use crate::{Area, Broker, store_error, waiting_on_disk};

/// Longest draft, in bytes.
pub const MAX_DRAFT_BYTES: usize = 256 * 1024;
/// Most conversations one list shows.
const MAX_LISTED: usize = 500;
const DEFAULT_PAGE_BYTES: u32 = 64 * 1024;
const MIN_PAGE_BYTES: u32 = 1024;
const MAX_PAGE_BYTES: u32 = 512 * 1024;
/// Most messages one page reads from the store.
const MAX_PAGE_MESSAGES: usize = 200;

/// A conversation's summary as the wire shows it.
pub fn summary(record: &ConversationRecord) -> ConversationSummary {
    ConversationSummary {
        conversation_id: record.conversation_id.clone(),
        workspace_id: record.workspace_id.clone(),
        title: record.title.clone(),
        conversation_revision: ConversationRevision(record.revision),
        draft_revision: DraftRevision(record.draft_revision),
        message_count: record.messages,
    }
}

/// REVISION_MISMATCH with both current revisions.
pub fn stale(record: &ConversationRecord, what: &str) -> ToolError {
    ToolError::new(
        ErrorCode::RevisionMismatch,
        format!(
            "conversation {} has conversationRevision {} and draftRevision {}; {what} was made against other revisions. Re-read it (lomi_chat_get) and decide again",
            record.conversation_id, record.revision, record.draft_revision
        ),
    )
    .with_details(serde_json::json!({
        "conversationRevision": ConversationRevision(record.revision),
        "draftRevision": DraftRevision(record.draft_revision),
        "currentRevision": DraftRevision(record.draft_revision),
    }))
}

fn message(record: MessageRecord) -> ChatMessage {
    ChatMessage {
        seq: record.seq,
        role: record.role,
        text: record.text,
        truncated: false,
        state: record.state,
        provider: record.provider,
        model: record.model,
        input_tokens: record.input_tokens,
        output_tokens: record.output_tokens,
        created_at: record.created_at,
        updated_at: record.updated_at,
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
fn cut(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// Checks a title: 1 to 120 characters, no control characters.
pub fn check_title(title: &str) -> Result<(), ToolError> {
    crate::check_name("title", title)
}

fn check_draft(text: &str) -> Result<(), ToolError> {
    if text.len() > MAX_DRAFT_BYTES || text.contains('\0') {
        return Err(ToolError::invalid(format!(
            "text takes at most {MAX_DRAFT_BYTES} bytes, without NUL"
        )));
    }
    Ok(())
}

impl Broker {
    fn conversation_record(&self, id: &ConversationId) -> Result<ConversationRecord, ToolError> {
        self.store()
            .chat_conversation(id)
            .map_err(store_error)?
            .ok_or_else(|| ToolError::not_found(format!("no conversation {id}")))
    }

    /// The conversation, if the caller may see it (its workspace is granted); the person
    /// (`None`) sees every one. NOT_FOUND otherwise, never saying whether it exists.
    pub fn chat_conversation(
        &self,
        caller: Option<&PairingId>,
        id: &ConversationId,
    ) -> Result<ConversationRecord, ToolError> {
        let record = self.conversation_record(id)?;
        if let Some(caller) = caller
            && !self.authorize(caller)?.contains(&record.workspace_id)
        {
            return Err(ToolError::not_found(format!(
                "no conversation {id} in the workspaces granted to this client"
            )));
        }
        Ok(record)
    }

    /// `lomi_chat_list`.
    pub fn chat_list(
        &self,
        caller: &PairingId,
        input: &ChatListInput,
    ) -> Result<ChatList, ToolError> {
        self.granted_workspace(caller, &input.workspace_id)?;
        self.chat_list_of(&input.workspace_id)
    }

    /// A workspace's conversations (the person's list, and the agent's once granted).
    pub fn chat_list_of(&self, workspace: &WorkspaceId) -> Result<ChatList, ToolError> {
        let records = self
            .store()
            .chat_list(workspace, MAX_LISTED)
            .map_err(store_error)?;
        Ok(ChatList {
            conversations: records.iter().map(summary).collect(),
        })
    }

    /// `lomi_chat_get` (and the person's, with `caller` `None`).
    pub fn chat_get(
        &self,
        caller: Option<&PairingId>,
        input: &ChatGetInput,
    ) -> Result<ConversationView, ToolError> {
        let max_bytes = input.max_bytes.unwrap_or(DEFAULT_PAGE_BYTES);
        if !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&max_bytes) {
            return Err(ToolError::invalid(format!(
                "maxBytes must be {MIN_PAGE_BYTES} to {MAX_PAGE_BYTES} (is {max_bytes})"
            )));
        }
        let record = self.chat_conversation(caller, &input.conversation_id)?;
        let after = input.after_seq.unwrap_or(0);
        let stored = self
            .store()
            .chat_messages(&record.conversation_id, after, MAX_PAGE_MESSAGES)
            .map_err(store_error)?;
        let mut room = max_bytes as usize;
        let mut messages = Vec::new();
        for stored in stored {
            let mut shown = message(stored);
            if shown.text.len() > room {
                if !messages.is_empty() {
                    break;
                }
                // The first message alone is larger than the page: it is cut, and says so.
                cut(&mut shown.text, room);
                shown.truncated = true;
            }
            room -= shown.text.len();
            messages.push(shown);
        }
        // Seqs run 1, 2, … without gaps, so more follow while the last shown is below the count.
        let next_seq = messages
            .last()
            .map(|m| m.seq)
            .filter(|last| *last < record.messages);
        Ok(ConversationView {
            summary: summary(&record),
            draft: Draft {
                text: record.draft_text,
                draft_revision: DraftRevision(record.draft_revision),
            },
            messages,
            next_seq,
        })
    }

    /// The chat and providers sections, for a send.
    pub fn chat_settings(&self) -> (ChatSettings, ProvidersSettings) {
        let domain = self.domain();
        (
            domain.settings.chat.clone(),
            domain.settings.providers.clone(),
        )
    }

    /// Where a send goes: the provider and model named, else the chat section's defaults,
    /// else the provider's first model; with the system prompt. The same for an agent's send,
    /// the person's, and what the person is shown before deciding.
    pub fn chat_destination(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<(Provider, String, String), ToolError> {
        let (chat, providers) = self.chat_settings();
        let name = provider
            .map(str::to_owned)
            .or_else(|| (!chat.default_provider.is_empty()).then(|| chat.default_provider.clone()));
        let Some(name) = name else {
            return Err(ToolError::invalid(
                "no provider named and no default one: name a provider (lomi_settings_get, section providers), or the person sets chat.defaultProvider",
            ));
        };
        let known: Vec<&str> = providers
            .providers
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        let provider = providers
            .providers
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .ok_or_else(|| {
                ToolError::invalid(format!(
                    "there is no provider {name:?}; the person's providers are {known:?}"
                ))
            })?;
        let model = model
            .map(str::to_owned)
            .or_else(|| {
                (provider.name == chat.default_provider && !chat.default_model.is_empty())
                    .then(|| chat.default_model.clone())
            })
            .or_else(|| provider.models.first().cloned())
            .ok_or_else(|| {
                ToolError::invalid(format!(
                    "provider {name} lists no model and none was named: name a model"
                ))
            })?;
        if model.is_empty() || model.len() > 200 || model.chars().any(char::is_control) {
            return Err(ToolError::invalid(
                "model takes 1 to 200 characters, none of them control characters",
            ));
        }
        Ok((provider, model, chat.system_prompt))
    }

    /// The person's new conversation in `workspace`.
    pub fn chat_create_for_person(
        &self,
        workspace: &WorkspaceId,
        title: &str,
    ) -> Result<ConversationSummary, ToolError> {
        check_title(title)?;
        if !self.workspaces().iter().any(|w| &w.id == workspace) {
            return Err(ToolError::not_found(format!("no workspace {workspace}")));
        }
        let id = ConversationId::from_random(self.random_bytes());
        let record = waiting_on_disk(|| self.store().chat_create(&id, workspace, title))
            .map_err(store_error)?;
        self.note_change(Area::Chat);
        Ok(summary(&record))
    }

    /// The person renames a conversation; its revision moves.
    pub fn chat_rename_for_person(
        &self,
        id: &ConversationId,
        title: &str,
    ) -> Result<ConversationSummary, ToolError> {
        check_title(title)?;
        self.conversation_record(id)?;
        let record =
            waiting_on_disk(|| self.store().chat_rename(id, title)).map_err(store_error)?;
        self.note_change(Area::Chat);
        Ok(summary(&record))
    }

    /// The person's edit of a draft in the window or the CLI, compared with `expected` when
    /// given: the same revision rules as an agent's.
    pub fn chat_draft_for_person(
        &self,
        id: &ConversationId,
        expected: Option<DraftRevision>,
        text: &str,
    ) -> Result<DraftUpdated, ToolError> {
        check_draft(text)?;
        self.set_draft(id, expected, text)
    }

    fn set_draft(
        &self,
        id: &ConversationId,
        expected: Option<DraftRevision>,
        text: &str,
    ) -> Result<DraftUpdated, ToolError> {
        match waiting_on_disk(|| self.store().chat_set_draft(id, expected.map(|e| e.0), text))
            .map_err(store_error)?
        {
            Ok(record) => {
                self.note_change(Area::Chat);
                Ok(DraftUpdated {
                    conversation_id: record.conversation_id,
                    draft_revision: DraftRevision(record.draft_revision),
                })
            }
            Err(Stale(current)) => Err(stale(&current, "this draft update")),
        }
    }

    /// The send's first write once the provider accepted: the draft becomes the user message
    /// and a streaming reply follows. REVISION_MISMATCH if either revision moved.
    pub fn chat_begin_reply(
        &self,
        reply: &NewReply,
    ) -> Result<(ConversationRecord, u64), ToolError> {
        match waiting_on_disk(|| self.store().chat_begin_reply(reply)).map_err(store_error)? {
            Ok(done) => {
                self.note_change(Area::Chat);
                Ok(done)
            }
            Err(Stale(current)) => Err(stale(&current, "this send")),
        }
    }

    /// The reply's text so far.
    pub fn chat_reply_text(
        &self,
        id: &ConversationId,
        seq: u64,
        text: &str,
    ) -> Result<(), ToolError> {
        waiting_on_disk(|| self.store().chat_reply_text(id, seq, text)).map_err(store_error)?;
        self.note_change(Area::Chat);
        Ok(())
    }

    /// Settles a reply; answers the conversation after it.
    pub fn chat_settle_reply(
        &self,
        id: &ConversationId,
        seq: u64,
        state: lomi_protocol::tools::chat::MessageState,
        text: &str,
        tokens: (Option<u64>, Option<u64>),
    ) -> Result<ConversationRecord, ToolError> {
        let record =
            waiting_on_disk(|| self.store().chat_settle_reply(id, seq, state, text, tokens))
                .map_err(store_error)?;
        self.note_change(Area::Chat);
        Ok(record)
    }

    /// `lomi_chat_create`: a conversation in the retry epoch's workspace.
    pub async fn chat_create(
        &self,
        caller: &PairingId,
        input: ChatCreateInput,
    ) -> Result<OperationView, ToolError> {
        let workspace_id = self.retry_epoch_workspace(caller, &input.retry_epoch)?;
        check_title(&input.title)?;
        let mutation = Mutation::of::<lomi_protocol::tools::chat::ChatCreateTool>(
            (&input.retry_epoch, &input.request_key),
            &input,
            workspace_id.clone(),
            Permit::Chat(workspace_id.clone()),
        )?;
        let title = input.title;
        self.operate(
            caller,
            mutation,
            Confirmation::Policy,
            async { Ok(()) },
            |_: &Broker, (): &()| Ok(()),
            move |(), context| async move {
                let broker = context.broker;
                let id = ConversationId::from_random(broker.random_bytes());
                let created =
                    waiting_on_disk(|| broker.store().chat_create(&id, &workspace_id, &title));
                if created.is_ok() {
                    broker.note_change(Area::Chat);
                }
                match created {
                    Ok(record) => EffectOutcome::succeeded(&ConversationCreated {
                        conversation_id: record.conversation_id,
                        conversation_revision: ConversationRevision(record.revision),
                        draft_revision: DraftRevision(record.draft_revision),
                    }),
                    Err(error) => EffectOutcome::Failed {
                        effect: EffectState::None,
                        error: store_error(error),
                    },
                }
            },
        )
        .await
    }

    /// `lomi_chat_draft_update`: replaces the draft, compared and swapped by its revision.
    pub async fn chat_draft_update(
        &self,
        caller: &PairingId,
        input: ChatDraftUpdateInput,
    ) -> Result<OperationView, ToolError> {
        let workspace_id = self.retry_epoch_workspace(caller, &input.retry_epoch)?;
        check_draft(&input.text)?;
        let id = input.conversation_id.clone();
        let expected = input.expected_draft_revision;
        let mutation = Mutation {
            revision: Some(expected.to_string()),
            ..Mutation::of::<lomi_protocol::tools::chat::ChatDraftUpdateTool>(
                (&input.retry_epoch, &input.request_key),
                &input,
                workspace_id.clone(),
                Permit::Draft(id.clone()),
            )?
        };
        let find = {
            let broker = self.clone();
            let (caller, id, workspace_id) = (caller.clone(), id.clone(), workspace_id.clone());
            async move { broker.conversation_in(&caller, &id, &workspace_id) }
        };
        let text = input.text;
        self.operate(
            caller,
            mutation,
            Confirmation::Policy,
            find,
            move |broker: &Broker, id: &ConversationId| {
                let record = broker.conversation_record(id)?;
                if record.draft_revision == expected.0 {
                    Ok(())
                } else {
                    Err(stale(&record, "this draft update"))
                }
            },
            move |id, context| async move {
                match context.broker.set_draft(&id, Some(expected), &text) {
                    Ok(updated) => EffectOutcome::succeeded(&updated),
                    Err(error) => EffectOutcome::Failed {
                        effect: EffectState::None,
                        error,
                    },
                }
            },
        )
        .await
    }

    /// The conversation `id` if it belongs to `workspace` (the retry epoch's) and the caller
    /// may see it; NOT_FOUND otherwise.
    pub fn conversation_in(
        &self,
        caller: &PairingId,
        id: &ConversationId,
        workspace: &WorkspaceId,
    ) -> Result<ConversationId, ToolError> {
        let record = self.chat_conversation(Some(caller), id)?;
        if &record.workspace_id != workspace {
            return Err(ToolError::not_found(format!(
                "no conversation {id} in workspace {workspace} (the retry epoch's); connect to the conversation's workspace"
            )));
        }
        Ok(record.conversation_id)
    }
}
