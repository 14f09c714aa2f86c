import { describe, expect, it } from "vitest";
import { activityView, countsWords, denialWords } from "./activity";
import { mount } from "./dom";
import type { ActivityView } from "./generated/protocol";
import type { Names } from "./rules";

const names: Names = {
  pairings: [],
  workspaces: [],
  policy: [{ tool: "lomi_file_write", confirm: true, family: "files", familyLabel: "Project files", label: "Write files" }],
  rules: [
    {
      ruleId: "ru_1",
      createdAt: "2026-12-03T06:00:00Z",
      tools: "lomi_file_write",
      subject: { kind: "paths", pattern: "secret/**" },
      verdict: "deny",
      operations: 1,
      lines: 0,
      lastUsedAt: null,
      expired: false,
    },
  ],
};

const view: ActivityView = {
  since: "2026-12-03T06:00:00Z",
  agents: [
    {
      pairingId: "pa_1",
      clientName: "Claude Code",
      lastSeen: "2026-12-03T06:58:00Z",
      paused: true,
      calls: 12,
      operations: 4,
      operationsByState: [
        { name: "failed", count: 2 },
        { name: "succeeded", count: 2 },
      ],
      denials: [
        { name: "person", count: 1 },
        { name: "rule:ru_1", count: 1 },
      ],
      errorsByCode: [{ name: "USER_DENIED", count: 2 }],
      decidedBy: [
        { name: "default", count: 1 },
        { name: "person", count: 2 },
        { name: "rule:ru_1", count: 1 },
      ],
      tools: [{ tool: "lomi_file_write", calls: 6, errors: 2, p50Ms: 4, p95Ms: 31, operations: 4 }],
      hours: [{ hourStart: "2026-12-03T06:00:00Z", calls: 12, operations: 4 }],
    },
  ],
};

describe("the Activity tab", () => {
  it("words counts and who refused", () => {
    expect(countsWords([])).toBe("none");
    expect(denialWords(view.agents[0].denials, names)).toBe(
      "1 by you, 1 by rule: Deny “Write files” on paths secret/**, for any agent, in any workspace",
    );
  });

  it("shows each agent's calls, operations, call times, refusals, errors and pause", () => {
    const shown = mount(activityView(view, null, names, new Date("2026-12-03T07:00:00Z")));
    const card = shown.querySelector('.agent-activity[data-pairing-id="pa_1"]')!;
    expect(card.classList.contains("paused")).toBe(true);
    expect(card.querySelector(".last-seen")!.textContent).toBe("last seen 2 min ago");
    expect(card.querySelector(".operations dd")!.textContent).toBe("4 (2 failed, 2 succeeded)");
    expect(card.querySelector(".errors dd")!.textContent).toBe("2 USER_DENIED");
    const row = card.querySelector('.tool-row[data-tool-name="lomi_file_write"]')!;
    expect(row.querySelector(".p50")!.textContent).toBe("4 ms");
    expect(row.querySelector(".p95")!.textContent).toBe("31 ms");
    expect(row.textContent).toContain("Write files");
    expect(card.querySelectorAll(".hour")).toHaveLength(1);
  });

  it("says when no agent called yet", () => {
    const shown = mount(activityView({ since: view.since, agents: [] }, null, names));
    expect(shown.textContent).toContain("No agent has called Lomi yet");
  });
});
