import { mounted } from "./test-support";
import { describe, expect, it } from "vitest";
import { type ChatState, chatView as chatViewVNode, nextDraft, streaming } from "./chat";

const chatView = mounted(chatViewVNode);
const AT = "2026-12-03T06:00:00.000Z";

const noop = {
  chooseWorkspace: () => {},
  choose: () => {},
  create: () => {},
  editDraft: () => {},
  saveDraft: () => {},
  send: () => {},
  cancel: () => {},
};

describe("the chat draft", () => {
  it("follows the saved draft until the person edits it", () => {
    const clean = { text: "old", from: "2", dirty: false };
    expect(nextDraft(clean, { text: "agent's", draftRevision: "3" })).toEqual({ text: "agent's", from: "3", dirty: false });
    const edited = { text: "mine", from: "2", dirty: true };
    expect(nextDraft(edited, { text: "agent's", draftRevision: "3" })).toBe(edited);
  });

  it("shows a streaming reply with Stop instead of Send", () => {
    const open = {
      conversationId: "cv_1", workspaceId: "ws_1", title: "Plans", conversationRevision: "3", draftRevision: "3",
      messageCount: 2, draft: { text: "", draftRevision: "3" },
      messages: [
        { seq: 1, role: "user" as const, text: "hi", state: "complete" as const, createdAt: AT, updatedAt: AT },
        { seq: 2, role: "assistant" as const, text: "Hel", state: "streaming" as const, model: "m", createdAt: AT, updatedAt: AT },
      ],
    };
    const state: ChatState = {
      workspaces: [], workspaceId: "ws_1", conversations: [], open, draft: { text: "", from: "3", dirty: false },
      sendsTo: "Sends to p (m)", problem: null,
    };
    expect(streaming(open)).toBe(true);
    const view = chatView(state, noop);
    expect(view.querySelector("#chat-cancel")).not.toBeNull();
    expect(view.querySelector("#chat-send")).toBeNull();
    expect(view.querySelector(".message.streaming .text")?.textContent).toBe("Hel");
  });
});
