import { describe, expect, it, vi } from "vitest";
import type { Decision, Pairing, Workspace } from "./api";
import { decisionDialog as decisionVNode, describeOperation, pairingDialog as pairingVNode } from "./approval";
import { mount } from "./dom";
import type { Names } from "./rules";

const pairingDialog = (...a: Parameters<typeof pairingVNode>) => mount(pairingVNode(...a));
const decisionDialog = (...a: Parameters<typeof decisionVNode>) => mount(decisionVNode(...a));

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
  {
    workspaceId: "ws_b",
    name: "Beta",
    domainRevision: "3",
    projects: [{ projectId: "pr_b", name: "beta", root: "/home/p/beta" }],
    panelOrder: [],
    layout: null,
    persistentBrowserProfile: false,
  },
];

const ALL = ["workspace", "terminal", "files", "editor", "git", "browser", "android", "chat"];

const pairing: Pairing = {
  pairingId: "pa_1",
  clientName: "Claude Code",
  verificationCode: "K7Q-2M4",
  state: "pending",
  grants: [],
  credential: "session",
  createdAt: "2026-12-03T06:00:00Z",
  decidedAt: null,
  lastActiveAt: null,
  families: null,
  requestedFamilies: null,
  signIn: null,
};

function click(root: HTMLElement, selector: string): void {
  (root.querySelector(selector) as HTMLElement).click();
}

describe("pairing approval dialog", () => {
  it("shows the client's name and the verification code", () => {
    const dialog = pairingDialog(pairing, workspaces, { approve: vi.fn(), deny: vi.fn() });
    expect(dialog.querySelector(".client-name")!.textContent).toBe("Claude Code");
    expect(dialog.querySelector(".verification-code")!.textContent).toBe("K7Q-2M4");
    expect(dialog.dataset.pairingId).toBe("pa_1");
  });

  it("shows a signed-in client's redirect host and where its name came from", () => {
    const shown = (signIn: Pairing["signIn"]) =>
      pairingDialog({ ...pairing, credential: "oauth", signIn }, workspaces, { approve: vi.fn(), deny: vi.fn() });
    const fromDocument = shown({ redirectHost: "127.0.0.1", metadataUrl: "https://claude.ai/oauth/claude-code-client-metadata" });
    expect(fromDocument.querySelector(".redirect-host")!.textContent).toBe("127.0.0.1");
    expect(fromDocument.querySelector(".metadata-source")!.textContent).toBe(
      "https://claude.ai/oauth/claude-code-client-metadata",
    );
    const registered = shown({ redirectHost: "localhost", metadataUrl: null });
    expect(registered.querySelector(".metadata-source")!.textContent).toContain("its own registration");
    expect(pairingDialog(pairing, workspaces, { approve: vi.fn(), deny: vi.fn() }).querySelector(".redirect-host")).toBeNull();
  });

  it("lists every workspace with its project roots, none preselected", () => {
    const dialog = pairingDialog(pairing, workspaces, { approve: vi.fn(), deny: vi.fn() });
    const boxes = [...dialog.querySelectorAll<HTMLInputElement>("input.grant")];
    expect(boxes.map((b) => b.dataset.workspaceId)).toEqual(["ws_a", "ws_b"]);
    expect(boxes.every((b) => !b.checked)).toBe(true);
    expect(dialog.textContent).toContain("/home/p/beta");
    expect(dialog.querySelector(".grant-summary")!.textContent).toContain("see nothing");
  });

  it("approves with exactly the ticked workspaces", async () => {
    const approve = vi.fn();
    const dialog = pairingDialog(pairing, workspaces, { approve, deny: vi.fn() });
    // Checkboxes fire change events only when they are in the document, as in the window.
    document.body.replaceChildren(dialog);
    const beta = dialog.querySelector<HTMLInputElement>('input[data-workspace-id="ws_b"]')!;
    beta.click();
    // Preact renders the summary again after the event.
    await vi.waitFor(() => expect(dialog.querySelector(".grant-summary")!.textContent).toContain("1 workspace and nothing else"));
    click(dialog, "#approve");
    expect(approve).toHaveBeenCalledWith("pa_1", ["ws_b"], false, ALL);
  });

  it("approves for this session only", () => {
    const approve = vi.fn();
    const dialog = pairingDialog(pairing, workspaces, { approve, deny: vi.fn() });
    dialog.querySelector<HTMLInputElement>('input[data-workspace-id="ws_a"]')!.click();
    click(dialog, "#approve-session");
    expect(approve).toHaveBeenCalledWith("pa_1", ["ws_a"], true, ALL);
  });

  it("approving with nothing ticked grants nothing", () => {
    const approve = vi.fn();
    const dialog = pairingDialog(pairing, workspaces, { approve, deny: vi.fn() });
    click(dialog, "#approve");
    expect(approve).toHaveBeenCalledWith("pa_1", [], false, ALL);
  });

  it("offers every tool family ticked, and approves with only the ones left ticked", () => {
    const approve = vi.fn();
    const dialog = pairingDialog(pairing, workspaces, { approve, deny: vi.fn() });
    document.body.replaceChildren(dialog);
    const families = [...dialog.querySelectorAll<HTMLInputElement>("input.family")];
    expect(families.map((b) => b.dataset.family)).toEqual([
      "workspace", "terminal", "files", "editor", "git", "browser", "android", "chat",
    ]);
    expect(families.every((b) => b.checked)).toBe(true);
    for (const box of families) if (box.dataset.family !== "browser") box.click();
    click(dialog, "#approve");
    expect(approve).toHaveBeenCalledWith("pa_1", [], false, ["browser"]);
  });

  it("ticks only the families the client asked for", () => {
    const approve = vi.fn();
    const dialog = pairingDialog({ ...pairing, requestedFamilies: ["browser", "files"] }, workspaces, {
      approve,
      deny: vi.fn(),
    });
    const ticked = [...dialog.querySelectorAll<HTMLInputElement>("input.family")].filter((b) => b.checked);
    expect(ticked.map((b) => b.dataset.family)).toEqual(["files", "browser"]);
    click(dialog, "#approve");
    expect(approve).toHaveBeenCalledWith("pa_1", [], false, ["files", "browser"]);
  });

  it("denies", () => {
    const deny = vi.fn();
    const approve = vi.fn();
    const dialog = pairingDialog(pairing, workspaces, { approve, deny });
    click(dialog, "#deny");
    expect(deny).toHaveBeenCalledWith("pa_1");
    expect(approve).not.toHaveBeenCalled();
  });

  it("says when there is no workspace to grant yet", () => {
    const dialog = pairingDialog(pairing, [], { approve: vi.fn(), deny: vi.fn() });
    expect(dialog.querySelectorAll("input.grant")).toHaveLength(0);
    expect(dialog.textContent).toContain("add one in Settings");
  });

  it("tells a lasting pairing from a session one", () => {
    const lasting = pairingDialog({ ...pairing, credential: "token" }, workspaces, { approve: vi.fn(), deny: vi.fn() });
    expect(lasting.textContent).toContain("across restarts");
  });
});

