//! The person's settings, in sections, each with its own revision. They live in `domain.json`
//! beside what the person-only sections describe (pairings and grants, the confirmation
//! policy), so a setting has one home and one atomic save; agents change only the terminal,
//! browser, editor and chat sections, through the operation engine.

use lomi_protocol::tools::operations::OperationView;
use lomi_protocol::tools::settings::{
    BrowserSettings, ChatSettings, ConfirmationsSettings, EditorSettings, NetworkSettings,
    PairingSetting, PairingsSettings, Provider, ProviderKind, ProvidersSettings, RulesSettings,
    SettingsGetInput, SettingsSection, SettingsUpdateInput, SettingsUpdated, SettingsView,
    TerminalSettings,
};
use lomi_protocol::{
    EffectState, ErrorCode, PairingId, SettingsRevision, Tool, ToolError, WorkspaceId,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Broker;
use crate::domain::Domain;
use crate::engine::{Confirmation, EffectOutcome, Mutation, Permit};

/// Longest system prompt, in bytes.
const MAX_SYSTEM_PROMPT: usize = 32 * 1024;
/// Most providers, and most models listed for one.
const MAX_PROVIDERS: usize = 32;
const MAX_MODELS: usize = 100;
/// Most fields one change sets.
const MAX_VALUES: usize = 16;

/// Every section's values and revision, as kept in `domain.json`. The person-only sections
/// that describe other parts of the domain (pairings, confirmations) keep only their revision
/// here: their values are the pairings and the policy themselves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    pub terminal: TerminalSettings,
    pub browser: BrowserSettings,
    pub editor: EditorSettings,
    pub chat: ChatSettings,
    pub providers: ProvidersSettings,
    pub network: NetworkSettings,
    pub pairings_revision: Option<SettingsRevision>,
    pub confirmations_revision: Option<SettingsRevision>,
    pub rules_revision: Option<SettingsRevision>,
}

/// Who asks for a change: agents may change fewer things than the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changer {
    Agent,
    Person,
}

fn person_only(what: &str) -> ToolError {
    ToolError::new(
        ErrorCode::PersonOnly,
        format!(
            "{what} is the person's to change, in Lomi's Settings or with `lomi settings set`; agents may only read it. Do not retry."
        ),
    )
}

fn revision_mismatch(section: SettingsSection, current: SettingsRevision) -> ToolError {
    ToolError::new(
        ErrorCode::RevisionMismatch,
        format!(
            "settings section {section} is at revision {current}; re-read it (lomi_settings_get) and decide again"
        ),
    )
    .with_details(serde_json::json!({ "section": section, "currentRevision": current }))
}

/// Sets `values` on a section of type `T`, field by field, so an error names its field; the
/// revision is not a field. `person_only` fields refuse agents.
fn patch<T: Serialize + DeserializeOwned>(
    section: SettingsSection,
    current: &T,
    values: &Map<String, Value>,
    person_only_fields: &[&str],
    changer: Changer,
) -> Result<T, ToolError> {
    let mut fields = match serde_json::to_value(current) {
        Ok(Value::Object(fields)) => fields,
        _ => {
            return Err(ToolError::internal(format!(
                "section {section} is not an object"
            )));
        }
    };
    let names: Vec<&str> = fields
        .keys()
        .map(String::as_str)
        .filter(|name| *name != "settingsRevision")
        .collect();
    let names = names.join(", ");
    for (name, value) in values {
        if name == "settingsRevision" || !fields.contains_key(name) {
            return Err(ToolError::invalid(format!(
                "section {section} has no field {name:?}; its fields are {names}"
            )));
        }
        if changer == Changer::Agent && person_only_fields.contains(&name.as_str()) {
            return Err(person_only(&format!("{section}.{name}")));
        }
        fields.insert(name.clone(), value.clone());
        serde_json::from_value::<T>(Value::Object(fields.clone()))
            .map_err(|e| ToolError::invalid(format!("{section}.{name}: {e}")))?;
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| ToolError::invalid(format!("{section}: {e}")))
}

