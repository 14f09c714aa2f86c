import { describe, expect, it, vi } from "vitest";
import type { FeedItem, Workspace } from "./api";
import { PanelsView, feedView } from "./live";

const workspace: Workspace = {
  workspaceId: "ws_a",
  name: "Alpha",
  domainRevision: "2",
  projects: [],
  panelOrder: ["pn_1"],
};

describe("live view", () => {
  it("lists operations with state, tool, workspace and who", () => {
    const items: FeedItem[] = [
      {
        operationId: "op_1",
        tool: "lomi_file_delete",
        state: "awaiting_user",
        effectState: "none",
        workspaceId: "ws_a",
        workspaceName: "Alpha",
        pairingId: "pa_1",
        clientName: "Claude Code",
        updatedAt: "2026-12-03T06:00:00Z",
        errorCode: null,
      },
    ];
    const view = feedView(items, new Date("2026-12-03T06:00:05Z"));
    const row = view.querySelector('tr[data-operation-id="op_1"]')!;
    expect(row.className).toContain("state-awaiting_user");
    expect(row.textContent).toContain("awaiting user");
    expect(row.textContent).toContain("lomi_file_delete");
    expect(row.textContent).toContain("Alpha");
    expect(row.textContent).toContain("Claude Code");
    expect(row.textContent).toContain("5 s ago");
  });

  it("shows an Android panel's latest capture, fetched again only when it changes", async () => {
    const capture = vi.fn().mockResolvedValue(new Uint8Array([0x89, 0x50, 0x4e, 0x47]));
    const view = new PanelsView({ attach: vi.fn(), input: vi.fn(), capture });
    const panels = { ws_a: [{ panelId: "pn_1", kind: "android", title: "Pixel", projectId: null, generation: "g1" }] };
    // jsdom has no object URLs: give it one.
    URL.createObjectURL = vi.fn(() => "blob:capture-1");
    URL.revokeObjectURL = vi.fn();
    view.update([workspace], panels, {});
    expect(view.element.querySelector(".no-capture")).not.toBeNull();
    expect(capture).not.toHaveBeenCalled();
    view.update([workspace], panels, { pn_1: 1 });
    await vi.waitFor(() => expect(view.element.querySelector<HTMLImageElement>("img.capture")!.src).toBe("blob:capture-1"));
    expect(view.element.querySelector(".no-capture")).toBeNull();
    view.update([workspace], panels, { pn_1: 1 });
    expect(capture).toHaveBeenCalledTimes(1);
    view.update([workspace], panels, { pn_1: 2 });
    expect(capture).toHaveBeenCalledTimes(2);
  });
});
