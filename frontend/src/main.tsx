// The main window: the workspaces (a sidebar, the chosen one's panels tiled as its layout
// says, and the operations), Chat and Settings, with the approval dialogs on top whenever a
// pairing or an operation waits for the person. Rendered by Preact from the overview, which
// arrives whole once and then part by part as the broker's areas change.

import "@xterm/xterm/css/xterm.css";
import "./style.css";
import { open } from "@tauri-apps/plugin-dialog";
import {
  type AppInfo,
  type Overview,
  type Panel,
  type Workspace,
  type ReconcileReport,
  type SettingsSections,
  type StoreStatus,
  androidCapture,
  appInfo,
  browserWatch,
  control,
  dataOr,
  terminalAttach,
  terminalInput,
  watch,
} from "./api";
import { activityView } from "./activity";
import { decisionDialog, pairingDialog } from "./approval";
import { follower } from "./follow";
import { type ChatState, type ConversationSummary, type ConversationView, chatView, nextDraft } from "./chat";
import type { ActivityView, ChatList, DraftUpdated, RuleDraft, RulesView } from "./generated/protocol";
import { createElement, render as paint } from "preact";
import { h, type VNode } from "./dom";
import type { LayoutNode } from "./layout";
import { PanelElements } from "./live";
import { Operations, type Receipt } from "./operations";
import { type Names, pauseControl } from "./rules";
import { settingsView } from "./settings";
import "./workbench"; // the workspace's "Files" view
import { Sidebar, WorkspaceView } from "./workspace";
import {
  DEFAULT_RETIRE,
  type RetireChoice,
  StoreNotice,
  freeRoomDialog,
  noticeBanner,
  writeFailureBanner,
  pairingName,
  previewText,
  resultText,
  retireRequest,
  shownChoice,
} from "./storage";

type Tab = "live" | "activity" | "chat" | "settings";

/** What the page counts for a test through WebDriver: overview messages received. */
declare global {
  interface Window {
    lomiWindow?: { overviewMessages: number };
  }
}
window.lomiWindow = { overviewMessages: 0 };

let info: AppInfo = { url: "", dataDir: "", brokerInstanceId: "", version: "" };
let overview: Overview | null = null;
let tab: Tab = "live";
let retire: RetireChoice = DEFAULT_RETIRE;
let lastResult: string | null = null;
const notice = new StoreNotice();
let freeRoom: VNode | null = null;
/** The workspace the sidebar chose (the first one until the person chooses). */
let chosenWorkspace: string | null = null;
let toast: { message: string; error: boolean } | null = null;
/** Settings → Rules with each rule's use (`ruleList`), null until read. */
let rules: RulesView | null = null;
/** The Activity tab (`activity`), read while it is shown. */
let activity: ActivityView | null = null;
let activityProblem: string | null = null;

const elements = new PanelElements({
  attach: terminalAttach,
  input: terminalInput,
  capture: androidCapture,
  browser: browserWatch,
});

function say(message: string, error = false): void {
  const shown = { message, error };
  toast = shown;
  render();
  window.setTimeout(() => {
    if (toast === shown) {
      toast = null;
      render();
    }
  }, 5000);
}

async function act(what: string, request: Record<string, unknown>): Promise<void> {
  try {
    await control(request);
  } catch (error) {
    say(`${what}: ${(error as Error).message}`, true);
  }
}

function tabsView(): VNode {
  const pending = overview ? dataOr(overview.pairings, []).filter((p) => p.state === "pending").length : 0;
  const button = (id: Tab, label: string) =>
    h(
      "button",
      {
        id: `tab-${id}`,
        class: tab === id ? "tab active" : "tab",
        onclick: () => {
          tab = id;
          render();
          if (id === "chat") void refreshChat();
          if (id === "settings") readRules();
          if (id === "activity") readActivity();
        },
      },
      label,
    );
  return h(
    "nav",
    { id: "tabs" },
    h("span", { class: "brand" }, "Lomi"),
    button("live", "Workspaces"),
    button("activity", "Activity"),
    button("chat", "Chat"),
    button("settings", "Settings"),
    h("span", { class: "endpoint" }, info.url, pending ? h("span", { class: "pending" }, ` · ${pending} waiting`) : null),
    pauseControl(pauseShown(), (pause) => act(pause ? "Pause" : "Resume", pause ? { pause: {} } : { resume: {} })),
  );
}

