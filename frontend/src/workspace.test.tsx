import { render } from "preact";
import { describe, expect, it, vi } from "vitest";
import type { Decision, FeedItem, Panel, Workspace } from "./api";
import { PanelElements } from "./live";
import { Sidebar, WorkspaceView } from "./workspace";

const panels: Panel[] = [
  { panelId: "pn_a", kind: "android", title: "Phone", projectId: null, generation: "g1" },
  { panelId: "pn_b", kind: "android", title: "Tablet", projectId: null, generation: "g1" },
];

function workspace(layout: Workspace["layout"]): Workspace {
  return {
    workspaceId: "ws_a",
    name: "Alpha",
    domainRevision: "4",
    projects: [],
    panelOrder: ["pn_a", "pn_b"],
    layout,
    persistentBrowserProfile: false,
  };
}

function mount(layout: Workspace["layout"], arrange = vi.fn()): HTMLElement {
  const elements = new PanelElements({ attach: vi.fn(), input: vi.fn(), capture: vi.fn(), browser: vi.fn() });
  const root = document.body.appendChild(document.createElement("div"));
  render(<WorkspaceView workspace={workspace(layout)} panels={panels} captures={{}} elements={elements} arrange={arrange} />, root);
  return root;
}

describe("the workspace's tiles", () => {
  it("shows a tab group's first panel and splits the active one out beside it", async () => {
    const arrange = vi.fn();
    const root = mount({ tabs: { panels: ["pn_a", "pn_b"] } }, arrange);
    const tabs = [...root.querySelectorAll<HTMLElement>(".panel-tab")];
    expect(tabs.map((t) => t.textContent)).toEqual(["Phone", "Tablet"]);
    expect(root.querySelector<HTMLElement>('[data-tile-panel-id="pn_b"]')!.hidden).toBe(true);
    tabs[1].click();
    await new Promise((resolve) => setTimeout(resolve));
    expect(root.querySelector<HTMLElement>('[data-tile-panel-id="pn_b"]')!.hidden).toBe(false);
    root.querySelector<HTMLElement>(".split-right")!.click();
    expect(arrange).toHaveBeenCalledWith({
      split: { direction: "row", children: [{ tabs: { panels: ["pn_a"] } }, { tabs: { panels: ["pn_b"] } }] },
    });
  });

  it("tiles a split side by side, each group with its own panel", () => {
    const root = mount({
      split: { direction: "column", children: [{ tabs: { panels: ["pn_b"] } }, { tabs: { panels: ["pn_a"] } }] },
    });
    const split = root.querySelector(".split.split-column")!;
    expect([...split.querySelectorAll(".tab-group")].map((g) => g.getAttribute("data-group-panels"))).toEqual(["pn_b", "pn_a"]);
    expect(root.querySelector<HTMLButtonElement>(".split-right")!.disabled).toBe(true);
    expect(root.querySelector(".android-panel")).not.toBeNull();
  });

  it("says when no panel is open", () => {
    expect(mount(null).textContent).toContain("No panel open");
  });
});

describe("the sidebar of workspaces", () => {
  it("shows each workspace's decisions waiting and its agents' work under way, and chooses one", () => {
    const other = { ...workspace(null), workspaceId: "ws_b", name: "Beta", panelOrder: [] };
    const decision = { operationId: "op_1", tool: "lomi_file_delete", pairingId: "pa_1", workspaceId: "ws_b" } as Decision;
    const op = (id: string, state: string, workspaceId: string) => ({ operationId: id, state, workspaceId }) as FeedItem;
    const feed = [op("op_1", "awaiting_user", "ws_b"), op("op_2", "running", "ws_b"), op("op_3", "succeeded", "ws_a")];
    const choose = vi.fn();
    const root = document.body.appendChild(document.createElement("div"));
    render(
      <Sidebar workspaces={[workspace(null), other]} chosen="ws_a" decisions={[decision]} feed={feed} choose={choose} />,
      root,
    );
    const alpha = root.querySelector<HTMLElement>('li[data-workspace-id="ws_a"]')!;
    const beta = root.querySelector<HTMLElement>('li[data-workspace-id="ws_b"]')!;
    expect(alpha.className).toContain("chosen");
    expect(alpha.querySelector(".panel-count")!.textContent).toBe("2");
    expect(alpha.querySelector(".decisions-badge, .activity-badge")).toBeNull();
    expect(beta.querySelector(".decisions-badge")!.textContent).toBe("1 to decide");
    expect(beta.querySelector(".activity-badge")!.textContent).toBe("2 running");
    beta.click();
    expect(choose).toHaveBeenCalledWith("ws_b");
  });
});
