import { describe, expect, it, vi } from "vitest";
import type { Pairing, Workspace } from "./api";
import { mount } from "./dom";
import type { RuleUse, RulesView } from "./generated/protocol";
import {
  type Names,
  decidedByWords,
  formDraft,
  pauseControl,
  pauseState,
  rememberDraft,
  ruleWords,
  rulesSection,
  useWords,
} from "./rules";

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

const agent: Pairing = {
  pairingId: "pa_1",
  clientName: "Claude Code",
  verificationCode: "K7Q-2M4",
  state: "approved",
  grants: ["ws_a"],
  credential: "token",
  createdAt: "2026-12-03T06:00:00Z",
  decidedAt: null,
  lastActiveAt: null,
  families: null,
  requestedFamilies: null,
  signIn: null,
};

const names: Names = {
  pairings: [agent],
  workspaces,
  policy: [{ tool: "lomi_file_write", confirm: true, family: "files", familyLabel: "Project files", label: "Write files" }],
};

const docs: RuleUse = {
  ruleId: "ru_1",
  createdAt: "2026-12-03T06:00:00Z",
  agent: "pa_1",
  workspace: "ws_a",
  tools: "lomi_file_write",
  subject: { kind: "paths", pattern: "docs/**" },
  verdict: "allow",
  operations: 3,
  lines: 0,
  lastUsedAt: "2026-12-03T06:59:00Z",
  expired: false,
};

const view: RulesView = { settingsRevision: "4", rules: [docs], paused: false, pausedAgents: [] };

