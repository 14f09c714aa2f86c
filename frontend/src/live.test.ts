import { describe, expect, it, vi } from "vitest";
import type { BrowserView } from "./api";
import { PanelElements, inOrder } from "./live";

describe("panels' lasting views", () => {
  it("shows an Android panel's latest capture, fetched again only when it changes", async () => {
    const capture = vi.fn().mockResolvedValue(new Uint8Array([0x89, 0x50, 0x4e, 0x47]));
    const views = new PanelElements({ attach: vi.fn(), input: vi.fn(), capture, browser: vi.fn() });
    const panel = { panelId: "pn_1", kind: "android" as const, title: "Pixel", projectId: null, generation: "g1" };
    // jsdom has no object URLs: give it one.
    URL.createObjectURL = vi.fn(() => "blob:capture-1");
    URL.revokeObjectURL = vi.fn();
    const element = views.view(panel, 0);
    expect(element.querySelector(".no-capture")).not.toBeNull();
    expect(capture).not.toHaveBeenCalled();
    expect(views.view(panel, 1)).toBe(element);
    await vi.waitFor(() => expect(element.querySelector<HTMLImageElement>("img.capture")!.src).toBe("blob:capture-1"));
    expect(element.querySelector(".no-capture")).toBeNull();
    views.view(panel, 1);
    expect(capture).toHaveBeenCalledTimes(1);
    views.view(panel, 2);
    expect(capture).toHaveBeenCalledTimes(2);
    // Closed, its view goes; opened again, it is a new one.
    views.retain(new Set());
    expect(views.view(panel, 2)).not.toBe(element);
  });
  it("shows a browser panel's address and live view, and says when its browser ended", async () => {
    let push: (view: BrowserView) => void = () => {};
    const browser = vi.fn(async (_panelId: string, onView: (view: BrowserView) => void) => {
      push = onView;
      return true;
    });
    const views = new PanelElements({ attach: vi.fn(), input: vi.fn(), capture: vi.fn(), browser });
    const panel = { panelId: "pn_1", kind: "browser" as const, title: "Docs", projectId: "pr_1", generation: "g1" };
    const card = views.view(panel);
    expect(card.matches('.browser-panel[data-panel-id="pn_1"]')).toBe(true);
    expect(card.querySelector(".note")!.textContent).toContain("Waiting");
    await vi.waitFor(() => expect(browser).toHaveBeenCalledTimes(1));

    push({ generation: "g1", tabId: "t1", url: "http://127.0.0.1:8000/a", title: "A", jpegBase64: "/9j/AA==", note: null });
    const image = card.querySelector<HTMLImageElement>("img.browser-view")!;
    expect(card.querySelector(".address")!.textContent).toBe("http://127.0.0.1:8000/a");
    expect(image.src).toBe("data:image/jpeg;base64,/9j/AA==");
    expect(image.hidden).toBe(false);
    expect(card.querySelector<HTMLElement>(".note")!.hidden).toBe(true);

    // A dialog in the page: the address stays, the note says why, the last image is kept.
    push({ generation: "g1", tabId: "t1", url: "http://127.0.0.1:8000/a", title: "A", jpegBase64: null, note: "a JavaScript alert dialog is open" });
    expect(card.querySelector<HTMLElement>(".note")!.hidden).toBe(false);
    expect(card.querySelector(".note")!.textContent).toContain("dialog");

    // Another overview with the same panel keeps the card (no second stream).
    expect(views.view(panel)).toBe(card);
    expect(browser).toHaveBeenCalledTimes(1);

    push({ ended: true });
    expect(card.querySelector(".note")!.textContent).toBe("The browser has ended.");
    expect(image.hidden).toBe(true);

    // A new browser generation in the panel gets a new view.
    views.view({ ...panel, generation: "g2" });
    expect(browser).toHaveBeenCalledTimes(2);
  });

  it("sends keystrokes one call at a time, in the order typed, even when calls finish out of order", async () => {
    const sent: string[] = [];
    let inFlight = 0;
    let most = 0;
    let delay = 7;
    const send = vi.fn(async (data: string) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      // Later calls would finish first if they ran together.
      delay = delay === 0 ? 7 : delay - 1;
      await new Promise((done) => setTimeout(done, delay));
      sent.push(data);
      inFlight -= 1;
    });
    const type = inOrder(send);
    for (const key of "echo person-$((7*6))\r") type(key);
    await vi.waitFor(() => expect(sent.join("")).toBe("echo person-$((7*6))\r"));
    expect(most).toBe(1);
    // Keys typed while a call was in flight went together in the next one.
    expect(send.mock.calls.length).toBeLessThan("echo person-$((7*6))\r".length);
  });

  it("keeps sending after a refused keystroke", async () => {
    const sent: string[] = [];
    const send = vi.fn(async (data: string) => {
      if (data === "x") throw new Error("no terminal");
      sent.push(data);
    });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const type = inOrder(send);
    type("x");
    await vi.waitFor(() => expect(send).toHaveBeenCalledTimes(1));
    type("y");
    await vi.waitFor(() => expect(sent).toEqual(["y"]));
    expect(warn).toHaveBeenCalled();
    warn.mockRestore();
  });
});
