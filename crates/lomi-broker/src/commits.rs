//! The domain's group commit: a change builds on the newest domain (saved or not), one caller at
//! a time writes the newest to `domain.json` for everyone waiting, and a change is seen (and its
//! caller answered) only once a write that holds it is on disk. Readers never wait for a write.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

use lomi_protocol::{ErrorCode, PairingId, ToolError};

use crate::domain::{Domain, Pairing};
use crate::{Area, Broker, Settings, waiting_on_disk};
use lomi_protocol::tools::session::PairingState;

/// How many failed writes are remembered for the callers still waiting on them (each wakes at
/// once; far more than can pile up).
const FAILURES_KEPT: usize = 256;

/// The changes not yet on disk, and who writes them.
pub(crate) struct DomainLog {
    state: Mutex<LogState>,
    written: Condvar,
}

struct LogState {
    /// Every change applied, saved or not: what the next change builds on.
    head: Domain,
    /// The version of `head`; each change adds one.
    version: u64,
    /// The newest version on disk, which readers see.
    saved: u64,
    /// Versions a failed write lost, `(after, through]`, with why.
    lost: VecDeque<(u64, u64, String)>,
    /// Whether a caller is writing (only one at a time, so files land in order).
    writing: bool,
    /// Changes kept in memory only (readers see them at once), by the version they made: a
    /// write of an older version is published with them applied again.
    unsaved: Vec<(u64, MemoryChange)>,
}

/// A change readers see before it is saved: a pending pairing (a failed save only loses it
/// across a restart, where its client starts a new one anyway) and a session pairing's end
/// (session pairings are never saved).
#[derive(Clone)]
pub(crate) enum MemoryChange {
    /// Pending pairings created before `expired_before` go; `pairing` joins.
    Pending {
        pairing: Box<Pairing>,
        expired_before: lomi_protocol::Timestamp,
    },
    SessionEnded(PairingId),
}

impl MemoryChange {
    /// Applies it (again: applying twice is applying once).
    fn apply(&self, domain: &mut Domain) {
        let before = domain.clone();
        match self {
            MemoryChange::Pending {
                pairing,
                expired_before,
            } => {
                domain.pairings.retain(|p| {
                    p.state != PairingState::Pending || p.created_at >= *expired_before
                });
                if !domain.pairings.iter().any(|p| p.id == pairing.id) {
                    domain.pairings.push((**pairing).clone());
                }
            }
            MemoryChange::SessionEnded(id) => {
                domain.pairings.retain(|p| &p.id != id || p.is_durable());
            }
        }
        Settings::note_changes(&before, domain);
    }
}

impl DomainLog {
    pub(crate) fn new(domain: Domain) -> Self {
        DomainLog {
            state: Mutex::new(LogState {
                head: domain,
                version: 0,
                saved: 0,
                lost: VecDeque::new(),
                writing: false,
                unsaved: Vec::new(),
            }),
            written: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Broker {
    /// Applies `change` to the newest domain and waits until it is on disk; only then do
    /// readers see it. A failed write changes nothing: it fails every change it held (and those
    /// built on them) with `STORE_UNAVAILABLE`.
    pub(crate) fn update_domain<T>(
        &self,
        change: impl FnOnce(&mut Domain) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let (value, version) = {
            let mut log = self.inner.log.lock();
            let mut next = log.head.clone();
            let value = change(&mut next)?;
            Settings::note_changes(&log.head, &mut next);
            log.head = next;
            log.version += 1;
            (value, log.version)
        };
        self.wait_saved(version)?;
        Ok(value)
    }

    /// Applies a memory-only change, seen at once, once `check` holds for the newest domain;
    /// with `save`, also waits for a write that holds it (a failure is only logged: the change
    /// stays in memory).
    pub(crate) fn change_in_memory(
        &self,
        change: MemoryChange,
        check: impl FnOnce(&Domain) -> Result<(), ToolError>,
        save: bool,
    ) -> Result<(), ToolError> {
        let version = {
            let mut log = self.inner.log.lock();
            check(&log.head)?;
            change.apply(&mut log.head);
            change.apply(&mut self.domain());
            log.version += 1;
            let version = log.version;
            log.unsaved.push((version, change));
            version
        };
        if save && let Err(error) = self.wait_saved(version) {
            tracing::warn!("a change kept in memory was not saved: {error}");
        }
        Ok(())
    }

    /// Waits until `version` is on disk, writing the newest domain when no one else is: the
    /// writes of everyone who waits meanwhile share the next file and its fsyncs.
    fn wait_saved(&self, version: u64) -> Result<(), ToolError> {
        waiting_on_disk(|| {
            let mut log = self.inner.log.lock();
            loop {
                if let Some((_, _, why)) = log
                    .lost
                    .iter()
                    .find(|(after, through, _)| *after < version && version <= *through)
                {
                    return Err(ToolError::new(
                        ErrorCode::StoreUnavailable,
                        format!("{why}; nothing was changed"),
                    ));
                }
                if version <= log.saved {
                    return Ok(());
                }
                if log.writing {
                    log = self
                        .inner
                        .log
                        .written
                        .wait(log)
                        .unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                log.writing = true;
                let (snapshot, at) = (log.head.clone(), log.version);
                drop(log);
                let written = self.write_domain(&snapshot);
                log = self.inner.log.lock();
                log.writing = false;
                match written {
                    Ok(()) => {
                        let mut published = snapshot;
                        for (made, change) in &log.unsaved {
                            if *made > at {
                                change.apply(&mut published);
                            }
                        }
                        *self.domain() = published;
                        log.unsaved.retain(|(made, _)| *made > at);
                        log.saved = at;
                        self.note_change(Area::Domain);
                    }
                    Err(why) => {
                        // Everything applied since the last write is lost, including changes
                        // made on top of this write's; the memory-only ones stay.
                        let range = (log.saved, log.version, why);
                        log.lost.push_back(range);
                        if log.lost.len() > FAILURES_KEPT {
                            log.lost.pop_front();
                        }
                        log.head = self.domain().clone();
                    }
                }
                self.inner.log.written.notify_all();
            }
        })
    }

    /// Writes the durable part of `domain` to `domain.json` (temp file, fsync, rename, fsync of
    /// the folder).
    fn write_domain(&self, domain: &Domain) -> Result<(), String> {
        let mut durable = domain.clone();
        durable.pairings.retain(Pairing::is_durable);
        let path = self.inner.data_dir.join(crate::DOMAIN_FILE);
        match crate::persist::write_json(&path, &durable) {
            Ok(()) => {
                self.store().note_write_success();
                Ok(())
            }
            Err(e) => {
                let message = format!("could not save Lomi's workspaces and pairings: {e}");
                self.store().note_write_failure(message.clone());
                Err(message)
            }
        }
    }
}
