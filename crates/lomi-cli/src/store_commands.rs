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
    ControlRequest, Retire, archived_json, maintenance, reconcile_json, store_status_json,
};
use lomi_store::{IdleRule, Store, StoreOptions, SystemClock};
use serde_json::Value;

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

    pub(crate) fn ask(&self, request: ControlRequest) -> anyhow::Result<Value> {
        match self {
            Access::Broker(dir, runtime) => runtime.block_on(crate::person::ask(dir, &request)),
            // No broker runs, so no epoch belongs to a running instance: all are idle.
            Access::Direct(store) => Ok(match request {
                ControlRequest::StoreStatus {} => {
                    store_status_json(&store.status(&IdleRule::new(None))?)
                }
                ControlRequest::StoreReconcile {
                    apply,
                    retire,
                    idle_for_seconds,
                } => {
                    let run = maintenance(IdleRule::new(None), retire.as_ref(), idle_for_seconds);
                    let report = if apply {
                        store.reconcile(&run)?
                    } else {
                        store.reconcile_preview(&run)?
                    };
                    let mut reply = reconcile_json(&report);
                    let status = store.status(&IdleRule::new(None))?;
                    reply["warningLevel"] = status.warning.as_str().into();
                    reply["receiptsRemaining"] = status.receipts_remaining.into();
                    reply
                }
                ControlRequest::OperationHistory { limit, after_seq } => {
                    let page = match after_seq {
                        Some(after) => store.history_after(after, limit)?,
                        None => store.history_list(limit, 0)?,
                    };
                    Value::Array(page.iter().map(archived_json).collect())
                }
                other => anyhow::bail!("not a store request: {other:?}"),
            }),
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
            let status = Access::open(data_dir)?.ask(ControlRequest::StoreStatus {})?;
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
            let preview = access.ask(request(false))?;
            if nothing_to_do(&preview) {
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
            let done = access.ask(request(true))?;
            report(&done, json, "done")
        }
    }
}

/// `lomi operation list --history`.
pub fn history_list(data_dir: &Path, limit: usize, json: bool) -> anyhow::Result<()> {
    let page = Access::open(data_dir)?.ask(ControlRequest::OperationHistory {
        limit,
        after_seq: None,
    })?;
    if json {
        return crate::print_out(&serde_json::to_string_pretty(&page)?);
    }
    let items = page.as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("the history is empty");
    }
    for op in &items {
        println!(
            "{}  {:<15}  effect {:<8}  {}  key {}  at {}  ({} {})",
            text(&op["operationId"]),
            text(&op["state"]),
            text(&op["effectState"]),
            text(&op["tool"]),
            text(&op["requestKey"]),
            text(&op["createdAt"]),
            text(&op["archivedBecause"]),
            text(&op["archivedAt"])
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
        let page = access.ask(ControlRequest::OperationHistory {
            limit: PAGE,
            after_seq: Some(after),
        })?;
        let items = page.as_array().cloned().unwrap_or_default();
        for item in &items {
            writeln!(out, "{}", serde_json::to_string(item)?)?;
            after = item["historySeq"].as_i64().unwrap_or(after);
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

fn count(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or(0)
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

fn nothing_to_do(report: &Value) -> bool {
    [
        "retryEpochsRetired",
        "receiptsArchived",
        "retryEpochsRemoved",
        "tombstonesRemoved",
    ]
    .iter()
    .all(|field| count(report, field) == 0)
}

/// What the run will do, in a person's words.
fn describe(report: &Value) -> String {
    let mut lines = Vec::new();
    let retired = report["retired"].as_array().cloned().unwrap_or_default();
    if !retired.is_empty() {
        lines.push(format!(
            "retire {} retry epoch(s); agents using them must call lomi_connect again:",
            retired.len()
        ));
        for epoch in retired.iter().take(20) {
            lines.push(format!(
                "  {}  pairing {}  since {}  {} receipts ({} unsettled, they stay)",
                text(&epoch["retryEpoch"]),
                text(&epoch["pairingId"]),
                text(&epoch["createdAt"]),
                count(epoch, "receipts"),
                count(epoch, "unsettledReceipts")
            ));
        }
        if retired.len() > 20 {
            lines.push(format!("  … and {} more", retired.len() - 20));
        }
    }
    lines.push(format!(
        "move {} settled receipts to the history (`lomi operation list --history`), drop {} events, \
         remove {} ended retry epochs ({} kept: their receipts are unsettled), {} old tombstones",
        count(report, "receiptsArchived"),
        count(report, "eventsRemoved"),
        count(report, "retryEpochsRemoved"),
        count(report, "endedRetryEpochsKept"),
        count(report, "tombstonesRemoved")
    ));
    lines.join("\n")
}

fn confirm(preview: &Value) -> anyhow::Result<()> {
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

fn report(report: &Value, json: bool, what: &str) -> anyhow::Result<()> {
    if json {
        return crate::print_out(&serde_json::to_string_pretty(report)?);
    }
    if nothing_to_do(report) {
        println!("{what}");
    } else {
        println!("{what}:\n{}", describe(report));
    }
    println!(
        "room left: {} receipts (level {})",
        count(report, "receiptsRemaining"),
        text(&report["warningLevel"])
    );
    Ok(())
}

fn print_status(status: &Value) {
    println!("store:         {}", text(&status["databasePath"]));
    println!("schema:        version {}", status["schemaVersion"]);
    println!(
        "receipts:      {} of {} ({} left; {} unsettled, {} movable to the history), oldest {}",
        status["receipts"],
        status["receiptCap"],
        status["receiptsRemaining"],
        status["unsettledReceipts"],
        status["removableReceipts"],
        text(&status["oldestReceiptAt"])
    );
    let states: Vec<String> = status["receiptsByState"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
        .map(|(state, n)| format!("{state} {n}"))
        .collect();
    if !states.is_empty() {
        println!("by state:      {}", states.join(", "));
    }
    println!(
        "retry epochs:  {} of {} ({} left; {} expired, {} idle, {} retired), oldest {}",
        status["retryEpochs"],
        status["retryEpochCap"],
        status["retryEpochsRemaining"],
        status["expiredRetryEpochs"],
        status["idleRetryEpochs"],
        status["retiredRetryEpochs"],
        text(&status["oldestRetryEpochAt"])
    );
    println!("history:       {} receipts", status["historyReceipts"]);
    println!("events:        {} retained", status["eventsRetained"]);
    let level = text(&status["warningLevel"]);
    println!("warning level: {level}");
    if level != "none" {
        println!(
            "  free room with `lomi store reconcile --retire idle` (asks before it changes anything)"
        );
    }
    for pairing in status["pairings"].as_array().into_iter().flatten() {
        println!(
            "pairing {}: {} live retry epochs ({} idle, {} ended but held), {} receipts ({} unsettled)",
            text(&pairing["pairingId"]),
            count(pairing, "liveRetryEpochs"),
            count(pairing, "idleRetryEpochs"),
            count(pairing, "endedRetryEpochs"),
            count(pairing, "receipts"),
            count(pairing, "unsettledReceipts")
        );
    }
}
