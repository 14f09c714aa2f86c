//! Tool calls by name: decode strictly, forward to the broker, wrap the answer in the
//! envelope. Tools hold no logic of their own.

use crate::Lomi;
use lomi_protocol::tools::NoArguments;
use lomi_protocol::tools::android::{
    AndroidAttachInput, AndroidCaptureInput, AndroidDetachInput, AndroidDevicesInput,
    AndroidInputInput, AndroidLaunchInput, AndroidShellInput, AndroidUiSnapshotInput,
};
use lomi_protocol::tools::browser::{
    BrowserCaptureInput, BrowserClickInput, BrowserCloseInput, BrowserCreateInput,
    BrowserDialogInput, BrowserEvaluateInput, BrowserHoverInput, BrowserLogInput,
    BrowserNavigateInput, BrowserPanelInput, BrowserPressInput, BrowserScrollInput,
    BrowserSelectInput, BrowserSnapshotInput, BrowserTabInput, BrowserTypeInput,
    BrowserUploadInput, SnapshotView,
};
use lomi_protocol::tools::editor::{
    EditorCloseInput, EditorEditInput, EditorOpenInput, EditorSaveInput, WorkspaceCloseInput,
};
use lomi_protocol::tools::files::{
    DirListInput, FileCreateInput, FileDeleteInput, FileReadInput, FileRenameInput, FileWriteInput,
};
use lomi_protocol::tools::git::{
    GitBranchInput, GitCommitInput, GitDiffInput, GitStageInput, GitStatusInput,
};
use lomi_protocol::tools::operations::{EventsReadInput, OperationCancelInput, OperationGetInput};
use lomi_protocol::tools::session::{ConnectInput, PanelListInput, WorkspaceUpdateInput};
use lomi_protocol::tools::terminal::{
    LeaseAcquireInput, LeaseReleaseInput, TerminalCloseInput, TerminalCreateInput,
    TerminalInputInput, TerminalInterruptInput, TerminalReadInput,
};
use lomi_protocol::{PairingId, Reply, ToolError, strict};
use serde::Serialize;
use serde_json::Value;

/// The answer to one tool call: the envelope as JSON, and whether it is an error.
pub struct Answer {
    pub envelope: Value,
    pub is_error: bool,
    pub summary: String,
    /// PNG images sent as MCP image blocks after the text block (captures).
    pub images: Vec<Vec<u8>>,
}

fn answer<T: Serialize>(result: Result<T, ToolError>) -> Answer {
    let reply = Reply::from_result(result);
    Answer {
        envelope: reply.to_value(),
        is_error: reply.is_error(),
        summary: reply.summary(),
        images: Vec::new(),
    }
}

/// The answer of a snapshot: its text block is the tree itself under one header line (JSON
/// escaping would make it longer and harder to read); structuredContent has every field.
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
            "snapshotId={} navigationId={} browserGeneration={} tabId={} refs={} truncated={}\nurl: {}\ntitle: {}\n",
            cut(&view.snapshot_id, 40),
            cut(&view.navigation_id, 40),
            cut(&view.browser_generation, 40),
            cut(&view.tab_id, 40),
            view.refs,
            view.truncated,
            cut(&view.url, 200),
            cut(&view.title, 120),
        );
        if let Some(dialog) = &view.dialog {
            header.push_str(&format!("dialog: {} {:?}\n", dialog.kind, cut(&dialog.message, 100)));
        }
        header + &view.text
    });
    let mut answered = answer(result);
    if let Some(text) = text {
        answered.summary = text;
    }
    answered
}

/// The answer of a capture: the envelope holds the metadata, the PNG goes in an image block.
fn answer_with_png<T: Serialize>(result: Result<(T, Vec<u8>), ToolError>) -> Answer {
    match result {
        Ok((value, png)) => Answer {
            images: vec![png],
            ..answer(Ok(value))
        },
        Err(error) => answer::<()>(Err(error)),
    }
}

/// The answer to a call whose caller could not be established.
pub fn refused(error: ToolError) -> Answer {
    answer::<()>(Err(error))
}

