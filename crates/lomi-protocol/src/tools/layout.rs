//! A workspace's layout: its panels arranged in nested splits whose leaves are tab groups, the
//! rules a layout keeps (every panel exactly once, no empty group, no split of one, bounded
//! depth), and the edits the broker makes when a panel comes or goes.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::ids::PanelId;

/// How deep splits may nest (a tab group at the root is depth 1).
pub const MAX_LAYOUT_DEPTH: usize = 6;

/// One node of a layout: exactly one of `split` or `tabs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LayoutNode {
    Split(LayoutSplit),
    Tabs(LayoutTabs),
}

/// Panels side by side (`row`) or one above the other (`column`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LayoutSplit {
    pub direction: SplitDirection,
    /// Two or more nodes, first on the left (row) or at the top (column).
    pub children: Vec<LayoutNode>,
}

/// Panels stacked as tabs: the window shows one of them at a time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LayoutTabs {
    /// One or more panel ids, in tab order.
    pub panels: Vec<PanelId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SplitDirection {
    Row,
    Column,
}

impl schemars::JsonSchema for LayoutNode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LayoutNode".into()
    }

    /// Written out rather than derived: the type is recursive, and tool schemas are inlined
    /// (no `$ref`), so there a nested node is described in words; Lomi checks it the same way.
    /// Where subschemas are referenced (the window's generated types), it refers to itself.
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let inlined = generator.settings().inline_subschemas;
        let node = if inlined {
            serde_json::json!({
                "type": "object",
                "description": "A nested node: {\"split\": …} or {\"tabs\": …}, as this one."
            })
        } else {
            generator.subschema_for::<LayoutNode>().to_value()
        };
        let split = serde_json::json!({
            "type": "object",
            "properties": {
                "direction": { "type": "string", "enum": ["row", "column"] },
                "children": { "type": "array", "items": node, "minItems": 2 }
            },
            "required": ["direction", "children"],
            "additionalProperties": false
        });
        let tabs = serde_json::json!({
            "type": "object",
            "properties": {
                "panels": { "type": "array", "items": { "type": "string" }, "minItems": 1 }
            },
            "required": ["panels"],
            "additionalProperties": false
        });
        let description = "Exactly one of `split` (two or more nodes side by side or stacked) or `tabs` (one or more panel ids).";
        if !inlined {
            // Referenced (the window's types): one closed object per variant, a plain union.
            let variant = |name: &str, schema: &serde_json::Value| {
                serde_json::json!({
                    "type": "object",
                    "properties": { name: schema },
                    "required": [name],
                    "additionalProperties": false
                })
            };
            return schemars::json_schema!({
                "description": description,
                "oneOf": [variant("split", &split), variant("tabs", &tabs)]
            });
        }
        schemars::json_schema!({
            "description": description,
            "type": "object",
            "properties": { "split": split, "tabs": tabs },
            "oneOf": [{ "required": ["split"] }, { "required": ["tabs"] }],
            "additionalProperties": false
        })
    }
}

impl LayoutNode {
    /// One tab group holding `panels` (none when there are none).
    pub fn tabs_of(panels: Vec<PanelId>) -> Option<LayoutNode> {
        (!panels.is_empty()).then_some(LayoutNode::Tabs(LayoutTabs { panels }))
    }

