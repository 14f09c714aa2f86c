import { describe, expect, it, vi } from "vitest";
import type { Pairing, Workspace } from "./api";
import { mounted, show } from "./test-support";
import { clientConfigs, portOf, settingsView as settingsViewVNode, type SettingsActions, type SettingsState } from "./settings";
import { DEFAULT_RETIRE } from "./storage";

const settingsView = mounted(settingsViewVNode);

const workspaces: Workspace[] = [
  {
    workspaceId: "ws_a",
    name: "Alpha",
    domainRevision: "1",
    projects: [{ projectId: "pr_a", name: "alpha", root: "/home/p/alpha" }],
    panelOrder: [],
    layout: null,
    persistentBrowserProfile: false,
  },
];

function pairing(id: string, state: Pairing["state"], extra: Partial<Pairing> = {}): Pairing {
  return {
    pairingId: id,
    clientName: `client ${id}`,
    verificationCode: "AAA-111",
    state,
    grants: [],
    credential: "session",
    createdAt: "2026-12-03T06:00:00Z",
    decidedAt: null,
    lastActiveAt: null,
    families: null,
    requestedFamilies: null,
    signIn: null,
    ...extra,
  };
}

function actions(): SettingsActions {
  return {
    addWorkspace: vi.fn(),
    removeWorkspace: vi.fn(),
    addProject: vi.fn(),
    removeProject: vi.fn(),
    setBrowserProfile: vi.fn(),
    revoke: vi.fn(),
    setFamilies: vi.fn(),
    setConfirm: vi.fn(),
    copy: vi.fn(),
    chooseRetire: vi.fn(),
    freeRoom: vi.fn(),
  };
}

const url = "http://127.0.0.1:7457/mcp";
function state(extra: Partial<SettingsState> = {}): SettingsState {
  return {
    url,
    dataDir: "/home/p/.local/share/lomi",
    workspaces,
    pairings: [],
    policy: [],
    store: null,
    retire: DEFAULT_RETIRE,
    lastResult: null,
    now: new Date("2026-12-03T06:10:00Z"),
    ...extra,
  };
}

