//! The person's rules and pause, applied: what decides a call (one of their rules, or the
//! tool's own "ask me before" default), the rule suggested beside a decision, and the
//! person's commands that change the rules and pause agents. The matching itself is
//! `lomi_protocol::rules`; the engine asks [`Broker::verdict`] after a pairing's grants and
//! families allowed the call, so a rule only ever narrows what those allow.

use std::collections::HashMap;

use lomi_protocol::control::{RuleTested, RuleUse, RulesView};
use lomi_protocol::definition::Subject;
use lomi_protocol::rules::{
    Call, RuleDraft, RuleRecord, RuleSubject, SubjectKind, Tools, Verdict, deciding,
};
use lomi_protocol::tools::settings::SettingsSection;
use lomi_protocol::{
    ErrorCode, PairingId, RuleId, SettingsRevision, Timestamp, Tool, ToolError, WorkspaceId,
};

use crate::Broker;
use crate::settings::Settings;

/// Most rules the person keeps.
const MAX_RULES: usize = 500;

/// What decided a call, as its receipt records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decider {
    /// The tool's own "ask me before" setting (`lomi confirm`).
    Default,
    /// One of the person's rules.
    Rule(RuleId),
    /// The person's answer to this operation.
    Person,
    /// A choice the person made earlier for this kind of request (an Android device's
    /// installs).
    Remembered,
}

impl Decider {
    /// The receipt's `decided_by`: `default`, `rule:<id>`, `person` or `remembered`.
    pub fn as_text(&self) -> String {
        match self {
            Decider::Default => "default".to_owned(),
            Decider::Rule(id) => format!("rule:{id}"),
            Decider::Person => "person".to_owned(),
            Decider::Remembered => "remembered".to_owned(),
        }
    }
}

/// A call's verdict and what gave it.
#[derive(Clone, Debug)]
pub struct Judged {
    pub verdict: Verdict,
    pub by: Decider,
    /// The deciding rule, when one did.
    pub rule: Option<RuleRecord>,
}

impl Judged {
    /// The refusal an agent gets for a call a rule denied: which rule, and how the person
    /// changes it.
    pub fn denial(&self, tool: Tool) -> ToolError {
        let Some(rule) = &self.rule else {
            return ToolError::new(ErrorCode::UserDenied, "the person refused this call");
        };
        ToolError::new(
            ErrorCode::UserDenied,
            format!(
                "the person's rule {} ({}) refuses this {} call; do not retry it unchanged. The person can change the rule in Lomi's Settings → Rules or with `lomi rule remove {}`",
                rule.rule_id,
                rule.draft.describe(),
                tool.name(),
                rule.rule_id
            ),
        )
        .with_details(serde_json::json!({ "ruleId": rule.rule_id }))
    }
}

/// The narrowest useful rule for calls like this one: this agent, this workspace, this tool,
/// and the subject's folder, origin, program and subcommand, or package.
pub fn suggest(
    agent: &PairingId,
    workspace: &WorkspaceId,
    tool: Tool,
    subject: &Subject,
    verdict: Verdict,
) -> RuleDraft {
    let subject = match subject {
        Subject::None => None,
        Subject::Paths(paths) => folder_of(paths).map(|pattern| RuleSubject {
            kind: SubjectKind::Paths,
            pattern,
        }),
        Subject::Url(url) => Some(RuleSubject {
            kind: SubjectKind::Url,
            pattern: origin_pattern(url),
        }),
        Subject::Command(command) => Some(RuleSubject {
            kind: SubjectKind::Command,
            pattern: command_pattern(command),
        }),
        Subject::Package(package) => Some(RuleSubject {
            kind: SubjectKind::Package,
            pattern: package.clone(),
        }),
    };
    RuleDraft {
        agent: Some(agent.clone()),
        workspace: Some(workspace.clone()),
        tools: tool.name().to_owned(),
        subject,
        verdict,
        expires_at: None,
    }
}

