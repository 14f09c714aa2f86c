//! `lomi rule add|list|remove|test`, `lomi pause|resume`, `lomi activity` and `lomi decide
//! … --remember`: the person's rules, pause and the activity view through the running Lomi's
//! control socket (the same requests the window sends).

use std::path::Path;

use clap::{Args, Subcommand, ValueEnum};
use lomi_mcp::control::ControlRequest;
use lomi_protocol::control::{ActivityView, AwaitingDecision, Counted, RuleTested, RulesView};
use lomi_protocol::rules::{RuleDraft, RuleSubject, SubjectKind, Verdict};
use lomi_protocol::{OperationId, PairingId, RuleId, Timestamp, WorkspaceId};

use crate::person::{render, send};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VerdictArg {
    Allow,
    Ask,
    Deny,
}

impl From<VerdictArg> for Verdict {
    fn from(v: VerdictArg) -> Verdict {
        match v {
            VerdictArg::Allow => Verdict::Allow,
            VerdictArg::Ask => Verdict::Ask,
            VerdictArg::Deny => Verdict::Deny,
        }
    }
}

/// What a call acts on, as the rule commands take it: at most one of these.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub struct SubjectArgs {
    /// A project path pattern (`docs/**`, `src/*.rs`): files, editor and Git tools.
    #[arg(long)]
    path: Option<String>,
    /// A URL pattern (`https://example.com/*`): browser navigation, Android URLs.
    #[arg(long)]
    url: Option<String>,
    /// A command-line pattern (`npm test*`, `rm -rf *`): terminal lines, Android shell.
    #[arg(long)]
    command: Option<String>,
    /// An Android package pattern (`com.example.*`).
    #[arg(long)]
    package: Option<String>,
}

impl SubjectArgs {
    fn subject(self) -> Option<RuleSubject> {
        let (kind, pattern) = match self {
            SubjectArgs { path: Some(p), .. } => (SubjectKind::Paths, p),
            SubjectArgs { url: Some(u), .. } => (SubjectKind::Url, u),
            SubjectArgs {
                command: Some(c), ..
            } => (SubjectKind::Command, c),
            SubjectArgs {
                package: Some(p), ..
            } => (SubjectKind::Package, p),
            _ => return None,
        };
        Some(RuleSubject { kind, pattern })
    }
}

