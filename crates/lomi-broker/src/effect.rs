//! What an operation waiting for the person will do, in their terms: [`Broker::effect`], one
//! function over every tool, run when the operation starts waiting. What the broker cannot
//! see itself (a project's files, Git's index, a phone's model) it asks its [`Sight`], which
//! the runtimes give it, confined as their tools are.

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use futures_util::future::BoxFuture;
use lomi_protocol::definition::Preview;
use lomi_protocol::effect::{MAX_EFFECT_TEXT_BYTES, bounded};
use lomi_protocol::tools::chat::ChatSendInput;
use lomi_protocol::tools::layout::{LayoutNode, SplitDirection};
use lomi_protocol::tools::session::{LayoutChange, WorkspaceChange};
use lomi_protocol::{
    DocumentId, Effect, EffectDetail, Fact, PairingId, PanelId, ProjectId, Tool, WorkspaceId,
};
use serde_json::Value;

use crate::Broker;

/// The largest file read to show a diff against it; larger shows sizes only.
pub const MAX_DIFF_SOURCE_BYTES: usize = 1024 * 1024;
/// How many of a deleted file's first lines are shown.
pub const FIRST_LINES: usize = 12;

/// The start of a file as the person's preview reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peek {
    /// At most the bytes asked for, from the start of the file.
    pub bytes: Vec<u8>,
    /// The whole file's size.
    pub size: u64,
}

/// The changes staged in a project's Git index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staged {
    pub files: Vec<String>,
    /// `git diff --cached`, at most the bytes asked for.
    pub diff: String,
    pub truncated: bool,
}

/// What the broker reads through the runtimes to show an effect. A path escaping the
/// project's root is refused by the implementation (as the file tools refuse it), never read.
pub trait Sight: Send + Sync {
    /// The start (at most `max` bytes) of the regular file `rel` beneath `root`; `Ok(None)`
    /// when nothing is there; `Err` says why it cannot be read (outside the root, not a file).
    fn peek(
        &self,
        root: PathBuf,
        rel: String,
        max: usize,
    ) -> BoxFuture<'static, Result<Option<Peek>, String>>;

    /// The changes staged in the Git repository at `root`, the diff at most `max` bytes.
    fn staged(&self, root: PathBuf, max: usize) -> BoxFuture<'static, Result<Staged, String>>;

    /// The model name of the Android device with this adb serial, if it is listed.
    fn device_model(&self, serial: String) -> BoxFuture<'static, Option<String>>;

    /// An open editor document: its workspace, project, path and the bytes a save writes.
    fn document(&self, id: DocumentId) -> Option<OpenDocument>;
}

/// An open editor document as a save would write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenDocument {
    pub workspace: WorkspaceId,
    pub project: ProjectId,
    pub path: String,
    pub bytes: Vec<u8>,
}

/// What an effect is computed from: the waiting operation's tool, who asked, where, what its
/// definition previews of its typed input, the panel it names, and its arguments (listed in
/// words when the preview has nothing of its own).
#[derive(Clone, Copy)]
pub struct Asked<'a> {
    pub tool: Tool,
    pub caller: &'a PairingId,
    pub workspace: &'a WorkspaceId,
    pub project: Option<&'a ProjectId>,
    pub preview: &'a Preview,
    pub panel: Option<&'a PanelId>,
    pub arguments: &'a Value,
}

impl Broker {
    /// Gives the broker what it reads effects through (the host does, once its runtimes
    /// exist). Without one, effects that need the disk say they could not be shown.
    pub fn set_sight(&self, sight: Arc<dyn Sight>) {
        *self.inner.sight.lock().unwrap_or_else(|p| p.into_inner()) = Some(sight);
    }

