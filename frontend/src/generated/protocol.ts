// Generated from lomi-protocol's Rust types by generate-types.mjs (json-schema-to-typescript):
// do not edit. The schema is src/generated/protocol.schema.json.

/**
 * What one operation will do: a sentence, then what exactly.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Effect".
 */
export type Effect = {
  /**
   * One sentence a person reads first: "Overwrite notes.txt (+2 −1 lines)".
   */
  summary: string;
} & Effect1;
export type Effect1 =
  | {
      binary: boolean;
      /**
       * No file there now: it will be created.
       */
      creates: boolean;
      /**
       * `None` for a binary file, or when the file on disk could not be read (`note`).
       */
      diff: string | null;
      kind: "fileWrite";
      /**
       * Why part of the effect could not be shown.
       */
      note: string | null;
      path: string;
      sizeAfter: number;
      /**
       * The size on disk now (`None`: no file, or unreadable).
       */
      sizeBefore: number | null;
      truncated: boolean;
    }
  | {
      binary: boolean;
      firstLines: string | null;
      kind: "fileDelete";
      note: string | null;
      path: string;
      size: number | null;
      truncated: boolean;
    }
  | {
      from: string;
      kind: "move";
      to: string;
    }
  | {
      files: string[];
      kind: "commit";
      message: string;
      note: string | null;
      stagedDiff: string | null;
      truncated: boolean;
    }
  | {
      action: string;
      files: string[];
      kind: "git";
    }
  | {
      into: string;
      kind: "typed";
      text: string;
    }
  | {
      command: string;
      kind: "command";
      on: string;
    }
  | {
      kind: "script";
      script: string;
      truncated: boolean;
    }
  | {
      kind: "navigate";
      url: string;
    }
  | {
      conversation: string | null;
      kind: "chatSend";
      message: string | null;
      model: string | null;
      note: string | null;
      provider: string | null;
    }
  | {
      kind: "device";
      model: string | null;
      serial: string;
    }
  | {
      facts: Fact[];
      kind: "change";
    };
/**
 * The kinds of subject a rule's pattern can name.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "SubjectKind".
 */
export type SubjectKind = "paths" | "url" | "command" | "package";
/**
 * What a rule says of the calls it matches.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Verdict".
 */
export type Verdict = "allow" | "ask" | "deny";
/**
 * What the desktop app's `browser_watch` channel sends: a view, or `{"ended": true}` once the
 * panel's browser is gone (nothing follows it).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "BrowserViewMessage".
 */
export type BrowserViewMessage = BrowserView | BrowserEnded;
/**
 * Who wrote a message.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ChatRole".
 */
export type ChatRole = "user" | "assistant";
/**
 * Where a message stands: a reply is `streaming` while it arrives; one `cancelled`, `failed`
 * (by the provider) or `interrupted` (Lomi stopped; never resent) part-way keeps what arrived.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "MessageState".
 */
export type MessageState = "complete" | "streaming" | "cancelled" | "failed" | "interrupted";
/**
 * The person's answer to a waiting operation.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Decision".
 */
export type Decision = "approved" | "denied";
/**
 * What the window's document feed sends: an event of the document it follows, or that it fell
 * behind the feed (then it reads the document again).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "DocumentFeedMessage".
 */
export type DocumentFeedMessage = DocumentEvent | FeedLagged;
/**
 * What happened to an open document: the person's change feed, one event per change in
 * `bufferRevision` order, so the window shows an agent's edit as it is made.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "DocumentEvent".
 */
export type DocumentEvent =
  | {
      bufferRevision: string;
      dirty: boolean;
      documentId: string;
      edits: TextEdit[];
      kind: "changed";
      origin: ChangeOrigin;
      /**
       * The person's editor that made it (what it sent as `session`).
       */
      session: string | null;
    }
  | {
      bufferRevision: string;
      dirty: boolean;
      diskRevision: string;
      documentId: string;
      kind: "saved";
    }
  | {
      documentId: string;
      kind: "closed";
    };
/**
 * Who made a change to a shared document: an agent (`lomi_editor_edit`), the person (the
 * window or `lomi document edit`), or the file on disk (the person's reload).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ChangeOrigin".
 */
export type ChangeOrigin = "agent" | "person" | "disk";
/**
 * `{"kind": "lagged"}`: the window fell behind the document feed and missed events.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "FeedLagged".
 */
export type FeedLagged = {
  kind: "lagged";
};
/**
 * What the effect of an operation reached, independent of its state.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "EffectState".
 */
export type EffectState = "none" | "partial" | "complete" | "unknown";
/**
 * Where an operation is in its life. The last four are settled and never change again.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "OperationState".
 */
