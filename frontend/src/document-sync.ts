// Keeping the person's editor and a shared document together. The editor is never blocked:
// the person's text is what they see, and what they typed since the last text the broker
// confirmed is sent as one change against that text's bufferRevision, one change in flight
// at a time. The broker moves a late change over the edits made meanwhile (an agent's), so
// nothing is refused for being late. An agent's edit arriving on the change feed is moved
// over what the person typed and not yet confirmed, and applied to the editor as it is, so
// the cursor and pending keystrokes stay.

import type { DocumentFeedMessage } from "./generated/protocol";
import { apply, diff, rebase, type TextEdit } from "./rebase";

/** What the document feed sends: one document's change feed event (`DocumentEvent` in
 * lomi-protocol), or `{kind: "lagged"}` when the window fell behind. */
export type DocumentEvent = DocumentFeedMessage;

export interface SyncHooks {
  /** The editor's text now. */
  local(): string;
  /** Applies `edits` (offsets of the editor's text now) to the editor as someone else's. */
  applyRemote(edits: TextEdit[], origin: string): void;
  /** Sends the person's change made on the text at `base`; resolves the new bufferRevision. */
  send(base: string, edits: TextEdit[]): Promise<string>;
  /** The sync's state changed (revision, dirty, pending). */
  onState(): void;
  /** A send failed: the person's text stays; the component reads the document again. */
  onError(error: Error): void;
}

export class DocumentSync {
  /** The text at `revision`, as the broker has it. */
  private shadow: string;
  revision: number;
  /** The broker's dirty flag at `revision`. */
  private savedDirty: boolean;
  private inFlight: Promise<void> | null = null;
  /** The revision the change in flight landed at, once its reply came. */
  private awaiting: number | null = null;
  private waiters: (() => void)[] = [];
  closed = false;

  constructor(
    text: string,
    revision: string,
    dirty: boolean,
    readonly session: string,
    private hooks: SyncHooks,
  ) {
    this.shadow = text;
    this.revision = Number(revision);
    this.savedDirty = dirty;
  }

  /** Unsaved: the broker's text differs from the file, or the person typed since. */
  get dirty(): boolean {
    return this.savedDirty || this.pending;
  }

  /** The person typed something the broker has not confirmed yet. */
  get pending(): boolean {
    return this.inFlight !== null || this.hooks.local() !== this.shadow;
  }

  /** The editor's text changed by the person. */
  changed(): void {
    this.hooks.onState();
    if (!this.inFlight) this.push();
  }

  private push(): void {
    const edits = diff(this.shadow, this.hooks.local());
    if (edits.length === 0 || this.closed) {
      this.settle();
      return;
    }
    this.inFlight = this.hooks
      .send(String(this.revision), edits)
      .then((landed) => {
        this.awaiting = Number(landed);
        this.advance();
      })
      .catch((error: Error) => {
        this.inFlight = null;
        this.awaiting = null;
        this.hooks.onError(error);
        this.settle();
      });
  }

  /** Once the feed reached the revision our change landed at, the next change may go. */
  private advance(): void {
    if (this.awaiting === null || this.revision < this.awaiting) return;
    this.awaiting = null;
    this.inFlight = null;
    this.push();
  }

  private settle(): void {
    this.hooks.onState();
    if (!this.pending) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Resolves once everything the person typed is in the broker's text. */
  flushed(): Promise<void> {
    if (!this.pending) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** One event of the document's change feed. */
  receive(event: DocumentEvent): void {
    if (event.kind === "closed") {
      this.closed = true;
      this.hooks.onState();
      return;
    }
    if (event.kind === "lagged") return;
    const revision = Number(event.bufferRevision);
    if (event.kind === "saved") {
      if (revision === this.revision) this.savedDirty = event.dirty;
      this.hooks.onState();
      return;
    }
    if (revision !== this.revision + 1) return;
    if (event.origin === "person" && event.session === this.session) {
      // Ours, as it landed: the editor has it already.
      this.shadow = apply(this.shadow, event.edits);
    } else {
      this.foreign(event.edits, event.origin);
    }
    this.revision = revision;
    this.savedDirty = event.dirty;
    this.advance();
    this.hooks.onState();
  }

  /** The document as read again (after the feed lagged): taken as one change from the text. */
  resync(text: string, revision: string, dirty: boolean): void {
    this.foreign(diff(this.shadow, text), "disk");
    this.revision = Number(revision);
    this.savedDirty = dirty;
    this.hooks.onState();
  }

  private foreign(edits: TextEdit[], origin: string): void {
    const mine = diff(this.shadow, this.hooks.local());
    const moved = rebase(edits, mine, false);
    if (moved.length > 0) this.hooks.applyRemote(moved, origin);
    this.shadow = apply(this.shadow, edits);
  }
}
