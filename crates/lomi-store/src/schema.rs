//! The store's schema as an ordered list of migrations, tracked by `PRAGMA user_version`.
//! Each step runs in its own transaction; a database newer than this build is refused.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// Migration steps; step `i` takes the schema from version `i` to `i + 1`. Never edit a step
/// that has shipped: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: receipts and the retry epochs they belong to.
    "CREATE TABLE retry_epochs (
        retry_epoch TEXT PRIMARY KEY NOT NULL,
        pairing_id TEXT NOT NULL,
        broker_instance_id TEXT NOT NULL,
        connection_id TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE receipts (
        operation_id TEXT PRIMARY KEY NOT NULL,
        pairing_id TEXT NOT NULL,
        retry_epoch TEXT NOT NULL REFERENCES retry_epochs (retry_epoch),
        project_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        request_key TEXT NOT NULL,
        workspace_id TEXT,
        fingerprint TEXT NOT NULL,
        state TEXT NOT NULL,
        effect_state TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        settled_at INTEGER,
        result_json TEXT,
        error_code TEXT,
        error_message TEXT,
        UNIQUE (pairing_id, retry_epoch, project_id, tool, request_key)
    ) STRICT;
    CREATE INDEX receipts_by_state ON receipts (state);
    CREATE INDEX receipts_by_retry_epoch ON receipts (retry_epoch);
    CREATE INDEX receipts_by_created_at ON receipts (created_at);",
    // 2: the operation-event feed (seqs never reused) and the watermark of removed events.
    "CREATE TABLE operation_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        operation_id TEXT NOT NULL,
        pairing_id TEXT NOT NULL,
        retry_epoch TEXT NOT NULL,
        workspace_id TEXT,
        tool TEXT NOT NULL,
        state TEXT NOT NULL,
        effect_state TEXT NOT NULL,
        at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX operation_events_by_operation ON operation_events (operation_id);
    CREATE TABLE store_meta (
        name TEXT PRIMARY KEY NOT NULL,
        value INTEGER NOT NULL
    ) STRICT;
    INSERT INTO store_meta (name, value) VALUES ('events_removed_through_seq', 0);",
    // 3: retention. Tombstones of retired retry epochs (kept while the epoch could otherwise
    // still be valid, so nothing can ever reserve under it again), and the append-only history
    // that settled receipts of ended epochs move to. Triggers make both rules hold for any
    // writer, not only for the code paths that check them first.
    "CREATE TABLE retired_epochs (
        retry_epoch TEXT PRIMARY KEY NOT NULL,
        pairing_id TEXT NOT NULL,
        broker_instance_id TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        retired_at INTEGER NOT NULL
    ) STRICT;
    CREATE TRIGGER receipts_never_under_a_retired_epoch BEFORE INSERT ON receipts
    WHEN EXISTS (SELECT 1 FROM retired_epochs t WHERE t.retry_epoch = NEW.retry_epoch)
    BEGIN SELECT RAISE(ABORT, 'the retry epoch of this receipt was retired'); END;
    CREATE TABLE receipt_history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        operation_id TEXT NOT NULL UNIQUE,
        pairing_id TEXT NOT NULL,
        retry_epoch TEXT NOT NULL,
        project_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        request_key TEXT NOT NULL,
        workspace_id TEXT,
        fingerprint TEXT NOT NULL,
        state TEXT NOT NULL,
        effect_state TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        settled_at INTEGER,
        result_json TEXT,
        error_code TEXT,
        error_message TEXT,
        trail_json TEXT NOT NULL,
        archived_at INTEGER NOT NULL,
        archived_because TEXT NOT NULL
    ) STRICT;
    CREATE INDEX receipt_history_by_retry_epoch ON receipt_history (retry_epoch);
    CREATE TRIGGER receipt_history_is_append_only_update BEFORE UPDATE ON receipt_history
    BEGIN SELECT RAISE(ABORT, 'the receipt history is append-only'); END;
    CREATE TRIGGER receipt_history_is_append_only_delete BEFORE DELETE ON receipt_history
    BEGIN SELECT RAISE(ABORT, 'the receipt history is append-only'); END;",
    // 4: Chat. A workspace's conversations, each with its revision and its one draft, and
    // their messages in order. A reply is written while it streams (state 'streaming'); reopen
    // recovery marks one left streaming 'interrupted'.
    "CREATE TABLE conversations (
        conversation_id TEXT PRIMARY KEY NOT NULL,
        workspace_id TEXT NOT NULL,
        title TEXT NOT NULL,
        revision INTEGER NOT NULL,
        draft_text TEXT NOT NULL,
        draft_revision INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX conversations_by_workspace ON conversations (workspace_id, updated_at);
    CREATE TABLE chat_messages (
        conversation_id TEXT NOT NULL REFERENCES conversations (conversation_id),
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL,
        state TEXT NOT NULL,
        provider TEXT,
        model TEXT,
        operation_id TEXT,
        input_tokens INTEGER,
        output_tokens INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (conversation_id, seq)
    ) STRICT;
    CREATE INDEX chat_messages_streaming ON chat_messages (state) WHERE state = 'streaming';",
    // 5: what decided each operation: 'default' (the tool's own "ask me before" setting),
    // 'rule:<id>' (one of the person's rules) or 'person' (their decision on it). NULL for
    // receipts written before Lomi recorded it.
    "ALTER TABLE receipts ADD COLUMN decided_by TEXT;
    ALTER TABLE receipt_history ADD COLUMN decided_by TEXT;",
];

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) fn user_version(connection: &Connection) -> rusqlite::Result<u32> {
    connection.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Brings the database at `path` up to `SCHEMA_VERSION`, or refuses a newer one.
pub(crate) fn migrate(connection: &mut Connection, path: &Path) -> Result<(), StoreError> {
    migrate_to(connection, path, SCHEMA_VERSION)
}

fn migrate_to(connection: &mut Connection, path: &Path, target: u32) -> Result<(), StoreError> {
    let sql = |doing: &str, error| StoreError::from_sqlite(path, doing, error);
    let found = user_version(connection).map_err(|e| sql("reading the schema version", e))?;
    if found > SCHEMA_VERSION {
        // Never downgrade: an older build could misread or damage what a newer one wrote.
        return Err(StoreError::unavailable(format!(
            "{} has schema version {found}, but this Lomi understands only up to {SCHEMA_VERSION}; it was written by a newer Lomi. Run that newer Lomi, or move the data dir aside to start fresh",
            path.display()
        )));
    }
    for version in found..target {
        let step = MIGRATIONS[version as usize];
        let doing = format!(
            "migrating the schema from version {version} to {}",
            version + 1
        );
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql(&doing, e))?;
        transaction
            .execute_batch(step)
            .map_err(|e| sql(&doing, e))?;
        transaction
            .pragma_update(None, "user_version", version + 1)
            .map_err(|e| sql(&doing, e))?;
        transaction.commit().map_err(|e| sql(&doing, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lomi_protocol::{OperationState, RetryEpoch};

    use super::*;
    use crate::{ManualClock, Store, StoreOptions, store::DATABASE_FILE};

    #[test]
    fn a_version_one_store_is_upgraded_and_keeps_its_receipts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(DATABASE_FILE);
        {
            let mut connection = Connection::open(&path).expect("open raw");
            connection
                .pragma_update(None, "journal_mode", "WAL")
                .expect("wal");
            migrate_to(&mut connection, &path, 1).expect("version 1");
            connection
                .execute_batch(
                    "INSERT INTO retry_epochs VALUES ('re_old', 'pr_a', 'bi_a', 'cn_a', 'ws_a', 0, 10);
                     INSERT INTO receipts VALUES ('op_old', 'pr_a', 're_old', '', 'lomi_terminal_create',
                        'rk_1', 'ws_a', 'f', 'running', 'partial', 1, 2, NULL, NULL, NULL, NULL);",
                )
                .expect("version 1 rows");
            assert_eq!(user_version(&connection).expect("version"), 1);
        }
        let store = Store::open(
            dir.path(),
            Arc::new(ManualClock::default()),
            StoreOptions::default(),
        )
        .expect("open upgrades");
        assert_eq!(
            store
                .status(&crate::IdleRule::new(None))
                .expect("status")
                .schema_version,
            SCHEMA_VERSION
        );
        let id = lomi_protocol::OperationId::parse("op_old").expect("id");
        let receipt = store.get(&id).expect("get").expect("kept");
        // The running receipt from before the upgrade was recovered like any other.
        assert_eq!(receipt.state, OperationState::OutcomeUnknown);
        assert_eq!(store.recovery().marked_outcome_unknown, vec![id]);
        let epoch = RetryEpoch::parse("re_old").expect("epoch");
        assert!(store.retry_epoch(&epoch).expect("epoch read").is_some());
        // The recovery itself went into the event feed that version 2 added.
        assert_eq!(store.events_after(0, 10).expect("events").events.len(), 1);
    }

    #[test]
    fn migrations_are_numbered_by_position() {
        assert_eq!(SCHEMA_VERSION, 5);
        let mut connection = Connection::open_in_memory().expect("memory");
        migrate(&mut connection, Path::new(":memory:")).expect("migrate");
        assert_eq!(user_version(&connection).expect("version"), SCHEMA_VERSION);
        // Running again is a no-op.
        migrate(&mut connection, Path::new(":memory:")).expect("again");
    }
}
