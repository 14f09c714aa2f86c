//! The store's one writer: a thread that owns the write connection and commits every write that
//! arrived while the previous commit was in flight in one SQLite transaction (group commit),
//! then answers each caller with its own result.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use lomi_protocol::Timestamp;
use rusqlite::Connection;

use crate::store::Failure;
use crate::{Clock, Result, StoreError};

/// At most this many writes share one transaction, so one caller never waits behind an
/// unbounded queue; under any real load the queue is far shorter.
const MOST_PER_GROUP: usize = 128;

/// A write's body: runs on the write connection inside the group's transaction, in its own
/// savepoint, with the time it runs at. It owns what it needs (it runs on the writer thread).
pub(crate) type Body<T> = Box<dyn FnOnce(&Connection, Timestamp) -> Result<T, Failure> + Send>;

/// A time the store could not write at all (the disk is full, an I/O error): what failed and
/// since when. It lasts until a write commits again; `lomi store status` and the window show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteFailure {
    /// When the first of the failing writes failed.
    pub since: Timestamp,
    /// Why the latest one failed, as a person reads it.
    pub message: String,
}

/// Whether the store's writes are failing now; shared by the writer thread and the store.
#[derive(Debug, Default)]
pub(crate) struct WriteHealth(std::sync::Mutex<Option<WriteFailure>>);

impl WriteHealth {
    pub(crate) fn failed(&self, now: Timestamp, message: String) {
        let mut failure = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let since = failure.as_ref().map_or(now, |f| f.since);
        *failure = Some(WriteFailure { since, message });
    }

    pub(crate) fn succeeded(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub(crate) fn current(&self) -> Option<WriteFailure> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The caller's side of the writer: sends writes and waits for their answers.
pub(crate) struct Writer {
    // `None` only while dropping: closing the channel is what ends the thread.
    sender: Option<Sender<Box<dyn Member>>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer thread; it owns `connection` until the writer is dropped.
    pub(crate) fn start(
        connection: Connection,
        clock: Arc<dyn Clock>,
        database_path: PathBuf,
        health: Arc<WriteHealth>,
    ) -> Result<Writer> {
        let (sender, receiver) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("lomi-store-writer".to_owned())
            .spawn(move || {
                serve(
                    &connection,
                    clock.as_ref(),
                    &database_path,
                    &health,
                    &receiver,
                );
            })
            .map_err(|e| {
                StoreError::unavailable(format!(
                    "cannot start the store's writer thread ({e}); the system is out of threads or memory"
                ))
            })?;
        Ok(Writer {
            sender: Some(sender),
            thread: Some(thread),
        })
    }

    /// Runs `body` in the next group's transaction and returns its result once that
    /// transaction committed (durably: WAL with synchronous=FULL). With `keep: false` the body's
    /// changes are rolled back right after it ran: a preview of exactly what it would do.
    /// Any failure means nothing of `body` was written.
    pub(crate) fn write<T: Send + 'static>(
        &self,
        doing: &'static str,
        keep: bool,
        body: Body<T>,
    ) -> Result<T> {
        let (reply, answer) = mpsc::sync_channel(1);
        let member = Box::new(Write {
            doing,
            keep,
            body: Some(body),
            outcome: None,
            reply,
        });
        let stopped = || {
            StoreError::unavailable(format!(
                "{doing} failed: the store's writer has stopped; restart Lomi"
            ))
        };
        self.sender
            .as_ref()
            .ok_or_else(stopped)?
            .send(member)
            .map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())?
    }
}

impl Drop for Writer {
    /// Closes the channel and waits for the thread to finish the writes already sent, so the
    /// write connection is closed before the store's ownership lock is released.
    fn drop(&mut self) {
        drop(self.sender.take());
        if let Some(thread) = self.thread.take() {
            // Each body runs under `catch_unwind`, so only the loop itself could have panicked,
            // and then its callers were already answered `Unavailable`: nothing is left to do.
            let _panicked = thread.join();
        }
    }
}

