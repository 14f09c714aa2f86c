//! The person's rules: which calls run at once, wait for the person, or are refused, by
//! agent, workspace, tool or family, and what the call acts on (its [`Subject`], from the
//! tool's definition). Deny wins; otherwise the most specific rule decides; with no rule,
//! the tool's "ask me before" default does. A rule only narrows what a pairing's grants and
//! families already allow: the broker asks the rules after those checks, never instead.
//!
//! This module is the matching alone: patterns, specificity and the verdict. Keeping the
//! rules, suggesting them and applying the verdict belong to the broker.

use serde::{Deserialize, Serialize};

use crate::definition::Subject;
use crate::ids::{PairingId, RuleId, WorkspaceId};
use crate::{Family, Timestamp, Tool};

/// What a rule says of the calls it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Runs without asking the person.
    Allow,
    /// Waits for the person's decision.
    Ask,
    /// Refused at once.
    Deny,
}

impl Verdict {
    /// The wire name: `allow`, `ask` or `deny`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

/// The tools a rule is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tools {
    Any,
    Family(Family),
    One(Tool),
}

/// What the call acts on, as a rule names it: a pattern for the subject's kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubjectPattern {
    /// Project paths: `*` within one folder, `**` across folders, `?` one character
    /// (`docs/**`, `src/*.rs`). Every path of the call must match.
    Paths(Glob),
    /// A URL a page is sent to, `*` for any text (`https://example.com/*`).
    Url(Glob),
    /// A command line, `*` for any text (`npm test*`, `git push --force*`).
    Command(Glob),
    /// An Android package, `*` for any text (`com.example.*`).
    Package(Glob),
}

/// One rule of the person's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub id: RuleId,
    /// Only this agent's calls; `None` for every agent.
    pub agent: Option<PairingId>,
    /// Only calls in this workspace; `None` for every workspace.
    pub workspace: Option<WorkspaceId>,
    pub tools: Tools,
    /// Only calls whose subject matches; `None` for any subject.
    pub subject: Option<SubjectPattern>,
    pub verdict: Verdict,
    /// The rule no longer applies from this time on.
    pub expires_at: Option<Timestamp>,
}

/// A call as the rules see it.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    pub agent: &'a PairingId,
    pub workspace: &'a WorkspaceId,
    pub tool: Tool,
    pub subject: &'a Subject,
}

/// The rule that decides `call` at `now`, if any applies: a matching `deny` first (the most
/// specific of them), otherwise the most specific matching rule. Among equally specific
/// rules the earlier one in `rules` decides.
pub fn deciding<'r>(rules: &'r [Rule], call: &Call<'_>, now: Timestamp) -> Option<&'r Rule> {
    let matching = || rules.iter().filter(|rule| rule.matches(call, now));
    let most_specific = |candidates: Vec<&'r Rule>| {
        let best = candidates.iter().map(|rule| rule.specificity()).max()?;
        candidates
            .into_iter()
            .find(|rule| rule.specificity() == best)
    };
    let denials: Vec<&Rule> = matching()
        .filter(|rule| rule.verdict == Verdict::Deny)
        .collect();
    if !denials.is_empty() {
        return most_specific(denials);
    }
    most_specific(matching().collect())
}

impl Rule {
    /// Whether the rule applies to `call` at `now`.
    pub fn matches(&self, call: &Call<'_>, now: Timestamp) -> bool {
        let live = self.expires_at.is_none_or(|end| now < end);
        let agent = self.agent.as_ref().is_none_or(|agent| agent == call.agent);
        let workspace = (self.workspace.as_ref()).is_none_or(|ws| ws == call.workspace);
        let tools = match self.tools {
            Tools::Any => true,
            Tools::Family(family) => call.tool.family() == Some(family),
            Tools::One(tool) => tool == call.tool,
        };
        let subject = match &self.subject {
            None => true,
            Some(pattern) => pattern.matches(call.subject),
        };
        live && agent && workspace && tools && subject
    }

    /// How narrow the rule is: a subject pattern first, then one tool over a family over
    /// any, then a named agent, then a named workspace.
    fn specificity(&self) -> (bool, u8, bool, bool) {
        let tools = match self.tools {
            Tools::Any => 0,
            Tools::Family(_) => 1,
            Tools::One(_) => 2,
        };
        (
            self.subject.is_some(),
            tools,
            self.agent.is_some(),
            self.workspace.is_some(),
        )
    }
}

