// The chosen workspace's panels, tiled as its layout says: splits side by side or stacked,
// tab groups showing one panel at a time. The person splits a panel out of its group or moves
// it into another group; each change goes to Lomi as `workspaceLayout` with the revision it
// was made from, so an agent's change meanwhile is never overwritten.

import { useState } from "preact/hooks";
import type { Panel, Workspace } from "./api";
import { type LayoutNode, groups, joinTabs, split } from "./layout";
import type { PanelElements } from "./live";
import { PanelView, workspaceViews } from "./panels";

export interface TilesProps {
  workspace: Workspace;
  panels: Panel[];
  captures: Record<string, number>;
  elements: PanelElements;
  /** Sends the person's new layout, made from the workspace's revision as shown. */
  arrange(root: LayoutNode): void;
}

function TabGroup({ group, props }: { group: string[]; props: TilesProps }) {
  const [chosen, choose] = useState<string | null>(null);
  const active = chosen && group.includes(chosen) ? chosen : group[0];
  const byId = new Map(props.panels.map((p) => [p.panelId, p]));
  const root = props.workspace.layout ?? null;
  const others = groups(root).filter((g) => !g.includes(active));
  const arrange = (next: LayoutNode | null) => next && props.arrange(next);
  return (
    <div class="tab-group" data-group-panels={group.join(" ")}>
      <div class="tab-bar" role="tablist">
        {group.map((id) => (
          <button
            key={id}
            role="tab"
            class={id === active ? "panel-tab active" : "panel-tab"}
            data-tab-panel-id={id}
            onClick={() => choose(id)}
          >
            {byId.get(id)?.title ?? id}
          </button>
        ))}
        <span class="tile-actions">
          <button
            class="small split-right"
            title="Split this panel to the right"
            disabled={group.length < 2}
            onClick={() => root && arrange(split(root, active, "row"))}
          >
            ◫ Split right
          </button>
          <button
            class="small split-down"
            title="Split this panel below"
            disabled={group.length < 2}
            onClick={() => root && arrange(split(root, active, "column"))}
          >
            ⬓ Split down
          </button>
          {others.length > 0 && (
            <button
              class="small join-tabs"
              title="Move this panel into the next tab group"
              onClick={() => root && arrange(joinTabs(root, active, others[0][0]))}
            >
              ⇥ Into tabs
            </button>
          )}
        </span>
      </div>
      {group.map((id) => {
        const panel = byId.get(id);
        return (
          <div key={id} class="tile-body" hidden={id !== active} data-tile-panel-id={id}>
            {panel && (
              <PanelView
                panel={panel}
                workspaceId={props.workspace.workspaceId}
                captureSequence={props.captures[id] ?? 0}
                elements={props.elements}
              />
            )}
          </div>
        );
      })}
    </div>
  );
}

function Node({ node, props }: { node: LayoutNode; props: TilesProps }) {
  if ("tabs" in node) return <TabGroup group={node.tabs.panels} props={props} />;
  return (
    <div class={`split split-${node.split.direction}`}>
      {node.split.children.map((child, index) => (
        <Node key={index} node={child} props={props} />
      ))}
    </div>
  );
}

/** The chosen workspace: its panels tiled, and its other views as tabs. */
export function WorkspaceView(props: TilesProps) {
  const [view, setView] = useState("panels");
  const { workspace } = props;
  const extra = [...workspaceViews.entries()];
  const Other = workspaceViews.get(view)?.component;
  return (
    <section class="workspace" id="workspace" data-workspace-id={workspace.workspaceId}>
      <header class="workspace-head">
        <h2>{workspace.name}</h2>
        <span class="revision" title="The layout's revision (domainRevision)">
          revision {workspace.domainRevision}
        </span>
        {extra.length > 0 && (
          <nav class="workspace-views">
            <button class={view === "panels" ? "tab active" : "tab"} onClick={() => setView("panels")}>
              Panels
            </button>
            {extra.map(([name, entry]) => (
              <button key={name} class={view === name ? "tab active" : "tab"} onClick={() => setView(name)}>
                {entry.label}
              </button>
            ))}
          </nav>
        )}
      </header>
      {Other ? (
        <Other workspaceId={workspace.workspaceId} />
      ) : workspace.layout ? (
        <div class="tiles" id="tiles">
          <Node node={workspace.layout} props={props} />
        </div>
      ) : (
        <p class="empty">No panel open. An agent opens terminals, browsers and Android panels here.</p>
      )}
    </section>
  );
}
