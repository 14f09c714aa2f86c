//! `lomi settings get|set|provider-key`: the person's settings through the running Lomi's
//! control socket, the same requests the window's Settings view sends, so both move the same
//! section revisions.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use clap::Subcommand;
use lomi_mcp::control::ControlRequest;
use lomi_protocol::tools::settings::{SettingsSection, SettingsUpdated, SettingsView};
use serde_json::{Map, Value};

use crate::person::render;

#[derive(Debug, Subcommand)]
pub enum SettingsCommand {
    /// Show every section, or one (terminal, browser, editor, chat, providers, pairings,
    /// confirmations, network), with its revision. Provider keys are never shown.
    Get {
        section: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Set one field of a section: `lomi settings set terminal cols 100`. VALUE is JSON when
    /// it parses as JSON (100, true, ["a"], {"kind":…}), else text. Providers take the
    /// provider's name as KEY and `{"kind":"openai_compatible"|"anthropic","baseUrl":…,
    /// "models":[…]}` (or null to remove it) as VALUE; confirmations take a tool name and
    /// true or false.
    Set {
        section: String,
        key: String,
        value: String,
        /// Change only if the section is still at this revision.
        #[arg(long, value_name = "REVISION")]
        expected_revision: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Store a provider's API key in the OS keyring, read from stdin (one line); `--remove`
    /// removes it. Lomi never shows a key again, only `keyStored`.
    ProviderKey {
        name: String,
        #[arg(long)]
        remove: bool,
        #[arg(long)]
        json: bool,
    },
}

fn section(name: &str) -> anyhow::Result<SettingsSection> {
    SettingsSection::from_name(name).with_context(|| {
        let names: Vec<&str> = SettingsSection::ALL.iter().map(|s| s.name()).collect();
        format!(
            "there is no settings section {name:?}; the sections are {}",
            names.join(", ")
        )
    })
}

/// The control request a settings command sends, whether to print JSON, and how to print it.
fn request(command: SettingsCommand) -> anyhow::Result<(ControlRequest, bool, crate::Render)> {
    Ok(match command {
        SettingsCommand::Get {
            section: name,
            json,
        } => {
            let section = name.as_deref().map(section).transpose()?;
            (
                ControlRequest::SettingsGet { section },
                json,
                render(render_settings),
            )
        }
        SettingsCommand::Set {
            section: name,
            key,
            value,
            expected_revision,
            json,
        } => {
            let value = serde_json::from_str(&value).unwrap_or(Value::String(value));
            let mut values = Map::new();
            values.insert(key, value);
            (
                ControlRequest::SettingsSet {
                    section: section(&name)?,
                    values,
                    expected_settings_revision: expected_revision
                        .map(lomi_protocol::SettingsRevision),
                },
                json,
                render(render_updated),
            )
        }
        SettingsCommand::ProviderKey { name, remove, json } => {
            let key = if remove {
                None
            } else {
                let mut key = String::new();
                std::io::stdin()
                    .read_to_string(&mut key)
                    .context("cannot read the key from stdin")?;
                let key = key.trim_end_matches(['\r', '\n']).to_owned();
                anyhow::ensure!(
                    !key.is_empty(),
                    "no key on stdin (pipe it in, e.g. `lomi settings provider-key openai < key.txt`)"
                );
                Some(key)
            };
            (
                ControlRequest::ProviderKey { name, key },
                json,
                render(render_updated),
            )
        }
    })
}

/// Prints each section as `section (revision N)` and its fields, one per line.
fn render_settings(view: &SettingsView) {
    let Ok(Value::Object(sections)) = serde_json::to_value(view) else {
        return;
    };
    for (name, section) in sections {
        let Value::Object(mut fields) = section else {
            continue;
        };
        let revision = match fields.remove("settingsRevision") {
            Some(Value::String(revision)) => revision,
            _ => "?".to_owned(),
        };
        println!("{name} (revision {revision})");
        for (field, value) in fields {
            println!("  {field}: {value}");
        }
    }
}

fn render_updated(updated: &SettingsUpdated) {
    println!(
        "{} is at revision {}",
        crate::person::wire_name(&updated.section),
        updated.settings_revision
    );
    for (field, value) in &updated.values {
        println!("  {field}: {value}");
    }
}

/// Runs a settings command against the running Lomi.
pub fn run(data_dir: &Path, command: SettingsCommand) -> anyhow::Result<()> {
    let (request, json, render) = request(command)?;
    crate::runtime()?.block_on(crate::person::send(data_dir, request, json, render))
}
