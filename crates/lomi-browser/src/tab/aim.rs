//! Aiming at what an action lands on: the element a ref names (only the same, still connected
//! node of the snapshot's document), where it is in the tab's viewport, and the one preamble
//! of every action ([`Tab::arm`]), which arms the listener that confirms the action's event.

use std::collections::HashMap;

use lomi_snapshot::{FrameRecord, split_ref};
use serde_json::{Value, json};

use super::snapshot::SNAPSHOTS_KEPT;
use super::{ActionError, Tab, Target};
use crate::BrowserError;

/// Where a ref leads: its frame's world and the element's number there.
pub(super) struct Resolved {
    pub(super) context: i64,
    pub(super) number: u64,
    pub(super) frame_prefix: String,
    pub(super) frames: HashMap<String, FrameRecord>,
}

/// What the helper call of an action's preamble ([`Tab::arm`]) does in the page, which says
/// what its failure means for the action.
#[derive(Clone, Copy)]
pub(super) enum Call {
    /// It arms the action's listener, or only reads: when it fails, nothing was done.
    Arms,
    /// It is the action itself (select, reveal): when it fails the page may have acted, unless
    /// the helper refused (the element stale or unfit), which it does before changing anything.
    Acts,
}

/// An action's target found and its helper call answered: what [`Tab::arm`] gives the action.
pub(super) struct Armed {
    /// The element's world, number and frame (the main frame's world, number 0, for a point
    /// or the focused element).
    pub(super) at: Resolved,
    /// The token the page acknowledges the action's event with (see [`Tab::acknowledged`]).
    pub(super) token: String,
    /// The helper call's answer, checked.
    pub(super) answer: Value,
    /// The element, described for the agent.
    pub(super) element: String,
}

/// Where a pointer action goes, and how its arrival is recognised.
pub(super) struct Aimed {
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) token: String,
    pub(super) element: String,
    /// Lomi's world of the element's frame (none for a point).
    pub(super) context: Option<i64>,
}

impl Tab {
    /// Finds the element a ref of a snapshot names, refusing anything stale.
    pub(super) fn resolve(
        &self,
        snapshot_id: &str,
        element_ref: &str,
    ) -> Result<Resolved, BrowserError> {
        let state = self.lock();
        let record = state
            .snapshots
            .iter()
            .find(|s| s.id == snapshot_id)
            .ok_or_else(|| {
                BrowserError::Stale(format!(
                    "snapshot {snapshot_id} is not one of this tab's {SNAPSHOTS_KEPT} most recent snapshots; take a new one"
                ))
            })?;
        if record.loader != state.loader {
            return Err(BrowserError::Stale(format!(
                "the page navigated since snapshot {snapshot_id}; take a new snapshot"
            )));
        }
        if !record.refs.contains(element_ref) {
            return Err(BrowserError::Invalid(format!(
                "snapshot {snapshot_id} has no ref {element_ref:?}"
            )));
        }
        let (prefix, number) = split_ref(element_ref)?;
        let frame = record.frames.get(prefix).ok_or_else(|| {
            BrowserError::Invalid(format!("snapshot {snapshot_id} has no ref {element_ref:?}"))
        })?;
        // The frame's document must be the one the snapshot saw.
        match state.worlds.get(&frame.frame_id) {
            Some((context, _)) if *context == frame.context => {}
            _ => {
                return Err(BrowserError::Stale(format!(
                    "the frame of {element_ref} navigated or went away since snapshot {snapshot_id}; take a new snapshot"
                )));
            }
        }
        Ok(Resolved {
            context: frame.context,
            number,
            frame_prefix: prefix.to_owned(),
            frames: record.frames.clone(),
        })
    }

    /// Where a frame's viewport origin is in the tab's viewport (0,0 for the main frame).
    pub(super) async fn frame_origin(
        &self,
        resolved: &Resolved,
    ) -> Result<(f64, f64), BrowserError> {
        let (mut x, mut y) = (0.0, 0.0);
        let mut prefix = resolved.frame_prefix.clone();
        for _ in 0..16 {
            let Some(frame) = resolved.frames.get(&prefix) else {
                break;
            };
            let Some((parent, number)) = frame.owner.clone() else {
                break;
            };
            let parent_context = resolved.frames[&parent].context;
            let origin = self
                .helper(parent_context, &format!("frameOrigin({number})"))
                .await?;
            if origin["stale"] == true {
                return Err(BrowserError::Stale("the iframe went away".to_owned()));
            }
            x += origin["x"].as_f64().unwrap_or(0.0);
            y += origin["y"].as_f64().unwrap_or(0.0);
            prefix = parent;
        }
        Ok((x, y))
    }

