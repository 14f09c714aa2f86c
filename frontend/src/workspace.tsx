// The chosen workspace's panels, tiled as its layout says: splits side by side or stacked,
// tab groups showing one panel at a time. The person splits a panel out of its group or moves
// it into another group; each change goes to Lomi as `workspaceLayout` with the revision it
// was made from, so an agent's change meanwhile is never overwritten.

import { useState } from "preact/hooks";
import type { Decision, FeedItem, Panel, Workspace } from "./api";
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
            <button
              id="workspace-view-panels"
              class={view === "panels" ? "tab active" : "tab"}
              onClick={() => setView("panels")}
            >
              Panels
            </button>
            {extra.map(([name, entry]) => (
              <button
                key={name}
                id={`workspace-view-${name}`}
                class={view === name ? "tab active" : "tab"}
                onClick={() => setView(name)}
              >
                {entry.label}
              </button>
            ))}
          </nav>
        )}
      </header>
      {Other ? (
        <Other workspace={workspace} />
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

/** Operations that are not settled yet: the agents' activity in a workspace. */
const UNSETTLED = new Set(["queued", "awaiting_user", "running", "cancelling"]);

export interface SidebarProps {
  workspaces: Workspace[];
  chosen: string | null;
  decisions: Decision[];
  feed: FeedItem[];
  choose(workspaceId: string): void;
}

/** The workspaces, each with its open panels, the decisions waiting and its agents' work under way. */
export function Sidebar({ workspaces, chosen, decisions, feed, choose }: SidebarProps) {
  return (
    <aside id="sidebar">
      <h2>Workspaces</h2>
      {workspaces.length === 0 && <p class="empty">No workspace yet: add one in Settings.</p>}
      <ul class="workspace-list">
        {workspaces.map((w) => {
          const waiting = decisions.filter((d) => d.workspaceId === w.workspaceId).length;
          const active = feed.filter((f) => f.workspaceId === w.workspaceId && UNSETTLED.has(f.state)).length;
          return (
            <li
              key={w.workspaceId}
              class={w.workspaceId === chosen ? "workspace-item chosen" : "workspace-item"}
              data-workspace-id={w.workspaceId}
              onClick={() => choose(w.workspaceId)}
            >
              <span class="workspace-name">{w.name}</span>
              <span class="panel-count" title="Open panels">
                {w.panelOrder.length}
              </span>
              {waiting > 0 && (
                <span class="badge awaiting_user decisions-badge" title="Decisions waiting for you">
                  {waiting} to decide
                </span>
              )}
              {active > 0 && (
                <span class="badge running activity-badge" title="Agents' operations under way">
                  {active} running
                </span>
              )}
            </li>
          );
        })}
      </ul>
    </aside>
  );
}
