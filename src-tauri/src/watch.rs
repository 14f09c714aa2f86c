//! What the window watches: the overview (over a Tauri channel), sent part by part as the
//! broker's change feed says an area changed; native notifications for new pending pairings
//! and decisions and for the store filling up; and requests to show the window.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lomi_broker::{Broker, Changes};
use lomi_mcp::control::{self, ControlRequest, Front};
use lomi_protocol::Reply;
use lomi_protocol::control::{Overview, RulesView, StoreStatus, WarningLevel, WriteFailure};
use lomi_protocol::tools::session::PairingState;
use lomi_protocol::tools::settings::SettingsSection;
use serde_json::{Map, Value};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager};
use tauri_plugin_notification::NotificationExt;
use tokio::time::Instant;

/// After a change, how long more changes are gathered into the same message: an agent's call
/// moves several areas at once (a receipt, a decision, its pairing's activity).
const GATHER: Duration = Duration::from_millis(30);

/// The store's status counts every table, the history too, which grows without a cap: after an
/// operation it is read at most this often.
const STORE_AT_MOST_EVERY: Duration = Duration::from_secs(2);

/// With nothing happening, the store's status is still read this often: a disk can fill up
/// with no operation running (it is sent only if it changed).
const STORE_QUIET_EVERY: Duration = Duration::from_secs(30);

/// How many operations the feed shows.
const FEED_LIMIT: usize = 50;

/// How many times the overview's parts (other than the store's status) were read, and how many
/// messages went to windows: how a test tells that nothing is rebuilt while nothing changes.
pub static OVERVIEW_READS: AtomicU64 = AtomicU64::new(0);
pub static OVERVIEW_MESSAGES: AtomicU64 = AtomicU64::new(0);

/// True while some agent is paired (approved) or waiting for approval: closing the window
/// then keeps Lomi in the tray.
pub fn agents_paired(broker: &Broker) -> bool {
    broker
        .pairing_list()
        .iter()
        .any(|p| matches!(p.state, PairingState::Approved | PairingState::Pending))
}

/// One part of the overview: each is the same envelope the matching control request answers,
/// except `panels` (workspace id → its `panelList`), `captures` (Android panel id → its
/// latest capture's sequence, which says when to fetch it) and `chat` (how often Chat changed:
/// the window's Chat tab reads its conversations again when it moves).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Workspaces,
    Panels,
    Captures,
    Pairings,
    Decisions,
    Feed,
    Policy,
    Settings,
    Chat,
}

impl Part {
    const ALL: [Part; 9] = [
        Part::Workspaces,
        Part::Panels,
        Part::Captures,
        Part::Pairings,
        Part::Decisions,
        Part::Feed,
        Part::Policy,
        Part::Settings,
        Part::Chat,
    ];

    fn key(self) -> &'static str {
        match self {
            Part::Workspaces => "workspaces",
            Part::Panels => "panels",
            Part::Captures => "captures",
            Part::Pairings => "pairings",
            Part::Decisions => "decisions",
            Part::Feed => "feed",
            Part::Policy => "policy",
            Part::Settings => "settings",
            Part::Chat => "chat",
        }
    }

    /// Whether this part may differ after the areas that moved from `before` to `now`.
    fn touched(self, before: &Changes, now: &Changes) -> bool {
        let domain = before.domain != now.domain;
        let panels = before.panels != now.panels;
        let operations = before.operations != now.operations;
        let activity = before.activity != now.activity;
        match self {
            // Workspace names show in the feed and the decisions.
            Part::Workspaces | Part::Policy | Part::Settings => domain,
            Part::Panels | Part::Captures => domain || panels,
            Part::Pairings => domain || activity,
            Part::Decisions | Part::Feed => domain || operations,
            Part::Chat => before.chat != now.chat,
        }
    }

    fn read(self, lomi: &lomi_mcp::Lomi, front: &Front) -> Value {
        OVERVIEW_READS.fetch_add(1, Ordering::Relaxed);
        let broker = &lomi.broker;
        let ask = |request| control::handle(broker, front, request);
        match self {
            Part::Workspaces => ask(ControlRequest::WorkspaceList {}),
            Part::Panels => Value::Object(
                broker
                    .workspaces()
                    .iter()
                    .map(|w| {
                        let panels = ask(ControlRequest::PanelList {
                            workspace_id: w.id.clone(),
                        });
                        (w.id.to_string(), panels)
                    })
                    .collect(),
            ),
            Part::Captures => Value::Object(
                broker
                    .workspaces()
                    .iter()
                    .flat_map(|w| broker.panels_for_person(&w.id))
                    .filter_map(|panel| {
                        lomi.android
                            .latest_capture(&panel.panel_id)
                            .map(|c| (panel.panel_id.to_string(), Value::from(c.sequence)))
                    })
                    .collect(),
            ),
            Part::Pairings => ask(ControlRequest::PairingList {}),
            Part::Decisions => ask(ControlRequest::DecisionList {}),
            Part::Feed => ask(ControlRequest::Feed { limit: FEED_LIMIT }),
            Part::Policy => ask(ControlRequest::PolicyList {}),
            // Settings → the sections with their revisions (never a provider key).
            Part::Settings => ask(ControlRequest::SettingsGet { section: None }),
            Part::Chat => Value::from(broker.changes().borrow().chat),
        }
    }
}

