//! Panels and leases: the runtime panels of a workspace (kept in memory: a runtime does not
//! survive a restart), and input authority over one runtime generation. A lease orders its
//! holder's input by `inputSequence`; the person typing in the panel ends every lease at once.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;

use lomi_protocol::tools::layout::{LayoutNode, LayoutTabs};
use lomi_protocol::tools::operations::PanelEvent;
use lomi_protocol::tools::session::{PanelKind, PanelView};
use lomi_protocol::tools::terminal::{LeaseReleased, LeaseView};
use lomi_protocol::{
    DomainRevision, ErrorCode, LeaseId, PairingId, PanelId, ProjectId, Timestamp, ToolError,
    WorkspaceId,
};
use serde_json::Value;

use crate::Broker;
use crate::domain::Workspace;

/// How many earlier inputs a lease remembers for duplicate detection.
const SEQUENCE_MEMORY: usize = 256;

/// A panel as the broker knows it; the runtime behind it belongs to its runtime crate.
#[derive(Clone, Debug)]
pub struct PanelRecord {
    pub workspace_id: WorkspaceId,
    pub kind: PanelKind,
    pub title: String,
    pub project_id: Option<ProjectId>,
    /// The current runtime generation.
    pub generation: Option<String>,
}

impl PanelRecord {
    pub fn view(&self, id: &PanelId) -> PanelView {
        PanelView {
            panel_id: id.clone(),
            kind: self.kind,
            title: self.title.clone(),
            project_id: self.project_id.clone(),
            generation: self.generation.clone(),
        }
    }
}

/// One ordered input under a lease, as `lease_input` checks it.
pub struct LeasedInput<'a> {
    pub lease: &'a LeaseId,
    pub panel: &'a PanelId,
    pub generation: &'a str,
    pub sequence: u64,
    /// The input's payload: the same sequence with another payload is a conflict. It is
    /// fingerprinted with the generation by the same function as every receipt.
    pub payload: Value,
}

/// An input of a tool that sends ordered input under a lease: it names the lease, the panel,
/// the runtime generation and its sequence number, with the same field names on every such
/// tool.
pub trait LeasedRequest {
    /// The input as `lease_input` checks it, with `payload` (what is sent) for its fingerprint.
    fn leased(&self, payload: Value) -> LeasedInput<'_>;
}

macro_rules! leased_requests {
    ($($input:ty),* $(,)?) => {
        $(impl LeasedRequest for $input {
            fn leased(&self, payload: Value) -> LeasedInput<'_> {
                LeasedInput {
                    lease: &self.lease_id,
                    panel: &self.panel_id,
                    generation: &self.generation,
                    sequence: self.input_sequence,
                    payload,
                }
            }
        })*
    };
}

leased_requests!(
    lomi_protocol::tools::terminal::TerminalInputInput,
    lomi_protocol::tools::android::AndroidInputInput,
);

/// Why an ordered input was not acknowledged.
pub enum InputFailure {
    /// Nothing reached the runtime: the sequence stays free, for this payload or another.
    NotSent(ToolError),
    /// It may have reached the runtime, in part or whole: the sequence is used, and a repeat
    /// with the same payload answers this error again instead of sending a second time.
    Unknown(ToolError),
}

/// One lease: who holds it, for which runtime, and the inputs it sent.
pub(crate) struct Lease {
    pairing: PairingId,
    panel: PanelId,
    generation: String,
    acquired_at: Timestamp,
    /// Why it ended, if it did.
    ended: Option<String>,
    last_sequence: u64,
    /// sequence → (payload fingerprint, the answer given: an acknowledgement, or the error of
    /// a dispatch whose effect is unknown)
    history: BTreeMap<u64, (String, Result<Value, ToolError>)>,
    /// Held while an input is checked, sent and recorded, so one lease's inputs go in order.
    sending: Arc<tokio::sync::Mutex<()>>,
}

/// How many panel progress events the broker keeps (in memory; runtimes do not outlive it).
const PANEL_EVENTS_KEPT: usize = 4096;

