"""Faults of a running Lomi, the way they happen in real use.

A full data disk: `lomi serve` keeps its data on a small tmpfs that a filler file fills while an
agent works. Every mutation is then refused with STORE_UNAVAILABLE before its effect starts (no
name changed, no file written, no terminal started), reads go on, and once room is freed the
same agent's next mutations succeed without a restart; the store passes SQLite's own
integrity check afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import Lomi, McpFactory, dump, fill_disk, integrity
from conftest import small_disk as mounted_small_disk

pytestmark = pytest.mark.anyio


@pytest.fixture
def small_disk(tmp_path: Path):
    disk = tmp_path / "data"
    disk.mkdir()
    with mounted_small_disk(disk):
        yield disk


async def test_a_full_data_disk_refuses_work_before_its_effect_and_recovers(small_disk, tmp_path, transcript):
    logs = tmp_path / "logs"
    logs.mkdir()
    lomi = Lomi(small_disk, logs, transcript)
    lomi.start()
    try:
        project = tmp_path / "project"
        workspace = lomi.add_workspace("Full disk", project)
        ws = workspace["workspaceId"]
        token = lomi.create_token(ws)["token"]
        async with McpFactory(lomi, transcript).session(token=token) as agent:
            epoch = (await agent.connect(ws))["retryEpoch"]
            keys = iter(range(1000))

            async def mutate(tool: str, args: dict[str, Any]):
                return await agent.call(tool, dict(args, retryEpoch=epoch, requestKey=f"k{next(keys)}"))

            async def revision() -> str:
                return (await agent.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]

            filler = fill_disk(small_disk)
            before = await revision()
            refused = [
                await mutate("lomi_workspace_update", {
                    "workspaceId": ws, "expectedRevision": before,
                    "change": {"rename": {"name": "Renamed while full"}},
                }),
                await mutate("lomi_file_create", {"workspaceId": ws, "path": "written-while-full.txt", "text": "x"}),
                await mutate("lomi_terminal_create", {
                    "workspaceId": ws, "title": "Shell", "cwdRelative": "", "expectedRevision": before,
                }),
            ]
            for envelope in refused:
                assert envelope["status"] == "error" and envelope["code"] == "STORE_UNAVAILABLE", dump(envelope)
                assert "lomi" in envelope["message"].lower() or "disk" in envelope["message"].lower(), envelope["message"]
            # The person is told: `lomi store status` (and the window) say writes are failing.
            failing = lomi.cli("store", "status")["writeFailure"]
            assert failing and "full" in failing["message"], dump(failing)
            # No effect started: the name, the project and the layout are as they were.
            listed = await agent.ok("lomi_workspace_list", {})
            [mine] = [w for w in listed["workspaces"] if w["workspaceId"] == ws]
            assert mine["name"] == "Full disk", dump(mine)
            assert not (project / "written-while-full.txt").exists()
            panels = await agent.ok("lomi_panel_list", {"workspaceId": ws})
            assert panels["panels"] == [] and panels["domainRevision"] == before, dump(panels)

            # Room again: the same agent goes on, no restart.
            filler.unlink()
            done = await mutate("lomi_workspace_update", {
                "workspaceId": ws, "expectedRevision": before,
                "change": {"rename": {"name": "Renamed after"}},
            })
            assert done["status"] == "ok", dump(done)
            settled = await agent.settle(done["data"]["operationId"])
            assert settled["state"] == "succeeded", dump(settled)
            written = await mutate("lomi_file_create", {"workspaceId": ws, "path": "written-after.txt", "text": "after"})
            settled = await agent.settle(written["data"]["operationId"])
            assert settled["state"] == "succeeded", dump(settled)
            assert (project / "written-after.txt").read_text() == "after"
            assert lomi.cli("store", "status")["writeFailure"] is None
        assert integrity(small_disk) == "ok"
    finally:
        lomi.kill()
