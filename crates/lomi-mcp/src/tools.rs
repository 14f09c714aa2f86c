//! Tool calls by name: decode strictly, forward to the broker, wrap the answer in the
//! envelope. Tools hold no logic of their own.

use crate::Lomi;
use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use lomi_protocol::tools::NoArguments;
use lomi_protocol::tools::android::{
    AndroidAppsInput, AndroidInstallInput, AndroidLogcatInput, AndroidOpenUrlInput,
    AndroidOrientationInput, AndroidPackageInput, AndroidPullInput, AndroidPushInput,
    AndroidRotateInput,
};
use lomi_protocol::tools::android::{
    AndroidAttachInput, AndroidCaptureInput, AndroidDevicesInput, AndroidInputInput,
    AndroidLaunchInput, AndroidShellInput, AndroidUiSnapshotInput,
};
use lomi_protocol::tools::browser::{
    BrowserCaptureInput, BrowserClickInput, BrowserCreateInput, BrowserDialogInput,
    BrowserEvaluateInput, BrowserHoverInput, BrowserLogInput, BrowserNavigateInput,
    BrowserPanelInput, BrowserPressInput, BrowserScrollInput, BrowserSelectInput,
    BrowserSnapshotInput, BrowserTabInput, BrowserTypeInput, BrowserUploadInput, BrowserWaitInput,
    SnapshotView,
};
use lomi_protocol::tools::browser::{
    BrowserDragInput, BrowserEmulateInput, BrowserFillInput, BrowserNetworkBodyInput,
    BrowserPdfInput,
};
use lomi_protocol::tools::capture::{AndroidCaptureSetInput, BrowserCaptureSetInput};
use lomi_protocol::tools::chat::{
    ChatCreateInput, ChatDraftUpdateInput, ChatGetInput, ChatListInput, ChatSendInput,
};
use lomi_protocol::tools::editor::{
    EditorCloseInput, EditorEditInput, EditorOpenInput, EditorSaveInput, WorkspaceCloseInput,
};
use lomi_protocol::tools::files::{
    DirCreateInput, DirListInput, FileCreateInput, FileDeleteInput, FileReadInput, FileRenameInput,
    FileWriteInput,
};
use lomi_protocol::tools::git::{
    GitBranchInput, GitCommitInput, GitDiffInput, GitStageInput, GitStatusInput,
};
use lomi_protocol::tools::operations::{EventsReadInput, OperationCancelInput, OperationGetInput};
use lomi_protocol::tools::session::{
    ConnectInput, PanelCloseInput, PanelListInput, WorkspaceUpdateInput,
};
use lomi_protocol::tools::settings::{SettingsGetInput, SettingsUpdateInput};
use lomi_protocol::tools::terminal::{
    LeaseAcquireInput, LeaseReleaseInput, TerminalCreateInput, TerminalInputInput,
    TerminalInterruptInput, TerminalReadInput,
};
use lomi_protocol::{MAX_ANSWER_BYTES, PairingId, Reply, Tool as LomiTool, ToolError, strict};
use serde::Serialize;
use serde_json::Value;

/// The answer to one tool call: the envelope as JSON, and whether it is an error.
pub struct Answer {
    pub envelope: Value,
    pub is_error: bool,
    pub summary: String,
    /// What the text block says instead of `summary` when that is too large to send beside
    /// structuredContent (a snapshot's header); by default, the fields it has.
    pub brief: Option<String>,
    /// PNG images sent as MCP image blocks after the text block (captures).
    pub images: Vec<Vec<u8>>,
}

fn answer<T: Serialize>(result: Result<T, ToolError>) -> Answer {
    let reply = Reply::from_result(result);
    Answer {
        envelope: reply.to_value(),
        is_error: reply.is_error(),
        summary: reply.summary(),
        brief: None,
        images: Vec::new(),
    }
}

