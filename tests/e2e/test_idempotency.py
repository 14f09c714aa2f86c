"""Retry identity: the same request is the same operation, on the same session, over a new
transport session of the same pairing, or 32 times at once; another request under the same key
is a conflict; other pairings and other connections never see the receipt."""

import asyncio
import contextlib

import pytest

from conftest import dump, rename_args

pytestmark = pytest.mark.anyio

TOOL = "lomi_workspace_update"


async def approved_session(lomi, mcp, workspace):
    """Opens a token session granted `workspace`; returns (token, session context manager)."""
    created = lomi.create_token(workspace["workspaceId"])
    return created["token"], mcp.session(token=created["token"])


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"name": "Another name"}, id="other-name"),
        pytest.param({"revision": "2"}, id="other-revision"),
        pytest.param({"layout": []}, id="other-change"),
    ],
)
async def test_same_key_same_payload_is_one_operation_other_payload_conflicts(lomi, workspaces, mcp, other):
    a, _ = workspaces
    token, session = await approved_session(lomi, mcp, a)
    async with session as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        request = rename_args(a["workspaceId"], revision, epoch, "same-key", "Once")

        first = await agent.ok(TOOL, request)
        await agent.settle(first["operationId"])
        # The retry carries the original revision, which is stale now: still the same operation.
        for _ in range(3):
            retry = await agent.ok(TOOL, request)
            assert retry["operationId"] == first["operationId"], dump([first, retry])
            assert retry["state"] == "succeeded", dump(retry)

        workspace = lomi.workspace(a["workspaceId"])
        assert workspace["domainRevision"] == str(int(revision) + 1), "renamed more than once"
        assert workspace["name"] == "Once"
        listed = (await agent.ok("lomi_workspace_list"))["workspaces"][0]
        assert listed["domainRevision"] == workspace["domainRevision"]

        changed = dict(request)
        if "name" in other:
            changed["change"] = {"rename": {"name": other["name"]}}
        if "revision" in other:
            changed["expectedRevision"] = other["revision"]
        if "layout" in other:
            changed["change"] = {"layout": {"panelOrder": other["layout"]}}
        conflict = await agent.error(TOOL, changed, "IDEMPOTENCY_CONFLICT")
        assert first["operationId"] in conflict["message"], dump(conflict)

        assert lomi.workspace(a["workspaceId"]) == workspace, "a conflicting request changed something"
        receipts = [o for o in lomi.cli("operation", "list") if o["requestKey"] == "same-key"]
        assert [o["operationId"] for o in receipts] == [first["operationId"]], dump(receipts)


async def test_same_pairing_new_transport_session_finds_its_receipt(lomi, workspaces, mcp):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"], name="first-token")["token"]
    key_lookup = {"requestKey": "over-two-sessions", "tool": TOOL}

    # Session 1: connect, mutate, close the transport.
    async with mcp.session(token=token) as first:
        connection = await first.connect(a["workspaceId"])
        epoch = connection["retryEpoch"]
        update = await first.ok(
            TOOL,
            rename_args(a["workspaceId"], connection["domainRevision"], epoch, "over-two-sessions", "Two"),
        )
        operation_id = update["operationId"]
        await first.settle(operation_id)

    # Session 2, same token: the same connection (same epoch) finds the receipt by key and id.
    async with mcp.session(token=token) as second:
        found = await second.ok("lomi_operation_get", {"retryEpoch": epoch, **key_lookup})
        assert found["operationId"] == operation_id, dump(found)
        assert found["state"] == "succeeded", dump(found)
        by_id = await second.ok("lomi_operation_get", {"operationId": operation_id})
        assert by_id == found
        # Retrying the whole original request over the new session is the same operation too.
        retry = await second.ok(
            TOOL,
            rename_args(a["workspaceId"], connection["domainRevision"], epoch, "over-two-sessions", "Two"),
        )
        assert retry["operationId"] == operation_id, dump(retry)

        # Another epoch of the same pairing is another connection: its key lookup finds nothing.
        other_epoch = (await second.connect(a["workspaceId"]))["retryEpoch"]
        assert other_epoch != epoch
        await second.error("lomi_operation_get", {"retryEpoch": other_epoch, **key_lookup}, "NOT_FOUND")

    # Another pairing (its own token) sees nothing of it, by id or by key.
    stranger_token = lomi.create_token(a["workspaceId"], name="second-token")["token"]
    async with mcp.session(token=stranger_token) as stranger:
        for lookup in ({"operationId": operation_id}, {"retryEpoch": epoch, **key_lookup}):
            denied = await stranger.error("lomi_operation_get", lookup, "NOT_FOUND")
            assert "Two" not in dump(denied), dump(denied)
        await stranger.error("lomi_events_read", {"retryEpoch": epoch}, "RETRY_EPOCH_INVALID")
        await stranger.error("lomi_operation_cancel", {"operationId": operation_id}, "NOT_FOUND")

    assert lomi.workspace(a["workspaceId"])["domainRevision"] == str(int(connection["domainRevision"]) + 1)


@pytest.mark.parametrize("sessions", [1, 4], ids=["one-session", "four-sessions-one-token"])
async def test_concurrent_duplicates_are_one_operation(lomi, workspaces, mcp, sessions):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        request = rename_args(
            a["workspaceId"], connection["domainRevision"], connection["retryEpoch"], "burst", "Burst"
        )
        async with contextlib.AsyncExitStack() as stack:
            # Extra sessions of the same token pairing present the same epoch: same connection.
            agents = [agent] + [
                await stack.enter_async_context(mcp.session(token=token)) for _ in range(sessions - 1)
            ]
            answers = await asyncio.gather(
                *(agents[i % len(agents)].ok(TOOL, request) for i in range(32))
            )

        ids = {answer["operationId"] for answer in answers}
        assert len(ids) == 1, dump(answers)
        (operation_id,) = ids
        settled = await agent.settle(operation_id)
        assert settled["state"] == "succeeded", dump(settled)

    workspace = lomi.workspace(a["workspaceId"])
    assert workspace["domainRevision"] == str(int(connection["domainRevision"]) + 1), dump(workspace)
    assert workspace["name"] == "Burst"
    receipts = [o for o in lomi.cli("operation", "list") if o["requestKey"] == "burst"]
    assert len(receipts) == 1, dump(receipts)
