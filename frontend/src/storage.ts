// Settings → Storage: the store's room (receipts and agent connections against their caps, per
// agent, the history), the one maintenance action "Free room" with its preview, and the notice
// the window shows once each time the store's warning level rises (75 %, 90 %, full).

import type { Pairing, ReconcileReport, Retire, StoreStatus, WarningLevel, WriteFailure } from "./api";
import { h, type VNode } from "./dom";

/** What "Free room" retires: the person's choice in the Storage view. */
export interface RetireChoice {
  kind: "idle" | "pairing" | "olderThan";
  /** The agent chosen for `pairing` (kept while another kind is picked). */
  pairingId: string;
  /** The age chosen for `olderThan`. */
  seconds: number;
}

export const DEFAULT_RETIRE: RetireChoice = { kind: "idle", pairingId: "", seconds: 3600 };

/** The ages a person may pick for "connections older than". */
export const AGES: { seconds: number; label: string }[] = [
  { seconds: 3600, label: "1 hour" },
  { seconds: 6 * 3600, label: "6 hours" },
  { seconds: 24 * 3600, label: "1 day" },
];

/** The `retire` selector of a `storeReconcile` request for the person's choice. */
export function retireRequest(choice: RetireChoice): Retire {
  switch (choice.kind) {
    case "idle":
      return { idle: {} };
    case "pairing":
      return { pairing: { pairingId: choice.pairingId } };
    case "olderThan":
      return { olderThan: { seconds: choice.seconds } };
  }
}

/** The agents that have connections "Free room" could end. */
function agentsWithConnections(store: StoreStatus) {
  return store.pairings.filter((p) => p.liveRetryEpochs > 0);
}

/**
 * The choice the Storage view shows and "Free room" sends: the person's, except that an agent
 * with no connection left is replaced by the first one listed, or by idle connections when
 * no agent has any.
 */
export function shownChoice(choice: RetireChoice, store: StoreStatus): RetireChoice {
  if (choice.kind !== "pairing") return choice;
  const agents = agentsWithConnections(store);
  if (agents.some((p) => p.pairingId === choice.pairingId)) return choice;
  return agents.length > 0 ? { ...choice, pairingId: agents[0].pairingId } : { ...choice, kind: "idle" };
}

const RANK: Record<WarningLevel, number> = { none: 0, warning: 1, critical: 2, full: 3 };

/**
 * The window's "store almost full" notice: shown when the store's warning level rises (to 75 %,
 * 90 % or full), not again on later updates at the same level; hidden when the person puts it
 * away or room is freed. The app raises the native notification by the same rule (watch.rs).
 */
export class StoreNotice {
  private last: WarningLevel = "none";
  /** The level the notice shows now, or null. */
  shown: WarningLevel | null = null;

  /** The level of a new overview; answers true when the notice has just (re)appeared. */
  update(level: WarningLevel): boolean {
    const rose = RANK[level] > RANK[this.last];
    this.last = level;
    if (rose) {
      this.shown = level;
    } else if (this.shown !== null && RANK[level] < RANK[this.shown]) {
      this.shown = null;
    }
    return rose;
  }

  dismiss(): void {
    this.shown = null;
  }
}

function count(n: number, one: string, many: string = `${one}s`): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}

function percent(used: number, cap: number): number {
  return cap > 0 ? Math.floor((100 * used) / cap) : 0;
}

/** The notice's words for a level: how full, what it means for agents, the room left. */
export function noticeText(level: WarningLevel, status: StoreStatus): string {
  const room = `Room left: ${count(status.receiptsRemaining, "receipt")} and ${count(status.retryEpochsRemaining, "connection")}.`;
  const used = Math.max(
    percent(status.receipts, status.receiptCap),
    percent(status.retryEpochs, status.retryEpochCap),
  );
  if (level === "full") {
    return `Lomi's store is full: agents' changes are refused until you free room. ${room}`;
  }
  return `Lomi's store is ${used} % full. When it is full, agents' changes are refused. ${room}`;
}

/** What a preview says "Free room" will do, in words a person reads before confirming. */
export function previewText(preview: ReconcileReport, nameOf: (pairingId: string) => string): string {
  const connections = preview.retired.length;
  const moved = preview.receiptsArchived;
  if (connections === 0 && moved === 0) {
    return "Nothing to free with this choice right now: no connection matches it and no settled receipt is waiting to move. Try another choice.";
  }
  const agents = [...new Set(preview.retired.map((e) => nameOf(e.pairingId)))];
  const parts: string[] = [];
  if (connections > 0) parts.push(`end ${count(connections, "connection")} of ${agents.join(", ")}`);
  parts.push(`move ${count(moved, "settled receipt")} to the history`);
  const sentences = [`This will ${parts.join(" and ")}.`];
  if (connections > 0) {
    sentences.push(
      `${agents.length === 1 ? "That agent" : "Those agents"} must call lomi_connect again before their next change; a retry under an ended connection is refused, never run twice.`,
    );
  }
  const running = preview.retired.reduce((sum, e) => sum + e.unsettledReceipts, 0);
  sentences.push(
    running > 0
      ? `Nothing unsettled is moved: ${count(running, "receipt")} still running stay${running === 1 ? "s" : ""} until settled.`
      : "Nothing unsettled is ever moved.",
    "The history keeps every receipt (lomi operation list --history).",
  );
  return sentences.join(" ");
}

