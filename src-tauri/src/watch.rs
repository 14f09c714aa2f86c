//! What the window watches: the overview stream (over a Tauri channel), native notifications
//! for new pending pairings and decisions and for the store filling up, and requests to show
//! the window.

use std::collections::HashSet;
use std::time::Duration;

use lomi_broker::Broker;
use lomi_mcp::control::{self, ControlRequest, Front};
use lomi_protocol::tools::session::PairingState;
use serde_json::{Value, json};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager};
use tauri_plugin_notification::NotificationExt;

/// How often the broker's state is compared with what the window last saw.
const POLL: Duration = Duration::from_millis(250);

/// The store's status is read every this many polls (once a second): it counts every table,
/// the history too, which grows without a cap.
const STORE_EVERY: u64 = 4;

/// How many operations the feed shows.
const FEED_LIMIT: usize = 50;

/// True while some agent is paired (approved) or waiting for approval: closing the window
/// then keeps Lomi in the tray.
pub fn agents_paired(broker: &Broker) -> bool {
    broker
        .pairing_list()
        .iter()
        .any(|p| matches!(p.state, PairingState::Approved | PairingState::Pending))
}

/// Everything the main window shows, in one value: each part is the same envelope the
/// matching control request answers (`store` is the last `storeStatus`, read less often).
fn snapshot(lomi: &lomi_mcp::Lomi, front: &Front, store: &Value) -> Value {
    let broker = &lomi.broker;
    let ask = |request| control::handle(broker, front, request);
    let workspaces = ask(ControlRequest::WorkspaceList {});
    let panels: serde_json::Map<String, Value> = broker
        .workspaces()
        .iter()
        .map(|w| {
            (
                w.id.to_string(),
                ask(ControlRequest::PanelList {
                    workspace_id: w.id.clone(),
                }),
            )
        })
        .collect();
    // Android panels show the latest capture an agent took: its sequence says when to fetch.
    let captures: serde_json::Map<String, Value> = broker
        .workspaces()
        .iter()
        .flat_map(|w| broker.panels_for_person(&w.id))
        .filter_map(|panel| {
            lomi.android
                .latest_capture(&panel.panel_id)
                .map(|c| (panel.panel_id.to_string(), json!(c.sequence)))
        })
        .collect();
    json!({
        "captures": captures,
        "pairings": ask(ControlRequest::PairingList {}),
        "decisions": ask(ControlRequest::DecisionList {}),
        "workspaces": workspaces,
        "panels": panels,
        "feed": ask(ControlRequest::Feed { limit: FEED_LIMIT }),
        "policy": ask(ControlRequest::PolicyList {}),
        // Settings → the sections with their revisions (never a provider key).
        "settings": ask(ControlRequest::SettingsGet { section: None }),
        // Settings → Storage and the window's "store almost full" notice read this.
        "store": store,
    })
}

/// Sends the overview now and again whenever it changes, until the window drops the channel.
pub fn overview(lomi: lomi_mcp::Lomi, front: Front, channel: Channel<Value>) {
    tauri::async_runtime::spawn(async move {
        let mut last = Value::Null;
        let mut store = Value::Null;
        for tick in 0u64.. {
            if tick % STORE_EVERY == 0 {
                store = control::handle(&lomi.broker, &front, ControlRequest::StoreStatus {});
            }
            let now = snapshot(&lomi, &front, &store);
            if now != last {
                if channel.send(now.clone()).is_err() {
                    return;
                }
                last = now;
            }
            tokio::time::sleep(POLL).await;
        }
    });
}

pub fn show_window(app: &AppHandle) {
    if let Some(window) = app.get_webview_window("main") {
        for step in [window.show(), window.unminimize(), window.set_focus()] {
            if let Err(error) = step {
                tracing::warn!("cannot show the window: {error}");
            }
        }
    }
}

/// A second launch asked this Lomi to show its window.
pub fn show_requests(app: AppHandle, mut requests: tokio::sync::mpsc::UnboundedReceiver<()>) {
    tauri::async_runtime::spawn(async move {
        while requests.recv().await.is_some() {
            show_window(&app);
        }
    });
}

/// The store's `warningLevel`s (`storeStatus`), lowest first: 75 %, 90 % of a cap, at a cap.
const STORE_LEVELS: [&str; 4] = ["none", "warning", "critical", "full"];