    /// The preamble of every action, in one order: no JavaScript dialog blocks the page; the
    /// target is found (a ref only as the same, still connected node of its snapshot's
    /// document, see [`Tab::resolve`]; a point or the focused element in the main frame's
    /// world, number 0); `helper`, given the element's number and a fresh acknowledgement
    /// token, is the helper call that runs there; and its answer shows the element still there
    /// and fit (see [`Tab::checked`]). `call` says what a failure of that call means.
    pub(super) async fn arm(
        &self,
        target: Target<'_>,
        call: Call,
        helper: impl FnOnce(u64, &str) -> String,
    ) -> Result<Armed, ActionError> {
        self.no_dialog()?;
        let (at, label) = match target {
            Target::Element {
                snapshot_id,
                element_ref,
            } => (
                self.resolve(snapshot_id, element_ref)?,
                element_ref.to_owned(),
            ),
            Target::Point { x, y } => {
                (self.in_main_frame().await?, format!("the point ({x}, {y})"))
            }
            Target::None => (
                self.in_main_frame().await?,
                "the focused element".to_owned(),
            ),
        };
        let token = self.token();
        let answer = self
            .helper(at.context, &helper(at.number, &token))
            .await
            .map_err(|error| match call {
                Call::Arms => ActionError::Refused(error),
                Call::Acts => ActionError::Dispatched(error),
            })?;
        let answer = Self::checked(answer, &label).map_err(|error| match (call, error) {
            // The helper refuses before changing anything.
            (Call::Arms, error)
            | (Call::Acts, error @ (BrowserError::Invalid(_) | BrowserError::Stale(_))) => {
                ActionError::Refused(error)
            }
            (Call::Acts, error) => ActionError::Dispatched(error),
        })?;
        Ok(Armed {
            element: answer["element"].as_str().unwrap_or_default().to_owned(),
            at,
            token,
            answer,
        })
    }

    /// The main frame's world as a place to act in: no element (number 0), at the viewport's
    /// origin.
    async fn in_main_frame(&self) -> Result<Resolved, BrowserError> {
        Ok(Resolved {
            context: self.main_world().await?,
            number: 0,
            frame_prefix: "e".to_owned(),
            frames: HashMap::new(),
        })
    }

    /// Aims a pointer action. At an element: the point in the tab's viewport, once the element
    /// holds still there and is the topmost element at that point (`guarded`: a press that
    /// lands elsewhere is stopped in the page and reported as `missed`, see walker.js). At a
    /// point: whatever element is under it listens for `events`. `action` names the action
    /// when there is no target.
    pub(super) async fn aim(
        &self,
        action: &str,
        target: Target<'_>,
        events: &[&str],
        guarded: bool,
    ) -> Result<Aimed, ActionError> {
        let events = json!(events);
        match target {
            Target::Element { .. } => {
                let armed = self
                    .arm(target, Call::Arms, |number, token| {
                        format!("pointer({number}, {events}, {}, {guarded})", json!(token))
                    })
                    .await?;
                let (ox, oy) = self.frame_origin(&armed.at).await?;
                Ok(Aimed {
                    x: armed.answer["x"].as_f64().unwrap_or(0.0) + ox,
                    y: armed.answer["y"].as_f64().unwrap_or(0.0) + oy,
                    token: armed.token,
                    element: armed.element,
                    context: Some(armed.at.context),
                })
            }
            Target::Point { x, y } => {
                let armed = self
                    .arm(target, Call::Arms, |_, token| {
                        format!("listenAt({x}, {y}, {events}, {})", json!(token))
                    })
                    .await?;
                Ok(Aimed {
                    x,
                    y,
                    token: armed.token,
                    element: armed.element,
                    context: None,
                })
            }
            Target::None => Err(BrowserError::Invalid(format!(
                "{action} needs snapshotId + elementRef, or x + y"
            ))
            .into()),
        }
    }

    /// Stops an action's listener and guard in the page (best effort: the page may be gone).
    pub(super) async fn disarm(&self, aimed: &Aimed) {
        if let Some(context) = aimed.context
            && let Err(error) = self
                .helper(context, &format!("disarm({})", json!(aimed.token)))
                .await
        {
            tracing::debug!("disarm: {error}");
        }
    }

    pub(super) async fn mouse(
        &self,
        kind: &str,
        x: f64,
        y: f64,
        button: &str,
        count: u8,
    ) -> Result<(), BrowserError> {
        self.raw(
            "Input.dispatchMouseEvent",
            json!({ "type": kind, "x": x, "y": y, "button": button, "clickCount": count }),
        )
        .await
        .map(|_| ())
    }
}
