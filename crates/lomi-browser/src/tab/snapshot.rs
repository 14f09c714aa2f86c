//! A tab's snapshots: every frame's text taken by the helper, stitched and rendered by
//! lomi-snapshot, and the recent snapshots kept so their refs can be resolved.

use std::collections::{HashMap, HashSet};

use lomi_protocol::tools::browser::FrameView;
use lomi_snapshot::{FrameRecord, SnapshotOptions, stitch};
use serde_json::{Value, json};

use super::Tab;
use crate::BrowserError;
use crate::snapshot::SnapshotText;

/// Snapshots kept per tab; refs of older ones are SNAPSHOT_STALE.
pub(super) const SNAPSHOTS_KEPT: usize = 8;

/// One snapshot as the tab remembers it.
pub(super) struct SnapshotRecord {
    pub(super) id: String,
    pub(super) loader: String,
    /// ref prefix ("e", "f1e", …) → the frame it was taken in.
    pub(super) frames: HashMap<String, FrameRecord>,
    pub(super) refs: HashSet<String>,
    pub(super) lines: Vec<String>,
}

impl Tab {
    /// Takes a snapshot of every frame of the tab.
    pub async fn snapshot(&self, options: &SnapshotOptions) -> Result<SnapshotText, BrowserError> {
        let dialog = self.dialog();
        let loader = self.navigation_id();
        if let Some(dialog) = dialog {
            // The page is blocked until the dialog is answered: nothing else can be read.
            let url = self.lock().url.clone();
            return Ok(SnapshotText {
                snapshot_id: String::new(),
                navigation_id: loader,
                url,
                title: String::new(),
                text: format!(
                    "A JavaScript {} dialog is open: {:?}. Answer it with lomi_browser_dialog.\n",
                    dialog.kind, dialog.message
                ),
                truncated: false,
                lines: 1,
                next_from_line: None,
                refs: 0,
                frames: Vec::new(),
                dialog: Some(dialog),
                loading: false,
            });
        }
        let tree = self.raw("Page.getFrameTree", json!({})).await?;
        let mut frames: Vec<(String, Option<String>, String)> = Vec::new();
        collect_frames(&tree["frameTree"], None, &mut frames);
        let (snapshot_no, title_default) = {
            let mut state = self.lock();
            state.next_snapshot += 1;
            (state.next_snapshot, state.url.clone())
        };
        let snapshot_id = format!("s{snapshot_no}");
        let mut records: HashMap<String, FrameRecord> = HashMap::new();
        let mut prefixes: HashMap<String, String> = HashMap::new();
        let mut texts: HashMap<String, Value> = HashMap::new();
        let mut title = String::new();
        let mut loading = false;
        let mut views = Vec::new();
        if dialog.is_none() {
            for (frame_id, parent, url) in &frames {
                let prefix = self.prefix(frame_id, parent.is_none());
                let context = self.world(frame_id).await?;
                let taken = match self
                    .helper(context, &format!("snap({})", json!(prefix)))
                    .await
                {
                    Ok(taken) => taken,
                    // A frame that went away meanwhile is left out of this snapshot.
                    Err(BrowserError::Stale(_)) if parent.is_some() => continue,
                    Err(error) => return Err(error),
                };
                if parent.is_none() {
                    title = taken["title"].as_str().unwrap_or_default().to_owned();
                    loading = taken["loading"].as_bool().unwrap_or(false);
                }
                prefixes.insert(frame_id.clone(), prefix.clone());
                records.insert(
                    prefix.clone(),
                    FrameRecord {
                        frame_id: frame_id.clone(),
                        context,
                        owner: None,
                    },
                );
                texts.insert(prefix, taken);
                views.push(FrameView {
                    frame_id: frame_id.clone(),
                    parent_frame_id: parent.clone(),
                    url: url.clone(),
                });
            }
            // Which iframe element holds each child frame.
            for (frame_id, parent, _) in &frames {
                let (Some(parent), Some(prefix)) = (parent, prefixes.get(frame_id)) else {
                    continue;
                };
                let Some(parent_prefix) = prefixes.get(parent) else {
                    continue;
                };
                let parent_context = records[parent_prefix].context;
                if let Ok(number) = self.owner_number(frame_id, parent_context).await
                    && let Some(record) = records.get_mut(prefix)
                {
                    record.owner = Some((parent_prefix.clone(), number));
                }
            }
        }
        let mut lines = Vec::new();
        let mut refs = HashSet::new();
        if let Some(main) = frames.first().and_then(|(id, _, _)| prefixes.get(id)) {
            stitch(main, &texts, &records, 0, &mut lines, &mut refs);
        }
        let previous = options.since_snapshot_id.as_ref().map(|since| {
            let state = self.lock();
            state
                .snapshots
                .iter()
                .find(|s| &s.id == since)
                .map(|s| (s.loader.clone(), s.lines.clone()))
        });
        let diff_base = match previous {
            None => None,
            Some(None) => {
                return Err(BrowserError::Stale(format!(
                    "snapshot {} is not one of this tab's recent snapshots; take a full one",
                    options.since_snapshot_id.as_deref().unwrap_or_default()
                )));
            }
            Some(Some((old_loader, _))) if old_loader != loader => {
                return Err(BrowserError::Stale(
                    "the page navigated since that snapshot; take a full one".to_owned(),
                ));
            }
            Some(Some((_, old_lines))) => Some(old_lines),
        };
        let text = lomi_snapshot::render(&lines, diff_base.as_deref(), options);
        {
            let mut state = self.lock();
            state.snapshots.push_back(SnapshotRecord {
                id: snapshot_id.clone(),
                loader: loader.clone(),
                frames: records,
                refs: refs.clone(),
                lines,
            });
            while state.snapshots.len() > SNAPSHOTS_KEPT {
                state.snapshots.pop_front();
            }
        }
        Ok(SnapshotText {
            snapshot_id,
            navigation_id: loader,
            url: title_default,
            title,
            text: text.text,
            truncated: text.truncated,
            lines: u32::try_from(text.lines).unwrap_or(u32::MAX),
            next_from_line: text
                .next_from_line
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            refs: u32::try_from(refs.len()).unwrap_or(u32::MAX),
            frames: views,
            dialog,
            loading,
        })
    }