/// `dir/**` for the folder holding every path (a file at the project's root: that file);
/// `None` when the paths share no folder (then the suggestion names the tool alone).
fn folder_of(paths: &[String]) -> Option<String> {
    let folders: Vec<Vec<&str>> = paths
        .iter()
        .map(|path| {
            let parts: Vec<&str> = path
                .split('/')
                .filter(|part| !part.is_empty() && *part != ".")
                .collect();
            parts
        })
        .collect();
    if folders
        .iter()
        .any(|parts| parts.is_empty() || parts.contains(&".."))
    {
        return None;
    }
    if let [only] = folders.as_slice()
        && only.len() == 1
    {
        return Some(only[0].to_owned());
    }
    let first = folders.first()?;
    // The folders every path shares: a prefix of the first path's folders.
    let mut common = first.len() - 1;
    for parts in &folders[1..] {
        common = (0..common.min(parts.len() - 1))
            .take_while(|&i| parts[i] == first[i])
            .count();
    }
    (common > 0).then(|| format!("{}/**", first[..common].join("/")))
}

/// `scheme://host[:port]/*` for a URL; the URL itself when it has no origin to name.
fn origin_pattern(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => {
            format!("{}/*", parsed.origin().ascii_serialization())
        }
        _ => url.to_owned(),
    }
}

/// `program subcommand*` (`git push*`, `npm test*`); `program *` when the next word is an
/// option; the program alone when it is alone.
fn command_pattern(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    match words.as_slice() {
        [] => command.trim().to_owned(),
        [program] => (*program).to_owned(),
        [program, next, ..] if !next.starts_with('-') => format!("{program} {next}*"),
        [program, ..] => format!("{program} *"),
    }
}

impl Broker {
    /// What decides `tool` acting on `subject` for `agent` in `workspace` now: a matching
    /// rule (deny first, then the most specific), otherwise the tool's default.
    pub fn verdict(
        &self,
        agent: &PairingId,
        workspace: &WorkspaceId,
        tool: Tool,
        subject: &Subject,
    ) -> Judged {
        let now = self.now();
        let domain = self.domain();
        // Kept rules were checked when they were made; one a later Lomi cannot read is
        // skipped (and shown in Settings → Rules), never a reason to refuse every call.
        let rules: Vec<_> = domain
            .policy
            .rules
            .iter()
            .filter_map(|record| record.rule().ok())
            .collect();
        let call = Call {
            agent,
            workspace,
            tool,
            subject,
        };
        match deciding(&rules, &call, now) {
            Some(rule) => Judged {
                verdict: rule.verdict,
                by: Decider::Rule(rule.id.clone()),
                rule: domain
                    .policy
                    .rules
                    .iter()
                    .find(|record| record.rule_id == rule.id)
                    .cloned(),
            },
            None => Judged {
                verdict: if domain.policy.confirm_tools.contains(&tool) {
                    Verdict::Ask
                } else {
                    Verdict::Allow
                },
                by: Decider::Default,
                rule: None,
            },
        }
    }

    /// Refuses an agent's change while the person paused it (every agent or this one).
    pub fn check_paused(&self, agent: &PairingId) -> Result<(), ToolError> {
        let domain = self.domain();
        let policy = &domain.policy;
        if policy.pauses(agent) {
            let whom = if policy.paused {
                "every agent's changes"
            } else {
                "this agent's changes"
            };
            return Err(ToolError::new(
                ErrorCode::Paused,
                format!(
                    "the person paused {whom} in Lomi; reads still work. Nothing was done: send it again after they resume (the window's Resume, or `lomi resume`); lomi_pairing_status shows whether you are paused"
                ),
            ));
        }
        Ok(())
    }

    /// Whether `agent`'s changes are paused now.
    pub fn paused(&self, agent: &PairingId) -> bool {
        self.domain().policy.pauses(agent)
    }

