import { render } from "preact";
import { describe, expect, it, vi } from "vitest";
import type { FeedItem } from "./api";
import type { OperationState } from "./generated/protocol";
import { Operations, type Receipt } from "./operations";

const item = (id: string, state: OperationState, workspace: string, pairing: string): FeedItem => ({
  operationId: id,
  tool: "lomi_terminal_create",
  state,
  effectState: "none",
  workspaceId: workspace,
  workspaceName: workspace === "ws_a" ? "Alpha" : "Beta",
  pairingId: pairing,
  clientName: pairing === "pa_1" ? "Claude Code" : "Cursor",
  updatedAt: "2026-12-03T06:00:00Z",
  errorCode: state === "outcome_unknown" ? "OUTCOME_UNKNOWN" : null,
});

const items = [
  item("op_1", "awaiting_user", "ws_a", "pa_1"),
  item("op_2", "succeeded", "ws_b", "pa_2"),
  item("op_3", "outcome_unknown", "ws_a", "pa_2"),
];

function mount(show = vi.fn()): HTMLElement {
  const root = document.body.appendChild(document.createElement("div"));
  render(<Operations items={items} show={show} now={new Date("2026-12-03T06:00:05Z")} />, root);
  return root;
}

const rows = (root: HTMLElement) => [...root.querySelectorAll<HTMLElement>("tr.op")].map((r) => r.dataset.operationId);

async function choose(root: HTMLElement, selector: string, value: string): Promise<void> {
  const select = root.querySelector<HTMLSelectElement>(selector)!;
  select.value = value;
  select.dispatchEvent(new Event("change"));
  await new Promise((resolve) => setTimeout(resolve));
}

describe("the operation view", () => {
  it("lists operations with state, tool, workspace, who and when", () => {
    const row = mount().querySelector('tr[data-operation-id="op_1"]')!;
    expect(row.className).toContain("state-awaiting_user");
    expect(row.textContent).toContain("awaiting user");
    expect(row.textContent).toContain("lomi_terminal_create");
    expect(row.textContent).toContain("Alpha");
    expect(row.textContent).toContain("Claude Code");
    expect(row.textContent).toContain("5 s ago");
  });

  it("filters by workspace, agent and state together", async () => {
    const root = mount();
    expect(rows(root)).toEqual(["op_1", "op_2", "op_3"]);
    await choose(root, ".filter-workspace", "ws_a");
    expect(rows(root)).toEqual(["op_1", "op_3"]);
    await choose(root, ".filter-agent", "pa_2");
    expect(rows(root)).toEqual(["op_3"]);
    await choose(root, ".filter-state", "succeeded");
    expect(rows(root)).toEqual([]);
    expect(root.textContent).toContain("No operation matches.");
  });

  it("opens a row's receipt, with the recovery steps when its outcome is unknown", async () => {
    const receipt: Receipt = {
      operationId: "op_3",
      tool: "lomi_terminal_create",
      state: "outcome_unknown",
      effectState: "unknown",
      workspaceId: "ws_a",
      projectId: null,
      requestKey: "k-3",
      retryEpoch: "re_1",
      createdAt: "2026-12-03T06:00:00Z",
      updatedAt: "2026-12-03T06:00:01Z",
      settledAt: "2026-12-03T06:00:01Z",
      result: null,
      error: { code: "OUTCOME_UNKNOWN", message: "Lomi stopped while it ran" },
      recovery: "Read the terminal's screen.",
      timeline: [
        { state: "running", effectState: "none", at: "2026-12-03T06:00:00Z" },
        { state: "outcome_unknown", effectState: "unknown", at: "2026-12-03T06:00:01Z" },
      ],
    };
    const show = vi.fn().mockResolvedValue(receipt);
    const root = mount(show);
    root.querySelector<HTMLElement>('tr[data-operation-id="op_3"]')!.click();
    await vi.waitFor(() => expect(root.querySelector("#receipt")).not.toBeNull());
    expect(show).toHaveBeenCalledWith("op_3");
    expect(root.querySelector("#receipt .effect-state")!.textContent).toBe("unknown");
    expect(root.querySelector("#receipt")!.textContent).toContain("Lomi stopped while it ran");
    expect(root.querySelector("#recovery")!.textContent).toContain("Read the terminal's screen.");
    const states = [...root.querySelectorAll<HTMLElement>("#receipt .timeline li")].map((li) => li.dataset.state);
    expect(states).toEqual(["running", "outcome_unknown"]);
  });

  it("opens a receipt that moved to the history, with its trail and error", async () => {
    const receipt: Receipt = {
      historySeq: 7,
      operationId: "op_3",
      pairingId: "pa_1",
      retryEpoch: "re_1",
      projectId: null,
      tool: "lomi_terminal_create",
      requestKey: "k-3",
      workspaceId: "ws_a",
      fingerprint: "f",
      state: "failed",
      effectState: "none",
      createdAt: "2026-12-03T06:00:00Z",
      updatedAt: "2026-12-03T06:00:01Z",
      settledAt: "2026-12-03T06:00:01Z",
      result: null,
      errorCode: "NOT_FOUND",
      errorMessage: "no such panel",
      trail: [{ state: "failed", effectState: "none", at: "2026-12-03T06:00:01Z" }],
      archivedAt: "2026-12-04T06:00:00Z",
      archivedBecause: "expired",
    };
    const root = mount(vi.fn().mockResolvedValue(receipt));
    root.querySelector<HTMLElement>('tr[data-operation-id="op_3"]')!.click();
    await vi.waitFor(() => expect(root.querySelector("#receipt")).not.toBeNull());
    expect(root.querySelector("#receipt .receipt-error")!.textContent).toBe("NOT_FOUND no such panel");
    const states = [...root.querySelectorAll<HTMLElement>("#receipt .timeline li")].map((li) => li.dataset.state);
    expect(states).toEqual(["failed"]);
  });
});