/// The answer of a snapshot: its text block is the tree itself under a header (JSON escaping
/// would make it longer and harder to read), or the header alone when the tree is too large
/// to send twice; structuredContent has every field.
fn answer_snapshot(result: Result<SnapshotView, ToolError>) -> Answer {
    // Kept within the room the snapshot leaves for it (SNAPSHOT_HEADER_BYTES).
    fn cut(text: &str, max: usize) -> String {
        match text.char_indices().nth(max) {
            Some((end, _)) => format!("{}…", &text[..end]),
            None => text.to_owned(),
        }
    }
    let text = result.as_ref().ok().map(|view| {
        let mut header = format!(
            "snapshotId={} navigationId={} browserGeneration={} tabId={} refs={} lines={} truncated={}\nurl: {}\ntitle: {}\n",
            cut(&view.snapshot_id, 40),
            cut(&view.navigation_id, 40),
            cut(&view.browser_generation, 40),
            cut(&view.tab_id, 40),
            view.refs,
            view.lines,
            view.truncated,
            cut(&view.url, 200),
            cut(&view.title, 120),
        );
        if let Some(dialog) = &view.dialog {
            header.push_str(&format!("dialog: {} {:?}\n", dialog.kind, cut(&dialog.message, 100)));
        }
        if view.loading {
            header.push_str(
                "loading: the page is still loading, so this tree may be empty or partial; wait with lomi_browser_wait (networkIdle, or the text you expect), or snapshot again\n",
            );
        }
        (header.clone() + &view.text, header)
    });
    let mut answered = answer(result);
    if let Some((text, header)) = text {
        answered.summary = text;
        answered.brief = Some(header);
    }
    answered
}

/// The answer of a capture: the envelope holds the metadata, the PNG goes in an image block.
fn answer_with_png<T: Serialize>(result: Result<(T, Vec<u8>), ToolError>) -> Answer {
    match result {
        // A capture too large for the answer was saved and is not sent (the view says so).
        Ok((value, png)) => Answer {
            images: if png.is_empty() {
                Vec::new()
            } else {
                vec![png]
            },
            ..answer(Ok(value))
        },
        Err(error) => answer::<()>(Err(error)),
    }
}

/// How large a text block may be and still repeat structuredContent in full. Clients such as
/// Claude Code and VS Code give their model structuredContent; others read the text block: a
/// small answer is in both, a large one is sent once, in structuredContent, with a short text.
const TEXT_REPEAT_LIMIT: usize = 8 * 1024;