    /// The person's new rule, checked (patterns, tools, the agent and workspace it names)
    /// and saved; compared with `expected` when given.
    pub fn rule_add(
        &self,
        draft: RuleDraft,
        expected: Option<SettingsRevision>,
    ) -> Result<RuleRecord, ToolError> {
        let id = RuleId::from_random(self.random_bytes());
        let rule = draft.rule(id.clone()).map_err(ToolError::invalid)?;
        if let Tools::One(tool) = rule.tools
            && !decidable(tool)
        {
            return Err(ToolError::invalid(format!(
                "{} is a read: rules decide changes (operations) and the lines typed into terminals, e.g. lomi_file_write or lomi_terminal_input",
                tool.name()
            )));
        }
        let record = RuleRecord {
            rule_id: id,
            created_at: self.now(),
            draft,
        };
        self.update_domain(|domain| {
            expect_revision(domain, expected)?;
            if let Some(agent) = &record.draft.agent
                && !domain.pairings.iter().any(|p| &p.id == agent)
            {
                return Err(ToolError::not_found(format!(
                    "no pairing {agent}; `lomi pairing list` shows the agents"
                )));
            }
            if let Some(workspace) = &record.draft.workspace
                && !domain.workspaces.iter().any(|w| &w.id == workspace)
            {
                return Err(ToolError::not_found(format!(
                    "no workspace {workspace}; `lomi workspace list` shows them"
                )));
            }
            if domain.policy.rules.len() >= MAX_RULES {
                return Err(ToolError::new(
                    ErrorCode::ResourceExhausted,
                    format!("Lomi keeps at most {MAX_RULES} rules; remove one first"),
                ));
            }
            domain.policy.rules.push(record.clone());
            Ok(())
        })?;
        Ok(record)
    }

    /// Removes one of the person's rules.
    pub fn rule_remove(
        &self,
        id: &RuleId,
        expected: Option<SettingsRevision>,
    ) -> Result<(), ToolError> {
        self.update_domain(|domain| {
            expect_revision(domain, expected)?;
            let before = domain.policy.rules.len();
            domain.policy.rules.retain(|rule| &rule.rule_id != id);
            if domain.policy.rules.len() == before {
                return Err(ToolError::not_found(format!(
                    "no rule {id}; `lomi rule list` shows them"
                )));
            }
            Ok(())
        })
    }

    /// The rules section with each rule's use: operations from the receipts, lines since
    /// this start.
    pub fn rules_view(&self) -> Result<RulesView, ToolError> {
        let uses = self
            .inner
            .store
            .decisions_by()
            .map_err(crate::store_error)?;
        let lines = self.line_hits().clone();
        let now = self.now();
        let domain = self.domain();
        let rules = domain
            .policy
            .rules
            .iter()
            .map(|record| {
                let key = Decider::Rule(record.rule_id.clone()).as_text();
                let (operations, last_operation) = uses.get(&key).copied().unwrap_or((0, None));
                let (lines, last_line) = lines.get(&record.rule_id).copied().unwrap_or((0, None));
                RuleUse {
                    record: record.clone(),
                    operations,
                    lines,
                    last_used_at: last_operation.max(last_line),
                    expired: record.draft.expires_at.is_some_and(|end| now >= end),
                }
            })
            .collect();
        Ok(RulesView {
            settings_revision: Settings::revision(&domain, SettingsSection::Rules),
            rules,
            paused: domain.policy.paused,
            paused_agents: domain.policy.paused_agents.iter().cloned().collect(),
        })
    }

    /// Which rule would decide this call now, and why (`lomi rule test`).
    pub fn rule_test(
        &self,
        agent: &PairingId,
        workspace: &WorkspaceId,
        tool: Tool,
        subject: &Subject,
    ) -> RuleTested {
        let judged = self.verdict(agent, workspace, tool, subject);
        let why = match &judged.rule {
            Some(rule) if rule.draft.verdict == Verdict::Deny => format!(
                "rule {} ({}) matches, and a matching deny always wins",
                rule.rule_id,
                rule.draft.describe()
            ),
            Some(rule) => format!(
                "rule {} ({}) is the most specific rule that matches (a subject pattern first, then one tool over a family over every tool, then a named agent, then a named workspace)",
                rule.rule_id,
                rule.draft.describe()
            ),
            None if judged.verdict == Verdict::Ask => format!(
                "no rule matches; {} asks the person by default (`lomi confirm {} off` changes that)",
                tool.name(),
                tool.name()
            ),
            None => format!(
                "no rule matches; {} runs without asking by default",
                tool.name()
            ),
        };
        RuleTested {
            verdict: judged.verdict,
            decided_by: judged.by.as_text(),
            rule: judged.rule,
            why,
        }
    }