export type OperationState =
  "queued" | "awaiting_user" | "running" | "cancelling" | "succeeded" | "failed" | "cancelled" | "outcome_unknown";
/**
 * Exactly one of `split` (two or more nodes side by side or stacked) or `tabs` (one or more panel ids).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "LayoutNode".
 */
export type LayoutNode =
  | {
      split: {
        /**
         * @minItems 2
         */
        children: LayoutNode[];
        direction: "row" | "column";
      };
    }
  | {
      tabs: {
        /**
         * @minItems 1
         */
        panels: string[];
      };
    };
/**
 * `operationShow`'s reply: the receipt, with the states a live one went through, and for an
 * `outcome_unknown` one what to look at before doing anything again.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "OperationShown".
 */
export type OperationShown = OperationShown1 & {
  /**
   * What decided it: `default` (the tool's "ask me before"), `rule:<id>`, `person` or
   * `remembered`; absent on receipts older than the record.
   */
  decidedBy?: string | null;
  /**
   * For an `outcome_unknown` receipt: what to look at for its tool's family.
   */
  recovery?: string | null;
  /**
   * The states a live receipt went through, as the event feed still holds them.
   */
  timeline?: StateChange[] | null;
};
export type OperationShown1 = OperationView | ArchivedReceipt;
/**
 * Every error code Lomi answers with. The wire name is the SCREAMING_SNAKE_CASE variant name.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ErrorCode".
 */
export type ErrorCode =
  | "PAIRING_REQUIRED"
  | "PAIRING_DENIED"
  | "PAIRING_REVOKED"
  | "NOT_FOUND"
  | "INVALID_ARGUMENT"
  | "REVISION_MISMATCH"
  | "IDEMPOTENCY_CONFLICT"
  | "RETRY_EPOCH_INVALID"
  | "RETRY_EPOCH_EXPIRED"
  | "LEASE_REQUIRED"
  | "LEASE_EXPIRED"
  | "GENERATION_MISMATCH"
  | "SNAPSHOT_STALE"
  | "SEQUENCE_CONFLICT"
  | "SEQUENCE_GAP"
  | "RESOURCE_EXHAUSTED"
  | "RESOURCE_BUSY"
  | "RUNTIME_UNAVAILABLE"
  | "STORE_UNAVAILABLE"
  | "USER_DENIED"
  | "PAUSED"
  | "PERSON_ONLY"
  | "UNSUPPORTED"
  | "CURSOR_EXPIRED"
  | "NO_SPACE"
  | "OUTCOME_UNKNOWN"
  | "PROVIDER_AUTH"
  | "PROVIDER_RATE_LIMITED"
  | "PROVIDER_MODEL_NOT_FOUND"
  | "PROVIDER_REJECTED"
  | "PROVIDER_UNAVAILABLE"
  | "INTERNAL";
/**
 * Why a receipt moved to the history: its retry epoch was retired, or it expired.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ArchiveReason".
 */
export type ArchiveReason = "retired" | "expired";
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply4".
 */
