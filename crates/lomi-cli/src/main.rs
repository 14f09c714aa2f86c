//! The `lomi` binary: parses the command line and forwards to the crates that do the work.

mod data_dir;
mod store_commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Lomi: workspaces of panels that AI agents work in through MCP, with the person in control.
#[derive(Debug, Parser)]
#[command(name = "lomi", version, about, propagate_version = true)]
struct Cli {
    /// Lomi's data directory (default: $XDG_DATA_HOME/lomi, usually ~/.local/share/lomi).
    #[arg(long, global = true, env = "LOMI_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every tool with its input and output JSON schemas, as JSON.
    Catalog,
    /// Inspect or maintain the private receipt store.
    Store {
        #[command(subcommand)]
        command: store_commands::StoreCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lomi: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Catalog => {
            let text = serde_json::to_string_pretty(&lomi_protocol::catalog::catalog_json())?;
            println!("{text}");
            Ok(())
        }
        Command::Store { command } => {
            let dir = data_dir::resolve(cli.data_dir)?;
            store_commands::run(&dir, command)
        }
    }
}
