//! The tool catalog: every tool's name, description, annotations and complete input and output
//! schemas. `lomi catalog` prints it and the MCP server's `tools/list` is built from it (with
//! slimmer output schemas).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::schema::{
    input_schema, listed_operation_schema, listed_output_schema, operation_schema, output_schema,
};
use crate::tools::NoArguments;
use crate::tools::android::{
    AndroidAppsInput, AndroidInstallInput, AndroidLogcatInput, AndroidOpenUrlInput,
    AndroidOrientationInput, AndroidPackageInput, AndroidPullInput, AndroidPushInput,
    AndroidRotateInput,
};
use crate::tools::android::{
    AndroidAttachInput, AndroidCaptureInput, AndroidCaptureView, AndroidDeviceList,
    AndroidDevicesInput, AndroidInputAccepted, AndroidInputInput, AndroidLaunchInput,
    AndroidShellInput, AndroidUiSnapshotInput, AndroidUiSnapshotView,
};
use crate::tools::browser::{
    BrowserCaptureInput, BrowserClickInput, BrowserCreateInput, BrowserDialogInput,
    BrowserEvaluateInput, BrowserHoverInput, BrowserLogInput, BrowserNavigateInput,
    BrowserPanelInput, BrowserPressInput, BrowserScrollInput, BrowserSelectInput,
    BrowserSnapshotInput, BrowserTabInput, BrowserTypeInput, BrowserUploadInput, BrowserWaitInput,
    CaptureView, ConsolePage, NetworkPage, SnapshotView, TabList,
};
use crate::tools::chat::{
    ChatCreateInput, ChatDraftUpdateInput, ChatGetInput, ChatList, ChatListInput, ChatSendInput,
    ChatSent, ConversationCreated, ConversationView, DraftUpdated,
};
use crate::tools::editor::{
    EditorCloseInput, EditorClosed, EditorDocumentView, EditorEditInput, EditorEdited,
    EditorOpenInput, EditorSaveInput, WorkspaceCloseInput,
};
use crate::tools::files::{
    DirCreateInput, DirListInput, DirListView, FileCreateInput, FileDeleteInput, FileReadInput,
    FileReadView, FileRenameInput, FileWriteInput,
};
use crate::tools::git::{
    GitBranchInput, GitCommitInput, GitDiffInput, GitDiffView, GitStageInput, GitStatusInput,
    GitStatusView,
};
use crate::tools::operations::{
    EventPage, EventsReadInput, OperationCancelInput, OperationGetInput, OperationView,
    StoreStatusView,
};
use crate::tools::session::{
    ConnectInput, Connection, PairingStatus, PanelCloseInput, PanelList, PanelListInput,
    WorkspaceList, WorkspaceUpdateInput,
};
use crate::tools::settings::{
    SettingsGetInput, SettingsUpdateInput, SettingsUpdated, SettingsView,
};
use crate::tools::terminal::{
    InputAccepted, LeaseAcquireInput, LeaseReleaseInput, LeaseReleased, LeaseView,
    TerminalCreateInput, TerminalInputInput, TerminalInterruptInput, TerminalReadInput,
    TerminalReadView,
};