/** What "Free room" did. */
export function resultText(report: ReconcileReport): string {
  return `Freed room: ended ${count(report.retryEpochsRetired, "connection")}, moved ${count(report.receiptsArchived, "receipt")} to the history. Room now for ${count(report.receiptsRemaining, "receipt")}.`;
}

/** True when a preview shows nothing to do. */
export function nothingToFree(preview: ReconcileReport): boolean {
  return preview.retired.length === 0 && preview.receiptsArchived === 0 && preview.retryEpochsRemoved === 0;
}

export interface StorageState {
  store: StoreStatus | null;
  pairings: Pairing[];
  retire: RetireChoice;
  /** What the last "Free room" did, shown under the button. */
  lastResult: string | null;
}

export interface StorageActions {
  chooseRetire(choice: RetireChoice): void;
  freeRoom(): void;
}

function meter(id: string, label: string, used: number, cap: number, left: number): VNode {
  const share = percent(used, cap);
  const level = share >= 100 ? "full" : share >= 90 ? "critical" : share >= 75 ? "warning" : "none";
  return h(
    "div",
    { class: "meter-row", id },
    h("span", { class: "meter-label" }, label),
    h("span", { class: "meter" }, h("span", { class: `fill level-${level}`, style: `width: ${Math.min(share, 100)}%` })),
    h(
      "span",
      { class: "meter-text" },
      `${used.toLocaleString("en-US")} of ${cap.toLocaleString("en-US")} (${share} %) · ${left.toLocaleString("en-US")} left`,
    ),
  );
}

/** The client name of a pairing, or its id when the broker no longer lists it. */
export function pairingName(pairings: Pairing[], pairingId: string): string {
  return pairings.find((p) => p.pairingId === pairingId)?.clientName ?? pairingId;
}

