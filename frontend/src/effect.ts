// What an operation waiting for the person will do, as the broker read it when it started
// waiting (`Effect` in lomi-protocol's effect.rs): the sections a person reads (`effectSections`,
// pure) and the element the decision dialog shows (`renderEffect`).

import { h, type VNode } from "./dom";

// The effect and its facts are generated from the Rust types (src/generated/protocol.ts).
export type { Effect, Fact } from "./generated/protocol";
import type { Effect, Fact } from "./generated/protocol";

/** One part of an effect: a unified diff, plain text, code (a command, a script, lines of a
 * file) shown as written, or label/value facts. */
export type Section =
  | { title: string; kind: "diff" | "text" | "code"; content: string }
  | { title: string; kind: "facts"; content: Fact[] };

/** "12 bytes", "1.5 KB (1,536 bytes)". */
export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? "" : "s"}`;
  const exact = `${bytes.toLocaleString("en")} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB (${exact})`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB (${exact})`;
}

const CUT = "Cut here: the rest is not shown.";

/** What the person reads, in order. Empty values are left out. */
export function effectSections(effect: Effect): Section[] {
  const sections: Section[] = [];
  const facts = (title: string, list: [string, string | null | undefined][]) => {
    const content = list
      .filter((entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "")
      .map(([label, value]) => ({ label, value }));
    if (content.length > 0) sections.push({ title, kind: "facts", content });
  };
  const block = (title: string, kind: "diff" | "text" | "code", content: string | null, truncated = false) => {
    if (content === null) return;
    sections.push({ title, kind, content: truncated ? `${content}${content.endsWith("\n") ? "" : "\n"}… ${CUT}` : content });
  };
  const note = (text: string | null) => {
    if (text) sections.push({ title: "Note", kind: "text", content: text });
  };
  switch (effect.kind) {
    case "fileWrite":
      facts("File", [
        ["Path", effect.path],
        [
          "Size",
          effect.sizeBefore === null
            ? `${size(effect.sizeAfter)}${effect.creates ? " (new file)" : ""}`
            : `${size(effect.sizeBefore)} → ${size(effect.sizeAfter)}`,
        ],
        ["Content", effect.binary ? "binary: not shown as text" : null],
      ]);
      note(effect.note);
      block(effect.creates ? "New content" : "Changes against the file on disk", "diff", effect.diff, effect.truncated);
      break;
    case "fileDelete":
      facts("File", [
        ["Path", effect.path],
        ["Size", effect.size === null ? null : size(effect.size)],
        ["Content", effect.binary ? "binary: not shown as text" : null],
      ]);
      note(effect.note);
      block("First lines", "code", effect.firstLines, effect.truncated);
      break;
    case "move":
      facts("Rename", [
        ["From", effect.from],
        ["To", effect.to],
      ]);
      break;
    case "commit":
      block("Commit message", "text", effect.message);
      facts("Staged", [["Files", effect.files.length > 0 ? effect.files.join(", ") : effect.note ? null : "none"]]);
      note(effect.note);
      block("Staged changes", "diff", effect.stagedDiff, effect.truncated);
      break;
    case "git":
      facts("Git", [
        ["Action", effect.action],
        [effect.action === "stage" ? "Files" : "Branch", effect.files.join(", ")],
      ]);
      break;
    case "typed":
      facts("Where", [["Into", effect.into]]);
      block("Text that will be typed", "code", effect.text);
      break;
    case "command":
      facts("Where", [["On", effect.on]]);
      block("Command", "code", effect.command);
      break;
    case "script":
      block("Script", "code", effect.script, effect.truncated);
      break;
    case "navigate":
      facts("Address", [["URL", effect.url]]);
      break;
    case "chatSend":
      facts("Destination", [
        ["Provider", effect.provider],
        ["Model", effect.model],
        ["Conversation", effect.conversation],
      ]);
      note(effect.note);
      block("Message", "text", effect.message);
      break;
    case "device":
      facts("Phone", [
        ["Serial", effect.serial],
        ["Model", effect.model ?? "not known"],
      ]);
      break;
    case "change":
      facts("What changes", effect.facts.map((f) => [f.label, f.value] as [string, string]));
      break;
  }
  return sections;
}

/** The class of one line of a unified diff. */
export function diffLineClass(line: string): string {
  if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") || line.startsWith("index ")) {
    return "meta";
  }
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  if (line.startsWith("…")) return "cut";
  return "same";
}

function sectionBody(section: Section): VNode {
  switch (section.kind) {
    case "facts":
      return h(
        "dl",
        { class: "effect-facts" },
        ...section.content.flatMap((f) => [h("dt", {}, f.label), h("dd", {}, f.value)]),
      );
    case "diff":
      return h(
        "pre",
        { class: "effect-diff" },
        ...section.content
          .replace(/\n$/, "")
          .split("\n")
          .map((line) => h("span", { class: `line ${diffLineClass(line)}` }, `${line}\n`)),
      );
    case "code":
      return h("pre", { class: "effect-code" }, section.content);
    case "text":
      return h("p", { class: "effect-text" }, section.content);
  }
}

/** The effect as the decision dialog shows it: each section with its title. */
export function renderEffect(effect: Effect): VNode {
  return h(
    "div",
    { class: "effect", "data-kind": effect.kind },
    ...effectSections(effect).map((section) =>
      h(
        "section",
        { class: "effect-section", "data-section": section.kind },
        h("h3", {}, section.title),
        sectionBody(section),
      ),
    ),
  );
}
