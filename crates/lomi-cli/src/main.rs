//! The `lomi` binary: parses the command line and forwards to the crates that do the work.

mod android;
mod attach;
mod bridge;
mod chat_commands;
mod connect;
mod person;
mod project_commands;
mod rule_commands;
mod serve;
mod settings_commands;
mod store_commands;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use lomi_mcp::control::ControlRequest;
use lomi_mcp::data_dir;
use lomi_protocol::OperationId;

use crate::person::{Decision, OperationCommand, PairingCommand, WorkspaceCommand};

/// Lomi: workspaces of panels that AI agents work in through MCP, with the person in control.
#[derive(Debug, Parser)]
#[command(name = "lomi", version, about, propagate_version = true)]
struct Cli {
    /// Lomi's data directory (default: $XDG_DATA_HOME/lomi, usually ~/.local/share/lomi).
    #[arg(long, global = true, env = "LOMI_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,

    /// Without a command, `lomi` opens the desktop app when there is a display.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum TerminalCommand {
    /// Watch a terminal panel and type in it (a takeover: agents' leases end). Ctrl-] detaches.
    Attach { panel_id: lomi_protocol::PanelId },
}

#[derive(Debug, Subcommand)]
enum BrowserCommand {
    /// Show or choose a workspace's browser profile: `--persistent` keeps one profile (cookies,
    /// storage, logins) for its browser panels in Lomi's data dir; `--fresh` gives each browser
    /// a new one again (add `--delete` to remove the kept folder). Applies to browsers started
    /// from now on.
    Profile {
        workspace_id: lomi_protocol::WorkspaceId,
        #[arg(long, conflicts_with = "fresh")]
        persistent: bool,
        #[arg(long)]
        fresh: bool,
        #[arg(long, requires = "fresh")]
        delete: bool,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the broker and its MCP endpoint.
    Serve {
        /// Run without a window; decisions are taken with `lomi pairing …` and `lomi decide …`.
        #[arg(long)]
        headless: bool,
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
        /// For tests only: caps both receipts and retry epochs at N instead of 4,096, so a test
        /// can fill the store in seconds.
        #[arg(long, hide = true, env = "LOMI_STORE_CAP", value_name = "N")]
        store_cap: Option<usize>,
    },
    /// The stdio MCP server an agent launches: relays to the running Lomi, paired through a
    /// secret kept in the OS keyring.
    Mcp {
        /// The name the person sees when approving this client.
        #[arg(long, default_value = "MCP client (stdio)")]
        name: String,
    },
    /// Print every tool with its input and output JSON schemas, as JSON.
    Catalog,
    /// Add the running Lomi to an agent's own config with its CLI (says what it runs first and
    /// keeps a copy of the config), then check the entry with the client's reader.
    Connect {
        #[arg(value_enum)]
        client: connect::Client,
        /// Take Lomi's entry out instead.
        #[arg(long)]
        remove: bool,
    },
    /// Workspaces and their projects.
    Workspace {
        #[command(subcommand)]
        command: WorkspaceCommand,
    },
    /// Agents' pairings and their grants.
    Pairing {
        #[command(subcommand)]
        command: PairingCommand,
    },
    /// Approve or deny an operation that waits for you (awaiting_user); with `--remember`,
    /// also keep a rule so calls like it are decided the same way from now on.
    Decide {
        operation_id: OperationId,
        #[arg(value_enum)]
        decision: Decision,
        #[command(flatten)]
        remember: rule_commands::RememberArgs,
        #[arg(long)]
        json: bool,
    },
    /// Your rules: which agents' calls run at once, wait for you, or are refused, by tool or
    /// family and by path, URL, command or package.
    Rule {
        #[command(subcommand)]
        command: rule_commands::RuleCommand,
    },
    /// Pause agents' changes at once (every agent, or one with --agent): new changes and
    /// guarded terminal lines are refused (PAUSED), running operations are asked to cancel;
    /// reads keep working.
    Pause {
        #[arg(long)]
        agent: Option<lomi_protocol::PairingId>,
        #[arg(long)]
        json: bool,
    },
    /// Let agents' changes run again (every agent, or one with --agent).
    Resume {
        #[arg(long)]
        agent: Option<lomi_protocol::PairingId>,
        #[arg(long)]
        json: bool,
    },
    /// What each agent did: calls and operations, times per tool, denials and by which rule,
    /// errors by code, last seen.
    Activity {
        #[arg(long)]
        agent: Option<lomi_protocol::PairingId>,
        #[arg(long)]
        json: bool,
    },
    /// The operations waiting for your decision, with exactly what each will do: the diff of
    /// a file write, a deleted file's size and first lines, a commit's staged diff and
    /// message, a command, a script, a Chat send's message, provider and model.
    Decisions {
        #[arg(long)]
        json: bool,
    },
    /// Terminal panels.
    Terminal {
        #[command(subcommand)]
        command: TerminalCommand,
    },
    /// Every operation's receipt, for you.
    Operation {
        #[command(subcommand)]
        command: OperationCommand,
    },
    /// What waits for your decision before it runs: every mutating tool, grouped by family
    /// in plain words ("Delete files"), ticked when it asks (change one with `lomi confirm`).
    Policy {
        #[arg(long)]
        json: bool,
    },
    /// Mark a mutating tool as needing your decision before it runs (or clear the mark).
    Confirm {
        tool: String,
        #[arg(long)]
        off: bool,
    },
    /// Browser panels: the profile a workspace's browsers use.
    Browser {
        #[command(subcommand)]
        command: BrowserCommand,
    },
    /// Your settings: terminal, browser, editor, chat, providers (keys in the OS keyring),
    /// and what agents may read of pairings, confirmations and the network.
    Settings {
        #[command(subcommand)]
        command: settings_commands::SettingsCommand,
    },
    /// Chat: a workspace's conversations with your model providers (list, show, send).
    Chat {
        #[command(subcommand)]
        command: chat_commands::ChatCommand,
    },
    /// A project's files (the window's file tree).
    Files {
        #[command(subcommand)]
        command: project_commands::FilesCommand,
    },
    /// A project's Git: status, diffs, staging and your commits (the window's Git view).
    Git {
        #[command(subcommand)]
        command: project_commands::GitCommand,
    },
    /// Editor documents: the same ones agents edit (the window's editor).
    Document {
        #[command(subcommand)]
        command: project_commands::DocumentCommand,
    },
    /// Android devices: the attach decisions Lomi remembers for you.
    Android {
        #[command(subcommand)]
        command: android::AndroidCommand,
    },
    /// Inspect or maintain the private receipt store.
    Store {
        #[command(subcommand)]
        command: store_commands::StoreCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        return open_app(cli.data_dir);
    };
    match run(cli.data_dir, command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lomi: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Prints to stdout; a reader that closed the pipe early (`lomi catalog | head`) is not an error.
pub fn print_out(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(error.into()),
        _ => Ok(()),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// `lomi` alone: the desktop app (`lomi-desktop`, installed beside `lomi`) on a machine with a
/// display; otherwise the usage, pointing at `lomi serve --headless`.
fn open_app(data_dir: Option<PathBuf>) -> ExitCode {
    let has_display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    if !has_display {
        eprintln!(
            "lomi: no display (DISPLAY and WAYLAND_DISPLAY are unset); run `lomi serve --headless`, or see `lomi --help`"
        );
        return ExitCode::from(2);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("lomi-desktop")))
        .filter(|path| path.is_file());
    let program = beside.unwrap_or_else(|| PathBuf::from("lomi-desktop"));
    let mut command = std::process::Command::new(&program);
    if let Some(dir) = data_dir {
        command.arg("--data-dir").arg(dir);
    }
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    eprintln!(
        "lomi: cannot start the desktop app {} ({error}); build it with `scripts/run`, or run `lomi serve --headless`",
        program.display()
    );
    ExitCode::FAILURE
}

fn run(data_dir: Option<PathBuf>, command: Command) -> anyhow::Result<()> {
    let cli_data_dir = data_dir;
    match command {
        Command::Catalog => {
            let text = serde_json::to_string_pretty(&lomi_protocol::catalog::catalog_json())?;
            print_out(&text)
        }
        Command::Store { command } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            store_commands::run(&dir, command)
        }
        Command::Connect { client, remove } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            connect::run(&dir, client, remove)
        }
        Command::Android { command } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            android::run(&dir, command)
        }
        Command::Settings { command } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            settings_commands::run(&dir, command)
        }
        Command::Rule { command } => rule_commands::run(&data_dir::resolve(cli_data_dir)?, command),
        Command::Pause { agent, json } => {
            rule_commands::pause(&data_dir::resolve(cli_data_dir)?, true, agent, json)
        }
        Command::Resume { agent, json } => {
            rule_commands::pause(&data_dir::resolve(cli_data_dir)?, false, agent, json)
        }
        Command::Activity { agent, json } => {
            rule_commands::activity(&data_dir::resolve(cli_data_dir)?, agent, json)
        }
        Command::Decide {
            operation_id,
            decision,
            remember,
            json,
        } if remember.remember => rule_commands::decide_remembering(
            &data_dir::resolve(cli_data_dir)?,
            operation_id,
            matches!(decision, Decision::Approve),
            remember,
            json,
        ),
        Command::Chat { command } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            chat_commands::run(&dir, command)
        }
        Command::Files { command } => {
            project_commands::run_files(&data_dir::resolve(cli_data_dir)?, command)
        }
        Command::Git { command } => {
            project_commands::run_git(&data_dir::resolve(cli_data_dir)?, command)
        }
        Command::Document { command } => {
            project_commands::run_document(&data_dir::resolve(cli_data_dir)?, command)
        }
        Command::Serve {
            headless: _,
            http,
            adb_server,
            store_cap,
        } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            tracing_subscriber::fmt()
                .with_writer(std::io::stderr)
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_env("LOMI_LOG")
                        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
                )
                .init();
            runtime()?.block_on(serve::run(&dir, http, adb_server, store_cap))
        }
        Command::Terminal {
            command: TerminalCommand::Attach { panel_id },
        } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            runtime()?.block_on(attach::run(&dir, panel_id))
        }
        Command::Mcp { name } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            // The keyring is asked before the async runtime starts: its client runs its own
            // executor and must not be nested inside tokio's.
            let (secret, kept) = bridge::secret(&dir)?;
            if let Some(note) = bridge::kept_note(&kept) {
                eprintln!("{note}");
            }
            runtime()?.block_on(bridge::relay(&dir, name, secret))
        }
        // The history is read through the running broker or, when none runs, from the store.
        Command::Operation {
            command:
                OperationCommand::List {
                    limit,
                    json,
                    history: true,
                },
        } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            store_commands::history_list(&dir, limit, json)
        }
        Command::Operation {
            command: OperationCommand::Export { history: _, file },
        } => {
            let dir = data_dir::resolve(cli_data_dir)?;
            store_commands::history_export(&dir, file.as_deref())
        }
        command => {
            let dir = data_dir::resolve(cli_data_dir)?;
            let (request, json, render) = person_request(command);
            runtime()?.block_on(person::send(&dir, request, json, render))
        }
    }
}

