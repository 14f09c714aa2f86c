"""Chat over MCP against a real `lomi serve` and the provider stand-in (provider_standin.py):
conversations listed, created and read; the draft compared and swapped by draftRevision; a
send that waits for the person, then streams the provider's reply into the conversation; a
retry answered by the same operation with one request at the provider; cancel mid-stream
(cancelled, partial); SIGKILL mid-stream (outcome_unknown after the restart, never resent);
the provider's errors mapped to codes. Provider keys live in the real OS keyring: run under
`dbus-run-session -- scripts/with-keyring`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from conftest import WAIT_DEADLINE, dump
from provider_standin import GOOD_KEY, StandIn
from test_settings import provider_key
from test_terminal import agent_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def standin():
    s = StandIn()
    yield s
    s.close()


def add_provider(lomi, name: str, kind: str, url: str, models: list[str], key: str | None = GOOD_KEY) -> None:
    lomi.cli("settings", "set", "providers", name, json.dumps({"kind": kind, "baseUrl": url, "models": models}))
    if key is not None:
        done = provider_key(lomi, name, key)
        assert done.returncode == 0, done.stderr


def send_args(view: dict[str, Any], epoch: str, key: str, **over: Any) -> dict[str, Any]:
    args = {
        "conversationId": view["conversationId"],
        "expectedConversationRevision": view["conversationRevision"],
        "expectedDraftRevision": view["draft"]["draftRevision"],
        "retryEpoch": epoch,
        "requestKey": key,
    }
    args.update(over)
    return args


async def create(agent, epoch: str, title: str, key: str) -> dict[str, Any]:
    answer = await agent.ok("lomi_chat_create", {"title": title, "retryEpoch": epoch, "requestKey": key})
    op = await agent.settle(answer["operationId"])
    assert op["state"] == "succeeded", dump(op)
    return op["result"]


async def write_draft(agent, conversation: str, revision: str, epoch: str, key: str, text: str) -> str:
    answer = await agent.ok(
        "lomi_chat_draft_update",
        {"conversationId": conversation, "expectedDraftRevision": revision, "text": text,
         "retryEpoch": epoch, "requestKey": key},
    )
    op = await agent.settle(answer["operationId"])
    assert op["state"] == "succeeded", dump(op)
    return op["result"]["draftRevision"]


async def wait_for(agent, conversation: str, check, what: str, deadline: float = WAIT_DEADLINE) -> dict[str, Any]:
    end = time.monotonic() + deadline
    while True:
        view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        if check(view):
            return view
        if time.monotonic() > end:
            pytest.fail(f"{what} did not happen:\n{dump(view)}")
        await anyio.sleep(0.05)


async def test_list_create_draft_send_approve_stream_and_retry(lomi, workspaces, mcp, standin):
    a, b = workspaces
    add_provider(lomi, "standin", "openai_compatible", standin.openai_url, ["echo-model"])
    lomi.cli("settings", "set", "chat", "defaultProvider", "standin")
    lomi.cli("settings", "set", "chat", "systemPrompt", "You are terse.")
    async with agent_for(lomi, mcp, a["workspaceId"], name="chat-agent") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        assert (await agent.ok("lomi_chat_list", {"workspaceId": a["workspaceId"]}))["conversations"] == []
        await agent.error("lomi_chat_list", {"workspaceId": b["workspaceId"]}, "NOT_FOUND")

        created = await create(agent, epoch, "Plans", "create-1")
        conversation = created["conversationId"]
        listed = await agent.ok("lomi_chat_list", {"workspaceId": a["workspaceId"]})
        assert [c["conversationId"] for c in listed["conversations"]] == [conversation], dump(listed)

        # The draft: compare-and-set on draftRevision; a stale one is REVISION_MISMATCH.
        first = created["draftRevision"]
        second = await write_draft(agent, conversation, first, epoch, "draft-1", "What is 2+2?")
        stale = await agent.error(
            "lomi_chat_draft_update",
            {"conversationId": conversation, "expectedDraftRevision": first, "text": "stale",
             "retryEpoch": epoch, "requestKey": "draft-2"},
            "REVISION_MISMATCH",
        )
        assert stale["details"]["draftRevision"] == second, dump(stale)
        # The person edits the same draft (the window's and the CLI's request): the agent's
        # update against the revision it saw fails.
        person = lomi.cli("chat", "draft", conversation, "Please: what is 2+2?", "--expected-revision", second)
        await agent.error(
            "lomi_chat_draft_update",
            {"conversationId": conversation, "expectedDraftRevision": second, "text": "mine",
             "retryEpoch": epoch, "requestKey": "draft-3"},
            "REVISION_MISMATCH",
        )
        view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        assert view["draft"] == {"text": "Please: what is 2+2?", "draftRevision": person["draftRevision"]}, dump(view)

        # Send: waits for the person, who sees the message, provider and model.
        args = send_args(view, epoch, "send-1")
        answer = await agent.ok("lomi_chat_send", args)
        assert answer["state"] == "awaiting_user", dump(answer)
        assert standin.seen() == [], "nothing goes to the provider before the person decides"
        waiting = [d for d in lomi_decisions(lomi) if d["operationId"] == answer["operationId"]]
        assert waiting and waiting[0]["effect"] == {
            "summary": "Send a message to standin (echo-model). It cannot be taken back.",
            "kind": "chatSend", "message": "Please: what is 2+2?", "conversation": "Plans",
            "provider": "standin", "model": "echo-model", "note": None,
        }, dump(waiting)
        lomi.cli("decide", answer["operationId"], "approve")
        op = await agent.settle(answer["operationId"])
        assert op["state"] == "succeeded" and op["effectState"] == "complete", dump(op)
        assert op["result"]["provider"] == "standin" and op["result"]["model"] == "echo-model"
        assert op["result"]["inputTokens"] == 11, dump(op)

        # The request the stand-in received is exactly the conversation.
        seen = standin.seen("/chat/completions")
        assert len(seen) == 1, dump(seen)
        body = seen[0]["body"]
        assert body["model"] == "echo-model" and body["stream"] is True
        assert body["messages"] == [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Please: what is 2+2?"},
        ], dump(body)
        assert seen[0]["headers"]["authorization"] == f"Bearer {GOOD_KEY}"

        done = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        assert [(m["role"], m["text"], m["state"]) for m in done["messages"]] == [
            ("user", "Please: what is 2+2?", "complete"),
            ("assistant", "Echo: Please: what is 2+2?", "complete"),
        ], dump(done)
        assert done["draft"]["text"] == ""
        assert done["conversationRevision"] == op["result"]["conversationRevision"]
        assert int(done["conversationRevision"]) > int(view["conversationRevision"])

        # The same send again: the same operation, and the provider saw one request.
        again = await agent.ok("lomi_chat_send", args)
        assert again["operationId"] == answer["operationId"]
        assert len(standin.seen()) == 1
        # Other arguments under the key: IDEMPOTENCY_CONFLICT; the old revisions: stale.
        await agent.error("lomi_chat_send", {**args, "model": "other"}, "IDEMPOTENCY_CONFLICT")
        await agent.error("lomi_chat_send", {**args, "requestKey": "send-2"}, "REVISION_MISMATCH")

        # Paging: maxBytes and the cursor.
        page = await agent.ok("lomi_chat_get", {"conversationId": conversation, "maxBytes": 1024, "afterSeq": 1})
        assert [m["seq"] for m in page["messages"]] == [2] and "nextSeq" not in page, dump(page)
        await agent.error("lomi_chat_get", {"conversationId": conversation, "maxBytes": 10}, "INVALID_ARGUMENT")
        # Bad input says what to fix.
        await agent.error("lomi_chat_send", {**args, "requestKey": "send-3", "extra": 1}, "INVALID_ARGUMENT")
        await agent.error("lomi_chat_create", {"title": "", "retryEpoch": epoch, "requestKey": "c2"}, "INVALID_ARGUMENT")

    # The person's CLI shows the same conversation; a rename moves its revision.
    shown = lomi.cli("chat", "show", conversation)
    assert shown["messages"][1]["text"] == "Echo: Please: what is 2+2?"
    renamed = lomi.cli("chat", "rename", conversation, "Arithmetic")
    assert renamed["title"] == "Arithmetic"
    assert int(renamed["conversationRevision"]) == int(shown["conversationRevision"]) + 1, dump(renamed)


def lomi_decisions(lomi) -> list[dict[str, Any]]:
    """The operations waiting for the person, as `lomi decisions` (and the window) list them."""
    return lomi.cli("decisions")


async def approved_send(lomi, agent, standin, workspace_id: str, model: str, text: str, key: str):
    epoch = (await agent.connect(workspace_id))["retryEpoch"]
    created = await create(agent, epoch, f"About {model}", f"{key}-create")
    conversation = created["conversationId"]
    await write_draft(agent, conversation, created["draftRevision"], epoch, f"{key}-draft", text)
    view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
    answer = await agent.ok("lomi_chat_send", send_args(view, epoch, key, model=model))
    lomi.cli("decide", answer["operationId"], "approve")
    return conversation, answer["operationId"], view, epoch


@pytest.mark.parametrize("who", ["agent", "person"])
async def test_cancel_mid_stream_is_cancelled_with_a_partial_reply(lomi, workspaces, mcp, standin, who):
    a, _ = workspaces
    add_provider(lomi, "standin", "anthropic", standin.anthropic_url, ["slow-model"])
    lomi.cli("settings", "set", "chat", "defaultProvider", "standin")
    async with agent_for(lomi, mcp, a["workspaceId"], name="cancel-agent") as agent:
        conversation, operation, _, epoch = await approved_send(
            lomi, agent, standin, a["workspaceId"], "slow-model", "tell me a long story", "slow"
        )
        streaming = await wait_for(
            agent, conversation,
            lambda v: len(v["messages"]) == 2 and v["messages"][1]["state"] == "streaming" and v["messages"][1]["text"],
            "a streaming reply with text",
        )
        assert streaming["messages"][1]["text"].startswith("Echo"), dump(streaming)
        # While a reply arrives, a next draft may be written but not sent.
        await write_draft(agent, conversation, streaming["draft"]["draftRevision"], epoch, "next-draft", "and then?")
        now = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        busy = await agent.error("lomi_chat_send", send_args(now, epoch, "too-soon"), "RESOURCE_BUSY")
        assert "still arriving" in busy["message"], dump(busy)
        if who == "agent":
            await agent.ok("lomi_operation_cancel", {"operationId": operation})
        else:
            # The person's Stop (the window's, `lomi chat cancel`) cancels the agent's send.
            done = lomi.run("chat", "cancel", conversation)
            assert done.returncode == 0, done.stderr
        op = await agent.settle(operation)
        assert op["state"] == "cancelled" and op["effectState"] == "partial", dump(op)
        view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        reply = view["messages"][1]
        assert reply["state"] == "cancelled" and reply["text"].startswith("Echo: tell me"), dump(view)
        assert len(standin.seen("/v1/messages")) == 1
        seen = standin.seen("/v1/messages")[0]
        assert seen["headers"]["x-api-key"] == GOOD_KEY
        assert seen["body"]["messages"] == [{"role": "user", "content": "tell me a long story"}]


@pytest.mark.parametrize(("how", "effect"), [("SIGKILL", "unknown"), ("SIGTERM", "partial")])
async def test_a_stop_mid_stream_is_outcome_unknown_and_never_resent(lomi, workspaces, mcp, standin, how, effect):
    """SIGKILL: reopen recovery marks the send; SIGTERM: the stopping Lomi ends the stream
    itself (it does not wait for the reply) and knows part of it was saved."""
    a, _ = workspaces
    add_provider(lomi, "standin", "openai_compatible", standin.openai_url, ["slow-model"])
    lomi.cli("settings", "set", "chat", "defaultProvider", "standin")
    async with agent_for(lomi, mcp, a["workspaceId"], name="crash-agent") as agent:
        conversation, operation, _, _ = await approved_send(
            lomi, agent, standin, a["workspaceId"], "slow-model", "keep talking", "crash"
        )
        await wait_for(
            agent, conversation,
            lambda v: len(v["messages"]) == 2 and v["messages"][1]["text"],
            "a streaming reply with text",
        )
    lomi.restart(how)
    assert lomi.stop_took < 15, "a stop does not wait for the reply to finish"
    op = lomi.cli("operation", "show", operation)
    assert op["state"] == "outcome_unknown" and op["effectState"] == effect, dump(op)
    shown = lomi.cli("chat", "show", conversation)
    assert shown["messages"][1]["state"] == "interrupted", dump(shown)
    assert shown["messages"][1]["text"].startswith("Echo: ")
    time.sleep(1.0)
    assert len(standin.seen()) == 1, "a send is never made again after a restart"


@pytest.mark.parametrize(
    ("model", "key", "code", "words"),
    [
        ("echo-model", "sk-wrong", "PROVIDER_AUTH", "refused the key"),
        ("busy-model", GOOD_KEY, "PROVIDER_RATE_LIMITED", "wait 7 s"),
        ("missing-model", GOOD_KEY, "PROVIDER_MODEL_NOT_FOUND", "does not know model"),
        ("broken-model", GOOD_KEY, "PROVIDER_UNAVAILABLE", "HTTP 500"),
        ("cut-model", GOOD_KEY, "PROVIDER_UNAVAILABLE", "cut its reply short"),
        ("echo-model", None, "PROVIDER_UNAVAILABLE", "cannot be reached"),
    ],
)
async def test_provider_errors_fail_with_clear_codes(lomi, workspaces, mcp, standin, model, key, code, words):
    a, _ = workspaces
    url = standin.openai_url if key is not None else "http://127.0.0.1:9/v1"
    add_provider(lomi, "standin", "openai_compatible", url, [model], key=key or GOOD_KEY)
    lomi.cli("settings", "set", "chat", "defaultProvider", "standin")
    async with agent_for(lomi, mcp, a["workspaceId"], name="error-agent") as agent:
        conversation, operation, view, _ = await approved_send(
            lomi, agent, standin, a["workspaceId"], model, "hello", "err"
        )
        op = await agent.settle(operation)
        assert op["state"] == "failed", dump(op)
        assert op["error"]["code"] == code and words in op["error"]["message"], dump(op)
        after = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        if model == "cut-model":
            assert op["effectState"] == "partial", dump(op)
            assert after["messages"][1]["state"] == "failed" and after["messages"][1]["text"], dump(after)
        else:
            # Refused before any reply: the conversation and the draft are as they were.
            assert op["effectState"] == "none", dump(op)
            assert after["messages"] == [] and after["draft"]["text"] == "hello", dump(after)
            assert after["conversationRevision"] == view["conversationRevision"]
        if code == "PROVIDER_RATE_LIMITED":
            assert op["result"]["details"]["retryAfterSeconds"] == 7, dump(op)


async def test_an_anthropic_provider_streams_and_its_errors_map_the_same(lomi, workspaces, mcp, standin):
    """The Anthropic Messages protocol end to end: the system prompt as `system`, the key as
    `x-api-key`, the reply and its token counts; a bad key and a rate limit answer the same
    codes as the OpenAI-compatible protocol's."""
    a, _ = workspaces
    add_provider(lomi, "claude", "anthropic", standin.anthropic_url, ["echo-model"])
    lomi.cli("settings", "set", "chat", "defaultProvider", "claude")
    lomi.cli("settings", "set", "chat", "systemPrompt", "Be kind.")
    async with agent_for(lomi, mcp, a["workspaceId"], name="anthropic-agent") as agent:
        conversation, operation, _, epoch = await approved_send(
            lomi, agent, standin, a["workspaceId"], "echo-model", "hi Claude", "anthropic"
        )
        op = await agent.settle(operation)
        assert op["state"] == "succeeded", dump(op)
        assert (op["result"]["inputTokens"], op["result"]["model"]) == (13, "echo-model"), dump(op)
        seen = standin.seen("/v1/messages")
        assert len(seen) == 1
        assert seen[0]["headers"]["x-api-key"] == GOOD_KEY
        assert seen[0]["headers"]["anthropic-version"] == "2023-06-01"
        body = seen[0]["body"]
        assert body["system"] == "Be kind." and body["stream"] is True and body["max_tokens"] > 0
        assert body["messages"] == [{"role": "user", "content": "hi Claude"}], dump(body)
        view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        assert view["messages"][1]["text"] == "Echo: hi Claude", dump(view)
        assert view["messages"][1]["inputTokens"] == 13

        for i, (model, code) in enumerate([("busy-model", "PROVIDER_RATE_LIMITED"), ("missing-model", "PROVIDER_MODEL_NOT_FOUND")]):
            await write_draft(agent, conversation, view["draft"]["draftRevision"], epoch, f"a-draft-{i}", "again")
            view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
            answer = await agent.ok("lomi_chat_send", send_args(view, epoch, f"a-send-{i}", model=model))
            lomi.cli("decide", answer["operationId"], "approve")
            failed = await agent.settle(answer["operationId"])
            assert (failed["state"], failed["error"]["code"]) == ("failed", code), dump(failed)
    assert provider_key(lomi, "claude", "sk-wrong").returncode == 0
    async with agent_for(lomi, mcp, a["workspaceId"], name="anthropic-agent-2") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
        answer = await agent.ok("lomi_chat_send", send_args(view, epoch, "a-bad-key"))
        lomi.cli("decide", answer["operationId"], "approve")
        failed = await agent.settle(answer["operationId"])
        assert failed["error"]["code"] == "PROVIDER_AUTH", dump(failed)
        assert "sk-wrong" not in json.dumps(failed), "a key is never shown"


async def test_the_persons_policy_can_let_sends_go_without_asking(lomi, workspaces, mcp, standin):
    a, _ = workspaces
    add_provider(lomi, "standin", "openai_compatible", standin.openai_url, ["echo-model"])
    lomi.cli("settings", "set", "chat", "defaultProvider", "standin")
    assert lomi.run("confirm", "lomi_chat_send", "--off").returncode == 0
    async with agent_for(lomi, mcp, a["workspaceId"], name="trusted-agent") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        created = await create(agent, epoch, "Quick", "q-create")
        await write_draft(agent, created["conversationId"], created["draftRevision"], epoch, "q-draft", "ping")
        view = await agent.ok("lomi_chat_get", {"conversationId": created["conversationId"]})
        answer = await agent.ok("lomi_chat_send", send_args(view, epoch, "q-send"))
        op = await agent.settle(answer["operationId"])
        assert op["state"] == "succeeded", dump(op)
        assert lomi_decisions(lomi) == []
        assert len(standin.seen()) == 1