/** The rules section's pause state, from the overview (it follows the change feed). */
function pauseShown(): { paused: boolean; pausedAgents: string[] } | null {
  const settings = overview?.settings ? dataOr<SettingsSections | null>(overview.settings, null) : null;
  return settings?.rules ?? null;
}

/** What names ids and tools in words: the overview's pairings, workspaces and policy labels. */
function names(): Names {
  return {
    pairings: overview ? dataOr(overview.pairings, []) : [],
    workspaces: overview ? dataOr(overview.workspaces, []) : [],
    policy: overview ? dataOr(overview.policy, []) : [],
    rules: rules?.rules,
  };
}

/** Reads the rules and their use again (after the rules changed, or operations moved while
 * Settings is shown). */
const readRules = follower(async () => {
  try {
    rules = await control<RulesView>({ ruleList: {} });
  } catch (error) {
    say(`Rules: ${(error as Error).message}`, true);
  }
  render();
});

/** Reads every agent's activity again (while the Activity tab is shown). */
const readActivity = follower(async () => {
  try {
    activity = await control<ActivityView>({ activity: {} });
    activityProblem = null;
  } catch (error) {
    activityProblem = `Activity: ${(error as Error).message}`;
  }
  if (tab === "activity") render();
});

/** A rules request whose reply is the rules section: shown at once; a refusal is thrown to the
 * form that sent it. */
async function changeRules(request: Record<string, unknown>): Promise<void> {
  rules = await control<RulesView>(request);
  render();
}

function storeStatus(): StoreStatus | null {
  return overview ? dataOr<StoreStatus | null>(overview.store, null) : null;
}

function noticesView(): VNode {
  const status = storeStatus();
  const failure = status?.writeFailure ?? null;
  return h(
    "div",
    { id: "notices" },
    status && failure !== null ? writeFailureBanner(failure) : null,
    status && notice.shown !== null
      ? noticeBanner(notice.shown, status, {
          open: () => {
            notice.dismiss();
            tab = "settings";
            render();
            document.getElementById("settings-storage")?.scrollIntoView({ block: "start" });
          },
          dismiss: () => {
            notice.dismiss();
            render();
          },
        })
      : null,
  );
}

function dialogView(): VNode | null {
  if (freeRoom) return freeRoom;
  const workspaces = overview ? dataOr(overview.workspaces, []) : [];
  const pairings = overview ? dataOr(overview.pairings, []) : [];
  const pending = pairings.find((p) => p.state === "pending");
  const decision = overview ? dataOr(overview.decisions, [])[0] : undefined;
  if (pending) {
    return pairingDialog(pending, workspaces, {
      approve: (pairingId, grants, session, families) =>
        act("Approve", { pairingApprove: { pairingId, workspaces: grants, session, families } }),
      deny: (pairingId) => act("Deny", { pairingDeny: { pairingId } }),
    });
  }
  if (decision) {
    const client = pairings.find((p) => p.pairingId === decision.pairingId)?.clientName ?? "an agent";
    return decisionDialog(
      decision,
      client,
      workspaces,
      {
        decide: (operationId, approve) => act("Decide", { decide: { operationId, approve } }),
        remember: async (operationId: string, approve: boolean, rule: RuleDraft) => {
          await control({ decide: { operationId, approve, remember: rule } });
        },
      },
      names(),
    );
  }
  return null;
}

