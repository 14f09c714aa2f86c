"""Faults of a running Lomi, the way they happen in real use.

A full data disk: `lomi serve` keeps its data on a small tmpfs that a filler file fills while an
agent works. Every mutation is then refused with STORE_UNAVAILABLE before its effect starts (no
name changed, no file written, no terminal started), reads go on, and once room is freed the
same agent's next mutations succeed without a restart; the store passes SQLite's own
integrity check afterwards.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import Lomi, McpFactory, dump, integrity

pytestmark = pytest.mark.anyio


@pytest.fixture
def small_disk(tmp_path: Path):
    disk = tmp_path / "data"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Writes a filler file until the disk is full; returns it."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError:
            pass
        # The last bytes that fit.
        try:
            while True:
                out.write(b"\0" * 512)
        except OSError:
            pass
    return filler


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

            filler = fill(small_disk)
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
        assert integrity(small_disk) == "ok"
    finally:
        lomi.kill()