#[derive(Default)]
pub(crate) struct Panels {
    records: HashMap<PanelId, PanelRecord>,
    leases: HashMap<LeaseId, Lease>,
    /// (sequence, workspace, event), oldest first.
    events: VecDeque<(u64, WorkspaceId, PanelEvent)>,
    last_event: u64,
    /// The workspace and project of every panel added since Lomi started, kept after it
    /// closes: a retry of a project-keyed request made through a panel (a saved capture)
    /// finds its receipt when the panel is gone. One small entry per panel added.
    anchors: HashMap<PanelId, (WorkspaceId, Option<ProjectId>)>,
}

impl Broker {
    fn panels(&self) -> std::sync::MutexGuard<'_, Panels> {
        self.inner.panels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The panels of a workspace, in layout order.
    pub(crate) fn workspace_panels(
        &self,
        workspace: &WorkspaceId,
        order: &[PanelId],
    ) -> Vec<PanelView> {
        let panels = self.panels();
        order
            .iter()
            .filter_map(|id| {
                panels
                    .records
                    .get(id)
                    .filter(|r| &r.workspace_id == workspace)
                    .map(|r| r.view(id))
            })
            .collect()
    }

    /// The panels of a workspace in layout order, for the person (no grants involved).
    pub fn panels_for_person(&self, workspace: &WorkspaceId) -> Vec<PanelView> {
        let order = self
            .domain()
            .workspaces
            .iter()
            .find(|w| &w.id == workspace)
            .map(Workspace::panel_order)
            .unwrap_or_default();
        self.workspace_panels(workspace, &order)
    }

    /// Adds a panel at the end of its workspace's layout if the workspace is still at
    /// `expected`; returns the new revision. Runtimes call this from inside their effect.
    pub fn panel_add(
        &self,
        expected: DomainRevision,
        id: PanelId,
        record: PanelRecord,
    ) -> Result<DomainRevision, ToolError> {
        let workspace_id = record.workspace_id.clone();
        let revision = self.update_domain(|domain| {
            let workspace = domain.workspace_at(&workspace_id, Some(expected))?;
            workspace.layout = Some(match workspace.layout.take() {
                Some(layout) => layout.with_panel(id.clone()),
                None => LayoutNode::Tabs(LayoutTabs {
                    panels: vec![id.clone()],
                }),
            });
            workspace.revision = workspace.revision.next();
            Ok(workspace.revision)
        })?;
        let mut panels = self.panels();
        panels.anchors.insert(
            id.clone(),
            (record.workspace_id.clone(), record.project_id.clone()),
        );
        panels.records.insert(id, record);
        Ok(revision)
    }

    /// The workspace and project a panel was added to, also after it closed (until Lomi stops).
    pub fn panel_anchor(&self, id: &PanelId) -> Option<(WorkspaceId, Option<ProjectId>)> {
        self.panels().anchors.get(id).cloned()
    }

    /// Removes a panel from its workspace (compared by revision when `expected` is given) and
    /// its leases; returns the new revision.
    pub fn panel_remove(
        &self,
        id: &PanelId,
        expected: Option<DomainRevision>,
    ) -> Result<DomainRevision, ToolError> {
        let workspace_id = self
            .panels()
            .records
            .get(id)
            .map(|r| r.workspace_id.clone())
            .ok_or_else(|| ToolError::not_found(format!("no panel {id}")))?;
        let revision = self.update_domain(|domain| {
            let workspace = domain.workspace_at(&workspace_id, expected)?;
            workspace.layout = workspace.layout.take().and_then(|l| l.without_panel(id));
            workspace.revision = workspace.revision.next();
            Ok(workspace.revision)
        })?;
        let mut panels = self.panels();
        panels.records.remove(id);
        // Its leases go with it: every lease tool looks the panel up first (NOT_FOUND once it
        // is gone), so nothing reads them again, and kept, each would hold up to
        // SEQUENCE_MEMORY answers for as long as Lomi runs.
        panels.leases.retain(|_, lease| &lease.panel != id);
        Ok(revision)
    }

    /// Records a new runtime generation for a panel; leases on the old one end.
    pub fn panel_set_generation(&self, id: &PanelId, generation: Option<String>) {
        let mut panels = self.panels();
        if let Some(record) = panels.records.get_mut(id) {
            record.generation = generation.clone();
            self.note_change(crate::Area::Panels);
        }
        for lease in panels.leases.values_mut().filter(|l| &l.panel == id) {
            if Some(&lease.generation) != generation.as_ref() {
                lease
                    .ended
                    .get_or_insert_with(|| "the runtime was replaced".to_owned());
                lease.history.clear();
            }
        }
    }

