import { describe, expect, it, vi } from "vitest";
import type { Pairing, ReconcileReport, StoreStatus } from "./api";
import { mounted, show } from "./test-support";
import {
  DEFAULT_RETIRE,
  StoreNotice,
  freeRoomDialog as freeRoomDialogVNode,
  noticeBanner as noticeBannerVNode,
  previewText,
  resultText,
  retireRequest,
  shownChoice,
  storageSection as storageSectionVNode,
  type StorageActions,
  writeFailureBanner as writeFailureBannerVNode,
  writeFailureText,
} from "./storage";

const storageSection = mounted(storageSectionVNode);
const freeRoomDialog = mounted(freeRoomDialogVNode);
const noticeBanner = mounted(noticeBannerVNode);
const writeFailureBanner = mounted(writeFailureBannerVNode);

function status(extra: Partial<StoreStatus> = {}): StoreStatus {
  return {
    databasePath: "/home/p/.local/share/lomi/lomi.sqlite3",
    schemaVersion: 4,
    receipts: 18,
    receiptCap: 20,
    unsettledReceipts: 0,
    removableReceipts: 0,
    retryEpochs: 2,
    retryEpochCap: 20,
    expiredRetryEpochs: 0,
    oldestReceiptAt: null,
    oldestRetryEpochAt: null,
    receiptsByState: {},
    eventsRetained: 0,
    eventRetention: 10000,
    receiptsRemaining: 2,
    retryEpochsRemaining: 18,
    idleRetryEpochs: 0,
    retiredRetryEpochs: 0,
    historyReceipts: 0,
    warningLevel: "critical",
    pairings: [
      { pairingId: "pa_1", liveRetryEpochs: 1, idleRetryEpochs: 0, endedRetryEpochs: 0, receipts: 15, unsettledReceipts: 0 },
      { pairingId: "pa_2", liveRetryEpochs: 1, idleRetryEpochs: 0, endedRetryEpochs: 0, receipts: 3, unsettledReceipts: 0 },
    ],
    writeFailure: null,
    ...extra,
  };
}

function report(extra: Partial<ReconcileReport> = {}): ReconcileReport {
  return {
    retired: [],
    retryEpochsRetired: 0,
    tombstonesRemoved: 0,
    retryEpochsRemoved: 0,
    receiptsArchived: 0,
    eventsRemoved: 0,
    endedRetryEpochsKept: 0,
    warningLevel: "none",
    receiptsRemaining: 20,
    ...extra,
  };
}

function epoch(pairingId: string, receipts: number, unsettledReceipts = 0) {
  return { retryEpoch: `re_${pairingId}`, pairingId, createdAt: "2026-12-03T06:00:00Z", receipts, unsettledReceipts };
}

const pairings = [
  { pairingId: "pa_1", clientName: "Claude Code" },
  { pairingId: "pa_2", clientName: "Cursor" },
] as Pairing[];
const nameOf = (id: string) => pairings.find((p) => p.pairingId === id)?.clientName ?? id;

function actions(): StorageActions {
  return { chooseRetire: vi.fn(), freeRoom: vi.fn() };
}

