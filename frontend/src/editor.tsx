// An editor panel: CodeMirror 6 on a shared document. The person's keystrokes go to the
// broker as changes (document-sync.ts); an agent's edit arriving on the change feed is
// applied as someone else's change, so the cursor and the person's unconfirmed keystrokes
// stay. Shows whether the document is saved, saves the text the person sees, and offers
// "Reload" or "Keep mine" when the file changed on disk.

import { Annotation, EditorState } from "@codemirror/state";
import { EditorView, highlightActiveLine, keymap, lineNumbers } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { useEffect, useRef, useState } from "preact/hooks";
import { ControlError } from "./api";
import { DocumentSync } from "./document-sync";
import { documentUnwatch, documentWatch, watchId, type Control, type DiskState, type PersonDocument, type PersonEdited } from "./project-api";
import type { TextEdit } from "./rebase";

/** Marks a change that came from the broker, not from the person's keys. */
const remote = Annotation.define<string>();

/** CodeMirror counts a line break as one position whatever its characters; the broker
 * counts code points. Converts a broker offset of `text` to CodeMirror's. */
export function editorOffset(text: string, points: number, separator: string): number {
  let offset = 0;
  let n = 0;
  let previous = "";
  for (const ch of text) {
    if (n === points) break;
    offset += ch.length;
    if (separator === "\r\n" && ch === "\n" && previous === "\r") offset -= 1;
    previous = ch;
    n++;
  }
  return offset;
}

function separatorOf(lineEndings: string): string {
  return lineEndings === "crlf" ? "\r\n" : lineEndings === "cr" ? "\r" : "\n";
}

export interface EditorProps {
  workspaceId: string;
  projectId: string;
  /** The project file, relative to its root. */
  path: string;
  control: Control;
  /** Changes when files of the project changed on disk (the tree's watch): the editor checks
   * whether its file is one of them and offers Reload / Keep mine if so. */
  changes?: number;
}

interface Shown {
  revision: string;
  dirty: boolean;
  pending: boolean;
  disk: DiskState;
  closed: boolean;
  /** Who changed it last besides the person (an agent, the file). */
  lastRemote: string | null;
  error: string | null;
  saving: boolean;
}