/// Declares the tool table: each tool's enum variant and its wire name, written once.
macro_rules! tool_table {
    ($($variant:ident => $name:literal,)*) => {
        /// Every tool Lomi serves. This table is the one place a tool is named: the catalog,
        /// the MCP dispatch, receipts, the person's confirmation policy and key lookups all take
        /// a `Tool`, and matches over it are exhaustive, so a tool cannot be listed without
        /// being dispatched, or dispatched without being listed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Tool {
            $($variant,)*
        }

        impl Tool {
            /// Every tool, in the catalog's order.
            pub const ALL: &'static [Tool] = &[$(Tool::$variant,)*];

            /// The tool's wire name, e.g. `lomi_workspace_update`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Tool::$variant => $name,)*
                }
            }

            /// The tool with this wire name, if Lomi has one.
            pub fn from_name(name: &str) -> Option<Tool> {
                match name {
                    $($name => Some(Tool::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

tool_table! {
    PairingStatus => "lomi_pairing_status",
    WorkspaceList => "lomi_workspace_list",
    PanelList => "lomi_panel_list",
    Connect => "lomi_connect",
    WorkspaceUpdate => "lomi_workspace_update",
    OperationGet => "lomi_operation_get",
    OperationCancel => "lomi_operation_cancel",
    EventsRead => "lomi_events_read",
    TerminalCreate => "lomi_terminal_create",
    LeaseAcquire => "lomi_lease_acquire",
    LeaseRelease => "lomi_lease_release",
    TerminalInput => "lomi_terminal_input",
    TerminalRead => "lomi_terminal_read",
    TerminalInterrupt => "lomi_terminal_interrupt",
    TerminalClose => "lomi_terminal_close",
    FileRead => "lomi_file_read",
    FileWrite => "lomi_file_write",
    FileCreate => "lomi_file_create",
    FileRename => "lomi_file_rename",
    FileDelete => "lomi_file_delete",
    DirCreate => "lomi_dir_create",
    DirList => "lomi_dir_list",
    EditorOpen => "lomi_editor_open",
    EditorEdit => "lomi_editor_edit",
    EditorSave => "lomi_editor_save",
    EditorClose => "lomi_editor_close",
    WorkspaceClose => "lomi_workspace_close",
    GitStatus => "lomi_git_status",
    GitDiff => "lomi_git_diff",
    GitStage => "lomi_git_stage",
    GitCommit => "lomi_git_commit",
    GitBranch => "lomi_git_branch",
    AndroidDevices => "lomi_android_devices",
    AndroidAttach => "lomi_android_attach",
    AndroidDetach => "lomi_android_detach",
    AndroidLaunch => "lomi_android_launch",
    AndroidInput => "lomi_android_input",
    AndroidUiSnapshot => "lomi_android_ui_snapshot",
    AndroidCapture => "lomi_android_capture",
    AndroidShell => "lomi_android_shell",
    AndroidPush => "lomi_android_push",
    AndroidPull => "lomi_android_pull",
    AndroidInstall => "lomi_android_install",
    AndroidUninstall => "lomi_android_uninstall",
    AndroidApps => "lomi_android_apps",
    AndroidStop => "lomi_android_stop",
    AndroidOpenUrl => "lomi_android_open_url",
    AndroidLogcat => "lomi_android_logcat",
    AndroidOrientation => "lomi_android_orientation",
    AndroidRotate => "lomi_android_rotate",
    AndroidCaptureSet => "lomi_android_capture_set",
    BrowserCreate => "lomi_browser_create",
    BrowserNavigate => "lomi_browser_navigate",
    BrowserSnapshot => "lomi_browser_snapshot",
    BrowserWait => "lomi_browser_wait",
    BrowserClick => "lomi_browser_click",
    BrowserType => "lomi_browser_type",
    BrowserPress => "lomi_browser_press",
    BrowserSelect => "lomi_browser_select",
    BrowserHover => "lomi_browser_hover",
    BrowserScroll => "lomi_browser_scroll",
    BrowserUpload => "lomi_browser_upload",
    BrowserDialog => "lomi_browser_dialog",
    BrowserTabList => "lomi_browser_tab_list",
    BrowserTabOpen => "lomi_browser_tab_open",
    BrowserTabSwitch => "lomi_browser_tab_switch",
    BrowserTabClose => "lomi_browser_tab_close",
    BrowserConsole => "lomi_browser_console",
    BrowserNetwork => "lomi_browser_network",
    BrowserEvaluate => "lomi_browser_evaluate",
    BrowserCapture => "lomi_browser_capture",
    BrowserDrag => "lomi_browser_drag",
    BrowserFill => "lomi_browser_fill",
    BrowserEmulate => "lomi_browser_emulate",
    BrowserPdf => "lomi_browser_pdf",
    BrowserNetworkBody => "lomi_browser_network_body",
    BrowserCaptureSet => "lomi_browser_capture_set",
    BrowserClose => "lomi_browser_close",
    StoreStatus => "lomi_store_status",
    SettingsGet => "lomi_settings_get",
    SettingsUpdate => "lomi_settings_update",
    ChatList => "lomi_chat_list",
    ChatGet => "lomi_chat_get",
    ChatCreate => "lomi_chat_create",
    ChatDraftUpdate => "lomi_chat_draft_update",
    ChatSend => "lomi_chat_send",
}

/// A family of tools the person lets a pairing see. `tools/list` shows a pairing its families'
/// tools and the session tools (those of no family: pairing status, workspace and panel lists,
/// connect, operations, events, store status); a tool of a family it was not given answers as
/// unknown.
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
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Workspace,
    Terminal,
    Files,
    Editor,
    Git,
    Browser,
    Android,
    Chat,
}

impl Family {
    pub const ALL: &'static [Family] = &[
        Family::Workspace,
        Family::Terminal,
        Family::Files,
        Family::Editor,
        Family::Git,
        Family::Browser,
        Family::Android,
        Family::Chat,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Family::Workspace => "workspace",
            Family::Terminal => "terminal",
            Family::Files => "files",
            Family::Editor => "editor",
            Family::Git => "git",
            Family::Browser => "browser",
            Family::Android => "android",
            Family::Chat => "chat",
        }
    }

    /// The family in a person's words, as Settings and the pairing dialog show it.
    pub const fn label(self) -> &'static str {
        match self {
            Family::Workspace => "Workspace and settings",
            Family::Terminal => "Terminals",
            Family::Files => "Project files",
            Family::Editor => "Editor documents",
            Family::Git => "Git",
            Family::Browser => "Browsers",
            Family::Android => "Android phones",
            Family::Chat => "Chat",
        }
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The OAuth scope that asks for the family: `lomi:browser`.
    pub fn scope(self) -> String {
        format!("lomi:{}", self.name())
    }

    /// The family an OAuth scope asks for, if it is one of Lomi's.
    pub fn from_scope(scope: &str) -> Option<Family> {
        scope.strip_prefix("lomi:").and_then(Family::from_name)
    }

    /// What to look at when an operation of this family is `outcome_unknown` (Lomi cannot
    /// tell whether its effect happened), before doing anything again; docs/recovery.md says
    /// more. The window and `lomi operation show` give it with such a receipt.
    pub const fn recovery_steps(self) -> &'static str {
        match self {
            Family::Workspace => {
                "List the workspace again (lomi_workspace_list): its name, layout and revision say whether the change happened."
            }
            Family::Terminal => {
                "Read the terminal's screen: the command or interrupt may have reached the shell. Do not send it again before you know."
            }
            Family::Files | Family::Editor => {
                "Read the file from disk and compare it with what was to be written: its disk revision says whether it changed."
            }
            Family::Git => {
                "Run `git status` and `git log -1` in the project: the staging, commit or branch may have happened."
            }
            Family::Browser => {
                "Look at the browser panel (a snapshot or capture): the page may have navigated, or the action may have landed."
            }
            Family::Android => {
                "Capture the device's screen: the input, launch, install or file transfer may have reached it."
            }
            Family::Chat => {
                "Open the conversation: the message may have reached the provider even without a reply."
            }
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Tool {
    /// The family the tool belongs to, or `None` for a session tool every pairing sees. The
    /// match is exhaustive: a new tool must say where it belongs.
    pub const fn family(self) -> Option<Family> {
        use Family::*;
        match self {
            Tool::PairingStatus
            | Tool::WorkspaceList
            | Tool::PanelList
            | Tool::Connect
            | Tool::OperationGet
            | Tool::OperationCancel
            | Tool::EventsRead
            | Tool::StoreStatus => None,
            Tool::WorkspaceUpdate
            | Tool::WorkspaceClose
            | Tool::SettingsGet
            | Tool::SettingsUpdate => Some(Workspace),
            Tool::TerminalCreate
            | Tool::LeaseAcquire
            | Tool::LeaseRelease
            | Tool::TerminalInput
            | Tool::TerminalRead
            | Tool::TerminalInterrupt
            | Tool::TerminalClose => Some(Terminal),
            Tool::FileRead
            | Tool::FileWrite
            | Tool::FileCreate
            | Tool::FileRename
            | Tool::FileDelete
            | Tool::DirCreate
            | Tool::DirList => Some(Files),
            Tool::EditorOpen | Tool::EditorEdit | Tool::EditorSave | Tool::EditorClose => {
                Some(Editor)
            }
            Tool::GitStatus
            | Tool::GitDiff
            | Tool::GitStage
            | Tool::GitCommit
            | Tool::GitBranch => Some(Git),
            Tool::AndroidDevices
            | Tool::AndroidAttach
            | Tool::AndroidDetach
            | Tool::AndroidLaunch
            | Tool::AndroidInput
            | Tool::AndroidUiSnapshot
            | Tool::AndroidCapture
            | Tool::AndroidShell
            | Tool::AndroidPush
            | Tool::AndroidPull
            | Tool::AndroidInstall
            | Tool::AndroidUninstall
            | Tool::AndroidApps
            | Tool::AndroidStop
            | Tool::AndroidOpenUrl
            | Tool::AndroidLogcat
            | Tool::AndroidOrientation
            | Tool::AndroidRotate
            | Tool::AndroidCaptureSet => Some(Android),
            Tool::BrowserCreate
            | Tool::BrowserNavigate
            | Tool::BrowserSnapshot
            | Tool::BrowserWait
            | Tool::BrowserClick
            | Tool::BrowserType
            | Tool::BrowserPress
            | Tool::BrowserSelect
            | Tool::BrowserHover
            | Tool::BrowserScroll
            | Tool::BrowserUpload
            | Tool::BrowserDialog
            | Tool::BrowserTabList
            | Tool::BrowserTabOpen
            | Tool::BrowserTabSwitch
            | Tool::BrowserTabClose
            | Tool::BrowserConsole
            | Tool::BrowserNetwork
            | Tool::BrowserEvaluate
            | Tool::BrowserCapture
            | Tool::BrowserDrag
            | Tool::BrowserFill
            | Tool::BrowserEmulate
            | Tool::BrowserPdf
            | Tool::BrowserNetworkBody
            | Tool::BrowserClose
            | Tool::BrowserCaptureSet => Some(Browser),
            Tool::ChatList
            | Tool::ChatGet
            | Tool::ChatCreate
            | Tool::ChatDraftUpdate
            | Tool::ChatSend => Some(Chat),
        }
    }
}

impl Tool {
    /// What the tool does in a person's words, as the "ask me before" list shows it ("Delete
    /// files"); the wire name is the detail beside it. Exhaustive, like [`Tool::family`].
    pub const fn label(self) -> &'static str {
        match self {
            Tool::PairingStatus => "See whether it is paired",
            Tool::WorkspaceList => "List workspaces",
            Tool::PanelList => "List panels",
            Tool::Connect => "Connect to a workspace",
            Tool::WorkspaceUpdate => "Rearrange or rename a workspace",
            Tool::OperationGet => "Follow its operations",
            Tool::OperationCancel => "Cancel its operations",
            Tool::EventsRead => "Read its operations' events",
            Tool::TerminalCreate => "Open terminals",
            Tool::LeaseAcquire => "Take input control of a panel",
            Tool::LeaseRelease => "Give input control back",
            Tool::TerminalInput => "Type into terminals",
            Tool::TerminalRead => "Read terminals",
            Tool::TerminalInterrupt => "Interrupt a terminal's program",
            Tool::TerminalClose => "Close terminals",
            Tool::FileRead => "Read files",
            Tool::FileWrite => "Overwrite files",
            Tool::FileCreate => "Create files",
            Tool::FileRename => "Rename or move files",
            Tool::FileDelete => "Delete files",
            Tool::DirCreate => "Create folders",
            Tool::DirList => "List folders",
            Tool::EditorOpen => "Open documents",
            Tool::EditorEdit => "Edit documents",
            Tool::EditorSave => "Save documents to disk",
            Tool::EditorClose => "Close documents",
            Tool::WorkspaceClose => "Close a workspace",
            Tool::GitStatus => "Read Git status",
            Tool::GitDiff => "Read Git diffs",
            Tool::GitStage => "Stage files in Git",
            Tool::GitCommit => "Commit to Git",
            Tool::GitBranch => "Create or switch Git branches",
            Tool::AndroidDevices => "List phones",
            Tool::AndroidAttach => "Use a phone",
            Tool::AndroidDetach => "Let go of a phone",
            Tool::AndroidLaunch => "Launch apps on a phone",
            Tool::AndroidInput => "Tap and type on a phone",
            Tool::AndroidUiSnapshot => "Read a phone's screen layout",
            Tool::AndroidCapture => "Capture a phone's screen",
            Tool::AndroidShell => "Run commands on a phone",
            Tool::AndroidPush => "Copy files to a phone",
            Tool::AndroidPull => "Copy files from a phone",
            Tool::AndroidInstall => "Install apps on a phone",
            Tool::AndroidUninstall => "Uninstall apps from a phone",
            Tool::AndroidApps => "List a phone's apps",
            Tool::AndroidStop => "Stop apps on a phone",
            Tool::AndroidOpenUrl => "Open links on a phone",
            Tool::AndroidLogcat => "Read a phone's log",
            Tool::AndroidOrientation => "Read a phone's orientation",
            Tool::AndroidRotate => "Turn a phone's screen",
            Tool::AndroidCaptureSet => "Save sets of phone captures into the project",
            Tool::BrowserCreate => "Open browsers",
            Tool::BrowserNavigate => "Open web addresses",
            Tool::BrowserSnapshot => "Read web pages",
            Tool::BrowserWait => "Wait for a web page",
            Tool::BrowserClick => "Click in web pages",
            Tool::BrowserType => "Type into web pages",
            Tool::BrowserPress => "Press keys in web pages",
            Tool::BrowserSelect => "Choose options in web pages",
            Tool::BrowserHover => "Point at elements of web pages",
            Tool::BrowserScroll => "Scroll web pages",
            Tool::BrowserUpload => "Upload files to web pages",
            Tool::BrowserDialog => "Answer web pages' dialogs",
            Tool::BrowserTabList => "List browser tabs",
            Tool::BrowserTabOpen => "Open browser tabs",
            Tool::BrowserTabSwitch => "Switch browser tabs",
            Tool::BrowserTabClose => "Close browser tabs",
            Tool::BrowserConsole => "Read a page's console",
            Tool::BrowserNetwork => "Read a page's network requests",
            Tool::BrowserEvaluate => "Run scripts in web pages",
            Tool::BrowserCapture => "Capture web pages",
            Tool::BrowserDrag => "Drag in web pages",
            Tool::BrowserFill => "Fill in web forms",
            Tool::BrowserEmulate => "Emulate devices in a browser",
            Tool::BrowserPdf => "Save web pages as PDF into the project",
            Tool::BrowserNetworkBody => "Read network responses",
            Tool::BrowserCaptureSet => "Save sets of page captures into the project",
            Tool::BrowserClose => "Close browsers",
            Tool::StoreStatus => "Read Lomi's storage use",
            Tool::SettingsGet => "Read settings",
            Tool::SettingsUpdate => "Change settings",
            Tool::ChatList => "List conversations",
            Tool::ChatGet => "Read conversations",
            Tool::ChatCreate => "Start conversations",
            Tool::ChatDraftUpdate => "Write chat drafts",
            Tool::ChatSend => "Send messages to a model provider",
        }
    }
}

/// The families a pairing sees: every family (`None`, including families a later Lomi adds), or
/// the ones the person chose.
pub fn sees(families: Option<&std::collections::BTreeSet<Family>>, tool: Tool) -> bool {
    match (tool.family(), families) {
        (None, _) | (_, None) => true,
        (Some(family), Some(chosen)) => chosen.contains(&family),
    }
}

/// MCP tool annotations (hints for clients; Lomi enforces the real rules itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

impl Annotations {
    /// The hints as listed: `destructiveHint` and `idempotentHint` mean something only for a
    /// tool that is not read-only (MCP's tool annotations), so a read tool lists neither.
    pub fn to_json(self) -> Value {
        if self.read_only_hint {
            serde_json::json!({"readOnlyHint": true, "openWorldHint": self.open_world_hint})
        } else {
            serde_json::json!(self)
        }
    }
}

const READ: Annotations = Annotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// A mutation that is safe to retry with the same request key.
const MUTATION: Annotations = Annotations {
    read_only_hint: false,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// How a tool reaches the broker: a read answers at once, a mutation becomes an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// Answers from current state; no receipt.
    Read,
    /// Goes through the operation engine and records exactly one receipt.
    Mutation,
    /// Changes session bookkeeping (connections, cancellation) without an operation of its own.
    Control,
}

/// One tool of the catalog.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub tool: Tool,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub kind: ToolKind,
    pub annotations: Annotations,
    pub input_schema: Map<String, Value>,
    /// The complete output schema: the whole envelope, ok or error, around the typed data
    /// (the seed: the catalog JSON holds each tool's complete output schema).
    pub output_schema: Map<String, Value>,
    /// The output schema `tools/list` gives: the data in a slim envelope, and of a mutation's
    /// operation only its result's fields (`schema::listed_operation_schema`).
    pub listed_output_schema: Map<String, Value>,
    /// Decodes arguments strictly into the tool's input type (the type `input_schema` is made
    /// from) and drops the result: the fuzzer's way in to every tool's decoding.
    pub check_arguments: fn(&str, Option<Value>) -> Result<(), crate::ToolError>,
}

impl ToolSpec {
    fn new<I: schemars::JsonSchema + DeserializeOwned, O: schemars::JsonSchema>(
        tool: Tool,
        title: &'static str,
        kind: ToolKind,
        annotations: Annotations,
        description: &'static str,
    ) -> Self {
        ToolSpec {
            tool,
            name: tool.name(),
            title,
            description,
            kind,
            annotations,
            input_schema: input_schema::<I>(),
            output_schema: output_schema::<O>(),
            listed_output_schema: listed_output_schema::<O>(),
            check_arguments: |tool, arguments| {
                crate::strict::decode::<I>(tool, arguments).map(drop)
            },
        }
    }

    /// A mutation: its output is the operation, whose `result` is `R` once it succeeded (or
    /// `{details}` of a failure, or null while it runs).
    fn operation<I: schemars::JsonSchema + DeserializeOwned, R: schemars::JsonSchema>(
        tool: Tool,
        title: &'static str,
        annotations: Annotations,
        description: &'static str,
    ) -> Self {
        ToolSpec {
            output_schema: operation_schema::<R>(),
            listed_output_schema: listed_operation_schema::<R>(),
            ..ToolSpec::new::<I, OperationView>(
                tool,
                title,
                ToolKind::Mutation,
                annotations,
                description,
            )
        }
    }

    /// The tool as `tools/list` shows it (and the catalog JSON's `tools`).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.listed_output_schema,
            "annotations": self.annotations.to_json(),
        })
    }
}

