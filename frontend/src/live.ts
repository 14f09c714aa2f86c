// The live view: the operation feed (state, tool, target, who) and the panels of each
// workspace. Terminal panels are xterm.js terminals the person can type in (a takeover);
// browser panels show their active tab's address and a live view of its viewport; Android
// panels show the latest capture an agent took.

import { Terminal } from "@xterm/xterm";
import type { BrowserView, FeedItem, Panel, Workspace } from "./api";
import { ago, h } from "./dom";
import { openWorkbench } from "./workbench";

export function feedView(items: FeedItem[], now: Date = new Date()): HTMLElement {
  return h(
    "section",
    { id: "feed" },
    h("h2", {}, "Operations"),
    items.length === 0
      ? h("p", { class: "empty" }, "No operation yet.")
      : h(
          "table",
          { class: "feed" },
          h("thead", {}, h("tr", {}, ...["State", "Tool", "Workspace", "Who", "When"].map((t) => h("th", {}, t)))),
          h(
            "tbody",
            {},
            ...items.map((item) =>
              h(
                "tr",
                { class: `op state-${item.state}`, "data-operation-id": item.operationId },
                h(
                  "td",
                  {},
                  h("span", { class: `badge ${item.state}` }, item.state.replace("_", " ")),
                  item.errorCode ? h("span", { class: "error-code" }, ` ${item.errorCode}`) : null,
                ),
                h("td", {}, h("code", {}, item.tool)),
                h("td", {}, item.workspaceName ?? item.workspaceId ?? ""),
                h("td", {}, item.clientName ?? "a past pairing"),
                h("td", {}, ago(item.updatedAt, now)),
              ),
            ),
          ),
        ),
  );
}

/**
 * Keystrokes in the order they were typed. Each send is a separate call into the backend, and
 * calls in flight together may reach the terminal in any order; so one send at a time, and
 * whatever is typed meanwhile goes next, joined into one write.
 */
export function inOrder(send: (data: string) => Promise<void>): (data: string) => void {
  let waiting = "";
  let sending = false;
  const drain = async () => {
    sending = true;
    while (waiting) {
      const data = waiting;
      waiting = "";
      try {
        await send(data);
      } catch (error) {
        console.warn("terminal input", error);
      }
    }
    sending = false;
  };
  return (data) => {
    waiting += data;
    if (!sending) void drain();
  };
}

export interface TerminalHooks {
  attach(panelId: string, onBytes: (bytes: Uint8Array) => void): Promise<boolean>;
  input(panelId: string, data: string): Promise<void>;
  /** The latest capture of an Android panel (PNG bytes). */
  capture(panelId: string): Promise<Uint8Array<ArrayBuffer>>;
  /** Streams a browser panel's view; resolves false when no browser runs in it. */
  browser(panelId: string, onView: (view: BrowserView) => void): Promise<boolean>;
}

/** A browser panel's view, kept across overview updates; one per browser generation. */
interface OpenBrowser {
  element: HTMLElement;
  generation: string | null;
}

/** An Android panel's view: the latest capture, fetched again when its sequence changes. */
interface OpenCapture {
  element: HTMLElement;
  image: HTMLImageElement;
  sequence: number;
  url: string | null;
}

/** One open terminal view, kept across overview updates so its screen is not lost. */
interface OpenTerminal {
  element: HTMLElement;
  terminal: Terminal;
}

/** The panels of every workspace; terminals stay mounted between renders. */
export class PanelsView {
  readonly element = h("section", { id: "panels" });
  private terminals = new Map<string, OpenTerminal>();
  private captures = new Map<string, OpenCapture>();
  private browsers = new Map<string, OpenBrowser>();
  private sequences: Record<string, number> = {};
  /** The layout last rendered; an unchanged one is not rebuilt, so a focused terminal keeps focus. */
  private layout = "";

  constructor(private hooks: TerminalHooks) {}

  update(workspaces: Workspace[], panels: Record<string, Panel[]>, captures: Record<string, number> = {}): void {
    this.sequences = captures;
    const layout = JSON.stringify([
      workspaces.map((w) => [w.workspaceId, w.name]),
      panels,
      captures,
    ]);
    if (layout === this.layout) return;
    this.layout = layout;
    const live = new Set<string>();
    const groups: HTMLElement[] = [];
    for (const workspace of workspaces) {
      const list = panels[workspace.workspaceId] ?? [];
      const cards = list.map((panel) => {
        live.add(panel.panelId);
        return this.card(panel);
      });
      groups.push(
        h(
          "div",
          { class: "workspace-panels", "data-workspace-id": workspace.workspaceId },
          h(
            "h2",
            {},
            workspace.name,
            h("button", { class: "open-files small", onclick: () => openWorkbench(workspace) }, "Files"),
          ),
          cards.length === 0 ? h("p", { class: "empty" }, "No panel open.") : h("div", { class: "cards" }, ...cards),
        ),
      );
    }
    for (const [id, open] of this.terminals) {
      if (!live.has(id)) {
        open.terminal.dispose();
        this.terminals.delete(id);
      }
    }
    for (const id of this.browsers.keys()) {
      if (!live.has(id)) this.browsers.delete(id);
    }
    for (const [id, open] of this.captures) {
      if (!live.has(id)) {
        if (open.url) URL.revokeObjectURL(open.url);
        this.captures.delete(id);
      }
    }
    this.element.replaceChildren(...groups);
  }