impl SubjectPattern {
    /// Whether the call's subject is of this pattern's kind and matches it. A path that is
    /// absolute or leaves the project (`..` above its root) matches no pattern.
    pub fn matches(&self, subject: &Subject) -> bool {
        match (self, subject) {
            (SubjectPattern::Paths(glob), Subject::Paths(paths)) => {
                !paths.is_empty()
                    && paths
                        .iter()
                        .all(|path| project_path(path).is_some_and(|path| glob.matches(&path)))
            }
            (SubjectPattern::Url(glob), Subject::Url(url)) => glob.matches(url),
            (SubjectPattern::Command(glob), Subject::Command(command)) => {
                glob.matches(command.trim())
            }
            (SubjectPattern::Package(glob), Subject::Package(package)) => glob.matches(package),
            _ => false,
        }
    }
}

/// A path as the project sees it: relative, `.` and `..` resolved, or `None` when it is
/// absolute or leaves the project.
fn project_path(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// A pattern with `*`, `**` and `?`. For paths, `*` and `?` stop at `/` and `**` does not;
/// for other subjects every wildcard matches any text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
    paths: bool,
}

impl Glob {
    /// A path pattern under the project: relative, without `.` or `..` parts.
    pub fn path(pattern: &str) -> Result<Glob, String> {
        let example = "docs/** or src/*.rs";
        if pattern.is_empty() || pattern.starts_with('/') {
            return Err(format!(
                "a path pattern is relative to the project's root, e.g. {example}"
            ));
        }
        if pattern
            .split('/')
            .any(|part| part == "." || part == ".." || part.is_empty())
        {
            return Err(format!(
                "a path pattern has no empty, . or .. parts, e.g. {example}"
            ));
        }
        Glob::checked(pattern, true, example)
    }

    /// A pattern over any text (URLs, command lines, packages).
    pub fn text(pattern: &str) -> Result<Glob, String> {
        Glob::checked(pattern, false, "https://example.com/* or npm test*")
    }

    fn checked(pattern: &str, paths: bool, example: &str) -> Result<Glob, String> {
        if pattern.trim().is_empty() {
            return Err(format!("the pattern is empty; e.g. {example}"));
        }
        if pattern.len() > 1024 || pattern.chars().any(char::is_control) {
            return Err(format!(
                "a pattern is at most 1,024 characters without control characters, e.g. {example}"
            ));
        }
        Ok(Glob {
            pattern: pattern.to_owned(),
            paths,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    pub fn matches(&self, text: &str) -> bool {
        let pattern: Vec<char> = self.pattern.chars().collect();
        let text: Vec<char> = text.chars().collect();
        glob_match(&pattern, &text, self.paths)
    }
}

/// Matches pattern and text a pattern character at a time, keeping which text prefixes the
/// pattern read so far matches: time bounded by their lengths' product, memory by the text's,
/// whatever the wildcards (a long command line cannot slip past a deny by its length).
fn glob_match(pattern: &[char], text: &[char], paths: bool) -> bool {
    // reach[j]: the text's first j characters are matched by the pattern read so far.
    let mut reach = vec![false; text.len() + 1];
    reach[0] = true;
    let mut i = 0;
    while i < pattern.len() {
        let mut next = vec![false; text.len() + 1];
        let double = pattern[i] == '*' && pattern.get(i + 1) == Some(&'*');
        if double && paths && pattern.get(i + 2) == Some(&'/') {
            // `**/`: no folder at all, or any folders, each ending with its `/`.
            let mut before = false;
            for j in 0..=text.len() {
                next[j] = reach[j] || (j > 0 && text[j - 1] == '/' && before);
                before |= reach[j];
            }
            i += 3;
        } else if double {
            // `**`: any text, `/` included.
            let mut any = false;
            for j in 0..=text.len() {
                any |= reach[j];
                next[j] = any;
            }
            i += 2;
        } else {
            match pattern[i] {
                '*' => {
                    // Any text within one folder for paths, any text otherwise.
                    let mut any = false;
                    for j in 0..=text.len() {
                        any |= reach[j];
                        next[j] = any;
                        if paths && j < text.len() && text[j] == '/' {
                            any = false;
                        }
                    }
                }
                '?' => {
                    for j in 0..text.len() {
                        next[j + 1] = reach[j] && !(paths && text[j] == '/');
                    }
                }
                literal => {
                    for j in 0..text.len() {
                        next[j + 1] = reach[j] && text[j] == literal;
                    }
                }
            }
            i += 1;
        }
        reach = next;
    }
    reach[text.len()]
}

/// The kinds of subject a rule's pattern can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubjectKind {
    /// Project paths (files, editor documents, Git): `docs/**`, `src/*.rs`.
    Paths,
    /// A URL a browser page is sent to: `https://example.com/*`.
    Url,
    /// A command line (terminal lines, Android shell commands): `npm test*`.
    Command,
    /// An Android package: `com.example.*`.
    Package,
}

/// A rule's subject pattern as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleSubject {
    pub kind: SubjectKind,
    pub pattern: String,
}

/// A rule as the person writes it (`lomi rule add`, the window's Settings → Rules, or the
/// "always" choices of a decision): every field but the verdict optional.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleDraft {
    /// Only this agent's calls; absent for every agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<PairingId>,
    /// Only calls in this workspace; absent for every workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceId>,
    /// `*` for every tool, a family (`files`), or one tool (`lomi_file_write`).
    pub tools: String,
    /// Only calls whose subject matches; absent for any subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<RuleSubject>,
    pub verdict: Verdict,
    /// The rule no longer applies from this time on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

/// A kept rule: the draft with its id and when it was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleRecord {
    pub rule_id: RuleId,
    pub created_at: Timestamp,
    #[serde(flatten)]
    pub draft: RuleDraft,
}