function sidebarView(workspaces: Workspace[], chosen: string | null): VNode {
  return createElement(Sidebar, {
    workspaces,
    chosen,
    decisions: overview ? dataOr(overview.decisions, []) : [],
    feed: overview ? dataOr(overview.feed, []) : [],
    choose: (workspaceId: string) => {
      chosenWorkspace = workspaceId;
      render();
    },
  });
}

/** The person's new arrangement, compared with the revision it was made from. */
function arrange(workspace: Workspace, root: LayoutNode): void {
  control({ workspaceLayout: { workspaceId: workspace.workspaceId, expectedRevision: workspace.domainRevision, root } }).catch(
    (error) => say(`Layout: ${(error as Error).message}`, true),
  );
}

function liveView(workspaces: Workspace[]): VNode {
  const chosen = workspaces.find((w) => w.workspaceId === chosenWorkspace) ?? workspaces[0];
  const lists = overview?.panels ?? {};
  elements.retain(new Set(Object.values(lists).flatMap((envelope) => dataOr(envelope, []).map((p) => p.panelId))));
  const panels = chosen ? panelsOf(chosen.workspaceId) : [];
  return h(
    "div",
    { class: "live" },
    sidebarView(workspaces, chosen?.workspaceId ?? null),
    h(
      "div",
      { class: "live-main" },
      chosen
        ? createElement(WorkspaceView, {
            key: chosen.workspaceId,
            workspace: chosen,
            panels,
            captures: overview?.captures ?? {},
            elements,
            arrange: (root: LayoutNode) => arrange(chosen, root),
          })
        : null,
      createElement(Operations, {
        items: overview ? dataOr(overview.feed, []) : [],
        show: (operationId: string) => control<Receipt>({ operationShow: { operationId } }),
      }),
    ),
  );
}

/** A workspace's panels from the overview (`panelList` per workspace). */
function panelsOf(workspaceId: string): Panel[] {
  const envelope = overview?.panels?.[workspaceId];
  return envelope ? dataOr(envelope, []) : [];
}

function contentView(): VNode {
  if (!overview) return h("p", { class: "empty" }, "Starting…");
  const workspaces = dataOr(overview.workspaces, []);
  if (tab === "live") return liveView(workspaces);
  if (tab === "activity") return activityView(activity, activityProblem, names());
  if (tab === "chat") {
    chat.workspaces = workspaces;
    if (!chat.workspaceId && workspaces.length) chat.workspaceId = workspaces[0].workspaceId;
    const settings = overview.settings ? dataOr<SettingsSections | null>(overview.settings, null) : null;
    const provider = String(settings?.chat?.defaultProvider ?? "");
    const providers = (settings?.providers?.providers ?? []) as { name: string; models: string[] }[];
    const model = String(settings?.chat?.defaultModel || providers.find((p) => p.name === provider)?.models[0] || "");
    chat.sendsTo = provider ? `Sends to ${provider}${model ? ` (${model})` : ""}` : "No default provider (Settings → Chat)";
    return chatView(chat, chatActions);
  }
  return settingsView(
    {
      url: info.url,
      dataDir: info.dataDir,
      workspaces,
      pairings: dataOr(overview.pairings, []),
      policy: dataOr(overview.policy, []),
      settings: overview.settings ? dataOr<SettingsSections | null>(overview.settings, null) : null,
      store: storeStatus(),
      rules,
      retire,
      lastResult,
    },
    {
      addWorkspace: (name) => void addWorkspace(name),
      removeWorkspace: (workspaceId) => act("Remove workspace", { workspaceRemove: { workspaceId } }),
      addProject: (workspaceId) => void addProject(workspaceId),
      removeProject: (workspaceId, projectId) =>
        act("Remove project", { projectRemove: { workspaceId, projectId } }),
      setBrowserProfile: (workspaceId, persistent) =>
        act("Browser profile", { browserProfile: { workspaceId, persistent } }),
      revoke: (pairingId) => act("Revoke", { pairingRevoke: { pairingId } }),
      setFamilies: (pairingId, families) => act("Tools", { pairingFamilies: { pairingId, families } }),
      setConfirm: (tool, confirm) => act("Policy", { confirm: { tool, confirm } }),
      copy: (text) => void copy(text),
      chooseRetire: (choice) => {
        retire = choice;
        render();
      },
      freeRoom: () => void askFreeRoom(),
      sendSettings: (what, request) => act(what, request),
      say: (message) => say(message, true),
      rules: {
        add: (rule, expectedRevision) => changeRules({ ruleAdd: { rule, expectedRevision } }),
        remove: (ruleId, expectedRevision) => changeRules({ ruleRemove: { ruleId, expectedRevision } }),
      },
    },
  );
}