  private card(panel: Panel): HTMLElement {
    if (panel.kind === "android") return this.androidCard(panel);
    if (panel.kind === "browser") return this.browserCard(panel);
    if (panel.kind !== "terminal") {
      return h(
        "div",
        { class: `panel ${panel.kind}`, "data-panel-id": panel.panelId },
        h("h3", {}, panel.title),
        h("p", { class: "empty" }, `A ${panel.kind} panel.`),
      );
    }
    let open = this.terminals.get(panel.panelId);
    if (!open) {
      const screen = h("div", { class: "xterm-host" });
      const element = h(
        "div",
        { class: "panel terminal-panel", "data-panel-id": panel.panelId },
        h("h3", {}, panel.title, h("span", { class: "where" }, " — typing here takes it over from the agent")),
        screen,
      );
      const terminal = new Terminal({ rows: 24, cols: 80, convertEol: false, fontSize: 13 });
      terminal.open(screen);
      terminal.onData(inOrder((data) => this.hooks.input(panel.panelId, data)));
      this.hooks
        .attach(panel.panelId, (bytes) => terminal.write(bytes))
        .catch((error) => console.warn("terminal attach", error));
      open = { element, terminal };
      this.terminals.set(panel.panelId, open);
    }
    return open.element;
  }

  private browserCard(panel: Panel): HTMLElement {
    const known = this.browsers.get(panel.panelId);
    if (known && known.generation === panel.generation) return known.element;
    const address = h("code", { class: "address" }, "");
    const note = h("p", { class: "empty note" }, "Waiting for the browser…");
    const image = h("img", { class: "browser-view", alt: `What ${panel.title} shows` });
    image.hidden = true;
    const element = h(
      "div",
      { class: "panel browser-panel", "data-panel-id": panel.panelId },
      h("h3", {}, panel.title, h("span", { class: "where" }, " — what the agent's browser shows")),
      h("div", { class: "address-bar" }, address),
      note,
      image,
    );
    this.browsers.set(panel.panelId, { element, generation: panel.generation });
    const show = (view: BrowserView) => {
      if (view.ended) {
        note.textContent = "The browser has ended.";
        note.hidden = false;
        image.hidden = true;
        return;
      }
      address.textContent = view.url ?? "";
      address.title = view.title ?? "";
      if (view.jpegBase64) {
        image.src = `data:image/jpeg;base64,${view.jpegBase64}`;
        image.dataset.tabId = view.tabId ?? "";
        image.hidden = false;
      }
      note.textContent = view.note ?? "";
      note.hidden = !view.note;
    };
    this.hooks
      .browser(panel.panelId, show)
      .then((running) => {
        if (!running) show({ ended: true });
      })
      .catch((error) => console.warn("browser view", error));
    return element;
  }

  private androidCard(panel: Panel): HTMLElement {
    let open = this.captures.get(panel.panelId);
    if (!open) {
      const image = h("img", { class: "capture", alt: `The latest capture of ${panel.title}` });
      const element = h(
        "div",
        { class: "panel android-panel", "data-panel-id": panel.panelId },
        h("h3", {}, panel.title, h("span", { class: "where" }, " — the latest capture an agent took")),
        h("p", { class: "empty no-capture" }, "No capture yet."),
        image,
      );
      open = { element, image, sequence: 0, url: null };
      this.captures.set(panel.panelId, open);
    }
    const sequence = this.sequences[panel.panelId] ?? 0;
    if (sequence > open.sequence) {
      const target = open;
      target.sequence = sequence;
      this.hooks
        .capture(panel.panelId)
        .then((png) => {
          if (target.url) URL.revokeObjectURL(target.url);
          target.url = URL.createObjectURL(new Blob([png], { type: "image/png" }));
          target.image.src = target.url;
          target.element.querySelector(".no-capture")?.remove();
          target.image.dataset.sequence = String(sequence);
        })
        .catch((error) => console.warn("android capture", error));
    }
    return open.element;
  }
}