impl Answer {
    /// The MCP tool result: a text block, the images, structuredContent and isError, within
    /// [`MAX_ANSWER_BYTES`] on the wire. An answer that would be larger (a read asked for more
    /// than a client accepts) is refused with what to ask for instead.
    pub fn into_result(self) -> Value {
        let Answer {
            envelope,
            is_error,
            summary,
            brief,
            images,
        } = self;
        let text = if summary.len() <= TEXT_REPEAT_LIMIT || is_error {
            summary
        } else {
            let fields = envelope["data"]
                .as_object()
                .map(|data| data.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            format!(
                "{}(The whole answer, {} bytes, is this result's structuredContent; data has: {fields}.)",
                brief.unwrap_or_default(),
                summary.len()
            )
        };
        let mut content = vec![serde_json::json!({"type": "text", "text": text})];
        content.extend(images.iter().map(|png| {
            serde_json::json!({"type": "image", "mimeType": "image/png", "data": BASE64_STANDARD.encode(png)})
        }));
        let result = serde_json::json!({
            "content": content,
            "structuredContent": envelope,
            "isError": is_error,
        });
        let size = serde_json::to_vec(&result).map_or(0, |bytes| bytes.len());
        if size <= MAX_ANSWER_BYTES {
            return result;
        }
        let refusal = answer::<()>(Err(ToolError::invalid(format!(
            "this answer would be {size} bytes, over the {MAX_ANSWER_BYTES} a standard MCP client accepts in one message; \
             ask for less (a smaller maxBytes or limit, a narrower range or find), or save it into the project where the tool can"
        ))));
        refusal.into_result()
    }
}

/// The answer to a call whose caller could not be established.
pub fn refused(error: ToolError) -> Answer {
    answer::<()>(Err(error))
}

/// Calls the tool named `name` for `caller` with the raw MCP arguments.
pub async fn call(lomi: &Lomi, caller: &PairingId, name: &str, arguments: Option<Value>) -> Answer {
    let Some(tool) = LomiTool::from_name(name) else {
        return answer::<()>(Err(ToolError::invalid(format!(
            "there is no tool {name:?}; see tools/list or `lomi catalog`"
        ))));
    };
    let broker = &lomi.broker;
    let terminals = &lomi.terminals;
    let files = &lomi.files;
    let git = &lomi.git;
    let editor = &lomi.editor;
    let browsers = &lomi.browsers;
    let android = &lomi.android;
    // Until the person approves the pairing, every tool but the status one answers
    // PAIRING_REQUIRED, whatever its arguments.
    if tool != LomiTool::PairingStatus
        && let Err(error) = broker.authorize(caller)
    {
        return answer::<()>(Err(error));
    }
    match tool {
        LomiTool::PairingStatus => answer(
            strict::decode::<NoArguments>(name, arguments)
                .and_then(|_| broker.pairing_status(caller)),
        ),
        LomiTool::WorkspaceList => answer(
            strict::decode::<NoArguments>(name, arguments)
                .and_then(|_| broker.workspace_list(caller)),
        ),
        LomiTool::PanelList => answer(
            strict::decode::<PanelListInput>(name, arguments)
                .and_then(|input| broker.panel_list(caller, &input)),
        ),
        LomiTool::Connect => answer(
            strict::decode::<ConnectInput>(name, arguments)
                .and_then(|input| broker.connect(caller, &input)),
        ),
        LomiTool::WorkspaceUpdate => {
            match strict::decode::<WorkspaceUpdateInput>(name, arguments) {
                Ok(input) => answer(broker.workspace_update(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::OperationGet => answer(
            strict::decode::<OperationGetInput>(name, arguments)
                .and_then(|input| broker.operation_get(caller, &input)),
        ),
        LomiTool::OperationCancel => {
            match strict::decode::<OperationCancelInput>(name, arguments) {
                Ok(input) => answer(broker.operation_cancel(caller, &input.operation_id).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::EventsRead => answer(
            strict::decode::<EventsReadInput>(name, arguments)
                .and_then(|input| broker.events_read(caller, &input)),
        ),
        LomiTool::SettingsGet => answer(
            strict::decode::<SettingsGetInput>(name, arguments)
                .and_then(|input| broker.settings_get(caller, &input)),
        ),
        LomiTool::SettingsUpdate => match strict::decode::<SettingsUpdateInput>(name, arguments) {
            Ok(input) => answer(broker.settings_update(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::ChatList => answer(
            strict::decode::<ChatListInput>(name, arguments)
                .and_then(|input| broker.chat_list(caller, &input)),
        ),
        LomiTool::ChatGet => answer(
            strict::decode::<ChatGetInput>(name, arguments)
                .and_then(|input| broker.chat_get(Some(caller), &input)),
        ),
        LomiTool::ChatCreate => match strict::decode::<ChatCreateInput>(name, arguments) {
            Ok(input) => answer(broker.chat_create(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::ChatDraftUpdate => {
            match strict::decode::<ChatDraftUpdateInput>(name, arguments) {
                Ok(input) => answer(broker.chat_draft_update(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::ChatSend => match strict::decode::<ChatSendInput>(name, arguments) {
            Ok(input) => answer(lomi.chat.send(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::StoreStatus => answer(
            strict::decode::<NoArguments>(name, arguments)
                .and_then(|_| broker.store_status(caller)),
        ),
        LomiTool::TerminalCreate => match strict::decode::<TerminalCreateInput>(name, arguments) {
            Ok(input) => answer(terminals.create(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::LeaseAcquire => answer(
            strict::decode::<LeaseAcquireInput>(name, arguments)
                .and_then(|input| broker.lease_acquire(caller, &input.panel_id, &input.generation)),
        ),
        LomiTool::LeaseRelease => answer(
            strict::decode::<LeaseReleaseInput>(name, arguments)
                .and_then(|input| broker.lease_release(caller, &input.lease_id)),
        ),
        LomiTool::TerminalInput => match strict::decode::<TerminalInputInput>(name, arguments) {
            Ok(input) => answer(terminals.input(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::TerminalRead => match strict::decode::<TerminalReadInput>(name, arguments) {
            Ok(input) => answer(terminals.read(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::TerminalInterrupt => {
            match strict::decode::<TerminalInterruptInput>(name, arguments) {
                Ok(input) => answer(terminals.interrupt(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::TerminalClose => match strict::decode::<PanelCloseInput>(name, arguments) {
            Ok(input) => answer(terminals.close(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::FileRead => answer(
            strict::decode::<FileReadInput>(name, arguments)
                .and_then(|input| files.read(caller, &input)),
        ),
        LomiTool::DirList => answer(
            strict::decode::<DirListInput>(name, arguments)
                .and_then(|input| files.list(caller, &input)),
        ),
        LomiTool::FileWrite => match strict::decode::<FileWriteInput>(name, arguments) {
            Ok(input) => answer(files.write(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::FileCreate => match strict::decode::<FileCreateInput>(name, arguments) {
            Ok(input) => answer(files.create(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::FileRename => match strict::decode::<FileRenameInput>(name, arguments) {
            Ok(input) => answer(files.rename(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::DirCreate => match strict::decode::<DirCreateInput>(name, arguments) {
            Ok(input) => answer(files.create_dir(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::FileDelete => match strict::decode::<FileDeleteInput>(name, arguments) {
            Ok(input) => answer(files.delete(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::GitStatus => match strict::decode::<GitStatusInput>(name, arguments) {
            Ok(input) => answer(git.status(caller, &input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::GitDiff => match strict::decode::<GitDiffInput>(name, arguments) {
            Ok(input) => answer(git.diff(caller, &input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::GitStage => match strict::decode::<GitStageInput>(name, arguments) {
            Ok(input) => answer(git.stage(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::GitCommit => match strict::decode::<GitCommitInput>(name, arguments) {
            Ok(input) => answer(git.commit(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::GitBranch => match strict::decode::<GitBranchInput>(name, arguments) {
            Ok(input) => answer(git.branch(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::EditorOpen => match strict::decode::<EditorOpenInput>(name, arguments) {
            Ok(input) => answer(editor.open(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::EditorEdit => answer(
            strict::decode::<EditorEditInput>(name, arguments)
                .and_then(|input| editor.edit(caller, &input)),
        ),
        LomiTool::EditorSave => match strict::decode::<EditorSaveInput>(name, arguments) {
            Ok(input) => answer(editor.save(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::EditorClose => answer(
            strict::decode::<EditorCloseInput>(name, arguments)
                .and_then(|input| editor.close(caller, &input)),
        ),
        LomiTool::WorkspaceClose => match strict::decode::<WorkspaceCloseInput>(name, arguments) {
            Ok(input) => answer(editor.workspace_close(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidDevices => match strict::decode::<AndroidDevicesInput>(name, arguments) {
            Ok(input) => answer(android.devices(caller, &input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidAttach => match strict::decode::<AndroidAttachInput>(name, arguments) {
            Ok(input) => answer(android.attach(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidDetach => match strict::decode::<PanelCloseInput>(name, arguments) {
            Ok(input) => answer(android.detach(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidLaunch => match strict::decode::<AndroidLaunchInput>(name, arguments) {
            Ok(input) => answer(android.launch(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidInput => match strict::decode::<AndroidInputInput>(name, arguments) {
            Ok(input) => answer(android.input(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidUiSnapshot => {
            match strict::decode::<AndroidUiSnapshotInput>(name, arguments) {
                Ok(input) => answer(android.ui_snapshot(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::AndroidCapture => match strict::decode::<AndroidCaptureInput>(name, arguments) {
            Ok(input) => answer_with_png(android.capture(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidShell => match strict::decode::<AndroidShellInput>(name, arguments) {
            Ok(input) => answer(android.shell(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidPush => match strict::decode::<AndroidPushInput>(name, arguments) {
            Ok(input) => answer(android.push(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidPull => match strict::decode::<AndroidPullInput>(name, arguments) {
            Ok(input) => answer(android.pull(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidInstall => match strict::decode::<AndroidInstallInput>(name, arguments) {
            Ok(input) => answer(android.install(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidUninstall => {
            match strict::decode::<AndroidPackageInput>(name, arguments) {
                Ok(input) => answer(android.uninstall(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::AndroidApps => match strict::decode::<AndroidAppsInput>(name, arguments) {
            Ok(input) => answer(android.apps(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidStop => match strict::decode::<AndroidPackageInput>(name, arguments) {
            Ok(input) => answer(android.stop(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidOpenUrl => match strict::decode::<AndroidOpenUrlInput>(name, arguments) {
            Ok(input) => answer(android.open_url(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidLogcat => match strict::decode::<AndroidLogcatInput>(name, arguments) {
            Ok(input) => answer(android.logcat(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidOrientation => {
            match strict::decode::<AndroidOrientationInput>(name, arguments) {
                Ok(input) => answer(android.orientation(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::AndroidRotate => match strict::decode::<AndroidRotateInput>(name, arguments) {
            Ok(input) => answer(android.rotate(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::AndroidCaptureSet => {
            match strict::decode::<AndroidCaptureSetInput>(name, arguments) {
                Ok(input) => answer(android.capture_set(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::BrowserCreate => match strict::decode::<BrowserCreateInput>(name, arguments) {
            Ok(input) => answer(browsers.create(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserNavigate => {
            match strict::decode::<BrowserNavigateInput>(name, arguments) {
                Ok(input) => answer(browsers.navigate(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::BrowserSnapshot => {
            match strict::decode::<BrowserSnapshotInput>(name, arguments) {
                Ok(input) => answer_snapshot(browsers.snapshot(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::BrowserWait => match strict::decode::<BrowserWaitInput>(name, arguments) {
            Ok(input) => answer(browsers.wait(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserClick => match strict::decode::<BrowserClickInput>(name, arguments) {
            Ok(input) => answer(browsers.click(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserType => match strict::decode::<BrowserTypeInput>(name, arguments) {
            Ok(input) => answer(browsers.type_text(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserPress => match strict::decode::<BrowserPressInput>(name, arguments) {
            Ok(input) => answer(browsers.press(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserSelect => match strict::decode::<BrowserSelectInput>(name, arguments) {
            Ok(input) => answer(browsers.select(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserHover => match strict::decode::<BrowserHoverInput>(name, arguments) {
            Ok(input) => answer(browsers.hover(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserScroll => match strict::decode::<BrowserScrollInput>(name, arguments) {
            Ok(input) => answer(browsers.scroll(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserUpload => match strict::decode::<BrowserUploadInput>(name, arguments) {
            Ok(input) => answer(browsers.upload(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserDialog => match strict::decode::<BrowserDialogInput>(name, arguments) {
            Ok(input) => answer(browsers.dialog(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserTabList => match strict::decode::<BrowserPanelInput>(name, arguments) {
            Ok(input) => answer(browsers.tab_list(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserTabOpen | LomiTool::BrowserTabSwitch | LomiTool::BrowserTabClose => {
            match strict::decode::<BrowserTabInput>(name, arguments) {
                Ok(input) => answer(browsers.tab(caller, tool, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::BrowserConsole => answer(
            strict::decode::<BrowserLogInput>(name, arguments)
                .and_then(|input| browsers.console(caller, &input)),
        ),
        LomiTool::BrowserNetwork => answer(
            strict::decode::<BrowserLogInput>(name, arguments)
                .and_then(|input| browsers.network(caller, &input)),
        ),
        LomiTool::BrowserEvaluate => {
            match strict::decode::<BrowserEvaluateInput>(name, arguments) {
                Ok(input) => answer(browsers.evaluate(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::BrowserCapture => match strict::decode::<BrowserCaptureInput>(name, arguments) {
            Ok(input) => answer_with_png(browsers.capture(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserDrag => match strict::decode::<BrowserDragInput>(name, arguments) {
            Ok(input) => answer(browsers.drag(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserFill => match strict::decode::<BrowserFillInput>(name, arguments) {
            Ok(input) => answer(browsers.fill(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserEmulate => match strict::decode::<BrowserEmulateInput>(name, arguments) {
            Ok(input) => answer(browsers.emulate(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserCaptureSet => {
            match strict::decode::<BrowserCaptureSetInput>(name, arguments) {
                Ok(input) => answer(browsers.capture_set(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::BrowserPdf => match strict::decode::<BrowserPdfInput>(name, arguments) {
            Ok(input) => answer(browsers.pdf(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        LomiTool::BrowserNetworkBody => {
            match strict::decode::<BrowserNetworkBodyInput>(name, arguments) {
                Ok(input) => answer(browsers.network_body(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        LomiTool::BrowserClose => match strict::decode::<PanelCloseInput>(name, arguments) {
            Ok(input) => answer(browsers.close(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
    }
}