#[derive(Debug, Subcommand)]
pub enum RuleCommand {
    /// Add a rule: `lomi rule add allow lomi_file_write --path 'docs/**'`. TOOLS is `*`, a
    /// family (files, editor, git, terminal, browser, android, chat, workspace) or a tool.
    /// Deny wins; otherwise the most specific rule decides; with none, the tool's default.
    Add {
        #[arg(value_enum)]
        verdict: VerdictArg,
        tools: String,
        #[command(flatten)]
        subject: SubjectArgs,
        /// Only this agent's calls (a pairing id; `lomi pairing list`).
        #[arg(long)]
        agent: Option<PairingId>,
        /// Only calls in this workspace.
        #[arg(long)]
        workspace: Option<WorkspaceId>,
        /// The rule stops applying at this time (RFC 3339, e.g. 2026-12-31T18:00:00Z).
        #[arg(long, value_name = "TIME")]
        expires: Option<String>,
        /// Change only if the rules are still at this revision.
        #[arg(long, value_name = "REVISION")]
        expected_revision: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// The rules, each with how many operations (and terminal lines) it decided and when last.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a rule.
    Remove {
        rule_id: RuleId,
        #[arg(long, value_name = "REVISION")]
        expected_revision: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Which rule would decide a call now, and why: `lomi rule test lomi_terminal_input
    /// --agent pr_… --workspace ws_… --command 'rm -rf /'`.
    Test {
        tool: String,
        #[arg(long)]
        agent: PairingId,
        #[arg(long)]
        workspace: WorkspaceId,
        #[command(flatten)]
        subject: SubjectArgs,
        #[arg(long)]
        json: bool,
    },
}

/// How `lomi decide … --remember` edits the suggested rule before it is kept.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// Also keep a rule for calls like this one: "approve and always allow …" or "deny and
    /// always deny …". The suggestion is this agent, this workspace, this tool and this
    /// folder / origin / command / package (see `lomi decisions`); the flags below widen it.
    #[arg(long)]
    pub remember: bool,
    /// The rule's subject pattern instead of the suggested one.
    #[arg(long, requires = "remember", value_name = "PATTERN")]
    pub pattern: Option<String>,
    /// The rule is for every agent, not only this one.
    #[arg(long, requires = "remember")]
    pub any_agent: bool,
    /// The rule is for every workspace, not only this one.
    #[arg(long, requires = "remember")]
    pub any_workspace: bool,
}

fn parse_time(text: &str) -> anyhow::Result<Timestamp> {
    Timestamp::parse_rfc3339(text).map_err(|e| {
        anyhow::anyhow!("--expires {text:?}: {e}; write a time like 2026-12-31T18:00:00Z")
    })
}

pub fn run(data_dir: &Path, command: RuleCommand) -> anyhow::Result<()> {
    let (request, json, show) = match command {
        RuleCommand::Add {
            verdict,
            tools,
            subject,
            agent,
            workspace,
            expires,
            expected_revision,
            json,
        } => {
            let rule = RuleDraft {
                agent,
                workspace,
                tools,
                subject: subject.subject(),
                verdict: verdict.into(),
                expires_at: expires.as_deref().map(parse_time).transpose()?,
            };
            (
                ControlRequest::RuleAdd {
                    rule,
                    expected_revision: expected_revision.map(lomi_protocol::SettingsRevision),
                },
                json,
                render(render_rules),
            )
        }
        RuleCommand::List { json } => (ControlRequest::RuleList {}, json, render(render_rules)),
        RuleCommand::Remove {
            rule_id,
            expected_revision,
            json,
        } => (
            ControlRequest::RuleRemove {
                rule_id,
                expected_revision: expected_revision.map(lomi_protocol::SettingsRevision),
            },
            json,
            render(render_rules),
        ),
        RuleCommand::Test {
            tool,
            agent,
            workspace,
            subject,
            json,
        } => (
            ControlRequest::RuleTest {
                agent,
                workspace_id: workspace,
                tool,
                subject: subject.subject(),
            },
            json,
            render(render_tested),
        ),
    };
    crate::runtime()?.block_on(send(data_dir, request, json, show))
}

/// `lomi pause` / `lomi resume`.
pub fn pause(
    data_dir: &Path,
    pause: bool,
    agent: Option<PairingId>,
    json: bool,
) -> anyhow::Result<()> {
    let request = if pause {
        ControlRequest::Pause { agent }
    } else {
        ControlRequest::Resume { agent }
    };
    crate::runtime()?.block_on(send(data_dir, request, json, render(render_pause)))
}

/// `lomi activity`.
pub fn activity(data_dir: &Path, agent: Option<PairingId>, json: bool) -> anyhow::Result<()> {
    crate::runtime()?.block_on(send(
        data_dir,
        ControlRequest::Activity { agent },
        json,
        render(render_activity),
    ))
}

/// `lomi decide OP approve|deny --remember …`: the waiting operation's suggested rule, as
/// the flags edit it, kept with the decision.
pub fn decide_remembering(
    data_dir: &Path,
    operation_id: OperationId,
    approve: bool,
    edit: RememberArgs,
    json: bool,
) -> anyhow::Result<()> {
    crate::runtime()?.block_on(async {
        let waiting: Vec<AwaitingDecision> =
            crate::person::ask(data_dir, &ControlRequest::DecisionList {}).await?;
        let Some(decision) = waiting.iter().find(|d| d.operation_id == operation_id) else {
            anyhow::bail!(
                "operation {operation_id} is not waiting for a decision (see `lomi decisions`)"
            );
        };
        let mut rule = decision.suggested_rule.clone();
        rule.verdict = if approve {
            Verdict::Allow
        } else {
            Verdict::Deny
        };
        if let Some(pattern) = edit.pattern {
            match &mut rule.subject {
                Some(subject) => subject.pattern = pattern,
                None => anyhow::bail!(
                    "{} names no path, URL, command or package: its rule has no pattern to change",
                    decision.tool.name()
                ),
            }
        }
        if edit.any_agent {
            rule.agent = None;
        }
        if edit.any_workspace {
            rule.workspace = None;
        }
        let request = ControlRequest::Decide {
            operation_id,
            approve,
            remember: Some(rule),
        };
        send(
            data_dir,
            request,
            json,
            render(crate::person::render_decided),
        )
        .await
    })
}

pub fn render_rules(view: &RulesView) {
    println!("rules at revision {}", view.settings_revision);
    if view.paused {
        println!("PAUSED: every agent's changes are refused until `lomi resume`");
    }
    for agent in &view.paused_agents {
        println!("paused: agent {agent} (`lomi resume --agent {agent}`)");
    }
    if view.rules.is_empty() {
        println!("no rules: each tool's default decides (`lomi policy`)");
    }
    for rule in &view.rules {
        let last = rule
            .last_used_at
            .map_or_else(|| "never".to_owned(), |t| t.to_string());
        let expired = if rule.expired { "  (expired)" } else { "" };
        println!(
            "{}  {}{expired}",
            rule.record.rule_id,
            rule.record.draft.describe()
        );
        println!(
            "    decided {} operations and {} terminal lines; last {last}",
            rule.operations, rule.lines
        );
    }
}

fn render_tested(tested: &RuleTested) {
    println!(
        "{} (decided by {})",
        tested.verdict.name(),
        tested.decided_by
    );
    println!("  {}", tested.why);
}

fn render_pause(view: &RulesView) {
    match (view.paused, view.paused_agents.as_slice()) {
        (true, _) => println!("paused: agents' changes are refused (PAUSED) until `lomi resume`"),
        (false, []) => println!("resumed: agents' changes run as the rules say"),
        (false, agents) => {
            let agents: Vec<String> = agents.iter().map(ToString::to_string).collect();
            println!("paused agents: {}", agents.join(", "));
        }
    }
}

fn counts(list: &[Counted]) -> String {
    if list.is_empty() {
        return "none".to_owned();
    }
    let parts: Vec<String> = list
        .iter()
        .map(|c| format!("{} {}", c.name, c.count))
        .collect();
    parts.join(", ")
}

fn render_activity(view: &ActivityView) {
    println!("calls and call times since {}", view.since);
    for agent in &view.agents {
        let seen = agent
            .last_seen
            .map_or_else(|| "never".to_owned(), |t| t.to_string());
        let paused = if agent.paused { "  PAUSED" } else { "" };
        println!(
            "\n{} \"{}\"{paused}  last seen {seen}",
            agent.pairing_id, agent.client_name
        );
        println!(
            "  {} calls, {} operations ({})",
            agent.calls,
            agent.operations,
            counts(&agent.operations_by_state)
        );
        println!("  decided by: {}", counts(&agent.decided_by));
        println!("  denials: {}", counts(&agent.denials));
        println!("  errors: {}", counts(&agent.errors_by_code));
        for tool in &agent.tools {
            let times = match (tool.p50_ms, tool.p95_ms) {
                (Some(p50), Some(p95)) => format!("p50 {p50} ms, p95 {p95} ms"),
                _ => "no calls since start".to_owned(),
            };
            println!(
                "  {:<28} {:>5} calls {:>4} errors {:>5} operations  {times}",
                tool.tool, tool.calls, tool.errors, tool.operations
            );
        }
    }
}