/// Every tool Lomi serves, in the table's order.
pub fn catalog() -> Vec<ToolSpec> {
    Tool::ALL.iter().map(|tool| tool.spec()).collect()
}

impl Tool {
    /// The tool's catalog entry: title, kind, annotations, description and schemas. The match
    /// is exhaustive, so a tool of the table without an entry does not compile.
    pub fn spec(self) -> ToolSpec {
        use ToolKind::*;
        let tool = self;
        match self {
            Tool::PairingStatus => ToolSpec::new::<NoArguments, PairingStatus>(
                tool,
                "Pairing status",
                Read,
                READ,
                "Whether the person approved this client, with the code they compare. Answers \
             before approval.",
            ),
            Tool::WorkspaceList => ToolSpec::new::<NoArguments, WorkspaceList>(
                tool,
                "List workspaces",
                Read,
                READ,
                "The granted workspaces with projects, panels and domainRevision.",
            ),
            Tool::PanelList => ToolSpec::new::<PanelListInput, PanelList>(
                tool,
                "List panels",
                Read,
                READ,
                "A workspace's panels with their runtime generations and domainRevision.",
            ),
            Tool::Connect => ToolSpec::new::<ConnectInput, Connection>(
                tool,
                "Connect to a workspace",
                Control,
                Annotations {
                    idempotent_hint: false,
                    ..MUTATION
                },
                "Connects to a granted workspace; returns the retryEpoch every mutation needs.",
            ),
            Tool::WorkspaceUpdate => ToolSpec::operation::<
                WorkspaceUpdateInput,
                crate::tools::session::WorkspaceUpdateResult,
            >(
                tool,
                "Update a workspace",
                MUTATION,
                "Renames a workspace or rearranges its panels.",
            ),
            Tool::OperationGet => ToolSpec::new::<OperationGetInput, OperationView>(
                tool,
                "Get an operation",
                Read,
                READ,
                "An operation's receipt, by operationId or by the original retryEpoch, requestKey \
             and tool.",
            ),
            Tool::OperationCancel => ToolSpec::new::<OperationCancelInput, OperationView>(
                tool,
                "Cancel an operation",
                Control,
                Annotations {
                    destructive_hint: true,
                    ..MUTATION
                },
                "Cancels queued or waiting work, or asks running work to stop; undoes nothing.",
            ),
            Tool::EventsRead => ToolSpec::new::<EventsReadInput, EventPage>(
                tool,
                "Read operation events",
                Read,
                READ,
                "Operation state changes of a connection after cursor; continue with nextCursor, \
             even after an empty page.",
            ),
            Tool::TerminalCreate => {
                ToolSpec::operation::<TerminalCreateInput, crate::tools::terminal::TerminalCreated>(
                    tool,
                    "Create a terminal",
                    MUTATION,
                    "Starts the person's shell, or argv, in a project folder as a new terminal \
             panel.",
                )
            }
            Tool::LeaseAcquire => ToolSpec::new::<LeaseAcquireInput, LeaseView>(
                tool,
                "Acquire a lease",
                Control,
                Annotations {
                    idempotent_hint: false,
                    ..MUTATION
                },
                "Takes input control of a panel's runtime generation; the person typing ends it.",
            ),
            Tool::LeaseRelease => ToolSpec::new::<LeaseReleaseInput, LeaseReleased>(
                tool,
                "Release a lease",
                Control,
                MUTATION,
                "Gives up a lease.",
            ),
            Tool::TerminalInput => ToolSpec::new::<TerminalInputInput, InputAccepted>(
                tool,
                "Type into a terminal",
                Control,
                Annotations {
                    destructive_hint: true,
                    ..MUTATION
                },
                "Types text (\"\\r\" is Enter) or named keys under a lease; confirms the bytes \
             were written, not their effect.",
            ),
            Tool::TerminalRead => ToolSpec::new::<TerminalReadInput, TerminalReadView>(
                tool,
                "Read a terminal",
                Read,
                READ,
                "The screen and output since a cursor; waitFor answers once text, a regex, \
             idleness or exit is seen.",
            ),
            Tool::TerminalInterrupt => {
                ToolSpec::operation::<TerminalInterruptInput, crate::tools::terminal::Interrupted>(
                    tool,
                    "Interrupt a terminal",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Sends Ctrl+C to the foreground process; it may still run: read to see.",
                )
            }
            Tool::TerminalClose => {
                ToolSpec::operation::<PanelCloseInput, crate::tools::terminal::TerminalClosed>(
                    tool,
                    "Close a terminal",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Ends the terminal's processes and removes its panel.",
                )
            }
            Tool::FileRead => ToolSpec::new::<FileReadInput, FileReadView>(
                tool,
                "Read a file",
                Read,
                READ,
                "Reads a project file (or a byte range) with its diskRevision; UTF-8 as text, \
             else base64.",
            ),
            Tool::FileWrite => {
                ToolSpec::operation::<FileWriteInput, crate::tools::files::FileChanged>(
                    tool,
                    "Write a file",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Replaces an existing file's bytes atomically, by its diskRevision.",
                )
            }
            Tool::FileCreate => {
                ToolSpec::operation::<FileCreateInput, crate::tools::files::FileChanged>(
                    tool,
                    "Create a file",
                    MUTATION,
                    "Creates a new file; an existing path is REVISION_MISMATCH.",
                )
            }
            Tool::FileRename => {
                ToolSpec::operation::<FileRenameInput, crate::tools::files::FileChanged>(
                    tool,
                    "Rename a file",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Renames or moves a file in the project; never overwrites.",
                )
            }
            Tool::FileDelete => {
                ToolSpec::operation::<FileDeleteInput, crate::tools::files::FileChanged>(
                    tool,
                    "Delete a file",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Deletes a file (by diskRevision) or an empty folder (by directoryRevision).",
                )
            }
            Tool::DirCreate => {
                ToolSpec::operation::<DirCreateInput, crate::tools::files::DirCreated>(
                    tool,
                    "Create a folder",
                    MUTATION,
                    "Makes a folder in the project.",
                )
            }
            Tool::DirList => ToolSpec::new::<DirListInput, DirListView>(
                tool,
                "List a directory",
                Read,
                READ,
                "Lists a project folder, paged, with each entry's revision and the \
             directoryRevision.",
            ),
            Tool::EditorOpen => ToolSpec::new::<EditorOpenInput, EditorDocumentView>(
                tool,
                "Open an editor document",
                Control,
                // It changes no file, but it opens a document the person sees in the window.
                Annotations {
                    read_only_hint: false,
                    ..READ
                },
                "Opens a UTF-8 file as the editor document the person also sees (the same one if \
             open): its documentId, bufferRevision and text.",
            ),
            Tool::EditorEdit => ToolSpec::new::<EditorEditInput, EditorEdited>(
                tool,
                "Edit an editor document",
                Control,
                Annotations {
                    read_only_hint: false,
                    idempotent_hint: false,
                    ..READ
                },
                "Replaces character ranges (start..end, Unicode scalar values) of a document's \
             text as one change; save writes the file.",
            ),
            Tool::EditorSave => {
                ToolSpec::operation::<EditorSaveInput, crate::tools::editor::EditorSaved>(
                    tool,
                    "Save an editor document",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Writes a document to its file, refused if the file changed on disk since.",
                )
            }
            Tool::EditorClose => ToolSpec::new::<EditorCloseInput, EditorClosed>(
                tool,
                "Close an editor document",
                Control,
                Annotations {
                    read_only_hint: false,
                    destructive_hint: true,
                    ..READ
                },
                "Closes a document; unsaved changes need discard: true.",
            ),
            Tool::WorkspaceClose => {
                ToolSpec::operation::<WorkspaceCloseInput, crate::tools::editor::WorkspaceClosed>(
                    tool,
                    "Close a workspace's documents",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Saves or discards each open document as documents names them (every unsaved \
             one), then closes them all.",
                )
            }
            Tool::GitStatus => ToolSpec::new::<GitStatusInput, GitStatusView>(
                tool,
                "Git status",
                Read,
                READ,
                "A repository's HEAD (head), branch and changed, staged or untracked paths.",
            ),
            Tool::GitDiff => ToolSpec::new::<GitDiffInput, GitDiffView>(
                tool,
                "Git diff",
                Read,
                READ,
                "The unified diff of the unstaged changes, or the staged ones.",
            ),
            Tool::GitStage => ToolSpec::operation::<GitStageInput, crate::tools::git::GitStaged>(
                tool,
                "Stage changes",
                MUTATION,
                "Stages paths (new, changed or deleted) for the next commit.",
            ),
            Tool::GitCommit => {
                ToolSpec::operation::<GitCommitInput, crate::tools::git::GitCommitted>(
                    tool,
                    "Commit staged changes",
                    MUTATION,
                    "Commits what is staged, if HEAD is still expectedHeadRevision (\"\" unborn).",
                )
            }
            Tool::GitBranch => {
                ToolSpec::operation::<GitBranchInput, crate::tools::git::GitBranched>(
                    tool,
                    "Create or switch a branch",
                    MUTATION,
                    "Creates a branch at HEAD and switches to it, or switches to an existing one.",
                )
            }
            Tool::AndroidDevices => ToolSpec::new::<AndroidDevicesInput, AndroidDeviceList>(
                tool,
                "List Android devices",
                Read,
                READ,
                "The adb server's devices and the workspace's panel each is attached to.",
            ),
            Tool::AndroidAttach => {
                ToolSpec::operation::<AndroidAttachInput, crate::tools::android::AndroidAttached>(
                    tool,
                    "Attach an Android device",
                    MUTATION,
                    "Attaches a device (a serial, or HOST:PORT for wireless debugging) as a \
             panel; the first time, the person decides.",
                )
            }
            Tool::AndroidDetach => {
                ToolSpec::operation::<PanelCloseInput, crate::tools::android::AndroidDetached>(
                    tool,
                    "Detach an Android device",
                    MUTATION,
                    "Removes a device's panel; the device is untouched.",
                )
            }
            Tool::AndroidLaunch => {
                ToolSpec::operation::<AndroidLaunchInput, crate::tools::android::AndroidLaunched>(
                    tool,
                    "Launch an Android activity",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Starts an activity (component) or an implicit intent; confirms delivery only.",
                )
            }
            Tool::AndroidInput => ToolSpec::new::<AndroidInputInput, AndroidInputAccepted>(
                tool,
                "Send input to an Android device",
                Control,
                Annotations {
                    destructive_hint: true,
                    ..MUTATION
                },
                "A tap, long press, swipe, text or key under a lease (one of them); a point is \
             x+y or snapshotId+elementRef.",
            ),
            Tool::AndroidUiSnapshot => {
                ToolSpec::new::<AndroidUiSnapshotInput, AndroidUiSnapshotView>(
                    tool,
                    "Android UI snapshot",
                    Read,
                    READ,
                    "The device's UI as a node list with elementRefs under a snapshotId.",
                )
            }
            Tool::AndroidCapture => ToolSpec::new::<AndroidCaptureInput, AndroidCaptureView>(
                tool,
                "Capture an Android screen",
                Read,
                READ,
                "A PNG screenshot, optionally clipped, scaled or fitted to maxBytes.",
            ),
            Tool::AndroidShell => {
                ToolSpec::operation::<AndroidShellInput, crate::tools::android::AndroidShellResult>(
                    tool,
                    "Run an Android shell command",
                    Annotations {
                        destructive_hint: true,
                        idempotent_hint: false,
                        ..MUTATION
                    },
                    "Runs a command line in the device's shell; output cut to maxBytes, no exit \
             status.",
                )
            }
            Tool::AndroidPush => {
                ToolSpec::operation::<AndroidPushInput, crate::tools::android::AndroidTransferred>(
                    tool,
                    "Copy a project file to an Android device",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Copies a project file to devicePath (absolute; replaced if present), checked \
             by SHA-256.",
                )
            }
            Tool::AndroidPull => {
                ToolSpec::operation::<AndroidPullInput, crate::tools::android::AndroidTransferred>(
                    tool,
                    "Copy an Android device file into the project",
                    MUTATION,
                    "Copies devicePath (at most 256 MiB) into the project at path, checked by \
             SHA-256.",
                )
            }
            Tool::AndroidInstall => {
                ToolSpec::operation::<AndroidInstallInput, crate::tools::android::AndroidInstalled>(
                    tool,
                    "Install an APK on an Android device",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Installs an APK of the project with pm install; succeeds only on pm's \
             Success.",
                )
            }
            Tool::AndroidUninstall => {
                ToolSpec::operation::<AndroidPackageInput, crate::tools::android::AndroidPackageDone>(
                    tool,
                    "Uninstall an Android app",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Uninstalls a package with pm uninstall.",
                )
            }
            Tool::AndroidApps => {
                ToolSpec::new::<AndroidAppsInput, crate::tools::android::AndroidAppsView>(
                    tool,
                    "List installed Android apps",
                    Read,
                    READ,
                    "The installed packages and their version codes.",
                )
            }
            Tool::AndroidStop => {
                ToolSpec::operation::<AndroidPackageInput, crate::tools::android::AndroidPackageDone>(
                    tool,
                    "Force-stop an Android app",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Force-stops a package's processes.",
                )
            }
            Tool::AndroidOpenUrl => {
                ToolSpec::operation::<AndroidOpenUrlInput, crate::tools::android::AndroidLaunched>(
                    tool,
                    "Open a URL on an Android device",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Opens a URL or deep link with a VIEW intent; confirms delivery only.",
                )
            }
            Tool::AndroidLogcat => {
                ToolSpec::new::<AndroidLogcatInput, crate::tools::android::AndroidLogcatView>(
                    tool,
                    "Read an Android device's log",
                    Read,
                    READ,
                    "Log lines after sinceCursor, filtered, with nextCursor; waitFor waits for a \
             line containing it.",
                )
            }
            Tool::AndroidOrientation => ToolSpec::new::<
                AndroidOrientationInput,
                crate::tools::android::AndroidOrientationView,
            >(
                tool,
                "Read an Android device's rotation",
                Read,
                READ,
                "The screen's rotation (0 to 3 quarter turns) and whether auto-rotate is on.",
            ),
            Tool::AndroidRotate => ToolSpec::operation::<
                AndroidRotateInput,
                crate::tools::android::AndroidOrientationView,
            >(
                tool,
                "Rotate an Android device's screen",
                MUTATION,
                "Sets the rotation with auto-rotate off; attach again to have input coordinates \
             checked anew.",
            ),
            Tool::AndroidCaptureSet => ToolSpec::operation::<
                crate::tools::capture::AndroidCaptureSetInput,
                crate::tools::capture::CaptureSetResult,
            >(
                tool,
                "Capture a set of Android screens",
                MUTATION,
                "Launches each screen and saves its capture into folder, as \
             lomi_browser_capture_set does.",
            ),
            Tool::BrowserCreate => {
                ToolSpec::operation::<BrowserCreateInput, crate::tools::browser::BrowserCreated>(
                    tool,
                    "Create a browser",
                    MUTATION,
                    "Starts a headless Chromium as a new panel.",
                )
            }
            Tool::BrowserNavigate => {
                ToolSpec::operation::<BrowserNavigateInput, crate::tools::browser::Navigated>(
                    tool,
                    "Navigate",
                    MUTATION,
                    "Opens url, or moves through history, in the active tab.",
                )
            }
            Tool::BrowserSnapshot => ToolSpec::new::<BrowserSnapshotInput, SnapshotView>(
                tool,
                "Snapshot a page",
                Read,
                READ,
                "The active tab as text, one node a line with refs for actions; sinceSnapshotId \
             gives only what changed.",
            ),
            Tool::BrowserWait => {
                ToolSpec::new::<BrowserWaitInput, crate::tools::browser::WaitView>(
                    tool,
                    "Wait for a page",
                    Read,
                    READ,
                    "Waits until the active tab shows text, a role+name node, a URL or network \
             idleness (every one given).",
                )
            }
            Tool::BrowserClick => ToolSpec::operation::<
                BrowserClickInput,
                crate::tools::browser::ActionDone,
            >(
                tool, "Click", MUTATION, "Clicks an element or a point."
            ),
            Tool::BrowserType => {
                ToolSpec::operation::<BrowserTypeInput, crate::tools::browser::ActionDone>(
                    tool,
                    "Type text",
                    MUTATION,
                    "Types text into an element, replacing its content unless replace is false.",
                )
            }
            Tool::BrowserPress => {
                ToolSpec::operation::<BrowserPressInput, crate::tools::browser::ActionDone>(
                    tool,
                    "Press a key",
                    MUTATION,
                    "Presses a key at an element, or at the focused one.",
                )
            }
            Tool::BrowserSelect => {
                ToolSpec::operation::<BrowserSelectInput, crate::tools::browser::ActionDone>(
                    tool,
                    "Select options",
                    MUTATION,
                    "Selects exactly these options (values or labels) of a select.",
                )
            }
            Tool::BrowserHover => {
                ToolSpec::operation::<BrowserHoverInput, crate::tools::browser::ActionDone>(
                    tool,
                    "Hover",
                    MUTATION,
                    "Moves the mouse over an element or a point.",
                )
            }
            Tool::BrowserScroll => {
                ToolSpec::operation::<BrowserScrollInput, crate::tools::browser::ActionDone>(
                    tool,
                    "Scroll",
                    MUTATION,
                    "Scrolls an element into view, or by deltaX/deltaY at a point.",
                )
            }
            Tool::BrowserUpload => {
                ToolSpec::operation::<BrowserUploadInput, crate::tools::browser::ActionDone>(
                    tool,
                    "Upload files",
                    MUTATION,
                    "Sets a file input's files from the project.",
                )
            }
            Tool::BrowserDialog => {
                ToolSpec::operation::<BrowserDialogInput, crate::tools::browser::ActionDone>(
                    tool,
                    "Answer a dialog",
                    MUTATION,
                    "Answers the open JavaScript dialog.",
                )
            }
            Tool::BrowserTabList => ToolSpec::new::<BrowserPanelInput, TabList>(
                tool,
                "List tabs",
                Read,
                READ,
                "The tabs; the active one gets actions and snapshots.",
            ),
            Tool::BrowserTabOpen => {
                ToolSpec::operation::<BrowserTabInput, crate::tools::browser::TabsChanged>(
                    tool,
                    "Open a tab",
                    MUTATION,
                    "Opens a tab at url (default about:blank) and makes it active.",
                )
            }
            Tool::BrowserTabSwitch => {
                ToolSpec::operation::<BrowserTabInput, crate::tools::browser::TabsChanged>(
                    tool,
                    "Switch tabs",
                    MUTATION,
                    "Makes tabId the active tab.",
                )
            }
            Tool::BrowserTabClose => {
                ToolSpec::operation::<BrowserTabInput, crate::tools::browser::TabsChanged>(
                    tool,
                    "Close a tab",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Closes tabId, not the last tab.",
                )
            }
            Tool::BrowserConsole => ToolSpec::new::<BrowserLogInput, ConsolePage>(
                tool,
                "Read the console",
                Read,
                READ,
                "Console messages and exceptions after a cursor.",
            ),
            Tool::BrowserNetwork => ToolSpec::new::<BrowserLogInput, NetworkPage>(
                tool,
                "Read network requests",
                Read,
                READ,
                "Requests of every tab after a cursor.",
            ),
            Tool::BrowserEvaluate => {
                ToolSpec::operation::<BrowserEvaluateInput, crate::tools::browser::Evaluated>(
                    tool,
                    "Evaluate JavaScript",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Runs a JavaScript expression in the active tab; awaits promises.",
                )
            }
            Tool::BrowserCapture => ToolSpec::new::<BrowserCaptureInput, CaptureView>(
                tool,
                "Capture a PNG",
                Read,
                // With save it writes a file into the project (an operation, keyed like every
                // mutation, so a retry does not write twice).
                Annotations {
                    read_only_hint: false,
                    ..MUTATION
                },
                "A PNG of the viewport, full page, element or clip; save also writes it.",
            ),
            Tool::BrowserDrag => ToolSpec::operation::<
                crate::tools::browser::BrowserDragInput,
                crate::tools::browser::ActionDone,
            >(
                tool,
                "Drag and drop",
                MUTATION,
                "Drags elementRef onto targetRef.",
            ),
            Tool::BrowserFill => ToolSpec::operation::<
                crate::tools::browser::BrowserFillInput,
                crate::tools::browser::ActionDone,
            >(
                tool,
                "Fill form fields",
                MUTATION,
                "Fills fields in order; value \"true\"/\"false\" for a checkbox or radio.",
            ),
            Tool::BrowserEmulate => ToolSpec::operation::<
                crate::tools::browser::BrowserEmulateInput,
                crate::tools::browser::Emulated,
            >(
                tool,
                "Emulate a device",
                MUTATION,
                "Sets viewport, scale, mobile, User-Agent or color scheme.",
            ),
            Tool::BrowserPdf => ToolSpec::operation::<
                crate::tools::browser::BrowserPdfInput,
                crate::tools::browser::PdfSaved,
            >(
                tool,
                "Save a page as PDF",
                MUTATION,
                "Prints the active tab to a PDF in the project.",
            ),
            Tool::BrowserCaptureSet => ToolSpec::operation::<
                crate::tools::capture::BrowserCaptureSetInput,
                crate::tools::capture::CaptureSetResult,
            >(
                tool,
                "Capture a set of pages",
                MUTATION,
                "Captures each target into folder as NAME.png, NAME.diff.png (against the file \
             replaced, or baseline) and manifest.json.",
            ),
            Tool::BrowserNetworkBody => ToolSpec::new::<
                crate::tools::browser::BrowserNetworkBodyInput,
                crate::tools::browser::NetworkBody,
            >(
                tool,
                "Read a response body",
                Read,
                Annotations {
                    read_only_hint: false,
                    ..MUTATION
                },
                "The response body of a request lomi_browser_network listed (its cursor); save \
             also writes it.",
            ),
            Tool::BrowserClose => {
                ToolSpec::operation::<PanelCloseInput, crate::tools::browser::BrowserClosed>(
                    tool,
                    "Close a browser",
                    Annotations {
                        destructive_hint: true,
                        ..MUTATION
                    },
                    "Ends the browser and removes its panel.",
                )
            }
            Tool::StoreStatus => ToolSpec::new::<NoArguments, StoreStatusView>(
                tool,
                "Receipt store status",
                Read,
                READ,
                "Counts, caps and oldest records of Lomi's receipt store.",
            ),
            Tool::SettingsGet => ToolSpec::new::<SettingsGetInput, SettingsView>(
                tool,
                "Get settings",
                Read,
                READ,
                "The person's settings, one section or all, with settingsRevision.",
            ),
            Tool::SettingsUpdate => ToolSpec::operation::<SettingsUpdateInput, SettingsUpdated>(
                tool,
                "Update settings",
                MUTATION,
                "Sets fields of a settings section.",
            ),
            Tool::ChatList => ToolSpec::new::<ChatListInput, ChatList>(
                tool,
                "List conversations",
                Read,
                READ,
                "A workspace's conversations, newest first.",
            ),
            Tool::ChatGet => ToolSpec::new::<ChatGetInput, ConversationView>(
                tool,
                "Get a conversation",
                Read,
                READ,
                "A conversation's draft and a page of messages after afterSeq.",
            ),
            Tool::ChatCreate => ToolSpec::operation::<ChatCreateInput, ConversationCreated>(
                tool,
                "Create a conversation",
                MUTATION,
                "Starts a conversation in the retry epoch's workspace.",
            ),
            Tool::ChatDraftUpdate => ToolSpec::operation::<ChatDraftUpdateInput, DraftUpdated>(
                tool,
                "Update a draft",
                MUTATION,
                "Replaces a conversation's draft, which the person also edits.",
            ),
            Tool::ChatSend => ToolSpec::operation::<ChatSendInput, ChatSent>(
                tool,
                "Send a draft",
                Annotations {
                    open_world_hint: true,
                    ..MUTATION
                },
                "Sends the draft to the provider; the reply streams into the conversation.",
            ),
        }
    }
}

