"""Project files over MCP: reads with disk revisions, compare-and-swap writes through the
operation engine, retries that write once, deletes that wait for the person, and paths that
never leave the project."""

import base64
import hashlib
import os

import anyio
import pytest

from conftest import dump

pytestmark = pytest.mark.anyio


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def connected(lomi, workspaces, mcp_session):
    a, _ = workspaces
    connection = await mcp_session.connect(a["workspaceId"])
    return a, connection["retryEpoch"]


async def test_read_write_create_rename_with_revisions(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    (project / "notes.txt").write_bytes(b"line one\r\nline two\r\n")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        ws = a["workspaceId"]
        read = await agent.ok("lomi_file_read", {"workspaceId": ws, "path": "notes.txt"})
        assert read["diskRevision"] == sha(b"line one\r\nline two\r\n"), dump(read)
        assert (read["encoding"], read["lineEndings"], read["text"]) == ("utf8", "crlf", "line one\r\nline two\r\n")

        write = {
            "workspaceId": ws, "path": "notes.txt", "expectedDiskRevision": read["diskRevision"],
            "text": "line one\r\nline 2\r\n", "retryEpoch": epoch, "requestKey": "w1",
        }
        op = await agent.settle((await agent.ok("lomi_file_write", write))["operationId"])
        assert op["state"] == "succeeded" and op["result"]["diskRevision"] == sha(b"line one\r\nline 2\r\n"), dump(op)
        assert (project / "notes.txt").read_bytes() == b"line one\r\nline 2\r\n"
        # The retry of the same request is the same operation: one write.
        retry = await agent.ok("lomi_file_write", write)
        assert retry["operationId"] == op["operationId"], dump(retry)
        # A writer that saw the old revision is refused with the current one, and writes nothing.
        stale = dict(write, requestKey="w2", text="lost update\n")
        refused = await agent.settle((await agent.ok("lomi_file_write", stale))["operationId"])
        assert refused["state"] == "failed" and refused["error"]["code"] == "REVISION_MISMATCH", dump(refused)
        assert (project / "notes.txt").read_bytes() == b"line one\r\nline 2\r\n"

        binary = bytes(range(256))
        created = await agent.settle((await agent.ok("lomi_file_create", {
            "workspaceId": ws, "path": "blob.bin", "base64": base64.b64encode(binary).decode(),
            "retryEpoch": epoch, "requestKey": "c1",
        }))["operationId"])
        assert created["state"] == "succeeded", dump(created)
        got = await agent.ok("lomi_file_read", {"workspaceId": ws, "path": "blob.bin"})
        assert got["text"] is None and base64.b64decode(got["base64"]) == binary, dump(got)
        again = await agent.settle((await agent.ok("lomi_file_create", {
            "workspaceId": ws, "path": "blob.bin", "text": "x", "retryEpoch": epoch, "requestKey": "c2",
        }))["operationId"])
        assert again["state"] == "failed", dump(again)

        listing = await agent.ok("lomi_dir_list", {"workspaceId": ws, "path": ""})
        names = [e["name"] for e in listing["entries"]]
        assert names == sorted(names) and {"notes.txt", "blob.bin"} <= set(names), dump(listing)
        moved = await agent.settle((await agent.ok("lomi_file_rename", {
            "workspaceId": ws, "from": "blob.bin", "to": "moved.bin", "retryEpoch": epoch, "requestKey": "r1",
        }))["operationId"])
        assert moved["state"] == "succeeded", dump(moved)
        after = await agent.ok("lomi_dir_list", {"workspaceId": ws, "path": ""})
        assert after["directoryRevision"] != listing["directoryRevision"], dump(after)
        assert (project / "moved.bin").read_bytes() == binary


async def test_delete_waits_for_the_person(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    (project / "old.txt").write_text("bye\n")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        request = {
            "workspaceId": a["workspaceId"], "path": "old.txt", "expectedRevision": sha(b"bye\n"),
            "retryEpoch": epoch, "requestKey": "d1",
        }
        answers = []

        async def delete() -> None:
            answers.append(await agent.ok("lomi_file_delete", request))

        async with anyio.create_task_group() as tg:
            tg.start_soon(delete)
            op = await anyio.to_thread.run_sync(lambda: lomi.wait_operation_for_key("d1", "awaiting_user"))
            assert (project / "old.txt").exists(), "nothing is deleted before the person decides"
            await lomi.acli("decide", op["operationId"], "approve")
        settled = await agent.settle(op["operationId"])
        assert settled["state"] == "succeeded", dump(settled)
        assert not (project / "old.txt").exists()


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "sub/../../outside.txt", "a\u0000b", "link/secret.txt"])
async def test_paths_never_leave_the_project(lomi, workspaces, mcp, tmp_path, path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep out\n")
    (project / "sub").mkdir()
    os.symlink(outside, project / "link")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        envelope = await agent.call("lomi_file_read", {"workspaceId": a["workspaceId"], "path": path})
        assert envelope["status"] == "error" and envelope["code"] in ("INVALID_ARGUMENT", "NOT_FOUND"), dump(envelope)
        assert "keep out" not in dump(envelope)
        op = await agent.ok("lomi_file_create", {
            "workspaceId": a["workspaceId"], "path": path, "text": "pwned", "retryEpoch": epoch, "requestKey": "esc",
        })
        settled = await agent.settle(op["operationId"])
        assert settled["state"] == "failed", dump(settled)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "keep out\n"
    assert not (tmp_path / "outside.txt").exists()
