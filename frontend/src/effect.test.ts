import { describe, expect, it } from "vitest";

import { type Effect, diffLineClass, effectSections, renderEffect, size } from "./effect";
import { mount } from "./dom";

const write: Effect = {
  summary: "Overwrite notes.txt (+1 −1 lines)",
  kind: "fileWrite",
  path: "notes.txt",
  creates: false,
  diff: "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n",
  truncated: false,
  binary: false,
  sizeBefore: 8,
  sizeAfter: 6,
  note: null,
};

describe("effectSections", () => {
  it("gives a write its file, sizes and diff", () => {
    expect(effectSections(write)).toEqual([
      {
        title: "File",
        kind: "facts",
        content: [
          { label: "Path", value: "notes.txt" },
          { label: "Size", value: "8 bytes → 6 bytes" },
        ],
      },
      { title: "Changes against the file on disk", kind: "diff", content: write.diff },
    ]);
  });

  it("says when a diff or a file's lines were cut", () => {
    const cut = effectSections({ ...write, truncated: true });
    expect(cut[1]).toMatchObject({ kind: "diff" });
    expect(cut[1].content).toMatch(/\n… Cut here: the rest is not shown\.$/);
    const deleted = effectSections({
      summary: "Delete big.log",
      kind: "fileDelete",
      path: "big.log",
      size: 20480,
      firstLines: "a\nb\n",
      truncated: true,
      binary: false,
      note: null,
    });
    expect(deleted[0].content).toEqual([
      { label: "Path", value: "big.log" },
      { label: "Size", value: "20.0 KB (20,480 bytes)" },
    ]);
    expect(deleted[1]).toEqual({ title: "First lines", kind: "code", content: "a\nb\n… Cut here: the rest is not shown." });
  });

  it("shows a binary file by its size, and says why a part cannot be shown", () => {
    const sections = effectSections({
      ...write,
      diff: null,
      binary: true,
      note: "the file on disk is too large to compare line by line",
    });
    expect(sections.map((s) => s.kind)).toEqual(["facts", "text"]);
    expect(sections[0].content).toContainEqual({ label: "Content", value: "binary: not shown as text" });
    expect(sections[1]).toEqual({ title: "Note", kind: "text", content: "the file on disk is too large to compare line by line" });
  });

  it("gives a commit its message, staged files and staged diff", () => {
    const sections = effectSections({
      summary: 'Commit 1 staged file to Git: "Say hello"',
      kind: "commit",
      message: "Say hello",
      files: ["a.txt"],
      stagedDiff: "diff --git a/a.txt b/a.txt\n+hello\n",
      truncated: false,
      note: null,
    });
    expect(sections.map((s) => [s.title, s.kind])).toEqual([
      ["Commit message", "text"],
      ["Staged", "facts"],
      ["Staged changes", "diff"],
    ]);
  });

  it("shows commands, scripts, addresses, devices and moves as they are", () => {
    expect(effectSections({ summary: "", kind: "command", on: "the phone \"Pixel\"", command: "pm clear x" })).toEqual([
      { title: "Where", kind: "facts", content: [{ label: "On", value: 'the phone "Pixel"' }] },
      { title: "Command", kind: "code", content: "pm clear x" },
    ]);
    expect(effectSections({ summary: "", kind: "script", script: "document.title", truncated: false })).toEqual([
      { title: "Script", kind: "code", content: "document.title" },
    ]);
    expect(effectSections({ summary: "", kind: "navigate", url: "https://example.org/" })[0].content).toEqual([
      { label: "URL", value: "https://example.org/" },
    ]);
    expect(effectSections({ summary: "", kind: "device", serial: "emulator-5554", model: null })[0].content).toEqual([
      { label: "Serial", value: "emulator-5554" },
      { label: "Model", value: "not known" },
    ]);
    expect(effectSections({ summary: "", kind: "move", from: "a", to: "b/a" })[0].content).toEqual([
      { label: "From", value: "a" },
      { label: "To", value: "b/a" },
    ]);
  });

  it("leaves out what is not known in a chat send", () => {
    const sections = effectSections({
      summary: "Send a message to a model provider.",
      kind: "chatSend",
      message: null,
      conversation: "Plans",
      provider: null,
      model: null,
      note: "the draft changed since the agent read it; the send will be refused",
    });
    expect(sections).toEqual([
      { title: "Destination", kind: "facts", content: [{ label: "Conversation", value: "Plans" }] },
      { title: "Note", kind: "text", content: "the draft changed since the agent read it; the send will be refused" },
    ]);
  });
});

describe("renderEffect", () => {
  it("colours added and removed lines of a diff", () => {
    const element = mount(renderEffect(write));
    expect(element.classList.contains("effect")).toBe(true);
    expect(element.dataset.kind).toBe("fileWrite");
    const lines = [...element.querySelectorAll(".effect-diff .line")].map((l) => [l.className, l.textContent]);
    expect(lines).toEqual([
      ["line meta", "--- a/notes.txt\n"],
      ["line meta", "+++ b/notes.txt\n"],
      ["line hunk", "@@ -1,2 +1,2 @@\n"],
      ["line same", " one\n"],
      ["line del", "-two\n"],
      ["line add", "+2\n"],
    ]);
  });

  it("classes diff lines", () => {
    expect(["diff --git a b", "index 1..2", "+x", "-y", " z", "… Cut here"].map(diffLineClass)).toEqual([
      "meta",
      "meta",
      "add",
      "del",
      "same",
      "cut",
    ]);
    expect(size(1)).toBe("1 byte");
    expect(size(3 * 1024 * 1024)).toBe("3.0 MB (3,145,728 bytes)");
  });
});
