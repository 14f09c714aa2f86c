"""Decisions that show their effect: with the person's policy set to ask, an agent calls one
tool of each mutating family, and each waiting operation's `effect` (the `decisionList` reply,
`lomi decisions`) shows what it will do in the person's terms: the diff against the disk, a
deleted file's size and first lines, from/to, the staged diff and message, the command, the
script, the address, the message with provider and model, the phone."""

from __future__ import annotations

import json

import pytest

from conftest import dump
from effects_scenario import Waiting, each_family, prepare

# The test adb server and phones; `adb_server_for_serve` points `lomi serve` at that server.
from test_android import adb, adb_server_for_serve, phones  # noqa: F401

pytestmark = pytest.mark.anyio


async def test_each_familys_waiting_operation_shows_its_effect(lomi, workspaces, mcp, tmp_path, adb, phones):
    a, _ = workspaces
    project = tmp_path / "project-a"
    head = prepare(lomi, project)
    token = lomi.create_token(a["workspaceId"])["token"]
    phone = phones()
    adb.connect(phone.serial)
    seen: list[str] = []

    async def see(waiting: Waiting) -> None:
        listed = [d for d in await lomi.acli("decisions") if d["operationId"] == waiting.operation_id]
        assert len(listed) == 1, dump(listed)
        effect = listed[0]["effect"]
        assert effect["kind"] == waiting.kind, dump(effect)
        shown = json.dumps(effect, ensure_ascii=False)
        for text in waiting.shows:
            assert text in shown, f"{waiting.tool}: {text!r} not in {dump(effect)}"
        diff = effect.get("diff") or effect.get("stagedDiff") or ""
        for line in waiting.added + waiting.removed:
            assert line in diff.splitlines(), f"{waiting.tool}: {line!r} not a line of\n{diff}"
        # `lomi decisions` (without --json) shows the person the same effect.
        words = lomi.run("decisions").stdout
        assert effect["summary"] in words, words
        for text in waiting.shows:
            assert text.split("\n")[0] in words, f"{waiting.tool}: {text!r} not in\n{words}"
        seen.append(waiting.tool)
        await lomi.acli("decide", waiting.operation_id, "approve" if waiting.approve else "deny")

    async with mcp.session(token=token) as agent:
        await each_family(agent, a["workspaceId"], project, head, see, phone_serial=phone.serial)
    assert len(seen) == 14, seen