// A file deletion, with the effect the broker reads for it.
const deletion: Decision = {
  operationId: "op_1",
  tool: "lomi_file_delete",
  pairingId: "pa_1",
  workspaceId: "ws_a",
  projectId: "pr_a",
  arguments: { workspaceId: "ws_a", path: "notes/old.txt", retryEpoch: "re_1", requestKey: "d1" },
  effect: {
    summary: "Delete notes/old.txt (12 bytes). This cannot be undone.",
    kind: "fileDelete",
    path: "notes/old.txt",
    size: 12,
    firstLines: "old notes\n",
    truncated: false,
    binary: false,
    note: null,
  },
  createdAt: "2026-12-03T06:00:00Z",
  decidedBy: "default",
  suggestedRule: {
    agent: "pa_1",
    workspace: "ws_a",
    tools: "lomi_file_delete",
    subject: { kind: "paths", pattern: "notes/**" },
    verdict: "allow",
  },
};

const names: Names = {
  pairings: [{ ...pairing, state: "approved" }],
  workspaces,
  policy: [{ tool: "lomi_file_delete", confirm: true, family: "files", familyLabel: "Project files", label: "Delete files" }],
};

/** Sets a text field as the person types into it. */
function type(root: HTMLElement, selector: string, text: string): void {
  const field = root.querySelector<HTMLInputElement>(selector)!;
  field.value = text;
  field.dispatchEvent(new Event("input", { bubbles: true }));
}

function tick(root: HTMLElement, selector: string): void {
  const box = root.querySelector<HTMLInputElement>(selector)!;
  box.checked = true;
  box.dispatchEvent(new Event("change", { bubbles: true }));
}