export type Reply4 =
  | {
      controlApiVersion: ApiVersion;
      data: AwaitingDecision[];
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ApiVersion".
 */
export type ApiVersion = "1.0";
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply5".
 */
export type Reply5 =
  | {
      controlApiVersion: ApiVersion;
      data: FeedItem[];
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply3".
 */
export type Reply3 =
  | {
      controlApiVersion: ApiVersion;
      data: PairingSummary[];
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * How a pairing proves itself on later calls.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PairingCredential".
 */
export type PairingCredential = "session" | "token" | "oauth";
/**
 * A family of tools the person lets a pairing see. `tools/list` shows a pairing its families'
 * tools and the session tools (those of no family: pairing status, workspace and panel lists,
 * connect, operations, events, store status); a tool of a family it was not given answers as
 * unknown.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Family".
 */
export type Family = "workspace" | "terminal" | "files" | "editor" | "git" | "browser" | "android" | "chat";
/**
 * Where a pairing stands with the person.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PairingState".
 */
export type PairingState = ("approved" | "denied" | "revoked") | "pending";
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply2".
 */
export type Reply2 =
  | {
      controlApiVersion: ApiVersion;
      data: PanelView[];
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * What a panel shows.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PanelKind".
 */
export type PanelKind = "terminal" | "browser" | "android" | "document";
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply6".
 */
export type Reply6 =
  | {
      controlApiVersion: ApiVersion;
      data: PolicyEntry[];
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply7".
 */
export type Reply7 =
  | {
      controlApiVersion: ApiVersion;
      data: SettingsView;
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * A model provider's protocol.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ProviderKind".
 */
export type ProviderKind = "openai_compatible" | "anthropic";
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply8".
 */
export type Reply8 =
  | {
      controlApiVersion: ApiVersion;
      data: StoreStatus;
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * The store's warning level: 75 % of a cap (`warning`), 90 % (`critical`), at a cap (`full`);
 * ordered lowest first.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "WarningLevel".
 */
export type WarningLevel = "none" | "warning" | "critical" | "full";
/**
 * `{controlApiVersion:"1.0", status:"ok", data}` or
 * `{controlApiVersion:"1.0", status:"error", code, message, details?}`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Reply".
 */
export type Reply =
  | {
      controlApiVersion: ApiVersion;
      data: WorkspaceView[];
      status: "ok";
    }
  | {
      code: ErrorCode;
      controlApiVersion: ApiVersion;
      details?: unknown;
      message: string;
      status: "error";
    };
/**
 * The file behind a document compared with the bytes it was opened with or last saved.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "DiskState".
 */
export type DiskState = ("same" | "deleted") | "changed";
/**
 * A settings section.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "SettingsSection".
 */
export type SettingsSection =
  "terminal" | "browser" | "editor" | "chat" | "providers" | "pairings" | "confirmations" | "rules" | "network";
/**
 * How lines end.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "LineEndings".
 */
export type LineEndings = "lf" | "crlf";

/**
 * Reply shapes Lomi's window reads; generated by lomi-protocol (schema::window_types).
 */
export interface LomiWindowTypes {
  activityView?: ActivityView;
  appInfo?: AppInfo;
  awaitingDecision?: AwaitingDecision;
  browserViewMessage?: BrowserViewMessage;
  chatList?: ChatList;
  conversationView?: ConversationView;
  decided?: Decided;
  dirListView?: DirListView;
  documentFeedMessage?: DocumentFeedMessage;
  draftUpdated?: DraftUpdated;
  editorDocumentView?: EditorDocumentView;
  editorSaved?: EditorSaved;
  feedItem?: FeedItem;
  gitCommitted?: GitCommitted;
  gitDiffView?: GitDiffView;
  gitStatusView?: GitStatusView;
  layoutNode?: LayoutNode;
  operationShown?: OperationShown;
  operationView?: OperationView;
  overview?: Overview;
  pairingSummary?: PairingSummary;
  panelView?: PanelView;
  personDocument?: PersonDocument;
  personEdited?: PersonEdited;
  policyEntry?: PolicyEntry;
  reconcileReport?: ReconcileReport;
  ruleTested?: RuleTested;
  rulesView?: RulesView;
  settingsUpdated?: SettingsUpdated;
  settingsView?: SettingsView;
  stateChange?: StateChange;
  storeStatus?: StoreStatus;
  textEdit?: TextEdit;
  workspaceView?: WorkspaceView;
}
/**
 * `activity`'s reply.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ActivityView".
 */
export interface ActivityView {
  agents: AgentActivity[];
  /**
   * When this Lomi started: calls, call times and call errors count from then.
   */
  since: string;
}
/**
 * What one agent did (`activity`): calls from this start, operations from the receipts.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "AgentActivity".
 */
export interface AgentActivity {
  calls: number;
  clientName: string;
  /**
   * What decided its operations: `default`, `rule:<id>`, `person`, `remembered`.
   */
  decidedBy: Counted[];
  /**
   * Operations refused (`USER_DENIED`), by who refused: `person`, `rule:<id>`,
   * `remembered`.
   */
  denials: Counted[];
  /**
   * Failed operations and refused calls, by error code.
   */
  errorsByCode: Counted[];
  /**
   * The last 24 hours, oldest first (hours with nothing left out).
   */
  hours: HourActivity[];
  lastSeen: string | null;
  operations: number;
  /**
   * Operations by how they ended or stand (`succeeded`, `failed`, `awaiting_user`, …).
   */
  operationsByState: Counted[];
  pairingId: string;
  paused: boolean;
  tools: ToolActivity[];
}
/**
 * A count of something, by what it is called.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Counted".
 */
export interface Counted {
  count: number;
  name: string;
}
/**
 * Calls and operations in one hour.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "HourActivity".
 */
export interface HourActivity {
  calls: number;
  hourStart: string;
  operations: number;
}
/**
 * One tool's use by one agent (`activity`).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ToolActivity".
 */
export interface ToolActivity {
  /**
   * Calls since Lomi started (reads and changes), and how many answered with an error.
   */
  calls: number;
  errors: number;
  /**
   * Operations (receipts, kept and in the history).
   */
  operations: number;
  /**
   * Call times since Lomi started, in milliseconds (absent with no calls).
   */
  p50Ms: number | null;
  p95Ms: number | null;
  tool: string;
}
/**
 * The desktop app's Lomi: where it listens and keeps its data (the window's Settings shows
 * the client configs from it).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "AppInfo".
 */
export interface AppInfo {
  brokerInstanceId: string;
  dataDir: string;
  url: string;
  version: string;
}
/**
 * An operation waiting for the person's decision, with exactly what it will do
 * (`decisionList`).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "AwaitingDecision".
 */
export interface AwaitingDecision {
  /**
   * The tool's whole input, as the agent sent it (an object).
   */
  arguments: {
    [k: string]: unknown;
  };
  createdAt: string;
  /**
   * What made it wait: `default` (the tool's "ask me before") or `rule:<id>`.
   */
  decidedBy: string;
  effect: Effect;
  operationId: string;
  pairingId: string;
  projectId: string | null;
  suggestedRule: RuleDraft;
  tool: string;
  workspaceId: string;
}
/**
 * One label and value of a [`EffectDetail::Change`].
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Fact".
 */
export interface Fact {
  label: string;
  value: string;
}
/**
 * A rule as the person writes it (`lomi rule add`, the window's Settings → Rules, or the
 * "always" choices of a decision): every field but the verdict optional.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RuleDraft".
 */
export interface RuleDraft {
  /**
   * Only this agent's calls; absent for every agent.
   */
  agent?: string | null;
  /**
   * The rule no longer applies from this time on.
   */
  expiresAt?: string | null;
  /**
   * Only calls whose subject matches; absent for any subject.
   */
  subject?: RuleSubject | null;
  /**
   * `*` for every tool, a family (`files`), or one tool (`lomi_file_write`).
   */
  tools: string;
  verdict: Verdict;
  /**
   * Only calls in this workspace; absent for every workspace.
   */
  workspace?: string | null;
}
/**
 * A rule's subject pattern as written.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RuleSubject".
 */
export interface RuleSubject {
  kind: SubjectKind;
  pattern: string;
}
/**
 * A browser panel as the person's window shows it: its active tab's address and title and a
 * JPEG of the viewport (the desktop app's `browser_watch` channel).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "BrowserView".
 */
export interface BrowserView {
  generation: string;
  /**
   * The viewport as a JPEG, base64; absent while there is nothing to show.
   */
  jpegBase64: string | null;
  /**
   * Why there is no image (the browser is gone, a dialog is open, …).
   */
  note: string | null;
  tabId: string | null;
  title: string;
  url: string;
}
/**
 * `{"ended": true}`: the panel's browser is gone.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "BrowserEnded".
 */
export interface BrowserEnded {
  ended: true;
}
/**
 * `lomi_chat_list` output, most recently changed first.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ChatList".
 */
export interface ChatList {
  conversations: ConversationSummary[];
}
/**
 * One conversation, without its messages.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ConversationSummary".
 */
export interface ConversationSummary {
  conversationId: string;
  conversationRevision: string;
  draftRevision: string;
  messageCount: number;
  title: string;
  workspaceId: string;
}
/**
 * `lomi_chat_get` output: a page of messages.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ConversationView".
 */
export interface ConversationView {
  conversationId: string;
  conversationRevision: string;
  draft: Draft;
  draftRevision: string;
  messageCount: number;
  messages: ChatMessage[];
  /**
   * Pass as afterSeq for the next page; absent at the end.
   */
  nextSeq?: number | null;
  title: string;
  workspaceId: string;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Draft".
 */
export interface Draft {
  draftRevision: string;
  text: string;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ChatMessage".
 */
export interface ChatMessage {
  createdAt: string;
  inputTokens?: number | null;
  model?: string | null;
  outputTokens?: number | null;
  provider?: string | null;
  role: ChatRole;
  seq: number;
  state: MessageState;
  text: string;
  /**
   * The text was cut at maxBytes.
   */
  truncated?: boolean;
  updatedAt: string;
}
/**
 * `decide`'s reply.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Decided".
 */
export interface Decided {
  decision: Decision;
  operationId: string;
  /**
   * The rule the person saved with the decision ("approve and always allow …").
   */
  rule?: RuleRecord | null;
}
/**
 * A kept rule: the draft with its id and when it was made.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RuleRecord".
 */
export interface RuleRecord {
  /**
   * Only this agent's calls; absent for every agent.
   */
  agent?: string | null;
  createdAt: string;
  /**
   * The rule no longer applies from this time on.
   */
  expiresAt?: string | null;
  ruleId: string;
  /**
   * Only calls whose subject matches; absent for any subject.
   */
  subject?: RuleSubject | null;
  /**
   * `*` for every tool, a family (`files`), or one tool (`lomi_file_write`).
   */
  tools: string;
  verdict: Verdict;
  /**
   * Only calls in this workspace; absent for every workspace.
   */
  workspace?: string | null;
}
/**
 * `lomi_dir_list` output, sorted by name.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "DirListView".
 */
export interface DirListView {
  /**
   * Changes exactly when the listing (any page) changes.
   */
  directoryRevision: string;
  entries: DirEntryView[];
  nextOffset: number | null;
  path: string;
  total: number;
}
/**
 * One directory entry.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "DirEntryView".
 */
export interface DirEntryView {
  /**
   * Changes when the entry changes (from its metadata; not the content hash).
   */
  entryRevision: string;
  /**
   * file, dir, symlink or other.
   */
  kind: string;
  name: string;
  size: number;
}
/**
 * Characters start..end become text; a CRLF counts as two.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "TextEdit".
 */
export interface TextEdit {
  end: number;
  start: number;
  text: string;
}
/**
 * The confirmed result of `lomi_chat_draft_update`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "DraftUpdated".
 */
export interface DraftUpdated {
  conversationId: string;
  draftRevision: string;
}
/**
 * An open document as it stands.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "EditorDocumentView".
 */
export interface EditorDocumentView {
  /**
   * Decimal counter of the text; every edit (yours or the person's) raises it.
   */
  bufferRevision: string;
  /**
   * True when the text differs from what was opened or last saved.
   */
  dirty: boolean;
  /**
   * SHA-256 of the file's bytes when it was opened or last saved.
   */
  diskRevision: string;
  documentId: string;
  /**
   * utf8 or utf8_bom (the BOM is not part of `text`; saving writes it back).
   */
  encoding: string;
  /**
   * lf, crlf, cr, mixed or none, as found at open; `text` keeps them exactly.
   */
  lineEndings: string;
  path: string;
  text: string;
}
/**
 * The confirmed result of a save.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "EditorSaved".
 */
export interface EditorSaved {
  bufferRevision: string;
  /**
   * The file's new disk revision.
   */
  diskRevision: string;
  documentId: string;
  path: string;
  size: number;
}
/**
 * One of the newest operations with the client that made it (`feed`, the window's feed).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "FeedItem".
 */
export interface FeedItem {
  clientName: string | null;
  effectState: EffectState;
  errorCode: string | null;
  operationId: string;
  pairingId: string;
  state: OperationState;
  tool: string;
  updatedAt: string;
  workspaceId: string | null;
  workspaceName: string | null;
}
/**
 * The confirmed result of `lomi_git_commit`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "GitCommitted".
 */
export interface GitCommitted {
  /**
   * The new commit's full SHA (the new HEAD).
   */
  commit: string;
  /**
   * The previous HEAD; absent for the first commit of a branch.
   */
  parent: string | null;
  /**
   * How to take it back.
   */
  undo: string;
}
/**
 * `lomi_git_diff` output: a unified diff.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "GitDiffView".
 */
export interface GitDiffView {
  /**
   * The unified diff (invalid UTF-8 replaced); empty when nothing differs.
   */
  diff: string;
  /**
   * True when the diff was longer than `maxBytes` and was cut.
   */
  truncated: boolean;
}
/**
 * `lomi_git_status` output.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "GitStatusView".
 */
export interface GitStatusView {
  /**
   * The current branch; absent when HEAD is detached.
   */
  branch: string | null;
  /**
   * True when there is nothing to commit and nothing untracked.
   */
  clean: boolean;
  /**
   * Changed, staged and untracked paths (ignored files are not listed).
   */
  entries: GitStatusEntry[];
  /**
   * The HEAD commit's full SHA; absent on an unborn branch. Pass it as
   * `expectedHeadRevision` to commit ("" when absent).
   */
  head: string | null;
}
/**
 * One changed path of `lomi_git_status`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "GitStatusEntry".
 */
export interface GitStatusEntry {
  /**
   * The staged change: unmodified, modified, added, deleted, renamed, copied, type_changed,
   * unmerged or untracked.
   */
  index: string;
  /**
   * Relative to the project root (the new path of a rename).
   */
  path: string;
  /**
   * The unstaged change in the working tree, with the same words as `index`.
   */
  worktree: string;
}
/**
 * A receipt as its connection sees it. `operationId` acknowledges admission only: read
 * `state`, `effectState` and `result` before trusting an effect.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "OperationView".
 */
export interface OperationView {
  createdAt: string;
  effectState: EffectState;
  /**
   * Why it failed, was cancelled or is unknown.
   */
  error: OperationError | null;
  operationId: string;
  projectId: string | null;
  requestKey: string;
  result: unknown;
  retryEpoch: string;
  settledAt: string | null;
  state: OperationState;
  tool: string;
  updatedAt: string;
  workspaceId: string | null;
}
/**
 * The failure recorded on a receipt.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "OperationError".
 */
export interface OperationError {
  code: ErrorCode;
  message: string;
}
/**
 * One receipt in the history: everything the live receipt held, its trail, and when and why
 * it moved (`operationHistory`; a line of `lomi operation export --history`).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ArchivedReceipt".
 */
export interface ArchivedReceipt {
  archivedAt: string;
  archivedBecause: ArchiveReason;
  createdAt: string;
  effectState: EffectState;
  errorCode: string | null;
  errorMessage: string | null;
  fingerprint: string;
  historySeq: number;
  operationId: string;
  pairingId: string;
  projectId: string | null;
  requestKey: string;
  result: unknown;
  retryEpoch: string;
  settledAt: string | null;
  state: OperationState;
  tool: string;
  trail: StateChange[];
  updatedAt: string;
  workspaceId: string | null;
}
/**
 * A state an operation went through, and when.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "StateChange".
 */
export interface StateChange {
  at: string;
  effectState: EffectState;
  state: OperationState;
}
/**
 * What the desktop app's overview channel sends: the whole overview first, then only the
 * parts that changed (an absent part is unchanged). Each part is the envelope its control
 * request answers (`workspaceList`, `pairingList`, …), except `panels` (workspace id → its
 * `panelList`), `captures` (Android panel id → its latest capture's sequence, which says when
 * to fetch it) and `chat` (how often Chat changed: the window reads its conversations again
 * when it moves).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Overview".
 */
export interface Overview {
  captures?: {
    [k: string]: number;
  } | null;
  chat?: number | null;
  decisions?: Reply4 | null;
  feed?: Reply5 | null;
  pairings?: Reply3 | null;
  panels?: {
    [k: string]: Reply2;
  } | null;
  policy?: Reply6 | null;
  settings?: Reply7 | null;
  store?: Reply8 | null;
  workspaces?: Reply | null;
}
/**
 * A pairing as the person sees it in a list (`pairingList`).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PairingSummary".
 */
export interface PairingSummary {
  clientName: string;
  createdAt: string;
  credential: PairingCredential;
  /**
   * When the person approved, denied or revoked it.
   */
  decidedAt: string | null;
  /**
   * The tool families it sees; null is every family.
   */
  families: Family[] | null;
  grants: string[];
  /**
   * The last call this pairing made on this broker instance (not kept across restarts).
   */
  lastActiveAt: string | null;
  pairingId: string;
  /**
   * The families its client asked for, if it said (the approval starts from them).
   */
  requestedFamilies: Family[] | null;
  /**
   * How a client that signs in (OAuth) identified itself; null for tokens and sessions.
   */
  signIn: SignInClient | null;
  state: PairingState;
  verificationCode: string;
}
/**
 * How a client that signs in identified itself, for the person deciding.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "SignInClient".
 */
export interface SignInClient {
  /**
   * The https URL of the client ID metadata document its name and redirect addresses came
   * from; null when it registered itself with Lomi (its name is then its own say).
   */
  metadataUrl: string | null;
  /**
   * The host its sign-in sends the browser back to (127.0.0.1 or localhost for an app on
   * this computer).
   */
  redirectHost: string;
}
/**
 * One panel of a workspace.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PanelView".
 */
export interface PanelView {
  /**
   * The current runtime generation, when the panel has a live runtime.
   */
  generation: string | null;
  kind: PanelKind;
  panelId: string;
  projectId: string | null;
  title: string;
}
/**
 * One mutating tool and whether it waits for the person's decision (`policyList`).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PolicyEntry".
 */
export interface PolicyEntry {
  confirm: boolean;
  family: Family | null;
  /**
   * Its family in plain words ("Project files").
   */
  familyLabel: string;
  /**
   * The tool in plain words ("Delete files").
   */
  label: string;
  tool: string;
}
/**
 * `lomi_settings_get` output: the sections asked for.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "SettingsView".
 */
export interface SettingsView {
  browser?: BrowserSettings | null;
  chat?: ChatSettings | null;
  confirmations?: ConfirmationsSettings | null;
  editor?: EditorSettings | null;
  network?: NetworkSettings | null;
  /**
   * Only your own pairing and its grants (the person sees all).
   */
  pairings?: PairingsSettings | null;
  providers?: ProvidersSettings | null;
  rules?: RulesSettings | null;
  terminal?: TerminalSettings | null;
}
/**
 * New browsers' defaults (lomi_browser_create, lomi_browser_wait).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "BrowserSettings".
 */
export interface BrowserSettings {
  /**
   * lomi_browser_wait's timeoutMs when omitted, 1 to 60000.
   */
  defaultWaitMs: number;
  /**
   * Whether captures are deterministic unless a call says otherwise.
   */
  deterministicCaptures: boolean;
  /**
   * Whether a new workspace keeps one persistent browser profile (person-only).
   */
  persistentProfileDefault: boolean;
  settingsRevision: string;
  viewport: Viewport;
}
export interface Viewport {
  height: number;
  width: number;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ChatSettings".
 */
export interface ChatSettings {
  defaultModel: string;
  /**
   * A provider's name, or "".
   */
  defaultProvider: string;
  settingsRevision: string;
  systemPrompt: string;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ConfirmationsSettings".
 */
export interface ConfirmationsSettings {
  /**
   * Tools whose operations wait for the person's decision (awaiting_user).
   */
  confirmTools: string[];
  settingsRevision: string;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "EditorSettings".
 */
export interface EditorSettings {
  /**
   * How lines end.
   */
  lineEndings: "lf" | "crlf";
  settingsRevision: string;
  /**
   * 1 to 16.
   */
  tabWidth: number;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "NetworkSettings".
 */
export interface NetworkSettings {
  /**
   * Where Lomi serves MCP over HTTP ("" before it started serving).
   */
  mcpUrl: string;
  /**
   * An HTTP client without a token may pair for its MCP session only (pending until the
   * person approves it, ended with the session). Off: it is answered 401 and signs in.
   */
  sessionPairing: boolean;
  settingsRevision: string;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PairingsSettings".
 */
export interface PairingsSettings {
  pairings: PairingSetting[];
  settingsRevision: string;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PairingSetting".
 */
export interface PairingSetting {
  /**
   * It sees every family, including ones a later Lomi adds.
   */
  allFamilies: boolean;
  clientName: string;
  /**
   * The tool families it sees (with the session tools), when not all of them.
   */
  families: Family[];
  /**
   * The workspaces it may use.
   */
  grants: string[];
  pairingId: string;
  state: PairingState;
}
/**
 * Model providers; their keys stay in the OS keyring and are never shown.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ProvidersSettings".
 */
export interface ProvidersSettings {
  providers: Provider[];
  settingsRevision: string;
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Provider".
 */
export interface Provider {
  baseUrl: string;
  /**
   * Whether the person stored its key in the OS keyring.
   */
  keyStored: boolean;
  kind: ProviderKind;
  models: string[];
  name: string;
}
/**
 * The person's rules (`lomi rule`): which calls run at once, wait for them, or are refused.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RulesSettings".
 */
export interface RulesSettings {
  /**
   * Every agent's changes are paused (`lomi pause`).
   */
  paused: boolean;
  /**
   * Agents paused one by one.
   */
  pausedAgents: string[];
  rules: RuleRecord[];
  settingsRevision: string;
}
/**
 * New terminals' defaults (lomi_terminal_create).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "TerminalSettings".
 */
export interface TerminalSettings {
  /**
   * 20 to 500.
   */
  cols: number;
  /**
   * 5 to 200.
   */
  rows: number;
  /**
   * Screen lines kept, 100 to 100000.
   */
  scrollbackLines: number;
  settingsRevision: string;
  /**
   * Absolute path of the shell; "" for $SHELL.
   */
  shell: string;
}
/**
 * `storeStatus`' reply (`lomi store status`; the window's Settings → Storage), the same
 * whether the broker or the command opened the store.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "StoreStatus".
 */
export interface StoreStatus {
  databasePath: string;
  eventRetention: number;
  eventsRetained: number;
  expiredRetryEpochs: number;
  historyReceipts: number;
  idleRetryEpochs: number;
  oldestReceiptAt: string | null;
  oldestRetryEpochAt: string | null;
  pairings: PairingUsage[];
  receiptCap: number;
  receipts: number;
  /**
   * Receipts by state (every state, with 0 for none).
   */
  receiptsByState: {
    [k: string]: number;
  };
  receiptsRemaining: number;
  removableReceipts: number;
  retiredRetryEpochs: number;
  retryEpochCap: number;
  retryEpochs: number;
  retryEpochsRemaining: number;
  schemaVersion: number;
  unsettledReceipts: number;
  warningLevel: WarningLevel;
  /**
   * Set while the store's writes fail (a full disk, an I/O error): since when, and why.
   */
  writeFailure: WriteFailure | null;
}
/**
 * One pairing's use of the store.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PairingUsage".
 */
export interface PairingUsage {
  endedRetryEpochs: number;
  idleRetryEpochs: number;
  liveRetryEpochs: number;
  pairingId: string;
  receipts: number;
  unsettledReceipts: number;
}
/**
 * A time the store could not write at all; it lasts until a write commits again.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "WriteFailure".
 */
export interface WriteFailure {
  message: string;
  since: string;
}
/**
 * One workspace as a listing shows it.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "WorkspaceView".
 */
export interface WorkspaceView {
  /**
   * The layout revision to pass as `expectedRevision` to layout mutations.
   */
  domainRevision: string;
  /**
   * How the panels are arranged (splits and tab groups); null when no panel is open.
   */
  layout: LayoutNode | null;
  name: string;
  /**
   * Panel ids in layout order: the layout's panels left to right, top to bottom.
   */
  panelOrder: string[];
  /**
   * The person's choice for browser panels created from now on: one persistent profile
   * (cookies, storage and sign-ins kept across panels) when true, a fresh one each when false.
   */
  persistentBrowserProfile: boolean;
  projects: ProjectView[];
  workspaceId: string;
}
/**
 * A project (a directory on disk) in a workspace.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ProjectView".
 */
export interface ProjectView {
  name: string;
  projectId: string;
  /**
   * Absolute path of the project root on the person's machine.
   */
  root: string;
}
/**
 * A document as the person's window opens it.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PersonDocument".
 */
export interface PersonDocument {
  disk: DiskState;
  document: EditorDocumentView;
  projectId: string;
  workspaceId: string;
}
/**
 * The person's edit as it landed: moved over the edits made since its base, if any.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "PersonEdited".
 */
export interface PersonEdited {
  bufferRevision: string;
  dirty: boolean;
  documentId: string;
  /**
   * The edits as applied to the text before `bufferRevision`.
   */
  edits: TextEdit[];
  /**
   * True when edits were made since the base, so the person's edit was moved over them.
   */
  rebased: boolean;
}
/**
 * `storeReconcile`'s reply: what it did, or with `apply: false` what it would do now, and
 * the warning level after it.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "ReconcileReport".
 */
export interface ReconcileReport {
  endedRetryEpochsKept: number;
  eventsRemoved: number;
  receiptsArchived: number;
  receiptsRemaining: number;
  retired: RetiredEpoch[];
  retryEpochsRemoved: number;
  retryEpochsRetired: number;
  tombstonesRemoved: number;
  warningLevel: WarningLevel;
}
/**
 * A retry epoch a reconcile retires (or would).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RetiredEpoch".
 */
export interface RetiredEpoch {
  createdAt: string;
  pairingId: string;
  receipts: number;
  retryEpoch: string;
  unsettledReceipts: number;
}
/**
 * `ruleTest`'s reply: what would decide a call, and why.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RuleTested".
 */
export interface RuleTested {
  /**
   * `default` or `rule:<id>`.
   */
  decidedBy: string;
  rule: RuleRecord | null;
  verdict: Verdict;
  /**
   * In words: which rule and why it beat the others, or that the tool's default decides.
   */
  why: string;
}
/**
 * `ruleList`'s reply (and `ruleAdd`'s, `ruleRemove`'s, `pause`'s): the rules section.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RulesView".
 */
export interface RulesView {
  paused: boolean;
  pausedAgents: string[];
  rules: RuleUse[];
  settingsRevision: string;
}
/**
 * One of the person's rules with how often it decided (`ruleList`, Settings → Rules).
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "RuleUse".
 */
export interface RuleUse {
  /**
   * Only this agent's calls; absent for every agent.
   */
  agent?: string | null;
  createdAt: string;
  /**
   * The rule's expiry has passed: it no longer decides.
   */
  expired: boolean;
  /**
   * The rule no longer applies from this time on.
   */
  expiresAt?: string | null;
  lastUsedAt: string | null;
  /**
   * Terminal lines this rule decided since Lomi started (lines leave no receipt).
   */
  lines: number;
  /**
   * Operations this rule decided, from the receipts (kept and history).
   */
  operations: number;
  ruleId: string;
  /**
   * Only calls whose subject matches; absent for any subject.
   */
  subject?: RuleSubject | null;
  /**
   * `*` for every tool, a family (`files`), or one tool (`lomi_file_write`).
   */
  tools: string;
  verdict: Verdict;
  /**
   * Only calls in this workspace; absent for every workspace.
   */
  workspace?: string | null;
}
/**
 * The confirmed result of `lomi_settings_update`.
 *
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "SettingsUpdated".
 */
export interface SettingsUpdated {
  section: SettingsSection;
  /**
   * The section's new revision.
   */
  settingsRevision: string;
  /**
   * The section's fields after the change.
   */
  values: {
    [k: string]: unknown;
  };
}
/**
 * This interface was referenced by `LomiWindowTypes`'s JSON-Schema
 * via the `definition` "Viewport".
 */
export interface Viewport1 {
  height: number;
  width: number;
}
