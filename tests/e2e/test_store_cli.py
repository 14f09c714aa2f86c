"""`lomi store status|reconcile` while Lomi runs: the running broker answers (it owns the store),
and the counts follow the operations agents make."""

import pytest

from conftest import dump, rename_args

pytestmark = pytest.mark.anyio


async def test_store_commands_work_while_lomi_runs(lomi, workspaces, mcp):
    a, _ = workspaces
    before = lomi.cli("store", "status")
    assert before["receipts"] == 0 and before["receiptCap"] == 4096, dump(before)
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        update = await agent.ok(
            "lomi_workspace_update",
            rename_args(a["workspaceId"], connection["domainRevision"], connection["retryEpoch"], "s1", "Stored"),
        )
        await agent.settle(update["operationId"])
        seen = await agent.ok("lomi_store_status")
    after = lomi.cli("store", "status")
    assert after["receipts"] == 1 and after["retryEpochs"] == 1, dump(after)
    assert after["receiptsByState"]["succeeded"] == 1, dump(after)
    assert seen["receipts"] == 1, dump(seen)
    text = lomi.run("store", "status")
    assert text.returncode == 0 and "receipts:      1 of 4096" in text.stdout, text.stdout + text.stderr
    # Nothing has expired, so nothing is removed (and no --yes is needed to learn that).
    done = lomi.run("store", "reconcile")
    assert done.returncode == 0 and "nothing removed" in done.stdout, done.stdout + done.stderr
    assert lomi.cli("store", "status")["receipts"] == 1
