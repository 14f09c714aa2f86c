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
    ) -> Result<Writer> {
        let (sender, receiver) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("lomi-store-writer".to_owned())
            .spawn(move || serve(&connection, clock.as_ref(), &database_path, &receiver))
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
        commit_group(connection, clock, database_path, &mut group);
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
/// their effects may start. Answers are left in the members for the caller to send.
fn commit_group(
    connection: &Connection,
    clock: &dyn Clock,
    database_path: &Path,
    group: &mut [Box<dyn Member>],
) {
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
            fail_all(group, &failure("ending an unfinished transaction", error));
            return;
        }
    }
    if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
        fail_all(group, &failure("starting the write transaction", error));
        return;
    }
    for index in 0..group.len() {
        if let Err(error) = connection.execute_batch("SAVEPOINT member") {
            let cause = failure("opening a savepoint", error);
            roll_back(connection);
            fail_all(group, &cause);
            return;
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
            return;
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
            return;
        }
    }
    if let Err(error) = connection.execute_batch("COMMIT") {
        let cause = failure("committing", error);
        roll_back(connection);
        fail_all(group, &cause);
    }
}

/// Rolls back what is left of a failed group's transaction, if SQLite did not already. A
/// rollback that fails too changes nothing for this group (its callers are answered
/// `Unavailable`); the next group rolls back again before it begins.
fn roll_back(connection: &Connection) {
    if !connection.is_autocommit() {
        let _retried_by_the_next_group = connection.execute_batch("ROLLBACK");
    }
}
