// The window's calls into Lomi: control requests (the same ones `lomi` sends over its local
// socket), the overview stream and terminal streams over Tauri channels.

import { Channel, invoke } from "@tauri-apps/api/core";

// Reply shapes generated from lomi-protocol's Rust types (src/generated/protocol.ts), under the
// names the window's code uses; what is written by hand below is the window's own (the
// overview and its envelopes) or a request.
export type {
  AppInfo,
  AwaitingDecision as Decision,
  BrowserViewMessage as BrowserView,
  Family,
  FeedItem,
  LayoutNode,
  Overview,
  SettingsView as SettingsSections,
  OperationView,
  PairingSummary as Pairing,
  PairingUsage,
  PanelView as Panel,
  PolicyEntry,
  ReconcileReport,
  StoreStatus,
  WarningLevel,
  WorkspaceView as Workspace,
  WriteFailure,
} from "./generated/protocol";
import type { AppInfo, BrowserViewMessage as BrowserView, Family, Overview } from "./generated/protocol";

/** The tool families a person can give a pairing, as the broker names them. */
export const FAMILIES: { name: Family; label: string }[] = [
  { name: "workspace", label: "Workspace and settings" },
  { name: "terminal", label: "Terminals" },
  { name: "files", label: "Project files" },
  { name: "editor", label: "Editor documents" },
  { name: "git", label: "Git" },
  { name: "browser", label: "Browsers" },
  { name: "android", label: "Android" },
  { name: "chat", label: "Chat" },
];

/** Which retry epochs `storeReconcile` retires (`lomi store reconcile --retire …`). */
export type Retire = { idle: Record<string, never> } | { pairing: { pairingId: string } } | { olderThan: { seconds: number } };

/** A control reply: the same envelope as every Lomi answer (`Reply<T>` in lomi-protocol).
 * Written by hand because json-schema-to-typescript makes no generic types: the generated
 * schema has one `Reply…` per data type (the overview's parts), each assignable to this. */
export type Envelope<T> =
  | { controlApiVersion: string; status: "ok"; data: T }
  | { controlApiVersion: string; status: "error"; code: string; message: string };


/** One settings section read by its fields' names, as the preference forms show any section
 * alike (the sections' own types are `SettingsSections`' fields). */
export type SettingsSectionView = { settingsRevision: string } & Record<string, unknown>;

/** The data of an envelope, or `fallback` when it is an error or absent. */
export function dataOr<T>(envelope: Envelope<T> | null | undefined, fallback: T): T {
  return envelope && envelope.status === "ok" ? envelope.data : fallback;
}

export class ControlError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Sends one control request (`{pairingApprove: {...}}`, …); throws the envelope's error. */
export async function control<T = unknown>(request: Record<string, unknown>): Promise<T> {
  const reply = await invoke<Envelope<T>>("control", { request });
  if (reply.status === "error") throw new ControlError(reply.code, reply.message);
  return reply.data;
}

export function appInfo(): Promise<AppInfo> {
  return invoke<AppInfo>("app_info");
}

/** Calls `onOverview` with the whole overview now, then with the parts that changed. */
export async function watch(onOverview: (overview: Partial<Overview>) => void): Promise<void> {
  const channel = new Channel<Partial<Overview>>();
  channel.onmessage = onOverview;
  await invoke("watch", { channel });
}

/** Streams a terminal's output bytes; resolves false when the panel has no terminal. */
export async function terminalAttach(
  panelId: string,
  onBytes: (bytes: Uint8Array) => void,
): Promise<boolean> {
  const channel = new Channel<ArrayBuffer | number[]>();
  channel.onmessage = (message) => onBytes(new Uint8Array(message));
  return invoke<boolean>("terminal_attach", { panelId, channel });
}

/** The person's keystrokes: a takeover of the panel (agents' leases end). */
export async function terminalInput(panelId: string, data: string): Promise<void> {
  const refused = await invoke<string | null>("terminal_input", { panelId, data });
  if (refused) throw new Error(refused);
}

/** The latest capture an agent took of an Android panel, as PNG bytes. */
export async function androidCapture(panelId: string): Promise<Uint8Array<ArrayBuffer>> {
  const bytes = await invoke<ArrayBuffer | number[]>("android_capture", { panelId });
  return new Uint8Array(bytes);
}

/** Streams a browser panel's view whenever it changes; resolves false when no browser runs. */
export async function browserWatch(panelId: string, onView: (view: BrowserView) => void): Promise<boolean> {
  const channel = new Channel<BrowserView>();
  channel.onmessage = onView;
  return invoke<boolean>("browser_watch", { panelId, channel });
}