    /// A panel the caller may see (its workspace is granted), or NOT_FOUND.
    pub fn panel(&self, caller: &PairingId, id: &PanelId) -> Result<PanelRecord, ToolError> {
        let grants = self.authorize(caller)?;
        let not_found = || {
            ToolError::not_found(format!(
                "no panel {id} in the workspaces granted to this client"
            ))
        };
        let record = self
            .panels()
            .records
            .get(id)
            .cloned()
            .ok_or_else(not_found)?;
        if !grants.contains(&record.workspace_id) {
            return Err(not_found());
        }
        Ok(record)
    }

    /// The root of a project of a workspace the caller may use: the named one, or the only one.
    pub fn project_root(
        &self,
        caller: &PairingId,
        workspace: &WorkspaceId,
        project: Option<&ProjectId>,
    ) -> Result<(ProjectId, std::path::PathBuf), ToolError> {
        let workspace = self.granted_workspace(caller, workspace)?;
        let found = match project {
            Some(id) => workspace.projects.iter().find(|p| &p.id == id),
            None if workspace.projects.len() == 1 => workspace.projects.first(),
            None => {
                return Err(ToolError::invalid(
                    "this workspace has several projects; name one with projectId",
                ));
            }
        };
        let project =
            found.ok_or_else(|| ToolError::not_found("no such project in this workspace"))?;
        Ok((project.id.clone(), project.root.clone()))
    }

    /// A new lease for the caller on a panel's current runtime generation.
    pub fn lease_acquire(
        &self,
        caller: &PairingId,
        panel: &PanelId,
        generation: &str,
    ) -> Result<LeaseView, ToolError> {
        let record = self.panel(caller, panel)?;
        check_generation(&record, generation)?;
        let id = LeaseId::from_random(self.inner.entropy.bytes16());
        let lease = Lease {
            pairing: caller.clone(),
            panel: panel.clone(),
            generation: generation.to_owned(),
            acquired_at: self.now(),
            ended: None,
            last_sequence: 0,
            history: BTreeMap::new(),
            sending: Arc::default(),
        };
        let view = lease_view(&id, &lease);
        self.panels().leases.insert(id, lease);
        Ok(view)
    }

    pub fn lease_release(
        &self,
        caller: &PairingId,
        lease: &LeaseId,
    ) -> Result<LeaseReleased, ToolError> {
        self.authorize(caller)?;
        let mut panels = self.panels();
        match panels.leases.get(lease) {
            Some(held) if &held.pairing == caller => {
                panels.leases.remove(lease);
                Ok(LeaseReleased {
                    lease_id: lease.clone(),
                    released: true,
                })
            }
            _ => Err(ToolError::new(
                ErrorCode::LeaseRequired,
                format!("this client holds no lease {lease}"),
            )),
        }
    }

    /// Records a runtime's progress (output cursor moved, or exit) for the event feed.
    pub fn panel_progress(
        &self,
        panel: &PanelId,
        output_cursor: u64,
        exit: Option<(Option<i32>, Option<i32>)>,
    ) {
        let at = self.now();
        let mut panels = self.panels();
        let Some(workspace) = panels.records.get(panel).map(|r| r.workspace_id.clone()) else {
            return;
        };
        panels.last_event += 1;
        let seq = panels.last_event;
        let event = PanelEvent {
            panel_id: panel.clone(),
            kind: if exit.is_some() { "exited" } else { "output" }.to_owned(),
            output_cursor: output_cursor.to_string(),
            exit_code: exit.and_then(|(code, _)| code),
            exit_signal: exit.and_then(|(_, signal)| signal),
            at,
        };
        panels.events.push_back((seq, workspace, event));
        while panels.events.len() > PANEL_EVENTS_KEPT {
            panels.events.pop_front();
        }
    }