describe("the store notice", () => {
  it("appears once per level crossing, not on every update at the same level", () => {
    const notice = new StoreNotice();
    const seen = (["none", "warning", "warning", "critical", "critical", "full", "full"] as const).map((level) =>
      notice.update(level),
    );
    expect(seen).toEqual([false, true, false, true, false, true, false]);
    expect(notice.shown).toBe("full");
  });

  it("stays away once put away until the level rises again, and leaves when room is freed", () => {
    const notice = new StoreNotice();
    notice.update("warning");
    notice.dismiss();
    expect(notice.update("warning")).toBe(false);
    expect(notice.shown).toBeNull();
    expect(notice.update("critical")).toBe(true);
    expect(notice.shown).toBe("critical");
    expect(notice.update("none")).toBe(false);
    expect(notice.shown).toBeNull();
    // Filling up again after room was freed is a new crossing.
    expect(notice.update("critical")).toBe(true);
    expect(notice.shown).toBe("critical");
  });

  it("says how full the store is and what happens to agents, and opens Storage", () => {
    const open = vi.fn();
    const dismiss = vi.fn();
    const banner = noticeBanner("critical", status(), { open, dismiss });
    expect(banner.textContent).toContain("Lomi's store is 90 % full. When it is full, agents' changes are refused.");
    expect(banner.textContent).toContain("Room left: 2 receipts and 18 connections.");
    (banner.querySelector("#open-storage") as HTMLElement).click();
    expect(open).toHaveBeenCalled();
    const full = noticeBanner("full", status({ receipts: 20, receiptsRemaining: 0 }), { open, dismiss });
    expect(full.textContent).toContain("Lomi's store is full: agents' changes are refused until you free room.");
    (full.querySelector("#dismiss-notice") as HTMLElement).click();
    expect(dismiss).toHaveBeenCalled();
  });
});

describe("the notice while Lomi cannot write", () => {
  it("says why, what it means for agents and what the person does, and cannot be put away", () => {
    const banner = writeFailureBanner({
      since: "2026-12-04T10:00:00.000Z",
      message: "committing: the disk holding /data/lomi.db is full; free disk space, then try again",
    });
    expect(banner.id).toBe("write-failure");
    expect(banner.textContent).toContain("Lomi cannot save its records: committing: the disk holding /data/lomi.db is full");
    expect(banner.textContent).toContain("Agents' changes are refused and none of them starts");
    expect(banner.textContent).toContain("Free space on the disk that holds Lomi's data");
    expect(banner.querySelector("button")).toBeNull();
    expect(writeFailureText({ since: "", message: "disk full." })).toContain("records: disk full. Agents'");
  });
});

describe("free room", () => {
  it("previews what ends and what moves, and what the agents must do", () => {
    const text = previewText(
      report({
        retired: [epoch("pa_1", 3000), epoch("pa_1", 1000), epoch("pa_2", 0)],
        retryEpochsRetired: 3,
        receiptsArchived: 4000,
      }),
      nameOf,
    );
    expect(text).toBe(
      "This will end 3 connections of Claude Code, Cursor and move 4,000 settled receipts to the history. " +
        "Those agents must call lomi_connect again before their next change; a retry under an ended connection is refused, never run twice. " +
        "Nothing unsettled is ever moved. The history keeps every receipt (lomi operation list --history).",
    );
  });

  it("says which receipts still running stay, and when there is nothing to free", () => {
    const running = previewText(report({ retired: [epoch("pa_2", 5, 1)], receiptsArchived: 4 }), nameOf);
    expect(running).toContain("end 1 connection of Cursor and move 4 settled receipts");
    expect(running).toContain("That agent must call lomi_connect again");
    expect(running).toContain("Nothing unsettled is moved: 1 receipt still running stays until settled.");
    const nothing = report();
    expect(previewText(nothing, nameOf)).toMatch(/^Nothing to free with this choice right now/);
    const dialog = freeRoomDialog(nothing, previewText(nothing, nameOf), vi.fn(), vi.fn());
    expect(dialog.querySelector("#free-room-confirm")).toBeNull();
    expect(dialog.querySelector("#free-room-cancel")!.textContent).toBe("Close");
  });

  it("asks before it applies, and reports what it did", () => {
    const confirm = vi.fn();
    const cancel = vi.fn();
    const preview = report({ retired: [epoch("pa_1", 15)], receiptsArchived: 15 });
    const dialog = freeRoomDialog(preview, previewText(preview, nameOf), confirm, cancel);
    expect(dialog.querySelector("h2")!.textContent).toBe("Free room in the store?");
    (dialog.querySelector("#free-room-cancel") as HTMLElement).click();
    expect(confirm).not.toHaveBeenCalled();
    (dialog.querySelector("#free-room-confirm") as HTMLElement).click();
    expect(confirm).toHaveBeenCalledTimes(1);
    expect(resultText(report({ retryEpochsRetired: 1, receiptsArchived: 15, receiptsRemaining: 20 }))).toBe(
      "Freed room: ended 1 connection, moved 15 receipts to the history. Room now for 20 receipts.",
    );
  });

  it("falls back to the first agent listed, or to idle connections when no agent has one", () => {
    const chosen = { ...DEFAULT_RETIRE, kind: "pairing" as const, pairingId: "pa_gone" };
    expect(shownChoice(chosen, status())).toEqual({ ...chosen, pairingId: "pa_1" });
    expect(shownChoice({ ...chosen, pairingId: "pa_2" }, status())).toEqual({ ...chosen, pairingId: "pa_2" });
    expect(shownChoice(chosen, status({ pairings: [] })).kind).toBe("idle");
    const view = storageSection(
      { store: status({ pairings: [] }), pairings, retire: chosen, lastResult: null },
      actions(),
    );
    expect(view.querySelector<HTMLInputElement>(".retire-idle")!.checked).toBe(true);
    expect(view.querySelector<HTMLInputElement>(".retire-pairing")!.disabled).toBe(true);
  });

  it("sends the selector the person chose", () => {
    expect(retireRequest(DEFAULT_RETIRE)).toEqual({ idle: {} });
    expect(retireRequest({ ...DEFAULT_RETIRE, kind: "pairing", pairingId: "pa_2" })).toEqual({
      pairing: { pairingId: "pa_2" },
    });
    expect(retireRequest({ ...DEFAULT_RETIRE, kind: "olderThan", seconds: 86400 })).toEqual({
      olderThan: { seconds: 86400 },
    });
  });
});