/// Calls `tool` for `caller` with the raw MCP arguments.
pub async fn call(lomi: &Lomi, caller: &PairingId, tool: &str, arguments: Option<Value>) -> Answer {
    let broker = &lomi.broker;
    let terminals = &lomi.terminals;
    let files = &lomi.files;
    let git = &lomi.git;
    let editor = &lomi.editor;
    let browsers = &lomi.browsers;
    let android = &lomi.android;
    // Until the person approves the pairing, every tool but the status one answers
    // PAIRING_REQUIRED, whatever its arguments.
    if tool != "lomi_pairing_status"
        && let Err(error) = broker.authorize(caller)
    {
        return answer::<()>(Err(error));
    }
    match tool {
        "lomi_pairing_status" => answer(
            strict::decode::<NoArguments>(tool, arguments)
                .and_then(|_| broker.pairing_status(caller)),
        ),
        "lomi_workspace_list" => answer(
            strict::decode::<NoArguments>(tool, arguments)
                .and_then(|_| broker.workspace_list(caller)),
        ),
        "lomi_panel_list" => answer(
            strict::decode::<PanelListInput>(tool, arguments)
                .and_then(|input| broker.panel_list(caller, &input)),
        ),
        "lomi_connect" => answer(
            strict::decode::<ConnectInput>(tool, arguments)
                .and_then(|input| broker.connect(caller, &input)),
        ),
        "lomi_workspace_update" => match strict::decode::<WorkspaceUpdateInput>(tool, arguments) {
            Ok(input) => answer(broker.workspace_update(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_operation_get" => answer(
            strict::decode::<OperationGetInput>(tool, arguments)
                .and_then(|input| broker.operation_get(caller, &input)),
        ),
        "lomi_operation_cancel" => match strict::decode::<OperationCancelInput>(tool, arguments) {
            Ok(input) => answer(broker.operation_cancel(caller, &input.operation_id).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_events_read" => answer(
            strict::decode::<EventsReadInput>(tool, arguments)
                .and_then(|input| broker.events_read(caller, &input)),
        ),
        "lomi_store_status" => answer(
            strict::decode::<NoArguments>(tool, arguments)
                .and_then(|_| broker.store_status(caller)),
        ),
        "lomi_terminal_create" => match strict::decode::<TerminalCreateInput>(tool, arguments) {
            Ok(input) => answer(terminals.create(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_lease_acquire" => answer(
            strict::decode::<LeaseAcquireInput>(tool, arguments)
                .and_then(|input| broker.lease_acquire(caller, &input.panel_id, &input.generation)),
        ),
        "lomi_lease_release" => answer(
            strict::decode::<LeaseReleaseInput>(tool, arguments)
                .and_then(|input| broker.lease_release(caller, &input.lease_id)),
        ),
        "lomi_terminal_input" => match strict::decode::<TerminalInputInput>(tool, arguments) {
            Ok(input) => answer(terminals.input(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_terminal_read" => match strict::decode::<TerminalReadInput>(tool, arguments) {
            Ok(input) => answer(terminals.read(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_terminal_interrupt" => {
            match strict::decode::<TerminalInterruptInput>(tool, arguments) {
                Ok(input) => answer(terminals.interrupt(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        "lomi_terminal_close" => match strict::decode::<TerminalCloseInput>(tool, arguments) {
            Ok(input) => answer(terminals.close(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_file_read" => answer(
            strict::decode::<FileReadInput>(tool, arguments)
                .and_then(|input| files.read(caller, &input)),
        ),
        "lomi_dir_list" => answer(
            strict::decode::<DirListInput>(tool, arguments)
                .and_then(|input| files.list(caller, &input)),
        ),
        "lomi_file_write" => match strict::decode::<FileWriteInput>(tool, arguments) {
            Ok(input) => answer(files.write(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_file_create" => match strict::decode::<FileCreateInput>(tool, arguments) {
            Ok(input) => answer(files.create(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_file_rename" => match strict::decode::<FileRenameInput>(tool, arguments) {
            Ok(input) => answer(files.rename(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_file_delete" => match strict::decode::<FileDeleteInput>(tool, arguments) {
            Ok(input) => answer(files.delete(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_git_status" => match strict::decode::<GitStatusInput>(tool, arguments) {
            Ok(input) => answer(git.status(caller, &input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_git_diff" => match strict::decode::<GitDiffInput>(tool, arguments) {
            Ok(input) => answer(git.diff(caller, &input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_git_stage" => match strict::decode::<GitStageInput>(tool, arguments) {
            Ok(input) => answer(git.stage(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_git_commit" => match strict::decode::<GitCommitInput>(tool, arguments) {
            Ok(input) => answer(git.commit(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_git_branch" => match strict::decode::<GitBranchInput>(tool, arguments) {
            Ok(input) => answer(git.branch(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_editor_open" => match strict::decode::<EditorOpenInput>(tool, arguments) {
            Ok(input) => answer(editor.open(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_editor_edit" => answer(
            strict::decode::<EditorEditInput>(tool, arguments)
                .and_then(|input| editor.edit(caller, &input)),
        ),
        "lomi_editor_save" => match strict::decode::<EditorSaveInput>(tool, arguments) {
            Ok(input) => answer(editor.save(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_editor_close" => answer(
            strict::decode::<EditorCloseInput>(tool, arguments)
                .and_then(|input| editor.close(caller, &input)),
        ),
        "lomi_workspace_close" => match strict::decode::<WorkspaceCloseInput>(tool, arguments) {
            Ok(input) => answer(editor.workspace_close(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_android_devices" => match strict::decode::<AndroidDevicesInput>(tool, arguments) {
            Ok(input) => answer(android.devices(caller, &input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_android_attach" => match strict::decode::<AndroidAttachInput>(tool, arguments) {
            Ok(input) => answer(android.attach(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_android_detach" => match strict::decode::<AndroidDetachInput>(tool, arguments) {
            Ok(input) => answer(android.detach(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_android_launch" => match strict::decode::<AndroidLaunchInput>(tool, arguments) {
            Ok(input) => answer(android.launch(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_android_input" => match strict::decode::<AndroidInputInput>(tool, arguments) {
            Ok(input) => answer(android.input(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_android_ui_snapshot" => {
            match strict::decode::<AndroidUiSnapshotInput>(tool, arguments) {
                Ok(input) => answer(android.ui_snapshot(caller, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        "lomi_android_capture" => match strict::decode::<AndroidCaptureInput>(tool, arguments) {
            Ok(input) => answer_with_png(android.capture(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_android_shell" => match strict::decode::<AndroidShellInput>(tool, arguments) {
            Ok(input) => answer(android.shell(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_create" => match strict::decode::<BrowserCreateInput>(tool, arguments) {
            Ok(input) => answer(browsers.create(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_navigate" => match strict::decode::<BrowserNavigateInput>(tool, arguments) {
            Ok(input) => answer(browsers.navigate(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_snapshot" => match strict::decode::<BrowserSnapshotInput>(tool, arguments) {
            Ok(input) => answer_snapshot(browsers.snapshot(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_click" => match strict::decode::<BrowserClickInput>(tool, arguments) {
            Ok(input) => answer(browsers.click(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_type" => match strict::decode::<BrowserTypeInput>(tool, arguments) {
            Ok(input) => answer(browsers.type_text(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_press" => match strict::decode::<BrowserPressInput>(tool, arguments) {
            Ok(input) => answer(browsers.press(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_select" => match strict::decode::<BrowserSelectInput>(tool, arguments) {
            Ok(input) => answer(browsers.select(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_hover" => match strict::decode::<BrowserHoverInput>(tool, arguments) {
            Ok(input) => answer(browsers.hover(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_scroll" => match strict::decode::<BrowserScrollInput>(tool, arguments) {
            Ok(input) => answer(browsers.scroll(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_upload" => match strict::decode::<BrowserUploadInput>(tool, arguments) {
            Ok(input) => answer(browsers.upload(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_dialog" => match strict::decode::<BrowserDialogInput>(tool, arguments) {
            Ok(input) => answer(browsers.dialog(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_tab_list" => match strict::decode::<BrowserPanelInput>(tool, arguments) {
            Ok(input) => answer(browsers.tab_list(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_tab_open" | "lomi_browser_tab_switch" | "lomi_browser_tab_close" => {
            let name = match tool {
                "lomi_browser_tab_open" => "lomi_browser_tab_open",
                "lomi_browser_tab_switch" => "lomi_browser_tab_switch",
                _ => "lomi_browser_tab_close",
            };
            match strict::decode::<BrowserTabInput>(tool, arguments) {
                Ok(input) => answer(browsers.tab(caller, name, input).await),
                Err(error) => answer::<()>(Err(error)),
            }
        }
        "lomi_browser_console" => answer(
            strict::decode::<BrowserLogInput>(tool, arguments)
                .and_then(|input| browsers.console(caller, &input)),
        ),
        "lomi_browser_network" => answer(
            strict::decode::<BrowserLogInput>(tool, arguments)
                .and_then(|input| browsers.network(caller, &input)),
        ),
        "lomi_browser_evaluate" => match strict::decode::<BrowserEvaluateInput>(tool, arguments) {
            Ok(input) => answer(browsers.evaluate(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_capture" => match strict::decode::<BrowserCaptureInput>(tool, arguments) {
            Ok(input) => answer_with_png(browsers.capture(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        "lomi_browser_close" => match strict::decode::<BrowserCloseInput>(tool, arguments) {
            Ok(input) => answer(browsers.close(caller, input).await),
            Err(error) => answer::<()>(Err(error)),
        },
        other => answer::<()>(Err(ToolError::invalid(format!(
            "there is no tool {other:?}; see tools/list or `lomi catalog`"
        )))),
    }
}
