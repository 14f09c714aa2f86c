// A tiny element builder: the window is plain DOM, no framework.

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | ((event: Event) => void) | undefined>;

/**
 * The listeners `h` gave each element, by event type. The element itself listens through one
 * dispatcher per type that calls whatever is here now, so `morph` can hand a kept element the
 * listeners of the element that replaces it.
 */
const listeners = new WeakMap<Element, Map<string, (event: Event) => void>>();

function listen(element: Element, type: string, listener: (event: Event) => void): void {
  let own = listeners.get(element);
  if (!own) {
    own = new Map();
    listeners.set(element, own);
  }
  if (!own.has(type)) {
    element.addEventListener(type, (event) => listeners.get(element)?.get(type)?.(event));
  }
  own.set(type, listener);
}

/** Creates an element: `on*` attributes become listeners, booleans toggle attributes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") {
      listen(element, name.slice(2).toLowerCase(), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else {
      element.setAttribute(name, String(value));
    }
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
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

/**
 * Whether two nodes are the same thing on screen: same kind, tag, id, class and `data-*-id`
 * attributes. Only such nodes are updated in place; anything else is replaced, so a node never
 * turns into another row's button under the person's pointer.
 */
function same(a: Node, b: Node): boolean {
  if (a.nodeType !== b.nodeType) return false;
  if (!(a instanceof Element) || !(b instanceof Element)) return true;
  if (a.tagName !== b.tagName) return false;
  const identity = (e: Element) =>
    e
      .getAttributeNames()
      .filter((name) => name === "id" || name === "class" || (name.startsWith("data-") && name.endsWith("-id")))
      .map((name) => `${name}=${e.getAttribute(name)}`)
      .sort()
      .join(" ");
  return identity(a) === identity(b);
}

/**
 * Makes `current` show what `next` shows, keeping every node the two share. A re-render then
 * leaves the button under the person's pointer, the focused field and its text where they are:
 * replacing them would drop a click that started before the re-render.
 *
 * A kept node gets the listeners of its new render, but stays the node of the old one: so a
 * listener must read the page through its event (`event.target`, `event.currentTarget`), never
 * through an element its own render created.
 */
export function morph(current: Element, next: Element): void {
  for (const name of current.getAttributeNames()) {
    if (!next.hasAttribute(name)) current.removeAttribute(name);
  }
  for (const name of next.getAttributeNames()) {
    const value = next.getAttribute(name)!;
    if (current.getAttribute(name) !== value) current.setAttribute(name, value);
  }
  const theirs = listeners.get(next);
  if (theirs) {
    for (const [type, listener] of theirs) listen(current, type, listener);
  }
  const ours = listeners.get(current);
  if (ours) {
    for (const type of [...ours.keys()]) if (!theirs?.has(type)) ours.delete(type);
  }
  if (current instanceof HTMLInputElement && next instanceof HTMLInputElement) {
    current.checked = next.checked;
    if (next.hasAttribute("value") && document.activeElement !== current) current.value = next.value;
  }
  // A text area's value is its text only until typed in: set it, unless the person is typing.
  if (current instanceof HTMLTextAreaElement && next instanceof HTMLTextAreaElement) {
    if (document.activeElement !== current && current.value !== next.value) current.value = next.value;
  }
  const kept = [...current.childNodes];
  const wanted = [...next.childNodes];
  wanted.forEach((node, index) => {
    const old = kept[index];
    if (old === undefined) {
      current.append(node);
    } else if (!same(old, node)) {
      current.replaceChild(node, old);
    } else if (old instanceof Element) {
      morph(old, node as Element);
    } else if (old.nodeValue !== node.nodeValue) {
      old.nodeValue = node.nodeValue;
    }
  });
  for (const extra of kept.slice(wanted.length)) extra.remove();
}

/** Shows `next` in `container`: morphed into what is there when that is the same element. */
export function show(container: Element, next: Element): void {
  const current = container.firstElementChild;
  if (container.childNodes.length === 1 && current !== null && same(current, next)) {
    morph(current, next);
  } else {
    container.replaceChildren(next);
  }
}