describe("the storage section", () => {
  it("shows room against the caps, per agent, and the history", () => {
    const view = storageSection(
      { store: status({ historyReceipts: 4000 }), pairings, retire: DEFAULT_RETIRE, lastResult: null },
      actions(),
    );
    expect(view.querySelector("#store-receipts .meter-text")!.textContent).toBe("18 of 20 (90 %) · 2 left");
    expect(view.querySelector("#store-receipts .fill")!.className).toBe("fill level-critical");
    expect(view.querySelector("#store-connections .meter-text")!.textContent).toBe("2 of 20 (10 %) · 18 left");
    expect(view.querySelector(".history")!.textContent).toContain("History: 4,000 receipts moved out of the live store");
    const rows = [...view.querySelectorAll<HTMLTableRowElement>(".store-pairing")];
    expect(rows.map((r) => [r.dataset.pairingId, r.cells[0].textContent, r.querySelector(".pairing-receipts")!.textContent])).toEqual([
      ["pa_1", "Claude Code", "15"],
      ["pa_2", "Cursor", "3"],
    ]);
  });

  it("keeps the person's choice across updates and picks the agent shown in the list", () => {
    const act = actions();
    const container = document.createElement("div");
    const render = (receipts: number) =>
      show(
        container,
        storageSectionVNode({ store: status({ receipts }), pairings, retire: DEFAULT_RETIRE, lastResult: null }, act),
      );
    render(18);
    const idle = container.querySelector<HTMLInputElement>(".retire-idle")!;
    expect(idle.checked).toBe(true);
    const button = container.querySelector<HTMLElement>("#free-room")!;
    render(19);
    expect(container.querySelector("#free-room")).toBe(button);
    container.querySelector<HTMLInputElement>(".retire-pairing")!.dispatchEvent(new Event("change"));
    expect(act.chooseRetire).toHaveBeenCalledWith({ ...DEFAULT_RETIRE, kind: "pairing", pairingId: "pa_1" });
    const choice = container.querySelector<HTMLSelectElement>(".retire-pairing-choice")!;
    choice.value = "pa_2";
    choice.dispatchEvent(new Event("change"));
    expect(act.chooseRetire).toHaveBeenLastCalledWith({ ...DEFAULT_RETIRE, kind: "pairing", pairingId: "pa_2" });
    button.click();
    expect(act.freeRoom).toHaveBeenCalledTimes(1);
  });
});