    /// The panel ids in layout order: left to right, top to bottom, tab by tab.
    pub fn leaves(&self) -> Vec<PanelId> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut Vec<PanelId>) {
        match self {
            LayoutNode::Tabs(tabs) => out.extend(tabs.panels.iter().cloned()),
            LayoutNode::Split(split) => split.children.iter().for_each(|c| c.collect(out)),
        }
    }

    /// How deep the node nests (a tab group is 1).
    pub fn depth(&self) -> usize {
        match self {
            LayoutNode::Tabs(_) => 1,
            LayoutNode::Split(split) => {
                1 + split
                    .children
                    .iter()
                    .map(LayoutNode::depth)
                    .max()
                    .unwrap_or(0)
            }
        }
    }

    /// Checks the node's own rules and that it holds exactly `panels` (the workspace's open
    /// panels, in any order), each once. The message says what to fix.
    pub fn check(&self, panels: &[PanelId]) -> Result<(), String> {
        if self.depth() > MAX_LAYOUT_DEPTH {
            return Err(format!(
                "layout nests {} levels deep; at most {MAX_LAYOUT_DEPTH} (flatten nested splits)",
                self.depth()
            ));
        }
        self.check_shape()?;
        let mut seen = HashSet::new();
        for panel in self.leaves() {
            if !panels.contains(&panel) {
                return Err(format!(
                    "layout names panel {panel}, which is not open in this workspace; list the panels again"
                ));
            }
            if !seen.insert(panel.clone()) {
                return Err(format!(
                    "layout names panel {panel} twice; name each panel once"
                ));
            }
        }
        if let Some(missing) = panels.iter().find(|p| !seen.contains(p)) {
            return Err(format!(
                "layout leaves out panel {missing}; name every open panel of the workspace exactly once"
            ));
        }
        Ok(())
    }

    fn check_shape(&self) -> Result<(), String> {
        match self {
            LayoutNode::Tabs(tabs) if tabs.panels.is_empty() => {
                Err("a tab group needs at least one panel; leave empty groups out".to_owned())
            }
            LayoutNode::Tabs(_) => Ok(()),
            LayoutNode::Split(split) if split.children.len() < 2 => Err(format!(
                "a split needs two or more children (has {}); put a single child in its place",
                split.children.len()
            )),
            LayoutNode::Split(split) => split.children.iter().try_for_each(LayoutNode::check_shape),
        }
    }

    /// The same arrangement with its panels taken from `order`, leaf by leaf: how an old
    /// `panelOrder` change reorders panels while keeping the splits and groups.
    pub fn refilled(&self, order: &mut impl Iterator<Item = PanelId>) -> LayoutNode {
        match self {
            LayoutNode::Tabs(tabs) => LayoutNode::Tabs(LayoutTabs {
                panels: tabs.panels.iter().filter_map(|_| order.next()).collect(),
            }),
            LayoutNode::Split(split) => LayoutNode::Split(LayoutSplit {
                direction: split.direction,
                children: split.children.iter().map(|c| c.refilled(order)).collect(),
            }),
        }
    }

    /// Adds a panel as the last tab of the last tab group (the one at the right or bottom).
    pub fn with_panel(self, panel: PanelId) -> LayoutNode {
        match self {
            LayoutNode::Tabs(mut tabs) => {
                tabs.panels.push(panel);
                LayoutNode::Tabs(tabs)
            }
            LayoutNode::Split(mut split) => {
                if let Some(last) = split.children.pop() {
                    split.children.push(last.with_panel(panel));
                }
                LayoutNode::Split(split)
            }
        }
    }

    /// Takes a panel out; a group or split left empty goes too, and a split left with one
    /// child is replaced by that child. `None` when nothing is left.
    pub fn without_panel(self, panel: &PanelId) -> Option<LayoutNode> {
        match self {
            LayoutNode::Tabs(mut tabs) => {
                tabs.panels.retain(|p| p != panel);
                (!tabs.panels.is_empty()).then_some(LayoutNode::Tabs(tabs))
            }
            LayoutNode::Split(split) => {
                let mut children: Vec<LayoutNode> = split
                    .children
                    .into_iter()
                    .filter_map(|c| c.without_panel(panel))
                    .collect();
                match children.len() {
                    0 => None,
                    1 => children.pop(),
                    _ => Some(LayoutNode::Split(LayoutSplit {
                        direction: split.direction,
                        children,
                    })),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(value: serde_json::Value) -> LayoutNode {
        serde_json::from_value(value).expect("a layout node")
    }

    fn ids(names: &[&str]) -> Vec<PanelId> {
        names
            .iter()
            .map(|n| serde_json::from_value(json!(n)).expect("an id"))
            .collect()
    }

    fn check(layout: serde_json::Value, panels: &[&str]) -> Result<(), String> {
        node(layout).check(&ids(panels))
    }

    #[test]
    fn a_layout_holds_every_open_panel_exactly_once() {
        let split = json!({"split": {"direction": "row", "children": [
            {"tabs": {"panels": ["pn_a"]}},
            {"tabs": {"panels": ["pn_b", "pn_c"]}}
        ]}});
        assert_eq!(check(split.clone(), &["pn_c", "pn_a", "pn_b"]), Ok(()));
        assert_eq!(node(split.clone()).leaves(), ids(&["pn_a", "pn_b", "pn_c"]));
        let missing = check(split.clone(), &["pn_a", "pn_b", "pn_c", "pn_d"]);
        assert!(
            missing
                .as_ref()
                .is_err_and(|m| m.contains("leaves out panel pn_d")),
            "{missing:?}"
        );
        let unknown = check(split, &["pn_a", "pn_b"]);
        assert!(
            unknown
                .as_ref()
                .is_err_and(|m| m.contains("pn_c, which is not open")),
            "{unknown:?}"
        );
        let twice = check(json!({"tabs": {"panels": ["pn_a", "pn_a"]}}), &["pn_a"]);
        assert!(
            twice.as_ref().is_err_and(|m| m.contains("twice")),
            "{twice:?}"
        );
    }

    #[test]
    fn empty_groups_single_splits_and_deep_nesting_are_refused() {
        let empty = check(json!({"tabs": {"panels": []}}), &[]);
        assert!(
            empty
                .as_ref()
                .is_err_and(|m| m.contains("at least one panel")),
            "{empty:?}"
        );
        let single = check(
            json!({"split": {"direction": "column", "children": [{"tabs": {"panels": ["pn_a"]}}]}}),
            &["pn_a"],
        );
        assert!(
            single
                .as_ref()
                .is_err_and(|m| m.contains("two or more children")),
            "{single:?}"
        );
        let mut deep = json!({"tabs": {"panels": ["pn_a"]}});
        for _ in 0..MAX_LAYOUT_DEPTH {
            deep = json!({"split": {"direction": "row", "children": [deep, {"tabs": {"panels": ["pn_b"]}}]}});
        }
        let deep = node(deep);
        assert!(
            deep.check(&ids(&["pn_a", "pn_b"]))
                .is_err_and(|m| m.contains("levels deep"))
        );
    }

    #[test]
    fn a_node_is_exactly_one_of_split_or_tabs() {
        let both: Result<LayoutNode, _> = serde_json::from_value(json!({
            "tabs": {"panels": ["pn_a"]},
            "split": {"direction": "row", "children": []}
        }));
        assert!(both.is_err());
        let unknown: Result<LayoutNode, _> =
            serde_json::from_value(json!({"tabs": {"panels": ["pn_a"], "active": "pn_a"}}));
        assert!(unknown.is_err());
    }

    #[test]
    fn panels_come_and_go_without_leaving_empty_nodes() {
        let layout = LayoutNode::tabs_of(ids(&["pn_a"])).expect("one panel");
        let layout = layout.with_panel(ids(&["pn_b"])[0].clone());
        assert_eq!(layout, node(json!({"tabs": {"panels": ["pn_a", "pn_b"]}})));
        let split = node(json!({"split": {"direction": "row", "children": [
            {"tabs": {"panels": ["pn_a"]}},
            {"split": {"direction": "column", "children": [
                {"tabs": {"panels": ["pn_b"]}}, {"tabs": {"panels": ["pn_c"]}}
            ]}}
        ]}}));
        let added = split.clone().with_panel(ids(&["pn_d"])[0].clone());
        assert_eq!(added.leaves(), ids(&["pn_a", "pn_b", "pn_c", "pn_d"]));
        let removed = split.without_panel(&ids(&["pn_b"])[0]).expect("two left");
        assert_eq!(
            removed,
            node(json!({"split": {"direction": "row", "children": [
                {"tabs": {"panels": ["pn_a"]}}, {"tabs": {"panels": ["pn_c"]}}
            ]}}))
        );
        let last = removed.without_panel(&ids(&["pn_a"])[0]).expect("one left");
        assert_eq!(last, node(json!({"tabs": {"panels": ["pn_c"]}})));
        assert_eq!(last.without_panel(&ids(&["pn_c"])[0]), None);
    }

    #[test]
    fn a_panel_order_refills_the_same_arrangement() {
        let split = node(json!({"split": {"direction": "row", "children": [
            {"tabs": {"panels": ["pn_a"]}}, {"tabs": {"panels": ["pn_b", "pn_c"]}}
        ]}}));
        let refilled = split.refilled(&mut ids(&["pn_c", "pn_a", "pn_b"]).into_iter());
        assert_eq!(
            refilled,
            node(json!({"split": {"direction": "row", "children": [
                {"tabs": {"panels": ["pn_c"]}}, {"tabs": {"panels": ["pn_a", "pn_b"]}}
            ]}}))
        );
    }
}
