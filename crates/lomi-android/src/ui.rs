//! UI snapshots: a `uiautomator dump` parsed into a compact list of nodes with refs (`n1`,
//! `n2`, … in document order), cut to a byte budget.

/// A node's rectangle in screen pixels; `right` and `bottom` are exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl Bounds {
    pub fn center(&self) -> (i32, i32) {
        (
            self.left + (self.right - self.left) / 2,
            self.top + (self.bottom - self.top) / 2,
        )
    }
}

/// One view in the hierarchy. Empty attributes are `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiNode {
    /// `n1`, `n2`, … in document order; valid only for the snapshot that gave it.
    pub reference: String,
    /// The parent's reference; `None` for top-level nodes.
    pub parent: Option<String>,
    pub class: Option<String>,
    pub text: Option<String>,
    pub resource_id: Option<String>,
    pub content_description: Option<String>,
    pub bounds: Option<Bounds>,
    pub clickable: bool,
}

/// The nodes of one dump, parents before children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiSnapshot {
    pub nodes: Vec<UiNode>,
    /// True when nodes were left out to stay within the byte budget.
    pub truncated: bool,
    /// How many `uiautomator dump` runs it took (more than one when the UI was busy).
    pub attempts: u32,
    /// A hash of the whole hierarchy as dumped: two snapshots with the same fingerprint saw the
    /// same UI. Comparable within one process only.
    pub fingerprint: u64,
}

/// Parses `uiautomator dump /dev/tty` output. Nodes are kept in document order while their
/// estimated size fits `max_bytes`; the rest are dropped and `truncated` is set.
pub(crate) fn parse(dump: &str, max_bytes: usize, attempts: u32) -> Result<UiSnapshot, String> {
    let start = dump
        .find("<?xml")
        .or_else(|| dump.find("<hierarchy"))
        .ok_or_else(|| format!("no XML hierarchy in: {}", excerpt(dump)))?;
    let xml = &dump[start..];
    // The dump ends with "UI hierchary dumped to: /dev/tty" (sic) on the same line.
    let xml = xml
        .find("UI hierchary dumped to")
        .map_or(xml, |end| &xml[..end])
        .trim_end();
    let document = roxmltree::Document::parse(xml).map_err(|error| error.to_string())?;
    let fingerprint = {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        xml.hash(&mut hasher);
        hasher.finish()
    };

    let mut nodes = Vec::new();
    let mut references = std::collections::HashMap::new();
    let mut used = 0;
    let mut truncated = false;
    for element in document
        .descendants()
        .filter(|element| element.has_tag_name("node"))
    {
        let reference = format!("n{}", nodes.len() + 1);
        let parent = element
            .ancestors()
            .skip(1)
            .find(|ancestor| ancestor.has_tag_name("node"))
            .and_then(|ancestor| references.get(&ancestor.id()).cloned());
        let attribute = |name: &str| {
            element
                .attribute(name)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        let node = UiNode {
            reference: reference.clone(),
            parent,
            class: attribute("class"),
            text: attribute("text"),
            resource_id: attribute("resource-id"),
            content_description: attribute("content-desc"),
            bounds: element.attribute("bounds").and_then(parse_bounds),
            clickable: element.attribute("clickable") == Some("true"),
        };
        let size = estimated_size(&node);
        if used + size > max_bytes {
            truncated = true;
            break;
        }
        used += size;
        references.insert(element.id(), reference);
        nodes.push(node);
    }
    Ok(UiSnapshot {
        nodes,
        truncated,
        attempts,
        fingerprint,
    })
}

/// `[left,top][right,bottom]`.
fn parse_bounds(text: &str) -> Option<Bounds> {
    let (first, second) = text
        .strip_prefix('[')?
        .strip_suffix(']')?
        .split_once("][")?;
    let pair = |text: &str| -> Option<(i32, i32)> {
        let (a, b) = text.split_once(',')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    };
    let (left, top) = pair(first)?;
    let (right, bottom) = pair(second)?;
    Some(Bounds {
        left,
        top,
        right,
        bottom,
    })
}

/// Roughly what the node costs once serialized: its strings plus a fixed overhead for keys,
/// bounds and punctuation.
fn estimated_size(node: &UiNode) -> usize {
    const OVERHEAD: usize = 96;
    let strings = [
        &node.class,
        &node.text,
        &node.resource_id,
        &node.content_description,
        &node.parent,
    ];
    OVERHEAD
        + node.reference.len()
        + strings
            .iter()
            .map(|value| value.as_ref().map_or(0, String::len))
            .sum::<usize>()
}

fn excerpt(text: &str) -> String {
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node text=\"\" class=\"android.widget.FrameLayout\" clickable=\"false\" bounds=\"[0,0][360,640]\"><node text=\"Press &amp; hold\" resource-id=\"app:id/button\" class=\"android.widget.Button\" clickable=\"true\" bounds=\"[40,200][320,280]\"/></node></hierarchy>UI hierchary dumped to: /dev/tty\n";

    #[test]
    fn dumps_become_nodes_with_refs() {
        let snapshot = parse(DUMP, 10_000, 1).expect("parses");
        assert!(!snapshot.truncated);
        let [root, button] = snapshot.nodes.as_slice() else {
            panic!("two nodes expected: {snapshot:?}");
        };
        assert_eq!(
            (root.reference.as_str(), root.parent.as_deref()),
            ("n1", None)
        );
        assert_eq!(root.text, None);
        assert_eq!(button.parent.as_deref(), Some("n1"));
        assert_eq!(button.text.as_deref(), Some("Press & hold"));
        assert_eq!(button.resource_id.as_deref(), Some("app:id/button"));
        assert!(button.clickable);
        let bounds = button.bounds.expect("bounds");
        assert_eq!(bounds.center(), (180, 240));
    }

    #[test]
    fn the_byte_budget_truncates() {
        let snapshot = parse(DUMP, 150, 2).expect("parses");
        assert_eq!(snapshot.nodes.len(), 1);
        assert!(snapshot.truncated);
        assert_eq!(snapshot.attempts, 2);
    }

    #[test]
    fn output_without_xml_is_an_error() {
        assert!(
            parse(
                "ERROR: null root node returned by UiTestAutomationBridge.\n",
                100,
                1
            )
            .is_err()
        );
        assert!(parse("<hierarchy><node>", 100, 1).is_err());
    }
}