    /// The ref prefix of a frame: "e" for the main frame, "f<n>e" for others.
    fn prefix(&self, frame: &str, main: bool) -> String {
        if main {
            return "e".to_owned();
        }
        let mut state = self.lock();
        let next = u32::try_from(state.frame_numbers.len()).unwrap_or(u32::MAX) + 1;
        let number = *state.frame_numbers.entry(frame.to_owned()).or_insert(next);
        format!("f{number}e")
    }

    /// The element number (in the parent frame's world) of the iframe that holds `frame`.
    async fn owner_number(&self, frame: &str, parent_context: i64) -> Result<u64, BrowserError> {
        let owner = self
            .raw("DOM.getFrameOwner", json!({ "frameId": frame }))
            .await?;
        let node = owner["backendNodeId"].clone();
        let object = self
            .raw(
                "DOM.resolveNode",
                json!({ "backendNodeId": node, "executionContextId": parent_context }),
            )
            .await?;
        let object_id = object["object"]["objectId"].clone();
        let answer = self
            .raw(
                "Runtime.callFunctionOn",
                json!({
                    "objectId": object_id,
                    "functionDeclaration": "function() { return globalThis.__lomi ? globalThis.__lomi.refOf(this) : null; }",
                    "returnByValue": true,
                }),
            )
            .await?;
        answer["result"]["value"]
            .as_u64()
            .ok_or_else(|| BrowserError::Stale("the iframe was not in the snapshot".to_owned()))
    }
}

/// Frames of a frame tree, parents first: (id, parent id, url).
fn collect_frames(
    tree: &Value,
    parent: Option<&str>,
    out: &mut Vec<(String, Option<String>, String)>,
) {
    let frame = &tree["frame"];
    let Some(id) = frame["id"].as_str() else {
        return;
    };
    out.push((
        id.to_owned(),
        parent.map(str::to_owned),
        frame["url"].as_str().unwrap_or_default().to_owned(),
    ));
    if let Some(children) = tree["childFrames"].as_array() {
        for child in children {
            collect_frames(child, Some(id), out);
        }
    }
}
