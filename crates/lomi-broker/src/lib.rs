//! Lomi's broker: the one backend per user session. It owns pairings, grants, workspaces,
//! retry epochs and the operation engine every mutation goes through. Front doors (MCP, the
//! command line, the desktop window) call its API; it knows nothing of their protocols.

mod activity;
mod changes;
mod chat;
mod commits;
mod domain;
mod effect;
mod engine;
mod entropy;
pub mod oauth;
mod pairings;
mod panels;
pub mod persist;
mod projects;
mod receipts;
mod rules;
mod runtimes;
mod serve;
mod session;
mod settings;
mod workspaces;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use lomi_protocol::{BrokerInstanceId, ToolError};
use lomi_store::{Clock, Store, StoreError, StoreOptions};

pub use changes::{Area, Changes};
pub use domain::{Credential, Domain, Pairing, Policy, Project, Workspace};
pub use rules::{Decider, Judged, call_subject};

/// Checks a display name (1 to 120 characters, no control characters).
pub fn check_name(what: &str, name: &str) -> Result<(), ToolError> {
    domain::check_name(what, name).map_err(ToolError::invalid)
}
pub use chat::{
    MAX_DRAFT_BYTES, check_title, stale as conversation_stale, summary as conversation_summary,
};
pub use effect::{Asked, OpenDocument, Peek, Sight, Staged};
pub use engine::{
    AwaitingDecision, Confirmation, EffectContext, EffectOutcome, Mutation, Permit, ProgressNote,
    Remember, off_thread, to_json, unless_cancelled,
};
pub use entropy::{Entropy, OsEntropy, SeededEntropy, secret_hash};
pub use lomi_store::{ManualClock, SystemClock};
pub use pairings::{CreatedPairing, MAX_PENDING_PAIRINGS, PENDING_LIFETIME, PairingSummary};
pub use panels::{InputFailure, LeasedInput, LeasedRequest, PanelRecord};
pub use projects::{ProjectChange, ProjectRequest};
pub use runtimes::{
    LayoutChange, LayoutRequest, Opening, PanelCall, PanelRuntime, Placed, Runtimes,
};
pub use settings::{Changer, Settings, check_provider_name};
pub use tokio_util::sync::CancellationToken;

/// The file in the data dir that holds the person's domain.
pub const DOMAIN_FILE: &str = "domain.json";

/// How many progress notes a listener may fall behind before it skips the oldest.
pub const PROGRESS_NOTES_KEPT: usize = 256;

/// A retry epoch is valid this long after `lomi_connect`.
pub const RETRY_EPOCH_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// How a broker is started.
pub struct BrokerConfig {
    pub data_dir: PathBuf,
    pub clock: Arc<dyn Clock>,
    pub entropy: Arc<dyn Entropy>,
    pub store_options: StoreOptions,
    /// How long a mutating call waits for its operation to settle before it answers with the
    /// operation still in flight (the agent then follows it with `lomi_operation_get`).
    pub settle_wait: Duration,
}

impl BrokerConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        BrokerConfig {
            data_dir: data_dir.into(),
            clock: Arc::new(SystemClock),
            entropy: Arc::new(OsEntropy),
            store_options: StoreOptions::default(),
            settle_wait: Duration::from_secs(2),
        }
    }
}

/// Errors starting a broker.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read {path}: {source}")]
    Domain {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the operating system's randomness is not available ({0}); Lomi hands out no tokens without it"
    )]
    Entropy(String),
}

/// The broker. Cheap to clone; all clones are the same broker.
#[derive(Clone)]
pub struct Broker {
    inner: Arc<Inner>,
}

struct Inner {
    data_dir: PathBuf,
    instance: BrokerInstanceId,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    store: Store,
    settle_wait: Duration,
    /// The domain readers see: every change on disk, and the memory-only ones.
    domain: Mutex<Domain>,
    /// The changes on their way to disk (`commits.rs`).
    log: commits::DomainLog,
    live: Mutex<HashMap<lomi_protocol::OperationId, engine::LiveOperation>>,
    permits: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    panels: Mutex<panels::Panels>,
    /// Fired by `shutdown`: operations waiting for a decision or a permit stop waiting.
    stopping: tokio_util::sync::CancellationToken,
    /// Progress that running operations report (`EffectContext::progress`).
    progress: tokio::sync::broadcast::Sender<engine::ProgressNote>,
    /// The tasks of operations this instance dispatched, so `shutdown` can wait for them.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Terminal lines each rule decided since this start (`rules.rs`).
    line_hits: Mutex<HashMap<lomi_protocol::RuleId, (u64, Option<lomi_protocol::Timestamp>)>>,
    /// Each agent's calls since this start (`activity.rs`).
    calls: Mutex<HashMap<lomi_protocol::PairingId, activity::Calls>>,
    started_at: lomi_protocol::Timestamp,
    /// Each pairing's last authorized call on this instance, for the person's list.
    activity: Mutex<HashMap<lomi_protocol::PairingId, lomi_protocol::Timestamp>>,
    /// Moves each time a pairing's tool families change, so each MCP session can tell its
    /// client that its tool list changed.
    families_changed: tokio::sync::watch::Sender<u64>,
    /// OAuth requests, codes and access tokens in flight (`oauth.rs`).
    oauth: Mutex<oauth::OAuthState>,
    /// What effects are read through (`effect.rs`); the host sets it.
    sight: Mutex<Option<Arc<dyn effect::Sight>>>,
    /// The change feed (`changes.rs`).
    changes: tokio::sync::watch::Sender<changes::Changes>,
}