export function Editor({ workspaceId, projectId, path, control, changes = 0 }: EditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const sync = useRef<DocumentSync | null>(null);
  const documentId = useRef("");
  const [shown, setShown] = useState<Shown>({
    revision: "",
    dirty: false,
    pending: false,
    disk: "same",
    closed: false,
    lastRemote: null,
    error: null,
    saving: false,
  });
  const update = (change: Partial<Shown>) => setShown((old) => ({ ...old, ...change }));

  useEffect(() => {
    let view: EditorView | null = null;
    let gone = false;
    const early: Parameters<DocumentSync["receive"]>[0][] = [];
    const session = `window-${watchId()}`;
    const follower = watchId();
    const refresh = () => {
      const s = sync.current;
      if (!s || gone) return;
      update({ revision: String(s.revision), dirty: s.dirty, pending: s.pending, closed: s.closed });
    };
    const start = async () => {
      const opened = await control<PersonDocument>({ documentOpen: { workspaceId, projectId, path } });
      documentId.current = opened.document.documentId;
      const current = await documentWatch(opened.document.documentId, follower, (event) => {
        if (gone) return;
        if (event.kind === "changed" && event.origin !== "person") update({ lastRemote: event.origin });
        if (event.kind === "lagged") {
          void control<PersonDocument>({ documentGet: { documentId: documentId.current } }).then((doc) =>
            sync.current?.resync(doc.document.text, doc.document.bufferRevision, doc.document.dirty),
          );
          return;
        }
        if (sync.current) sync.current.receive(event);
        else early.push(event);
      });
      if (gone || !host.current) return;
      const separator = separatorOf(current.document.lineEndings);
      view = new EditorView({
        parent: host.current,
        state: EditorState.create({
          doc: current.document.text,
          extensions: [
            EditorState.lineSeparator.of(separator),
            lineNumbers(),
            highlightActiveLine(),
            history(),
            keymap.of([...defaultKeymap, ...historyKeymap]),
            EditorView.lineWrapping,
            EditorView.updateListener.of((u) => {
              if (u.docChanged && !u.transactions.some((t) => t.annotation(remote) !== undefined)) {
                sync.current?.changed();
              }
            }),
          ],
        }),
      });
      const editor = view;
      sync.current = new DocumentSync(current.document.text, current.document.bufferRevision, current.document.dirty, session, {
        local: () => editor.state.doc.toString(),
        applyRemote: (edits: TextEdit[], origin: string) => {
          const text = editor.state.doc.toString();
          editor.dispatch({
            changes: edits.map((e) => ({
              from: editorOffset(text, e.start, separator),
              to: editorOffset(text, e.end, separator),
              insert: e.text,
            })),
            annotations: [remote.of(origin)],
          });
        },
        send: (base, edits) =>
          control<PersonEdited>({
            documentEdit: { documentId: documentId.current, expectedBufferRevision: base, edits, session },
          }).then((r) => r.bufferRevision),
        onState: refresh,
        onError: (error) => update({ error: `Your edit was not sent: ${error.message}` }),
      });
      for (const event of early.splice(0)) sync.current.receive(event);
      update({ disk: current.disk });
      refresh();
    };
    start().catch((error: Error) => update({ error: error.message }));
    return () => {
      gone = true;
      sync.current = null;
      view?.destroy();
      if (documentId.current) documentUnwatch(documentId.current, follower).catch(() => {});
    };
  }, [workspaceId, projectId, path]);

  useEffect(() => {
    if (changes === 0 || !documentId.current) return;
    control<PersonDocument>({ documentGet: { documentId: documentId.current } })
      .then((now) => update({ disk: now.disk }))
      .catch(() => {});
  }, [changes]);

  const save = async (overwrite: boolean) => {
    const s = sync.current;
    if (!s) return;
    update({ saving: true, error: null });
    try {
      for (let attempt = 0; ; attempt++) {
        await s.flushed();
        try {
          await control({ documentSave: { documentId: documentId.current, expectedBufferRevision: String(s.revision), overwrite } });
          update({ disk: "same" });
          return;
        } catch (error) {
          if (!(error instanceof ControlError) || error.code !== "REVISION_MISMATCH") throw error;
          const now = await control<PersonDocument>({ documentGet: { documentId: documentId.current } });
          if (now.disk !== "same") {
            update({ disk: now.disk });
            return;
          }
          // An agent edited between the last keystroke and the save: save the text after it.
          if (attempt >= 3) throw error;
        }
      }
    } catch (error) {
      update({ error: `Not saved: ${(error as Error).message}` });
    } finally {
      update({ saving: false });
    }
  };

  const reload = async () => {
    try {
      await control({ documentReload: { documentId: documentId.current } });
      update({ disk: "same", error: null });
    } catch (error) {
      update({ error: `Not reloaded: ${(error as Error).message}` });
    }
  };

  return (
    <div class="editor-panel" data-path={path} data-revision={shown.revision} data-dirty={String(shown.dirty)}>
      <div class="editor-head">
        <span class="editor-path">{path}</span>
        {shown.dirty ? (
          <span class="dirty" title="Not saved">
            ● Unsaved
          </span>
        ) : (
          <span class="clean">Saved</span>
        )}
        {shown.lastRemote ? <span class="remote-note">edited by {shown.lastRemote === "disk" ? "the file on disk" : "an agent"}</span> : null}
        <span class="revision">rev {shown.revision}</span>
        <button class="save primary small" disabled={shown.saving || shown.closed || !shown.dirty} onClick={() => void save(false)}>
          Save
        </button>
      </div>
      {shown.disk !== "same" ? (
        <div class="disk-conflict" role="alert">
          {shown.disk === "deleted" ? `${path} was deleted on disk.` : `${path} changed on disk since it was opened or saved.`}
          <button class="reload small" onClick={() => void reload()}>
            Reload
          </button>
          <button class="keep-mine small" onClick={() => void save(true)}>
            Keep mine
          </button>
        </div>
      ) : null}
      {shown.closed ? <div class="editor-error">This document was closed.</div> : null}
      {shown.error ? <div class="editor-error">{shown.error}</div> : null}
      <div class="editor-host" ref={host} />
    </div>
  );
}
