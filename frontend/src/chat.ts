// The Chat tab: a workspace's conversations, the messages of the one chosen (a reply shows as
// it streams), and its draft, which the person and agents share under the same revision rule:
// the person's Save and Send carry the draftRevision the text was edited from, so an agent's
// change meanwhile is never overwritten (REVISION_MISMATCH: the person's text stays in the
// field, the agent's is shown, and Save again overwrites it deliberately). An agent's update
// made against a revision the person's Save moved fails the same way.

import type { Workspace } from "./api";
import { h, type VNode } from "./dom";

// The Chat replies are generated from the Rust types (src/generated/protocol.ts).
export type { ChatMessage, ConversationSummary, ConversationView } from "./generated/protocol";
import type { ChatMessage, ConversationSummary, ConversationView } from "./generated/protocol";

/** What the Chat tab shows now. */
export interface ChatState {
  workspaces: Workspace[];
  workspaceId: string | null;
  conversations: ConversationSummary[];
  open: ConversationView | null;
  /** The person's text in the draft field, and the revision it was edited from. */
  draft: { text: string; from: string; dirty: boolean };
  /** Where sends go, from the chat settings (for the person to see before sending). */
  sendsTo: string;
  /** The last refusal, in words (a stale draft, a provider error). */
  problem: string | null;
}

export interface ChatActions {
  chooseWorkspace(workspaceId: string): void;
  choose(conversationId: string): void;
  create(title: string): void;
  editDraft(text: string): void;
  saveDraft(): void;
  send(): void;
  cancel(): void;
}

/** Whether a reply of the open conversation is still arriving. */
export function streaming(view: ConversationView | null): boolean {
  return !!view && view.messages.some((m) => m.state === "streaming");
}

/**
 * The draft field after a fresh read: the person's unsaved text stays; otherwise the field
 * follows the saved draft (an agent's update shows at once).
 */
export function nextDraft(
  current: ChatState["draft"],
  saved: { text: string; draftRevision: string },
): ChatState["draft"] {
  if (current.dirty) return current;
  return { text: saved.text, from: saved.draftRevision, dirty: false };
}

function message(m: ChatMessage): VNode {
  const who = m.role === "user" ? "You" : m.model ? `${m.model}` : "Assistant";
  const note = m.state === "complete" ? "" : ` · ${m.state}`;
  return h(
    "div",
    { class: `message ${m.role} ${m.state}`, "data-seq-id": String(m.seq) },
    h("div", { class: "who" }, `${who}${note}`),
    h("div", { class: "text" }, m.text || (m.state === "streaming" ? "…" : "")),
  );
}

export function chatView(state: ChatState, actions: ChatActions): VNode {
  const picker = h(
    "select",
    {
      id: "chat-workspace",
      onchange: (event: Event) => actions.chooseWorkspace((event.target as HTMLSelectElement).value),
    },
    ...state.workspaces.map((w) =>
      h("option", { value: w.workspaceId, selected: w.workspaceId === state.workspaceId }, w.name),
    ),
  );
  const title = h("input", { id: "chat-new-title", type: "text", placeholder: "New conversation title" });
  const list = h(
    "aside",
    { class: "conversations" },
    picker,
    h(
      "div",
      { class: "new" },
      title,
      h(
        "button",
        {
          id: "chat-new",
          onclick: (event: Event) => {
            const field = (event.currentTarget as HTMLElement).parentElement?.querySelector("input");
            const text = field?.value.trim() ?? "";
            if (text) actions.create(text);
          },
        },
        "New",
      ),
    ),
    h(
      "ul",
      { id: "chat-list" },
      ...state.conversations.map((c) =>
        h(
          "li",
          {
            class: state.open?.conversationId === c.conversationId ? "conversation chosen" : "conversation",
            "data-conversation-id": c.conversationId,
            onclick: () => actions.choose(c.conversationId),
          },
          h("span", { class: "title" }, c.title),
          h("span", { class: "count" }, ` ${c.messageCount}`),
        ),
      ),
    ),
  );
  const open = state.open;
  if (!open) {
    return h(
      "div",
      { class: "chat", id: "chat" },
      list,
      h("section", { class: "thread" }, h("p", { class: "empty" }, "Choose or start a conversation.")),
    );
  }
  const busy = streaming(open);
  const thread = h(
    "section",
    { class: "thread", "data-conversation-id": open.conversationId },
    h("h2", {}, open.title, h("span", { class: "revision", id: "chat-revision" }, ` revision ${open.conversationRevision}`)),
    h("div", { class: "messages", id: "chat-messages" }, ...open.messages.map(message)),
    h(
      "div",
      { class: "draft" },
      h(
        "label",
        { for: "chat-draft" },
        `Draft (revision ${state.draft.from}${state.draft.dirty ? ", edited" : ""})`,
      ),
      h(
        "textarea",
        {
          id: "chat-draft",
          rows: 4,
          oninput: (event: Event) => actions.editDraft((event.target as HTMLTextAreaElement).value),
        },
        state.draft.text,
      ),
      state.problem ? h("p", { class: "problem", id: "chat-problem" }, state.problem) : null,
      h(
        "div",
        { class: "buttons" },
        h("span", { class: "sends-to" }, state.sendsTo),
        h("button", { id: "chat-save", class: "secondary", onclick: () => actions.saveDraft() }, "Save draft"),
        busy
          ? h("button", { id: "chat-cancel", class: "secondary", onclick: () => actions.cancel() }, "Stop")
          : h("button", { id: "chat-send", class: "primary", onclick: () => actions.send() }, "Send"),
      ),
    ),
  );
  return h("div", { class: "chat", id: "chat" }, list, thread);
}
