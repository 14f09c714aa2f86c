//! Terminal tools: create a terminal panel, hold input authority (leases), send ordered
//! input, read the screen and output, interrupt, close.

use crate::catalog::{Annotations, MUTATION, READ, ToolKind};
use crate::definition::{Preview, Subject, ToolDef};
use crate::{Family, Tool};
use serde::{Deserialize, Serialize};

use crate::ids::{
    DomainRevision, LeaseId, PanelId, ProjectId, RequestKey, RetryEpoch, WorkspaceId,
};
use crate::time::Timestamp;

/// `lomi_terminal_create` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalCreateInput {
    pub workspace_id: WorkspaceId,
    // The project to start in; optional when the workspace has one project.
    pub project_id: Option<ProjectId>,
    // Directory relative to the project root ("" for the root); it must stay inside it.
    pub cwd_relative: String,
    // The panel's title, 1 to 120 characters.
    pub title: String,
    // Program and arguments; omit for the person's shell.
    pub argv: Option<Vec<String>>,
    // The workspace's `domainRevision` from a fresh listing.
    pub expected_revision: DomainRevision,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_terminal_create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalCreated {
    pub panel_id: PanelId,
    pub terminal_session_id: String,
    /// The runtime generation; input names it so that it never reaches a replaced runtime.
    pub generation: String,
    /// Input authority for the creator.
    pub lease_id: LeaseId,
    pub domain_revision: DomainRevision,
    pub pid: u32,
}

/// `lomi_lease_acquire` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseAcquireInput {
    pub panel_id: PanelId,
    // The runtime generation the lease is for (from `lomi_panel_list` or a create result).
    pub generation: String,
}

/// A lease as its holder sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseView {
    pub lease_id: LeaseId,
    pub panel_id: PanelId,
    pub generation: String,
    /// The last inputSequence this lease used ("0" before any input); the next is one more.
    pub last_input_sequence: String,
    pub acquired_at: Timestamp,
}

/// `lomi_lease_release` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseReleaseInput {
    pub lease_id: LeaseId,
}

/// `lomi_lease_release` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseReleased {
    pub lease_id: LeaseId,
    pub released: bool,
}

/// `lomi_terminal_input` input: exactly one of `text` or `keys`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalInputArguments {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    // Decimal, one more than the lease's last. The same number with the same payload
    // acknowledges the earlier input instead of sending it again.
    pub input_sequence: String,
    // Text typed as is (up to 64 KiB); end a command with "\r" to press Enter.
    pub text: Option<String>,
    /// Enter, Tab, Backspace, Escape, Up, Down, Left, Right, Home, End, PageUp, PageDown,
    /// Delete, F1..F12, Ctrl-A..Ctrl-Z.
    pub keys: Option<Vec<String>>,
}

/// What `lomi_terminal_input` sends: text or keys.
#[derive(Clone, Debug, PartialEq)]
pub enum InputPayload {
    Text(String),
    Keys(Vec<String>),
}

/// The decoded input, with the one-variant rule checked.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "TerminalInputArguments")]
pub struct TerminalInputInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    pub input_sequence: u64,
    pub payload: InputPayload,
}

/// Largest text one input may carry.
pub const MAX_INPUT_TEXT_BYTES: usize = 64 * 1024;
/// Most keys one input may carry.
pub const MAX_INPUT_KEYS: usize = 64;

impl TryFrom<TerminalInputArguments> for TerminalInputInput {
    type Error = String;

    fn try_from(a: TerminalInputArguments) -> Result<Self, String> {
        let input_sequence = crate::ids::parse_decimal(&a.input_sequence)
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                format!(
                    "inputSequence {:?} is not a decimal number from 1 up",
                    a.input_sequence
                )
            })?;
        let payload = match (a.text, a.keys) {
            (Some(text), None) => {
                if text.is_empty() || text.len() > MAX_INPUT_TEXT_BYTES {
                    return Err(format!("text must have 1 to {MAX_INPUT_TEXT_BYTES} bytes"));
                }
                InputPayload::Text(text)
            }
            (None, Some(keys)) => {
                if keys.is_empty() || keys.len() > MAX_INPUT_KEYS {
                    return Err(format!("keys must name 1 to {MAX_INPUT_KEYS} keys"));
                }
                InputPayload::Keys(keys)
            }
            (Some(_), Some(_)) => {
                return Err("give exactly one of text or keys, not both".to_owned());
            }
            (None, None) => return Err("give exactly one of text or keys".to_owned()),
        };
        Ok(TerminalInputInput {
            panel_id: a.panel_id,
            lease_id: a.lease_id,
            generation: a.generation,
            input_sequence,
            payload,
        })
    }
}

impl schemars::JsonSchema for TerminalInputInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TerminalInputInput".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::exactly_one_of(
            TerminalInputArguments::json_schema(generator),
            &[&["text"], &["keys"]],
        )
    }
}

