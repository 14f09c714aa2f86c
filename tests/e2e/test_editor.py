"""Editor documents over MCP: open/edit/save keep BOM and CRLF byte-exactly, stale buffer and disk
revisions are refused, dirty documents are never dropped silently, and workspace close settles
with partial effects when one save fails. (The person's concurrent edit is covered by the Rust
test `a_persons_edit_makes_a_stale_agent_edit_fail` in crates/lomi-files.)"""

import contextlib
import hashlib
import os
import subprocess

import pytest

from conftest import dump

pytestmark = pytest.mark.anyio


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_open_edit_save_keeps_bom_and_crlf(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    original = b"\xef\xbb\xbfline one\r\nline two\r\n"
    (project / "notes.txt").write_bytes(original)
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        epoch = (await agent.connect(ws))["retryEpoch"]
        doc = await agent.ok("lomi_editor_open", {"workspaceId": ws, "path": "notes.txt"})
        assert doc["bufferRevision"] == "1" and doc["diskRevision"] == sha(original), dump(doc)
        assert (doc["encoding"], doc["lineEndings"], doc["text"]) == ("utf8_bom", "crlf", "line one\r\nline two\r\n")
        again = await agent.ok("lomi_editor_open", {"workspaceId": ws, "path": "notes.txt"})
        assert again["documentId"] == doc["documentId"], dump(again)
        doc_id = doc["documentId"]

        # "two" is characters 15..18 of the text (the CRLF counts as two).
        edited = await agent.ok("lomi_editor_edit", {
            "documentId": doc_id, "expectedBufferRevision": "1", "edits": [{"start": 15, "end": 18, "text": "2"}],
        })
        assert edited["bufferRevision"] == "2" and edited["dirty"] is True, dump(edited)
        stale = await agent.error("lomi_editor_edit", {
            "documentId": doc_id, "expectedBufferRevision": "1", "edits": [{"start": 0, "end": 0, "text": "x"}],
        }, "REVISION_MISMATCH")
        assert stale["details"]["currentRevision"] == "2", dump(stale)
        await agent.error("lomi_editor_edit", {
            "documentId": doc_id, "expectedBufferRevision": "2", "edits": [{"start": 0, "end": 999, "text": "x"}],
        }, "INVALID_ARGUMENT")
        await agent.error("lomi_editor_close", {"documentId": doc_id}, "INVALID_ARGUMENT")

        save = {"documentId": doc_id, "expectedBufferRevision": "2", "retryEpoch": epoch, "requestKey": "s1"}
        op = await agent.settle((await agent.ok("lomi_editor_save", save))["operationId"])
        expected = b"\xef\xbb\xbfline one\r\nline 2\r\n"
        assert op["state"] == "succeeded" and op["result"]["diskRevision"] == sha(expected), dump(op)
        assert (project / "notes.txt").read_bytes() == expected
        # A retried save with the same request key is the same operation: one write.
        (project / "notes.txt").write_bytes(b"changed by someone\n")
        retry = await agent.ok("lomi_editor_save", save)
        assert retry["operationId"] == op["operationId"], dump(retry)
        assert (project / "notes.txt").read_bytes() == b"changed by someone\n"

        # The file changed on disk since the save: a new save is refused, the file untouched.
        await agent.ok("lomi_editor_edit", {
            "documentId": doc_id, "expectedBufferRevision": "2", "edits": [{"start": 0, "end": 0, "text": ">"}],
        })
        refused = await agent.settle((await agent.ok("lomi_editor_save", dict(
            save, expectedBufferRevision="3", requestKey="s2")))["operationId"])
        assert refused["state"] == "failed" and refused["error"]["code"] == "REVISION_MISMATCH", dump(refused)
        assert refused["effectState"] == "none", dump(refused)
        assert (project / "notes.txt").read_bytes() == b"changed by someone\n"

        closed = await agent.ok("lomi_editor_close", {"documentId": doc_id, "discard": True})
        assert closed["discarded"] is True, dump(closed)
        await agent.error("lomi_editor_edit", {
            "documentId": doc_id, "expectedBufferRevision": "3", "edits": [{"start": 0, "end": 0, "text": "x"}],
        }, "NOT_FOUND")


async def test_binary_and_latin1_files_do_not_open(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    (project / "blob.bin").write_bytes(bytes(range(256)))
    (project / "latin.txt").write_bytes(b"caf\xe9\n")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        for path in ("blob.bin", "latin.txt"):
            refused = await agent.error(
                "lomi_editor_open", {"workspaceId": a["workspaceId"], "path": path}, "UNSUPPORTED")
            assert "UTF-8" in refused["message"], dump(refused)
    assert (project / "blob.bin").read_bytes() == bytes(range(256))


async def test_workspace_close_with_one_failed_save_is_partial(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    (project / "good.txt").write_bytes(b"good\n")
    (project / "bad.txt").write_bytes(b"bad\n")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        connection = await agent.connect(ws)
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        ids = {}
        for name in ("good.txt", "bad.txt"):
            doc = await agent.ok("lomi_editor_open", {"workspaceId": ws, "path": name})
            await agent.ok("lomi_editor_edit", {
                "documentId": doc["documentId"], "expectedBufferRevision": "1",
                "edits": [{"start": 0, "end": 0, "text": "edited "}],
            })
            ids[name] = doc["documentId"]
        (project / "bad.txt").write_bytes(b"changed on disk\n")

        close = {"workspaceId": ws, "expectedRevision": revision, "retryEpoch": epoch, "requestKey": "c1"}
        unnamed = await agent.settle((await agent.ok("lomi_workspace_close", close))["operationId"])
        assert unnamed["state"] == "failed" and unnamed["error"]["code"] == "INVALID_ARGUMENT", dump(unnamed)
        assert unnamed["effectState"] == "none", dump(unnamed)
        assert {d["documentId"] for d in unnamed["result"]["details"]["dirty"]} == set(ids.values()), dump(unnamed)

        named = dict(close, requestKey="c2", documents=[
            {"documentId": ids["good.txt"], "action": "save"},
            {"documentId": ids["bad.txt"], "action": "save"},
        ])
        op = await agent.settle((await agent.ok("lomi_workspace_close", named))["operationId"])
        assert op["state"] == "failed" and op["effectState"] == "partial", dump(op)
        details = op["result"]["details"]
        assert details["saved"] == [ids["good.txt"]] and details["closed"] is False, dump(op)
        assert [(f["documentId"], f["code"]) for f in details["failed"]] == [(ids["bad.txt"], "REVISION_MISMATCH")], dump(op)
        assert (project / "good.txt").read_bytes() == b"edited good\n"
        assert (project / "bad.txt").read_bytes() == b"changed on disk\n"
        listing = await agent.ok("lomi_workspace_list")
        assert ws in [w["workspaceId"] for w in listing["workspaces"]], dump(listing)
        # Both documents are still open; the failed one keeps its unsaved edit.
        still = await agent.ok("lomi_editor_open", {"workspaceId": ws, "path": "bad.txt"})
        assert still["documentId"] == ids["bad.txt"] and still["dirty"] is True, dump(still)

        discard = dict(close, requestKey="c3", documents=[{"documentId": ids["bad.txt"], "action": "discard"}])
        done = await agent.settle((await agent.ok("lomi_workspace_close", discard))["operationId"])
        assert done["state"] == "succeeded", dump(done)
        assert done["result"]["discarded"] == [ids["bad.txt"]], dump(done)
        assert set(done["result"]["closedDocuments"]) == set(ids.values()), dump(done)
        assert (project / "bad.txt").read_bytes() == b"changed on disk\n"


@pytest.fixture
def small_disk(tmp_path):
    """A project folder on its own 256 KiB tmpfs, so a save can run out of space for real."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_workspace_close_on_a_full_disk_settles_and_keeps_the_file(lomi, mcp, small_disk):
    """A save that fails on I/O (no space left) during workspace close settles failed with no
    effect and says why (NO_SPACE, not INTERNAL); the file on disk is the old one, and the receipt
    never stays running."""
    original = b"small file\n"
    (small_disk / "notes.txt").write_bytes(original)
    workspace = lomi.add_workspace("Full disk", small_disk)
    ws = workspace["workspaceId"]
    token = lomi.create_token(ws)["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(ws)
        epoch, revision = connection["retryEpoch"], connection["domainRevision"]
        doc = await agent.ok("lomi_editor_open", {"workspaceId": ws, "path": "notes.txt"})
        # Fill the disk, then make the document bigger than what is left.
        filler = small_disk / "filler.bin"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * 4096)
        finally:
            os.close(fd)
        await agent.ok("lomi_editor_edit", {
            "documentId": doc["documentId"], "expectedBufferRevision": "1",
            "edits": [{"start": 0, "end": 0, "text": "x" * 64 * 1024}],
        })
        close = {
            "workspaceId": ws, "expectedRevision": revision, "retryEpoch": epoch, "requestKey": "full-1",
            "documents": [{"documentId": doc["documentId"], "action": "save"}],
        }
        op = await agent.settle((await agent.ok("lomi_workspace_close", close))["operationId"])
        # Saves write a temp file and rename it: bytes that do not fit leave the file as it was.
        assert (op["state"], op["effectState"], op["error"]["code"]) == ("failed", "none", "NO_SPACE"), dump(op)
        assert [f["code"] for f in op["result"]["details"]["failed"]] == ["NO_SPACE"], dump(op)
        assert (small_disk / "notes.txt").read_bytes() == original
        # The document is still open with its edit; freeing space lets the same close go through
        # under a new key.
        filler.unlink()
        again = await agent.settle((await agent.ok("lomi_workspace_close", dict(close, requestKey="full-2")))["operationId"])
        assert again["state"] == "succeeded", dump(again)
        assert (small_disk / "notes.txt").read_bytes() == b"x" * 64 * 1024 + original
