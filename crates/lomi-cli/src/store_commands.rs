//! `lomi store status|reconcile` and `lomi operation list --history|export --history`: the
//! person's view of the receipt store, its deliberate maintenance (retiring retry epochs,
//! moving settled receipts to the history) and the history itself. While Lomi runs, the
//! running broker answers (it owns the store); otherwise the command opens the store itself.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use lomi_mcp::control::{
    ControlRequest, Retire, archived_receipt, maintenance, reconcile_report, store_status,
};
use lomi_protocol::Timestamp;
use lomi_protocol::control::{ArchivedReceipt, ReconcileReport, StoreStatus, WarningLevel};
use lomi_store::{IdleRule, Store, StoreOptions, SystemClock};

use crate::person::wire_name;

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Show receipt and retry-epoch counts, caps, room left, the warning level, and each
    /// pairing's share.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Free room: retire retry epochs (with --retire), then move the settled receipts of
    /// retired and expired epochs to the history. Shows what it will do and asks first.
    Reconcile {
        /// Which epochs to retire: `idle`, `pairing ID`, `older-than DURATION` (e.g. 2h, 30m,
        /// 1d) or `epoch ID`. A retired epoch is refused from then on; unsettled receipts stay.
        #[arg(long, num_args = 1..=2, value_names = ["WHAT", "ID_OR_DURATION"])]
        retire: Option<Vec<String>>,
        /// How long an epoch must be quiet (no unsettled operation, nothing new) to be idle.
        #[arg(long, value_name = "DURATION", default_value = "10m")]
        idle_for: String,
        /// Do not ask; required when standard input is not a terminal.
        #[arg(long)]
        yes: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Who answers: the running broker, or the store opened here.
pub(crate) enum Access<'a> {
    Broker(&'a Path, tokio::runtime::Runtime),
    Direct(Store),
}

impl Access<'_> {
    pub(crate) fn open(data_dir: &Path) -> anyhow::Result<Access<'_>> {
        if lomi_mcp::local::socket_path(data_dir).exists() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let running = runtime.block_on(lomi_mcp::local::request(
                data_dir,
                &ControlRequest::Status {},
            ));
            if running.is_ok() {
                return Ok(Access::Broker(data_dir, runtime));
            }
        }
        let store = Store::open(data_dir, Arc::new(SystemClock), StoreOptions::default())
            .with_context(|| format!("cannot open the store in {}", data_dir.display()))?;
        Ok(Access::Direct(store))
    }

    /// The store's counts, caps and warning level.
    pub(crate) fn status(&self) -> anyhow::Result<StoreStatus> {
        match self {
            Access::Broker(dir, runtime) => {
                runtime.block_on(crate::person::ask(dir, &ControlRequest::StoreStatus {}))
            }
            // No broker runs, so no epoch belongs to a running instance: all are idle.
            Access::Direct(store) => Ok(store_status(&store.status(&IdleRule::new(None))?)),
        }
    }

    /// The reconcile `request` asks for: done with `apply`, previewed without.
    pub(crate) fn reconcile(&self, request: ControlRequest) -> anyhow::Result<ReconcileReport> {
        match (self, request) {
            (Access::Broker(dir, runtime), request) => {
                runtime.block_on(crate::person::ask(dir, &request))
            }
            (
                Access::Direct(store),
                ControlRequest::StoreReconcile {
                    apply,
                    retire,
                    idle_for_seconds,
                },
            ) => {
                let run = maintenance(IdleRule::new(None), retire.as_ref(), idle_for_seconds);
                let report = if apply {
                    store.reconcile(&run)?
                } else {
                    store.reconcile_preview(&run)?
                };
                Ok(reconcile_report(
                    &report,
                    &store.status(&IdleRule::new(None))?,
                ))
            }
            (Access::Direct(_), other) => anyhow::bail!("not a reconcile request: {other:?}"),
        }
    }

    /// A page of the history: newest first, or oldest first after `after_seq`.
    pub(crate) fn history(
        &self,
        limit: usize,
        after_seq: Option<i64>,
    ) -> anyhow::Result<Vec<ArchivedReceipt>> {
        match self {
            Access::Broker(dir, runtime) => runtime.block_on(crate::person::ask(
                dir,
                &ControlRequest::OperationHistory { limit, after_seq },
            )),
            Access::Direct(store) => {
                let page = match after_seq {
                    Some(after) => store.history_after(after, limit)?,
                    None => store.history_list(limit, 0)?,
                };
                Ok(page.iter().map(archived_receipt).collect())
            }
        }
    }
}

