//! A tool is one definition: [`ToolDef`], written beside the tool's input type in its
//! family's module (`tools/<family>.rs`), with the family's row list naming who serves it.
//! The catalog, the MCP dispatch, the person's effect preview, the window's wording and the
//! policy all read the definition; no tool name is matched anywhere else.
//!
//! Adding a tool: its input (and result) type, a `ToolDef` for a new marker type, a row in
//! its family's list, and the runtime's [`Serve`] implementation.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::catalog::{Annotations, ToolKind};
use crate::ids::{DocumentId, PairingId, PanelId};
use crate::tools::chat::ChatSendInput;
use crate::tools::session::WorkspaceChange;
use crate::{Family, Tool, ToolError};

/// One tool: what agents are shown of it, what the person is shown, and what it acts on.
pub trait ToolDef: 'static {
    /// The tool in the table every receipt, grant and policy names.
    const TOOL: Tool;
    /// The wire name, `lomi_<family>_<verb>`.
    const NAME: &'static str;
    /// Its family, or `None` for a session tool every pairing sees.
    const FAMILY: Option<Family>;
    /// What it does in a person's words, as the "ask me before" list shows it ("Delete
    /// files").
    const LABEL: &'static str;
    /// A short title for clients' tool lists.
    const TITLE: &'static str;
    /// What an agent reads to choose and call it.
    const DESCRIPTION: &'static str;
    /// How it reaches the broker.
    const KIND: ToolKind;
    /// MCP's hints for clients.
    const ANNOTATIONS: Annotations;
    /// Whether it waits for the person unless they say otherwise (a new policy starts with
    /// it in "Ask me before").
    const ASKS_BY_DEFAULT: bool = false;
    /// Whether it answers before the person approved the pairing (only the status tool).
    const BEFORE_APPROVAL: bool = false;
    /// Its arguments, decoded strictly (the input schema is made from this type).
    type Input: JsonSchema + DeserializeOwned + Send + 'static;
    /// What a read or control answers with; for a mutation, the result its operation
    /// settles with (the operation itself is the answer).
    type Output: JsonSchema;

    /// What the person is shown when a call waits for them, from the typed input.
    fn preview(_input: &Self::Input) -> Preview {
        Preview::Described
    }

    /// What the call acts on, as rules match it.
    fn subject(_input: &Self::Input) -> Subject {
        Subject::None
    }

    /// The panel the call acts on, if it names one.
    fn panel(_input: &Self::Input) -> Option<&PanelId> {
        None
    }
}

/// How the MCP server answers with what a tool's runtime returns: the envelope alone, a
/// snapshot whose text block is the tree, or the envelope with a PNG image block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Plain,
    Snapshot,
    Png,
}

/// A runtime serving tool `D`: the tool's handler. The MCP dispatch decodes `D::Input`
/// strictly and calls this; the answer is wrapped in the envelope there.
pub trait Serve<D: ToolDef> {
    /// What the runtime answers with (for a mutation, the operation's view).
    type Answer;

    fn serve(
        &self,
        caller: &PairingId,
        input: D::Input,
    ) -> impl Future<Output = Result<Self::Answer, ToolError>> + Send;
}

/// What an operation waiting for the person will do, read from its typed input. The broker
/// turns it into the [`crate::Effect`] the person sees, adding what only it can read (the
/// file on disk, the phone's model, the draft).
#[derive(Clone, Debug, PartialEq)]
pub enum Preview {
    /// Nothing of its own: the request's fields in words.
    Described,
    /// Writing a file: its new content, as text or base64.
    Write {
        path: String,
        text: Option<String>,
        base64: Option<String>,
    },
    Delete {
        path: String,
    },
    Move {
        from: String,
        to: String,
    },
    CreateFolder {
        path: String,
    },
    Commit {
        message: String,
    },
    Stage {
        paths: Vec<String>,
    },
    Branch {
        name: String,
        create: bool,
    },
    OpenTerminal {
        title: String,
        cwd_relative: String,
        argv: Option<Vec<String>>,
    },
    /// A shell command run on the panel's device.
    Shell {
        command: String,
    },
    /// A line typed into a terminal, held for the person by a rule: the line as Lomi read it
    /// from what the agent typed, the shell's working folder, and whether keys that let the
    /// shell change the line (Tab, Up, …) were used.
    TerminalLine {
        line: String,
        cwd: Option<String>,
        edited: bool,
    },
    UseDevice {
        serial: String,
    },
    Script {
        expression: String,
    },
    Navigate {
        url: String,
    },
    /// Text typed into the panel's page.
    Type {
        text: String,
    },
    ChatSend(Box<ChatSendInput>),
    Workspace(Box<WorkspaceChange>),
    SaveDocument {
        document: DocumentId,
    },
    /// Closing the panel: what runs in it ends.
    ClosePanel,
}

/// What a call acts on, in the terms a person's rule names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// Nothing narrower than the tool and its workspace.
    None,
    /// Paths under the project's root, as the call names them.
    Paths(Vec<String>),
    /// A URL a page is sent to.
    Url(String),
    /// A command line run in a terminal or on a device.
    Command(String),
    /// An Android package.
    Package(String),
}

/// A mutation's call as the engine keeps it, made once from its typed input: the tool, the
/// whole input (the receipt's fingerprint binds it; the person sees it in words), and what
/// its definition says the person and the rules see of it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub tool: Tool,
    pub payload: serde_json::Value,
    pub preview: Preview,
    pub subject: Subject,
    pub panel: Option<PanelId>,
}

impl ToolCall {
    /// The call of tool `D` with this input.
    pub fn of<D: ToolDef>(input: &D::Input) -> Result<ToolCall, ToolError>
    where
        D::Input: serde::Serialize,
    {
        let payload = serde_json::to_value(input).map_err(|error| {
            ToolError::internal(format!("{} could not keep its request: {error}", D::NAME))
        })?;
        Ok(ToolCall {
            tool: D::TOOL,
            payload,
            preview: D::preview(input),
            subject: D::subject(input),
            panel: D::panel(input).cloned(),
        })
    }
}
