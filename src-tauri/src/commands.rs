//! The window's commands: one-line forwards to the broker's control API (the same requests the
//! `lomi` command sends over the local socket), and terminal streams over Tauri channels.

use lomi_mcp::control::{self, ControlRequest};
use lomi_protocol::control::{AppInfo, BrowserViewMessage};
use lomi_protocol::tools::editor::{DocumentEvent, DocumentFeedMessage, FeedLagged};
use lomi_protocol::{DocumentId, PanelId, ProjectId, WorkspaceId};
use serde_json::Value;
use tauri::ipc::{Channel, InvokeResponseBody};
use tauri::{Manager, State};

use crate::Desktop;

/// How much earlier output a panel replays when it opens, so the person sees the screen.
const REPLAY_BYTES: u64 = 256 * 1024;

/// The JPEG quality of a browser panel's view: enough to read a page, light to send.
const BROWSER_VIEW_QUALITY: u8 = 70;

/// One control request; the answer is the envelope (`status` ok or error). Async, for a Chat
/// send that waits for the provider; it takes the app handle, not a borrowed `State`, so that
/// it can answer the envelope itself rather than a `Result`.
#[tauri::command]
pub async fn control(app: tauri::AppHandle, request: ControlRequest) -> Value {
    let desktop = app.state::<Desktop>();
    control::answer(&desktop.lomi, &desktop.front, request).await
}

