//! Aiming at what an action lands on: the element a ref names (only the same, still connected
//! node of the snapshot's document), where it is in the tab's viewport, and the listener armed
//! in the page to confirm the action's event.

use std::collections::HashMap;

use lomi_snapshot::{FrameRecord, split_ref};
use serde_json::json;

use super::Tab;
use super::snapshot::SNAPSHOTS_KEPT;
use crate::BrowserError;

/// Where a ref leads: its frame's world and the element's number there.
pub(super) struct Resolved {
    pub(super) context: i64,
    pub(super) number: u64,
    pub(super) frame_prefix: String,
    pub(super) frames: HashMap<String, FrameRecord>,
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

    /// Aims a pointer action: the point in the tab's viewport, once the element holds still
    /// there and is the topmost element at that point. `guarded`: a press that lands elsewhere
    /// is stopped in the page and reported as `missed` (see walker.js).
    pub(super) async fn aim(
        &self,
        snapshot_id: &str,
        element_ref: &str,
        events: &[&str],
        guarded: bool,
    ) -> Result<Aimed, BrowserError> {
        self.no_dialog()?;
        let resolved = self.resolve(snapshot_id, element_ref)?;
        let token = self.token();
        let answer = self
            .helper(
                resolved.context,
                &format!(
                    "pointer({}, {}, {}, {guarded})",
                    resolved.number,
                    json!(events),
                    json!(token)
                ),
            )
            .await?;
        let answer = Self::checked(answer, element_ref)?;
        let (ox, oy) = self.frame_origin(&resolved).await?;
        Ok(Aimed {
            x: answer["x"].as_f64().unwrap_or(0.0) + ox,
            y: answer["y"].as_f64().unwrap_or(0.0) + oy,
            token,
            element: answer["element"].as_str().unwrap_or_default().to_owned(),
            context: Some(resolved.context),
        })
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

    /// Listens for `events` at whatever element is under a viewport point.
    pub(super) async fn listen_at(
        &self,
        x: f64,
        y: f64,
        events: &[&str],
    ) -> Result<(String, String), BrowserError> {
        self.no_dialog()?;
        let main = self.lock().main_frame.clone();
        let context = self.world(&main).await?;
        let token = self.token();
        let answer = self
            .helper(
                context,
                &format!("listenAt({x}, {y}, {}, {})", json!(events), json!(token)),
            )
            .await?;
        Ok((
            token,
            answer["element"].as_str().unwrap_or_default().to_owned(),
        ))
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
