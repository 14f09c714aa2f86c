// The person's edits against a shared document, in the broker's terms: replacements by
// character offsets (Unicode code points, as `lomi_editor_edit` counts them), and the same
// rebase as the broker's (crates/lomi-files/src/rebase.rs; both are checked against
// rebase-cases.json): every character either side inserted is kept, a character is kept only
// when neither side deleted it, and in a gap both inserted into, the edit applied first
// comes first.

// `TextEdit` is generated from the Rust type (src/generated/protocol.ts).
export type { TextEdit } from "./generated/protocol";
import type { TextEdit } from "./generated/protocol";

/** Code points of `text`. */
export function length(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Sorted, without no-ops, touching replacements joined. */
export function normalize(edits: TextEdit[]): TextEdit[] {
  const sorted = edits.filter((e) => e.start !== e.end || e.text !== "").map((e) => ({ ...e }));
  sorted.sort((a, b) => a.start - b.start || a.end - b.end);
  const out: TextEdit[] = [];
  for (const edit of sorted) {
    const last = out[out.length - 1];
    if (last && last.end === edit.start) {
      last.end = edit.end;
      last.text += edit.text;
    } else {
      out.push(edit);
    }
  }
  return out;
}

function gapPosition(applied: TextEdit[], gap: number, afterInsert: boolean): number {
  let shift = 0;
  for (const edit of applied) {
    const inserted = length(edit.text);
    if (gap < edit.start) break;
    if (gap === edit.start) return edit.start + shift + (afterInsert ? inserted : 0);
    if (gap <= edit.end) return edit.start + shift + inserted;
    shift += inserted - (edit.end - edit.start);
  }
  return gap + shift;
}

/** `edits`, made on the same text as `applied`, moved onto the text `applied` produced. */
export function rebase(edits: TextEdit[], appliedEdits: TextEdit[], appliedFirst: boolean): TextEdit[] {
  const applied = normalize(appliedEdits);
  const out: TextEdit[] = [];
  for (const edit of normalize(edits)) {
    const at = gapPosition(applied, edit.start, appliedFirst);
    if (edit.text !== "") out.push({ start: at, end: at, text: edit.text });
    let from = edit.start;
    while (from < edit.end) {
      const deleted = applied.find((o) => o.start <= from && from < o.end);
      if (deleted) {
        from = deleted.end;
        continue;
      }
      const next = applied.find((o) => o.start > from);
      const to = next ? Math.min(next.start, edit.end) : edit.end;
      const start = gapPosition(applied, from, true);
      out.push({ start, end: start + (to - from), text: "" });
      from = to;
    }
  }
  return normalize(out);
}

/** `edits` applied to `text`. Throws when they do not fit it. */
export function apply(text: string, edits: TextEdit[]): string {
  const points = Array.from(text);
  const sorted = [...edits].sort((a, b) => a.start - b.start || a.end - b.end);
  let out = "";
  let at = 0;
  for (const edit of sorted) {
    if (edit.start < at || edit.end < edit.start || edit.end > points.length) {
      throw new Error(`edit ${edit.start}..${edit.end} does not fit a text of ${points.length} characters`);
    }
    out += points.slice(at, edit.start).join("") + edit.text;
    at = edit.end;
  }
  return out + points.slice(at).join("");
}

/** The one replacement that turns `from` into `to` (common start and end kept), or none. */
export function diff(from: string, to: string): TextEdit[] {
  if (from === to) return [];
  const a = Array.from(from);
  const b = Array.from(to);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  return [{ start, end: endA, text: b.slice(start, endB).join("") }];
}

/** A code-point offset of `text` as a UTF-16 offset (what CodeMirror counts). */
export function utf16Offset(text: string, points: number): number {
  let offset = 0;
  let n = 0;
  for (const ch of text) {
    if (n === points) break;
    offset += ch.length;
    n++;
  }
  return offset;
}