/** Lets Preact apply a state change and a promise settle. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("a rule in words", () => {
  it("names the agent, the workspace, the tool's label and the pattern", () => {
    expect(ruleWords(docs, names)).toBe("Allow “Write files” on paths docs/**, for Claude Code, in Alpha");
    expect(ruleWords({ tools: "*", verdict: "deny", subject: { kind: "command", pattern: "rm -rf *" } }, names)).toBe(
      "Deny every tool on command lines rm -rf *, for any agent, in any workspace",
    );
    expect(ruleWords({ tools: "browser", verdict: "ask" }, names)).toBe(
      "Ask before Browsers (every tool), for any agent, in any workspace",
    );
  });

  it("says what decided, naming a kept rule and a removed one", () => {
    const withRules = { ...names, rules: [docs] };
    expect(decidedByWords("person", withRules)).toBe("you");
    expect(decidedByWords("rule:ru_1", withRules)).toBe("rule: Allow “Write files” on paths docs/**, for Claude Code, in Alpha");
    expect(decidedByWords("rule:ru_9", withRules)).toBe("rule ru_9 (removed)");
  });

  it("counts what a rule decided", () => {
    expect(useWords(docs)).toBe("3 operations");
    expect(useWords({ ...docs, operations: 1, lines: 2 })).toBe("1 operation, 2 terminal lines");
  });
});

describe("approve and always allow", () => {
  const suggested = { agent: "pa_1", workspace: "ws_a", tools: "lomi_file_write", subject: { kind: "paths" as const, pattern: "docs/**" }, verdict: "allow" as const };

  it("keeps the suggestion with the verdict of the decision", () => {
    expect(rememberDraft(suggested, true, { pattern: "docs/**", anyAgent: false, anyWorkspace: false })).toEqual(suggested);
    expect(rememberDraft(suggested, false, { pattern: "docs/**", anyAgent: false, anyWorkspace: false }).verdict).toBe("deny");
  });

  it("takes the person's pattern and widens to any agent or workspace", () => {
    expect(rememberDraft(suggested, true, { pattern: "docs/guide/**", anyAgent: true, anyWorkspace: true })).toEqual({
      tools: "lomi_file_write",
      subject: { kind: "paths", pattern: "docs/guide/**" },
      verdict: "allow",
    });
  });

  it("leaves a suggestion without a subject without one", () => {
    const plain = { agent: "pa_1", workspace: "ws_a", tools: "lomi_chat_send", verdict: "allow" as const };
    expect(rememberDraft(plain, true, { pattern: "x", anyAgent: false, anyWorkspace: false })).toEqual(plain);
  });
});

describe("the add form", () => {
  it("makes a draft with only the fields the person chose", () => {
    expect(formDraft({ verdict: "deny", tools: "terminal", kind: "command", pattern: " git push --force* ", agent: "", workspace: "", expires: "" })).toEqual({
      tools: "terminal",
      verdict: "deny",
      subject: { kind: "command", pattern: "git push --force*" },
    });
    const draft = formDraft({ verdict: "allow", tools: "*", kind: "", pattern: "ignored", agent: "pa_1", workspace: "ws_a", expires: "2026-12-31T18:00" });
    expect(draft.subject).toBeUndefined();
    expect(draft.agent).toBe("pa_1");
    expect(new Date(draft.expiresAt!).getTime()).toBe(new Date("2026-12-31T18:00").getTime());
  });
});

describe("Settings → Rules", () => {
  it("lists each rule in words with its use, and removes compared with the revision", () => {
    const remove = vi.fn(() => Promise.resolve());
    const section = mount(rulesSection(view, names, { add: vi.fn(), remove }, new Date("2026-12-03T07:00:00Z")));
    const row = section.querySelector('.rule-row[data-rule-id="ru_1"]')!;
    expect(row.querySelector(".rule-words")!.textContent).toBe("Allow “Write files” on paths docs/**, for Claude Code, in Alpha");
    expect(row.querySelector(".rule-use")!.textContent).toBe("3 operations");
    expect(row.querySelector(".rule-last")!.textContent).toBe("1 min ago");
    expect(row.querySelector(".rule-expiry")!.textContent).toBe("never");
    (row.querySelector(".rule-remove") as HTMLElement).click();
    expect(remove).toHaveBeenCalledWith("ru_1", "4");
  });

  it("adds what the form says and shows the broker's refusal", async () => {
    const add = vi.fn(() => Promise.reject(new Error("a path pattern has no empty, . or .. parts, e.g. docs/** or src/*.rs")));
    const section = mount(rulesSection(view, names, { add, remove: vi.fn() }, new Date()));
    const form = section.querySelector<HTMLFormElement>("#rule-add")!;
    (form.elements.namedItem("verdict") as HTMLSelectElement).value = "deny";
    (form.elements.namedItem("tools") as HTMLSelectElement).value = "files";
    (form.elements.namedItem("kind") as HTMLSelectElement).value = "paths";
    (form.elements.namedItem("pattern") as HTMLInputElement).value = "../secret";
    form.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true }));
    expect(add).toHaveBeenCalledWith({ verdict: "deny", tools: "files", subject: { kind: "paths", pattern: "../secret" } }, "4");
    await settled();
    await settled();
    expect(section.querySelector("#rule-error")!.textContent).toContain("e.g. docs/**");
  });

  it("says when nothing is kept yet, and that agents are paused", () => {
    const section = mount(rulesSection({ ...view, rules: [], paused: true }, names, { add: vi.fn(), remove: vi.fn() }, new Date()));
    expect(section.textContent).toContain("No rules yet");
    expect(section.querySelector(".paused-note")!.textContent).toContain("Agents are paused");
  });
});

describe("the pause control", () => {
  it("shows the paused state and asks for the other one", () => {
    expect(pauseState({ paused: false, pausedAgents: [] })).toEqual({ paused: false, button: "Pause agents", badge: null });
    expect(pauseState({ paused: true, pausedAgents: [] })).toEqual({ paused: true, button: "Resume agents", badge: "Agents paused" });
    expect(pauseState({ paused: false, pausedAgents: ["pa_1", "pa_2"] }).badge).toBe("2 agents paused");
    const toggle = vi.fn();
    const control = mount(pauseControl({ paused: true, pausedAgents: [] }, toggle));
    (control.querySelector("#pause-agents") as HTMLElement).click();
    expect(toggle).toHaveBeenCalledWith(false);
    expect(control.querySelector("#paused-badge")!.textContent).toBe("Agents paused");
  });
});