    /// Pauses every agent's changes, or one agent's; their queued, waiting and running
    /// operations are asked to cancel.
    pub fn pause(&self, agent: Option<&PairingId>) -> Result<(), ToolError> {
        self.update_domain(|domain| {
            match agent {
                Some(agent) => {
                    if !domain.pairings.iter().any(|p| &p.id == agent) {
                        return Err(ToolError::not_found(format!(
                            "no pairing {agent}; `lomi pairing list` shows the agents"
                        )));
                    }
                    domain.policy.paused_agents.insert(agent.clone());
                }
                None => domain.policy.paused = true,
            }
            Ok(())
        })?;
        self.cancel_paused();
        Ok(())
    }

    /// Resumes every agent (and clears each one's own pause), or one agent.
    pub fn resume(&self, agent: Option<&PairingId>) -> Result<(), ToolError> {
        self.update_domain(|domain| {
            match agent {
                Some(agent) => {
                    domain.policy.paused_agents.remove(agent);
                }
                None => {
                    domain.policy.paused = false;
                    domain.policy.paused_agents.clear();
                }
            }
            Ok(())
        })
    }

    /// Asks every unsettled operation of a paused agent to cancel.
    fn cancel_paused(&self) {
        let owners: Vec<_> = self
            .live()
            .iter()
            .map(|(id, live)| (id.clone(), live.owner.0.clone()))
            .collect();
        for (id, owner) in owners {
            if !self.paused(&owner) {
                continue;
            }
            match self.inner.store.get(&id) {
                Ok(Some(receipt)) if !receipt.state.is_settled() => {
                    if let Err(error) = self.cancel_operation(&receipt) {
                        tracing::warn!("pause: could not cancel {id}: {}", error.message);
                    }
                }
                Ok(_) => {}
                Err(error) => tracing::warn!("pause: could not read {id}: {error}"),
            }
        }
    }

    /// The person's decision on a waiting operation, keeping `remember` first when given (a
    /// rule that cannot be kept leaves the operation waiting, so nothing is half done).
    /// Answers the kept rule.
    pub fn decide_remembering(
        &self,
        id: &lomi_protocol::OperationId,
        approve: bool,
        remember: Option<RuleDraft>,
    ) -> Result<Option<RuleRecord>, ToolError> {
        let Some(draft) = remember else {
            return self.decide(id, approve).map(|()| None);
        };
        let waiting = self
            .live()
            .get(id)
            .is_some_and(|live| live.is_waiting_for_person());
        if !waiting {
            return Err(ToolError::invalid(format!(
                "operation {id} is not waiting for a decision (see `lomi operation show {id}`)"
            )));
        }
        let fits = match draft.verdict {
            Verdict::Allow => approve,
            Verdict::Deny => !approve,
            Verdict::Ask => false,
        };
        if !fits {
            return Err(ToolError::invalid(if approve {
                "an approval remembers an allow rule (\"verdict\": \"allow\")"
            } else {
                "a denial remembers a deny rule (\"verdict\": \"deny\")"
            }));
        }
        let record = self.rule_add(draft, None)?;
        if let Err(error) = self.decide(id, approve) {
            // The operation stopped waiting meanwhile (cancelled, or decided elsewhere): the
            // rule was part of this decision, so it goes with it.
            if let Err(undo) = self.rule_remove(&record.rule_id, None) {
                tracing::warn!(
                    "the rule {} kept with a decision that failed could not be removed: {}",
                    record.rule_id,
                    undo.message
                );
            }
            return Err(error);
        }
        Ok(Some(record))
    }

