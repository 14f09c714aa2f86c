//! Chat tools: a workspace's saved conversations with a model provider the person configured,
//! each with a `conversationRevision` and one draft with its `draftRevision`. Sending goes to
//! the provider and cannot be undone.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, ToolDef};
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};

use crate::ids::{
    ConversationId, ConversationRevision, DraftRevision, RequestKey, RetryEpoch, WorkspaceId,
};
use crate::time::Timestamp;

/// `lomi_chat_list` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatListInput {
    pub workspace_id: WorkspaceId,
}

/// One conversation, without its messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub conversation_id: ConversationId,
    pub workspace_id: WorkspaceId,
    pub title: String,
    pub conversation_revision: ConversationRevision,
    pub draft_revision: DraftRevision,
    pub message_count: u64,
}

/// `lomi_chat_list` output, most recently changed first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatList {
    pub conversations: Vec<ConversationSummary>,
}

/// `lomi_chat_get` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatGetInput {
    pub conversation_id: ConversationId,
    // A previous nextSeq.
    pub after_seq: Option<u64>,
    // Text bytes, 1024-524288 (65536).
    pub max_bytes: Option<u32>,
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    User,
    Assistant,
}

/// Where a message stands: a reply is `streaming` while it arrives; one `cancelled`, `failed`
/// (by the provider) or `interrupted` (Lomi stopped; never resent) part-way keeps what arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageState {
    Complete,
    Streaming,
    Cancelled,
    Failed,
    Interrupted,
}

impl ChatRole {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatRole::User => "user",
            ChatRole::Assistant => "assistant",
        }
    }

    pub fn parse(text: &str) -> Option<ChatRole> {
        [ChatRole::User, ChatRole::Assistant]
            .into_iter()
            .find(|r| r.as_str() == text)
    }
}

impl MessageState {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageState::Complete => "complete",
            MessageState::Streaming => "streaming",
            MessageState::Cancelled => "cancelled",
            MessageState::Failed => "failed",
            MessageState::Interrupted => "interrupted",
        }
    }

    pub fn parse(text: &str) -> Option<MessageState> {
        [
            MessageState::Complete,
            MessageState::Streaming,
            MessageState::Cancelled,
            MessageState::Failed,
            MessageState::Interrupted,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    pub seq: u64,
    pub role: ChatRole,
    pub text: String,
    /// The text was cut at maxBytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    pub state: MessageState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    pub text: String,
    pub draft_revision: DraftRevision,
}

/// `lomi_chat_get` output: a page of messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationView {
    #[serde(flatten)]
    pub summary: ConversationSummary,
    pub draft: Draft,
    pub messages: Vec<ChatMessage>,
    /// Pass as afterSeq for the next page; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_seq: Option<u64>,
}

/// `lomi_chat_create` input; the conversation belongs to the retry epoch's workspace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatCreateInput {
    pub title: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// `lomi_chat_draft_update` input: the draft's whole new text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatDraftUpdateInput {
    pub conversation_id: ConversationId,
    pub expected_draft_revision: DraftRevision,
    pub text: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_chat_create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationCreated {
    pub conversation_id: ConversationId,
    pub conversation_revision: ConversationRevision,
    pub draft_revision: DraftRevision,
}

/// The confirmed result of `lomi_chat_draft_update`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DraftUpdated {
    pub conversation_id: ConversationId,
    pub draft_revision: DraftRevision,
}

/// `lomi_chat_send` input: sends the draft as the next user message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatSendInput {
    pub conversation_id: ConversationId,
    pub expected_conversation_revision: ConversationRevision,
    pub expected_draft_revision: DraftRevision,
    // Default: the chat settings'.
    pub provider: Option<String>,
    // Default: settings', else the provider's first.
    pub model: Option<String>,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_chat_send`: the reply is complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatSent {
    pub conversation_id: ConversationId,
    pub conversation_revision: ConversationRevision,
    /// The reply's seq.
    pub reply_seq: u64,
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_chat_list`
pub struct ChatListTool;

impl ToolDef for ChatListTool {
    const TOOL: Tool = Tool::ChatList;
    const NAME: &'static str = "lomi_chat_list";
    const FAMILY: Option<Family> = Some(Family::Chat);
    const LABEL: &'static str = "List conversations";
    const TITLE: &'static str = "List conversations";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "A workspace's conversations, newest first.";
    type Input = ChatListInput;
    type Output = ChatList;
}

