//! Lomi's MCP server: one handler over the broker, served over Streamable HTTP on loopback
//! and over the local socket that `lomi mcp` bridges to stdio. Only this crate knows MCP.

pub mod cimd;
pub mod control;
pub mod data_dir;
pub mod host;
pub mod http;
pub mod local;
pub mod oauth;
pub mod provider_keys;
mod server;
mod sight;
mod tools;

pub use server::{Caller, LomiServer};

use lomi_android::AdbServer;
use lomi_android::panels::AndroidPanels;
use lomi_broker::Broker;
use lomi_browser::panels::BrowserPanels;
use lomi_chat::ChatSends;
use lomi_files::editor::ProjectEditor;
use lomi_files::git::ProjectGit;
use lomi_files::tools::ProjectFiles;
use lomi_terminal::panels::TerminalPanels;

/// Everything the MCP server forwards to: the broker and the runtimes' panels.
#[derive(Clone)]
pub struct Lomi {
    pub broker: Broker,
    pub terminals: TerminalPanels,
    pub files: ProjectFiles,
    pub git: ProjectGit,
    pub editor: ProjectEditor,
    pub browsers: BrowserPanels,
    pub android: AndroidPanels,
    pub chat: ChatSends,
}

impl Lomi {
    pub fn new(broker: Broker) -> Self {
        let editor = ProjectEditor::new(broker.clone());
        broker.set_sight(std::sync::Arc::new(sight::HostSight {
            adb: AdbServer::default(),
            documents: editor.documents().clone(),
        }));
        Lomi {
            terminals: TerminalPanels::new(broker.clone()),
            files: ProjectFiles::new(broker.clone()),
            git: ProjectGit::new(broker.clone()),
            editor,
            browsers: BrowserPanels::new(broker.clone()),
            android: AndroidPanels::new(broker.clone(), AdbServer::default()),
            chat: ChatSends::new(broker.clone(), {
                let data_dir = broker.data_dir().to_owned();
                std::sync::Arc::new(move |name: &str| provider_keys::load(&data_dir, name))
            }),
            broker,
        }
    }

    /// Talks to the adb server at `address` instead of the default `127.0.0.1:5037`.
    pub fn with_adb_server(mut self, address: std::net::SocketAddrV4) -> Self {
        self.android = AndroidPanels::new(self.broker.clone(), AdbServer::new(address));
        self.broker.set_sight(std::sync::Arc::new(sight::HostSight {
            adb: AdbServer::new(address),
            documents: self.editor.documents().clone(),
        }));
        self
    }

    /// Stops the broker's operations (see `Broker::shutdown`), then every runtime.
    pub async fn shutdown(&self) {
        // Operations first, so no terminal is created after the runtimes were closed.
        self.broker.shutdown().await;
        self.terminals.close_all().await;
        self.browsers.close_all().await;
    }
}
