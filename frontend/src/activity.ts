// The Activity tab: what each agent did (the broker's `activity`): its calls and operations,
// call times per tool, who refused its operations, its errors, when it was last seen, whether
// it is paused, and what decided its operations (the person, a rule, the default).

import type { ActivityView, AgentActivity, Counted } from "./generated/protocol";
import { ago, h, type VNode } from "./dom";
import { type Names, decidedByWords } from "./rules";

/** The state names the broker counts, as the person reads them. */
const STATE_WORDS: Record<string, string> = {
  succeeded: "succeeded",
  failed: "failed",
  awaiting_user: "waiting for you",
  queued: "queued",
  running: "running",
  cancelling: "cancelling",
  cancelled: "cancelled",
  outcome_unknown: "outcome unknown",
};

/** "3 succeeded, 1 failed"; "none" for an empty list. */
export function countsWords(list: Counted[], word: (name: string) => string = (name) => name): string {
  if (list.length === 0) return "none";
  return list.map((c) => `${c.count} ${word(c.name)}`).join(", ");
}

/** Who refused: "you", a rule in words, "a choice you remembered". */
export function denialWords(list: Counted[], names: Names): string {
  return countsWords(list, (by) => `by ${decidedByWords(by, names)}`);
}

function ms(value: number | null | undefined): string {
  return value == null ? "—" : `${value} ms`;
}

/** The last day's calls and operations, hour by hour, as bars (hours with nothing are left
 * out by the broker, so each bar names its hour). */
function hoursView(agent: AgentActivity): VNode | null {
  if (agent.hours.length === 0) return null;
  const most = Math.max(1, ...agent.hours.map((hour) => hour.calls + hour.operations));
  return h(
    "div",
    { class: "hours", title: "The last 24 hours" },
    ...agent.hours.map((hour) => {
      const at = new Date(hour.hourStart).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      return h(
        "span",
        { class: "hour", title: `${at}: ${hour.calls} calls, ${hour.operations} operations` },
        h("span", { class: "bar", style: `height: ${Math.max(2, Math.round((28 * (hour.calls + hour.operations)) / most))}px` }),
        h("span", { class: "hour-label" }, at),
      );
    }),
  );
}

function agentCard(agent: AgentActivity, names: Names, now: Date): VNode {
  const toolLabel = (tool: string) => names.policy.find((p) => p.tool === tool)?.label ?? null;
  const fact = (label: string, value: string, cls: string) =>
    h("div", { class: `fact ${cls}` }, h("dt", {}, label), h("dd", {}, value));
  return h(
    "section",
    { class: `agent-activity${agent.paused ? " paused" : ""}`, "data-pairing-id": agent.pairingId },
    h(
      "h2",
      {},
      agent.clientName,
      agent.paused ? h("span", { class: "paused-badge" }, "paused") : null,
      h("span", { class: "last-seen" }, `last seen ${ago(agent.lastSeen, now)}`),
    ),
    h(
      "dl",
      { class: "activity-facts" },
      fact("Calls", String(agent.calls), "calls"),
      fact("Operations", `${agent.operations} (${countsWords(agent.operationsByState, (s) => STATE_WORDS[s] ?? s)})`, "operations"),
      fact("Refused", denialWords(agent.denials, names), "denials"),
      fact("Errors", countsWords(agent.errorsByCode), "errors"),
      fact("Decided by", countsWords(agent.decidedBy, (by) => `by ${decidedByWords(by, names)}`), "decided-by"),
    ),
    hoursView(agent),
    agent.tools.length === 0
      ? h("p", { class: "empty" }, "No calls yet.")
      : h(
          "table",
          { class: "tool-activity" },
          h("thead", {}, h("tr", {}, ...["Tool", "Calls", "Errors", "Operations", "p50", "p95"].map((t) => h("th", {}, t)))),
          h(
            "tbody",
            {},
            ...agent.tools.map((tool) =>
              h(
                "tr",
                { class: "tool-row", "data-tool-name": tool.tool },
                h("td", {}, toolLabel(tool.tool) ? `${toolLabel(tool.tool)} ` : "", h("code", {}, tool.tool)),
                h("td", { class: "num" }, String(tool.calls)),
                h("td", { class: "num" }, String(tool.errors)),
                h("td", { class: "num" }, String(tool.operations)),
                h("td", { class: "num p50" }, ms(tool.p50Ms)),
                h("td", { class: "num p95" }, ms(tool.p95Ms)),
              ),
            ),
          ),
        ),
  );
}

/** The Activity tab; `view` null until the first read answered, `problem` when it failed. */
export function activityView(view: ActivityView | null, problem: string | null, names: Names, now: Date = new Date()): VNode {
  return h(
    "div",
    { class: "activity", id: "activity" },
    h(
      "p",
      { class: "hint" },
      view
        ? `Calls and call times since Lomi started (${new Date(view.since).toLocaleString()}); operations from every receipt kept.`
        : "Reading what agents did…",
    ),
    problem ? h("p", { class: "error" }, problem) : null,
    view && view.agents.length === 0 ? h("p", { class: "empty" }, "No agent has called Lomi yet.") : null,
    ...(view?.agents ?? []).map((agent) => agentCard(agent, names, now)),
  );
}
