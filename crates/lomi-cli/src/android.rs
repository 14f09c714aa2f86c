//! `lomi android choices|forget`: the attach decisions Lomi remembers per device. The first
//! attach of a device waits for `lomi decide`; the answer is kept in `android-devices.json` in
//! the data dir and later attaches follow it until the person forgets it here. While Lomi
//! runs, its broker reads and changes the file (under the lock its attaches write with);
//! otherwise the command does.

use std::path::Path;

use std::collections::BTreeMap;

use anyhow::Context;
use clap::Subcommand;
use lomi_mcp::control::ControlRequest;
use lomi_protocol::control::AndroidChoiceForgotten;
use serde::de::DeserializeOwned;

use crate::print_out;

#[derive(Debug, Subcommand)]
pub enum AndroidCommand {
    /// List the devices you allowed or denied, by adb serial.
    Choices {
        #[arg(long)]
        json: bool,
    },
    /// Forget your decision for a device: its next attach waits for you again.
    Forget { serial: String },
}

/// The running Lomi's answer to `request`, or `None` when no Lomi runs for `data_dir`.
fn ask_running<T: DeserializeOwned>(
    data_dir: &Path,
    request: ControlRequest,
) -> anyhow::Result<Option<T>> {
    if !lomi_mcp::local::socket_path(data_dir).exists() {
        return Ok(None);
    }
    let runtime = crate::runtime()?;
    let running = runtime.block_on(lomi_mcp::local::request(
        data_dir,
        &ControlRequest::Status {},
    ));
    if running.is_err() {
        return Ok(None);
    }
    runtime
        .block_on(crate::person::ask(data_dir, &request))
        .map(Some)
}

pub fn run(data_dir: &Path, command: AndroidCommand) -> anyhow::Result<()> {
    match command {
        AndroidCommand::Choices { json } => {
            let choices: BTreeMap<String, bool> =
                match ask_running(data_dir, ControlRequest::AndroidChoices {})? {
                    Some(choices) => choices,
                    None => lomi_android::panels::remembered_choices(data_dir)
                        .context("cannot read the remembered Android decisions")?,
                };
            if json {
                return print_out(&serde_json::to_string_pretty(&choices)?);
            }
            if choices.is_empty() {
                return print_out(
                    "No decisions yet: the first attach of each device waits for you.",
                );
            }
            for (serial, allowed) in choices {
                let word = if allowed { "allowed" } else { "denied" };
                print_out(&format!("{serial}\t{word}"))?;
            }
            Ok(())
        }
        AndroidCommand::Forget { serial } => {
            let request = ControlRequest::AndroidForget {
                serial: serial.clone(),
            };
            let forgotten = match ask_running::<AndroidChoiceForgotten>(data_dir, request)? {
                Some(reply) => reply.forgotten,
                None => lomi_android::panels::forget_choice(data_dir, &serial)
                    .context("cannot change the remembered Android decisions")?,
            };
            if forgotten {
                print_out(&format!(
                    "Forgot your decision for {serial}; its next attach waits for you."
                ))
            } else {
                anyhow::bail!(
                    "there is no remembered decision for {serial} (see `lomi android choices`)"
                )
            }
        }
    }
}