/// One caller's write inside a group, with its result type erased so a group can mix them.
trait Member: Send {
    fn doing(&self) -> &'static str;
    /// Runs the body (the caller of `run` opened a savepoint around it); `true` if it succeeded.
    fn run(&mut self, connection: &Connection, now: Timestamp, database_path: &Path) -> bool;
    /// Whether the body's changes stay in the group's transaction.
    fn keeps(&self) -> bool;
    /// Sets the answer to `error` (the group's transaction did not commit).
    fn fail(&mut self, error: StoreError);
    /// Sends the answer to the caller.
    fn answer(self: Box<Self>);
}

struct Write<T> {
    doing: &'static str,
    keep: bool,
    body: Option<Body<T>>,
    outcome: Option<Result<T>>,
    reply: SyncSender<Result<T>>,
}

impl<T: Send + 'static> Member for Write<T> {
    fn doing(&self) -> &'static str {
        self.doing
    }

    fn run(&mut self, connection: &Connection, now: Timestamp, database_path: &Path) -> bool {
        let Some(body) = self.body.take() else {
            return false;
        };
        let outcome = match std::panic::catch_unwind(AssertUnwindSafe(|| body(connection, now))) {
            Ok(result) => {
                result.map_err(|failure| failure.into_store_error(database_path, self.doing))
            }
            Err(_) => Err(StoreError::internal(format!(
                "{} stopped abnormally; nothing of it was written",
                self.doing
            ))),
        };
        let succeeded = outcome.is_ok();
        self.outcome = Some(outcome);
        succeeded
    }

    fn keeps(&self) -> bool {
        self.keep
    }

    fn fail(&mut self, error: StoreError) {
        self.outcome = Some(Err(error));
    }

    fn answer(self: Box<Self>) {
        let outcome = self.outcome.unwrap_or_else(|| {
            Err(StoreError::internal(format!(
                "{} was never run; nothing of it was written",
                self.doing
            )))
        });
        // A caller that stopped waiting (its thread ended) needs no answer.
        let _unheard = self.reply.send(outcome);
    }
}

/// The writer thread: takes the first write that comes, then everything already queued behind
/// it, and commits them as one group, until the store is dropped.
fn serve(
    connection: &Connection,
    clock: &dyn Clock,
    database_path: &Path,
    health: &WriteHealth,
    receiver: &Receiver<Box<dyn Member>>,
) {
    while let Ok(first) = receiver.recv() {
        let mut group = vec![first];
        while group.len() < MOST_PER_GROUP {
            match receiver.try_recv() {
                Ok(member) => group.push(member),
                Err(_) => break,
            }
        }
        match commit_group(connection, clock, database_path, &mut group) {
            Some(failure) => health.failed(clock.now(), failure.0),
            None => health.succeeded(),
        }
        for member in group {
            member.answer();
        }
    }
}

/// Why a whole group did not commit: what failed, as a person reads it.
struct GroupFailure(String);

impl GroupFailure {
    fn from_sqlite(database_path: &Path, step: &str, error: rusqlite::Error) -> Self {
        GroupFailure(match StoreError::from_sqlite(database_path, step, error) {
            StoreError::Unavailable { message } => message,
            other => other.to_string(),
        })
    }

    /// The answer of one caller in the group: `Unavailable` (`STORE_UNAVAILABLE`), since
    /// nothing of its write was committed.
    fn error_for(&self, doing: &str) -> StoreError {
        StoreError::unavailable(format!("{doing}: {}", self.0))
    }
}