    /// Whether any live rule about command lines could apply to `agent` in `workspace` and
    /// ask or refuse: a line typed with editing keys is then held for the person, since Lomi
    /// cannot read what the shell will run.
    pub fn guards_commands(&self, agent: &PairingId, workspace: &WorkspaceId) -> bool {
        let now = self.now();
        self.domain().policy.rules.iter().any(|record| {
            let draft = &record.draft;
            draft.verdict != Verdict::Allow
                && draft.expires_at.is_none_or(|end| now < end)
                && draft.agent.as_ref().is_none_or(|a| a == agent)
                && draft.workspace.as_ref().is_none_or(|w| w == workspace)
                && draft
                    .subject
                    .as_ref()
                    .is_some_and(|s| s.kind == SubjectKind::Command)
        })
    }

    /// A valid retry epoch of `agent` in `workspace` on this instance, for an operation Lomi
    /// opens on its behalf (a held terminal line): its newest.
    pub fn agent_epoch(
        &self,
        agent: &PairingId,
        workspace: &WorkspaceId,
    ) -> Result<lomi_protocol::RetryEpoch, ToolError> {
        self.inner
            .store
            .live_epoch(agent, workspace, &self.inner.instance, self.now())
            .map_err(crate::store_error)?
            .ok_or_else(|| {
                ToolError::new(
                    ErrorCode::RetryEpochInvalid,
                    format!(
                        "a rule holds this line for the person, which makes it an operation, and this client has no valid retry epoch in workspace {workspace}; call lomi_connect, then send it again"
                    ),
                )
            })
    }

    /// Counts a terminal line a rule decided (lines leave no receipt).
    pub fn note_line_decided(&self, rule: &RuleId) {
        let now = self.now();
        let mut hits = self.line_hits();
        let entry = hits.entry(rule.clone()).or_insert((0, None));
        entry.0 += 1;
        entry.1 = Some(now);
    }

    fn line_hits(&self) -> std::sync::MutexGuard<'_, HashMap<RuleId, (u64, Option<Timestamp>)>> {
        self.inner
            .line_hits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// The subject of a call the person describes (`lomi rule test`): the path, URL, command
/// or package itself, of its kind.
pub fn call_subject(subject: Option<&RuleSubject>) -> Subject {
    match subject {
        None => Subject::None,
        Some(RuleSubject { kind, pattern }) => match kind {
            SubjectKind::Paths => Subject::Paths(vec![pattern.clone()]),
            SubjectKind::Url => Subject::Url(pattern.clone()),
            SubjectKind::Command => Subject::Command(pattern.clone()),
            SubjectKind::Package => Subject::Package(pattern.clone()),
        },
    }
}

/// Whether rules can decide calls of `tool`: operations, and typed terminal input.
fn decidable(tool: Tool) -> bool {
    tool.kind() == lomi_protocol::catalog::ToolKind::Mutation || tool == Tool::TerminalInput
}

fn expect_revision(
    domain: &crate::domain::Domain,
    expected: Option<SettingsRevision>,
) -> Result<(), ToolError> {
    let current = Settings::revision(domain, SettingsSection::Rules);
    match expected {
        Some(expected) if expected != current => Err(ToolError::new(
            ErrorCode::RevisionMismatch,
            format!("the rules are at revision {current}; re-read them (`lomi rule list`) and decide again"),
        )
        .with_details(serde_json::json!({ "section": "rules", "currentRevision": current }))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_the_narrowest_useful_rule() {
        let paths = |list: &[&str]| list.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            folder_of(&paths(&["docs/guide/a.md"])),
            Some("docs/guide/**".to_owned())
        );
        assert_eq!(
            folder_of(&paths(&["README.md"])),
            Some("README.md".to_owned())
        );
        assert_eq!(
            folder_of(&paths(&["docs/a/x.md", "docs/b/y.md"])),
            Some("docs/**".to_owned())
        );
        assert_eq!(folder_of(&paths(&["a/x.md", "b/y.md"])), None);
        assert_eq!(folder_of(&paths(&["../x"])), None);
        assert_eq!(
            origin_pattern("https://example.com:8443/a/b?c"),
            "https://example.com:8443/*"
        );
        assert_eq!(command_pattern("git push --force origin"), "git push*");
        assert_eq!(command_pattern("rm -rf /tmp/x"), "rm *");
        assert_eq!(command_pattern("ls"), "ls");
    }
}
