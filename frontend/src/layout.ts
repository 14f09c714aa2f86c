// A workspace's layout as the broker keeps it (`WorkspaceView.layout`): nested splits whose
// leaves are tab groups. The person's edits here make a new tree that the window sends with
// the revision it was shown at (`workspaceLayout`); the broker checks it like an agent's.

import type { LayoutNode } from "./generated/protocol";

export type { LayoutNode };

export function leaves(node: LayoutNode | null): string[] {
  if (!node) return [];
  if ("tabs" in node) return [...node.tabs.panels];
  return node.split.children.flatMap(leaves);
}

/** The node without `panel`; empty groups and splits go, a split of one becomes that one. */
export function without(node: LayoutNode, panel: string): LayoutNode | null {
  if ("tabs" in node) {
    const panels = node.tabs.panels.filter((p) => p !== panel);
    return panels.length ? { tabs: { panels } } : null;
  }
  const children = node.split.children.map((c) => without(c, panel)).filter((c): c is LayoutNode => c !== null);
  if (children.length === 0) return null;
  if (children.length === 1) return children[0];
  return { split: { direction: node.split.direction, children } };
}

/** Replaces the tab group holding `panel` with what `change` makes of it. */
function mapGroup(node: LayoutNode, panel: string, change: (group: string[]) => LayoutNode): LayoutNode {
  if ("tabs" in node) return node.tabs.panels.includes(panel) ? change(node.tabs.panels) : node;
  return {
    split: { direction: node.split.direction, children: node.split.children.map((c) => mapGroup(c, panel, change)) },
  };
}

/** A split directly inside a split of the same direction becomes its siblings (keeps it flat). */
function flatten(node: LayoutNode): LayoutNode {
  if ("tabs" in node) return node;
  const children = node.split.children.flatMap((child) => {
    const flat = flatten(child);
    return "split" in flat && flat.split.direction === node.split.direction ? flat.split.children : [flat];
  });
  return { split: { direction: node.split.direction, children } };
}

/**
 * Takes `panel` out of its tab group into a group of its own beside it (`row`: to the right,
 * `column`: below). Null when the panel is alone in its group: there is nothing to split.
 */
export function split(root: LayoutNode, panel: string, direction: "row" | "column"): LayoutNode | null {
  let alone = false;
  const next = mapGroup(root, panel, (group) => {
    if (group.length < 2) {
      alone = true;
      return { tabs: { panels: group } };
    }
    return {
      split: {
        direction,
        children: [{ tabs: { panels: group.filter((p) => p !== panel) } }, { tabs: { panels: [panel] } }],
      },
    };
  });
  return alone ? null : flatten(next);
}

/** Moves `panel` into the tab group that holds `target`, as its last tab. */
export function joinTabs(root: LayoutNode, panel: string, target: string): LayoutNode | null {
  if (panel === target) return null;
  const rest = without(root, panel);
  if (!rest) return null;
  return flatten(mapGroup(rest, target, (group) => ({ tabs: { panels: [...group, panel] } })));
}

/** The tab groups in layout order, each as its panels (for "move to the group of …"). */
export function groups(node: LayoutNode | null): string[][] {
  if (!node) return [];
  if ("tabs" in node) return [node.tabs.panels];
  return node.split.children.flatMap(groups);
}