/// Runs every member in one `BEGIN IMMEDIATE` transaction, each in its own savepoint (a
/// member's refusal rolls back only its own changes), and commits once. If the transaction
/// cannot begin, is rolled back by SQLite under a member (full disk, I/O error), or cannot
/// commit, every member fails with `Unavailable`: none of their writes is durable, so none of
/// their effects may start. Answers are left in the members for the caller to send; the
/// group's failure, if it failed as a whole, is returned.
fn commit_group(
    connection: &Connection,
    clock: &dyn Clock,
    database_path: &Path,
    group: &mut [Box<dyn Member>],
) -> Option<GroupFailure> {
    let failure = |step: &str, error| GroupFailure::from_sqlite(database_path, step, error);
    let fail_all = |group: &mut [Box<dyn Member>], cause: &GroupFailure| {
        for member in group {
            let error = cause.error_for(member.doing());
            member.fail(error);
        }
    };
    if !connection.is_autocommit() {
        // Only reachable if an earlier rollback itself failed; start clean.
        if let Err(error) = connection.execute_batch("ROLLBACK") {
            let cause = failure("ending an unfinished transaction", error);
            fail_all(group, &cause);
            return Some(cause);
        }
    }
    if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
        let cause = failure("starting the write transaction", error);
        fail_all(group, &cause);
        return Some(cause);
    }
    for index in 0..group.len() {
        if let Err(error) = connection.execute_batch("SAVEPOINT member") {
            let cause = failure("opening a savepoint", error);
            roll_back(connection);
            fail_all(group, &cause);
            return Some(cause);
        }
        let succeeded = group[index].run(connection, clock.now(), database_path);
        if connection.is_autocommit() {
            // SQLite rolled the whole transaction back under this member (SQLITE_FULL, IOERR,
            // NOMEM): the members before it lost their writes too. This member keeps its own
            // error; every other one is unavailable.
            let cause = GroupFailure(format!(
                "the transaction it was in was rolled back after {} failed in it; free disk space or check the disk, then try again",
                group[index].doing()
            ));
            for (other, member) in group.iter_mut().enumerate() {
                if other != index || succeeded {
                    let error = cause.error_for(member.doing());
                    member.fail(error);
                }
            }
            return Some(cause);
        }
        let end = if succeeded && group[index].keeps() {
            "RELEASE member"
        } else {
            "ROLLBACK TO member; RELEASE member"
        };
        if let Err(error) = connection.execute_batch(end) {
            let cause = failure("closing a savepoint", error);
            roll_back(connection);
            fail_all(group, &cause);
            return Some(cause);
        }
    }
    if let Err(error) = connection.execute_batch("COMMIT") {
        let cause = failure("committing", error);
        roll_back(connection);
        fail_all(group, &cause);
        return Some(cause);
    }
    None
}

