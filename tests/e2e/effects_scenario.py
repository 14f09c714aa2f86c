"""The scenario of decisions that show their effect, shared by tests/e2e/test_effects.py (which
reads `lomi decisions`) and the desktop test (which reads the window's dialog): with the
person's policy set to ask, an agent calls one tool of each mutating family, and each waiting
operation is shown to the person and decided."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from conftest import WAIT_DEADLINE, dump

# How long an operation may take to reach the person's decision.
DECISION_DEADLINE = WAIT_DEADLINE

# The tools the person marks as asking (file delete, browser evaluate, Android shell, Chat
# send and a device's first attach ask already).
ASK = [
    "lomi_file_write", "lomi_file_create", "lomi_file_rename", "lomi_git_stage", "lomi_git_commit",
    "lomi_terminal_create", "lomi_browser_navigate", "lomi_workspace_update", "lomi_editor_save",
]

NOTES = "one\ntwo\nthree\n"
OLD_LOG = "first line of the log\nsecond line\n"


def sha(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(project), *args], capture_output=True, text=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, f"git {args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip()


def prepare(lomi, project: Path) -> str:
    """A Git project with notes.txt committed and old.log beside it; the policy asks for every
    tool of the scenario; a local provider for Chat. Returns HEAD."""
    project.mkdir(parents=True, exist_ok=True)
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.name", "Test Person")
    git(project, "config", "user.email", "person@example.invalid")
    (project / "notes.txt").write_text(NOTES)
    git(project, "add", "notes.txt")
    git(project, "commit", "-q", "-m", "first")
    (project / "old.log").write_text(OLD_LOG)
    (project / "page.html").write_text("<title>Effects page</title><h1>Effects</h1>")
    for tool in ASK:
        assert lomi.run("confirm", tool).returncode == 0, tool
    provider = {"kind": "openai_compatible", "baseUrl": "http://127.0.0.1:9/v1", "models": ["echo-model"]}
    lomi.cli("settings", "set", "providers", "local", json.dumps(provider))
    return git(project, "rev-parse", "HEAD")


class Waiting:
    """One operation waiting for the person: what its effect must show (`added` and
    `removed`: lines its diff must show as added and removed), and whether to approve it."""

    def __init__(
        self, tool: str, operation_id: str, kind: str, shows: list[str], approve: bool,
        added: list[str] | None = None, removed: list[str] | None = None,
    ) -> None:
        self.tool = tool
        self.operation_id = operation_id
        self.kind = kind
        self.shows = shows
        self.approve = approve
        self.added = added or []
        self.removed = removed or []


# Shows one waiting operation's effect to the person (checking it), then decides it.
See = Callable[[Waiting], Awaitable[None]]


async def awaiting_user(agent, epoch: str, key: str, tool: str) -> dict[str, Any]:
    """The operation of this request key once it waits for the person (`lomi_operation_get` by
    key: NOT_FOUND until it is reserved)."""
    deadline = time.monotonic() + DECISION_DEADLINE
    while True:
        found = await agent.call("lomi_operation_get", {"retryEpoch": epoch, "requestKey": key, "tool": tool})
        if found["status"] == "ok":
            assert found["data"]["state"] in ("queued", "awaiting_user"), dump(found)
            if found["data"]["state"] == "awaiting_user":
                return found["data"]
        else:
            assert found["code"] == "NOT_FOUND", dump(found)
        assert time.monotonic() < deadline, f"{tool} {key}: not awaiting the person within {DECISION_DEADLINE}s\n{dump(found)}"
        await anyio.sleep(0.05)


async def each_family(agent, ws: str, project: Path, head: str, see: See, phone_serial: str | None = None) -> None:
    """One tool of each mutating family, each waiting for the person; `see` checks what the
    person is shown and decides. `phone_serial`: also attach that phone and run a shell command."""
    epoch = (await agent.connect(ws))["retryEpoch"]
    keys = iter(range(1, 1000))

    async def ask(tool: str, args: dict[str, Any], kind: str, shows: list[str], approve: bool = False, **diff) -> dict:
        key = f"effect-{next(keys)}"
        answers: list[dict[str, Any]] = []

        async def call() -> None:
            answers.append(await agent.ok(tool, {**args, "retryEpoch": epoch, "requestKey": key}))

        # The person sees and decides the operation while the agent's call is still open (it
        # answers after its bounded wait, or once the decision settled it): found by its key.
        async with anyio.create_task_group() as calling:
            calling.start_soon(call)
            waiting = await awaiting_user(agent, epoch, key, tool)
            await see(Waiting(tool, waiting["operationId"], kind, shows, approve, **diff))
        wanted = "succeeded" if approve else "failed"
        [answer] = answers
        assert answer["operationId"] == waiting["operationId"], dump(answer)
        # (Decided near the end of the call's wait, it may answer on its way to that state.)
        assert answer["state"] in ("awaiting_user", "queued", "running", wanted), dump(answer)
        op = await agent.settle(answer["operationId"])
        assert op["state"] == wanted, dump(op)
        return op

    async def revision() -> str:
        return (await agent.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]

    # Files: the diff against the disk, a new file, a delete's size and first lines, a rename.
    await ask("lomi_file_write", {
        "workspaceId": ws, "path": "notes.txt", "expectedDiskRevision": sha(NOTES), "text": "one\n2\nthree\nfour\n",
    }, "fileWrite", ["Overwrite notes.txt (+2 −1 lines)"], approve=True, added=["+2", "+four"], removed=["-two"])
    assert (project / "notes.txt").read_text() == "one\n2\nthree\nfour\n"
    await ask("lomi_file_create", {
        "workspaceId": ws, "path": "src/new.txt", "text": "hello, new file\n", "createParents": True,
    }, "fileWrite", ["Create src/new.txt", "new file"], added=["+hello, new file"])
    await ask("lomi_file_delete", {
        "workspaceId": ws, "path": "old.log", "expectedRevision": sha(OLD_LOG),
    }, "fileDelete", ["old.log", f"{len(OLD_LOG)} bytes", "first line of the log", "second line"])
    assert (project / "old.log").exists(), "denied: nothing deleted"
    await ask("lomi_file_rename", {
        "workspaceId": ws, "from": "old.log", "to": "logs/old.log", "createParents": True,
    }, "move", ["old.log", "logs/old.log"])

    # An editor document: saving it shows the diff from the disk to the document's text.
    doc = await agent.ok("lomi_editor_open", {"workspaceId": ws, "path": "old.log"})
    edited = await agent.ok("lomi_editor_edit", {
        "documentId": doc["documentId"], "expectedBufferRevision": doc["bufferRevision"],
        "edits": [{"start": 0, "end": len("first"), "text": "edited"}],
    })
    await ask("lomi_editor_save", {
        "documentId": doc["documentId"], "expectedBufferRevision": edited["bufferRevision"],
    }, "fileWrite", ["Overwrite old.log (+1 −1 lines)"],
        added=["+edited line of the log"], removed=["-first line of the log"])
    assert (project / "old.log").read_text() == OLD_LOG, "denied: nothing saved"

    # Git: the files staged, then the staged diff and the message of a commit.
    await ask("lomi_git_stage", {"workspaceId": ws, "paths": ["notes.txt"]}, "git", ["notes.txt", "Stage 1 file"],
              approve=True)
    await ask("lomi_git_commit", {
        "workspaceId": ws, "message": "Change the notes\n\nTwo becomes 2.", "expectedHeadRevision": head,
    }, "commit", ["Change the notes", "Two becomes 2.", "notes.txt"], added=["+2", "+four"], removed=["-two"])
    assert git(project, "rev-parse", "HEAD") == head, "denied: nothing committed"

    # A terminal running a program: the command.
    await ask("lomi_terminal_create", {
        "workspaceId": ws, "cwdRelative": "", "title": "Checks", "argv": ["sh", "-c", "echo effects-ok"],
        "expectedRevision": await revision(),
    }, "command", ["sh -c echo effects-ok", "Checks"])

    # A browser: the address it opens, then the script it runs.
    created = await agent.ok("lomi_browser_create", {
        "workspaceId": ws, "title": "Effects browser", "expectedRevision": await revision(),
        "retryEpoch": epoch, "requestKey": "browser",
    })
    browser = (await agent.settle(created["operationId"]))["result"]
    on_page = {"panelId": browser["panelId"], "browserGeneration": browser["browserGeneration"]}
    url = f"file://{project}/page.html"
    await ask("lomi_browser_navigate", {**on_page, "url": url}, "navigate", [url], approve=True)
    script = "document.querySelectorAll('h1').length * 2"
    await ask("lomi_browser_evaluate", {**on_page, "expression": script}, "script", [script, "Effects browser"])

    # Chat: the message, the provider and the model.
    made = await agent.ok("lomi_chat_create", {"title": "Effect plans", "retryEpoch": epoch, "requestKey": "chat"})
    conversation = (await agent.settle(made["operationId"]))["result"]["conversationId"]
    drafted = await agent.ok("lomi_chat_draft_update", {
        "conversationId": conversation, "expectedDraftRevision": "1", "text": "Please summarise the notes",
        "retryEpoch": epoch, "requestKey": "draft",
    })
    assert (await agent.settle(drafted["operationId"]))["state"] == "succeeded"
    view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
    await ask("lomi_chat_send", {
        "conversationId": conversation, "expectedConversationRevision": view["conversationRevision"],
        "expectedDraftRevision": view["draft"]["draftRevision"], "provider": "local", "model": "echo-model",
    }, "chatSend", ["Please summarise the notes", "local", "echo-model", "Effect plans"])

    # The workspace: what changes.
    await ask("lomi_workspace_update", {
        "workspaceId": ws, "expectedRevision": await revision(), "change": {"rename": {"name": "Renamed effects"}},
    }, "change", ["Renamed effects"])

    if phone_serial is not None:
        # A phone: which device (its model, as the adb server lists it: the device itself is
        # asked nothing before the person decides), then a command on it.
        attached = await ask("lomi_android_attach", {
            "workspaceId": ws, "serial": phone_serial, "expectedRevision": await revision(),
        }, "device", [phone_serial, "LomiFixture"], approve=True)
        result = attached["result"]
        await ask("lomi_android_shell", {
            "panelId": result["panelId"], "leaseId": result["leaseId"], "generation": result["generation"],
            "command": "pm clear org.example.notes",
        }, "command", ["pm clear org.example.notes"])
