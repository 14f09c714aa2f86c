//! The `lomi` binary as a person runs it: version, catalog, store status and reconcile.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn lomi(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lomi"))
        .args(args)
        .env("LOMI_DATA_DIR", data_dir)
        .stdin(Stdio::null())
        .output()
        .expect("run lomi")
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn version_and_catalog() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = lomi(dir.path(), &["--version"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("lomi "),
        "{}",
        text(&out)
    );

    let out = lomi(dir.path(), &["catalog"]);
    assert!(out.status.success(), "{}", text(&out));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("catalog is JSON");
    assert_eq!(printed, lomi_protocol::catalog::catalog_json());
}

#[test]
fn store_status_on_a_fresh_data_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join("nested").join("lomi");
    let out = Command::new(env!("CARGO_BIN_EXE_lomi"))
        .args(["store", "status", "--json", "--data-dir"])
        .arg(&fresh)
        .output()
        .expect("run lomi");
    assert!(out.status.success(), "{}", text(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status is JSON");
    assert_eq!(status["receipts"], 0);
    assert_eq!(status["receiptCap"], 4096);
    assert_eq!(status["retryEpochCap"], 4096);
    assert!(fresh.join("lomi.sqlite3").is_file());

    let out = lomi(&fresh, &["store", "status"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("receipts:      0 of 4096"),
        "{}",
        text(&out)
    );
}

#[test]
fn reconcile_with_nothing_expired_removes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = lomi(dir.path(), &["store", "reconcile"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing removed"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_held_store_is_reported_not_corrupted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = lomi_store::Store::open(
        dir.path(),
        std::sync::Arc::new(lomi_store::SystemClock),
        lomi_store::StoreOptions::default(),
    )
    .expect("open");
    let out = lomi(dir.path(), &["store", "status"]);
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("lomi: "), "{}", text(&out));
    assert_eq!(stderr.lines().count(), 1, "one clear line: {}", text(&out));
    drop(held);
    let out = lomi(dir.path(), &["store", "status"]);
    assert!(out.status.success(), "{}", text(&out));
}
