//! Lomi's Chat send: a conversation goes to the model provider the person configured and the
//! reply streams into it. An agent's send is an operation of the broker's engine (waiting for
//! the person by default); the person's own send from the window or `lomi chat send` runs the
//! same delivery without a receipt. Nothing here is ever resent.

pub mod providers;
mod serve;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use lomi_broker::{
    Broker, CancellationToken, Confirmation, EffectOutcome, Mutation, Permit, conversation_stale,
};
use lomi_protocol::tools::chat::{ChatRole, ChatSendInput, ChatSent, MessageState};
use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::settings::Provider;
use lomi_protocol::{
    ConversationId, ConversationRevision, DraftRevision, EffectState, ErrorCode, OperationId,
    PairingId, ToolError,
};
use lomi_store::NewReply;

use crate::providers::{Piece, ProviderRequest, Reply};

/// Reads a provider's key from where the person stored it (the OS keyring), by provider name.
pub type KeySource = Arc<dyn Fn(&str) -> Result<String, ToolError> + Send + Sync>;

/// How often a streaming reply's text is written to the store (and so seen by readers).
const FLUSH_EVERY: Duration = Duration::from_millis(150);
/// The longest reply Lomi keeps; a provider that goes on is cut off there.
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// Most messages of a conversation sent as its history.
const MAX_HISTORY: usize = 200;

/// Chat's sends over one broker.
#[derive(Clone)]
pub struct ChatSends {
    broker: Broker,
    keys: KeySource,
    client: Option<reqwest::Client>,
    /// The person's sends under way, by conversation, for their cancel.
    person: Arc<Mutex<HashMap<ConversationId, CancellationToken>>>,
}

/// Where one send goes, resolved from the conversation and the settings.
struct Target {
    conversation_id: ConversationId,
    provider: Provider,
    model: String,
    system: String,
}

/// What the person's send answers: the reply is streaming.
pub use lomi_protocol::control::ChatSendStarted as PersonSend;