impl Tools {
    /// `*`, a family's name or a tool's name; anything else is refused with what it can be.
    pub fn parse(text: &str) -> Result<Tools, String> {
        if text == "*" {
            return Ok(Tools::Any);
        }
        if let Some(family) = Family::from_name(text) {
            return Ok(Tools::Family(family));
        }
        if let Some(tool) = Tool::from_name(text) {
            return Ok(Tools::One(tool));
        }
        let families: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        Err(format!(
            "tools {text:?} is not `*`, a family ({}) or a tool name (e.g. lomi_file_write)",
            families.join(", ")
        ))
    }

    pub fn name(self) -> &'static str {
        match self {
            Tools::Any => "*",
            Tools::Family(family) => family.name(),
            Tools::One(tool) => tool.name(),
        }
    }
}

impl RuleDraft {
    /// A rule in words: "deny lomi_file_write on paths docs/secrets/** for every agent".
    pub fn describe(&self) -> String {
        let draft = self;
        let verdict = draft.verdict.name();
        let tools = if draft.tools == "*" {
            "every tool".to_owned()
        } else {
            draft.tools.clone()
        };
        let subject = match &draft.subject {
            Some(RuleSubject { kind, pattern }) => {
                let kind = match kind {
                    SubjectKind::Paths => "paths",
                    SubjectKind::Url => "URLs",
                    SubjectKind::Command => "commands",
                    SubjectKind::Package => "packages",
                };
                format!(" on {kind} {pattern}")
            }
            None => String::new(),
        };
        let agent = match &draft.agent {
            Some(agent) => format!(" for agent {agent}"),
            None => " for every agent".to_owned(),
        };
        let workspace = match &draft.workspace {
            Some(workspace) => format!(" in workspace {workspace}"),
            None => String::new(),
        };
        format!("{verdict} {tools}{subject}{agent}{workspace}")
    }

    /// The rule this draft describes, with `id`; a malformed part is refused with an example
    /// of a valid one.
    pub fn rule(&self, id: RuleId) -> Result<Rule, String> {
        let tools = Tools::parse(&self.tools)?;
        let subject = match &self.subject {
            None => None,
            Some(RuleSubject { kind, pattern }) => Some(match kind {
                SubjectKind::Paths => SubjectPattern::Paths(Glob::path(pattern)?),
                SubjectKind::Url => SubjectPattern::Url(Glob::text(pattern)?),
                SubjectKind::Command => SubjectPattern::Command(Glob::text(pattern)?),
                SubjectKind::Package => SubjectPattern::Package(Glob::text(pattern)?),
            }),
        };
        if let (Some(subject), Tools::One(tool)) = (&subject, tools)
            && !tool_takes(tool, subject)
        {
            return Err(format!(
                "{} does not act on {}; patterns of {} go with {}",
                tool.name(),
                subject.kind_words(),
                subject.kind_words(),
                subject.example_tools()
            ));
        }
        Ok(Rule {
            id,
            agent: self.agent.clone(),
            workspace: self.workspace.clone(),
            tools,
            subject,
            verdict: self.verdict,
            expires_at: self.expires_at,
        })
    }
}