/// `10m`, `2h`, `1d`, `90s`, or plain seconds.
fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let number: u64 = number
        .parse()
        .with_context(|| format!("{text:?} is not a duration like 90s, 10m, 2h or 1d"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => anyhow::bail!("{text:?} is not a duration like 90s, 10m, 2h or 1d"),
    };
    Ok(Duration::from_secs(number.saturating_mul(seconds)))
}

fn parse_retire(words: &[String]) -> anyhow::Result<Retire> {
    let usage = "--retire takes `idle`, `pairing ID`, `older-than DURATION` or `epoch ID`";
    match words {
        [what] if what == "idle" => Ok(Retire::Idle {}),
        [what, id] if what == "pairing" => Ok(Retire::Pairing {
            pairing_id: lomi_protocol::PairingId::parse(id.clone())
                .map_err(|e| anyhow::anyhow!("{e}; {usage}"))?,
        }),
        [what, age] if what == "older-than" => Ok(Retire::OlderThan {
            seconds: parse_duration(age)?.as_secs(),
        }),
        [what, id] if what == "epoch" => Ok(Retire::Epoch {
            retry_epoch: lomi_protocol::RetryEpoch::parse(id.clone())
                .map_err(|e| anyhow::anyhow!("{e}; {usage}"))?,
        }),
        _ => anyhow::bail!("{usage}"),
    }
}

pub fn run(data_dir: &Path, command: StoreCommand) -> anyhow::Result<()> {
    match command {
        StoreCommand::Status { json } => {
            let status = Access::open(data_dir)?.status()?;
            if json {
                crate::print_out(&serde_json::to_string_pretty(&status)?)
            } else {
                print_status(&status);
                Ok(())
            }
        }
        StoreCommand::Reconcile {
            retire,
            idle_for,
            yes,
            json,
        } => {
            let retire = retire.as_deref().map(parse_retire).transpose()?;
            let idle_for_seconds = Some(parse_duration(&idle_for)?.as_secs());
            let access = Access::open(data_dir)?;
            let request = |apply| ControlRequest::StoreReconcile {
                apply,
                retire: retire.clone(),
                idle_for_seconds,
            };
            let preview = access.reconcile(request(false))?;
            if preview.is_empty() {
                if !json && retire == Some(Retire::Idle {}) {
                    println!(
                        "no retry epoch is idle (idle: no unsettled operation and nothing new for {idle_for}, or issued by an earlier Lomi run); \
                         `--idle-for 1m`, `--retire pairing ID` or `--retire epoch ID` retire busier ones"
                    );
                }
                return report(&preview, json, "nothing to retire, nothing removed");
            }
            if !yes {
                confirm(&preview)?;
            }
            let done = access.reconcile(request(true))?;
            report(&done, json, "done")
        }
    }
}

/// `lomi operation list --history`.
pub fn history_list(data_dir: &Path, limit: usize, json: bool) -> anyhow::Result<()> {
    let items = Access::open(data_dir)?.history(limit, None)?;
    if json {
        return crate::print_out(&serde_json::to_string_pretty(&items)?);
    }
    if items.is_empty() {
        println!("the history is empty");
    }
    for op in &items {
        println!(
            "{}  {:<15}  effect {:<8}  {}  key {}  at {}  ({} {})",
            op.operation_id,
            op.state.as_str(),
            op.effect_state.as_str(),
            op.tool,
            op.request_key,
            op.created_at,
            wire_name(&op.archived_because),
            op.archived_at
        );
    }
    Ok(())
}