impl ChatSends {
    pub fn new(broker: Broker, keys: KeySource) -> Self {
        let client = match providers::client() {
            Ok(client) => Some(client),
            Err(error) => {
                tracing::error!("Chat cannot send: {error}");
                None
            }
        };
        ChatSends {
            broker,
            keys,
            client,
            person: Arc::default(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, ToolError> {
        self.client
            .clone()
            .ok_or_else(|| ToolError::internal("Lomi could not make its HTTP client for providers"))
    }

    /// Where a send of the conversation goes ([`Broker::chat_destination`]).
    fn target(
        &self,
        conversation_id: ConversationId,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<Target, ToolError> {
        let (provider, model, system) = self.broker.chat_destination(provider, model)?;
        Ok(Target {
            conversation_id,
            provider,
            model,
            system,
        })
    }

    /// The provider's key from the keyring (off the async threads), if it has one.
    async fn key(&self, provider: &Provider) -> Result<Option<String>, ToolError> {
        if !provider.key_stored {
            return Ok(None);
        }
        let (keys, name) = (self.keys.clone(), provider.name.clone());
        lomi_broker::off_thread(move || keys(&name)).await.map(Some)
    }

    /// The request for the provider: the conversation's messages with text, then the draft.
    fn request(
        &self,
        target: &Target,
        key: Option<String>,
        draft: String,
    ) -> Result<ProviderRequest, ToolError> {
        let mut messages: Vec<(ChatRole, String)> = Vec::new();
        let mut after = 0;
        loop {
            let page = self
                .broker
                .store()
                .chat_messages(&target.conversation_id, after, MAX_HISTORY)
                .map_err(|e| ToolError::new(e.code(), e.to_string()))?;
            let Some(last) = page.last().map(|m| m.seq) else {
                break;
            };
            after = last;
            messages.extend(
                page.into_iter()
                    .filter(|m| !m.text.is_empty())
                    .map(|m| (m.role, m.text)),
            );
        }
        messages.push((ChatRole::User, draft));
        Ok(ProviderRequest {
            kind: target.provider.kind,
            provider: target.provider.name.clone(),
            base_url: target.provider.base_url.clone(),
            key,
            model: target.model.clone(),
            system: target.system.clone(),
            messages,
        })
    }

    /// `lomi_chat_send`: an operation that waits for the person (unless their policy says
    /// otherwise), then sends the draft and streams the reply into the conversation.
    pub async fn send(
        &self,
        caller: &PairingId,
        input: ChatSendInput,
    ) -> Result<OperationView, ToolError> {
        let broker = &self.broker;
        let workspace_id = broker.retry_epoch_workspace(caller, &input.retry_epoch)?;
        for (what, name) in [("provider", &input.provider), ("model", &input.model)] {
            if let Some(name) = name
                && (name.is_empty() || name.len() > 200 || name.chars().any(char::is_control))
            {
                return Err(ToolError::invalid(format!(
                    "{what} takes 1 to 200 characters, none of them control characters"
                )));
            }
        }
        let id = input.conversation_id.clone();
        let (expected, expected_draft) = (
            input.expected_conversation_revision,
            input.expected_draft_revision,
        );
        let mutation = Mutation {
            revision: Some(format!("{expected}:{expected_draft}")),
            ..Mutation::of::<lomi_protocol::tools::chat::ChatSendTool>(
                (&input.retry_epoch, &input.request_key),
                &input,
                workspace_id.clone(),
                Permit::Conversation(id.clone()),
            )?
        };
        let find = {
            let sends = self.clone();
            let caller = caller.clone();
            let (provider, model) = (input.provider.clone(), input.model.clone());
            async move {
                let id = sends.broker.conversation_in(&caller, &id, &workspace_id)?;
                sends.target(id, provider.as_deref(), model.as_deref())
            }
        };
        let sends = self.clone();
        self.broker
            .operate(
                caller,
                mutation,
                Confirmation::Policy,
                find,
                move |broker: &Broker, target: &Target| {
                    let record = broker.chat_conversation(None, &target.conversation_id)?;
                    check_revisions(&record, expected, expected_draft)
                },
                move |target, context| async move {
                    sends
                        .deliver(
                            target,
                            expected,
                            expected_draft,
                            Some(context.operation_id),
                            context.cancel,
                        )
                        .await
                },
            )
            .await
    }

    /// Sends and streams one reply to its end; what the effect reached.
    async fn deliver(
        &self,
        target: Target,
        expected: ConversationRevision,
        expected_draft: DraftRevision,
        operation_id: Option<OperationId>,
        cancel: CancellationToken,
    ) -> EffectOutcome {
        let opened = self
            .open(&target, expected, expected_draft, operation_id, &cancel)
            .await;
        match opened {
            Opened::Streaming(reply, seq, _) => self.stream(&target, reply, seq, &cancel).await,
            Opened::Refused(error) => EffectOutcome::Failed {
                effect: EffectState::None,
                error,
            },
            Opened::Cancelled => EffectOutcome::Cancelled {
                effect: EffectState::None,
            },
        }
    }

    /// Sends the request; once the provider accepted it, saves the draft as the user message
    /// and an empty reply after it.
    async fn open(
        &self,
        target: &Target,
        expected: ConversationRevision,
        expected_draft: DraftRevision,
        operation_id: Option<OperationId>,
        cancel: &CancellationToken,
    ) -> Opened {
        // The person may have changed or removed the provider while the send waited for
        // them: it goes where the settings say now, with the key stored for that name now.
        let (_, providers) = self.broker.chat_settings();
        let Some(provider) = providers
            .providers
            .into_iter()
            .find(|p| p.name == target.provider.name)
        else {
            return Opened::Refused(ToolError::invalid(format!(
                "provider {} was removed from the settings meanwhile; nothing was sent",
                target.provider.name
            )));
        };
        let target = &Target {
            provider,
            conversation_id: target.conversation_id.clone(),
            model: target.model.clone(),
            system: target.system.clone(),
        };
        let key = match self.key(&target.provider).await {
            Ok(key) => key,
            Err(error) => return Opened::Refused(error),
        };
        let prepared = self.client().and_then(|client| {
            let record = self
                .broker
                .chat_conversation(None, &target.conversation_id)?;
            check_revisions(&record, expected, expected_draft)?;
            Ok((client, self.request(target, key, record.draft_text)?))
        });
        let (client, request) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return Opened::Refused(error),
        };
        let started =
            lomi_broker::unless_cancelled(cancel, providers::start(&client, &request)).await;
        let reply = match started {
            None => return Opened::Cancelled,
            Some(Err(error)) => return Opened::Refused(error),
            Some(Ok(reply)) => reply,
        };
        let begun = self.broker.chat_begin_reply(&NewReply {
            conversation_id: target.conversation_id.clone(),
            expected_revision: expected.0,
            expected_draft_revision: expected_draft.0,
            provider: target.provider.name.clone(),
            model: target.model.clone(),
            operation_id,
        });
        match begun {
            Ok((record, seq)) => {
                Opened::Streaming(reply, seq, ConversationRevision(record.revision))
            }
            Err(error) => Opened::Refused(error),
        }
    }

    /// Reads the reply to its end, writing its text as it arrives.
    async fn stream(
        &self,
        target: &Target,
        mut reply: Reply,
        seq: u64,
        cancel: &CancellationToken,
    ) -> EffectOutcome {
        let id = &target.conversation_id;
        let provider = &target.provider.name;
        let mut text = String::new();
        let mut tokens = (None, None);
        let mut flushed = Instant::now();
        let mut written = 0;
        let stopping = self.broker.stopping();
        let end = loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => break End::Cancelled,
                () = stopping.cancelled() => break End::Stopped,
                next = reply.next() => next,
            };
            match next {
                Some(Ok(Piece::Text(piece))) => {
                    if text.len() + piece.len() > MAX_REPLY_BYTES {
                        break End::Failed(ToolError::new(
                            ErrorCode::Unsupported,
                            format!(
                                "the reply grew past the {MAX_REPLY_BYTES} bytes Lomi keeps of one; what arrived is kept and the rest was not read"
                            ),
                        ));
                    }
                    text.push_str(&piece);
                }
                Some(Ok(Piece::Usage(input, output))) => {
                    tokens = (input.or(tokens.0), output.or(tokens.1));
                }
                Some(Ok(Piece::End)) => break End::Complete,
                Some(Err(error)) => break End::Failed(error),
                None => break End::Failed(providers::ended_early(provider)),
            }
            if text.len() != written && flushed.elapsed() >= FLUSH_EVERY {
                if let Err(error) = self.broker.chat_reply_text(id, seq, &text) {
                    break End::Store(error);
                }
                written = text.len();
                flushed = Instant::now();
            }
        };
        // Dropping the stream closes the connection: a cancelled reply stops at the provider.
        drop(reply);
        let state = match &end {
            End::Complete => MessageState::Complete,
            End::Cancelled => MessageState::Cancelled,
            End::Stopped => MessageState::Interrupted,
            End::Failed(_) | End::Store(_) => MessageState::Failed,
        };
        let settled = self.broker.chat_settle_reply(id, seq, state, &text, tokens);
        let record = match settled {
            Ok(record) => record,
            Err(error) => {
                return EffectOutcome::Unknown {
                    effect: EffectState::Partial,
                    message: format!(
                        "the reply arrived but could not be saved whole ({error}); read the conversation"
                    ),
                };
            }
        };
        match end {
            End::Complete => {
                let sent = ChatSent {
                    conversation_id: id.clone(),
                    conversation_revision: ConversationRevision(record.revision),
                    reply_seq: seq,
                    provider: provider.clone(),
                    model: target.model.clone(),
                    input_tokens: tokens.0,
                    output_tokens: tokens.1,
                };
                EffectOutcome::succeeded(&sent)
            }
            End::Cancelled => EffectOutcome::Cancelled {
                effect: EffectState::Partial,
            },
            // As after a crash, but Lomi knows how far the reply got: it is kept, never resent.
            End::Stopped => EffectOutcome::Unknown {
                effect: EffectState::Partial,
                message: "Lomi stopped while the reply arrived; what arrived is kept (state interrupted) and nothing is sent again".to_owned(),
            },
            End::Failed(error) | End::Store(error) => EffectOutcome::Failed {
                effect: EffectState::Partial,
                error,
            },
        }
    }

    /// The person's send from the window or `lomi chat send`: no decision to wait for, no
    /// receipt. Answers once the provider accepted the request and the reply streams.
    pub async fn send_for_person(
        &self,
        conversation_id: &ConversationId,
        expected_draft: Option<DraftRevision>,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<PersonSend, ToolError> {
        let record = self.broker.chat_conversation(None, conversation_id)?;
        let expected = ConversationRevision(record.revision);
        let expected_draft = expected_draft.unwrap_or(DraftRevision(record.draft_revision));
        check_revisions(&record, expected, expected_draft)?;
        let target = self.target(conversation_id.clone(), provider, model)?;
        let cancel = CancellationToken::new();
        {
            let mut person = self.person.lock().unwrap_or_else(|e| e.into_inner());
            if person.contains_key(conversation_id) {
                return Err(ToolError::new(
                    ErrorCode::ResourceBusy,
                    format!(
                        "a reply is still arriving in conversation {conversation_id}; wait for it or cancel it"
                    ),
                ));
            }
            person.insert(conversation_id.clone(), cancel.clone());
        }
        let opened = self
            .open(&target, expected, expected_draft, None, &cancel)
            .await;
        let (reply, seq, revision) = match opened {
            Opened::Streaming(reply, seq, revision) => (reply, seq, revision),
            Opened::Refused(error) => {
                self.person_done(conversation_id);
                return Err(error);
            }
            Opened::Cancelled => {
                self.person_done(conversation_id);
                return Err(ToolError::invalid("cancelled before the provider answered"));
            }
        };
        let answer = PersonSend {
            conversation_id: conversation_id.clone(),
            reply_seq: seq,
            conversation_revision: revision,
            provider: target.provider.name.clone(),
            model: target.model.clone(),
        };
        let sends = self.clone();
        tokio::spawn(async move {
            let outcome = sends.stream(&target, reply, seq, &cancel).await;
            if let EffectOutcome::Failed { error, .. } = outcome {
                tracing::warn!("the person's send to {}: {error}", target.provider.name);
            }
            sends.person_done(&target.conversation_id);
        });
        Ok(answer)
    }

    fn person_done(&self, id: &ConversationId) {
        self.person
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// Stops the reply arriving in `id`, the person's own or an agent's (whose send operation
    /// is then cancelled, as `lomi_operation_cancel` would): what arrived is kept, marked
    /// cancelled, and the agent's receipt settles cancelled with effect partial.
    pub fn cancel_for_person(&self, id: &ConversationId) -> Result<(), ToolError> {
        let token = self
            .person
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned();
        if let Some(token) = token {
            token.cancel();
            return Ok(());
        }
        let record = self.broker.chat_conversation(None, id)?;
        let store_error = |e: lomi_store::StoreError| ToolError::new(e.code(), e.to_string());
        let streaming = self
            .broker
            .store()
            .chat_messages(id, record.messages.saturating_sub(2), 2)
            .map_err(store_error)?
            .into_iter()
            .filter(|m| m.state == MessageState::Streaming)
            .find_map(|m| m.operation_id);
        let receipt = match streaming {
            Some(operation) => self.broker.store().get(&operation).map_err(store_error)?,
            None => None,
        };
        match receipt {
            Some(receipt) => self.broker.cancel_operation(&receipt),
            None => Err(ToolError::not_found(format!(
                "no reply is arriving in conversation {id}"
            ))),
        }
    }
}

enum Opened {
    /// The reply, its seq, and the conversation's revision with the two new messages.
    Streaming(Reply, u64, ConversationRevision),
    Refused(ToolError),
    Cancelled,
}

enum End {
    Complete,
    Cancelled,
    /// Lomi is stopping.
    Stopped,
    Failed(ToolError),
    Store(ToolError),
}

fn check_revisions(
    record: &lomi_store::ConversationRecord,
    expected: ConversationRevision,
    expected_draft: DraftRevision,
) -> Result<(), ToolError> {
    if record.revision != expected.0 || record.draft_revision != expected_draft.0 {
        return Err(conversation_stale(record, "this send"));
    }
    if record.streaming {
        return Err(ToolError::new(
            ErrorCode::ResourceBusy,
            format!(
                "a reply is still arriving in conversation {}; wait until it settles (lomi_chat_get), then send with fresh revisions",
                record.conversation_id
            ),
        ));
    }
    if record.draft_text.trim().is_empty() {
        return Err(ToolError::invalid(format!(
            "the draft of conversation {} is empty: write it first (lomi_chat_draft_update)",
            record.conversation_id
        )));
    }
    Ok(())
}