/// Looks a tool up by name.
pub fn tool(name: &str) -> Option<ToolSpec> {
    Tool::from_name(name).map(Tool::spec)
}

/// The whole catalog as one JSON document: `tools` as `tools/list` gives them, and
/// `outputSchemas`, each tool's complete output schema by its name (the seed's contract; the
/// listing's are slimmer, to fit an agent's budget).
pub fn catalog_json() -> Value {
    let catalog = catalog();
    let complete: Map<String, Value> = catalog
        .iter()
        .map(|tool| {
            (
                tool.name.to_owned(),
                Value::Object(tool.output_schema.clone()),
            )
        })
        .collect();
    serde_json::json!({
        "controlApiVersion": crate::CONTROL_API_VERSION,
        "tools": catalog.iter().map(ToolSpec::to_json).collect::<Vec<_>>(),
        "outputSchemas": complete,
    })
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Tool {
    /// How the tool reaches the broker.
    pub fn kind(self) -> ToolKind {
        self.spec().kind
    }

    /// The name as the store keys receipts by it.
    pub fn tool_name(self) -> crate::ToolName {
        crate::ToolName(self.name().to_owned())
    }
}

impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Tool {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Tool::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("there is no tool {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The "ask me before" list reads as a list of different actions: no two tools share
    /// their words, and each starts with a capital, as a person's list item does.
    #[test]
    fn every_tool_has_its_own_plain_words() {
        let mut seen = std::collections::BTreeMap::new();
        for tool in Tool::ALL {
            let label = tool.label();
            assert!(
                label.starts_with(|c: char| c.is_uppercase()) && !label.contains("lomi_"),
                "{tool:?}: {label:?}"
            );
            if let Some(other) = seen.insert(label, tool) {
                panic!("{tool:?} and {other:?} both read {label:?}");
            }
        }
        for family in Family::ALL {
            assert!(!family.label().is_empty(), "{family:?}");
        }
    }

    #[test]
    fn every_tool_has_one_name_that_leads_back_to_it() {
        let mut names = std::collections::BTreeSet::new();
        for &tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool), "{tool:?}");
            assert!(names.insert(tool.name()), "{} is named twice", tool.name());
            assert_eq!(tool.spec().tool, tool);
            assert_eq!(tool.spec().name, tool.name());
        }
        assert_eq!(Tool::from_name("lomi_no_such_tool"), None);
        assert_eq!(catalog().len(), Tool::ALL.len());
    }

    #[test]
    fn a_tool_is_written_and_read_by_its_name() {
        let json = serde_json::to_value(Tool::BrowserNavigate).expect("serialize");
        assert_eq!(json, Value::from("lomi_browser_navigate"));
        let back: Tool = serde_json::from_value(json).expect("deserialize");
        assert_eq!(back, Tool::BrowserNavigate);
        let unknown = serde_json::from_value::<Tool>(Value::from("lomi_nothing"));
        assert!(unknown.is_err());
    }
}
