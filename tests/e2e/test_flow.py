"""The whole agent flow through a third-party MCP client: pending pairing, the person's approval
on the command line, a granted workspace only, connect, a mutation, its receipt by id and by
key, and the event feed."""

import pytest

from conftest import dump

pytestmark = pytest.mark.anyio


async def test_pairing_to_receipt_and_events(lomi, workspaces, mcp):
    a, b = workspaces
    # The person lets clients without a token pair for their session (off by default: they are
    # answered 401 and sign in, test_oauth.py).
    lomi.allow_session_pairing()
    async with mcp.session(client_name="flow-agent") as agent:
        # 1. Unauthenticated: a pending pairing bound to this MCP session.
        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "pending", dump(status)
        assert status["clientName"] == "flow-agent", dump(status)
        assert status["grantedWorkspaces"] == []
        code = status["verificationCode"]
        assert code and code in status["message"], dump(status)

        # 2. Every other tool answers PAIRING_REQUIRED, naming the code the person will see.
        required = await agent.error("lomi_workspace_list", {}, "PAIRING_REQUIRED")
        assert code in required["message"], dump(required)
        assert required["details"] == {"pairingId": status["pairingId"], "verificationCode": code}
        await agent.error("lomi_connect", {"workspaceId": a["workspaceId"]}, "PAIRING_REQUIRED")

        # 3. The person sees the same code and approves, granting A only.
        listed = lomi.pairing(status["pairingId"])
        assert listed["state"] == "pending" and listed["verificationCode"] == code, dump(listed)
        assert listed["credential"] == "session", dump(listed)
        approved = lomi.cli("pairing", "approve", status["pairingId"], "--workspace", a["workspaceId"])
        assert approved["grants"] == [a["workspaceId"]], dump(approved)

        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "approved" and status["grantedWorkspaces"] == [a["workspaceId"]]

        # 4. Only A is listed; nothing of B shows anywhere in the answer.
        listing = await agent.call("lomi_workspace_list")
        ids = [w["workspaceId"] for w in listing["data"]["workspaces"]]
        assert ids == [a["workspaceId"]], dump(listing)
        text = dump(listing) + "".join(c.text for c in listing.raw.content if c.type == "text")
        assert b["workspaceId"] not in text and b["name"] not in text, "workspace B leaked"

        # 5. Connect, then rename with the current domainRevision.
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        assert revision == listing["data"]["workspaces"][0]["domainRevision"]
        assert connection["brokerInstanceId"] == lomi.broker["brokerInstanceId"]
        update = await agent.rename(a["workspaceId"], revision, epoch, "rename-1", "Renamed by agent")
        assert update["status"] == "ok", dump(update)
        operation_id = update["data"]["operationId"]
        settled = await agent.settle(operation_id)

        # 6. The receipt, by id and by key, shows the confirmed effect and the new name.
        by_key = await agent.ok(
            "lomi_operation_get",
            {"retryEpoch": epoch, "requestKey": "rename-1", "tool": "lomi_workspace_update"},
        )
        for op in (settled, by_key):
            assert op["operationId"] == operation_id, dump(op)
            assert (op["state"], op["effectState"]) == ("succeeded", "complete"), dump(op)
            assert op["result"]["workspace"]["name"] == "Renamed by agent", dump(op)
            assert op["result"]["workspace"]["domainRevision"] == str(int(revision) + 1), dump(op)
            assert op["retryEpoch"] == epoch and op["requestKey"] == "rename-1"
            assert op.get("error") is None, dump(op)
        assert lomi.workspace(a["workspaceId"])["name"] == "Renamed by agent"
        assert lomi.workspace(b["workspaceId"])["name"] == b["name"]

        # A new request made against the old revision is refused before admission, with the
        # current revision to re-read from.
        stale = await agent.rename(a["workspaceId"], revision, epoch, "rename-2", "Too late")
        assert stale["status"] == "error" and stale["code"] == "REVISION_MISMATCH", dump(stale)
        assert stale["details"]["currentRevision"] == str(int(revision) + 1), dump(stale)
        assert [o["requestKey"] for o in lomi.cli("operation", "list")] == ["rename-1"]

        # 7. The event feed of this connection shows the operation's state changes, in order.
        page = await agent.ok("lomi_events_read", {"retryEpoch": epoch})
        events = [e for e in page["events"] if e["operationId"] == operation_id]
        states = [e["state"] for e in events]
        assert states[0] == "queued" and states[-1] == "succeeded", dump(page)
        assert "running" in states, dump(page)
        assert events[-1]["effectState"] == "complete", dump(page)
        cursors = [int(e["cursor"]) for e in page["events"]]
        assert cursors == sorted(set(cursors)), dump(page)

        # 8. Reading on from nextCursor repeats nothing (and an empty page still has a cursor).
        again = await agent.ok("lomi_events_read", {"retryEpoch": epoch, "cursor": page["nextCursor"]})
        seen = {e["cursor"] for e in page["events"]}
        assert not seen & {e["cursor"] for e in again["events"]}, dump(again)
        assert again["events"] == [], dump(again)
        assert cursor_key(again["nextCursor"]) >= cursor_key(page["nextCursor"]), dump(again)

        # 9. A page bounded by maxEvents continues where it stopped, without repeats.
        first = await agent.ok("lomi_events_read", {"retryEpoch": epoch, "maxEvents": 1})
        second = await agent.ok(
            "lomi_events_read", {"retryEpoch": epoch, "maxEvents": 500, "cursor": first["nextCursor"]}
        )
        paged = [e["cursor"] for e in first["events"] + second["events"]]
        assert paged == [e["cursor"] for e in page["events"]], dump([first, second])


def cursor_key(cursor: str) -> tuple[int, ...]:
    """An events cursor is `OPERATIONS.PANELS`, a position in each feed."""
    return tuple(int(part) for part in cursor.split("."))