impl Broker {
    /// Opens the data dir's store (marking unfinished receipts `outcome_unknown`) and domain,
    /// and starts a new broker instance.
    pub fn start(config: BrokerConfig) -> Result<Broker, StartError> {
        getrandom::fill(&mut [0u8; 16]).map_err(|error| StartError::Entropy(error.to_string()))?;
        let store = Store::open(&config.data_dir, config.clock.clone(), config.store_options)?;
        let domain_path = config.data_dir.join(DOMAIN_FILE);
        let mut domain: Domain = persist::read_json(&domain_path)
            .map_err(|source| StartError::Domain {
                path: domain_path.clone(),
                source,
            })?
            .unwrap_or_default();
        // Runtimes do not survive a restart: their panels leave the layout, which is a change
        // of the workspace's domain and so of its revision.
        let mut dropped = false;
        for workspace in &mut domain.workspaces {
            if workspace.layout.take().is_some() {
                workspace.revision = workspace.revision.next();
                dropped = true;
            }
        }
        let new_defaults = domain.policy.apply_new_defaults();
        if dropped || new_defaults {
            let mut durable = domain.clone();
            durable.pairings.retain(Pairing::is_durable);
            persist::write_json(&domain_path, &durable).map_err(|source| StartError::Domain {
                path: domain_path.clone(),
                source,
            })?;
        }
        let instance = BrokerInstanceId::from_random(config.entropy.bytes16());
        let started_at = config.clock.now();
        Ok(Broker {
            inner: Arc::new(Inner {
                data_dir: config.data_dir,
                instance,
                clock: config.clock,
                entropy: config.entropy,
                store,
                settle_wait: config.settle_wait,
                log: commits::DomainLog::new(domain.clone()),
                domain: Mutex::new(domain),
                live: Mutex::new(HashMap::new()),
                permits: Mutex::new(HashMap::new()),
                panels: Mutex::new(panels::Panels::default()),
                stopping: tokio_util::sync::CancellationToken::new(),
                progress: tokio::sync::broadcast::Sender::new(PROGRESS_NOTES_KEPT),
                tasks: Mutex::new(Vec::new()),
                line_hits: Mutex::new(HashMap::new()),
                calls: Mutex::new(HashMap::new()),
                started_at,
                activity: Mutex::new(HashMap::new()),
                families_changed: tokio::sync::watch::Sender::new(0),
                oauth: Mutex::new(oauth::OAuthState::default()),
                sight: Mutex::new(None),
                changes: tokio::sync::watch::Sender::new(changes::Changes::default()),
            }),
        })
    }

    pub fn instance_id(&self) -> &BrokerInstanceId {
        &self.inner.instance
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// 16 bytes from the broker's (injected) randomness, for runtime ids.
    pub fn random_bytes(&self) -> [u8; 16] {
        self.inner.entropy.bytes16()
    }

    /// Fires when this instance stops (`shutdown`): long effects (a reply streaming in) end
    /// then instead of holding the stop up.
    pub fn stopping(&self) -> CancellationToken {
        self.inner.stopping.clone()
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Which retry epochs count as idle for the person's maintenance: those of earlier
    /// instances (refused anyway), and this instance's that are settled and quiet.
    pub fn idle_rule(&self) -> lomi_store::IdleRule {
        lomi_store::IdleRule::new(Some(self.inner.instance.clone()))
    }

    /// Operations that the store marked `outcome_unknown` when this instance opened it.
    pub fn recovered_operations(&self) -> usize {
        self.inner.store.recovery().marked_outcome_unknown.len()
    }

    pub(crate) fn now(&self) -> lomi_protocol::Timestamp {
        self.inner.clock.now()
    }

    /// The time on the broker's clock, for results that record when something happened.
    pub fn clock_now(&self) -> lomi_protocol::Timestamp {
        self.now()
    }

    /// Progress notes of running operations from now on; a listener that falls more than
    /// [`PROGRESS_NOTES_KEPT`] behind skips the oldest.
    pub fn progress_notes(&self) -> tokio::sync::broadcast::Receiver<engine::ProgressNote> {
        self.inner.progress.subscribe()
    }

    fn domain(&self) -> MutexGuard<'_, Domain> {
        self.inner.domain.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs `work`, which waits for the disk (a store write waiting for its group's commit, an
/// fsync), from the async code that calls it. On the multi-thread runtime the worker first
/// hands its other tasks to another thread (`block_in_place`): with the runtime's two or so
/// workers blocked in commits, every other session's call would wait too, and the store's
/// writer would only ever see a group of two. Elsewhere (a current-thread runtime, a plain
/// thread) it simply runs.
pub(crate) fn waiting_on_disk<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// Converts a store failure into the envelope's error.
pub(crate) fn store_error(error: StoreError) -> ToolError {
    ToolError::new(error.code(), error.to_string())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::waiting_on_disk;

    /// Four calls waiting on a two-worker runtime (more than it has workers) leave it free to
    /// answer another task at once, as fifty sessions' commits must.
    #[test]
    fn calls_waiting_on_disk_do_not_stall_the_runtime() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let waiting: Vec<_> = (0..4)
                .map(|_| {
                    tokio::spawn(async {
                        waiting_on_disk(|| std::thread::sleep(Duration::from_millis(300)));
                    })
                })
                .collect();
            tokio::time::sleep(Duration::from_millis(20)).await;
            let asked = Instant::now();
            let answered = tokio::spawn(async { Instant::now() })
                .await
                .expect("the other task");
            let waited = answered - asked;
            assert!(
                waited < Duration::from_millis(150),
                "another task waited {waited:?} behind calls waiting on the disk"
            );
            for task in waiting {
                task.await.expect("a waiting call");
            }
        });
    }

    /// Where there is no second thread to hand work to, the call simply runs.
    #[tokio::test]
    async fn on_a_current_thread_runtime_the_call_simply_runs() {
        assert_eq!(waiting_on_disk(|| 7), 7);
    }
}
