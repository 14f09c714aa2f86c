// Settings: workspaces and projects, pairings with their grants and last activity (revoke),
// the confirmation policy per tool, the MCP endpoint with client configs to copy, and Storage
// (storage.ts).

import { FAMILIES, type Family, type Pairing, type PolicyEntry, type SettingsSections, type StoreStatus, type Workspace } from "./api";
import { ago, h, type VNode } from "./dom";
import { preferencesSection } from "./preferences";
import type { RulesView } from "./generated/protocol";
import { type RulesActions, rulesSection } from "./rules";
import { type RetireChoice, storageSection } from "./storage";

export interface SettingsState {
  url: string;
  dataDir: string;
  workspaces: Workspace[];
  pairings: Pairing[];
  policy: PolicyEntry[];
  store: StoreStatus | null;
  retire: RetireChoice;
  lastResult: string | null;
  /** The preference sections with their revisions (absent before the first overview). */
  settings?: SettingsSections | null;
  /** Settings → Rules (`ruleList`), null until read. */
  rules?: RulesView | null;
  now?: Date;
}

export interface SettingsActions {
  addWorkspace(name: string): void;
  removeWorkspace(workspaceId: string): void;
  addProject(workspaceId: string): void;
  removeProject(workspaceId: string, projectId: string): void;
  setBrowserProfile(workspaceId: string, persistent: boolean): void;
  revoke(pairingId: string): void;
  /** `families` null: every family of tools. */
  setFamilies?(pairingId: string, families: string[] | null): void;
  setConfirm(tool: string, confirm: boolean): void;
  copy(text: string): void;
  chooseRetire(choice: RetireChoice): void;
  freeRoom(): void;
  /** Sends a settings control request (`settingsSet`, `providerKey`). */
  sendSettings?(what: string, request: Record<string, unknown>): void;
  say?(message: string): void;
  rules?: RulesActions;
}

/** The client configurations a person pastes into their agent, for this endpoint. */
export function clientConfigs(url: string): { client: string; where: string; text: string }[] {
  return [
    {
      client: "Claude Code",
      where: "run in a terminal",
      text: `claude mcp add --transport http lomi ${url}`,
    },
    {
      client: "VS Code",
      where: ".vscode/mcp.json",
      text: JSON.stringify({ servers: { lomi: { type: "http", url } } }, null, 2),
    },
    {
      client: "Cursor",
      where: "~/.cursor/mcp.json",
      text: JSON.stringify({ mcpServers: { lomi: { url } } }, null, 2),
    },
  ];
}

/** The port of an endpoint URL such as http://127.0.0.1:7457/mcp. */
export function portOf(url: string): string {
  try {
    return new URL(url).port;
  } catch {
    return "";
  }
}

/** The families a pairing sees, each a toggle while it is approved. */
function familiesCell(pairing: Pairing, actions: SettingsActions): VNode {
  const all = pairing.families == null;
  const sees = (name: Family) => all || (pairing.families ?? []).includes(name);
  const editable = pairing.state === "approved" && actions.setFamilies !== undefined;
  return h(
    "div",
    { class: "family-toggles" },
    ...FAMILIES.map((family) => {
      const on = sees(family.name);
      const toggle = () => {
        const next = FAMILIES.map((f) => f.name).filter((name) => (name === family.name ? !on : sees(name)));
        actions.setFamilies?.(pairing.pairingId, next.length === FAMILIES.length ? null : next);
      };
      return h(
        "button",
        {
          class: `family-toggle${on ? " on" : ""}`,
          "data-family": family.name,
          title: `${family.label}: ${on ? "shown" : "hidden"}${editable ? " (click to change)" : ""}`,
          "aria-pressed": on ? "true" : "false",
          disabled: !editable,
          onclick: toggle,
        },
        family.name,
      );
    }),
  );
}

function workspaceNames(pairing: Pairing, workspaces: Workspace[]): string {
  if (pairing.grants.length === 0) return "none";
  return pairing.grants
    .map((id) => workspaces.find((w) => w.workspaceId === id)?.name ?? id)
    .join(", ");
}

