//! `lomi android choices|forget`: the attach decisions Lomi remembers per device. The first
//! attach of a device waits for `lomi decide`; the answer is kept in `android-devices.json` in
//! the data dir and later attaches follow it until the person forgets it here.

use std::path::Path;

use anyhow::Context;
use clap::Subcommand;

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

pub fn run(data_dir: &Path, command: AndroidCommand) -> anyhow::Result<()> {
    match command {
        AndroidCommand::Choices { json } => {
            let choices = lomi_android::panels::remembered_choices(data_dir)
                .context("cannot read the remembered Android decisions")?;
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
            let forgotten = lomi_android::panels::forget_choice(data_dir, &serial)
                .context("cannot change the remembered Android decisions")?;
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
