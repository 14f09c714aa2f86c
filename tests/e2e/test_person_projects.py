"""The person's side of a project from the command line (the same control requests as the
window's editor, file tree and Git view): the document an agent edits, its save and the
disk-changed refusal, the file tree without .git, and the person's stage and commit of what
an agent wrote, compared with the HEAD they saw."""

from pathlib import Path

import pytest

from conftest import dump
from test_git import commits, git, make_repository

pytestmark = pytest.mark.anyio


async def test_the_person_sees_and_commits_what_an_agent_wrote(lomi, workspaces, mcp, tmp_path: Path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    first = make_repository(project)
    ws = a["workspaceId"]
    token = lomi.create_token(ws)["token"]
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(ws))["retryEpoch"]
        opened = await agent.ok("lomi_editor_open", {"workspaceId": ws, "path": "hello.txt"})
        await agent.ok("lomi_editor_edit", {
            "documentId": opened["documentId"], "expectedBufferRevision": "1",
            "edits": [{"start": 0, "end": 5, "text": "Hello"}],
        })
        # The person opens the same path: the agent's document, with its edit, unsaved.
        seen = await lomi.acli("document", "open", ws, "hello.txt")
        doc = seen["document"]
        assert (doc["documentId"], doc["bufferRevision"], doc["text"], doc["dirty"], seen["disk"]) == (
            opened["documentId"], "2", "Hello\n", True, "same",
        ), dump(seen)
        stale = lomi.cli_fails("document", "save", doc["documentId"], "--expected-revision", "1")
        assert "REVISION_MISMATCH" in stale or "changed" in stale, stale
        saved = await lomi.acli("document", "save", doc["documentId"], "--expected-revision", "2")
        assert saved["size"] == 6, dump(saved)
        assert (project / "hello.txt").read_text() == "Hello\n"
        # Someone else rewrites the file: the document says so, a plain save is refused.
        (project / "hello.txt").write_text("changed outside\n")
        assert (await lomi.acli("document", "show", doc["documentId"]))["disk"] == "changed"
        await agent.ok("lomi_editor_edit", {
            "documentId": doc["documentId"], "expectedBufferRevision": "2",
            "edits": [{"start": 5, "end": 5, "text": "!"}],
        })
        refused = lomi.cli_fails("document", "save", doc["documentId"], "--expected-revision", "3")
        assert "changed" in refused or "REVISION_MISMATCH" in refused, refused
        assert (project / "hello.txt").read_text() == "changed outside\n"
        reloaded = await lomi.acli("document", "reload", doc["documentId"])
        assert (reloaded["bufferRevision"], reloaded["dirty"]) == ("4", False), dump(reloaded)

        created = await agent.ok("lomi_file_create", {
            "workspaceId": ws, "path": "docs/agent.md", "text": "# Written by the agent\n",
            "createParents": True, "retryEpoch": epoch, "requestKey": "create-1",
        })
        assert (await agent.settle(created["operationId"]))["state"] == "succeeded"

    root = await lomi.acli("files", "list", ws)
    assert [e["name"] for e in root["entries"]] == ["docs", "hello.txt"], dump(root)
    status = await lomi.acli("git", "status", ws)
    assert status["head"] == first, dump(status)
    assert {"path": "docs/agent.md", "index": "untracked", "worktree": "untracked"} in status["entries"], dump(status)
    diff = await lomi.acli("git", "diff", ws, "docs/agent.md")
    assert "+# Written by the agent" in diff["diff"], dump(diff)
    await lomi.acli("git", "stage", ws, "docs/agent.md", "hello.txt")
    await lomi.acli("git", "unstage", ws, "hello.txt")
    assert git(project, "diff", "--cached", "--name-only") == "docs/agent.md"
    moved = lomi.cli_fails("git", "commit", ws, "-m", "Add the agent's page", "--expected-head", "0" * 40)
    assert "HEAD" in moved, moved
    committed = await lomi.acli("git", "commit", ws, "-m", "Add the agent's page", "--expected-head", first)
    assert commits(project) == [committed["commit"], first], dump(committed)
    assert git(project, "log", "-1", "--format=%an %s") == "Test Person Add the agent's page"
    assert git(project, "status", "--porcelain") == "M hello.txt"
