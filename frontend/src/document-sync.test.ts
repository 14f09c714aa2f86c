import { describe, expect, it } from "vitest";
import { DocumentSync, type DocumentEvent } from "./document-sync";
import { apply, rebase, type TextEdit } from "./rebase";

/** The broker's side, with its rules: an agent's edit must be at the current revision, the
 * person's is moved over the changes since its base. Events are delivered when `deliver` runs. */
class Broker {
  text: string;
  revision = 1;
  log: TextEdit[][] = [];
  queue: DocumentEvent[] = [];
  constructor(text: string) {
    this.text = text;
  }
  agentEdit(expected: number, edits: TextEdit[]): void {
    if (expected !== this.revision) throw new Error("REVISION_MISMATCH");
    this.land(edits, "agent", null);
  }
  personEdit(base: number, edits: TextEdit[], session: string): string {
    let moved = edits;
    for (const change of this.log.slice(base - 1)) moved = rebase(moved, change, true);
    this.land(moved, "person", session);
    return String(this.revision);
  }
  private land(edits: TextEdit[], origin: "agent" | "person", session: string | null): void {
    this.text = apply(this.text, edits);
    this.log.push(edits);
    this.revision++;
    this.queue.push({ kind: "changed", documentId: "d", bufferRevision: String(this.revision), edits, origin, session, dirty: true });
  }
}

function editor(broker: Broker) {
  const state = { text: broker.text, remote: [] as string[] };
  const sync: DocumentSync = new DocumentSync(broker.text, "1", false, "window", {
    local: () => state.text,
    applyRemote: (edits, origin) => {
      state.text = apply(state.text, edits);
      state.remote.push(origin);
    },
    // The broker answers later, as the real one does: edits can land meanwhile.
    send: (base, edits) => Promise.resolve().then(() => broker.personEdit(Number(base), edits, "window")),
    onState: () => {},
    onError: (error) => {
      throw error;
    },
  });
  const type = (at: number, text: string) => {
    state.text = apply(state.text, [{ start: at, end: at, text }]);
    sync.changed();
  };
  const deliver = async () => {
    await Promise.resolve();
    while (broker.queue.length) sync.receive(broker.queue.shift()!);
    await Promise.resolve();
  };
  return { state, sync, type, deliver };
}

describe("DocumentSync", () => {
  it("keeps every keystroke typed while an agent edits, and both sides end with one text", async () => {
    const broker = new Broker("fn main() {\n}\n");
    const { state, sync, type, deliver } = editor(broker);
    type(12, "l"); // sent against revision 1
    broker.agentEdit(1, [{ start: 3, end: 7, text: "start" }]);
    expect(() => broker.agentEdit(1, [{ start: 0, end: 0, text: "//" }])).toThrow("REVISION_MISMATCH");
    type(13, "e"); // typed before the agent's edit reached the window
    await deliver();
    type(15, "t");
    for (let i = 0; i < 5; i++) await deliver();
    await sync.flushed();
    expect(state.text).toBe("fn start() {\nlet}\n");
    expect(broker.text).toBe(state.text);
    expect(state.remote).toEqual(["agent"]);
    expect(sync.pending).toBe(false);
  });

  it("applies an agent's edit before the person's unconfirmed text in the same place", async () => {
    const broker = new Broker("ab");
    const { state, sync, type, deliver } = editor(broker);
    broker.agentEdit(1, [{ start: 1, end: 1, text: "A" }]);
    type(1, "P");
    for (let i = 0; i < 4; i++) await deliver();
    await sync.flushed();
    expect([state.text, broker.text]).toEqual(["aAPb", "aAPb"]);
  });
});
