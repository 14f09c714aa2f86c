//! `lomi store status|reconcile`: the person's view of the receipt store and its deliberate
//! maintenance. While Lomi runs, the running broker answers (it owns the store); otherwise
//! the command opens the store itself.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;
use lomi_mcp::control::{ControlRequest, reconcile_json, store_status_json};
use lomi_store::{Store, StoreOptions, SystemClock};
use serde_json::Value;

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Show receipt and retry-epoch counts, caps and the oldest records.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove expired retry epochs and the settled receipts that belong to them.
    Reconcile {
        /// Do not ask; required when standard input is not a terminal.
        #[arg(long)]
        yes: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Who answers: the running broker, or the store opened here.
enum Access<'a> {
    Broker(&'a Path, tokio::runtime::Runtime),
    Direct(Store),
}

impl Access<'_> {
    fn open(data_dir: &Path) -> anyhow::Result<Access<'_>> {
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

    fn ask(&self, request: ControlRequest) -> anyhow::Result<Value> {
        match self {
            Access::Broker(dir, runtime) => {
                let reply = runtime.block_on(lomi_mcp::local::request(dir, &request))?;
                if reply["status"] == "ok" {
                    Ok(reply["data"].clone())
                } else {
                    anyhow::bail!(
                        "{}: {}",
                        reply["code"].as_str().unwrap_or("ERROR"),
                        reply["message"].as_str().unwrap_or("unknown error")
                    )
                }
            }
            Access::Direct(store) => {
                let expired =
                    lomi_store::Maintenance::expired_only(lomi_store::IdleRule::new(None));
                Ok(match request {
                    ControlRequest::StoreStatus {} => {
                        store_status_json(&store.status(&lomi_store::IdleRule::new(None))?)
                    }
                    ControlRequest::StoreReconcile { apply: false } => {
                        reconcile_json(&store.reconcile_preview(&expired)?)
                    }
                    ControlRequest::StoreReconcile { apply: true } => {
                        reconcile_json(&store.reconcile(&expired)?)
                    }
                    other => anyhow::bail!("not a store request: {other:?}"),
                })
            }
        }
    }
}

pub fn run(data_dir: &Path, command: StoreCommand) -> anyhow::Result<()> {
    let access = Access::open(data_dir)?;
    match command {
        StoreCommand::Status { json } => {
            let status = access.ask(ControlRequest::StoreStatus {})?;
            if json {
                crate::print_out(&serde_json::to_string_pretty(&status)?)
            } else {
                print_status(&status);
                Ok(())
            }
        }
        StoreCommand::Reconcile { yes, json } => {
            let preview = access.ask(ControlRequest::StoreReconcile { apply: false })?;
            if count(&preview, "retryEpochsRemoved") == 0 && count(&preview, "receiptsRemoved") == 0
            {
                return report(&preview, json, "nothing is expired, nothing removed");
            }
            if !yes {
                confirm(&preview)?;
            }
            let done = access.ask(ControlRequest::StoreReconcile { apply: true })?;
            report(&done, json, "removed")
        }
    }
}

fn count(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or(0)
}

fn confirm(preview: &Value) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let (epochs, receipts) = (
        count(preview, "retryEpochsRemoved"),
        count(preview, "receiptsRemoved"),
    );
    if !stdin.is_terminal() {
        anyhow::bail!(
            "reconcile would remove {epochs} expired retry epochs and {receipts} receipts; pass --yes to confirm \
             (standard input is not a terminal)"
        );
    }
    print!(
        "Remove {epochs} expired retry epochs and {receipts} settled receipts that belong to them? [y/N] "
    );
    std::io::stdout().flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        Ok(())
    } else {
        anyhow::bail!("nothing removed")
    }
}

fn report(report: &Value, json: bool, what: &str) -> anyhow::Result<()> {
    if json {
        return crate::print_out(&serde_json::to_string_pretty(report)?);
    }
    if count(report, "retryEpochsRemoved") == 0 && count(report, "receiptsRemoved") == 0 {
        println!("{what}");
    } else {
        println!(
            "{what}: {} retry epochs, {} receipts, {} events ({} expired epochs kept: their receipts are unsettled)",
            count(report, "retryEpochsRemoved"),
            count(report, "receiptsRemoved"),
            count(report, "eventsRemoved"),
            count(report, "expiredRetryEpochsKept")
        );
    }
    Ok(())
}

fn print_status(status: &Value) {
    let text = |v: &Value| v.as_str().map_or("-".to_owned(), str::to_owned);
    println!("store:         {}", text(&status["databasePath"]));
    println!("schema:        version {}", status["schemaVersion"]);
    println!(
        "receipts:      {} of {} ({} unsettled, {} removable by reconcile), oldest {}",
        status["receipts"],
        status["receiptCap"],
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
        "retry epochs:  {} of {} ({} expired), oldest {}",
        status["retryEpochs"],
        status["retryEpochCap"],
        status["expiredRetryEpochs"],
        text(&status["oldestRetryEpochAt"])
    );
    println!("events:        {} retained", status["eventsRetained"]);
}
