// The operation view: the newest operations, filtered by workspace, agent and state; a row
// opens its receipt (`operationShow`): arguments' outcome, result, effect, error and when it
// moved; an `outcome_unknown` row says how to find out what really happened for its tool.

import { useEffect, useRef, useState } from "preact/hooks";
import type { FeedItem } from "./api";
import type { OperationShown, StateChange } from "./generated/protocol";
import { ago } from "./dom";

/** The receipt as `operationShow` answers it (generated: a live receipt or one in the history);
 * `recovery` (an `outcome_unknown` one): what to look at for its tool before doing anything
 * again (`Family::recovery_steps` in Rust). */
export type Receipt = OperationShown;

/** One state an operation went through (`operationShow`'s `timeline`, from the event feed). */
export type TimelineEntry = StateChange;

export function feedFilter(items: FeedItem[], filter: { workspace: string; agent: string; state: string }): FeedItem[] {
  return items.filter(
    (item) =>
      (!filter.workspace || item.workspaceId === filter.workspace) &&
      (!filter.agent || item.pairingId === filter.agent) &&
      (!filter.state || item.state === filter.state),
  );
}

function unique(items: FeedItem[], key: (item: FeedItem) => string | null, label: (item: FeedItem) => string) {
  const seen = new Map<string, string>();
  for (const item of items) {
    const value = key(item);
    if (value && !seen.has(value)) seen.set(value, label(item));
  }
  return [...seen.entries()];
}

/** A receipt's error and the states it went through: a live receipt has `error` and its
 * `timeline` from the event feed, one in the history `errorCode`/`errorMessage` and its `trail`. */
function errorAndStates(receipt: Receipt): { error: { code: string; message: string } | null; states: StateChange[] } {
  if ("historySeq" in receipt) {
    const error = receipt.errorCode ? { code: receipt.errorCode, message: receipt.errorMessage ?? "" } : null;
    return { error, states: receipt.trail };
  }
  return { error: receipt.error, states: receipt.timeline ?? [] };
}

function ReceiptView({ receipt, close }: { receipt: Receipt; close(): void }) {
  const { error, states } = errorAndStates(receipt);
  const times: [string, string | null][] = [
    ["Reserved", receipt.createdAt],
    ["Last moved", receipt.updatedAt],
    ["Settled", receipt.settledAt ?? null],
  ];
  const shown = useRef<HTMLDivElement>(null);
  // The receipt opens above the rows, maybe out of sight: bring it into view.
  useEffect(() => shown.current?.scrollIntoView?.({ block: "start" }), [receipt.operationId]);
  return (
    <div class="receipt" id="receipt" data-receipt-id={receipt.operationId} ref={shown}>
      <h3>
        <code>{receipt.tool}</code> <span class={`badge ${receipt.state}`}>{receipt.state.replace("_", " ")}</span>
        <button class="small" onClick={close}>
          Close
        </button>
      </h3>
      <dl class="store">
        <dt>Operation</dt>
        <dd>
          <code>{receipt.operationId}</code>
        </dd>
        <dt>Request key</dt>
        <dd>
          <code>{receipt.requestKey}</code>
        </dd>
        <dt>Effect</dt>
        <dd class="effect-state">{receipt.effectState}</dd>
        {times.map(([what, when]) => (
          <>
            <dt>{what}</dt>
            <dd>{when ?? "not yet"}</dd>
          </>
        ))}
      </dl>
      <h4>Timeline</h4>
      {states.length > 0 ? (
        <ol class="timeline">
          {states.map((entry) => (
            <li key={`${entry.state}-${entry.at}`} data-state={entry.state}>
              <span class={`badge ${entry.state}`}>{entry.state.replace("_", " ")}</span> effect {entry.effectState} ·{" "}
              <time>{entry.at}</time>
            </li>
          ))}
        </ol>
      ) : (
        <p class="empty">Its states have left the event feed (the receipt is in the history).</p>
      )}
      {error && (
        <p class="receipt-error">
          <span class="error-code">{error.code}</span> {error.message}
        </p>
      )}
      {receipt.state === "outcome_unknown" && (
        <p class="recovery" id="recovery">
          <strong>Lomi cannot tell whether this happened.</strong> {receipt.recovery ?? ""} (See docs/recovery.md.)
        </p>
      )}
      <h4>Result</h4>
      <pre class="receipt-result">{receipt.result === null || receipt.result === undefined ? "none" : JSON.stringify(receipt.result, null, 2)}</pre>
    </div>
  );
}

export interface OperationsProps {
  items: FeedItem[];
  /** Reads one receipt (`operationShow`). */
  show(operationId: string): Promise<Receipt>;
  now?: Date;
}

export function Operations({ items, show, now = new Date() }: OperationsProps) {
  const [filter, setFilter] = useState({ workspace: "", agent: "", state: "" });
  const [open, setOpen] = useState<Receipt | null>(null);
  const shown = feedFilter(items, filter);
  const select = (key: keyof typeof filter, label: string, options: [string, string][]) => (
    <label>
      {label}{" "}
      <select
        class={`filter-${key}`}
        value={filter[key]}
        onChange={(event) => setFilter({ ...filter, [key]: (event.target as HTMLSelectElement).value })}
      >
        <option value="">all</option>
        {options.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <section id="feed">
      <h2>Operations</h2>
      <div class="filters">
        {select("workspace", "Workspace", unique(items, (i) => i.workspaceId, (i) => i.workspaceName ?? i.workspaceId ?? ""))}
        {select("agent", "Agent", unique(items, (i) => i.pairingId, (i) => i.clientName ?? "a past pairing"))}
        {select("state", "State", unique(items, (i) => i.state, (i) => i.state.replace("_", " ")))}
      </div>
      {open && <ReceiptView receipt={open} close={() => setOpen(null)} />}
      {shown.length === 0 ? (
        <p class="empty">{items.length === 0 ? "No operation yet." : "No operation matches."}</p>
      ) : (
        <table class="feed">
          <thead>
            <tr>
              <th>State</th>
              <th>Tool</th>
              <th>Workspace</th>
              <th>Who</th>
              <th>When</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((item) => (
              <tr
                key={item.operationId}
                class={`op state-${item.state}`}
                data-operation-id={item.operationId}
                onClick={() => void show(item.operationId).then(setOpen, () => setOpen(null))}
              >
                <td>
                  <span class={`badge ${item.state}`}>{item.state.replace("_", " ")}</span>
                  {item.errorCode && <span class="error-code"> {item.errorCode}</span>}
                  {item.state === "outcome_unknown" && <span class="recovery-link"> · how to check</span>}
                </td>
                <td>
                  <code>{item.tool}</code>
                </td>
                <td>{item.workspaceName ?? item.workspaceId ?? ""}</td>
                <td>{item.clientName ?? "a past pairing"}</td>
                <td>{ago(item.updatedAt, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