/// `lomi_terminal_input` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InputAccepted {
    pub input_sequence: String,
    /// True when this acknowledged an earlier identical input; nothing was sent again.
    pub duplicate: bool,
    pub bytes_written: u64,
    /// The output cursor just before the input was written: read output since it.
    pub output_cursor: String,
    /// Set when one of the person's rules held the input for their decision: nothing was
    /// written yet. Follow this operation (lomi_operation_wait); approved, it writes the input
    /// once. Later inputs to this terminal answer RESOURCE_BUSY until it settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_operation: Option<crate::OperationId>,
}

/// What `lomi_terminal_read` may wait for before answering: exactly one condition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitArguments {
    // Output text to wait for (after `sinceCursor`).
    pub text: Option<String>,
    // A regular expression to wait for in the output (after `sinceCursor`).
    pub regex: Option<String>,
    // Wait until no output arrived for this many milliseconds (50 to 10,000).
    pub idle_ms: Option<u32>,
    // Wait until the process exits.
    pub exit: Option<bool>,
}

/// `lomi_terminal_read` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalReadInput {
    pub panel_id: PanelId,
    // Include the visible screen (default true).
    pub screen: Option<bool>,
    // Include output produced since this cursor (decimal, from an earlier read or input).
    pub since_cursor: Option<String>,
    // Most output bytes to return (1 to 524,288; default 16,384).
    pub max_bytes: Option<u32>,
    // Answer only once this happens, or when `timeoutMs` passes.
    pub wait_for: Option<WaitArguments>,
    // Longest wait in milliseconds (1 to 60,000; default 10,000).
    pub timeout_ms: Option<u32>,
}

/// The visible screen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenView {
    pub rows: u16,
    pub cols: u16,
    pub lines: Vec<String>,
    pub cursor_row: u16,
    pub cursor_col: u16,
    /// True while a full-screen program (vi, less, top) uses the alternate screen.
    pub alternate_screen: bool,
    pub title: String,
}

/// Output bytes between two cursors, as text (invalid UTF-8 replaced).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputView {
    pub start_cursor: String,
    pub end_cursor: String,
    pub text: String,
    /// The requested cursor was older than the retained scrollback; output before
    /// `startCursor` is gone.
    pub truncated_before: bool,
    /// More output follows `endCursor`.
    pub more: bool,
}

/// How a process ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExitView {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// `lomi_terminal_read` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalReadView {
    pub panel_id: PanelId,
    pub terminal_session_id: String,
    pub generation: String,
    pub output_cursor: String,
    pub screen: Option<ScreenView>,
    pub output: Option<OutputView>,
    /// How the wait ended: matched, idle, exited or timed_out.
    pub waited: Option<String>,
    pub exited: Option<ExitView>,
}

/// `lomi_terminal_interrupt` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalInterruptInput {
    pub panel_id: PanelId,
    pub lease_id: LeaseId,
    pub generation: String,
    pub retry_epoch: RetryEpoch,
    pub request_key: RequestKey,
}

/// The confirmed result of `lomi_terminal_interrupt`: the signal was dispatched. It does not
/// say the process exited; read the terminal to see.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Interrupted {
    pub panel_id: PanelId,
    pub process_group: i32,
    pub signal: String,
}

/// The confirmed result of `lomi_terminal_close`: every process of the terminal is gone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalClosed {
    pub panel_id: PanelId,
    pub exited: ExitView,
    pub domain_revision: DomainRevision,
}

// The tools of this module, one definition each ([`ToolDef`]); the list below names who
// serves each one and how it answers.

/// `lomi_terminal_create`
pub struct TerminalCreateTool;

impl ToolDef for TerminalCreateTool {
    const TOOL: Tool = Tool::TerminalCreate;
    const NAME: &'static str = "lomi_terminal_create";
    const FAMILY: Option<Family> = Some(Family::Terminal);
    const LABEL: &'static str = "Open terminals";
    const TITLE: &'static str = "Create a terminal";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Starts the person's shell, or argv, in a project folder as a new terminal \
        panel.";
    type Input = TerminalCreateInput;
    type Output = TerminalCreated;

    fn preview(input: &Self::Input) -> Preview {
        Preview::OpenTerminal {
            title: input.title.clone(),
            cwd_relative: input.cwd_relative.clone(),
            argv: input.argv.clone(),
        }
    }

    fn subject(input: &Self::Input) -> Subject {
        match &input.argv {
            Some(argv) if !argv.is_empty() => Subject::Command(argv.join(" ")),
            _ => Subject::None,
        }
    }
}

/// `lomi_lease_acquire`
pub struct LeaseAcquireTool;