const root = document.getElementById("app")!;

/** Renders the whole window; Preact changes only what differs from the last render. */
function render(): void {
  const dialog = dialogView();
  paint(
    <>
      {tabsView()}
      {noticesView()}
      <main id="content" class={tab === "live" ? "content live-tab" : "content"}>
        {contentView()}
      </main>
      <div id="overlay" hidden={dialog === null}>
        {dialog}
      </div>
      <div id="toast" role="status" class={toast ? (toast.error ? "error shown" : "shown") : ""}>
        {toast?.message ?? ""}
      </div>
    </>,
    root,
  );
}

async function addWorkspace(name: string): Promise<void> {
  const project = await open({ directory: true, title: `The project folder of ${name}` });
  if (typeof project !== "string") return;
  await act("Add workspace", { workspaceAdd: { name, project } });
}

async function addProject(workspaceId: string): Promise<void> {
  const project = await open({ directory: true, title: "Another project folder for this workspace" });
  if (typeof project !== "string") return;
  await act("Add project", { projectAdd: { workspaceId, project } });
}

async function copy(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    say("Copied.");
  } catch {
    say("Select the text and copy it (the clipboard is not available).", true);
  }
}

/** "Free room": the preview of the person's choice, then the same request applied once they confirm. */
async function askFreeRoom(): Promise<void> {
  const store = storeStatus();
  const request = { retire: retireRequest(store ? shownChoice(retire, store) : retire) };
  try {
    const preview = await control<ReconcileReport>({ storeReconcile: { apply: false, ...request } });
    const pairings = overview ? dataOr(overview.pairings, []) : [];
    const close = () => {
      freeRoom = null;
      render();
    };
    freeRoom = freeRoomDialog(
      preview,
      previewText(preview, (id) => pairingName(pairings, id)),
      () => {
        control<ReconcileReport>({ storeReconcile: { apply: true, ...request } })
          .then((report) => {
            lastResult = resultText(report);
            // The agent chosen may have no connection left: start from the default again.
            retire = DEFAULT_RETIRE;
            say(lastResult);
          })
          .catch((error) => say(`Free room: ${(error as Error).message}`, true))
          .finally(close);
      },
      close,
    );
    render();
  } catch (error) {
    say(`Free room: ${(error as Error).message}`, true);
  }
}

// ---- Chat ----

const chat: ChatState = {
  workspaces: [],
  workspaceId: null,
  conversations: [],
  open: null,
  draft: { text: "", from: "1", dirty: false },
  sendsTo: "",
  problem: null,
};

/** Reads the chosen workspace's conversations and the open one again. */
async function refreshChat(): Promise<void> {
  if (!chat.workspaceId) return;
  try {
    const list = await control<ChatList>({ chatList: { workspaceId: chat.workspaceId } });
    chat.conversations = list.conversations;
    if (chat.open) {
      const view = await control<ConversationView>({
        chatGet: { conversationId: chat.open.conversationId, maxBytes: 524288 },
      });
      chat.open = view;
      chat.draft = nextDraft(chat.draft, view.draft);
    }
  } catch (error) {
    chat.problem = (error as Error).message;
  }
  if (tab === "chat") render();
}

/** Reads Chat again after the change feed moved: one read at a time, and one more after it
 * when the feed moved meanwhile. */