/// The native notification for the store's level rising to `level` (the window shows the same
/// notice, with a button to its Storage view); `None` for `none`.
fn store_notice(level: &str, status: &Value) -> Option<(String, String)> {
    let room = format!(
        "Room left: {} receipts, {} connections.",
        status["receiptsRemaining"], status["retryEpochsRemaining"]
    );
    let title = match level {
        "warning" => "Lomi's store is 75 % full",
        "critical" => "Lomi's store is 90 % full",
        "full" => "Lomi's store is full: agents' changes are refused",
        _ => return None,
    };
    Some((
        title.to_owned(),
        format!("{room} Free room in Lomi: Settings → Storage."),
    ))
}

/// The native notification for the store's writes starting to fail (the window shows the same
/// notice until they succeed again).
fn write_failure_notice(failure: &Value) -> (String, String) {
    // The store's own advice (after the `;`) is said once, in words for the person.
    let reason = failure["message"]
        .as_str()
        .and_then(|m| m.split(';').next())
        .unwrap_or("the store cannot write");
    (
        "Lomi cannot save: agents' changes are refused".to_owned(),
        format!("{reason}. Free space on the disk that holds Lomi's data; work goes on by itself."),
    )
}

/// Raises a native notification (and shows the window) for every new pending pairing and every
/// new operation waiting for the person; and one each time the store's warning level rises
/// (75 %, 90 %, full), not again while it stays there, and one when the store's writes start to
/// fail (a full disk). The window is shown only when the store is full or cannot write: agents
/// are refused then, as they wait for a decision.
pub fn notifications(app: AppHandle) {
    tauri::async_runtime::spawn(async move {
        let mut seen: HashSet<String> = HashSet::new();
        let mut store_level = 0;
        let mut writes_failing = false;
        for tick in 0u64.. {
            let (broker, front) = {
                let desktop = app.state::<crate::Desktop>();
                (desktop.broker().clone(), desktop.front.clone())
            };
            let mut fresh = Vec::new();
            for pairing in broker.pairing_list() {
                if pairing.state == PairingState::Pending
                    && seen.insert(pairing.pairing_id.to_string())
                {
                    fresh.push((
                        "An agent asks to pair with Lomi".to_owned(),
                        format!(
                            "\"{}\" shows code {}. Approve or deny it in Lomi.",
                            pairing.client_name, pairing.verification_code
                        ),
                    ));
                }
            }
            for waiting in broker.awaiting_decisions() {
                if seen.insert(waiting.operation_id.to_string()) {
                    fresh.push((
                        "An operation waits for you".to_owned(),
                        format!("{} needs your decision in Lomi.", waiting.tool),
                    ));
                }
            }
            let mut show = !fresh.is_empty();
            if tick % STORE_EVERY == 0 {
                let status = control::handle(&broker, &front, ControlRequest::StoreStatus {});
                let level = status["data"]["warningLevel"].as_str().unwrap_or("none");
                let rank = STORE_LEVELS.iter().position(|l| *l == level).unwrap_or(0);
                if rank > store_level
                    && let Some(notice) = store_notice(level, &status["data"])
                {
                    show |= level == "full";
                    fresh.push(notice);
                }
                store_level = rank;
                // Writes failing (a full disk): once each time they start to fail.
                let failure = &status["data"]["writeFailure"];
                if failure.is_object() && !writes_failing {
                    show = true;
                    fresh.push(write_failure_notice(failure));
                }
                writes_failing = failure.is_object();
            }
            if show {
                show_window(&app);
            }
            for (title, body) in fresh {
                notify(&app, title, body).await;
            }
            tokio::time::sleep(POLL).await;
        }
    });
}

/// Sends one desktop notification; a desktop without a notification service only logs it.
async fn notify(app: &AppHandle, title: String, body: String) {
    tracing::info!("desktop notification: {title}: {body}");
    let app = app.clone();
    let shown = tokio::task::spawn_blocking(move || {
        app.notification().builder().title(title).body(body).show()
    })
    .await;
    match shown {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::info!("no desktop notification: {error}"),
        Err(error) => tracing::warn!("notification task: {error}"),
    }
}