    fn sight(&self) -> Option<Arc<dyn Sight>> {
        self.inner
            .sight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// What the operation will do, in the person's terms, from its tool's [`Preview`]
    /// (written in the tool's definition) and what the broker reads beside it.
    pub async fn effect(&self, asked: Asked<'_>) -> Effect {
        match asked.preview {
            Preview::Write { path, text, base64 } => {
                self.file_write(&asked, path, text.clone(), base64.clone())
                    .await
            }
            Preview::Delete { path } => self.file_delete(&asked, path).await,
            Preview::Move { from, to } => Effect {
                summary: format!("Rename {from} to {to}"),
                detail: EffectDetail::Move {
                    from: from.clone(),
                    to: to.clone(),
                },
            },
            Preview::CreateFolder { path } => change(
                format!("Create the folder {path}"),
                vec![fact("Folder", path.clone())],
            ),
            Preview::Commit { message } => self.commit(&asked, message.clone()).await,
            Preview::Stage { paths } => Effect {
                summary: format!("Stage {} in Git", count(paths.len(), "file")),
                detail: EffectDetail::Git {
                    action: "stage".to_owned(),
                    files: paths.clone(),
                },
            },
            Preview::Branch { name, create } => Effect {
                summary: if *create {
                    format!("Create the Git branch {name} and switch to it")
                } else {
                    format!("Switch to the Git branch {name}")
                },
                detail: EffectDetail::Git {
                    action: if *create {
                        "create branch"
                    } else {
                        "switch branch"
                    }
                    .to_owned(),
                    files: vec![name.clone()],
                },
            },
            Preview::OpenTerminal {
                title,
                cwd_relative,
                argv,
            } => match argv {
                Some(argv) if !argv.is_empty() => Effect {
                    summary: format!("Open the terminal \"{title}\" running a program"),
                    detail: EffectDetail::Command {
                        on: format!("terminal \"{title}\""),
                        command: argv.join(" "),
                    },
                },
                _ => change(
                    format!("Open the terminal \"{title}\" with a shell"),
                    vec![
                        fact("Title", title.clone()),
                        fact("Folder", project_folder(cwd_relative)),
                    ],
                ),
            },
            Preview::Shell { command } => {
                let on = self.panel_named(&asked, "the phone");
                Effect {
                    summary: format!("Run a shell command on {on}"),
                    detail: EffectDetail::Command {
                        on,
                        command: command.clone(),
                    },
                }
            }
            Preview::TerminalLine { line, cwd, edited } => {
                let on = self.panel_named(&asked, "the terminal");
                let on = match cwd {
                    Some(cwd) => format!("{on} in {cwd}"),
                    None => on,
                };
                let summary = if *edited {
                    format!(
                        "Run a line in {on}; it was typed with keys that let the shell change it (Tab, Up, …), so it may run something other than this"
                    )
                } else {
                    format!("Run a line in {on}")
                };
                Effect {
                    summary,
                    detail: EffectDetail::Command {
                        on,
                        command: line.clone(),
                    },
                }
            }
            Preview::UseDevice { serial } => {
                let model = match self.sight() {
                    Some(sight) => sight.device_model(serial.clone()).await,
                    None => None,
                };
                let name = match &model {
                    Some(model) => format!("{model} ({serial})"),
                    None => serial.clone(),
                };
                Effect {
                    summary: format!(
                        "Let the agent use the phone {name}: tap, type, capture its screen, launch and install apps"
                    ),
                    detail: EffectDetail::Device {
                        serial: serial.clone(),
                        model,
                    },
                }
            }
            Preview::Script { expression } => {
                let page = self.panel_named(&asked, "the browser");
                let (script, truncated) = bounded(expression);
                Effect {
                    summary: format!("Run a script in the page of {page}"),
                    detail: EffectDetail::Script { script, truncated },
                }
            }
            Preview::Navigate { url } => {
                let place = self.panel_named(&asked, "the browser");
                Effect {
                    summary: format!("Open {url} in {place}"),
                    detail: EffectDetail::Navigate { url: url.clone() },
                }
            }
            Preview::ChatSend(input) => self.chat_send(&asked, input),
            Preview::Workspace(requested) => self.workspace_change(&asked, requested),
            Preview::SaveDocument { document } => self.document_save(&asked, document).await,
            Preview::Type { text } => {
                let into = self.panel_named(&asked, "the browser");
                Effect {
                    summary: format!("Type into the page of {into}"),
                    detail: EffectDetail::Typed {
                        into,
                        text: text.clone(),
                    },
                }
            }
            Preview::ClosePanel => {
                let panel = self.panel_named(&asked, "a panel");
                change(
                    format!("Close {panel}: what runs in it ends"),
                    vec![fact("Panel", panel)],
                )
            }
            Preview::Described => self.described(&asked),
        }
    }

    /// A tool with no kind of its own: its request's fields in words, after the panel it acts
    /// on (by kind and title) when it names one.
    fn described(&self, asked: &Asked<'_>) -> Effect {
        let mut effect = facts(asked.tool, asked.arguments);
        if asked.panel.is_some()
            && let EffectDetail::Change { facts } = &mut effect.detail
        {
            facts.insert(0, fact("Panel", self.panel_named(asked, "a closed panel")));
        }
        effect
    }

    /// Saving an editor document: the diff from the file on disk to the document's text, read
    /// in the document's own project (the caller's grants still decide whether it is read).
    async fn document_save(&self, asked: &Asked<'_>, document: &DocumentId) -> Effect {
        let document = match self.sight() {
            Some(sight) => sight.document(document.clone()),
            None => None,
        };
        match document {
            Some(document) if &document.workspace == asked.workspace => {
                let in_project = Asked {
                    project: Some(&document.project),
                    ..*asked
                };
                self.compared(&in_project, &document.path, document.bytes)
                    .await
            }
            _ => self.described(asked),
        }
    }

    /// The project's root, if the caller may use it.
    fn root(&self, asked: &Asked<'_>) -> Result<PathBuf, String> {
        self.project_root(asked.caller, asked.workspace, asked.project)
            .map(|(_, root)| root)
            .map_err(|e| e.message)
    }

    async fn peek(&self, asked: &Asked<'_>, rel: &str, max: usize) -> Result<Option<Peek>, String> {
        let root = self.root(asked)?;
        let sight = self
            .sight()
            .ok_or_else(|| "this Lomi cannot read project files for previews".to_owned())?;
        sight.peek(root, rel.to_owned(), max).await
    }

    async fn file_write(
        &self,
        asked: &Asked<'_>,
        path: &str,
        text: Option<String>,
        base64: Option<String>,
    ) -> Effect {
        let new = match (text, base64) {
            (Some(text), _) => text.into_bytes(),
            (None, Some(encoded)) => {
                match base64::engine::general_purpose::STANDARD.decode(encoded.as_bytes()) {
                    Ok(bytes) => bytes,
                    Err(error) => {
                        return file_write(
                            path,
                            None,
                            None,
                            0,
                            Some(format!("its base64 content does not decode: {error}")),
                        );
                    }
                }
            }
            (None, None) => Vec::new(),
        };
        self.compared(asked, path, new).await
    }

    /// Writing `new` at `path`: the diff against what is on disk now.
    async fn compared(&self, asked: &Asked<'_>, path: &str, new: Vec<u8>) -> Effect {
        match self.peek(asked, path, MAX_DIFF_SOURCE_BYTES + 1).await {
            Ok(old) => {
                let note = old
                    .as_ref()
                    .filter(|old| old.size > MAX_DIFF_SOURCE_BYTES as u64)
                    .map(|_| "the file on disk is too large to compare line by line".to_owned());
                file_write(path, Some(&old), Some(&new), new.len() as u64, note)
            }
            Err(why) => file_write(
                path,
                None,
                None,
                new.len() as u64,
                Some(format!("what is on disk now cannot be shown: {why}")),
            ),
        }
    }

    async fn file_delete(&self, asked: &Asked<'_>, path: &str) -> Effect {
        let summary = |size: Option<u64>| match size {
            Some(size) => format!("Delete {path} ({}). This cannot be undone.", bytes(size)),
            None => format!("Delete {path}. This cannot be undone."),
        };
        let nothing = |note: String| Effect {
            summary: summary(None),
            detail: EffectDetail::FileDelete {
                path: path.to_owned(),
                size: None,
                first_lines: None,
                truncated: false,
                binary: false,
                note: Some(note),
            },
        };
        match self.peek(asked, path, MAX_EFFECT_TEXT_BYTES).await {
            Ok(Some(peek)) => {
                let binary = is_binary(&peek.bytes);
                let (first_lines, truncated) = if binary {
                    (None, false)
                } else {
                    let text = String::from_utf8_lossy(&peek.bytes);
                    let (lines, cut) = first_lines(&text, FIRST_LINES);
                    (Some(lines), cut || (peek.bytes.len() as u64) < peek.size)
                };
                Effect {
                    summary: summary(Some(peek.size)),
                    detail: EffectDetail::FileDelete {
                        path: path.to_owned(),
                        size: Some(peek.size),
                        first_lines,
                        truncated,
                        binary,
                        note: None,
                    },
                }
            }
            Ok(None) => nothing("there is no file there now".to_owned()),
            Err(why) => nothing(format!("the file cannot be shown: {why}")),
        }
    }

    async fn commit(&self, asked: &Asked<'_>, message: String) -> Effect {
        let first = message.lines().next().unwrap_or("").to_owned();
        let staged = match (self.root(asked), self.sight()) {
            (Ok(root), Some(sight)) => sight.staged(root, MAX_EFFECT_TEXT_BYTES).await,
            (Err(why), _) => Err(why),
            (_, None) => Err("this Lomi cannot read Git for previews".to_owned()),
        };
        match staged {
            Ok(staged) => Effect {
                summary: format!(
                    "Commit {} to Git: \"{first}\"",
                    count(staged.files.len(), "staged file")
                ),
                detail: EffectDetail::Commit {
                    message,
                    files: staged.files,
                    staged_diff: Some(staged.diff),
                    truncated: staged.truncated,
                    note: None,
                },
            },
            Err(why) => Effect {
                summary: format!("Commit to Git: \"{first}\""),
                detail: EffectDetail::Commit {
                    message,
                    files: Vec::new(),
                    staged_diff: None,
                    truncated: false,
                    note: Some(format!("the staged changes cannot be shown: {why}")),
                },
            },
        }
    }

    fn chat_send(&self, asked: &Asked<'_>, input: &ChatSendInput) -> Effect {
        let record = self
            .chat_conversation(Some(asked.caller), &input.conversation_id)
            .ok();
        let destination = self.chat_destination(input.provider.as_deref(), input.model.as_deref());
        // The draft as it stands at the revision the agent named: the send is refused when it
        // moved, so another text is never what the person approves.
        let (message, note) = match &record {
            Some(r) if r.draft_revision == input.expected_draft_revision.0 => {
                (Some(r.draft_text.clone()), None)
            }
            Some(_) => (
                None,
                Some(
                    "the draft changed since the agent read it; the send will be refused"
                        .to_owned(),
                ),
            ),
            None => (None, Some("the conversation cannot be read".to_owned())),
        };
        let (provider, model, note) = match destination {
            Ok((provider, model, _)) => (Some(provider.name), Some(model), note),
            Err(error) => (None, None, note.or(Some(error.message))),
        };
        let to = match (&provider, &model) {
            (Some(provider), Some(model)) => format!("{provider} ({model})"),
            _ => "a model provider".to_owned(),
        };
        Effect {
            summary: format!("Send a message to {to}. It cannot be taken back."),
            detail: EffectDetail::ChatSend {
                message,
                conversation: record.map(|r| r.title),
                provider,
                model,
                note,
            },
        }
    }

    fn workspace_change(&self, asked: &Asked<'_>, requested: &WorkspaceChange) -> Effect {
        let name = self
            .workspaces()
            .into_iter()
            .find(|w| &w.id == asked.workspace)
            .map(|w| w.name)
            .unwrap_or_else(|| asked.workspace.to_string());
        match requested {
            WorkspaceChange::Rename(rename) => self::change(
                format!("Rename the workspace {name} to {}", rename.name),
                vec![fact("From", name), fact("To", rename.name.clone())],
            ),
            WorkspaceChange::Layout(LayoutChange::PanelOrder(order)) => {
                let order: Vec<String> = order
                    .iter()
                    .map(|panel| self.panel_title(asked.caller, panel, panel.as_str()))
                    .collect();
                self::change(
                    format!("Rearrange the panels of the workspace {name}"),
                    vec![fact("New order", order.join(", "))],
                )
            }
            WorkspaceChange::Layout(LayoutChange::Root(root)) => self::change(
                format!("Rearrange the panels of the workspace {name}"),
                vec![fact(
                    "New arrangement",
                    self.arrangement(asked.caller, root),
                )],
            ),
        }
    }

    /// A layout in words: "the terminal \"A\" beside (the browser \"B\" above the terminal
    /// \"C\")", tab groups as "tabs: …".
    fn arrangement(&self, caller: &PairingId, node: &LayoutNode) -> String {
        match node {
            LayoutNode::Tabs(tabs) => {
                let titles: Vec<String> = tabs
                    .panels
                    .iter()
                    .map(|panel| self.panel_title(caller, panel, panel.as_str()))
                    .collect();
                match titles.as_slice() {
                    [one] => one.clone(),
                    _ => format!("tabs: {}", titles.join(", ")),
                }
            }
            LayoutNode::Split(split) => {
                let joint = match split.direction {
                    SplitDirection::Row => " beside ",
                    SplitDirection::Column => " above ",
                };
                let parts: Vec<String> = split
                    .children
                    .iter()
                    .map(|child| format!("({})", self.arrangement(caller, child)))
                    .collect();
                parts.join(joint)
            }
        }
    }

    /// "terminal \"Tests\"": the panel's kind and title, or `otherwise`.
    fn panel_title(&self, caller: &PairingId, panel: &PanelId, otherwise: &str) -> String {
        match self.panel(caller, panel) {
            Ok(record) => format!(
                "{} \"{}\"",
                match record.kind {
                    lomi_protocol::tools::session::PanelKind::Terminal => "the terminal",
                    lomi_protocol::tools::session::PanelKind::Browser => "the browser",
                    lomi_protocol::tools::session::PanelKind::Android => "the phone",
                    lomi_protocol::tools::session::PanelKind::Document => "the document",
                },
                record.title
            ),
            Err(_) => otherwise.to_owned(),
        }
    }

    /// The panel the request acts on (`panelId`), by kind and title, or `otherwise`.
    fn panel_named(&self, asked: &Asked<'_>, otherwise: &str) -> String {
        match asked.panel {
            Some(panel) => self.panel_title(asked.caller, panel, otherwise),
            None => otherwise.to_owned(),
        }
    }
}

fn fact(label: &str, value: impl Into<String>) -> Fact {
    Fact {
        label: label.to_owned(),
        value: value.into(),
    }
}

fn change(summary: String, facts: Vec<Fact>) -> Effect {
    Effect {
        summary,
        detail: EffectDetail::Change { facts },
    }
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn project_folder(rel: &str) -> String {
    if rel.is_empty() {
        "the project's root".to_owned()
    } else {
        rel.to_owned()
    }
}

/// "1.2 KB"-style sizes a person reads, with the exact byte count.
pub fn bytes(size: u64) -> String {
    match size {
        0..1024 => count(size as usize, "byte"),
        1024..1_048_576 => format!("{:.1} KB, {size} bytes", size as f64 / 1024.0),
        _ => format!("{:.1} MB, {size} bytes", size as f64 / 1_048_576.0),
    }
}

/// A NUL byte, or bytes that are not UTF-8: shown as sizes, not as text.
fn is_binary(bytes: &[u8]) -> bool {
    if bytes.contains(&0) {
        return true;
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => false,
        // A peek cut in the middle of a character is still text.
        Err(error) => error.error_len().is_some(),
    }
}

fn first_lines(text: &str, lines: usize) -> (String, bool) {
    let mut end = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n == lines {
            return (text[..end].to_owned(), true);
        }
        end += line.len();
    }
    (text.to_owned(), false)
}

/// The effect of writing `new` over `old` (`None`: not readable, `Some(None)`: no file).
fn file_write(
    path: &str,
    old: Option<&Option<Peek>>,
    new: Option<&[u8]>,
    size_after: u64,
    note: Option<String>,
) -> Effect {
    let creates = matches!(old, Some(None));
    let old_peek = old.and_then(Option::as_ref);
    let size_before = old_peek.map(|p| p.size);
    let verb = if creates { "Create" } else { "Overwrite" };
    let comparable = old_peek.is_none_or(|p| p.size <= MAX_DIFF_SOURCE_BYTES as u64);
    let binary = new.is_some_and(is_binary) || old_peek.is_some_and(|p| is_binary(&p.bytes));
    let (diff, truncated, summary) = match new {
        Some(new) if !binary && comparable && old.is_some() => {
            let before = old_peek
                .map(|p| String::from_utf8_lossy(&p.bytes).into_owned())
                .unwrap_or_default();
            let after = String::from_utf8_lossy(new);
            let diff = similar::TextDiff::from_lines(before.as_str(), after.as_ref());
            let (mut added, mut removed) = (0usize, 0usize);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    similar::ChangeTag::Insert => added += 1,
                    similar::ChangeTag::Delete => removed += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            let (from, to) = if creates {
                ("/dev/null".to_owned(), format!("b/{path}"))
            } else {
                (format!("a/{path}"), format!("b/{path}"))
            };
            let text = diff
                .unified_diff()
                .context_radius(3)
                .header(&from, &to)
                .to_string();
            let (text, truncated) = bounded(&text);
            let summary = if added == 0 && removed == 0 {
                format!("{verb} {path} with the same content")
            } else {
                format!("{verb} {path} (+{added} −{removed} lines)")
            };
            (Some(text), truncated, summary)
        }
        _ => {
            let sizes = match size_before {
                Some(before) => format!("{} → {}", bytes(before), bytes(size_after)),
                None => bytes(size_after),
            };
            (None, false, format!("{verb} {path} ({sizes})"))
        }
    };
    Effect {
        summary,
        detail: EffectDetail::FileWrite {
            path: path.to_owned(),
            creates,
            diff,
            truncated,
            binary,
            size_before,
            size_after,
            note,
        },
    }
}

/// Fields of a request that identify it or guard it (retry identity, revisions, leases,
/// generations): true to the engine, not what a person decides on.
const PLUMBING: &[&str] = &[
    "workspaceId",
    "projectId",
    "panelId",
    "retryEpoch",
    "requestKey",
    "leaseId",
    "generation",
    "browserGeneration",
    "inputSequence",
    "expectedRevision",
    "expectedDiskRevision",
    "expectedParentRevision",
    "expectedDirectoryRevision",
    "expectedEntryRevision",
    "expectedBufferRevision",
    "expectedHeadRevision",
    "expectedSettingsRevision",
    "expectedConversationRevision",
    "expectedDraftRevision",
    "snapshotId",
    "navigationId",
    "frameId",
];

/// The tool's label and the request's own fields, each in words: the effect of a tool with
/// no kind of its own.
fn facts(tool: Tool, arguments: &Value) -> Effect {
    let facts = arguments
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, value)| !PLUMBING.contains(&key.as_str()) && !value.is_null())
        .map(|(key, value)| {
            let shown = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            fact(&words(key), bounded(&shown).0)
        })
        .collect();
    change(format!("{} ({})", tool.label(), tool.name()), facts)
}