/// `lomi_chat_get`
pub struct ChatGetTool;

impl ToolDef for ChatGetTool {
    const TOOL: Tool = Tool::ChatGet;
    const NAME: &'static str = "lomi_chat_get";
    const FAMILY: Option<Family> = Some(Family::Chat);
    const LABEL: &'static str = "Read conversations";
    const TITLE: &'static str = "Get a conversation";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "A conversation's draft and a page of messages after afterSeq.";
    type Input = ChatGetInput;
    type Output = ConversationView;
}

/// `lomi_chat_create`
pub struct ChatCreateTool;

impl ToolDef for ChatCreateTool {
    const TOOL: Tool = Tool::ChatCreate;
    const NAME: &'static str = "lomi_chat_create";
    const FAMILY: Option<Family> = Some(Family::Chat);
    const LABEL: &'static str = "Start conversations";
    const TITLE: &'static str = "Create a conversation";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Starts a conversation in the retry epoch's workspace.";
    type Input = ChatCreateInput;
    type Output = ConversationCreated;
}

/// `lomi_chat_draft_update`
pub struct ChatDraftUpdateTool;

impl ToolDef for ChatDraftUpdateTool {
    const TOOL: Tool = Tool::ChatDraftUpdate;
    const NAME: &'static str = "lomi_chat_draft_update";
    const FAMILY: Option<Family> = Some(Family::Chat);
    const LABEL: &'static str = "Write chat drafts";
    const TITLE: &'static str = "Update a draft";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str =
        "Replaces a conversation's draft, which the person also edits.";
    type Input = ChatDraftUpdateInput;
    type Output = DraftUpdated;
}

/// `lomi_chat_send`
pub struct ChatSendTool;

impl ToolDef for ChatSendTool {
    const TOOL: Tool = Tool::ChatSend;
    const NAME: &'static str = "lomi_chat_send";
    const FAMILY: Option<Family> = Some(Family::Chat);
    const LABEL: &'static str = "Send messages to a model provider";
    const TITLE: &'static str = "Send a draft";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        open_world_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Sends the draft to the provider; the reply streams into the conversation.";
    // A message sent to a model provider cannot be taken back.
    const ASKS_BY_DEFAULT: bool = true;
    type Input = ChatSendInput;
    type Output = ChatSent;

    fn preview(input: &Self::Input) -> Preview {
        Preview::ChatSend(Box::new(input.clone()))
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __chat_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            ChatList = $crate::tools::chat::ChatListTool => broker as plain,
            ChatGet = $crate::tools::chat::ChatGetTool => broker as plain,
            ChatCreate = $crate::tools::chat::ChatCreateTool => broker as plain,
            ChatDraftUpdate = $crate::tools::chat::ChatDraftUpdateTool => broker as plain,
            ChatSend = $crate::tools::chat::ChatSendTool => chat as plain,
        ]);
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strict::decode;
    use serde_json::json;

    #[test]
    fn a_send_takes_both_revisions_as_decimal_strings() {
        let good = json!({
            "conversationId": "cv_1",
            "expectedConversationRevision": "3",
            "expectedDraftRevision": "2",
            "retryEpoch": "re_1",
            "requestKey": "k1",
        });
        let input = decode::<ChatSendInput>("lomi_chat_send", Some(good.clone())).expect("decodes");
        assert_eq!(input.expected_draft_revision, DraftRevision(2));
        let mut bad = good.clone();
        bad["expectedDraftRevision"] = json!(2);
        assert!(decode::<ChatSendInput>("lomi_chat_send", Some(bad)).is_err());
        let mut bad = good;
        bad["text"] = json!("hi");
        assert!(decode::<ChatSendInput>("lomi_chat_send", Some(bad)).is_err());
    }

    #[test]
    fn roles_and_states_round_trip() {
        for role in [ChatRole::User, ChatRole::Assistant] {
            assert_eq!(ChatRole::parse(role.as_str()), Some(role));
        }
        assert_eq!(
            MessageState::parse("interrupted"),
            Some(MessageState::Interrupted)
        );
        assert_eq!(MessageState::parse("nope"), None);
    }
}
