"""Git over MCP in a real repository made by the test: status and diff, stage and commit
compared by expectedHeadRevision, a retried commit that commits once, branches that refuse to
leave uncommitted work behind, and projects that are not repositories."""

import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from conftest import dump

pytestmark = pytest.mark.anyio


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(project), *args], capture_output=True, text=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, f"git {args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip()


def make_repository(project: Path) -> str:
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.name", "Test Person")
    git(project, "config", "user.email", "person@example.invalid")
    (project / "hello.txt").write_text("hello\n")
    git(project, "add", "hello.txt")
    git(project, "commit", "-q", "-m", "first")
    return git(project, "rev-parse", "HEAD")


def commits(project: Path) -> list[str]:
    return git(project, "log", "--format=%H").split()


async def test_status_diff_stage_commit_and_retry(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    first = make_repository(project)
    (project / "hello.txt").write_text("hello, world\n")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        epoch = (await agent.connect(ws))["retryEpoch"]

        status = await agent.ok("lomi_git_status", {"workspaceId": ws})
        assert (status["head"], status["branch"], status["clean"]) == (first, "main", False), dump(status)
        assert status["entries"] == [{"path": "hello.txt", "index": "unmodified", "worktree": "modified"}], dump(status)

        diff = await agent.ok("lomi_git_diff", {"workspaceId": ws})
        assert "-hello\n+hello, world\n" in diff["diff"] and not diff["truncated"], dump(diff)
        cut = await agent.ok("lomi_git_diff", {"workspaceId": ws, "maxBytes": 10})
        assert cut["truncated"] and len(cut["diff"].encode()) <= 10, dump(cut)

        staged = await agent.settle((await agent.ok("lomi_git_stage", {
            "workspaceId": ws, "paths": ["hello.txt"], "retryEpoch": epoch, "requestKey": "s1",
        }))["operationId"])
        assert staged["state"] == "succeeded" and staged["result"]["paths"] == ["hello.txt"], dump(staged)
        cached = await agent.ok("lomi_git_diff", {"workspaceId": ws, "staged": True, "path": "hello.txt"})
        assert "+hello, world\n" in cached["diff"], dump(cached)

        commit = {
            "workspaceId": ws, "message": "Greet the world", "expectedHeadRevision": first,
            "retryEpoch": epoch, "requestKey": "c1",
        }
        op = await agent.settle((await agent.ok("lomi_git_commit", commit))["operationId"])
        assert op["state"] == "succeeded", dump(op)
        history = commits(project)
        assert history == [op["result"]["commit"], first], dump(op)
        assert op["result"]["parent"] == first and "cannot be undone" in op["result"]["undo"], dump(op)
        assert git(project, "log", "-1", "--format=%an <%ae> %s") == "Test Person <person@example.invalid> Greet the world"

        # The same request again is the same operation, and still one commit.
        retry = await agent.ok("lomi_git_commit", commit)
        assert retry["operationId"] == op["operationId"], dump(retry)
        assert commits(project) == history

        # A commit against the HEAD the agent saw before is refused with the current one.
        (project / "hello.txt").write_text("hello again\n")
        git(project, "add", "hello.txt")
        stale = await agent.settle((await agent.ok("lomi_git_commit", dict(commit, requestKey="c2")))["operationId"])
        assert stale["state"] == "failed" and stale["effectState"] == "none", dump(stale)
        assert stale["error"]["code"] == "REVISION_MISMATCH", dump(stale)
        assert stale["result"]["details"]["currentRevision"] == history[0], dump(stale)
        assert commits(project) == history


async def test_branch_create_switch_and_refuse_over_changes(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    first = make_repository(project)
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        epoch = (await agent.connect(ws))["retryEpoch"]

        async def branch(key: str, name: str, create: bool, **extra) -> dict:
            args = {"workspaceId": ws, "name": name, "create": create, "retryEpoch": epoch, "requestKey": key, **extra}
            return await agent.settle((await agent.ok("lomi_git_branch", args))["operationId"])

        made = await branch("b1", "feature/x", True)
        assert made["state"] == "succeeded" and made["result"] == {"branch": "feature/x", "head": first}, dump(made)
        assert git(project, "branch", "--show-current") == "feature/x"

        back = await branch("b2", "main", False)
        assert back["state"] == "succeeded", dump(back)
        assert git(project, "branch", "--show-current") == "main"

        (project / "hello.txt").write_text("unsaved work\n")
        refused = await branch("b3", "feature/x", False)
        assert refused["state"] == "failed" and refused["error"]["code"] == "INVALID_ARGUMENT", dump(refused)
        assert "uncommitted" in refused["error"]["message"], dump(refused)
        assert git(project, "branch", "--show-current") == "main"

        allowed = await branch("b4", "feature/x", False, allowUncommitted=True)
        assert allowed["state"] == "succeeded", dump(allowed)
        assert git(project, "branch", "--show-current") == "feature/x"
        assert (project / "hello.txt").read_text() == "unsaved work\n"

        exists = await branch("b5", "main", True)
        assert exists["state"] == "failed" and exists["error"]["code"] == "INVALID_ARGUMENT", dump(exists)


async def test_not_a_repository_and_bad_paths(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        epoch = (await agent.connect(ws))["retryEpoch"]
        await agent.error("lomi_git_status", {"workspaceId": ws}, "UNSUPPORTED")
        op = await agent.settle((await agent.ok("lomi_git_commit", {
            "workspaceId": ws, "message": "x", "expectedHeadRevision": "", "retryEpoch": epoch, "requestKey": "n1",
        }))["operationId"])
        assert op["state"] == "failed" and op["error"]["code"] == "UNSUPPORTED", dump(op)

        make_repository(project)
        for path in ["../outside.txt", "/etc/passwd", "sub/../../x", "a\u0000b"]:
            await agent.error("lomi_git_stage", {
                "workspaceId": ws, "paths": ["hello.txt", path], "retryEpoch": epoch, "requestKey": "bad",
            }, "INVALID_ARGUMENT")
            await agent.error("lomi_git_diff", {"workspaceId": ws, "path": path}, "INVALID_ARGUMENT")
        assert git(project, "diff", "--cached", "--name-only") == ""


async def test_the_log_lists_recent_commits_newest_first(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    git(project, "init", "-q", "-b", "main")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        # A repository without commits yet has an empty history, not an error.
        empty = await agent.ok("lomi_git_log", {"workspaceId": ws})
        assert empty == {"commits": [], "more": False}, dump(empty)

        first = make_repository(project)
        (project / "hello.txt").write_text("hello, world\n")
        git(project, "commit", "-q", "-am", "Greet the world\n\nThe body stays out of the log.")
        second = git(project, "rev-parse", "HEAD")

        log = await agent.ok("lomi_git_log", {"workspaceId": ws})
        assert [c["commit"] for c in log["commits"]] == [second, first] and not log["more"], dump(log)
        newest = log["commits"][0]
        assert (newest["subject"], newest["author"]) == ("Greet the world", "Test Person"), dump(log)
        # The same instant as Git itself writes it (UTC may read "Z" or "+00:00").
        written = git(project, "log", "-1", "--format=%aI")
        assert datetime.fromisoformat(newest["date"]) == datetime.fromisoformat(written), dump(log)

        one = await agent.ok("lomi_git_log", {"workspaceId": ws, "limit": 1})
        assert [c["commit"] for c in one["commits"]] == [second] and one["more"], dump(one)

        for limit in (0, 101):
            await agent.error("lomi_git_log", {"workspaceId": ws, "limit": limit}, "INVALID_ARGUMENT")
