// The panel kinds the layout's tiles can show, by `Panel.kind`: the registry other views add
// to (an editor for `document` panels, say) without touching the layout.

import type { ComponentType } from "preact";
import { useLayoutEffect, useRef } from "preact/hooks";
import type { Panel, Workspace } from "./api";
import type { PanelElements } from "./live";

export interface PanelProps {
  panel: Panel;
  workspaceId: string;
  /** An Android panel's latest capture sequence (0: none yet). */
  captureSequence: number;
  /** The lasting views of terminal, browser and Android panels. */
  elements: PanelElements;
}

/** Mounts a panel's lasting view (its xterm.js terminal, browser view or capture) in the tile. */
function LastingView({ panel, captureSequence, elements }: PanelProps) {
  const host = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const view = elements.view(panel, captureSequence);
    if (host.current && host.current.firstChild !== view) host.current.replaceChildren(view);
  }, [panel, captureSequence, elements]);
  return <div class="panel-host" ref={host} />;
}

function UnknownPanel({ panel }: PanelProps) {
  return (
    <div class={`panel ${panel.kind}`} data-panel-id={panel.panelId}>
      <p class="empty">A {panel.kind} panel: this window cannot show it yet.</p>
    </div>
  );
}

/** Panel kind → the component that shows it. */
export const panelKinds = new Map<string, ComponentType<PanelProps>>([
  ["terminal", LastingView],
  ["browser", LastingView],
  ["android", LastingView],
]);

export function PanelView(props: PanelProps) {
  const Kind = panelKinds.get(props.panel.kind) ?? UnknownPanel;
  return <Kind {...props} />;
}

/** What a workspace view beside its panels gets (a file tree, Git). */
export interface WorkspaceViewProps {
  workspace: Workspace;
}

/**
 * Views of a whole workspace shown as tabs beside "Panels" (e.g. "Files", "Git"): each adds
 * itself here with its label.
 */
export const workspaceViews = new Map<string, { label: string; component: ComponentType<WorkspaceViewProps> }>();
