// Element building for the window's views, on Preact: `h` makes a Preact element from an
// attribute object, and Preact's keyed diffing updates the page (no hand-written patching).

import { type ComponentChildren, type VNode as PreactNode, h as element, render } from "preact";

/** What a view returns: a Preact element of any props. */
// biome-ignore lint: the views' elements carry many prop shapes
export type VNode = PreactNode<any>;

type Child = ComponentChildren;
type Attrs = Record<string, string | number | boolean | ((event: Event) => void) | undefined>;

/**
 * A Preact element. A row that carries a `data-…-id` attribute is keyed by it, so a list
 * re-rendered with rows added or removed keeps each row's node (and the click under the
 * pointer) with its own row. A text field's `value` (or a text area's text) is its starting
 * value: what the person typed is never overwritten by a re-render.
 */
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): VNode {
  const props: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined) continue;
    props[name] = value;
    if (props.key === undefined && name.startsWith("data-") && name.endsWith("-id")) props.key = value;
  }
  const typed = tag === "textarea" || (tag === "input" && attrs.type !== "checkbox" && attrs.type !== "radio");
  if (typed && "value" in props) {
    props.defaultValue = props.value;
    delete props.value;
  }
  if (tag === "textarea" && children.length > 0) {
    props.defaultValue = children.filter((c) => typeof c === "string").join("");
    children = [];
  }
  return element(tag, props, ...children) as VNode;
}

/** Renders `view` into a new detached container and returns its element (tests, dialogs). */
export function mount(view: VNode): HTMLElement {
  const container = document.createElement("div");
  document.body.append(container);
  render(view, container);
  return container.firstElementChild as HTMLElement;
}

/** "3 s ago", "5 min ago", … for an RFC 3339 time, relative to `now`. */
export function ago(time: string | null | undefined, now: Date = new Date()): string {
  if (!time) return "never";
  const seconds = Math.max(0, Math.round((now.getTime() - new Date(time).getTime()) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}
