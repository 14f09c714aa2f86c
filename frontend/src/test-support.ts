// Test helpers: views rendered by Preact into jsdom, as the window renders them.

import { type VNode, render } from "preact";

/** Renders `view` into `container` (again: Preact updates what is there). */
export function show(container: Element, view: VNode): void {
  render(view, container);
}

/** A view-returning function that returns its rendered element instead, for queries. */
export function mounted<A extends unknown[]>(view: (...args: A) => VNode<any>): (...args: A) => HTMLElement {
  return (...args: A) => {
    const container = document.createElement("div");
    document.body.append(container);
    render(view(...args), container);
    return container.firstElementChild as HTMLElement;
  };
}
