"""Terminal progress in the event feed: the output cursor moving and the process exiting show
up in lomi_events_read as metadata, never as the output bytes themselves."""

import time

import anyio
import pytest

from conftest import WAIT_DEADLINE, dump

pytestmark = pytest.mark.anyio


async def test_output_and_exit_show_in_the_event_feed_without_bytes(lomi, workspaces, mcp):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch = connection["retryEpoch"]
        created = await agent.ok(
            "lomi_terminal_create",
            {
                "workspaceId": a["workspaceId"],
                "cwdRelative": "",
                "title": "Events",
                "argv": ["sh", "-c", "echo secret-output-bytes; read line; exit 7"],
                "expectedRevision": connection["domainRevision"],
                "retryEpoch": epoch,
                "requestKey": "events-terminal",
            },
        )
        terminal = (await agent.settle(created["operationId"]))["result"]
        await agent.ok(
            "lomi_terminal_input",
            {
                "panelId": terminal["panelId"],
                "leaseId": terminal["leaseId"],
                "generation": terminal["generation"],
                "inputSequence": "1",
                "text": "bye\r",
            },
        )
        read = await agent.ok(
            "lomi_terminal_read",
            {"panelId": terminal["panelId"], "screen": False, "waitFor": {"exit": True}},
        )
        assert read["exited"] == {"code": 7, "signal": None}, dump(read)

        deadline = time.monotonic() + WAIT_DEADLINE
        cursor, seen = None, []
        while True:
            page = await agent.ok("lomi_events_read", {"retryEpoch": epoch, **({"cursor": cursor} if cursor else {})})
            seen += page["panelEvents"]
            cursor = page["nextCursor"]
            if any(e["kind"] == "exited" for e in seen) or time.monotonic() > deadline:
                break
            await anyio.sleep(0.05)
        mine = [e for e in seen if e["panelId"] == terminal["panelId"]]
        assert any(e["kind"] == "output" and int(e["outputCursor"]) > 0 for e in mine), dump(seen)
        exits = [e for e in mine if e["kind"] == "exited"]
        assert len(exits) == 1 and exits[0]["exitCode"] == 7, dump(seen)
        assert "secret-output-bytes" not in dump(page) and "secret-output-bytes" not in dump(seen)
        # The operation feed still carries the create's state changes.
        first = await agent.ok("lomi_events_read", {"retryEpoch": epoch})
        assert [e["state"] for e in first["events"]][-1] == "succeeded", dump(first)