use person::{Render, render};

fn person_request(command: Command) -> (ControlRequest, bool, Render) {
    match command {
        Command::Workspace { command } => match command {
            WorkspaceCommand::Add {
                name,
                project,
                json,
            } => {
                let project = std::path::absolute(&project).unwrap_or(project);
                (
                    ControlRequest::WorkspaceAdd { name, project },
                    json,
                    render(person::render_workspace),
                )
            }
            WorkspaceCommand::List { json } => (
                ControlRequest::WorkspaceList {},
                json,
                render(person::render_workspaces),
            ),
            WorkspaceCommand::Remove { workspace_id, json } => (
                ControlRequest::WorkspaceRemove { workspace_id },
                json,
                render(person::render_workspace_removed),
            ),
            WorkspaceCommand::AddProject {
                workspace_id,
                project,
                json,
            } => {
                let project = std::path::absolute(&project).unwrap_or(project);
                (
                    ControlRequest::ProjectAdd {
                        workspace_id,
                        project,
                    },
                    json,
                    render(person::render_project_added),
                )
            }
            WorkspaceCommand::RemoveProject {
                workspace_id,
                project_id,
                json,
            } => (
                ControlRequest::ProjectRemove {
                    workspace_id,
                    project_id,
                },
                json,
                render(person::render_project_removed),
            ),
        },
        Command::Pairing { command } => match command {
            PairingCommand::List { json } => (
                ControlRequest::PairingList {},
                json,
                render(person::render_pairings),
            ),
            PairingCommand::Approve {
                pairing_id,
                workspaces,
                session,
                families,
                json,
            } => (
                ControlRequest::PairingApprove {
                    pairing_id,
                    workspaces,
                    session,
                    families: person::chosen_families(families),
                },
                json,
                render(person::render_pairing_approved),
            ),
            PairingCommand::Families {
                pairing_id,
                families,
                all,
                json,
            } => (
                ControlRequest::PairingFamilies {
                    pairing_id,
                    families: if all {
                        None
                    } else {
                        person::chosen_families(families)
                    },
                },
                json,
                render(person::render_families),
            ),
            PairingCommand::Deny { pairing_id, json } => (
                ControlRequest::PairingDeny { pairing_id },
                json,
                render(person::render_pairing_decided),
            ),
            PairingCommand::Revoke { pairing_id, json } => (
                ControlRequest::PairingRevoke { pairing_id },
                json,
                render(person::render_pairing_decided),
            ),
            PairingCommand::Create {
                name,
                workspaces,
                families,
                json,
            } => (
                ControlRequest::PairingCreate {
                    name,
                    workspaces,
                    families: person::chosen_families(families),
                },
                json,
                render(person::render_created),
            ),
        },
        Command::Decide {
            operation_id,
            decision,
            json,
            ..
        } => (
            ControlRequest::Decide {
                operation_id,
                approve: matches!(decision, Decision::Approve),
                remember: None,
            },
            json,
            render(person::render_decided),
        ),
        Command::Decisions { json } => (
            ControlRequest::DecisionList {},
            json,
            render(person::render_decisions),
        ),
        Command::Operation { command } => match command {
            OperationCommand::List { limit, json, .. } => (
                ControlRequest::OperationList { limit },
                json,
                render(person::render_operations),
            ),
            OperationCommand::Show { operation_id, json } => (
                ControlRequest::OperationShow { operation_id },
                json,
                render(person::render_operation),
            ),
            // Handled in `run`; never reaches here.
            OperationCommand::Export { .. } => (
                ControlRequest::Status {},
                false,
                render(person::render_operation),
            ),
        },
        Command::Policy { json } => (
            ControlRequest::PolicyList {},
            json,
            render(person::render_policy),
        ),
        Command::Confirm { tool, off } => (
            ControlRequest::Confirm {
                tool,
                confirm: !off,
            },
            false,
            render(person::render_operation),
        ),
        Command::Browser {
            command:
                BrowserCommand::Profile {
                    workspace_id,
                    persistent,
                    fresh,
                    delete,
                    json,
                },
        } => (
            ControlRequest::BrowserProfile {
                workspace_id,
                persistent: (persistent || fresh).then_some(persistent),
                delete,
            },
            json,
            render(render_browser_profile),
        ),
        Command::Serve { .. }
        | Command::Catalog
        | Command::Connect { .. }
        | Command::Store { .. }
        | Command::Android { .. }
        | Command::Settings { .. }
        | Command::Rule { .. }
        | Command::Pause { .. }
        | Command::Resume { .. }
        | Command::Activity { .. }
        | Command::Chat { .. }
        | Command::Files { .. }
        | Command::Git { .. }
        | Command::Document { .. }
        | Command::Mcp { .. }
        | Command::Terminal { .. } => (
            ControlRequest::Status {},
            false,
            render(person::render_operation),
        ),
    }
}

fn render_browser_profile(v: &lomi_protocol::control::BrowserProfile) {
    let (workspace, path) = (&v.workspace_id, &v.path);
    if v.persistent {
        println!("{workspace}: browser panels keep a persistent profile in {path}");
    } else {
        println!("{workspace}: each browser panel gets a fresh profile");
        if v.deleted {
            println!("removed {path}");
        } else if v.exists {
            println!("the kept profile is still in {path} (`--fresh --delete` removes it)");
        }
    }
}
