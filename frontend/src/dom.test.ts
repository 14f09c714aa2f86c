import { describe, expect, it, vi } from "vitest";
import { h, morph, show } from "./dom";

describe("morph", () => {
  it("keeps the nodes a re-render shares, with the new text, attributes and listeners", () => {
    const first = vi.fn();
    const second = vi.fn();
    const container = h("div");
    show(container, h("section", { id: "s" }, h("p", { class: "when" }, "5 s ago"), h("button", { onclick: first }, "Go")));
    const button = container.querySelector("button")!;
    const when = container.querySelector("p")!;

    show(
      container,
      h("section", { id: "s" }, h("p", { class: "when", title: "now" }, "20 s ago"), h("button", { onclick: second }, "Go")),
    );
    expect(container.querySelector("button")).toBe(button);
    expect(container.querySelector("p")).toBe(when);
    expect(when.textContent).toBe("20 s ago");
    expect(when.getAttribute("title")).toBe("now");
    button.click();
    expect(second).toHaveBeenCalledTimes(1);
    expect(first).not.toHaveBeenCalled();
  });

  it("replaces a row that is another thing now, never turning one pairing's button into another's", () => {
    const container = h("div");
    const row = (id: string, revoke: () => void) =>
      h("tr", { class: "pairing-row", "data-pairing-id": id }, h("td", {}, h("button", { onclick: revoke }, "Revoke")));
    const revokeA = vi.fn();
    const revokeB = vi.fn();
    show(container, h("table", {}, row("pa_a", revokeA), row("pa_b", revokeB)));
    const buttonA = container.querySelector('[data-pairing-id="pa_a"] button') as HTMLElement;
    // pa_a is gone: the first row is now pa_b.
    show(container, h("table", {}, row("pa_b", revokeB)));
    expect(container.querySelectorAll("tr")).toHaveLength(1);
    expect(buttonA.isConnected).toBe(false);
    buttonA.click();
    expect(revokeB).not.toHaveBeenCalled();
    (container.querySelector("button") as HTMLElement).click();
    expect(revokeB).toHaveBeenCalledTimes(1);
  });

  it("updates a checkbox, drops listeners the new render lacks, and leaves a focused field's text", () => {
    const changed = vi.fn();
    const current = h("form", {}, h("input", { type: "checkbox", onchange: changed }), h("input", { id: "name" }));
    document.body.append(current);
    const name = current.querySelector<HTMLInputElement>("#name")!;
    name.focus();
    name.value = "half-typed";
    morph(current, h("form", {}, h("input", { type: "checkbox", checked: true }), h("input", { id: "name" })));
    const box = current.querySelector<HTMLInputElement>('input[type="checkbox"]')!;
    expect(box.checked).toBe(true);
    box.dispatchEvent(new Event("change"));
    expect(changed).not.toHaveBeenCalled();
    expect(current.querySelector("#name")).toBe(name);
    expect(name.value).toBe("half-typed");
    current.remove();
  });
});