impl RuleRecord {
    pub fn rule(&self) -> Result<Rule, String> {
        self.draft.rule(self.rule_id.clone())
    }
}

/// Whether a pattern of `subject`'s kind can ever match a call of `tool` (a rule that could
/// not is refused when written, not silently never matched).
fn tool_takes(tool: Tool, subject: &SubjectPattern) -> bool {
    let family = tool.family();
    match subject {
        SubjectPattern::Paths(_) => {
            matches!(family, Some(Family::Files | Family::Editor | Family::Git))
        }
        SubjectPattern::Url(_) => matches!(family, Some(Family::Browser | Family::Android)),
        SubjectPattern::Command(_) => matches!(
            tool,
            Tool::TerminalInput | Tool::TerminalCreate | Tool::AndroidShell
        ),
        SubjectPattern::Package(_) => family == Some(Family::Android),
    }
}

impl SubjectPattern {
    fn kind_words(&self) -> &'static str {
        match self {
            SubjectPattern::Paths(_) => "project paths",
            SubjectPattern::Url(_) => "URLs",
            SubjectPattern::Command(_) => "command lines",
            SubjectPattern::Package(_) => "Android packages",
        }
    }

    fn example_tools(&self) -> &'static str {
        match self {
            SubjectPattern::Paths(_) => "the files, editor and git tools",
            SubjectPattern::Url(_) => "the browser and android tools",
            SubjectPattern::Command(_) => "lomi_terminal_input or lomi_android_shell",
            SubjectPattern::Package(_) => "the android tools",
        }
    }

    /// The pattern as written, with its kind.
    pub fn written(&self) -> RuleSubject {
        let (kind, glob) = match self {
            SubjectPattern::Paths(glob) => (SubjectKind::Paths, glob),
            SubjectPattern::Url(glob) => (SubjectKind::Url, glob),
            SubjectPattern::Command(glob) => (SubjectKind::Command, glob),
            SubjectPattern::Package(glob) => (SubjectKind::Package, glob),
        };
        RuleSubject {
            kind,
            pattern: glob.as_str().to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(pattern: &str) -> Glob {
        Glob::path(pattern).expect("a valid path pattern")
    }

    fn text(pattern: &str) -> Glob {
        Glob::text(pattern).expect("a valid pattern")
    }

    #[test]
    fn path_patterns_keep_to_folders_unless_they_say_otherwise() {
        let docs = path("docs/**");
        assert!(docs.matches("docs/a.md") && docs.matches("docs/guide/b.md"));
        assert!(!docs.matches("src/docs/a.md") && !docs.matches("docsx/a.md"));
        let rust = path("src/*.rs");
        assert!(rust.matches("src/main.rs") && !rust.matches("src/bin/main.rs"));
        let anywhere = path("**/*.md");
        assert!(anywhere.matches("README.md") && anywhere.matches("docs/a/b.md"));
        assert!(!anywhere.matches("docs/a.rs"));
        let between = path("a/**/b");
        assert!(between.matches("a/b") && between.matches("a/x/y/b") && !between.matches("a/xb"));
        assert!(path("?.txt").matches("a.txt") && !path("?.txt").matches("/.txt"));
    }

    #[test]
    fn a_path_that_leaves_the_project_matches_nothing() {
        let docs = SubjectPattern::Paths(path("docs/**"));
        let paths = |list: &[&str]| Subject::Paths(list.iter().map(|p| (*p).to_owned()).collect());
        assert!(docs.matches(&paths(&["docs/a.md", "./docs/b.md"])));
        assert!(!docs.matches(&paths(&["docs/../secret.txt"])));
        assert!(!docs.matches(&paths(&["../docs/a.md"])));
        assert!(!docs.matches(&paths(&["/docs/a.md"])));
        // A rename out of the folder is not "in docs".
        assert!(!docs.matches(&paths(&["docs/a.md", "src/a.md"])));
        assert!(!docs.matches(&Subject::Url("docs/a.md".to_owned())));
    }

    #[test]
    fn malformed_patterns_are_refused_with_an_example() {
        for bad in ["", "/etc/**", "docs/../x", "a//b", "./docs"] {
            let refusal = Glob::path(bad).expect_err(bad);
            assert!(refusal.contains("e.g."), "{bad}: {refusal}");
        }
        assert!(Glob::text("  ").is_err() && Glob::text("a\nb").is_err());
    }

    #[test]
    fn text_patterns_match_commands_urls_and_packages() {
        assert!(text("npm test*").matches("npm test -- --watch"));
        assert!(!text("npm test*").matches("npm install"));
        assert!(text("rm -rf *").matches("rm -rf ~/"));
        assert!(text("https://example.com/*").matches("https://example.com/a/b?c=d"));
        assert!(!text("https://example.com/*").matches("https://example.com.evil/"));
        assert!(text("com.example.*").matches("com.example.app"));
        // Many wildcards stay quick.
        assert!(!text(&"*a".repeat(40)).matches(&"a".repeat(39)));
    }

    fn rule(tools: Tools, subject: Option<SubjectPattern>, verdict: Verdict) -> Rule {
        Rule {
            id: RuleId::parse("ru_test").expect("id"),
            agent: None,
            workspace: None,
            tools,
            subject,
            verdict,
            expires_at: None,
        }
    }

    #[test]
    fn deny_wins_then_the_most_specific_rule_decides() {
        let agent = PairingId::parse("pa_agent").expect("id");
        let other = PairingId::parse("pa_other").expect("id");
        let workspace = WorkspaceId::parse("ws_main").expect("id");
        let write = |p: &str| Subject::Paths(vec![p.to_owned()]);
        let docs = SubjectPattern::Paths(path("docs/**"));
        let secrets = SubjectPattern::Paths(path("docs/secrets/**"));
        let rules = vec![
            rule(Tools::Family(Family::Files), None, Verdict::Ask),
            rule(Tools::One(Tool::FileWrite), Some(docs), Verdict::Allow),
            rule(Tools::Any, Some(secrets), Verdict::Deny),
            Rule {
                agent: Some(other.clone()),
                ..rule(Tools::One(Tool::FileWrite), None, Verdict::Deny)
            },
        ];
        let now = Timestamp::from_millis(1_000);
        let decide = |tool: Tool, subject: &Subject, who: &PairingId| {
            let call = Call {
                agent: who,
                workspace: &workspace,
                tool,
                subject,
            };
            deciding(&rules, &call, now).map(|rule| rule.verdict)
        };
        assert_eq!(
            decide(Tool::FileWrite, &write("docs/a.md"), &agent),
            Some(Verdict::Allow)
        );
        assert_eq!(
            decide(Tool::FileWrite, &write("src/a.rs"), &agent),
            Some(Verdict::Ask)
        );
        // A deny beats a broader allow, and a narrower one.
        assert_eq!(
            decide(Tool::FileWrite, &write("docs/secrets/k"), &agent),
            Some(Verdict::Deny)
        );
        assert_eq!(
            decide(Tool::FileWrite, &write("docs/a.md"), &other),
            Some(Verdict::Deny)
        );
        // No rule for terminals: the tool's default decides.
        assert_eq!(decide(Tool::TerminalCreate, &Subject::None, &agent), None);
    }

    #[test]
    fn an_expired_rule_no_longer_decides() {
        let agent = PairingId::parse("pa_agent").expect("id");
        let workspace = WorkspaceId::parse("ws_main").expect("id");
        let rules = vec![Rule {
            expires_at: Some(Timestamp::from_millis(2_000)),
            ..rule(Tools::Any, None, Verdict::Allow)
        }];
        let call = Call {
            agent: &agent,
            workspace: &workspace,
            tool: Tool::FileDelete,
            subject: &Subject::None,
        };
        assert!(deciding(&rules, &call, Timestamp::from_millis(1_999)).is_some());
        assert!(deciding(&rules, &call, Timestamp::from_millis(2_000)).is_none());
    }
}