    /// Panel events of a workspace after `after`, at most `max`; returns them and the cursor
    /// to continue from.
    pub(crate) fn panel_events_after(
        &self,
        workspace: &WorkspaceId,
        after: Option<u64>,
        max: usize,
    ) -> Result<(Vec<PanelEvent>, u64), ToolError> {
        let panels = self.panels();
        // Without a cursor, start from the oldest event still kept.
        let after = match after {
            Some(after) => after,
            None => panels
                .events
                .front()
                .map_or(panels.last_event, |(seq, _, _)| seq - 1),
        };
        if after > panels.last_event {
            return Err(ToolError::invalid(
                "the cursor is not one Lomi gave out; read without a cursor to start",
            ));
        }
        let oldest = panels
            .events
            .front()
            .map_or(panels.last_event + 1, |(seq, _, _)| *seq);
        if after + 1 < oldest && after < panels.last_event {
            return Err(ToolError::new(
                ErrorCode::CursorExpired,
                "the cursor is older than the retained panel events; read again without a cursor",
            ));
        }
        let mut next = after;
        let mut found = Vec::new();
        for (seq, owner, event) in panels.events.iter().filter(|(seq, _, _)| *seq > after) {
            if found.len() == max {
                break;
            }
            next = *seq;
            if owner == workspace {
                found.push(event.clone());
            }
        }
        Ok((found, next))
    }

    /// The person took the panel over (typed in it): every lease on it ends at once.
    pub fn takeover(&self, panel: &PanelId) {
        let mut panels = self.panels();
        for lease in panels.leases.values_mut().filter(|l| &l.panel == panel) {
            lease.ended.get_or_insert_with(|| {
                "the person took over this panel by typing in it".to_owned()
            });
            // An ended lease answers LEASE_EXPIRED before any sequence check: its history
            // will not be read again.
            lease.history.clear();
        }
    }

    /// Whether `caller` still holds `lease` on `panel` at `generation` (a held input is
    /// written only while it does: a takeover by the person ends it).
    pub fn lease_live(
        &self,
        caller: &PairingId,
        lease: &LeaseId,
        panel: &PanelId,
        generation: &str,
    ) -> Result<(), ToolError> {
        let record = self.panel(caller, panel)?;
        let panels = self.panels();
        let held = held_lease(&panels, caller, lease, panel)?;
        check_live(held, lease, &record, generation)
    }

    /// Sends one ordered input under a lease. `send` runs only for the next sequence number,
    /// and its answer is remembered so that the same sequence with the same payload gets that
    /// answer again instead of a second send. That includes a send that failed part-way
    /// ([`InputFailure::Unknown`]): its repeat is acknowledged with the same error, never
    /// written again. The answer is `send`'s acknowledgement and whether it is a repeat's.
    pub async fn lease_input<A, F, Fut>(
        &self,
        caller: &PairingId,
        input: LeasedInput<'_>,
        send: F,
    ) -> Result<(A, bool), ToolError>
    where
        A: serde::Serialize + serde::de::DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<A, InputFailure>>,
    {
        let LeasedInput {
            lease,
            panel,
            generation,
            sequence,
            payload,
        } = input;
        let fingerprint = lomi_store::fingerprint(&payload, Some(generation), None);
        let record = self.panel(caller, panel)?;
        let sending = held_lease(&self.panels(), caller, lease, panel)?
            .sending
            .clone();
        let _in_order = sending.lock().await;
        let last = {
            let panels = self.panels();
            // Checked again under the lease's lock: a takeover may have ended it meanwhile.
            let held = held_lease(&panels, caller, lease, panel)?;
            check_live(held, lease, &record, generation)?;
            if sequence <= held.last_sequence {
                return match held.history.get(&sequence) {
                    Some((seen, Ok(answer))) if *seen == fingerprint => {
                        let answer = serde_json::from_value(answer.clone())
                            .map_err(|e| ToolError::internal(e.to_string()))?;
                        Ok((answer, true))
                    }
                    Some((seen, Err(error))) if *seen == fingerprint => Err(error.clone()),
                    Some(_) => Err(ToolError::new(
                        ErrorCode::SequenceConflict,
                        format!(
                            "inputSequence {sequence} was already used with another payload; the next is {}",
                            held.last_sequence + 1
                        ),
                    )),
                    None => Err(ToolError::new(
                        ErrorCode::SequenceConflict,
                        format!(
                            "inputSequence {sequence} is older than this lease remembers; the next is {}",
                            held.last_sequence + 1
                        ),
                    )),
                };
            }
            if sequence > held.last_sequence + 1 {
                return Err(ToolError::new(
                    ErrorCode::SequenceGap,
                    format!("inputSequence {sequence} skips ahead; the next is {}", held.last_sequence + 1),
                )
                .with_details(serde_json::json!({ "nextInputSequence": (held.last_sequence + 1).to_string() })));
            }
            held.last_sequence
        };
        let (answer, kept) = match send().await {
            // Kept as JSON, the one shape every lease's history holds.
            Ok(answer) => match crate::to_json(&answer) {
                Ok(kept) => (Ok(answer), Ok(kept)),
                Err(error) => (Err(error.clone()), Err(error)),
            },
            Err(InputFailure::NotSent(error)) => return Err(error),
            Err(InputFailure::Unknown(error)) => (Err(error.clone()), Err(error)),
        };
        let mut panels = self.panels();
        if let Some(held) = panels.leases.get_mut(lease) {
            held.last_sequence = last + 1;
            held.history.insert(sequence, (fingerprint, kept));
            while held.history.len() > SEQUENCE_MEMORY {
                held.history.pop_first();
            }
        }
        answer.map(|answer| (answer, false))
    }

