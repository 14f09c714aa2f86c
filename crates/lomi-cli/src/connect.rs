//! `lomi connect CLIENT [--remove]`: adds the running Lomi's MCP endpoint to a client's own
//! config through that client's CLI (Claude Code: `claude mcp add|remove`), saying first what
//! it runs and keeping a copy of the config it changes, then reads the entry back with the
//! client's own reader (`claude mcp list`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use lomi_mcp::control::ControlRequest;
use lomi_protocol::tools::settings::{SettingsSection, SettingsView};

/// The name Lomi's entry has in a client's config.
pub const ENTRY: &str = "lomi";

/// The clients `lomi connect` sets up.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Client {
    /// Claude Code, through `claude mcp add --scope user` (every project of this user).
    ClaudeCode,
}

/// Runs `lomi connect`.
pub fn run(data_dir: &Path, client: Client, remove: bool) -> anyhow::Result<()> {
    match client {
        Client::ClaudeCode => claude_code(data_dir, remove),
    }
}

/// The `claude` to run: `LOMI_CLAUDE`, else `claude` on PATH.
fn claude_program() -> PathBuf {
    std::env::var_os("LOMI_CLAUDE")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("claude"), PathBuf::from)
}

/// Runs `claude ARGS…`, printing the command first; its output on failure says why.
fn claude(args: &[&str]) -> anyhow::Result<String> {
    let program = claude_program();
    let output = Command::new(&program)
        .args(args)
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| {
            format!(
                "cannot run {} (Claude Code's CLI): install it (`npm install -g @anthropic-ai/claude-code`) or set LOMI_CLAUDE to its path",
                program.display()
            )
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        anyhow::bail!(
            "`claude {}` failed ({}): {}{}",
            args.join(" "),
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(stdout)
}

/// Claude Code keeps its user-scope servers in `~/.claude.json`; a copy of it as it was goes
/// beside it before Lomi changes it.
fn back_up_claude_config() -> anyhow::Result<Option<PathBuf>> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Ok(None);
    };
    let config = home.join(".claude.json");
    if !config.is_file() {
        return Ok(None);
    }
    let backup = home.join(".claude.json.before-lomi");
    std::fs::copy(&config, &backup).with_context(|| {
        format!(
            "cannot keep a copy of {} at {}; nothing was changed",
            config.display(),
            backup.display()
        )
    })?;
    Ok(Some(backup))
}

/// The running Lomi's MCP URL, as it recorded it (`network.mcpUrl`).
fn mcp_url(data_dir: &Path) -> anyhow::Result<String> {
    let view: SettingsView = crate::runtime()?
        .block_on(crate::person::ask(
            data_dir,
            &ControlRequest::SettingsGet {
                section: Some(SettingsSection::Network),
            },
        ))
        .context("Lomi must be running to be connected (start it with `lomi serve` or the app)")?;
    let url = view.network.map(|n| n.mcp_url).unwrap_or_default();
    if url.is_empty() {
        anyhow::bail!("Lomi has not recorded its MCP URL yet; is it serving over HTTP?");
    }
    Ok(url)
}

/// Whether Claude Code has an entry named [`ENTRY`], and its line in `claude mcp list`.
fn claude_entry() -> anyhow::Result<Option<String>> {
    let listed = claude(&["mcp", "list"])?;
    Ok(listed
        .lines()
        .find(|line| line.starts_with(&format!("{ENTRY}:")))
        .map(str::to_owned))
}

fn claude_code(data_dir: &Path, remove: bool) -> anyhow::Result<()> {
    if remove {
        if claude_entry()?.is_none() {
            println!("Claude Code has no server named {ENTRY}; nothing to remove.");
            return Ok(());
        }
        let args = ["mcp", "remove", "--scope", "user", ENTRY];
        println!("Running: claude {}", args.join(" "));
        if let Some(backup) = back_up_claude_config()? {
            println!("Claude Code's config as it was: {}", backup.display());
        }
        claude(&args)?;
        match claude_entry()? {
            None => println!("Removed: `claude mcp list` no longer lists {ENTRY}."),
            Some(line) => anyhow::bail!("`claude mcp list` still lists it: {line}"),
        }
        return Ok(());
    }
    let url = mcp_url(data_dir)?;
    let existing = claude_entry()?;
    let args = [
        "mcp",
        "add",
        "--scope",
        "user",
        "--transport",
        "http",
        ENTRY,
        url.as_str(),
    ];
    if let Some(line) = &existing {
        println!("Claude Code already has {ENTRY} ({line}); it is replaced.");
    }
    println!("Running: claude {}", args.join(" "));
    if let Some(backup) = back_up_claude_config()? {
        println!("Claude Code's config as it was: {}", backup.display());
    }
    if existing.is_some() {
        claude(&["mcp", "remove", "--scope", "user", ENTRY])?;
    }
    claude(&args)?;
    let Some(line) = claude_entry()? else {
        anyhow::bail!("`claude mcp list` does not list {ENTRY} after adding it");
    };
    println!("Claude Code lists it: {line}");
    println!(
        "In Claude Code, /mcp → {ENTRY} → Authenticate opens Lomi's sign-in page; approve it in Lomi's window or with `lomi pairing approve`."
    );
    Ok(())
}