impl ToolDef for LeaseAcquireTool {
    const TOOL: Tool = Tool::LeaseAcquire;
    const NAME: &'static str = "lomi_lease_acquire";
    const FAMILY: Option<Family> = Some(Family::Terminal);
    const LABEL: &'static str = "Take input control of a panel";
    const TITLE: &'static str = "Acquire a lease";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = Annotations {
        idempotent_hint: false,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Takes input control of a panel's runtime generation; the person typing ends it.";
    type Input = LeaseAcquireInput;
    type Output = LeaseView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_lease_release`
pub struct LeaseReleaseTool;

impl ToolDef for LeaseReleaseTool {
    const TOOL: Tool = Tool::LeaseRelease;
    const NAME: &'static str = "lomi_lease_release";
    const FAMILY: Option<Family> = Some(Family::Terminal);
    const LABEL: &'static str = "Give input control back";
    const TITLE: &'static str = "Release a lease";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = MUTATION;
    const DESCRIPTION: &'static str = "Gives up a lease.";
    type Input = LeaseReleaseInput;
    type Output = LeaseReleased;
}

/// `lomi_terminal_input`
pub struct TerminalInputTool;

impl ToolDef for TerminalInputTool {
    const TOOL: Tool = Tool::TerminalInput;
    const NAME: &'static str = "lomi_terminal_input";
    const FAMILY: Option<Family> = Some(Family::Terminal);
    const LABEL: &'static str = "Type into terminals";
    const TITLE: &'static str = "Type into a terminal";
    const KIND: ToolKind = ToolKind::Control;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Types text (\"\\r\" is Enter) or named keys under a lease; confirms the bytes \
        were written, not their effect.";
    type Input = TerminalInputInput;
    type Output = InputAccepted;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_terminal_read`
pub struct TerminalReadTool;

impl ToolDef for TerminalReadTool {
    const TOOL: Tool = Tool::TerminalRead;
    const NAME: &'static str = "lomi_terminal_read";
    const FAMILY: Option<Family> = Some(Family::Terminal);
    const LABEL: &'static str = "Read terminals";
    const TITLE: &'static str = "Read a terminal";
    const KIND: ToolKind = ToolKind::Read;
    const ANNOTATIONS: Annotations = READ;
    const DESCRIPTION: &'static str = "The screen and output since a cursor; waitFor answers once text, a regex, \
        idleness or exit is seen.";
    type Input = TerminalReadInput;
    type Output = TerminalReadView;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_terminal_interrupt`
pub struct TerminalInterruptTool;

impl ToolDef for TerminalInterruptTool {
    const TOOL: Tool = Tool::TerminalInterrupt;
    const NAME: &'static str = "lomi_terminal_interrupt";
    const FAMILY: Option<Family> = Some(Family::Terminal);
    const LABEL: &'static str = "Interrupt a terminal's program";
    const TITLE: &'static str = "Interrupt a terminal";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str =
        "Sends Ctrl+C to the foreground process; it may still run: read to see.";
    type Input = TerminalInterruptInput;
    type Output = Interrupted;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }
}

/// `lomi_terminal_close`
pub struct TerminalCloseTool;

impl ToolDef for TerminalCloseTool {
    const TOOL: Tool = Tool::TerminalClose;
    const NAME: &'static str = "lomi_terminal_close";
    const FAMILY: Option<Family> = Some(Family::Terminal);
    const LABEL: &'static str = "Close terminals";
    const TITLE: &'static str = "Close a terminal";
    const KIND: ToolKind = ToolKind::Mutation;
    const ANNOTATIONS: Annotations = Annotations {
        destructive_hint: true,
        ..MUTATION
    };
    const DESCRIPTION: &'static str = "Ends the terminal's processes and removes its panel.";
    type Input = crate::tools::session::PanelCloseInput;
    type Output = TerminalClosed;

    fn panel(input: &Self::Input) -> Option<&PanelId> {
        Some(&input.panel_id)
    }

    fn preview(_input: &Self::Input) -> Preview {
        Preview::ClosePanel
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __terminal_tools {
    ($callback:ident $next:ident $($rest:ident)* [$($rows:tt)*]) => {
        $crate::$next!($callback $($rest)* [$($rows)*
            TerminalCreate = $crate::tools::terminal::TerminalCreateTool => terminals as plain,
            LeaseAcquire = $crate::tools::terminal::LeaseAcquireTool => broker as plain,
            LeaseRelease = $crate::tools::terminal::LeaseReleaseTool => broker as plain,
            TerminalInput = $crate::tools::terminal::TerminalInputTool => terminals as plain,
            TerminalRead = $crate::tools::terminal::TerminalReadTool => terminals as plain,
            TerminalInterrupt = $crate::tools::terminal::TerminalInterruptTool => terminals as plain,
            TerminalClose = $crate::tools::terminal::TerminalCloseTool => terminals as plain,
        ]);
    };
}