/// The effect of a request whose effect was not read before it started waiting (the
/// person's policy changed to ask in between): its own fields, in words.
pub(crate) fn unread(tool: Tool, arguments: &Value) -> Effect {
    facts(tool, arguments)
}

/// `cwdRelative` → "Cwd relative".
fn words(key: &str) -> String {
    let mut out = String::new();
    for (i, c) in key.chars().enumerate() {
        if i == 0 {
            out.extend(c.to_uppercase());
        } else if c.is_uppercase() {
            out.push(' ');
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use lomi_protocol::tools::settings::SettingsSection;
    use serde_json::json;

    use super::*;
    use crate::BrokerConfig;

    /// A sight over a map of files and a fixed Git index, recording what it was asked.
    #[derive(Default)]
    struct FakeSight {
        files: BTreeMap<String, Vec<u8>>,
        staged: Option<Staged>,
        asked: Mutex<Vec<String>>,
        documents: Mutex<Vec<(DocumentId, OpenDocument)>>,
    }

    impl Sight for FakeSight {
        fn peek(
            &self,
            _root: PathBuf,
            rel: String,
            max: usize,
        ) -> BoxFuture<'static, Result<Option<Peek>, String>> {
            self.asked.lock().expect("asked").push(rel.clone());
            let found = self.files.get(&rel).map(|bytes| Peek {
                bytes: bytes[..bytes.len().min(max)].to_vec(),
                size: bytes.len() as u64,
            });
            Box::pin(async move { Ok(found) })
        }

        fn staged(
            &self,
            _root: PathBuf,
            _max: usize,
        ) -> BoxFuture<'static, Result<Staged, String>> {
            let staged = self
                .staged
                .clone()
                .ok_or_else(|| "not a repository".to_owned());
            Box::pin(async move { staged })
        }

        fn device_model(&self, serial: String) -> BoxFuture<'static, Option<String>> {
            Box::pin(async move { (serial == "emulator-5554").then(|| "Pixel 7".to_owned()) })
        }

        fn document(&self, id: DocumentId) -> Option<OpenDocument> {
            self.documents
                .lock()
                .expect("documents")
                .iter()
                .find(|(known, _)| *known == id)
                .map(|(_, document)| document.clone())
        }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        broker: Broker,
        caller: PairingId,
        workspace: WorkspaceId,
    }

    fn fixture(sight: FakeSight) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).expect("project");
        let broker = Broker::start(BrokerConfig::new(dir.path().join("data"))).expect("broker");
        let workspace = broker
            .workspace_add("Alpha", &project)
            .expect("workspace")
            .id;
        let caller = broker.pairing_begin("agent", None).expect("pairing");
        broker
            .pairing_approve(&caller, std::slice::from_ref(&workspace))
            .expect("approve");
        broker.set_sight(Arc::new(sight));
        Fixture {
            _dir: dir,
            broker,
            caller,
            workspace,
        }
    }

    impl Fixture {
        /// The effect of `tool` called with (the fields that matter of) `arguments`.
        async fn effect(&self, tool: Tool, arguments: Value) -> Effect {
            let panel = arguments
                .get("panelId")
                .and_then(|p| serde_json::from_value::<PanelId>(p.clone()).ok());
            self.broker
                .effect(Asked {
                    tool,
                    caller: &self.caller,
                    workspace: &self.workspace,
                    project: None,
                    preview: &preview(tool, &arguments),
                    panel: panel.as_ref(),
                    arguments: &arguments,
                })
                .await
        }
    }

    /// The preview the tool's definition makes of a whole input, from the fields of it a
    /// test names.
    fn preview(tool: Tool, a: &Value) -> Preview {
        let text = |key: &str| a.get(key).and_then(Value::as_str).map(str::to_owned);
        let field = |key: &str| text(key).unwrap_or_default();
        match tool {
            Tool::FileWrite | Tool::FileCreate => Preview::Write {
                path: field("path"),
                text: text("text"),
                base64: text("base64"),
            },
            Tool::FileDelete => Preview::Delete {
                path: field("path"),
            },
            Tool::FileRename => Preview::Move {
                from: field("from"),
                to: field("to"),
            },
            Tool::DirCreate => Preview::CreateFolder {
                path: field("path"),
            },
            Tool::GitCommit => Preview::Commit {
                message: field("message"),
            },
            Tool::GitStage => Preview::Stage {
                paths: serde_json::from_value(a["paths"].clone()).unwrap_or_default(),
            },
            Tool::TerminalCreate => Preview::OpenTerminal {
                title: field("title"),
                cwd_relative: field("cwdRelative"),
                argv: serde_json::from_value(a["argv"].clone()).ok(),
            },
            Tool::AndroidShell => Preview::Shell {
                command: field("command"),
            },
            Tool::AndroidAttach => Preview::UseDevice {
                serial: field("serial"),
            },
            Tool::BrowserEvaluate => Preview::Script {
                expression: field("expression"),
            },
            Tool::BrowserNavigate => match text("url") {
                Some(url) => Preview::Navigate { url },
                None => Preview::Described,
            },
            Tool::BrowserType => Preview::Type {
                text: field("text"),
            },
            Tool::ChatSend => {
                let mut whole = a.clone();
                whole["retryEpoch"] = json!("re_test");
                whole["requestKey"] = json!("send-1");
                Preview::ChatSend(Box::new(
                    serde_json::from_value(whole).expect("a chat send's input"),
                ))
            }
            Tool::EditorSave => Preview::SaveDocument {
                document: serde_json::from_value(a["documentId"].clone()).expect("a document id"),
            },
            Tool::TerminalClose | Tool::BrowserClose | Tool::AndroidDetach => Preview::ClosePanel,
            _ => Preview::Described,
        }
    }

    fn files(entries: &[(&str, &[u8])]) -> FakeSight {
        FakeSight {
            files: entries
                .iter()
                .map(|(path, bytes)| ((*path).to_owned(), bytes.to_vec()))
                .collect(),
            ..FakeSight::default()
        }
    }

    #[tokio::test]
    async fn a_file_write_shows_the_diff_against_the_disk() {
        let f = fixture(files(&[("notes.txt", b"one\ntwo\nthree\n")]));
        let effect = f
            .effect(
                Tool::FileWrite,
                json!({"path": "notes.txt", "text": "one\n2\nthree\nfour\n"}),
            )
            .await;
        assert_eq!(effect.summary, "Overwrite notes.txt (+2 −1 lines)");
        let EffectDetail::FileWrite {
            diff: Some(diff),
            creates: false,
            size_before: Some(14),
            size_after: 17,
            truncated: false,
            ..
        } = &effect.detail
        else {
            panic!("not a diff of an existing file: {effect:#?}");
        };
        for line in [
            "--- a/notes.txt",
            "+++ b/notes.txt",
            "-two",
            "+2",
            "+four",
            " one",
        ] {
            assert!(
                diff.lines().any(|l| l == line),
                "{line:?} missing from\n{diff}"
            );
        }
    }

    #[tokio::test]
    async fn a_new_file_is_all_added_and_a_binary_one_shows_sizes() {
        let f = fixture(files(&[("logo.png", b"\x89PNG\r\n\x1a\n\0\0")]));
        let created = f
            .effect(
                Tool::FileCreate,
                json!({"path": "src/new.rs", "text": "fn main() {}\n"}),
            )
            .await;
        assert_eq!(created.summary, "Create src/new.rs (+1 −0 lines)");
        let EffectDetail::FileWrite {
            diff: Some(diff),
            creates: true,
            ..
        } = &created.detail
        else {
            panic!("{created:#?}");
        };
        assert!(
            diff.contains("--- /dev/null") && diff.contains("+fn main() {}"),
            "{diff}"
        );

        let binary = f
            .effect(
                Tool::FileWrite,
                json!({"path": "logo.png", "base64": "AAECAw=="}),
            )
            .await;
        assert_eq!(binary.summary, "Overwrite logo.png (10 bytes → 4 bytes)");
        assert!(
            matches!(
                binary.detail,
                EffectDetail::FileWrite {
                    diff: None,
                    binary: true,
                    ..
                }
            ),
            "{binary:#?}"
        );
    }

    #[tokio::test]
    async fn a_long_diff_is_cut_and_says_so() {
        let old = "a\n".repeat(20_000);
        let f = fixture(files(&[("big.txt", old.as_bytes())]));
        let effect = f
            .effect(
                Tool::FileWrite,
                json!({"path": "big.txt", "text": "b\n".repeat(20_000)}),
            )
            .await;
        let EffectDetail::FileWrite {
            diff: Some(diff),
            truncated: true,
            ..
        } = &effect.detail
        else {
            panic!("not cut: {effect:#?}");
        };
        assert!(
            diff.len() <= MAX_EFFECT_TEXT_BYTES && diff.ends_with('\n'),
            "{}",
            diff.len()
        );
    }

    #[tokio::test]
    async fn a_delete_shows_the_size_and_first_lines() {
        let body: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        let f = fixture(files(&[("old.txt", body.as_bytes())]));
        let effect = f.effect(Tool::FileDelete, json!({"path": "old.txt"})).await;
        assert_eq!(
            effect.summary,
            format!(
                "Delete old.txt ({} bytes). This cannot be undone.",
                body.len()
            )
        );
        let EffectDetail::FileDelete {
            first_lines: Some(first),
            truncated: true,
            size: Some(_),
            ..
        } = &effect.detail
        else {
            panic!("{effect:#?}");
        };
        assert_eq!(first.lines().count(), FIRST_LINES);
        assert!(
            first.starts_with("line 1\n") && !first.contains("line 13"),
            "{first}"
        );

        let gone = f
            .effect(Tool::FileDelete, json!({"path": "gone.txt"}))
            .await;
        assert!(
            matches!(&gone.detail, EffectDetail::FileDelete { note: Some(note), size: None, .. } if note.contains("no file")),
            "{gone:#?}"
        );
    }

    #[tokio::test]
    async fn rename_commit_and_stage_show_what_git_and_the_disk_will_see() {
        let f = fixture(FakeSight {
            staged: Some(Staged {
                files: vec!["a.txt".to_owned()],
                diff: "diff --git a/a.txt b/a.txt\n+hello\n".to_owned(),
                truncated: false,
            }),
            ..FakeSight::default()
        });
        let moved = f
            .effect(Tool::FileRename, json!({"from": "a.txt", "to": "b/a.txt"}))
            .await;
        assert_eq!(
            moved.detail,
            EffectDetail::Move {
                from: "a.txt".to_owned(),
                to: "b/a.txt".to_owned()
            }
        );
        let commit = f
            .effect(
                Tool::GitCommit,
                json!({"message": "Say hello\n\nBody", "expectedHeadRevision": "x"}),
            )
            .await;
        assert_eq!(commit.summary, "Commit 1 staged file to Git: \"Say hello\"");
        let EffectDetail::Commit {
            message,
            staged_diff: Some(diff),
            files,
            ..
        } = &commit.detail
        else {
            panic!("{commit:#?}");
        };
        assert_eq!(
            (message.as_str(), files.as_slice()),
            ("Say hello\n\nBody", &["a.txt".to_owned()][..])
        );
        assert!(diff.contains("+hello"), "{diff}");
        let stage = f
            .effect(Tool::GitStage, json!({"paths": ["a.txt", "b.txt"]}))
            .await;
        assert_eq!(stage.summary, "Stage 2 files in Git");
    }

    #[tokio::test]
    async fn commands_scripts_addresses_and_devices_are_shown_as_they_will_run() {
        let f = fixture(FakeSight::default());
        let shell = f
            .effect(
                Tool::AndroidShell,
                json!({"panelId": "pnl_x", "command": "pm clear com.example"}),
            )
            .await;
        assert_eq!(
            shell.detail,
            EffectDetail::Command {
                on: "the phone".to_owned(),
                command: "pm clear com.example".to_owned()
            }
        );
        let script = f
            .effect(
                Tool::BrowserEvaluate,
                json!({"panelId": "pnl_x", "expression": "document.title"}),
            )
            .await;
        assert_eq!(
            script.detail,
            EffectDetail::Script {
                script: "document.title".to_owned(),
                truncated: false
            }
        );
        let typed = f
            .effect(
                Tool::BrowserType,
                json!({"panelId": "pnl_x", "text": "secret search"}),
            )
            .await;
        assert_eq!(
            typed.detail,
            EffectDetail::Typed {
                into: "the browser".to_owned(),
                text: "secret search".to_owned()
            }
        );
        let open = f
            .effect(
                Tool::BrowserNavigate,
                json!({"panelId": "pnl_x", "url": "https://example.org/"}),
            )
            .await;
        assert_eq!(
            open.detail,
            EffectDetail::Navigate {
                url: "https://example.org/".to_owned()
            }
        );
        let known = f
            .effect(Tool::AndroidAttach, json!({"serial": "emulator-5554"}))
            .await;
        assert_eq!(
            known.detail,
            EffectDetail::Device {
                serial: "emulator-5554".to_owned(),
                model: Some("Pixel 7".to_owned())
            }
        );
        let unknown = f
            .effect(Tool::AndroidAttach, json!({"serial": "10.0.0.2:5555"}))
            .await;
        assert!(unknown.summary.contains("10.0.0.2:5555"), "{unknown:#?}");
        let terminal = f
            .effect(
                Tool::TerminalCreate,
                json!({"cwdRelative": "", "title": "Tests", "argv": ["cargo", "test"]}),
            )
            .await;
        assert_eq!(
            terminal.detail,
            EffectDetail::Command {
                on: "terminal \"Tests\"".to_owned(),
                command: "cargo test".to_owned()
            }
        );
    }

    #[tokio::test]
    async fn a_chat_send_shows_the_draft_provider_and_model() {
        let f = fixture(FakeSight::default());
        let values = json!({"local": {"kind": "openai_compatible", "baseUrl": "http://127.0.0.1:9/v1", "models": ["small", "large"]}});
        f.broker
            .settings_change(
                SettingsSection::Providers,
                values.as_object().expect("map"),
                None,
            )
            .expect("providers");
        let conversation = f
            .broker
            .chat_create_for_person(&f.workspace, "Plans")
            .expect("chat");
        let draft = f
            .broker
            .chat_draft_for_person(&conversation.conversation_id, None, "Summarise the plan")
            .expect("draft");
        let send = |revision: &Value| {
            json!({
                "conversationId": conversation.conversation_id,
                "expectedConversationRevision": "1",
                "expectedDraftRevision": revision,
                "provider": "local",
                "model": "large",
            })
        };
        let effect = f
            .effect(Tool::ChatSend, send(&json!(draft.draft_revision)))
            .await;
        assert_eq!(
            effect.detail,
            EffectDetail::ChatSend {
                message: Some("Summarise the plan".to_owned()),
                conversation: Some("Plans".to_owned()),
                provider: Some("local".to_owned()),
                model: Some("large".to_owned()),
                note: None,
            }
        );
        assert_eq!(
            effect.summary,
            "Send a message to local (large). It cannot be taken back."
        );
        // A draft that moved since is not shown as what will be sent.
        let stale = f.effect(Tool::ChatSend, send(&json!("0"))).await;
        assert!(
            matches!(
                &stale.detail,
                EffectDetail::ChatSend {
                    message: None,
                    note: Some(_),
                    ..
                }
            ),
            "{stale:#?}"
        );
    }

    #[tokio::test]
    async fn other_changes_list_their_own_fields_in_words_without_plumbing() {
        let f = fixture(FakeSight::default());
        let effect = f
            .effect(
                Tool::SettingsUpdate,
                json!({"section": "terminal", "values": {"cols": 100}, "retryEpoch": "e", "requestKey": "k", "expectedSettingsRevision": "3"}),
            )
            .await;
        assert_eq!(effect.summary, "Change settings (lomi_settings_update)");
        assert_eq!(
            effect.detail,
            EffectDetail::Change {
                facts: vec![
                    Fact {
                        label: "Section".to_owned(),
                        value: "terminal".to_owned()
                    },
                    Fact {
                        label: "Values".to_owned(),
                        value: "{\"cols\":100}".to_owned()
                    },
                ]
            }
        );
    }

    #[tokio::test]
    async fn an_editor_save_shows_the_documents_diff_against_the_disk() {
        let f = fixture(files(&[("doc.md", b"# Title\nold line\n")]));
        let project = f.broker.workspaces()[0].projects[0].id.clone();
        let id = DocumentId::from_random([3; 16]);
        let sight = FakeSight {
            files: [("doc.md".to_owned(), b"# Title\nold line\n".to_vec())].into(),
            documents: Mutex::new(vec![(
                id.clone(),
                OpenDocument {
                    workspace: f.workspace.clone(),
                    project,
                    path: "doc.md".to_owned(),
                    bytes: b"# Title\nnew line\n".to_vec(),
                },
            )]),
            ..FakeSight::default()
        };
        f.broker.set_sight(Arc::new(sight));
        let effect = f
            .effect(
                Tool::EditorSave,
                json!({"documentId": id, "expectedBufferRevision": "4"}),
            )
            .await;
        assert_eq!(effect.summary, "Overwrite doc.md (+1 −1 lines)");
        let EffectDetail::FileWrite {
            diff: Some(diff), ..
        } = &effect.detail
        else {
            panic!("{effect:#?}");
        };
        assert!(diff.contains("\n-old line\n+new line\n"), "{diff}");
        // A document the sight does not know: its request, in words.
        let unknown = f
            .effect(
                Tool::EditorSave,
                json!({"documentId": DocumentId::from_random([4; 16]), "expectedBufferRevision": "1"}),
            )
            .await;
        assert!(
            matches!(unknown.detail, EffectDetail::Change { .. }),
            "{unknown:#?}"
        );
    }

    #[tokio::test]
    async fn a_panel_tool_names_the_panel_it_acts_on() {
        let f = fixture(FakeSight::default());
        let panel = PanelId::from_random([7; 16]);
        f.broker
            .panel_add(
                lomi_protocol::DomainRevision(1),
                panel.clone(),
                crate::PanelRecord {
                    workspace_id: f.workspace.clone(),
                    kind: lomi_protocol::tools::session::PanelKind::Terminal,
                    title: "Tests".to_owned(),
                    project_id: None,
                    generation: Some("g1".to_owned()),
                },
            )
            .expect("panel");
        let close = f
            .effect(
                Tool::TerminalClose,
                json!({"panelId": panel, "expectedRevision": "2"}),
            )
            .await;
        assert_eq!(
            close.summary,
            "Close the terminal \"Tests\": what runs in it ends"
        );
        let interrupt = f
            .effect(
                Tool::TerminalInterrupt,
                json!({"panelId": panel, "generation": "g1"}),
            )
            .await;
        assert_eq!(
            interrupt.detail,
            EffectDetail::Change {
                facts: vec![Fact {
                    label: "Panel".to_owned(),
                    value: "the terminal \"Tests\"".to_owned()
                }]
            }
        );
    }

    /// Without a sight (or a project the caller may not use), nothing is read and the effect
    /// says why.
    #[tokio::test]
    async fn nothing_is_read_for_a_project_the_caller_cannot_use() {
        let f = fixture(files(&[("secret.txt", b"hidden\n")]));
        let stranger = f.broker.pairing_begin("stranger", None).expect("pairing");
        let arguments = json!({"path": "secret.txt"});
        let effect = f
            .broker
            .effect(Asked {
                tool: Tool::FileDelete,
                caller: &stranger,
                workspace: &f.workspace,
                project: None,
                preview: &preview(Tool::FileDelete, &arguments),
                panel: None,
                arguments: &arguments,
            })
            .await;
        assert!(
            matches!(
                &effect.detail,
                EffectDetail::FileDelete {
                    first_lines: None,
                    note: Some(_),
                    ..
                }
            ),
            "{effect:#?}"
        );
    }
}
