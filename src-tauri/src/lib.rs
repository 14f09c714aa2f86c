//! Lomi's desktop app: the window, tray and native notifications over the same broker
//! `lomi serve` runs (`lomi_mcp::host::Host`). Thin: commands forward to the broker's control
//! API; the only logic here is the window's life (single instance, hide to tray, quit).

mod commands;
mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use clap::Parser;
use lomi_mcp::control::{ControlRequest, Front};
use lomi_mcp::host::{Host, HostOptions};
use lomi_protocol::Reply;
use lomi_protocol::control::WindowShown;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{Manager, RunEvent, WindowEvent};

/// Lomi's desktop app. `lomi` with no arguments opens it on a machine with a display.
#[derive(Debug, Parser)]
#[command(name = "lomi-desktop", version, about)]
struct Args {
    /// Lomi's data directory (default: $XDG_DATA_HOME/lomi, usually ~/.local/share/lomi).
    #[arg(long, env = "LOMI_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Where the MCP endpoint listens (loopback only; port 0 picks a free port).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:7457",
        env = "LOMI_HTTP"
    )]
    http: SocketAddr,
    /// The adb server Android devices are reached through; at the default address it is
    /// started when it is not running.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:5037",
        env = "LOMI_ADB_SERVER"
    )]
    adb_server: std::net::SocketAddrV4,
    /// For tests only, like `lomi serve --store-cap`: caps both receipts and retry epochs at
    /// N, so a test fills the store in seconds.
    #[arg(long, hide = true, env = "LOMI_STORE_CAP", value_name = "N")]
    store_cap: Option<usize>,
}

/// What the commands reach: the running host and how the window is told to show itself.
pub struct Desktop {
    host: Mutex<Option<Host>>,
    lomi: lomi_mcp::Lomi,
    front: Front,
    data_dir: PathBuf,
    /// The file tree's watch of each project the window shows (one per project: a new
    /// `files_watch` replaces the old, and dropping one stops it).
    /// Each keyed by the id the window gave it, so an unwatch never ends a newer watch.
    tree_watches: Mutex<
        std::collections::HashMap<lomi_protocol::ProjectId, (String, lomi_files::watch::TreeWatch)>,
    >,
    /// The window's follower of each document it shows (a new `document_watch` of the same
    /// document ends the old one; a follower also ends when its document closes).
    document_watches: Mutex<
        std::collections::HashMap<
            lomi_protocol::DocumentId,
            (String, tauri::async_runtime::JoinHandle<()>),
        >,
    >,
}

impl Desktop {
    fn broker(&self) -> &lomi_broker::Broker {
        &self.lomi.broker
    }
}

pub fn run() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LOMI_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match start(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("lomi-desktop: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn start(args: Args) -> anyhow::Result<ExitCode> {
    let data_dir = lomi_mcp::data_dir::resolve(args.data_dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;

    // One Lomi per data dir: if one runs, ask it to show its window and leave.
    if let Ok(reply) = runtime.block_on(lomi_mcp::local::request(
        &data_dir,
        &ControlRequest::ShowWindow {},
    )) {
        let message = match serde_json::from_value::<Reply<WindowShown>>(reply) {
            Ok(Reply::Ok { .. }) => {
                println!(
                    "Lomi is already running for {}; its window was brought to the front.",
                    data_dir.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            Ok(Reply::Error { message, .. }) => message,
            Err(_) => "it refused to show a window".to_owned(),
        };
        anyhow::bail!(
            "a Lomi without a window runs for {}: {message}",
            data_dir.display()
        );
    }

    let (show_tx, show_rx) = tokio::sync::mpsc::unbounded_channel();
    let host = runtime
        .block_on(Host::start_with_store(
            HostOptions {
                data_dir: data_dir.clone(),
                http: args.http,
                adb_server: args.adb_server,
                show_window: Some(show_tx.clone()),
            },
            lomi_mcp::host::store_options(args.store_cap),
        ))
        .context("cannot start Lomi")?;
    println!("Lomi is running.");
    println!("  MCP endpoint:  {}", host.url());
    println!("  data dir:      {}", data_dir.display());
    let desktop = Desktop {
        lomi: host.lomi().clone(),
        front: Front {
            http_url: host.url().to_owned(),
            show_window: Some(show_tx),
        },
        data_dir,
        host: Mutex::new(Some(host)),
        tree_watches: Mutex::default(),
        document_watches: Mutex::default(),
    };
    tauri::async_runtime::set(runtime.handle().clone());

    let app = tauri::Builder::default()
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        .manage(desktop)
        .invoke_handler(tauri::generate_handler![
            commands::control,
            commands::watch,
            commands::overview_stats,
            commands::terminal_attach,
            commands::terminal_input,
            commands::app_info,
            commands::android_capture,
            commands::browser_watch,
            commands::document_watch,
            commands::files_watch,
            commands::files_follow,
            commands::files_unwatch,
            commands::document_unwatch,
        ])
        .setup(move |app| {
            tray(app)?;
            watch::show_requests(app.handle().clone(), show_rx);
            watch::notifications(app.handle().clone());
            stop_on_signal(app.handle().clone());
            if let Some(window) = app.get_webview_window("main") {
                watch::renderer(&window);
            }
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::CloseRequested { api, .. } = event {
                // While agents are paired, closing keeps Lomi in the tray: it must stay to
                // serve them and to ask the person for decisions.
                let desktop = window.state::<Desktop>();
                if watch::agents_paired(desktop.broker()) {
                    api.prevent_close();
                    if let Err(error) = window.hide() {
                        tracing::warn!("cannot hide the window: {error}");
                    }
                }
            }
        })
        .build(tauri::generate_context!("../tauri.conf.json"))
        .context("cannot open Lomi's window")?;

    app.run(move |handle, event| {
        if let RunEvent::Exit = event {
            let desktop = handle.state::<Desktop>();
            let host = desktop
                .host
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(host) = host
                && let Err(error) = runtime.block_on(host.stop())
            {
                eprintln!("lomi-desktop: {error:#}");
            }
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// The tray icon: show the window, pause or resume every agent (the window's top-bar control,
/// `lomi pause|resume`), or quit (which stops the broker).
fn tray(app: &tauri::App) -> tauri::Result<()> {
    let show = MenuItem::with_id(app, "show", "Show Lomi", true, None::<&str>)?;
    let pause = MenuItem::with_id(app, "pause", watch::PAUSE_WORDS, true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit Lomi", true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&show, &pause, &quit])?;
    watch::tray_pause(app.handle().clone(), pause);
    let mut builder = TrayIconBuilder::with_id("lomi")
        .tooltip("Lomi")
        .menu(&menu)
        .on_menu_event(|app, event| match event.id.as_ref() {
            "show" => watch::show_window(app),
            "pause" => watch::toggle_pause(app),
            "quit" => app.exit(0),
            _ => {}
        });
    if let Some(icon) = app.default_window_icon() {
        builder = builder.icon(icon.clone());
    }
    builder.build(app)?;
    Ok(())
}

/// SIGTERM and SIGINT quit like the tray's Quit: the broker stops cleanly.
fn stop_on_signal(app: tauri::AppHandle) {
    tauri::async_runtime::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut terminate), Ok(mut interrupt)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("cannot listen for SIGTERM/SIGINT");
            return;
        };
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        app.exit(0);
    });
}
