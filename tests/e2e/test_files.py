"""Project files over MCP: reads with disk revisions, compare-and-swap writes through the
operation engine, retries that write once, deletes that wait for the person, and paths that
never leave the project."""

import base64
import hashlib
import os
import subprocess

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


async def test_folders_are_made_on_request_and_compared_by_revision(lomi, workspaces, mcp, tmp_path):
    """An agent can build a tree in an empty project: a missing folder says how to make it,
    createParents and lomi_dir_create make folders, and a stale folder revision is refused."""
    a, _ = workspaces
    project = tmp_path / "project-a"
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        epoch = (await agent.connect(ws))["retryEpoch"]

        async def run(tool, key, **arguments):
            answer = await agent.ok(tool, dict(arguments, workspaceId=ws, retryEpoch=epoch, requestKey=key))
            return await agent.settle(answer["operationId"])

        missing = await run("lomi_file_create", "f1", path="a/b/c.txt", text="deep\n")
        assert (missing["state"], missing["effectState"], missing["error"]["code"]) == ("failed", "none", "NOT_FOUND"), dump(missing)
        assert "lomi_dir_create" in missing["error"]["message"] and "createParents" in missing["error"]["message"], dump(missing)
        assert not (project / "a").exists()

        made = await run("lomi_file_create", "f2", path="a/b/c.txt", text="deep\n", createParents=True)
        assert made["state"] == "succeeded", dump(made)
        assert (project / "a/b/c.txt").read_bytes() == b"deep\n"

        folder = await run("lomi_dir_create", "d1", path="docs")
        assert folder["state"] == "succeeded" and folder["result"]["path"] == "docs", dump(folder)
        assert (project / "docs").is_dir()
        listed = await agent.ok("lomi_dir_list", {"workspaceId": ws, "path": "docs"})
        assert listed["directoryRevision"] == folder["result"]["directoryRevision"], dump(listed)
        twice = await run("lomi_dir_create", "d2", path="docs")
        assert (twice["state"], twice["error"]["code"]) == ("failed", "REVISION_MISMATCH"), dump(twice)
        nested = await run("lomi_dir_create", "d3", path="x/y/z", createParents=True)
        assert nested["state"] == "succeeded" and (project / "x/y/z").is_dir(), dump(nested)

        # Compare-and-set on the folder: the revision seen in a listing, then someone adds a file.
        seen = listed["directoryRevision"]
        first = await run("lomi_file_create", "p1", path="docs/one.md", text="1\n", expectedParentRevision=seen)
        assert first["state"] == "succeeded", dump(first)
        stale = await run("lomi_file_create", "p2", path="docs/two.md", text="2\n", expectedParentRevision=seen)
        assert (stale["state"], stale["effectState"], stale["error"]["code"]) == ("failed", "none", "REVISION_MISMATCH"), dump(stale)
        assert not (project / "docs/two.md").exists()

        moved = await run("lomi_file_rename", "r1", **{"from": "docs/one.md", "to": "archive/2026/one.md", "createParents": True})
        assert moved["state"] == "succeeded", dump(moved)
        assert (project / "archive/2026/one.md").read_bytes() == b"1\n"
        # Nothing outside the project: a folder path may not climb out, by `..` or a symlink.
        outside = tmp_path / "outside-dirs"
        outside.mkdir()
        os.symlink(outside, project / "link")
        for key, path in (("esc1", "../outside-dirs/new"), ("esc2", "link/new/deeper")):
            escaped = await run("lomi_dir_create", key, path=path, createParents=True)
            assert (escaped["state"], escaped["effectState"]) == ("failed", "none"), dump(escaped)
            assert escaped["error"]["code"] == "INVALID_ARGUMENT", dump(escaped)
        assert list(outside.iterdir()) == []


async def test_a_folder_on_a_full_disk_is_no_space_with_no_effect(lomi, mcp, tmp_path):
    """A disk out of room for one more folder (a tmpfs with 4 inodes) answers NO_SPACE, not an
    unknown outcome: a failed mkdir made nothing."""
    disk = tmp_path / "tiny-disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,nr_inodes=4", "tmpfs", str(disk)], check=True)
    try:
        workspace = lomi.add_workspace("Tiny disk", disk)
        ws = workspace["workspaceId"]
        token = lomi.create_token(ws)["token"]
        async with mcp.session(token=token) as agent:
            epoch = (await agent.connect(ws))["retryEpoch"]
            states = []
            for index in range(8):
                op = await agent.ok("lomi_dir_create", {
                    "workspaceId": ws, "path": f"d{index}", "retryEpoch": epoch, "requestKey": f"d{index}",
                })
                op = await agent.settle(op["operationId"])
                states.append((op["state"], op["effectState"], (op.get("error") or {}).get("code")))
                if op["state"] != "succeeded":
                    break
            assert states[-1] == ("failed", "none", "NO_SPACE"), dump(states)
            assert sorted(p.name for p in disk.iterdir()) == [f"d{i}" for i in range(len(states) - 1)]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


async def test_a_retry_after_its_project_left_the_workspace_is_the_prior_operation(lomi, workspaces, mcp, tmp_path):
    """The request names its project; the person removes that project from the workspace; the
    same request again answers its operation (never NOT_FOUND), and nothing is written again."""
    a, _ = workspaces
    ws = a["workspaceId"]
    docs = tmp_path / "docs"
    docs.mkdir()
    project = lomi.cli("workspace", "add-project", ws, str(docs))["project"]["projectId"]
    token = lomi.create_token(ws)["token"]
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(ws))["retryEpoch"]
        create = {
            "workspaceId": ws, "projectId": project, "path": "notes.md", "text": "first\n",
            "retryEpoch": epoch, "requestKey": "in-docs",
        }
        op = await agent.settle((await agent.ok("lomi_file_create", create))["operationId"])
        assert op["state"] == "succeeded", dump(op)
        lomi.cli("workspace", "remove-project", ws, project)
        (docs / "notes.md").write_text("changed by the person\n")
        again = await agent.ok("lomi_file_create", create)
        assert again["operationId"] == op["operationId"] and again["state"] == "succeeded", dump(again)
        assert (docs / "notes.md").read_text() == "changed by the person\n"
        # A new request for the removed project is refused before anything is recorded.
        await agent.error("lomi_file_create", dict(create, requestKey="after-removal"), "NOT_FOUND")