/// When the store's status is read next: soon after operations moved (but not more often than
/// [`STORE_AT_MOST_EVERY`]), else after [`STORE_QUIET_EVERY`].
struct StoreClock {
    last: Instant,
    due: Instant,
}

impl StoreClock {
    fn new(now: Instant) -> StoreClock {
        StoreClock {
            last: now,
            due: now + STORE_QUIET_EVERY,
        }
    }

    fn operations_moved(&mut self) {
        self.due = self.due.min(self.last + STORE_AT_MOST_EVERY);
    }

    fn read(&mut self, now: Instant) {
        self.last = now;
        self.due = now + STORE_QUIET_EVERY;
    }
}

/// Sends the whole overview once, then, each time the broker's change feed moves, the parts
/// that changed (an [`Overview`] with only those parts; `store` is the last `storeStatus`),
/// until the window drops the channel. Nothing is read while nothing changes.
pub fn overview(lomi: lomi_mcp::Lomi, front: Front, channel: Channel<Overview>) {
    // Once per load of the window's page (a reload after its web process ended is another).
    tracing::info!("the window's page follows the overview");
    tauri::async_runtime::spawn(async move {
        let mut feed = lomi.broker.changes();
        let mut before = *feed.borrow_and_update();
        let mut sent = Map::new();
        let mut store_clock = StoreClock::new(Instant::now());
        let mut first = true;
        loop {
            let now = *feed.borrow_and_update();
            let mut delta = Map::new();
            for part in Part::ALL {
                if first || part.touched(&before, &now) {
                    let value = part.read(&lomi, &front);
                    if sent.get(part.key()) != Some(&value) {
                        delta.insert(part.key().to_owned(), value);
                    }
                }
            }
            if before.operations != now.operations {
                store_clock.operations_moved();
            }
            if first || Instant::now() >= store_clock.due {
                store_clock.read(Instant::now());
                let store = control::handle(&lomi.broker, &front, ControlRequest::StoreStatus {});
                if sent.get("store") != Some(&store) {
                    delta.insert("store".to_owned(), store);
                }
            }
            before = now;
            first = false;
            if !delta.is_empty() {
                sent.extend(delta.clone());
                OVERVIEW_MESSAGES.fetch_add(1, Ordering::Relaxed);
                if channel.send(typed(delta)).is_err() {
                    return;
                }
            }
            tokio::select! {
                changed = feed.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    tokio::time::sleep(GATHER).await;
                }
                () = tokio::time::sleep_until(store_clock.due) => {}
            }
        }
    });
}

/// The changed parts as the window's [`Overview`]. The parts are the control requests' answers
/// (`control::handle`, the JSON the `lomi` command reads too), so each decodes into its reply
/// type; one that did not would be a bug in Lomi, logged and left out rather than sent untyped.
fn typed(delta: Map<String, Value>) -> Overview {
    let mut overview = Overview::default();
    for (key, value) in delta {
        let mut one = Map::new();
        one.insert(key.clone(), value);
        match serde_json::from_value::<Overview>(Value::Object(one)) {
            Ok(part) => overview = merged(overview, part),
            Err(error) => tracing::error!("the overview's {key} is not its reply type: {error}"),
        }
    }
    overview
}

/// `base` with every part `part` has.
fn merged(base: Overview, part: Overview) -> Overview {
    Overview {
        workspaces: part.workspaces.or(base.workspaces),
        panels: part.panels.or(base.panels),
        captures: part.captures.or(base.captures),
        pairings: part.pairings.or(base.pairings),
        decisions: part.decisions.or(base.decisions),
        feed: part.feed.or(base.feed),
        policy: part.policy.or(base.policy),
        settings: part.settings.or(base.settings),
        chat: part.chat.or(base.chat),
        store: part.store.or(base.store),
    }
}