/** Lets Preact apply a state change (its renders after an event are queued). */
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("operation decision dialog", () => {
  it("says exactly what will happen, where", () => {
    expect(describeOperation(deletion, workspaces)).toBe(
      "In /home/p/alpha: Delete notes/old.txt (12 bytes). This cannot be undone.",
    );
  });

  it("shows the client and the exact arguments, and decides", () => {
    const decide = vi.fn();
    const dialog = decisionDialog(deletion, "Claude Code", workspaces, { decide, remember: vi.fn() });
    expect(dialog.querySelector(".client-name")!.textContent).toBe("Claude Code");
    expect(JSON.parse(dialog.querySelector(".arguments")!.textContent!)).toEqual(deletion.arguments);
    click(dialog, "#decision-approve");
    expect(decide).toHaveBeenCalledWith("op_1", true);
    click(dialog, "#decision-deny");
    expect(decide).toHaveBeenLastCalledWith("op_1", false);
  });

  it("says why it waits: the tool's default or the person's rule", () => {
    const byDefault = decisionDialog(deletion, "Claude Code", workspaces, { decide: vi.fn(), remember: vi.fn() }, names);
    expect(byDefault.querySelector(".why-waits")!.textContent).toContain("“Ask me before” is on");
    const rule = { ...deletion.suggestedRule, verdict: "ask" as const, ruleId: "ru_1", createdAt: "2026-12-03T05:00:00Z" };
    const rules = [{ ...rule, operations: 1, lines: 0, lastUsedAt: null, expired: false }];
    const byRule = decisionDialog({ ...deletion, decidedBy: "rule:ru_1" }, "Claude Code", workspaces, { decide: vi.fn(), remember: vi.fn() }, { ...names, rules });
    expect(byRule.querySelector(".why-waits")!.textContent).toBe(
      "It waits because of rule: Ask before “Delete files” on paths notes/**, for Claude Code, in Alpha.",
    );
  });

  it("shows the suggested rule in words and keeps it as the person edited it", async () => {
    const remember = vi.fn(() => Promise.resolve());
    const dialog = decisionDialog(deletion, "Claude Code", workspaces, { decide: vi.fn(), remember }, names);
    expect(dialog.querySelector("#remember-rule")!.textContent).toBe("“Delete files” on paths notes/**, for Claude Code, in Alpha");
    type(dialog, "#remember-pattern", "notes/old/**");
    tick(dialog, "#remember-any-workspace");
    await settled();
    expect(dialog.querySelector("#remember-rule")!.textContent).toBe(
      "“Delete files” on paths notes/old/**, for Claude Code, in any workspace",
    );
    click(dialog, "#decision-approve-always");
    expect(remember).toHaveBeenCalledWith("op_1", true, {
      agent: "pa_1",
      tools: "lomi_file_delete",
      subject: { kind: "paths", pattern: "notes/old/**" },
      verdict: "allow",
    });
    click(dialog, "#decision-deny-always");
    expect(remember).toHaveBeenLastCalledWith("op_1", false, expect.objectContaining({ verdict: "deny" }));
  });

  it("shows the broker's refusal in the dialog", async () => {
    const remember = vi.fn(() => Promise.reject(new Error("a path pattern is relative to the project's root, e.g. docs/**")));
    const dialog = decisionDialog(deletion, "Claude Code", workspaces, { decide: vi.fn(), remember }, names);
    type(dialog, "#remember-pattern", "/etc/**");
    await settled();
    click(dialog, "#decision-approve-always");
    await settled();
    await settled();
    expect(dialog.querySelector("#remember-error")!.textContent).toBe(
      "Not saved: a path pattern is relative to the project's root, e.g. docs/**. The operation still waits for you.",
    );
    type(dialog, "#remember-pattern", "notes/**");
    await settled();
    expect(dialog.querySelector("#remember-error")).toBeNull();
    expect(dialog.querySelector<HTMLButtonElement>("#decision-approve-always")!.disabled).toBe(false);
  });
});

describe("an agent's Chat send", () => {
  it("shows the message, the provider and the model before anything is sent", () => {
    const send: Decision = {
      operationId: "op_9",
      tool: "lomi_chat_send",
      pairingId: "pa_1",
      workspaceId: "ws_a",
      projectId: null,
      arguments: { conversationId: "cv_1", expectedConversationRevision: "1", expectedDraftRevision: "2" },
      effect: {
        summary: "Send a message to openai (gpt-x). It cannot be taken back.",
        kind: "chatSend",
        message: "What should I pack?",
        conversation: "Trip",
        provider: "openai",
        model: "gpt-x",
        note: null,
      },
      createdAt: "2026-12-04T06:00:00Z",
      decidedBy: "default",
      suggestedRule: { agent: "pa_1", workspace: "ws_a", tools: "lomi_chat_send", verdict: "allow" },
    };
    expect(describeOperation(send, workspaces)).toBe("In workspace Alpha: Send a message to openai (gpt-x). It cannot be taken back.");
    const dialog = decisionDialog(send, "Claude Code", workspaces, { decide: vi.fn(), remember: vi.fn() });
    expect(dialog.querySelector(".effect[data-kind=chatSend] .effect-text")?.textContent).toBe("What should I pack?");
    expect(dialog.querySelector(".effect-facts")?.textContent).toBe("ProvideropenaiModelgpt-xConversationTrip");
  });
});
