import { describe, expect, it } from "vitest";
import { editorOffset } from "./editor";
import { join } from "./files";
import { diffLines, split } from "./git";

describe("the project views' pure parts", () => {
  it("counts a CRLF as one CodeMirror position and an astral character as two", () => {
    const text = "a\r\nb🙂c";
    expect(editorOffset(text, 3, "\r\n")).toBe(2); // after the CRLF
    expect(editorOffset(text, 5, "\r\n")).toBe(5); // after the emoji
    expect(editorOffset("a\nb", 2, "\n")).toBe(2);
  });

  it("splits the status into staged changes and changes not staged", () => {
    const { staged, unstaged } = split([
      { path: "a", index: "modified", worktree: "unmodified" },
      { path: "b", index: "modified", worktree: "modified" },
      { path: "c", index: "untracked", worktree: "untracked" },
    ]);
    expect(staged.map((e) => e.path)).toEqual(["a", "b"]);
    expect(unstaged.map((e) => e.path)).toEqual(["b", "c"]);
  });

  it("classes a diff's lines and drops the empty last one", () => {
    expect(diffLines("--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n ctx\n").map((l) => l.kind)).toEqual([
      "",
      "",
      "hunk",
      "del",
      "add",
      "",
    ]);
    expect(join("", "a")).toBe("a");
    expect(join("src", "a.rs")).toBe("src/a.rs");
  });
});
