"""Decisions and restarts: an operation that waits for the person (`lomi confirm`) settles on
`lomi decide`; one that is still waiting when Lomi stops, cleanly or by SIGKILL, reads as
outcome_unknown afterwards and is never applied; old retry epochs are refused."""

import anyio
import pytest

from conftest import dump, rename_args

pytestmark = pytest.mark.anyio

TOOL = "lomi_workspace_update"


def confirm_updates(lomi) -> None:
    answer = lomi.cli("confirm", TOOL, json_flag=False)
    assert answer == {"tool": TOOL, "confirm": True}, dump(answer)


async def wait_for_decision(lomi, agent, epoch: str, key: str) -> dict:
    """Both views agree the operation waits for the person: the agent's (by key) and the CLI's."""
    op = await anyio.to_thread.run_sync(lambda: lomi.wait_operation_for_key(key, "awaiting_user"))
    mine = await agent.ok("lomi_operation_get", {"retryEpoch": epoch, "requestKey": key, "tool": TOOL})
    assert mine["operationId"] == op["operationId"] and mine["state"] == "awaiting_user", dump(mine)
    assert mine["effectState"] == "none", dump(mine)
    return op


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_decide_settles_an_awaiting_user_operation(lomi, workspaces, mcp, decision):
    a, _ = workspaces
    confirm_updates(lomi)
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        request = rename_args(a["workspaceId"], revision, epoch, "needs-ok", "Decided")
        answers = []

        async def update() -> None:
            answers.append(await agent.ok(TOOL, request))

        async with anyio.create_task_group() as tg:
            tg.start_soon(update)
            op = await wait_for_decision(lomi, agent, epoch, "needs-ok")
            decided = await lomi.acli("decide", op["operationId"], decision)
            assert decided["operationId"] == op["operationId"], dump(decided)

        # The call answers with the operation (settled, or still settling if it gave up waiting).
        assert answers[0]["operationId"] == op["operationId"], dump(answers)
        settled = await agent.settle(op["operationId"])
        shown = lomi.cli("operation", "show", op["operationId"])
        assert {k: shown[k] for k in ("state", "effectState")} == {
            k: settled[k] for k in ("state", "effectState")
        }, dump([shown, settled])
        workspace = lomi.workspace(a["workspaceId"])
        if decision == "approve":
            assert (settled["state"], settled["effectState"]) == ("succeeded", "complete"), dump(settled)
            assert settled["result"]["workspace"]["name"] == "Decided", dump(settled)
            assert workspace["name"] == "Decided"
            assert workspace["domainRevision"] == str(int(revision) + 1)
        else:
            assert (settled["state"], settled["effectState"]) == ("failed", "none"), dump(settled)
            assert settled["error"]["code"] == "USER_DENIED", dump(settled)
            assert workspace["name"] == a["name"] and workspace["domainRevision"] == revision

        page = await agent.ok("lomi_events_read", {"retryEpoch": epoch})
        states = [e["state"] for e in page["events"] if e["operationId"] == op["operationId"]]
        assert states[:2] == ["queued", "awaiting_user"] and states[-1] == settled["state"], dump(page)

        # A decision is taken once; the retry of the request is the same, settled operation.
        stderr = lomi.cli_fails("decide", op["operationId"], "approve")
        assert "not waiting" in stderr, stderr
        retry = await agent.ok(TOOL, request)
        assert retry["operationId"] == op["operationId"] and retry["state"] == settled["state"]