export function settingsView(state: SettingsState, actions: SettingsActions): VNode {
  const now = state.now ?? new Date();
  const name = h("input", { type: "text", id: "workspace-name", placeholder: "Workspace name" });

  const workspaces = h(
    "section",
    { id: "settings-workspaces" },
    h("h2", {}, "Workspaces"),
    state.workspaces.length === 0
      ? h("p", { class: "empty" }, "No workspace yet.")
      : h(
          "ul",
          { class: "workspaces" },
          ...state.workspaces.map((w) =>
            h(
              "li",
              { class: "workspace", "data-workspace-id": w.workspaceId },
              h("strong", {}, w.name),
              h(
                "button",
                { class: "remove-workspace danger small", onclick: () => actions.removeWorkspace(w.workspaceId) },
                "Remove",
              ),
              h(
                "label",
                { class: "browser-profile" },
                h("input", {
                  type: "checkbox",
                  class: "persistent-profile",
                  checked: w.persistentBrowserProfile,
                  onchange: (event: Event) =>
                    actions.setBrowserProfile(w.workspaceId, (event.target as HTMLInputElement).checked),
                }),
                " Keep browser sign-ins: new browser panels share one saved profile",
              ),
              h(
                "ul",
                {},
                ...w.projects.map((p) =>
                  h(
                    "li",
                    { class: "project", "data-project-id": p.projectId },
                    `${p.name} — ${p.root}`,
                    w.projects.length > 1
                      ? h(
                          "button",
                          {
                            class: "remove-project small",
                            onclick: () => actions.removeProject(w.workspaceId, p.projectId),
                          },
                          "Remove",
                        )
                      : null,
                  ),
                ),
                h(
                  "li",
                  {},
                  h(
                    "button",
                    { class: "add-project small", onclick: () => actions.addProject(w.workspaceId) },
                    "Add a project folder…",
                  ),
                ),
              ),
            ),
          ),
        ),
    h(
      "form",
      {
        class: "inline",
        id: "workspace-add",
        onsubmit: (event: Event) => {
          event.preventDefault();
          // Read from the form on screen: the field keeps what the person typed (its value is
          // theirs, not the render's).
          const field = (event.currentTarget as HTMLFormElement).querySelector<HTMLInputElement>("#workspace-name");
          const value = (field?.value ?? "").trim();
          if (value) actions.addWorkspace(value);
        },
      },
      name,
      h("button", { type: "submit" }, "Add workspace… (pick its project folder)"),
    ),
  );

  const visible = state.pairings.filter((p) => p.state !== "pending");
  const pairings = h(
    "section",
    { id: "settings-pairings" },
    h("h2", {}, "Paired agents"),
    visible.length === 0
      ? h("p", { class: "empty" }, "No agent paired yet.")
      : h(
          "table",
          { class: "pairings" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Client", "State", "Workspaces", "Tools", "Kind", "Last activity", ""].map((t) => h("th", {}, t)),
            ),
          ),
          h(
            "tbody",
            {},
            ...visible.map((p) =>
              h(
                "tr",
                { class: `pairing-row state-${p.state}`, "data-pairing-id": p.pairingId },
                h("td", { class: "client-name" }, p.clientName),
                h("td", { class: "pairing-state" }, p.state),
                h("td", { class: "pairing-grants" }, workspaceNames(p, state.workspaces)),
                h("td", { class: "pairing-families" }, familiesCell(p, actions)),
                h("td", {}, p.credential === "oauth" ? "lasting (signed in)" : p.credential === "token" ? "lasting" : "this session"),
                h("td", { class: "last-active" }, ago(p.lastActiveAt, now)),
                h(
                  "td",
                  {},
                  p.state === "approved"
                    ? h("button", { class: "revoke danger", onclick: () => actions.revoke(p.pairingId) }, "Revoke")
                    : null,
                ),
              ),
            ),
          ),
        ),
  );

  const policy = h(
    "section",
    { id: "settings-policy" },
    h("h2", {}, "Ask me before"),
    h("p", { class: "hint" }, "Ticked actions wait for your decision before they run."),
    ...policyGroups(state.policy).map((group) =>
      h(
        "div",
        { class: "policy-group", "data-family": group.family ?? "" },
        h("h3", {}, group.label),
        h(
          "ul",
          { class: "policy" },
          ...group.entries.map((entry) =>
            h(
              "li",
              {},
              h(
                "label",
                {},
                h("input", {
                  type: "checkbox",
                  class: "confirm-tool",
                  "data-tool": entry.tool,
                  checked: entry.confirm,
                  onchange: (event: Event) =>
                    actions.setConfirm(entry.tool, (event.target as HTMLInputElement).checked),
                }),
                h("span", { class: "policy-label" }, entry.label ?? entry.tool),
                h("code", { class: "policy-tool" }, entry.tool),
              ),
            ),
          ),
        ),
      ),
    ),
  );

  const endpoint = h(
    "section",
    { id: "settings-endpoint" },
    h("h2", {}, "Connect an agent"),
    h(
      "p",
      {},
      "MCP endpoint ",
      h("code", { id: "endpoint-url" }, state.url),
      ` (port ${portOf(state.url)}; start Lomi with --http 127.0.0.1:PORT or LOMI_HTTP to change it). `,
      "A client added by this URL signs in: your browser opens a Lomi page with its code, and it waits until you approve it here.",
    ),
    ...clientConfigs(state.url).map((config) =>
      h(
        "div",
        { class: "client-config", "data-client": config.client },
        h("h3", {}, config.client, h("span", { class: "where" }, ` — ${config.where}`)),
        h("pre", {}, config.text),
        h("button", { class: "copy", onclick: () => actions.copy(config.text) }, "Copy"),
      ),
    ),
  );

  const storage = storageSection(
    { store: state.store, pairings: state.pairings, retire: state.retire, lastResult: state.lastResult },
    actions,
  );

  const preferences = preferencesSection(state.settings ?? null, {
    send: (what, request) => actions.sendSettings?.(what, request),
    say: (message) => actions.say?.(message),
  });

  const rules = actions.rules
    ? rulesSection(
        state.rules ?? null,
        { pairings: state.pairings, workspaces: state.workspaces, policy: state.policy },
        actions.rules,
        now,
      )
    : null;

  return h("div", { class: "settings" }, workspaces, pairings, rules, policy, preferences, endpoint, storage);
}

/** The policy's tools grouped by family in the order the broker lists them (family by family). */
export function policyGroups(
  policy: PolicyEntry[],
): { family: string | null; label: string; entries: PolicyEntry[] }[] {
  const groups: { family: string | null; label: string; entries: PolicyEntry[] }[] = [];
  for (const entry of policy) {
    const family = entry.family ?? null;
    const last = groups[groups.length - 1];
    if (last && last.family === family) {
      last.entries.push(entry);
    } else {
      groups.push({ family, label: entry.familyLabel ?? family ?? "Other", entries: [entry] });
    }
  }
  return groups;
}
