//! Settings tools: the person's preferences in sections, each compared and swapped by its own
//! `settingsRevision`. Agents read every section (the person-only ones in part) and change
//! only the sections and fields the person leaves to them.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::ToolDef;
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{PairingId, RequestKey, RetryEpoch, SettingsRevision, WorkspaceId};
use crate::tools::browser::Viewport;
use crate::tools::session::PairingState;

/// A settings section.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum SettingsSection {
    Terminal,
    Browser,
    Editor,
    Chat,
    Providers,
    Pairings,
    Confirmations,
    Rules,
    Network,
}

impl SettingsSection {
    pub const ALL: [SettingsSection; 9] = [
        SettingsSection::Terminal,
        SettingsSection::Browser,
        SettingsSection::Editor,
        SettingsSection::Chat,
        SettingsSection::Providers,
        SettingsSection::Pairings,
        SettingsSection::Confirmations,
        SettingsSection::Rules,
        SettingsSection::Network,
    ];

    /// The section's wire name, e.g. `terminal`.
    pub fn name(self) -> &'static str {
        match self {
            SettingsSection::Terminal => "terminal",
            SettingsSection::Browser => "browser",
            SettingsSection::Editor => "editor",
            SettingsSection::Chat => "chat",
            SettingsSection::Providers => "providers",
            SettingsSection::Pairings => "pairings",
            SettingsSection::Confirmations => "confirmations",
            SettingsSection::Rules => "rules",
            SettingsSection::Network => "network",
        }
    }

    pub fn from_name(name: &str) -> Option<SettingsSection> {
        SettingsSection::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether only the person may change the section (agents read it, in part).
    pub fn person_only(self) -> bool {
        matches!(
            self,
            SettingsSection::Providers
                | SettingsSection::Pairings
                | SettingsSection::Confirmations
                | SettingsSection::Rules
                | SettingsSection::Network
        )
    }
}

impl std::fmt::Display for SettingsSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `lomi_settings_get` input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsGetInput {
    // One section; all when absent.
    pub section: Option<SettingsSection>,
}

/// `lomi_settings_update` input: new values for fields of one section, compared and swapped
/// by the section's revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsUpdateInput {
    /// terminal, browser, editor or chat (the others are the person's).
    pub section: SettingsSection,
    // The section's settingsRevision from a fresh lomi_settings_get.
    pub expected_settings_revision: SettingsRevision,
    /// The section's fields and new values, e.g. {"cols":100}.
    pub values: Map<String, Value>,
    // From lomi_connect (any granted workspace).
    pub retry_epoch: RetryEpoch,
    // Your durable name for this request; reuse it (with the same arguments) only to retry.
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_settings_update`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsUpdated {
    pub section: SettingsSection,
    /// The section's new revision.
    pub settings_revision: SettingsRevision,
    /// The section's fields after the change.
    pub values: Map<String, Value>,
}

/// `lomi_settings_get` output: the sections asked for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editor: Option<EditorSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<ProvidersSettings>,
    /// Only your own pairing and its grants (the person sees all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairings: Option<PairingsSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmations: Option<ConfirmationsSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<RulesSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSettings>,
}

/// New terminals' defaults (lomi_terminal_create).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct TerminalSettings {
    pub settings_revision: SettingsRevision,
    /// Absolute path of the shell; "" for $SHELL.
    pub shell: String,
    /// Screen lines kept, 100 to 100000.
    pub scrollback_lines: u32,
    /// 20 to 500.
    pub cols: u16,
    /// 5 to 200.
    pub rows: u16,
}

impl Default for TerminalSettings {
    fn default() -> Self {
        TerminalSettings {
            settings_revision: SettingsRevision(1),
            shell: String::new(),
            scrollback_lines: 5_000,
            cols: 80,
            rows: 24,
        }
    }
}

/// New browsers' defaults (lomi_browser_create, lomi_browser_wait).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct BrowserSettings {
    pub settings_revision: SettingsRevision,
    pub viewport: Viewport,
    /// lomi_browser_wait's timeoutMs when omitted, 1 to 60000.
    pub default_wait_ms: u32,
    /// Whether a new workspace keeps one persistent browser profile (person-only).
    pub persistent_profile_default: bool,
    /// Whether captures are deterministic unless a call says otherwise.
    pub deterministic_captures: bool,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        BrowserSettings {
            settings_revision: SettingsRevision(1),
            viewport: Viewport {
                width: 1280,
                height: 720,
            },
            default_wait_ms: 10_000,
            persistent_profile_default: false,
            deterministic_captures: false,
        }
    }
}

/// How lines end.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum LineEndings {
    #[default]
    Lf,
    Crlf,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct EditorSettings {
    pub settings_revision: SettingsRevision,
    /// 1 to 16.
    pub tab_width: u8,
    /// Line endings of files lomi_file_create makes.
    pub line_endings: LineEndings,
}

impl Default for EditorSettings {
    fn default() -> Self {
        EditorSettings {
            settings_revision: SettingsRevision(1),
            tab_width: 4,
            line_endings: LineEndings::Lf,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ChatSettings {
    pub settings_revision: SettingsRevision,
    /// A provider's name, or "".
    pub default_provider: String,
    pub default_model: String,
    pub system_prompt: String,
}

impl Default for ChatSettings {
    fn default() -> Self {
        ChatSettings {
            settings_revision: SettingsRevision(1),
            default_provider: String::new(),
            default_model: String::new(),
            system_prompt: String::new(),
        }
    }
}

/// A model provider's protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// The Chat Completions API (OpenAI, OpenRouter, Ollama, LM Studio, vLLM, llama.cpp).
    OpenaiCompatible,
    /// The Anthropic Messages API.
    Anthropic,
}

/// Model providers; their keys stay in the OS keyring and are never shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ProvidersSettings {
    pub settings_revision: SettingsRevision,
    pub providers: Vec<Provider>,
}

impl Default for ProvidersSettings {
    fn default() -> Self {
        ProvidersSettings {
            settings_revision: SettingsRevision(1),
            providers: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    pub models: Vec<String>,
    /// Whether the person stored its key in the OS keyring.
    #[serde(default)]
    pub key_stored: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingsSettings {
    pub settings_revision: SettingsRevision,
    pub pairings: Vec<PairingSetting>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairingSetting {
    pub pairing_id: PairingId,
    pub client_name: String,
    pub state: PairingState,
    /// The workspaces it may use.
    pub grants: Vec<WorkspaceId>,
    /// The tool families it sees (with the session tools), when not all of them.
    pub families: Vec<crate::Family>,
    /// It sees every family, including ones a later Lomi adds.
    pub all_families: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmationsSettings {
    pub settings_revision: SettingsRevision,
    /// Tools whose operations wait for the person's decision (awaiting_user).
    pub confirm_tools: Vec<String>,
}

/// The person's rules (`lomi rule`): which calls run at once, wait for them, or are refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RulesSettings {
    pub settings_revision: SettingsRevision,
    pub rules: Vec<crate::rules::RuleRecord>,
    /// Every agent's changes are paused (`lomi pause`).
    pub paused: bool,
    /// Agents paused one by one.
    pub paused_agents: Vec<crate::PairingId>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkSettings {
    pub settings_revision: SettingsRevision,
    /// Where Lomi serves MCP over HTTP ("" before it started serving).
    pub mcp_url: String,
    /// An HTTP client without a token may pair for its MCP session only (pending until the
    /// person approves it, ended with the session). Off: it is answered 401 and signs in.
    pub session_pairing: bool,
}

impl Default for NetworkSettings {
    fn default() -> Self {
        NetworkSettings {
            settings_revision: SettingsRevision(1),
            mcp_url: String::new(),
            session_pairing: false,
        }
    }
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_settings_get`
pub struct SettingsGetTool;

