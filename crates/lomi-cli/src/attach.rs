//! `lomi terminal attach PANEL`: the person's interactive view of a terminal panel, over the
//! local socket. Typing takes the panel over from any agent; Ctrl-] detaches.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::path::Path;

use anyhow::Context;
use lomi_mcp::local::{AttachHello, Hello};
use lomi_protocol::control::TerminalAttached;
use lomi_protocol::{PanelId, Reply};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// Ctrl-] ends the attach without sending anything to the terminal.
const DETACH: u8 = 0x1d;

/// Puts the local terminal in raw mode for as long as it lives.
struct RawMode {
    saved: Option<nix::sys::termios::Termios>,
}

impl RawMode {
    fn enter() -> anyhow::Result<RawMode> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Ok(RawMode { saved: None });
        }
        let saved =
            nix::sys::termios::tcgetattr(stdin.as_fd()).context("reading the terminal mode")?;
        let mut raw = saved.clone();
        nix::sys::termios::cfmakeraw(&mut raw);
        nix::sys::termios::tcsetattr(stdin.as_fd(), nix::sys::termios::SetArg::TCSANOW, &raw)
            .context("switching the terminal to raw mode")?;
        Ok(RawMode { saved: Some(saved) })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved
            && let Err(error) = nix::sys::termios::tcsetattr(
                std::io::stdin().as_fd(),
                nix::sys::termios::SetArg::TCSANOW,
                saved,
            )
        {
            eprintln!("lomi: could not restore the terminal mode: {error}");
        }
    }
}

pub async fn run(data_dir: &Path, panel: PanelId) -> anyhow::Result<()> {
    let hello = Hello::Attach(AttachHello { panel_id: panel });
    let stream = lomi_mcp::local::connect(data_dir, &hello).await?;
    let (read, mut write) = stream.into_split();
    let mut from_lomi = BufReader::new(read);
    let mut first = String::new();
    from_lomi.read_line(&mut first).await?;
    let reply: Reply<TerminalAttached> =
        serde_json::from_str(first.trim_end()).context("Lomi's answer")?;
    let attached = match reply {
        Reply::Ok { data, .. } => data,
        Reply::Error { code, message, .. } => anyhow::bail!("{code}: {message}"),
    };
    eprintln!(
        "attached to {} (Ctrl-] detaches; typing takes the panel over from agents)\r",
        attached.panel_id
    );
    let _raw = RawMode::enter()?;
    let mut stdout = tokio::io::stdout();
    let mut stdin = tokio::io::stdin();
    let mut screen = [0u8; 64 * 1024];
    let mut keys = [0u8; 4096];
    loop {
        tokio::select! {
            read = from_lomi.read(&mut screen) => {
                let n = read?;
                if n == 0 {
                    break;
                }
                stdout.write_all(&screen[..n]).await?;
                stdout.flush().await?;
            }
            read = stdin.read(&mut keys) => {
                let n = read?;
                if n == 0 {
                    break;
                }
                let typed = &keys[..n];
                match typed.iter().position(|b| *b == DETACH) {
                    Some(at) => {
                        write.write_all(&typed[..at]).await?;
                        break;
                    }
                    None => write.write_all(typed).await?,
                }
            }
        }
    }
    Ok(())
}