fn range<T: PartialOrd + std::fmt::Display>(
    what: &str,
    value: T,
    low: T,
    high: T,
) -> Result<(), ToolError> {
    if value < low || value > high {
        return Err(ToolError::invalid(format!(
            "{what} must be {low} to {high} (is {value})"
        )));
    }
    Ok(())
}

fn plain_text(what: &str, text: &str, max_chars: usize) -> Result<(), ToolError> {
    if text.chars().count() > max_chars || text.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "{what} takes at most {max_chars} characters, none of them control characters"
        )));
    }
    Ok(())
}

fn check_terminal(t: &TerminalSettings) -> Result<(), ToolError> {
    range("terminal.cols", t.cols, 20, 500)?;
    range("terminal.rows", t.rows, 5, 200)?;
    range("terminal.scrollbackLines", t.scrollback_lines, 100, 100_000)?;
    plain_text("terminal.shell", &t.shell, 1024)?;
    if !t.shell.is_empty() && !t.shell.starts_with('/') {
        return Err(ToolError::invalid(
            "terminal.shell must be an absolute path (e.g. /bin/bash), or \"\" for $SHELL",
        ));
    }
    Ok(())
}

fn check_browser(b: &BrowserSettings) -> Result<(), ToolError> {
    range("browser.viewport.width", b.viewport.width, 100, 4096)?;
    range("browser.viewport.height", b.viewport.height, 100, 4096)?;
    range("browser.defaultWaitMs", b.default_wait_ms, 1, 60_000)
}

fn check_editor(e: &EditorSettings) -> Result<(), ToolError> {
    range("editor.tabWidth", e.tab_width, 1, 16)
}

fn check_chat(c: &ChatSettings) -> Result<(), ToolError> {
    plain_text("chat.defaultProvider", &c.default_provider, 60)?;
    plain_text("chat.defaultModel", &c.default_model, 200)?;
    if c.system_prompt.len() > MAX_SYSTEM_PROMPT || c.system_prompt.contains('\0') {
        return Err(ToolError::invalid(format!(
            "chat.systemPrompt takes at most {MAX_SYSTEM_PROMPT} bytes, without NUL"
        )));
    }
    Ok(())
}

/// A provider's name: it names the provider's key in the keyring, so 1 to 60 of
/// `[A-Za-z0-9._-]`.
pub fn check_provider_name(name: &str) -> Result<(), ToolError> {
    let ok = !name.is_empty()
        && name.len() <= 60
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "provider name {name:?} must have 1 to 60 of A-Z a-z 0-9 . _ -"
        )))
    }
}

/// What the person gives for a provider: everything but the key.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProviderFields {
    kind: ProviderKind,
    base_url: String,
    #[serde(default)]
    models: Vec<String>,
}

fn provider_from(name: &str, value: &Value, key_stored: bool) -> Result<Provider, ToolError> {
    check_provider_name(name)?;
    let fields: ProviderFields = serde_json::from_value(value.clone()).map_err(|e| {
        ToolError::invalid(format!(
            "providers.{name}: {e}; give {{\"kind\":\"openai_compatible\"|\"anthropic\",\"baseUrl\":\"https://…\",\"models\":[…]}}, or null to remove it"
        ))
    })?;
    let url = fields.base_url.trim_end_matches('/');
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    if !scheme_ok || url.len() > 2048 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ToolError::invalid(format!(
            "providers.{name}.baseUrl must be an http:// or https:// URL (e.g. https://api.openai.com/v1)"
        )));
    }
    if fields.models.len() > MAX_MODELS {
        return Err(ToolError::invalid(format!(
            "providers.{name}.models lists at most {MAX_MODELS} models"
        )));
    }
    for model in &fields.models {
        if model.is_empty() {
            return Err(ToolError::invalid(format!(
                "providers.{name}.models has an empty name"
            )));
        }
        plain_text(&format!("providers.{name}.models"), model, 200)?;
    }
    Ok(Provider {
        name: name.to_owned(),
        kind: fields.kind,
        base_url: url.to_owned(),
        models: fields.models,
        key_stored,
    })
}

