"""Receipt retention without dead ends: five agents fill the store to its cap, the person runs
`lomi store reconcile --retire idle`, and work goes on; a retry under a retired epoch is refused
and its effect is not repeated; the history keeps every receipt; the SQLite file stays sound.

The fast test starts serve with a small cap (the hidden `--store-cap`, here through its
`LOMI_STORE_CAP` variable); the soak suite (`scripts/soak`, LOMI_SOAK_TESTS=1) runs the same
story at the real 4,096 cap with 20,000 mutations in all (about 8 minutes, so not in CI).
"""

import json
import os
import time

import pytest

from conftest import dump, integrity, rename_args

pytestmark = pytest.mark.anyio

AGENTS = 5
SOAK = os.environ.get("LOMI_SOAK_TESTS") == "1"


class Agent:
    """One pairing with its own workspace, its connection and the revision it last saw."""

    def __init__(self, session, workspace_id: str, index: int) -> None:
        self.session = session
        self.workspace_id = workspace_id
        self.index = index
        self.epoch = ""
        self.revision = ""
        self.done = 0
        self.last_request: dict | None = None

    async def connect(self) -> None:
        connection = await self.session.connect(self.workspace_id)
        self.epoch, self.revision = connection["retryEpoch"], connection["domainRevision"]

    async def rename(self, serial: int) -> dict:
        request = rename_args(
            self.workspace_id, self.revision, self.epoch, f"k-{self.index}-{serial}", f"A{self.index} #{serial}"
        )
        envelope = await self.session.call("lomi_workspace_update", request)
        if envelope["status"] == "ok":
            op = envelope["data"]
            if op["state"] != "succeeded":
                op = await self.session.settle(op["operationId"])
            assert op["state"] == "succeeded", dump(op)
            self.revision = str(int(self.revision) + 1)
            self.done += 1
            self.last_request = request
        return envelope


@pytest.mark.long
@pytest.mark.parametrize(
    "cap,total",
    [
        pytest.param(150, 260, id="small-cap"),
        pytest.param(
            None,
            20_000,
            id="real-cap-20000",
            marks=pytest.mark.skipif(not SOAK, reason="soak suite: scripts/soak (LOMI_SOAK_TESTS=1)"),
        ),
    ],
)
async def test_at_the_cap_the_person_retires_idle_epochs_and_work_goes_on(lomi, mcp, tmp_path, monkeypatch, cap, total):
    if cap is not None:
        monkeypatch.setenv("LOMI_STORE_CAP", str(cap))
        lomi.restart("SIGTERM")
    real_cap = cap or 4096
    assert lomi.cli("store", "status")["receiptCap"] == real_cap

    workspaces = [lomi.add_workspace(f"W{i}", tmp_path / f"project-{i}") for i in range(AGENTS)]
    tokens = [lomi.create_token(w["workspaceId"], name=f"agent-{i}")["token"] for i, w in enumerate(workspaces)]
    sessions = [mcp.session(token=t, client_name=f"agent-{i}") for i, t in enumerate(tokens)]
    opened = [await s.__aenter__() for s in sessions]
    try:
        agents = [Agent(session, w["workspaceId"], i) for i, (session, w) in enumerate(zip(opened, workspaces))]
        for agent in agents:
            await agent.connect()

        serial = 0
        levels_seen = set()
        retirements = 0
        retired_requests = []  # (agent, request) made under an epoch that was later retired
        while sum(a.done for a in agents) < total:
            agent = agents[serial % AGENTS]
            serial += 1
            envelope = await agent.rename(serial)
            if envelope["status"] == "ok":
                done = sum(a.done for a in agents)
                if done % 25 == 0 or done in (int(real_cap * 0.75), int(real_cap * 0.9) + 1):
                    levels_seen.add((await agent.session.ok("lomi_store_status"))["warningLevel"])
                continue
            # The cap: the agent is told exactly what the person must do, and sees the room left.
            assert envelope["code"] == "RESOURCE_EXHAUSTED", dump(envelope)
            assert "lomi store reconcile --retire idle" in envelope["message"], dump(envelope)
            status = await agent.session.ok("lomi_store_status")
            assert (status["warningLevel"], status["receiptsRemaining"]) == ("full", 0), dump(status)
            assert "lomi store reconcile --retire idle" in status["maintenance"], dump(status)
            person = lomi.cli("store", "status")
            assert person["receipts"] == real_cap and person["warningLevel"] == "full", dump(person)
            assert len(person["pairings"]) == AGENTS, dump(person)

            # Without --yes (no terminal) the command says what it would do and changes nothing.
            # Idle means quiet for --idle-for: agents stuck at the cap are quiet, so wait 1 s.
            time.sleep(1.2)
            refused = lomi.run("store", "reconcile", "--retire", "idle", "--idle-for", "1s")
            assert refused.returncode != 0 and "--yes" in refused.stderr, refused.stderr
            assert f"retire {AGENTS} retry epoch(s)" in refused.stderr, refused.stderr
            assert lomi.cli("store", "status")["receipts"] == real_cap
            done = lomi.cli("store", "reconcile", "--retire", "idle", "--idle-for", "1s", "--yes")
            assert done["retryEpochsRetired"] == AGENTS, dump(done)
            assert done["receiptsArchived"] == real_cap, dump(done)
            assert done["warningLevel"] == "none", dump(done)
            retirements += 1
            retired_requests += [(a, a.last_request) for a in agents if a.last_request]

            # A retry of a request under a retired epoch is refused, and nothing happens again.
            for a, request in retired_requests[-AGENTS:]:
                before = lomi.workspace(a.workspace_id)
                again = await a.session.error("lomi_workspace_update", request, "RETRY_EPOCH_EXPIRED")
                assert "the person ended" in again["message"], dump(again)
                assert lomi.workspace(a.workspace_id) == before, "a refused retry changed the workspace"
            for a in agents:
                await a.connect()
                a.last_request = None

        assert retirements >= 1
        if cap is not None:
            assert {"warning", "critical"} <= levels_seen, levels_seen
        done_total = sum(a.done for a in agents)

        # The history holds every receipt that left the live store; nothing is in both places.
        status = lomi.cli("store", "status")
        assert status["historyReceipts"] == retirements * real_cap, dump(status)
        assert status["receipts"] + status["historyReceipts"] == done_total, dump(status)
        listed = lomi.cli("operation", "list", "--history", "--limit", "5")
        assert len(listed) == 5 and all(op["state"] == "succeeded" for op in listed), dump(listed)
        export = tmp_path / "history.jsonl"
        exported = lomi.run("operation", "export", "--history", str(export))
        assert exported.returncode == 0, exported.stderr
        lines = [json.loads(line) for line in export.read_text().splitlines()]
        assert len(lines) == status["historyReceipts"]
        assert len({line["operationId"] for line in lines}) == len(lines)
        assert [line["historySeq"] for line in lines] == sorted(line["historySeq"] for line in lines)
        first = lines[0]
        assert first["archivedBecause"] == "retired" and first["tool"] == "lomi_workspace_update", dump(first)
        assert [step["state"] for step in first["trail"]][-1] == "succeeded", dump(first)
        shown = lomi.cli("operation", "show", first["operationId"])
        assert shown["operationId"] == first["operationId"] and shown["archivedAt"], dump(shown)
        live = {op["operationId"] for op in lomi.cli("operation", "list", "--limit", "4096")}
        assert not live & {line["operationId"] for line in lines}, "a receipt is live and in the history"
    finally:
        for session in reversed(sessions):
            await session.__aexit__(None, None, None)
    assert lomi.stop() == 0
    assert integrity(lomi.data_dir) == "ok"