    /// Checks that the caller holds a live lease on the panel's current generation (for
    /// lease-guarded tools that are not ordered input, such as interrupt).
    pub fn lease_check(
        &self,
        caller: &PairingId,
        lease: &LeaseId,
        panel: &PanelId,
        generation: &str,
    ) -> Result<PanelRecord, ToolError> {
        let record = self.panel(caller, panel)?;
        let panels = self.panels();
        check_live(
            held_lease(&panels, caller, lease, panel)?,
            lease,
            &record,
            generation,
        )?;
        Ok(record)
    }
}

/// The caller's lease on this panel, or LEASE_REQUIRED.
fn held_lease<'a>(
    panels: &'a Panels,
    caller: &PairingId,
    lease: &LeaseId,
    panel: &PanelId,
) -> Result<&'a Lease, ToolError> {
    panels
        .leases
        .get(lease)
        .filter(|l| &l.pairing == caller && &l.panel == panel)
        .ok_or_else(|| {
            ToolError::new(
                ErrorCode::LeaseRequired,
                format!(
                    "no lease {lease} of this client on panel {panel}; call lomi_lease_acquire"
                ),
            )
        })
}

/// LEASE_EXPIRED if the lease ended, GENERATION_MISMATCH unless both the lease and the caller
/// name the panel's current runtime.
fn check_live(
    held: &Lease,
    lease: &LeaseId,
    record: &PanelRecord,
    generation: &str,
) -> Result<(), ToolError> {
    if let Some(reason) = &held.ended {
        return Err(ToolError::new(
            ErrorCode::LeaseExpired,
            format!("lease {lease} ended: {reason}"),
        ));
    }
    check_generation(record, &held.generation)?;
    if held.generation != generation {
        return Err(generation_mismatch(record, generation));
    }
    Ok(())
}

fn check_generation(record: &PanelRecord, generation: &str) -> Result<(), ToolError> {
    if record.generation.as_deref() == Some(generation) {
        Ok(())
    } else {
        Err(generation_mismatch(record, generation))
    }
}

fn generation_mismatch(record: &PanelRecord, generation: &str) -> ToolError {
    ToolError::new(
        ErrorCode::GenerationMismatch,
        format!(
            "generation {generation} is not the panel's current runtime ({}); re-read it with lomi_panel_list",
            record.generation.as_deref().unwrap_or("none")
        ),
    )
    .with_details(serde_json::json!({ "currentGeneration": record.generation }))
}

fn lease_view(id: &LeaseId, lease: &Lease) -> LeaseView {
    LeaseView {
        lease_id: id.clone(),
        panel_id: lease.panel.clone(),
        generation: lease.generation.clone(),
        last_input_sequence: lease.last_sequence.to_string(),
        acquired_at: lease.acquired_at,
    }
}