impl Settings {
    /// The revision of `section` in `domain`.
    pub fn revision(domain: &Domain, section: SettingsSection) -> SettingsRevision {
        let s = &domain.settings;
        match section {
            SettingsSection::Terminal => s.terminal.settings_revision,
            SettingsSection::Browser => s.browser.settings_revision,
            SettingsSection::Editor => s.editor.settings_revision,
            SettingsSection::Chat => s.chat.settings_revision,
            SettingsSection::Providers => s.providers.settings_revision,
            SettingsSection::Network => s.network.settings_revision,
            SettingsSection::Pairings => s.pairings_revision.unwrap_or(SettingsRevision(1)),
            SettingsSection::Confirmations => {
                s.confirmations_revision.unwrap_or(SettingsRevision(1))
            }
            SettingsSection::Rules => s.rules_revision.unwrap_or(SettingsRevision(1)),
        }
    }

    /// Moves the revision of the person-only sections whose values live elsewhere in the
    /// domain (pairings and grants, the confirmation policy) when a change altered them.
    pub fn note_changes(before: &Domain, after: &mut Domain) {
        let pairings = |d: &Domain| {
            d.pairings
                .iter()
                .map(|p| {
                    (
                        p.id.clone(),
                        p.client_name.clone(),
                        p.state,
                        p.grants.clone(),
                        p.families.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        if pairings(before) != pairings(after) {
            let next = Settings::revision(after, SettingsSection::Pairings).next();
            after.settings.pairings_revision = Some(next);
        }
        if before.policy.confirm_tools != after.policy.confirm_tools {
            let next = Settings::revision(after, SettingsSection::Confirmations).next();
            after.settings.confirmations_revision = Some(next);
        }
        let rules = |d: &Domain| {
            (
                d.policy.rules.clone(),
                d.policy.paused,
                d.policy.paused_agents.clone(),
            )
        };
        if rules(before) != rules(after) {
            let next = Settings::revision(after, SettingsSection::Rules).next();
            after.settings.rules_revision = Some(next);
        }
    }

    /// The section's fields as a JSON object (its revision left out).
    fn values(domain: &Domain, section: SettingsSection) -> Map<String, Value> {
        let view = view(domain, Some(section), None);
        let value = match section {
            SettingsSection::Terminal => serde_json::to_value(view.terminal),
            SettingsSection::Browser => serde_json::to_value(view.browser),
            SettingsSection::Editor => serde_json::to_value(view.editor),
            SettingsSection::Chat => serde_json::to_value(view.chat),
            SettingsSection::Providers => serde_json::to_value(view.providers),
            SettingsSection::Pairings => serde_json::to_value(view.pairings),
            SettingsSection::Confirmations => serde_json::to_value(view.confirmations),
            SettingsSection::Rules => serde_json::to_value(view.rules),
            SettingsSection::Network => serde_json::to_value(view.network),
        };
        let mut fields = match value {
            Ok(Value::Object(fields)) => fields,
            _ => Map::new(),
        };
        fields.remove("settingsRevision");
        fields
    }
}

/// Applies `values` to `section` of `domain` as `changer` may, checking every value, and moves
/// the section's revision. Confirmations go through the policy itself (the same as
/// `lomi confirm`); pairings and the network have their own commands.
pub fn apply(
    domain: &mut Domain,
    section: SettingsSection,
    values: &Map<String, Value>,
    changer: Changer,
) -> Result<SettingsUpdated, ToolError> {
    apply_checking(domain, section, values, changer, Checks::Everything)
}

/// How much of a change `apply_checking` checks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checks {
    /// Names, types, ranges and who may change what: what the request alone decides.
    Request,
    /// Also what depends on other sections (a default provider must be a provider).
    Everything,
}

fn apply_checking(
    domain: &mut Domain,
    section: SettingsSection,
    values: &Map<String, Value>,
    changer: Changer,
    checks: Checks,
) -> Result<SettingsUpdated, ToolError> {
    if changer == Changer::Agent && section.person_only() {
        return Err(person_only(&format!("settings section {section}")));
    }
    if values.is_empty() || values.len() > MAX_VALUES {
        return Err(ToolError::invalid(format!(
            "values sets 1 to {MAX_VALUES} fields of the section (has {})",
            values.len()
        )));
    }
    let s = &mut domain.settings;
    match section {
        SettingsSection::Terminal => {
            let mut next = patch(section, &s.terminal, values, &[], changer)?;
            check_terminal(&next)?;
            next.settings_revision = s.terminal.settings_revision.next();
            s.terminal = next;
        }
        SettingsSection::Browser => {
            // Whether browsing state persists is a privacy choice: the person's.
            let mut next = patch(
                section,
                &s.browser,
                values,
                &["persistentProfileDefault"],
                changer,
            )?;
            check_browser(&next)?;
            next.settings_revision = s.browser.settings_revision.next();
            s.browser = next;
        }
        SettingsSection::Editor => {
            let mut next = patch(section, &s.editor, values, &[], changer)?;
            check_editor(&next)?;
            next.settings_revision = s.editor.settings_revision.next();
            s.editor = next;
        }
        SettingsSection::Chat => {
            let mut next = patch(section, &s.chat, values, &[], changer)?;
            check_chat(&next)?;
            if checks == Checks::Everything
                && !next.default_provider.is_empty()
                && !s
                    .providers
                    .providers
                    .iter()
                    .any(|p| p.name == next.default_provider)
            {
                return Err(ToolError::invalid(format!(
                    "chat.defaultProvider {:?} is not among the providers (see the providers section)",
                    next.default_provider
                )));
            }
            next.settings_revision = s.chat.settings_revision.next();
            s.chat = next;
        }
        SettingsSection::Providers => {
            let mut providers = s.providers.providers.clone();
            for (name, value) in values {
                let at = providers.iter().position(|p| &p.name == name);
                if value.is_null() {
                    let Some(at) = at else {
                        return Err(ToolError::not_found(format!("no provider {name:?}")));
                    };
                    if s.chat.default_provider == *name {
                        return Err(ToolError::invalid(format!(
                            "provider {name:?} is chat.defaultProvider; choose another default first"
                        )));
                    }
                    if providers[at].key_stored {
                        return Err(ToolError::invalid(format!(
                            "provider {name:?} has a key in the keyring; remove the key first (`lomi settings provider-key {name} --remove`)"
                        )));
                    }
                    providers.remove(at);
                    continue;
                }
                let stored = at.is_some_and(|at| providers[at].key_stored);
                let provider = provider_from(name, value, stored)?;
                match at {
                    Some(at) => providers[at] = provider,
                    None => providers.push(provider),
                }
            }
            if providers.len() > MAX_PROVIDERS {
                return Err(ToolError::invalid(format!(
                    "Lomi keeps at most {MAX_PROVIDERS} providers"
                )));
            }
            s.providers.providers = providers;
            s.providers.settings_revision = s.providers.settings_revision.next();
        }
        SettingsSection::Confirmations => {
            let mut tools = domain.policy.confirm_tools.clone();
            for (name, value) in values {
                let tool = Tool::from_name(name)
                    .filter(|t| t.kind() == lomi_protocol::catalog::ToolKind::Mutation)
                    .ok_or_else(|| {
                        ToolError::invalid(format!(
                            "{name} is not a mutating tool of Lomi's catalog"
                        ))
                    })?;
                match value.as_bool() {
                    Some(true) => tools.insert(tool),
                    Some(false) => tools.remove(&tool),
                    None => {
                        return Err(ToolError::invalid(format!(
                            "confirmations.{name} is true (wait for the person) or false"
                        )));
                    }
                };
            }
            domain.policy.confirm_tools = tools;
            // The revision moves in `note_changes`, as for `lomi confirm`.
        }
        SettingsSection::Rules => {
            return Err(ToolError::invalid(
                "rules change with `lomi rule add|remove`, pausing with `lomi pause|resume`, or in the window's Settings → Rules",
            ));
        }
        SettingsSection::Pairings => {
            return Err(ToolError::invalid(
                "pairings and grants change with `lomi pairing approve|deny|revoke` or in the window's approval dialog",
            ));
        }
        SettingsSection::Network => {
            // Where Lomi serves is shown only; whether a client may pair for its session
            // without signing in is the person's choice.
            if values.contains_key("mcpUrl") {
                return Err(ToolError::invalid(
                    "network.mcpUrl shows where Lomi serves; start it with `lomi serve --http ADDRESS` to change it",
                ));
            }
            let mut next = patch(section, &s.network, values, &[], changer)?;
            next.settings_revision = s.network.settings_revision.next();
            s.network = next;
        }
    }
    Ok(updated(domain, section))
}

/// What a change answers: the section's revision and values, as they are now.
fn updated(domain: &Domain, section: SettingsSection) -> SettingsUpdated {
    SettingsUpdated {
        section,
        settings_revision: Settings::revision(domain, section),
        values: Settings::values(domain, section),
    }
}

/// The sections asked for. `agent`: the pairing asking, which sees only its own pairing.
pub fn view(
    domain: &Domain,
    section: Option<SettingsSection>,
    agent: Option<&PairingId>,
) -> SettingsView {
    let wanted = |s: SettingsSection| section.is_none_or(|one| one == s);
    let s = &domain.settings;
    SettingsView {
        terminal: wanted(SettingsSection::Terminal).then(|| s.terminal.clone()),
        browser: wanted(SettingsSection::Browser).then(|| s.browser.clone()),
        editor: wanted(SettingsSection::Editor).then(|| s.editor.clone()),
        chat: wanted(SettingsSection::Chat).then(|| s.chat.clone()),
        providers: wanted(SettingsSection::Providers).then(|| s.providers.clone()),
        pairings: wanted(SettingsSection::Pairings).then(|| PairingsSettings {
            settings_revision: Settings::revision(domain, SettingsSection::Pairings),
            pairings: domain
                .pairings
                .iter()
                .filter(|p| agent.is_none_or(|me| &p.id == me))
                .map(|p| PairingSetting {
                    pairing_id: p.id.clone(),
                    client_name: p.client_name.clone(),
                    state: p.state,
                    grants: p.grants.clone(),
                    families: p.families.iter().flatten().copied().collect(),
                    all_families: p.families.is_none(),
                })
                .collect(),
        }),
        confirmations: wanted(SettingsSection::Confirmations).then(|| ConfirmationsSettings {
            settings_revision: Settings::revision(domain, SettingsSection::Confirmations),
            confirm_tools: domain
                .policy
                .confirm_tools
                .iter()
                .map(|t| t.name().to_owned())
                .collect(),
        }),
        rules: wanted(SettingsSection::Rules).then(|| RulesSettings {
            settings_revision: Settings::revision(domain, SettingsSection::Rules),
            rules: domain.policy.rules.clone(),
            paused: domain.policy.paused,
            paused_agents: domain.policy.paused_agents.iter().cloned().collect(),
        }),
        network: wanted(SettingsSection::Network).then(|| s.network.clone()),
    }
}

impl Broker {
    /// `lomi_settings_get`: every section or one; the pairings section holds only the
    /// caller's own pairing.
    pub fn settings_get(
        &self,
        caller: &PairingId,
        input: &SettingsGetInput,
    ) -> Result<SettingsView, ToolError> {
        self.authorize(caller)?;
        Ok(view(&self.domain(), input.section, Some(caller)))
    }

    /// The person's view of the settings (every pairing).
    pub fn settings_for_person(&self, section: Option<SettingsSection>) -> SettingsView {
        view(&self.domain(), section, None)
    }

    /// The terminal section, for new terminals.
    pub fn terminal_settings(&self) -> TerminalSettings {
        self.domain().settings.terminal.clone()
    }

    /// The browser section, for new browsers and waits.
    pub fn browser_settings(&self) -> BrowserSettings {
        self.domain().settings.browser.clone()
    }

    /// The editor section, for new files.
    pub fn editor_settings(&self) -> EditorSettings {
        self.domain().settings.editor.clone()
    }

    /// The person's change to a section (the window, `lomi settings set`), compared with
    /// `expected` when given. Saved before it answers; a failed save changes nothing.
    pub fn settings_change(
        &self,
        section: SettingsSection,
        values: &Map<String, Value>,
        expected: Option<SettingsRevision>,
    ) -> Result<SettingsUpdated, ToolError> {
        self.update_domain(|domain| {
            if let Some(expected) = expected {
                let current = Settings::revision(domain, section);
                if current != expected {
                    return Err(revision_mismatch(section, current));
                }
            }
            apply(domain, section, values, Changer::Person)
        })
        .map(|_| {
            // Confirmations move their revision in `note_changes`, after `apply` answered.
            updated(&self.domain(), section)
        })
    }

    /// Records whether a provider's key is in the keyring (the person stored or removed it).
    pub fn provider_key_noted(
        &self,
        name: &str,
        stored: bool,
    ) -> Result<SettingsUpdated, ToolError> {
        self.update_domain(|domain| {
            let providers = &mut domain.settings.providers;
            let provider = providers
                .providers
                .iter_mut()
                .find(|p| p.name == name)
                .ok_or_else(|| {
                    ToolError::not_found(format!(
                        "no provider {name:?}; add it first (`lomi settings set providers {name} '{{\"kind\":…,\"baseUrl\":…}}'`)"
                    ))
                })?;
            if provider.key_stored != stored {
                provider.key_stored = stored;
                providers.settings_revision = providers.settings_revision.next();
            }
            Ok(updated(domain, SettingsSection::Providers))
        })
    }

    /// Whether a provider of that name exists (before its key goes to the keyring).
    pub fn provider_exists(&self, name: &str) -> bool {
        self.domain()
            .settings
            .providers
            .providers
            .iter()
            .any(|p| p.name == name)
    }

    /// Whether an HTTP client without a token may pair for its MCP session
    /// (`network.sessionPairing`, the person's choice; off by default).
    pub fn session_pairing_allowed(&self) -> bool {
        self.domain().settings.network.session_pairing
    }

    /// Records where Lomi serves MCP over HTTP; the network section's revision moves when
    /// that changed since the last start.
    pub fn note_mcp_url(&self, url: &str) -> Result<(), ToolError> {
        if self.domain().settings.network.mcp_url == url {
            return Ok(());
        }
        self.update_domain(|domain| {
            let network = &mut domain.settings.network;
            network.mcp_url = url.to_owned();
            network.settings_revision = network.settings_revision.next();
            Ok(())
        })
    }

    /// REVISION_MISMATCH (with the current revision) unless `section` is at `expected`.
    fn check_settings_revision(
        &self,
        section: SettingsSection,
        expected: SettingsRevision,
    ) -> Result<(), ToolError> {
        let current = Settings::revision(&self.domain(), section);
        if current == expected {
            Ok(())
        } else {
            Err(revision_mismatch(section, current))
        }
    }

    /// `lomi_settings_update`: an agent's change to one section, as one operation compared and
    /// swapped by the section's revision. The retry epoch's workspace is where its receipt
    /// is listed; settings themselves belong to no workspace.
    pub async fn settings_update(
        &self,
        caller: &PairingId,
        input: SettingsUpdateInput,
    ) -> Result<OperationView, ToolError> {
        let workspace_id: WorkspaceId = self.retry_epoch_workspace(caller, &input.retry_epoch)?;
        // What the values are is checked against the defaults, not the current settings, so
        // that a retry is answered by its receipt whatever changed since.
        // A default provider naming a provider of the real settings is checked in the effect.
        apply_checking(
            &mut Domain::default(),
            input.section,
            &input.values,
            Changer::Agent,
            Checks::Request,
        )?;
        let section = input.section;
        let expected = input.expected_settings_revision;
        let mutation = Mutation {
            revision: Some(format!("{section}:{expected}")),
            ..Mutation::of::<lomi_protocol::tools::settings::SettingsUpdateTool>(
                (&input.retry_epoch, &input.request_key),
                &input,
                workspace_id,
                Permit::Settings,
            )?
        };
        let values = input.values;
        self.operate(
            caller,
            mutation,
            Confirmation::Policy,
            async { Ok(()) },
            move |broker, (): &()| broker.check_settings_revision(section, expected),
            move |(), context| async move {
                let applied = context.broker.update_domain(|domain| {
                    let current = Settings::revision(domain, section);
                    if current != expected {
                        return Err(revision_mismatch(section, current));
                    }
                    apply(domain, section, &values, Changer::Agent)
                });
                match applied {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(map) => map,
            _ => panic!("values must be an object"),
        }
    }

    fn check(
        section: SettingsSection,
        changer: Changer,
        set: Value,
    ) -> Result<SettingsUpdated, ToolError> {
        apply(&mut Domain::default(), section, &values(set), changer)
    }

    #[test]
    fn a_change_moves_only_its_sections_revision() {
        let mut domain = Domain::default();
        let updated = apply(
            &mut domain,
            SettingsSection::Terminal,
            &values(json!({"cols": 100, "rows": 30})),
            Changer::Agent,
        )
        .expect("a terminal change");
        assert_eq!(updated.settings_revision, SettingsRevision(2));
        assert_eq!(domain.settings.terminal.cols, 100);
        assert_eq!(updated.values["rows"], json!(30));
        assert_eq!(
            domain.settings.browser.settings_revision,
            SettingsRevision(1)
        );
    }

    #[test]
    fn values_are_checked_field_by_field() {
        use SettingsSection::*;
        let cases = [
            (
                Terminal,
                json!({"cols": 5}),
                ErrorCode::InvalidArgument,
                "terminal.cols must be 20 to 500",
            ),
            (
                Terminal,
                json!({"cols": "wide"}),
                ErrorCode::InvalidArgument,
                "terminal.cols: invalid type",
            ),
            (
                Terminal,
                json!({"colour": 1}),
                ErrorCode::InvalidArgument,
                "has no field \"colour\"",
            ),
            (
                Terminal,
                json!({"settingsRevision": "9"}),
                ErrorCode::InvalidArgument,
                "has no field",
            ),
            (
                Terminal,
                json!({"shell": "bash"}),
                ErrorCode::InvalidArgument,
                "absolute path",
            ),
            (
                Editor,
                json!({"lineEndings": "cr"}),
                ErrorCode::InvalidArgument,
                "editor.lineEndings",
            ),
            (
                Chat,
                json!({"defaultProvider": "nobody"}),
                ErrorCode::InvalidArgument,
                "not among the providers",
            ),
            (
                Browser,
                json!({"persistentProfileDefault": true}),
                ErrorCode::PersonOnly,
                "browser.persistentProfileDefault",
            ),
            (
                Providers,
                json!({"x": null}),
                ErrorCode::PersonOnly,
                "providers",
            ),
            (
                Pairings,
                json!({"grants": []}),
                ErrorCode::PersonOnly,
                "pairings",
            ),
            (
                Confirmations,
                json!({"lomi_file_delete": false}),
                ErrorCode::PersonOnly,
                "confirmations",
            ),
            (
                Network,
                json!({"mcpUrl": "x"}),
                ErrorCode::PersonOnly,
                "network",
            ),
            (
                Terminal,
                json!({}),
                ErrorCode::InvalidArgument,
                "1 to 16 fields",
            ),
        ];
        for (section, set, code, message) in cases {
            let error = check(section, Changer::Agent, set.clone())
                .expect_err(&format!("{section} {set} must be refused"));
            assert_eq!(error.code, code, "{section} {set}: {error}");
            assert!(error.message.contains(message), "{section} {set}: {error}");
        }
    }

    #[test]
    fn the_person_adds_providers_and_turns_confirmations_off() {
        let mut domain = Domain::default();
        let provider = json!({"local": {"kind": "openai_compatible", "baseUrl": "http://127.0.0.1:11434/v1/", "models": ["llama3"]}});
        let updated = apply(
            &mut domain,
            SettingsSection::Providers,
            &values(provider),
            Changer::Person,
        )
        .expect("the person adds a provider");
        assert_eq!(updated.settings_revision, SettingsRevision(2));
        assert_eq!(
            domain.settings.providers.providers[0].base_url,
            "http://127.0.0.1:11434/v1"
        );
        assert!(!domain.settings.providers.providers[0].key_stored);
        let bad = json!({"x": {"kind": "openai_compatible", "baseUrl": "file:///etc"}});
        assert!(
            apply(
                &mut domain,
                SettingsSection::Providers,
                &values(bad),
                Changer::Person
            )
            .is_err()
        );
        let before = domain.clone();
        apply(
            &mut domain,
            SettingsSection::Confirmations,
            &values(json!({"lomi_file_delete": false})),
            Changer::Person,
        )
        .expect("the person turns a confirmation off");
        Settings::note_changes(&before, &mut domain);
        assert!(!domain.policy.confirm_tools.contains(&Tool::FileDelete));
        assert_eq!(
            Settings::revision(&domain, SettingsSection::Confirmations),
            SettingsRevision(2)
        );
        assert!(
            apply(
                &mut domain,
                SettingsSection::Confirmations,
                &values(json!({"lomi_file_read": true})),
                Changer::Person
            )
            .is_err()
        );
    }

    #[test]
    fn only_the_person_lets_clients_pair_for_their_session_and_the_url_is_shown_only() {
        let mut domain = Domain::default();
        assert!(!domain.settings.network.session_pairing, "off by default");
        let on = values(json!({"sessionPairing": true}));
        let refused = apply(&mut domain, SettingsSection::Network, &on, Changer::Agent)
            .expect_err("an agent cannot let clients in");
        assert_eq!(refused.code, ErrorCode::PersonOnly, "{refused}");
        let updated = apply(&mut domain, SettingsSection::Network, &on, Changer::Person)
            .expect("the person turns it on");
        assert!(domain.settings.network.session_pairing);
        assert_eq!(updated.settings_revision, SettingsRevision(2));
        for bad in [
            json!({"sessionPairing": "yes"}),
            json!({"mcpUrl": "http://127.0.0.1:1/mcp"}),
        ] {
            let error = apply(
                &mut domain,
                SettingsSection::Network,
                &values(bad.clone()),
                Changer::Person,
            )
            .expect_err(&format!("{bad} must be refused"));
            assert_eq!(error.code, ErrorCode::InvalidArgument, "{bad}: {error}");
        }
        assert!(domain.settings.network.session_pairing, "nothing changed");
    }

    #[test]
    fn agents_see_only_their_own_pairing_and_never_a_key() {
        let domain = Domain::default();
        let view = view(&domain, None, Some(&"pr_me".parse().expect("id")));
        let text = serde_json::to_string(&view).expect("json");
        assert!(view.pairings.expect("pairings").pairings.is_empty());
        assert!(!text.to_lowercase().contains("apikey"));
    }
}