/// Rolls back what is left of a failed group's transaction, if SQLite did not already. A
/// rollback that fails too changes nothing for this group (its callers are answered
/// `Unavailable`); the next group rolls back again before it begins.
fn roll_back(connection: &Connection) {
    if !connection.is_autocommit() {
        let _retried_by_the_next_group = connection.execute_batch("ROLLBACK");
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;
    use std::sync::mpsc::Receiver;

    use lomi_protocol::ErrorCode;

    use super::*;
    use crate::store::{open_connection, refuse};
    use crate::{StoreOptions, SystemClock};

    /// A tmpfs of `size` mounted on a fresh directory for the test's life: a real disk that a
    /// filler file can fill.
    struct SmallDisk {
        dir: tempfile::TempDir,
    }

    impl SmallDisk {
        fn mount(size: &str) -> SmallDisk {
            let dir = tempfile::tempdir().expect("temp dir");
            let status = Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(dir.path())
                .status()
                .expect("run mount");
            assert!(
                status.success(),
                "mounting a tmpfs on {} failed ({status}): this test fills a real disk, so it needs root (the test suite runs as root)",
                dir.path().display()
            );
            SmallDisk { dir }
        }

        fn path(&self) -> &Path {
            self.dir.path()
        }

        /// Writes a filler file until the disk is full, down to its last bytes; returns it.
        fn fill(&self) -> PathBuf {
            use std::io::Write;
            let path = self.path().join("filler");
            let mut filler = std::fs::File::create(&path).expect("filler");
            for chunk in [65_536, 512] {
                while filler.write_all(&vec![0; chunk]).is_ok() {}
            }
            path
        }
    }

    impl Drop for SmallDisk {
        fn drop(&mut self) {
            // Lazily, so a file still open elsewhere never leaves the mount behind.
            let _unmounted = Command::new("umount").arg("-l").arg(self.path()).status();
        }
    }

    type Answer = Receiver<Result<i64>>;

    fn member(keep: bool, body: Body<i64>) -> (Box<dyn Member>, Answer) {
        let (reply, answer) = mpsc::sync_channel(1);
        let member = Box::new(Write {
            doing: "writing a test row",
            keep,
            body: Some(body),
            outcome: None,
            reply,
        });
        (member, answer)
    }

    /// Eight inserts, one refusal and one preview, in that order.
    fn group() -> (Vec<Box<dyn Member>>, Vec<Answer>) {
        let mut members = Vec::new();
        let mut answers = Vec::new();
        for index in 0..8_i64 {
            let (member, answer) = member(
                true,
                Box::new(move |connection, _now| {
                    connection.execute(
                        "INSERT INTO rows (id, body) VALUES (?1, ?2)",
                        rusqlite::params![index, "x".repeat(2_000)],
                    )?;
                    Ok(index)
                }),
            );
            members.push(member);
            answers.push(answer);
        }
        let (refusal, answer) = member(
            true,
            Box::new(|connection, _now| {
                connection.execute("INSERT INTO rows (id, body) VALUES (100, 'refused')", [])?;
                refuse(StoreError::NotFound {
                    what: "a test row".to_owned(),
                })
            }),
        );
        members.push(refusal);
        answers.push(answer);
        let (preview, answer) = member(
            false,
            Box::new(|connection, _now| {
                connection.execute("INSERT INTO rows (id, body) VALUES (200, 'preview')", [])?;
                Ok(connection.query_row("SELECT COUNT(*) FROM rows", [], |r| r.get(0))?)
            }),
        );
        members.push(preview);
        answers.push(answer);
        (members, answers)
    }

    fn commit(
        connection: &Connection,
        path: &Path,
        mut members: Vec<Box<dyn Member>>,
        answers: Vec<Answer>,
    ) -> Vec<Result<i64>> {
        commit_group(connection, &SystemClock, path, &mut members);
        for member in members {
            member.answer();
        }
        answers
            .into_iter()
            .map(|answer| answer.recv().expect("every member is answered"))
            .collect()
    }

    fn rows(connection: &Connection) -> Vec<i64> {
        let mut statement = connection
            .prepare("SELECT id FROM rows ORDER BY id")
            .expect("select");
        statement
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    #[test]
    fn a_group_commits_once_and_each_member_gets_its_own_answer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("group.sqlite3");
        let connection = open_connection(&path, &StoreOptions::default()).expect("open");
        connection
            .execute_batch("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .expect("table");
        let (members, answers) = group();
        let answers = commit(&connection, &path, members, answers);
        for (index, answer) in answers.iter().take(8).enumerate() {
            assert_eq!(answer.as_ref().ok(), Some(&(index as i64)), "{answer:?}");
        }
        // The refusal rolled back only its own insert; the preview saw the eight and its own.
        assert!(
            matches!(answers[8], Err(StoreError::NotFound { .. })),
            "{:?}",
            answers[8]
        );
        assert_eq!(answers[9].as_ref().ok(), Some(&9), "{:?}", answers[9]);
        assert_eq!(rows(&connection), (0..8).collect::<Vec<_>>());
        assert!(connection.is_autocommit(), "the group's transaction ended");
    }

    /// The real path of a full disk: the group's rows fit in the page cache, so SQLite only
    /// meets the disk when it writes them to the write-ahead log at COMMIT.
    #[test]
    fn a_failed_commit_fails_every_member_of_its_group_and_the_next_group_commits() {
        let disk = SmallDisk::mount("1m");
        let path = disk.path().join("group.sqlite3");
        let connection = open_connection(&path, &StoreOptions::default()).expect("open");
        connection
            .execute_batch("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .expect("table");
        let filler = disk.fill();

        let (members, answers) = group();
        for answer in commit(&connection, &path, members, answers) {
            let error = answer.expect_err("nothing commits on a full disk");
            assert_eq!(error.code(), ErrorCode::StoreUnavailable, "{error}");
            let message = error.to_string();
            assert!(
                message.contains("committing") && message.contains("full"),
                "{message}"
            );
        }
        assert!(connection.is_autocommit(), "the failed transaction ended");
        assert_eq!(
            rows(&connection),
            Vec::<i64>::new(),
            "a member's row was kept"
        );

        std::fs::remove_file(filler).expect("free the disk");
        let (members, answers) = group();
        let answers = commit(&connection, &path, members, answers);
        assert!(answers.iter().take(8).all(Result::is_ok), "{answers:?}");
        assert_eq!(rows(&connection), (0..8).collect::<Vec<_>>());
        assert_eq!(
            connection
                .query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
                .expect("integrity"),
            "ok"
        );
    }
}
