// The window's calls for a project's documents, files and Git: the control requests the
// `lomi` command sends too, and the two feeds (a document's changes, the file tree's
// changed directories) over Tauri channels.

import { Channel, invoke } from "@tauri-apps/api/core";
import type { Envelope } from "./api";
import type { DocumentEvent } from "./document-sync";

/** Sends one control request; throws its error (with `code`). */
export type Control = <T = unknown>(request: Record<string, unknown>) => Promise<T>;

// Reply shapes generated from the Rust types (src/generated/protocol.ts).
export type {
  DirEntryView as DirEntry,
  DirListView as DirListing,
  DiskState,
  EditorDocumentView as DocumentView,
  GitStatusEntry as GitEntry,
  GitStatusView as GitStatus,
  PersonDocument,
  PersonEdited,
} from "./generated/protocol";
import type { PersonDocument } from "./generated/protocol";

/** A fresh id for one watch, so stopping it never stops a newer one. */
export function watchId(): string {
  return Math.random().toString(36).slice(2, 12);
}

/** Follows a document's changes; resolves the document as it stands when following began. */
export async function documentWatch(
  documentId: string,
  id: string,
  onEvent: (event: DocumentEvent) => void,
): Promise<PersonDocument> {
  const channel = new Channel<DocumentEvent>();
  channel.onmessage = onEvent;
  const reply = await invoke<Envelope<PersonDocument>>("document_watch", { documentId, watchId: id, channel });
  if (reply.status === "error") throw new Error(reply.message);
  return reply.data;
}

/** Follows a project's file tree: `onChanged` gets the directories that changed. */
export async function filesWatch(
  workspaceId: string,
  projectId: string,
  id: string,
  onChanged: (dirs: string[]) => void,
): Promise<void> {
  const channel = new Channel<string[]>();
  channel.onmessage = onChanged;
  await invoke("files_watch", { workspaceId, projectId, watchId: id, channel });
}

/** Adds a directory the person expanded to the project's watch. */
export function filesFollow(projectId: string, path: string): Promise<void> {
  return invoke("files_follow", { projectId, path });
}

/** The window no longer shows the project's tree: its watch ends. */
export function filesUnwatch(projectId: string, id: string): Promise<void> {
  return invoke("files_unwatch", { projectId, watchId: id });
}

/** The window no longer shows the document: its follower ends (the document stays open). */
export function documentUnwatch(documentId: string, id: string): Promise<void> {
  return invoke("document_unwatch", { documentId, watchId: id });
}