async def test_agent_cancels_a_waiting_operation(lomi, workspaces, mcp):
    a, _ = workspaces
    confirm_updates(lomi)
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        answers = []

        async def update() -> None:
            answers.append(await agent.ok(TOOL, rename_args(a["workspaceId"], revision, epoch, "c", "No")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(update)
            op = await wait_for_decision(lomi, agent, epoch, "c")
            cancelled = await agent.ok("lomi_operation_cancel", {"operationId": op["operationId"]})
        assert (cancelled["state"], cancelled["effectState"]) == ("cancelled", "none"), dump(cancelled)
        assert answers[0]["operationId"] == op["operationId"]
        settled = await agent.settle(op["operationId"])
        assert settled["state"] == "cancelled", dump(settled)
        # Cancelling again changes nothing; the person can no longer approve it.
        again = await agent.ok("lomi_operation_cancel", {"operationId": op["operationId"]})
        assert again["state"] == "cancelled"
        lomi.cli_fails("decide", op["operationId"], "approve")
    workspace = lomi.workspace(a["workspaceId"])
    assert workspace["name"] == a["name"] and workspace["domainRevision"] == revision, dump(workspace)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
async def test_restart_leaves_waiting_operation_outcome_unknown(lomi, workspaces, mcp, how):
    a, _ = workspaces
    confirm_updates(lomi)
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        request = rename_args(a["workspaceId"], revision, epoch, "before-restart", "Never applied")
        # The call gives up waiting after a bounded time and answers with the waiting operation:
        # an operationId is admission, not effect.
        waiting = await agent.ok(TOOL, request)
        assert waiting["state"] == "awaiting_user" and waiting["effectState"] == "none", dump(waiting)
        operation_id = waiting["operationId"]

        # Stop while the agent's session is still open.
        lomi.restart(how)

    shown = lomi.cli("operation", "show", operation_id)
    assert (shown["state"], shown["effectState"]) == ("outcome_unknown", "unknown"), dump(shown)
    assert shown["settledAt"] is not None, dump(shown)
    # What to look at before doing anything again, for a workspace change.
    assert "lomi_workspace_list" in shown["recovery"], dump(shown)
    listed = [o for o in lomi.cli("operation", "list") if o["operationId"] == operation_id]
    assert len(listed) == 1 and listed[0]["state"] == "outcome_unknown", dump(listed)
    unchanged = lomi.workspace(a["workspaceId"])
    assert unchanged["name"] == a["name"] and unchanged["domainRevision"] == revision, dump(unchanged)
    # Nobody can resume it: the person's decision no longer reaches anything.
    lomi.cli_fails("decide", operation_id, "approve")

    # The token pairing survives the restart; its old epoch does not.
    async with mcp.session(token=token) as agent:
        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "approved", dump(status)
        await agent.error(TOOL, request, "RETRY_EPOCH_INVALID")
        await agent.error(
            TOOL, rename_args(a["workspaceId"], revision, epoch, "fresh-key", "Other"), "RETRY_EPOCH_INVALID"
        )
        await agent.error("lomi_events_read", {"retryEpoch": epoch}, "RETRY_EPOCH_INVALID")
        # The old connection's receipt is the person's to see, not the agent's.
        for lookup in (
            {"operationId": operation_id},
            {"retryEpoch": epoch, "requestKey": "before-restart", "tool": TOOL},
        ):
            gone = await agent.call("lomi_operation_get", lookup)
            assert gone["status"] == "error", dump(gone)
            assert gone["code"] in ("NOT_FOUND", "RETRY_EPOCH_INVALID"), dump(gone)

        # A fresh connection re-observes the real resource: the old name, the old revision.
        fresh = await agent.connect(a["workspaceId"])
        assert fresh["retryEpoch"] != epoch
        assert fresh["brokerInstanceId"] == lomi.broker["brokerInstanceId"] != connection["brokerInstanceId"]
        assert fresh["domainRevision"] == revision, dump(fresh)
        listing = await agent.ok("lomi_workspace_list")
        assert listing["workspaces"][0]["name"] == a["name"], dump(listing)
        store = await agent.ok("lomi_store_status")
        assert store["unsettledReceipts"] == 0, dump(store)

    assert lomi.workspace(a["workspaceId"]) == unchanged


async def test_sigkill_during_a_mutation_is_not_replayed(lomi, workspaces, mcp):
    a, _ = workspaces
    confirm_updates(lomi)
    token = lomi.create_token(a["workspaceId"])["token"]
    outcome = {}
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        request = rename_args(a["workspaceId"], revision, epoch, "in-flight", "Never applied")

        async def update() -> None:
            outcome["answer"] = await agent.raw(TOOL, request)

        async with anyio.create_task_group() as tg:
            tg.start_soon(update)
            # Kill while the HTTP request is open and the operation waits in the broker.
            op = await wait_for_decision(lomi, agent, epoch, "in-flight")
            lomi.kill()
            # The call had not answered; nothing can answer it now. (The SDK would report the
            # broken stream only after the server's SSE retry delay: do not wait for that.)
            assert "answer" not in outcome, dump(outcome["answer"].model_dump(by_alias=True, mode="json"))
            tg.cancel_scope.cancel()

    lomi.start()
    operation_id = op["operationId"]
    receipts = [o for o in lomi.cli("operation", "list") if o["requestKey"] == "in-flight"]
    assert [o["operationId"] for o in receipts] == [operation_id], dump(receipts)
    assert (receipts[0]["state"], receipts[0]["effectState"]) == ("outcome_unknown", "unknown")

    # Not replayed: after another full round trip through the broker, nothing has changed.
    async with mcp.session(token=token) as agent:
        fresh = await agent.connect(a["workspaceId"])
        assert fresh["domainRevision"] == revision
        await agent.error(TOOL, request, "RETRY_EPOCH_INVALID")
    workspace = lomi.workspace(a["workspaceId"])
    assert workspace["name"] == a["name"] and workspace["domainRevision"] == revision, dump(workspace)
    assert lomi.cli("operation", "show", operation_id)["state"] == "outcome_unknown"
    assert len(lomi.cli("operation", "list")) == 1


async def test_revoking_a_pairing_stops_its_waiting_operation(lomi, workspaces, mcp):
    """Authority is checked at dispatch: a decision taken after the revocation runs nothing,
    and the revoked agent's open call is refused rather than shown a result."""
    a, _ = workspaces
    confirm_updates(lomi)
    created = lomi.create_token(a["workspaceId"])
    async with mcp.session(token=created["token"]) as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        request = rename_args(a["workspaceId"], revision, epoch, "after-revoke", "AfterRevoke")
        answers = []

        async def update() -> None:
            answers.append(await agent.call(TOOL, request))

        async with anyio.create_task_group() as tg:
            tg.start_soon(update)
            op = await wait_for_decision(lomi, agent, epoch, "after-revoke")
            await lomi.acli("pairing", "revoke", created["pairingId"])
            await lomi.acli("decide", op["operationId"], "approve")
            settled = await anyio.to_thread.run_sync(lambda: lomi.wait_operation(op["operationId"], "failed"))

        assert answers[0]["status"] == "error" and answers[0]["code"] == "PAIRING_REVOKED", dump(answers)
        assert settled["effectState"] == "none" and settled["error"]["code"] == "PAIRING_REVOKED", dump(settled)
        workspace = lomi.workspace(a["workspaceId"])
        assert workspace["name"] == a["name"] and workspace["domainRevision"] == revision, dump(workspace)