export function storageSection(state: StorageState, actions: StorageActions): VNode {
  const store = state.store;
  const heading = h("h2", {}, "Storage");
  const intro = h(
    "p",
    { class: "hint" },
    "Every change an agent makes leaves a receipt, so a retry never runs twice. Lomi never removes one behind your back: when room runs out, agents' changes are refused until you free room here.",
  );
  if (!store) return h("section", { id: "settings-storage" }, heading, intro, h("p", { class: "empty" }, "Loading…"));

  const name = (id: string) => pairingName(state.pairings, id);
  const usage = h(
    "table",
    { class: "store-pairings" },
    h(
      "thead",
      {},
      h("tr", {}, ...["Agent", "Live connections", "Idle", "Receipts", "Running"].map((t) => h("th", {}, t))),
    ),
    h(
      "tbody",
      {},
      ...store.pairings.map((p) =>
        h(
          "tr",
          { class: "store-pairing", "data-pairing-id": p.pairingId },
          h("td", {}, name(p.pairingId)),
          h("td", { class: "live-epochs" }, String(p.liveRetryEpochs)),
          h("td", {}, String(p.idleRetryEpochs)),
          h("td", { class: "pairing-receipts" }, p.receipts.toLocaleString("en-US")),
          h("td", {}, String(p.unsettledReceipts)),
        ),
      ),
    ),
  );

  const agents = agentsWithConnections(store);
  const choice = shownChoice(state.retire, store);
  const choose = (next: Partial<RetireChoice>) => actions.chooseRetire({ ...choice, ...next });
  // The agent the list shows: the chosen one, else the first (what choosing "pairing" picks).
  const pairingId = agents.some((p) => p.pairingId === choice.pairingId) ? choice.pairingId : (agents[0]?.pairingId ?? "");
  const radio = (kind: RetireChoice["kind"], disabled = false) =>
    h("input", {
      type: "radio",
      name: "retire",
      class: `retire-${kind}`,
      value: kind,
      checked: choice.kind === kind,
      disabled,
      onchange: () => choose(kind === "pairing" ? { kind, pairingId } : { kind }),
    });
  const form = h(
    "fieldset",
    { class: "free-room" },
    h("legend", {}, "Free room"),
    h(
      "label",
      {},
      radio("idle"),
      ` Connections idle for 10 minutes or more (${store.idleRetryEpochs.toLocaleString("en-US")} now)`,
    ),
    h(
      "label",
      {},
      radio("pairing", agents.length === 0),
      " Every connection of ",
      agents.length === 0
        ? h("span", { class: "hint" }, "one agent (no agent has a connection now)")
        : h(
            "select",
            {
              class: "retire-pairing-choice",
              onchange: (event: Event) =>
                choose({ kind: "pairing", pairingId: (event.target as HTMLSelectElement).value }),
            },
            ...agents.map((p) =>
              h("option", { value: p.pairingId, selected: p.pairingId === pairingId }, name(p.pairingId)),
            ),
          ),
    ),
    h(
      "label",
      {},
      radio("olderThan"),
      " Connections made more than ",
      h(
        "select",
        {
          class: "retire-age",
          onchange: (event: Event) =>
            choose({ kind: "olderThan", seconds: Number((event.target as HTMLSelectElement).value) }),
        },
        ...AGES.map((age) => h("option", { value: age.seconds, selected: age.seconds === choice.seconds }, age.label)),
      ),
      " ago",
    ),
    h(
      "p",
      { class: "hint" },
      "You see exactly what will happen before anything changes. Agents whose connection ends must call lomi_connect again; nothing unsettled is ever moved, and the history keeps every receipt.",
    ),
    h(
      "div",
      { class: "buttons" },
      h("button", { id: "free-room", class: "primary", onclick: () => actions.freeRoom() }, "Free room…"),
    ),
    state.lastResult ? h("p", { class: "free-room-result" }, state.lastResult) : null,
  );

  return h(
    "section",
    { id: "settings-storage", class: `store-level-${store.warningLevel}` },
    heading,
    intro,
    h(
      "div",
      { class: "meters" },
      meter("store-receipts", "Receipts", store.receipts, store.receiptCap, store.receiptsRemaining),
      meter(
        "store-connections",
        "Agent connections",
        store.retryEpochs,
        store.retryEpochCap,
        store.retryEpochsRemaining,
      ),
    ),
    h(
      "p",
      { class: "history" },
      `History: ${count(store.historyReceipts, "receipt")} moved out of the live store, all kept (lomi operation list --history). `,
      `${count(store.unsettledReceipts, "receipt")} still running.`,
    ),
    store.pairings.length > 0 ? usage : h("p", { class: "empty" }, "No agent has receipts or connections in the live store now."),
    form,
    h("p", { class: "hint" }, `Store: ${store.databasePath}`),
  );
}

/** The confirmation of "Free room": the preview's words, then Cancel or Free room. */
export function freeRoomDialog(
  preview: ReconcileReport,
  text: string,
  onConfirm: () => void,
  onCancel: () => void,
): VNode {
  const nothing = nothingToFree(preview);
  return h(
    "div",
    { class: "dialog", id: "free-room-dialog", role: "dialog", "aria-modal": "true" },
    h("h2", {}, nothing ? "Nothing to free" : "Free room in the store?"),
    h("p", { class: "what" }, text),
    h(
      "div",
      { class: "buttons" },
      h("button", { class: "secondary", id: "free-room-cancel", onclick: onCancel }, nothing ? "Close" : "Cancel"),
      nothing ? null : h("button", { class: "primary", id: "free-room-confirm", onclick: onConfirm }, "Free room"),
    ),
  );
}

/** What the window says while the store cannot write: why, what it means for agents, what to do. */
export function writeFailureText(failure: WriteFailure): string {
  // The store's own advice (after the ";") is said once, below, in words for the person.
  const reason = failure.message.split(";")[0].replace(/[.\s]+$/, "");
  return (
    `Lomi cannot save its records: ${reason}. Agents' changes are refused and none of them starts ` +
    "until Lomi can write again; nothing already done is lost. Free space on the disk that holds " +
    "Lomi's data; work goes on by itself, no restart needed."
  );
}

/**
 * The notice shown while the store cannot write (above any other): it stays until writes
 * succeed again, since every agent's change is refused meanwhile.
 */
export function writeFailureBanner(failure: WriteFailure): VNode {
  return h(
    "div",
    { id: "write-failure", class: "notice level-full", role: "alert" },
    h("span", { class: "notice-text" }, writeFailureText(failure)),
  );
}

/** The in-window notice: what the level means and a way to the Storage view. */
export function noticeBanner(
  level: WarningLevel,
  status: StoreStatus,
  actions: { open(): void; dismiss(): void },
): VNode {
  return h(
    "div",
    { id: "store-notice", class: `notice level-${level}`, role: "alert" },
    h("span", { class: "notice-text" }, noticeText(level, status)),
    h("button", { id: "open-storage", class: "primary small", onclick: () => actions.open() }, "Open Storage"),
    h("button", { id: "dismiss-notice", class: "small", onclick: () => actions.dismiss() }, "Later"),
  );
}
