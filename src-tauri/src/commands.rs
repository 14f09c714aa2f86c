//! The window's commands: one-line forwards to the broker's control API (the same requests the
//! `lomi` command sends over the local socket), and terminal streams over Tauri channels.

use lomi_mcp::control::{self, ControlRequest};
use lomi_protocol::PanelId;
use serde_json::{Value, json};
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
pub fn app_info(desktop: State<'_, Desktop>) -> Value {
    json!({
        "url": desktop.front.http_url,
        "dataDir": desktop.data_dir,
        "brokerInstanceId": desktop.broker().instance_id(),
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// Streams the window's overview (pairings, decisions, workspaces, feed): all of it once, then
/// the parts that changed.
#[tauri::command]
pub fn watch(desktop: State<'_, Desktop>, channel: Channel<Value>) {
    crate::watch::overview(desktop.lomi.clone(), desktop.front.clone(), channel);
}

/// How many times the overview's parts were read and how many messages went to the window
/// since Lomi started: a test checks that both stay still while nothing changes.
#[tauri::command]
pub fn overview_stats() -> Value {
    use std::sync::atomic::Ordering;
    json!({
        "reads": crate::watch::OVERVIEW_READS.load(Ordering::Relaxed),
        "messages": crate::watch::OVERVIEW_MESSAGES.load(Ordering::Relaxed),
    })
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
    channel: Channel<Value>,
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
            if channel.send(json!(view)).is_err() {
                return;
            }
        }
        // The watch ended: the panel's browser is gone.
        if let Err(error) = channel.send(json!({ "ended": true })) {
            tracing::debug!("browser view: {error}");
        }
    });
    true
}