describe("settings", () => {
  it("lists paired agents with their grants and last activity, and revokes approved ones", () => {
    const act = actions();
    const view = settingsView(
      state({
        pairings: [
          pairing("pa_1", "approved", { grants: ["ws_a"], lastActiveAt: "2026-12-03T06:09:30Z" }),
          pairing("pa_2", "revoked"),
          pairing("pa_3", "pending"),
        ],
      }),
      act,
    );
    const rows = [...view.querySelectorAll<HTMLElement>(".pairing-row")];
    expect(rows.map((r) => r.dataset.pairingId)).toEqual(["pa_1", "pa_2"]);
    expect(rows[0].querySelector(".pairing-grants")!.textContent).toBe("Alpha");
    expect(rows[0].querySelector(".last-active")!.textContent).toBe("30 s ago");
    expect(rows[1].querySelector(".last-active")!.textContent).toBe("never");
    expect(rows[1].querySelector(".revoke")).toBeNull();
    (rows[0].querySelector(".revoke") as HTMLElement).click();
    expect(act.revoke).toHaveBeenCalledWith("pa_1");
  });

  it("shows each pairing's tool families and toggles one", () => {
    const act = actions();
    const view = settingsView(
      state({
        pairings: [
          pairing("pa_1", "approved", { families: ["browser", "files"] }),
          pairing("pa_2", "approved"),
          pairing("pa_3", "revoked", { families: ["git"] }),
        ],
      }),
      act,
    );
    const on = (id: string) =>
      [...view.querySelectorAll<HTMLElement>(`.pairing-row[data-pairing-id="${id}"] .family-toggle.on`)].map(
        (b) => b.dataset.family,
      );
    expect(on("pa_1")).toEqual(["files", "browser"]);
    expect(on("pa_2")).toHaveLength(8);
    (view.querySelector('.pairing-row[data-pairing-id="pa_1"] [data-family="git"]') as HTMLElement).click();
    expect(act.setFamilies).toHaveBeenCalledWith("pa_1", ["files", "git", "browser"]);
    (view.querySelector('.pairing-row[data-pairing-id="pa_2"] [data-family="chat"]') as HTMLElement).click();
    expect(act.setFamilies).toHaveBeenLastCalledWith("pa_2", [
      "workspace", "terminal", "files", "editor", "git", "browser", "android",
    ]);
    const revoked = view.querySelector<HTMLButtonElement>('.pairing-row[data-pairing-id="pa_3"] [data-family="git"]')!;
    expect(revoked.disabled).toBe(true);
  });

  it("shows the confirmation policy per tool and changes it", () => {
    const act = actions();
    const view = settingsView(
      state({
        policy: [
          { tool: "lomi_file_delete", label: "Delete files", family: "files", familyLabel: "Project files", confirm: true },
          { tool: "lomi_file_write", label: "Overwrite files", family: "files", familyLabel: "Project files", confirm: false },
          { tool: "lomi_android_shell", label: "Run commands on a phone", family: "android", familyLabel: "Android phones", confirm: true },
        ],
      }),
      act,
    );
    document.body.replaceChildren(view);
    const boxes = [...view.querySelectorAll<HTMLInputElement>("input.confirm-tool")];
    expect(boxes.map((b) => [b.dataset.tool, b.checked])).toEqual([
      ["lomi_file_delete", true],
      ["lomi_file_write", false],
      ["lomi_android_shell", true],
    ]);
    // Grouped by family in plain words, the tool's name beside each as the detail.
    const groups = [...view.querySelectorAll<HTMLElement>(".policy-group")].map((g) => [
      g.querySelector("h3")!.textContent,
      [...g.querySelectorAll("li")].map((li) => [
        li.querySelector(".policy-label")!.textContent,
        li.querySelector(".policy-tool")!.textContent,
      ]),
    ]);
    expect(groups).toEqual([
      ["Project files", [["Delete files", "lomi_file_delete"], ["Overwrite files", "lomi_file_write"]]],
      ["Android phones", [["Run commands on a phone", "lomi_android_shell"]]],
    ]);
    boxes[1].click();
    expect(act.setConfirm).toHaveBeenCalledWith("lomi_file_write", true);
  });

  it("offers client configs for Claude Code, VS Code and Cursor with this endpoint", () => {
    const act = actions();
    const view = settingsView(state(), act);
    expect(view.querySelector("#endpoint-url")!.textContent).toBe(url);
    expect(view.textContent).toContain("port 7457");
    expect(view.textContent).toContain("signs in");
    const configs = clientConfigs(url);
    expect(configs.map((c) => c.client)).toEqual(["Claude Code", "VS Code", "Cursor"]);
    expect(JSON.parse(configs[1].text)).toEqual({ servers: { lomi: { type: "http", url } } });
    expect(JSON.parse(configs[2].text)).toEqual({ mcpServers: { lomi: { url } } });
    (view.querySelector('[data-client="Cursor"] .copy') as HTMLElement).click();
    expect(act.copy).toHaveBeenCalledWith(configs[2].text);
    expect(portOf("not a url")).toBe("");
  });

  it("adds a workspace by name (the folder is picked next)", () => {
    const act = actions();
    const view = settingsView(state(), act);
    expect(view.querySelector('[data-workspace-id="ws_a"]')!.textContent).toContain("/home/p/alpha");
    view.querySelector<HTMLInputElement>("#workspace-name")!.value = "  Gamma ";
    view.querySelector<HTMLFormElement>("#workspace-add")!.dispatchEvent(new Event("submit", { cancelable: true }));
    expect(act.addWorkspace).toHaveBeenCalledWith("Gamma");
  });

  it("adds and removes projects and workspaces", () => {
    const act = actions();
    const two: Workspace = {
      ...workspaces[0],
      projects: [
        { projectId: "pr_a", name: "alpha", root: "/home/p/alpha" },
        { projectId: "pr_c", name: "gamma", root: "/home/p/gamma" },
      ],
    };
    const single = settingsView(state(), act);
    expect(single.querySelectorAll(".remove-project")).toHaveLength(0);
    const view = settingsView(state({ workspaces: [two] }), act);
    (view.querySelector('[data-project-id="pr_c"] .remove-project') as HTMLElement).click();
    expect(act.removeProject).toHaveBeenCalledWith("ws_a", "pr_c");
    (view.querySelector(".add-project") as HTMLElement).click();
    expect(act.addProject).toHaveBeenCalledWith("ws_a");
    (view.querySelector(".remove-workspace") as HTMLElement).click();
    expect(act.removeWorkspace).toHaveBeenCalledWith("ws_a");
  });

  it("shows and changes each workspace's browser profile choice", () => {
    const act = actions();
    const kept: Workspace = { ...workspaces[0], workspaceId: "ws_b", persistentBrowserProfile: true };
    const view = settingsView(state({ workspaces: [workspaces[0], kept] }), act);
    document.body.replaceChildren(view);
    const fresh = view.querySelector<HTMLInputElement>('[data-workspace-id="ws_a"] .persistent-profile')!;
    const persistent = view.querySelector<HTMLInputElement>('[data-workspace-id="ws_b"] .persistent-profile')!;
    expect([fresh.checked, persistent.checked]).toEqual([false, true]);
    fresh.click();
    expect(act.setBrowserProfile).toHaveBeenCalledWith("ws_a", true);
    persistent.click();
    expect(act.setBrowserProfile).toHaveBeenCalledWith("ws_b", false);
  });

  it("keeps the Revoke button under the pointer when an agent's activity re-renders the view", () => {
    const act = actions();
    const container = document.createElement("div");
    const render = (lastActiveAt: string) =>
      show(
        container,
        settingsViewVNode(state({ pairings: [pairing("pa_1", "approved", { grants: ["ws_a"], lastActiveAt })] }), act),
      );
    render("2026-12-03T06:09:30Z");
    const revoke = container.querySelector<HTMLElement>('.pairing-row[data-pairing-id="pa_1"] .revoke')!;
    render("2026-12-03T06:09:55Z");
    expect(container.querySelector('.pairing-row[data-pairing-id="pa_1"] .revoke')).toBe(revoke);
    expect(container.querySelector(".last-active")!.textContent).toBe("5 s ago");
    revoke.click();
    expect(act.revoke).toHaveBeenCalledTimes(1);
    expect(act.revoke).toHaveBeenCalledWith("pa_1");
  });

  it("adds the workspace typed in the field on screen after the view was updated in place", () => {
    const act = actions();
    const container = document.createElement("div");
    document.body.append(container);
    show(container, settingsViewVNode(state(), act));
    const field = container.querySelector<HTMLInputElement>("#workspace-name")!;
    field.value = "Gamma";
    show(container, settingsViewVNode(state({ now: new Date("2026-12-03T06:10:15Z") }), act));
    expect(container.querySelector("#workspace-name")).toBe(field);
    container.querySelector<HTMLFormElement>("#workspace-add")!.requestSubmit();
    expect(act.addWorkspace).toHaveBeenCalledWith("Gamma");
    container.remove();
  });
});
