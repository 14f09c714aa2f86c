import { describe, expect, it } from "vitest";
import cases from "./rebase-cases.json";
import { apply, diff, length, rebase, utf16Offset, type TextEdit } from "./rebase";

describe("rebase", () => {
  it("lands the person's edit on the agent's text as the broker does", () => {
    for (const c of cases as { base: string; person: TextEdit[]; agent: TextEdit[]; merged: string }[]) {
      expect(apply(apply(c.base, c.agent), rebase(c.person, c.agent, true)), JSON.stringify(c)).toBe(c.merged);
      expect(apply(apply(c.base, c.person), rebase(c.agent, c.person, false))).toBe(c.merged);
    }
  });

  it("reaches one text from either side and keeps every insertion", () => {
    let seed = 0x2545f491;
    const below = (n: number) => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % Math.max(n, 1);
    };
    const edits = (n: number): TextEdit[] => {
      const out: TextEdit[] = [];
      let at = 0;
      while (at <= n && out.length < 4) {
        const start = at + below(n - at + 1);
        const end = start + below(Math.min(n - start, 3) + 1);
        out.push({ start, end, text: ["", "x", "yz", "é🙂"][below(4)] });
        at = end + 1;
        if (below(3) === 0) break;
      }
      return out;
    };
    for (let round = 0; round < 5000; round++) {
      const base = ["", "a", "abc", "ab🙂de", "abcdefgh"][round % 5];
      const a = edits(length(base));
      const b = edits(length(base));
      const one = apply(apply(base, b), rebase(a, b, true));
      expect(apply(apply(base, a), rebase(b, a, false)), JSON.stringify({ base, a, b })).toBe(one);
    }
  });

  it("diffs by code points and converts offsets to UTF-16", () => {
    expect(diff("a🙂c", "a🙂xc")).toEqual([{ start: 2, end: 2, text: "x" }]);
    expect(diff("same", "same")).toEqual([]);
    expect(utf16Offset("a🙂c", 2)).toBe(3);
  });
});
