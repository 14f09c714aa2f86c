//! `lomi store status|reconcile`: the person's view of the receipt store and its deliberate
//! maintenance.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;
use lomi_store::{ReconcileReport, Store, StoreOptions, StoreStatus, SystemClock};
use serde_json::json;

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

pub fn run(data_dir: &Path, command: StoreCommand) -> anyhow::Result<()> {
    let store = Store::open(data_dir, Arc::new(SystemClock), StoreOptions::default())
        .with_context(|| format!("cannot open the store in {}", data_dir.display()))?;
    match command {
        StoreCommand::Status { json } => {
            let status = store.status()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status_json(&status))?);
            } else {
                print_status(&status);
            }
            Ok(())
        }
        StoreCommand::Reconcile { yes, json } => {
            let preview = store.reconcile_preview()?;
            if preview.retry_epochs_removed == 0 && preview.receipts_removed == 0 {
                return report(&preview, json, "nothing is expired, nothing removed");
            }
            if !yes {
                confirm(&preview)?;
            }
            let done = store.reconcile()?;
            report(&done, json, "removed")
        }
    }
}

fn confirm(preview: &ReconcileReport) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        anyhow::bail!(
            "reconcile would remove {} expired retry epochs and {} receipts; pass --yes to confirm \
             (standard input is not a terminal)",
            preview.retry_epochs_removed,
            preview.receipts_removed
        );
    }
    print!(
        "Remove {} expired retry epochs and {} settled receipts that belong to them? [y/N] ",
        preview.retry_epochs_removed, preview.receipts_removed
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

fn report(report: &ReconcileReport, json: bool, what: &str) -> anyhow::Result<()> {
    if json {
        let value = json!({
            "retryEpochsRemoved": report.retry_epochs_removed,
            "receiptsRemoved": report.receipts_removed,
            "eventsRemoved": report.events_removed,
            "expiredRetryEpochsKept": report.expired_retry_epochs_kept,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else if report.retry_epochs_removed == 0 && report.receipts_removed == 0 {
        println!("{what}");
    } else {
        println!(
            "{what}: {} retry epochs, {} receipts, {} events ({} expired epochs kept: their receipts are unsettled)",
            report.retry_epochs_removed,
            report.receipts_removed,
            report.events_removed,
            report.expired_retry_epochs_kept
        );
    }
    Ok(())
}

fn status_json(status: &StoreStatus) -> serde_json::Value {
    let by_state: serde_json::Map<String, serde_json::Value> = status
        .receipts_by_state
        .iter()
        .map(|c| (c.state.as_str().to_owned(), json!(c.count)))
        .collect();
    json!({
        "databasePath": status.database_path,
        "schemaVersion": status.schema_version,
        "receipts": status.receipts,
        "receiptCap": status.receipt_cap,
        "unsettledReceipts": status.unsettled_receipts,
        "receiptsByState": by_state,
        "removableReceipts": status.removable_receipts,
        "retryEpochs": status.retry_epochs,
        "retryEpochCap": status.retry_epoch_cap,
        "expiredRetryEpochs": status.expired_retry_epochs,
        "oldestReceiptAt": status.oldest_receipt_at,
        "oldestRetryEpochAt": status.oldest_retry_epoch_at,
        "eventsRetained": status.events_retained,
    })
}

fn print_status(status: &StoreStatus) {
    let oldest = |t: Option<lomi_protocol::Timestamp>| t.map_or("-".to_owned(), |t| t.to_rfc3339());
    println!("store:         {}", status.database_path.display());
    println!("schema:        version {}", status.schema_version);
    println!(
        "receipts:      {} of {} ({} unsettled, {} removable by reconcile), oldest {}",
        status.receipts,
        status.receipt_cap,
        status.unsettled_receipts,
        status.removable_receipts,
        oldest(status.oldest_receipt_at)
    );
    let states: Vec<String> = status
        .receipts_by_state
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| format!("{} {}", c.state, c.count))
        .collect();
    if !states.is_empty() {
        println!("by state:      {}", states.join(", "));
    }
    println!(
        "retry epochs:  {} of {} ({} expired), oldest {}",
        status.retry_epochs,
        status.retry_epoch_cap,
        status.expired_retry_epochs,
        oldest(status.oldest_retry_epoch_at)
    );
    println!("events:        {} retained", status.events_retained);
}