/// The tray's pause item while agents run, and while every agent is paused.
pub const PAUSE_WORDS: &str = "Pause agents";
const RESUME_WORDS: &str = "Resume agents";

/// Whether every agent's changes are paused (the rules section of the settings).
fn all_paused(broker: &Broker) -> bool {
    broker
        .settings_for_person(Some(SettingsSection::Rules))
        .rules
        .is_some_and(|rules| rules.paused)
}

/// The tray's "Pause agents": pauses every agent, or resumes them when they are paused (the
/// same control requests the window's top bar and `lomi pause|resume` send).
pub fn toggle_pause(app: &AppHandle) {
    let desktop = app.state::<crate::Desktop>();
    let request = if all_paused(desktop.broker()) {
        ControlRequest::Resume { agent: None }
    } else {
        ControlRequest::Pause { agent: None }
    };
    let answer = control::handle(desktop.broker(), &desktop.front, request);
    if let Ok(Reply::Error { message, .. }) = serde_json::from_value::<Reply<RulesView>>(answer) {
        tracing::warn!("the tray's pause: {message}");
    }
}

/// Keeps the tray's pause item saying what it will do, following the change feed's domain
/// area (where pause lives).
pub fn tray_pause(app: AppHandle, item: tauri::menu::MenuItem<tauri::Wry>) {
    tauri::async_runtime::spawn(async move {
        let broker = app.state::<crate::Desktop>().broker().clone();
        let mut feed = broker.changes();
        let mut shown = None;
        loop {
            let paused = all_paused(&broker);
            if shown != Some(paused) {
                let words = if paused { RESUME_WORDS } else { PAUSE_WORDS };
                if let Err(error) = item.set_text(words) {
                    tracing::warn!("cannot change the tray's pause item: {error}");
                }
                shown = Some(paused);
            }
            let before = feed.borrow_and_update().domain;
            loop {
                if feed.changed().await.is_err() {
                    return;
                }
                if feed.borrow_and_update().domain != before {
                    break;
                }
            }
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

/// The window's page lives in WebKit's web process. When that process dies (a crash, WebKit's
/// memory limit) the window would stay blank until Lomi restarts: log why and load the page
/// again; it rebuilds itself from the broker like a first start, and nothing the person
/// decided is lost (decisions live in the broker). A page that stops answering is logged, so a
/// frozen window can be told apart from a dead one.
#[cfg(target_os = "linux")]
pub fn renderer(window: &tauri::WebviewWindow) {
    use webkit2gtk::{WebProcessTerminationReason, WebViewExt};
    let watched = window.with_webview(|webview| {
        let view = webview.inner();
        // When the last reloads were: a page that ends its process on every load is not
        // loaded again and again.
        let reloads = std::rc::Rc::new(std::cell::RefCell::new(Vec::<std::time::Instant>::new()));
        view.connect_web_process_terminated(move |view, reason| {
            let why = match reason {
                WebProcessTerminationReason::Crashed => "it crashed".to_owned(),
                WebProcessTerminationReason::ExceededMemoryLimit => {
                    "it exceeded WebKit's memory limit".to_owned()
                }
                WebProcessTerminationReason::TerminatedByApi => {
                    // Lomi's own stop (the window closing): nothing to bring back.
                    tracing::info!("the window's web process was ended by the app");
                    return;
                }
                other => format!("{other:?}"),
            };
            let mut recent = reloads.borrow_mut();
            let now = std::time::Instant::now();
            recent.retain(|at| now.duration_since(*at) < RELOAD_WINDOW);
            if recent.len() >= RELOADS_AT_MOST {
                tracing::error!(
                    "the window's web process ended ({why}) for the {}th time within a minute; \
                     not loading the window again (restart Lomi to open it)",
                    recent.len() + 1
                );
                return;
            }
            recent.push(now);
            tracing::warn!("the window's web process ended ({why}); loading the window again");
            view.reload();
        });
        view.connect_is_web_process_responsive_notify(|view| {
            if view.is_web_process_responsive() {
                tracing::info!("the window's web process answers again");
            } else {
                tracing::warn!("the window's web process stopped answering");
            }
        });
    });
    if let Err(error) = watched {
        tracing::warn!("cannot watch the window's web process: {error}");
    }
}

/// How many times within [`RELOAD_WINDOW`] a crashed window is loaded again.
#[cfg(target_os = "linux")]
const RELOADS_AT_MOST: usize = 3;
#[cfg(target_os = "linux")]
const RELOAD_WINDOW: Duration = Duration::from_secs(60);

#[cfg(not(target_os = "linux"))]
pub fn renderer(_window: &tauri::WebviewWindow) {}

/// A second launch asked this Lomi to show its window.
pub fn show_requests(app: AppHandle, mut requests: tokio::sync::mpsc::UnboundedReceiver<()>) {
    tauri::async_runtime::spawn(async move {
        while requests.recv().await.is_some() {
            show_window(&app);
        }
    });
}

/// The native notification for the store's level rising to its `warningLevel` (the window
/// shows the same notice, with a button to its Storage view); `None` for `none`.
fn store_notice(status: &StoreStatus) -> Option<(String, String)> {
    let room = format!(
        "Room left: {} receipts, {} connections.",
        status.receipts_remaining, status.retry_epochs_remaining
    );
    let title = match status.warning_level {
        WarningLevel::Warning => "Lomi's store is 75 % full",
        WarningLevel::Critical => "Lomi's store is 90 % full",
        WarningLevel::Full => "Lomi's store is full: agents' changes are refused",
        WarningLevel::None => return None,
    };
    Some((
        title.to_owned(),
        format!("{room} Free room in Lomi: Settings → Storage."),
    ))
}

/// The native notification for the store's writes starting to fail (the window shows the same
/// notice until they succeed again).
fn write_failure_notice(failure: &WriteFailure) -> (String, String) {
    // The store's own advice (after the `;`) is said once, in words for the person.
    let reason = failure
        .message
        .split(';')
        .next()
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
        let broker = app.state::<crate::Desktop>().broker().clone();
        let mut feed = broker.changes();
        let mut before = *feed.borrow_and_update();
        let mut seen: HashSet<String> = HashSet::new();
        let mut store_level = WarningLevel::None;
        let mut writes_failing = false;
        let mut store_clock = StoreClock::new(Instant::now());
        let mut first = true;
        loop {
            let now = *feed.borrow_and_update();
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
            if before.operations != now.operations {
                store_clock.operations_moved();
            }
            if first || Instant::now() >= store_clock.due {
                store_clock.read(Instant::now());
                // Unreadable: no level and no failure to tell (the window's view says why).
                let status = (broker.store().status(&broker.idle_rule()).ok())
                    .map(|status| control::store_status(&status));
                let level = status
                    .as_ref()
                    .map_or(WarningLevel::None, |s| s.warning_level);
                if level > store_level
                    && let Some(notice) = status.as_ref().and_then(store_notice)
                {
                    show |= level == WarningLevel::Full;
                    fresh.push(notice);
                }
                store_level = level;
                // Writes failing (a full disk): once each time they start to fail.
                let failure = status.as_ref().and_then(|s| s.write_failure.as_ref());
                if let Some(failure) = failure
                    && !writes_failing
                {
                    show = true;
                    fresh.push(write_failure_notice(failure));
                }
                writes_failing = failure.is_some();
            }
            before = now;
            first = false;
            if show {
                show_window(&app);
            }
            for (title, body) in fresh {
                notify(&app, title, body).await;
            }
            tokio::select! {
                changed = feed.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    tokio::time::sleep(GATHER).await;
                }
                () = tokio::time::sleep_until(store_clock.due) => {}
            }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The typed overview sends the parts as the control requests answered them, and leaves
    /// out (and logs) a part that is not its reply type.
    #[test]
    fn the_overview_sends_its_parts_as_answered() {
        let ok = json!({"controlApiVersion": "1.0", "status": "ok", "data": []});
        let refused = json!({
            "controlApiVersion": "1.0",
            "status": "error",
            "code": "STORE_UNAVAILABLE",
            "message": "the store cannot be read",
        });
        let delta = json!({
            "captures": {"pn_1": 3},
            "chat": 2,
            "feed": ok,
            "panels": {"ws_1": ok},
            "store": refused,
        });
        let Value::Object(parts) = delta.clone() else {
            unreachable!("an object")
        };
        let sent = serde_json::to_value(typed(parts)).expect("serialises");
        assert_eq!(sent, delta);

        let Value::Object(parts) = json!({"chat": 3, "feed": {"status": "ok"}}) else {
            unreachable!("an object")
        };
        let sent = serde_json::to_value(typed(parts)).expect("serialises");
        assert_eq!(sent, json!({"chat": 3}));
    }
}