let chatReading = false;
let chatAgain = false;
function followChat(): void {
  if (chatReading) {
    chatAgain = true;
    return;
  }
  chatReading = true;
  void refreshChat().finally(() => {
    chatReading = false;
    if (chatAgain) {
      chatAgain = false;
      followChat();
    }
  });
}

async function chatCall(what: string, request: Record<string, unknown>): Promise<unknown> {
  try {
    chat.problem = null;
    return await control(request);
  } catch (error) {
    chat.problem = `${what}: ${(error as Error).message}`;
    render();
    return null;
  }
}

/** Saves the person's text, compared with the revision it was edited from. */
async function saveDraft(): Promise<boolean> {
  if (!chat.open) return false;
  const saved = (await chatCall("Save draft", {
    chatDraft: { conversationId: chat.open.conversationId, text: chat.draft.text, expectedDraftRevision: chat.draft.from },
  })) as DraftUpdated | null;
  if (!saved) {
    // Someone changed the draft meanwhile: keep the person's text, show the revision it is now
    // at, so a second Save overwrites deliberately.
    const current = chat.open.draft.draftRevision;
    await refreshChat();
    chat.draft = { ...chat.draft, from: chat.open?.draft.draftRevision ?? current };
    render();
    return false;
  }
  chat.draft = { text: chat.draft.text, from: saved.draftRevision, dirty: false };
  await refreshChat();
  return true;
}

const chatActions = {
  chooseWorkspace: (workspaceId: string) => {
    chat.workspaceId = workspaceId;
    chat.open = null;
    void refreshChat();
  },
  choose: (conversationId: string) => {
    chat.open = { conversationId } as ConversationView;
    chat.draft = { text: "", from: "1", dirty: false };
    void refreshChat();
  },
  create: (title: string) => {
    if (!chat.workspaceId) return;
    void chatCall("New conversation", { chatCreate: { workspaceId: chat.workspaceId, title } }).then((created) => {
      if (created) chatActions.choose((created as ConversationSummary).conversationId);
    });
  },
  editDraft: (text: string) => {
    chat.draft = { ...chat.draft, text, dirty: true };
  },
  saveDraft: () => void saveDraft(),
  send: () => {
    void (async () => {
      if (!chat.open) return;
      if (chat.draft.dirty && !(await saveDraft())) return;
      await chatCall("Send", {
        chatSend: { conversationId: chat.open.conversationId, expectedDraftRevision: chat.draft.from },
      });
      await refreshChat();
    })();
  },
  cancel: () => {
    if (chat.open) void chatCall("Stop", { chatCancel: { conversationId: chat.open.conversationId } }).then(refreshChat);
  },
};

render();
appInfo()
  .then((value) => {
    info = value;
    render();
  })
  .catch((error) => say(`Lomi: ${(error as Error).message}`, true));
watch((part) => {
  window.lomiWindow!.overviewMessages += 1;
  // The first message is the whole overview; each later one holds only the parts that changed.
  overview = { ...(overview ?? {}), ...part } as Overview;
  const status = storeStatus();
  if (status) notice.update(status.warningLevel);
  render();
  // Chat follows the broker's change feed: a conversation, a draft or a reply's text moved.
  if (part.chat !== undefined && tab === "chat") followChat();
  // The rules when they changed (and their use when operations moved while Settings shows
  // them); the activity when operations, calls or pause moved while its tab is shown.
  if (part.settings !== undefined || (part.feed !== undefined && tab === "settings")) readRules();
  const moved = part.feed !== undefined || part.pairings !== undefined || part.settings !== undefined;
  if (moved && tab === "activity") readActivity();
}).catch((error) => say(`Lomi: ${(error as Error).message}`, true));
// Relative times ("5 s ago") move on even when nothing else changes (a render of the page
// only: nothing is read from Lomi).
window.setInterval(() => {
  if (tab !== "chat") render();
}, 15000);