/// `lomi operation export --history [FILE]`: JSON Lines, oldest first, in pages.
pub fn history_export(data_dir: &Path, file: Option<&Path>) -> anyhow::Result<()> {
    const PAGE: usize = 1_000;
    let access = Access::open(data_dir)?;
    let mut out: Box<dyn Write> = match file {
        Some(path) if path != Path::new("-") => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        _ => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut after = 0;
    let mut written = 0;
    loop {
        let items = access.history(PAGE, Some(after))?;
        for item in &items {
            writeln!(out, "{}", serde_json::to_string(item)?)?;
            after = item.history_seq;
        }
        written += items.len();
        if items.len() < PAGE {
            break;
        }
    }
    out.flush()?;
    if let Some(path) = file.filter(|p| *p != Path::new("-")) {
        eprintln!("wrote {written} receipts to {}", path.display());
    }
    Ok(())
}

/// A time, or `-` for none.
fn time(at: Option<Timestamp>) -> String {
    at.map_or("-".to_owned(), |at| at.to_string())
}

/// What the run will do, in a person's words.
fn describe(report: &ReconcileReport) -> String {
    let mut lines = Vec::new();
    let retired = &report.retired;
    if !retired.is_empty() {
        lines.push(format!(
            "retire {} retry epoch(s); agents using them must call lomi_connect again:",
            retired.len()
        ));
        for epoch in retired.iter().take(20) {
            lines.push(format!(
                "  {}  pairing {}  since {}  {} receipts ({} unsettled, they stay)",
                epoch.retry_epoch,
                epoch.pairing_id,
                epoch.created_at,
                epoch.receipts,
                epoch.unsettled_receipts
            ));
        }
        if retired.len() > 20 {
            lines.push(format!("  … and {} more", retired.len() - 20));
        }
    }
    lines.push(format!(
        "move {} settled receipts to the history (`lomi operation list --history`), drop {} events, \
         remove {} ended retry epochs ({} kept: their receipts are unsettled), {} old tombstones",
        report.receipts_archived,
        report.events_removed,
        report.retry_epochs_removed,
        report.ended_retry_epochs_kept,
        report.tombstones_removed
    ));
    lines.join("\n")
}

fn confirm(preview: &ReconcileReport) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        anyhow::bail!(
            "reconcile would:\n{}\npass --yes to confirm (standard input is not a terminal)",
            describe(preview)
        );
    }
    print!("{}\nGo ahead? [y/N] ", describe(preview));
    std::io::stdout().flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        anyhow::bail!("nothing changed")
    }
}

fn report(report: &ReconcileReport, json: bool, what: &str) -> anyhow::Result<()> {
    if json {
        return crate::print_out(&serde_json::to_string_pretty(report)?);
    }
    if report.is_empty() {
        println!("{what}");
    } else {
        println!("{what}:\n{}", describe(report));
    }
    println!(
        "room left: {} receipts (level {})",
        report.receipts_remaining,
        report.warning_level.as_str()
    );
    Ok(())
}

fn print_status(status: &StoreStatus) {
    println!("store:         {}", status.database_path);
    println!("schema:        version {}", status.schema_version);
    println!(
        "receipts:      {} of {} ({} left; {} unsettled, {} movable to the history), oldest {}",
        status.receipts,
        status.receipt_cap,
        status.receipts_remaining,
        status.unsettled_receipts,
        status.removable_receipts,
        time(status.oldest_receipt_at)
    );
    let states: Vec<String> = (status.receipts_by_state.iter())
        .filter(|(_, n)| **n > 0)
        .map(|(state, n)| format!("{state} {n}"))
        .collect();
    if !states.is_empty() {
        println!("by state:      {}", states.join(", "));
    }
    println!(
        "retry epochs:  {} of {} ({} left; {} expired, {} idle, {} retired), oldest {}",
        status.retry_epochs,
        status.retry_epoch_cap,
        status.retry_epochs_remaining,
        status.expired_retry_epochs,
        status.idle_retry_epochs,
        status.retired_retry_epochs,
        time(status.oldest_retry_epoch_at)
    );
    println!("history:       {} receipts", status.history_receipts);
    println!("events:        {} retained", status.events_retained);
    let level = status.warning_level;
    println!("warning level: {}", level.as_str());
    if level != WarningLevel::None {
        println!(
            "  free room with `lomi store reconcile --retire idle` (asks before it changes anything)"
        );
    }
    for pairing in &status.pairings {
        println!(
            "pairing {}: {} live retry epochs ({} idle, {} ended but held), {} receipts ({} unsettled)",
            pairing.pairing_id,
            pairing.live_retry_epochs,
            pairing.idle_retry_epochs,
            pairing.ended_retry_epochs,
            pairing.receipts,
            pairing.unsettled_receipts
        );
    }
}