/// Where this Lomi listens and keeps its data (for the client configs in Settings).
#[tauri::command]
pub fn app_info(desktop: State<'_, Desktop>) -> AppInfo {
    AppInfo {
        url: desktop.front.http_url.clone(),
        data_dir: desktop.data_dir.display().to_string(),
        broker_instance_id: desktop.broker().instance_id().clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// Streams the window's overview (pairings, decisions, workspaces, feed): all of it once, then
/// the parts that changed.
#[tauri::command]
pub fn watch(desktop: State<'_, Desktop>, channel: Channel<lomi_protocol::control::Overview>) {
    crate::watch::overview(desktop.lomi.clone(), desktop.front.clone(), channel);
}

/// How many times the overview's parts were read and how many messages went to the window
/// since Lomi started (`overview_stats`): the desktop test checks that both stay still while
/// nothing changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OverviewStats {
    pub reads: u64,
    pub messages: u64,
}

#[tauri::command]
pub fn overview_stats() -> OverviewStats {
    use std::sync::atomic::Ordering;
    OverviewStats {
        reads: crate::watch::OVERVIEW_READS.load(Ordering::Relaxed),
        messages: crate::watch::OVERVIEW_MESSAGES.load(Ordering::Relaxed),
    }
}

/// Streams a terminal panel's output (raw bytes) until the panel ends or the window drops the
/// channel. Answers false when the panel has no terminal running.
#[tauri::command]
pub fn terminal_attach(
    desktop: State<'_, Desktop>,
    panel_id: PanelId,
    channel: Channel<InvokeResponseBody>,
) -> bool {
    let Some(runtime) = desktop.lomi.terminals.runtime_for_person(&panel_id) else {
        return false;
    };
    tauri::async_runtime::spawn(async move {
        let terminal = runtime.terminal;
        let mut progress = terminal.progress();
        let mut cursor = terminal.output_cursor().saturating_sub(REPLAY_BYTES);
        loop {
            loop {
                let output = terminal.output_since(cursor, 64 * 1024);
                if !output.bytes.is_empty()
                    && channel
                        .send(InvokeResponseBody::Raw(output.bytes.to_vec()))
                        .is_err()
                {
                    return;
                }
                cursor = output.end;
                if !output.more {
                    break;
                }
            }
            if terminal.exit_status().is_some() || progress.changed().await.is_err() {
                return;
            }
        }
    });
    true
}

/// The person typed in a terminal panel: a takeover (every agent's lease on it ends), then the
/// keystrokes go to the terminal. Answers why it could not, or nothing. (It takes the app
/// handle, not `State`, so the async command may answer without a `Result`.)
#[tauri::command]
pub async fn terminal_input(
    app: tauri::AppHandle,
    panel_id: PanelId,
    data: String,
) -> Option<String> {
    use tauri::Manager;
    let desktop = app.state::<Desktop>();
    let Some(runtime) = desktop.lomi.terminals.runtime_for_person(&panel_id) else {
        return Some(format!("panel {panel_id} has no terminal running"));
    };
    desktop.broker().takeover(&panel_id);
    runtime
        .terminal
        .write(data.as_bytes())
        .await
        .err()
        .map(|e| e.to_string())
}

/// The latest capture an agent took of an Android panel (PNG bytes), for the panel's view.
#[tauri::command]
pub fn android_capture(
    desktop: State<'_, Desktop>,
    panel_id: PanelId,
) -> Result<tauri::ipc::Response, String> {
    desktop
        .lomi
        .android
        .latest_capture(&panel_id)
        .map(|capture| tauri::ipc::Response::new(capture.png.as_ref().clone()))
        .ok_or_else(|| format!("no capture of panel {panel_id} yet"))
}

/// Streams a browser panel's view — its active tab's address and title and JPEG frames of the
/// viewport as Chromium paints them (a screencast: a still page sends nothing) — until the
/// panel's browser ends (then `{"ended": true}`) or the window drops the channel. Answers
/// false when the panel has no browser running.
#[tauri::command]
pub fn browser_watch(
    desktop: State<'_, Desktop>,
    panel_id: PanelId,
    channel: Channel<BrowserViewMessage>,
) -> bool {
    let browsers = desktop.lomi.browsers.clone();
    if !browsers.runs(&panel_id) {
        return false;
    }
    let (views_tx, mut views) = tokio::sync::mpsc::channel(4);
    tauri::async_runtime::spawn(async move {
        browsers
            .watch_view(&panel_id, BROWSER_VIEW_QUALITY, &views_tx)
            .await;
    });
    tauri::async_runtime::spawn(async move {
        while let Some(view) = views.recv().await {
            if channel.send(BrowserViewMessage::View(view)).is_err() {
                return;
            }
        }
        // The watch ended: the panel's browser is gone.
        if let Err(error) = channel.send(BrowserViewMessage::ENDED) {
            tracing::debug!("browser view: {error}");
        }
    });
    true
}

/// Streams an open document's changes (an agent's edit, the person's, a save, its close) as
/// they happen, in `bufferRevision` order. Subscribes first, then answers the document as it
/// stands, so the window misses nothing between the two; a `{"kind":"lagged"}` event means
/// the window fell behind and must read the document again.
#[tauri::command]
pub async fn document_watch(
    app: tauri::AppHandle,
    document_id: DocumentId,
    watch_id: String,
    channel: Channel<DocumentFeedMessage>,
) -> Value {
    let desktop = app.state::<Desktop>();
    let editor = desktop.lomi.editor.clone();
    let mut feed = editor.documents().subscribe();
    let reply = lomi_protocol::Reply::from_result(editor.document_for_person(&document_id).await)
        .to_value();
    let watched = document_id.clone();
    let follower = tauri::async_runtime::spawn(async move {
        loop {
            let event = match feed.recv().await {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    let lagged = DocumentFeedMessage::Lagged(FeedLagged::Lagged);
                    if channel.send(lagged).is_err() {
                        return;
                    }
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if event.document_id() != &document_id {
                continue;
            }
            let closed = matches!(event, DocumentEvent::Closed { .. });
            if channel.send(DocumentFeedMessage::Event(event)).is_err() || closed {
                return;
            }
        }
    });
    let mut watches = desktop
        .document_watches
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    watches.retain(|_, (_, follower)| !follower.inner().is_finished());
    if let Some((_, previous)) = watches.insert(watched, (watch_id, follower)) {
        previous.abort();
    }
    reply
}

/// Follows a project's file tree: `channel` gets the project-relative directories that
/// changed (`files_follow` adds directories). Replaces the project's previous watch.
/// Async, so the watch starts on Lomi's Tokio runtime.
#[tauri::command]
pub async fn files_watch(
    app: tauri::AppHandle,
    workspace_id: WorkspaceId,
    project_id: ProjectId,
    watch_id: String,
    channel: Channel<Vec<String>>,
) -> Result<(), String> {
    let desktop = app.state::<Desktop>();
    let (_, root) = desktop
        .broker()
        .project_root_for_person(&workspace_id, Some(&project_id))
        .map_err(|e| e.message)?;
    let watch = lomi_files::watch::TreeWatch::start(&root, move |dirs| channel.send(dirs).is_ok())
        .map_err(|e| format!("cannot watch {}: {e}", root.display()))?;
    let mut watches = desktop
        .tree_watches
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    watches.insert(project_id, (watch_id, watch));
    Ok(())
}

/// Adds a directory the person expanded to its project's watch.
#[tauri::command]
pub fn files_follow(
    desktop: State<'_, Desktop>,
    project_id: ProjectId,
    path: String,
) -> Result<(), String> {
    let watches = desktop
        .tree_watches
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let (_, watch) = watches
        .get(&project_id)
        .ok_or_else(|| format!("project {project_id} is not watched; call files_watch first"))?;
    watch.follow(&path).map_err(|e| e.to_string())
}

/// The window stopped showing a project's tree: its watch `watch_id` ends (not a newer one
/// the window started meanwhile).
#[tauri::command]
pub fn files_unwatch(desktop: State<'_, Desktop>, project_id: ProjectId, watch_id: String) {
    let mut watches = desktop
        .tree_watches
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if watches
        .get(&project_id)
        .is_some_and(|(id, _)| id == &watch_id)
    {
        watches.remove(&project_id);
    }
}

/// The window stopped showing a document: its follower `watch_id` ends (the document stays
/// open, and a newer follower the window started meanwhile stays).
#[tauri::command]
pub fn document_unwatch(desktop: State<'_, Desktop>, document_id: DocumentId, watch_id: String) {
    let mut watches = desktop
        .document_watches
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if watches
        .get(&document_id)
        .is_some_and(|(id, _)| id == &watch_id)
        && let Some((_, follower)) = watches.remove(&document_id)
    {
        follower.abort();
    }
}
