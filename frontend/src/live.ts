// What a panel shows, kept across re-renders and moves in the layout: terminal panels are
// xterm.js terminals the person can type in (a takeover); browser panels show their active
// tab's address and a live view of its viewport; Android panels show the latest capture an
// agent took. Each is one element made once per panel (per browser generation) and mounted
// by the layout's tile (panels.tsx), so moving a panel to another tile keeps its screen.

import { Terminal } from "@xterm/xterm";
import type { BrowserView, Panel } from "./api";

type Attrs = Record<string, string>;

/** One element for a panel's lasting view (not rendered by Preact: it outlives renders). */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  element.append(...children);
  return element;
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

/** Every open panel's lasting view, made on first use and dropped when the panel closes. */
export class PanelElements {
  private terminals = new Map<string, OpenTerminal>();
  private captures = new Map<string, OpenCapture>();
  private browsers = new Map<string, OpenBrowser>();
  private sequences: Record<string, number> = {};

  constructor(private hooks: TerminalHooks) {}

  /** Drops the views of panels no longer open, ending their terminals. */
  retain(open: Set<string>): void {
    for (const [id, view] of this.terminals) {
      if (!open.has(id)) {
        view.terminal.dispose();
        this.terminals.delete(id);
      }
    }
    for (const id of this.browsers.keys()) {
      if (!open.has(id)) this.browsers.delete(id);
    }
    for (const [id, view] of this.captures) {
      if (!open.has(id)) {
        if (view.url) URL.revokeObjectURL(view.url);
        this.captures.delete(id);
      }
    }
  }

  /** The view of a panel; an Android panel fetches its capture again when `sequence` moved. */
  view(panel: Panel, sequence = 0): HTMLElement {
    this.sequences[panel.panelId] = sequence;
    return this.card(panel);
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
    this.browsers.set(panel.panelId, { element, generation: panel.generation ?? null });
    const show = (view: BrowserView) => {
      if ("ended" in view) {
        note.textContent = "The browser has ended.";
        note.hidden = false;
        image.hidden = true;
        return;
      }
      address.textContent = view.url;
      address.title = view.title;
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