impl ToolDef for SettingsGetTool {
    const TOOL: Tool = Tool::SettingsGet;
    const NAME: &'static str = "lomi_settings_get";
    const FAMILY: Option<Family> = Some(Family::Workspace);
    const LABEL: &'static str = "Read settings";
    const TITLE: &'static str = "Get settings";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str =
        "The person's settings, one section or all, with settingsRevision.";
    type Input = SettingsGetInput;
    type Output = SettingsView;
}

/// `lomi_settings_update`
pub struct SettingsUpdateTool;

impl ToolDef for SettingsUpdateTool {
    const TOOL: Tool = Tool::SettingsUpdate;
    const NAME: &'static str = "lomi_settings_update";
    const FAMILY: Option<Family> = Some(Family::Workspace);
    const LABEL: &'static str = "Change settings";
    const TITLE: &'static str = "Update settings";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Sets fields of a settings section.";
    type Input = SettingsUpdateInput;
    type Output = SettingsUpdated;
}

#[doc(hidden)]
#[macro_export]
macro_rules! __settings_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            SettingsGet = $crate::tools::settings::SettingsGetTool => broker as plain,
            SettingsUpdate = $crate::tools::settings::SettingsUpdateTool => broker as plain,
        ]);
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strict::decode;
    use serde_json::json;

    #[test]
    fn an_update_names_one_known_section_and_a_decimal_revision() {
        let good = json!({
            "section": "terminal",
            "expectedSettingsRevision": "3",
            "values": {"cols": 100},
            "retryEpoch": "re_1",
            "requestKey": "k1",
        });
        let input = decode::<SettingsUpdateInput>("lomi_settings_update", Some(good.clone()))
            .expect("a good update decodes");
        assert_eq!(input.section, SettingsSection::Terminal);
        assert_eq!(input.expected_settings_revision, SettingsRevision(3));
        let mut bad = good.clone();
        bad["section"] = json!("grants");
        assert!(decode::<SettingsUpdateInput>("lomi_settings_update", Some(bad)).is_err());
        let mut bad = good;
        bad["expectedSettingsRevision"] = json!(3);
        assert!(decode::<SettingsUpdateInput>("lomi_settings_update", Some(bad)).is_err());
    }

    #[test]
    fn section_names_round_trip() {
        for section in SettingsSection::ALL {
            assert_eq!(SettingsSection::from_name(section.name()), Some(section));
            assert_eq!(
                serde_json::to_value(section).expect("json"),
                json!(section.name())
            );
        }
    }
}
