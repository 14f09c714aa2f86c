"""Runtimes dying in the middle of an agent's work, the way they die in real use: Chromium
SIGKILLed during a navigation, a click and a capture; the adb server killed during a shell
command and during input; a terminal's shell killed while its input is being written; Git
killed during a commit.

Each case checks what the agent is told: the operation settles (never left `running` or
`cancelling`), never `succeeded` for an effect that did not happen, with an effect state that
says what may have happened; and reading the panel afterwards says its runtime is gone and what
to do next, in words an agent can act on (the tool to call), never INTERNAL.

Processes are found by pid (the panel's own, or in /proc) and killed with SIGKILL. Nothing
sleeps for a fixed time except short pauses while a call is held open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import SETTLED, Mcp, dump, live_processes
from test_android import DEADLINE, AdbServer, Android, Phone, node, wait_until
from test_browser import Site, wait_gone

pytestmark = pytest.mark.anyio

# What an agent must be able to do with a message about a runtime that is gone: the tools that
# get it going again.
BROWSER_NEXT = ("lomi_browser_close", "lomi_browser_create")


def assert_settled_honestly(op: dict[str, Any]) -> None:
    """A receipt of work whose runtime died under it: settled, never succeeded, and an error
    that is not Lomi's own fault."""
    assert op["state"] in SETTLED - {"succeeded", "cancelled"}, dump(op)
    if op["state"] == "failed":
        assert op["effectState"] in ("none", "partial", "unknown"), dump(op)
    else:
        assert op["effectState"] == "unknown", dump(op)
    assert op["error"]["code"] != "INTERNAL", dump(op)
    assert op["error"]["message"], dump(op)


# ---- Chromium ----

FREEZE = """<!doctype html><title>Freeze</title>
<button id="go" onclick="stall()">Stall</button>
<script>
function stall() {
  // A synchronous request the site never answers: the page's thread waits in it.
  const request = new XMLHttpRequest();
  request.open('GET', '/hang?from=click', false);
  request.send();
}
</script>"""

FROZEN = """<!doctype html><title>Frozen</title><h1>Frozen while loading</h1>
<script>
// The page's thread waits in a synchronous request the site never answers.
const request = new XMLHttpRequest();
request.open('GET', '/hang?from=load', false);
request.send();
</script>"""


class HangingSite(Site):
    """A `Site` that also counts the requests to `/hang` it is holding."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.held: list[str] = []
        super().__init__(pages)
        handler = self.server.RequestHandlerClass
        original = handler.do_GET
        site = self

        def do_get(request) -> None:
            if request.path.startswith("/hang"):
                site.held.append(request.path)
            original(request)

        handler.do_GET = do_get  # type: ignore[method-assign]

    def wait_held(self, fragment: str) -> None:
        wait_until(lambda: any(fragment in p for p in self.held), f"the page to ask for {fragment}")


@pytest.fixture
def hanging_site():
    site = HangingSite({"/freeze": FREEZE, "/frozen": FROZEN})
    yield site
    site.close()


class BrowserAgent:
    def __init__(self, session: Mcp, workspace: str, epoch: str) -> None:
        self.mcp, self.ws, self.epoch = session, workspace, epoch
        self.keys = 0
        self.panel = self.generation = ""
        self.pid = 0

    def key(self, prefix: str) -> str:
        self.keys += 1
        return f"{prefix}-{self.keys}"

    async def revision(self) -> str:
        return (await self.mcp.ok("lomi_panel_list", {"workspaceId": self.ws}))["domainRevision"]

    async def create(self) -> None:
        started = await self.mcp.ok("lomi_browser_create", {
            "workspaceId": self.ws, "title": "Browser", "expectedRevision": await self.revision(),
            "retryEpoch": self.epoch, "requestKey": self.key("create"),
        })
        op = await self.mcp.settle(started["operationId"])
        assert op["state"] == "succeeded", dump(op)
        self.panel, self.generation, self.pid = (
            op["result"]["panelId"], op["result"]["browserGeneration"], op["result"]["pid"]
        )

    def args(self, prefix: str, **extra: Any) -> dict[str, Any]:
        return {"panelId": self.panel, "browserGeneration": self.generation, "retryEpoch": self.epoch,
                "requestKey": self.key(prefix), **extra}

    async def run(self, tool: str, prefix: str, **extra: Any) -> dict[str, Any]:
        started = await self.mcp.ok(tool, self.args(prefix, **extra))
        return await self.mcp.settle(started["operationId"])

    async def close(self) -> dict[str, Any]:
        started = await self.mcp.ok("lomi_browser_close", {
            "workspaceId": self.ws, "panelId": self.panel, "expectedRevision": await self.revision(),
            "retryEpoch": self.epoch, "requestKey": self.key("close"),
        })
        return await self.mcp.settle(started["operationId"])


@contextlib.asynccontextmanager
async def browser_agent(lomi, workspaces, mcp) -> AsyncIterator[BrowserAgent]:
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"], name="browser-agent")["token"]
    async with mcp.session(token=token) as session:
        epoch = (await session.connect(a["workspaceId"]))["retryEpoch"]
        agent = BrowserAgent(session, a["workspaceId"], epoch)
        await agent.create()
        yield agent


async def assert_browser_reads_as_gone(agent: BrowserAgent) -> None:
    """After its Chromium died: the panel stays, without a runtime; reading it says the browser
    is gone and which tools to use; closing it works."""
    deadline = time.monotonic() + DEADLINE
    while True:
        [panel] = (await agent.mcp.ok("lomi_panel_list", {"workspaceId": agent.ws}))["panels"]
        if panel["generation"] is None:
            break
        assert time.monotonic() < deadline, f"the panel still names a runtime: {dump(panel)}"
        await anyio.sleep(0.05)
    assert panel["panelId"] == agent.panel, dump(panel)
    for tool in ("lomi_browser_snapshot", "lomi_browser_capture", "lomi_browser_tab_list"):
        said = await agent.mcp.call(tool, {"panelId": agent.panel})
        assert said["status"] == "error" and said["code"] != "INTERNAL", dump(said)
        assert all(next_tool in said["message"] for next_tool in BROWSER_NEXT), dump(said)
    # Work on it is refused before anything is recorded, with the same advice.
    refused = await agent.mcp.call("lomi_browser_navigate", agent.args("after", url="about:blank"))
    assert refused["status"] == "error" and refused["code"] != "INTERNAL", dump(refused)
    assert all(next_tool in refused["message"] for next_tool in BROWSER_NEXT), dump(refused)
    closed = await agent.close()
    assert closed["state"] == "succeeded", dump(closed)
    assert (await agent.mcp.ok("lomi_panel_list", {"workspaceId": agent.ws}))["panels"] == []


async def test_chromium_killed_during_a_navigation(lomi, workspaces, mcp, hanging_site):
    async with browser_agent(lomi, workspaces, mcp) as agent:
        started = await agent.mcp.ok("lomi_browser_navigate", agent.args("nav", url=hanging_site.url("/hang?nav")))
        hanging_site.wait_held("nav")
        os.kill(agent.pid, signal.SIGKILL)
        op = await agent.mcp.settle(started["operationId"])
        assert_settled_honestly(op)
        # The request reached the site; whether the page changed is not known.
        assert op["state"] == "outcome_unknown", dump(op)
        assert all(next_tool in op["error"]["message"] for next_tool in BROWSER_NEXT), dump(op)
        await wait_gone(agent.pid)
        await assert_browser_reads_as_gone(agent)


async def test_chromium_killed_during_a_click(lomi, workspaces, mcp, hanging_site):
    async with browser_agent(lomi, workspaces, mcp) as agent:
        navigated = await agent.run("lomi_browser_navigate", "nav", url=hanging_site.url("/freeze"))
        assert navigated["state"] == "succeeded", dump(navigated)
        snapshot = await agent.mcp.ok("lomi_browser_snapshot", {"panelId": agent.panel})
        button = next(line for line in snapshot["text"].splitlines() if "Stall" in line)
        element = button.split("[", 1)[1].split("]", 1)[0]
        started = await agent.mcp.ok("lomi_browser_click", agent.args(
            "click", snapshotId=snapshot["snapshotId"], elementRef=element,
        ))
        # The page received the click: its handler is waiting for the site.
        hanging_site.wait_held("from=click")
        os.kill(agent.pid, signal.SIGKILL)
        op = await agent.mcp.settle(started["operationId"])
        if op["state"] == "succeeded":
            # The click was confirmed before Chromium died: that is the truth too.
            assert op["effectState"] == "complete", dump(op)
        else:
            assert_settled_honestly(op)
            assert all(next_tool in op["error"]["message"] for next_tool in BROWSER_NEXT), dump(op)
        await wait_gone(agent.pid)
        await assert_browser_reads_as_gone(agent)


@pytest.mark.parametrize("save", [False, True], ids=["answered", "saved"])
async def test_chromium_killed_during_a_capture(lomi, workspaces, mcp, hanging_site, tmp_path, save):
    async with browser_agent(lomi, workspaces, mcp) as agent:
        navigated = await agent.run("lomi_browser_navigate", "nav", url=hanging_site.url("/frozen"),
                                    waitUntil="commit")
        assert navigated["state"] == "succeeded", dump(navigated)
        # The page's thread is now stuck in a request the site never answers.
        hanging_site.wait_held("from=load")
        args: dict[str, Any] = {"panelId": agent.panel}
        if save:
            args["save"] = {"path": "shot.png", "retryEpoch": agent.epoch, "requestKey": agent.key("capture")}
        answers: dict[str, Any] = {}

        async def capture() -> None:
            answers["capture"] = await agent.mcp.call("lomi_browser_capture", args)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(capture)
            # Give the capture time to reach Chromium, then kill it under the capture.
            await anyio.sleep(0.5)
            os.kill(agent.pid, signal.SIGKILL)
        said = answers["capture"]
        if said["status"] == "ok":
            # A capture Chromium answered before it died is a whole PNG, and a saved one is there.
            assert not save or (tmp_path / "project-a" / "shot.png").is_file(), dump(said)
        else:
            assert said["code"] != "INTERNAL", dump(said)
            assert all(next_tool in said["message"] for next_tool in BROWSER_NEXT), dump(said)
            assert not (tmp_path / "project-a" / "shot.png").exists()
            if save and "operationId" in (said.get("details") or {}):
                op = await agent.mcp.settle(said["details"]["operationId"])
                assert_settled_honestly(op)
        await wait_gone(agent.pid)
        await assert_browser_reads_as_gone(agent)


# ---- the adb server ----


class AdbServerOn(AdbServer):
    """A private adb server on a port chosen by the test (to start one again where Lomi looks)."""

    def __init__(self, log_dir: Path, port: int) -> None:  # noqa: D107
        self.port = port
        self.log = (log_dir / f"adb-{port}-again.log").open("wb")
        self.proc = subprocess.Popen(
            ["adb", "-P", str(port), "nodaemon", "server"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
        )

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, f"the adb server on port {port}")


@pytest.fixture
def adb_servers(tmp_path: Path):
    """The test's adb server; every one started is stopped by pid."""
    logs = tmp_path / "adb-logs"
    logs.mkdir()
    started = [AdbServer(logs)]

    def again() -> AdbServer:
        server = AdbServerOn(logs, started[0].port)
        started.append(server)
        return server

    yield started[0], again
    for server in started:
        if server.proc.poll() is None:
            server.stop()
        else:
            server.log.close()


@pytest.fixture(autouse=True)
def adb_server_for_serve(request, monkeypatch):
    """Points `lomi serve` at the test's adb server before it starts (never the default 5037)."""
    if "adb_servers" in request.fixturenames:
        monkeypatch.setenv("LOMI_ADB_SERVER", request.getfixturevalue("adb_servers")[0].address)


@pytest.fixture
def phone():
    started = Phone()
    yield started
    started.kill()


@contextlib.asynccontextmanager
async def attached(lomi, workspaces, mcp, server: AdbServer, phone: Phone) -> AsyncIterator[Android]:
    a, _ = workspaces
    server.connect(phone.serial)
    # The person lets shell commands run without asking.
    assert lomi.run("confirm", "lomi_android_shell", "--off").returncode == 0
    token = lomi.create_token(a["workspaceId"], name="android-agent")["token"]
    async with mcp.session(token=token) as session:
        epoch = (await session.connect(a["workspaceId"]))["retryEpoch"]
        android = Android(session, lomi, a["workspaceId"], epoch)
        op = await android.attach_deciding(phone.serial, "approve")
        assert op["state"] == "succeeded", dump(op)
        yield android


def kill_adb_server(server: AdbServer) -> None:
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=5)


async def assert_android_reads_as_gone(android: Android, server_port: int) -> None:
    """After the adb server died: the panel stays without a runtime, and reading it says what
    happened and what to do (start the adb server, attach again)."""
    panels = await android.agent.ok("lomi_panel_list", {"workspaceId": android.ws})
    assert [(p["panelId"], p["generation"]) for p in panels["panels"]] == [(android.panel, None)], dump(panels)
    for tool in ("lomi_android_ui_snapshot", "lomi_android_capture"):
        said = await android.agent.call(tool, {"panelId": android.panel})
        assert said["status"] == "error" and said["code"] != "INTERNAL", dump(said)
        assert "lomi_android_attach" in said["message"], dump(said)
        assert "adb server" in said["message"] and str(server_port) in said["message"], dump(said)


async def attach_again(android: Android, again, phone: Phone) -> None:
    """Once the person starts the adb server again, attaching the device again gives the same
    panel a runtime that takes work, under a new lease. (The generation names the device's
    boot, so a device that stayed up keeps it.)"""
    old_lease = android.lease
    server = again()
    server.connect(phone.serial)
    op = await android.attach(phone.serial)
    assert op["result"]["panelId"] == android.panel and android.lease != old_lease, dump(op)
    await android.agent.error("lomi_android_input", dict(android.input_args(text="x"), leaseId=old_lease),
                              "LEASE_EXPIRED")
    await android.send(text="back")
    assert node(await android.snapshot(), "fixture:id/text")["text"] == "back"


async def test_adb_server_killed_during_a_shell_command(lomi, workspaces, mcp, adb_servers, phone):
    server, again = adb_servers
    async with attached(lomi, workspaces, mcp, server, phone) as android:
        answers: dict[str, Any] = {}

        async def slow() -> None:
            answers["op"] = await android.agent.ok("lomi_android_shell", {
                "panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
                "command": "input swipe 5 5 5 5 8000", "retryEpoch": android.epoch, "requestKey": "sh-slow",
            })

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(slow)
            await anyio.to_thread.run_sync(lambda: phone.wait_for_service("input swipe 5 5 5 5 8000"))
            kill_adb_server(server)
        op = await android.agent.settle(answers["op"]["operationId"])
        # The command was running on the device: what it did is not known.
        assert_settled_honestly(op)
        assert op["state"] == "outcome_unknown", dump(op)
        assert "adb server" in op["error"]["message"], dump(op)
        await assert_android_reads_as_gone(android, server.port)
        await attach_again(android, again, phone)


async def test_adb_server_killed_during_input(lomi, workspaces, mcp, adb_servers, phone):
    server, again = adb_servers
    async with attached(lomi, workspaces, mcp, server, phone) as android:
        slow = android.input_args(swipe={"fromX": 10, "fromY": 600, "toX": 10, "toY": 100, "durationMs": 8000})
        answers: dict[str, Any] = {}

        async def swipe() -> None:
            answers["swipe"] = await android.agent.call("lomi_android_input", slow)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(swipe)
            await anyio.to_thread.run_sync(lambda: phone.wait_for_service("'input' 'swipe'"))
            kill_adb_server(server)
        lost = answers["swipe"]
        assert lost["status"] == "error" and lost["code"] == "RUNTIME_UNAVAILABLE", dump(lost)
        assert lost["details"]["effectState"] == "unknown", dump(lost)
        assert "adb server" in lost["message"], dump(lost)
        # The same input again is answered the same way, not sent a second time.
        repeat = await android.agent.call("lomi_android_input", slow)
        assert repeat["status"] == "error" and repeat["code"] != "INTERNAL", dump(repeat)
        await assert_android_reads_as_gone(android, server.port)
        # Input once the server is gone: refused, and says why.
        gone = await android.agent.call("lomi_android_input", android.input_args(seq=2, text="x"))
        assert gone["status"] == "error" and gone["code"] != "INTERNAL", dump(gone)
        await attach_again(android, again, phone)


# ---- a terminal's shell ----


def session_members(session: int) -> list[int]:
    return [pid for pid, _, fields in live_processes() if int(fields[3]) == session]


class Terminal:
    def __init__(self, session: Mcp, workspace: str, epoch: str, created: dict[str, Any]) -> None:
        self.mcp, self.ws, self.epoch = session, workspace, epoch
        self.panel, self.generation, self.lease = created["panelId"], created["generation"], created["leaseId"]
        self.pid = created["pid"]

    def input_args(self, seq: int, text: str) -> dict[str, Any]:
        return {"panelId": self.panel, "leaseId": self.lease, "generation": self.generation,
                "inputSequence": str(seq), "text": text}

    async def read(self, **args: Any) -> dict[str, Any]:
        return await self.mcp.ok("lomi_terminal_read", {"panelId": self.panel, **args})


@contextlib.asynccontextmanager
async def terminal(lomi, workspaces, mcp) -> AsyncIterator[Terminal]:
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"], name="terminal-agent")["token"]
    async with mcp.session(token=token) as session:
        ws = a["workspaceId"]
        epoch = (await session.connect(ws))["retryEpoch"]
        revision = (await session.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]
        started = await session.ok("lomi_terminal_create", {
            "workspaceId": ws, "cwdRelative": "", "title": "Shell", "expectedRevision": revision,
            "retryEpoch": epoch, "requestKey": "create",
        })
        op = await session.settle(started["operationId"])
        assert op["state"] == "succeeded", dump(op)
        yield Terminal(session, ws, epoch, op["result"])


async def assert_terminal_reads_as_exited(term: Terminal, next_seq: int) -> None:
    """The terminal's read says it exited and how; input to it is refused with what to do."""
    read = await term.read(waitFor={"exit": True}, timeoutMs=60_000)
    assert read["exited"] == {"signal": signal.SIGKILL.value} or read["exited"].get("signal") == 9, dump(read)
    refused = await term.mcp.call("lomi_terminal_input", term.input_args(next_seq, "echo late\r"))
    assert refused["status"] == "error" and refused["code"] not in ("INTERNAL", "INVALID_ARGUMENT"), dump(refused)
    for word in ("exited", "lomi_terminal_close", "lomi_terminal_create"):
        assert word in refused["message"], dump(refused)
    # The sequence stays free: nothing was written.
    again = await term.mcp.call("lomi_terminal_input", term.input_args(next_seq, "echo other\r"))
    assert again["status"] == "error" and again["code"] != "SEQUENCE_CONFLICT", dump(again)
    interrupt = await term.mcp.call("lomi_terminal_interrupt", {
        "panelId": term.panel, "leaseId": term.lease, "generation": term.generation,
        "retryEpoch": term.epoch, "requestKey": "interrupt-after",
    })
    if interrupt["status"] == "ok":
        op = await term.mcp.settle(interrupt["data"]["operationId"])
        assert op["state"] == "failed" and op["effectState"] == "none", dump(op)
        message = op["error"]["message"]
    else:
        message = interrupt["message"]
    assert "exited" in message and "lomi_terminal_close" in message, dump(interrupt)
    closed = await term.mcp.ok("lomi_terminal_close", {
        "workspaceId": term.ws, "panelId": term.panel, "retryEpoch": term.epoch, "requestKey": "close",
        "expectedRevision": (await term.mcp.ok("lomi_panel_list", {"workspaceId": term.ws}))["domainRevision"],
    })
    op = await term.mcp.settle(closed["operationId"])
    assert op["state"] == "succeeded", dump(op)


async def test_shell_killed_while_its_input_is_written(lomi, workspaces, mcp):
    async with terminal(lomi, workspaces, mcp) as term:
        # A program that does not read its input: the PTY fills and the write waits.
        sent = await term.mcp.ok("lomi_terminal_input", term.input_args(1, "sleep 60\r"))
        await term.read(sinceCursor=sent["outputCursor"], waitFor={"text": "sleep 60"}, timeoutMs=60_000)
        wait_until(lambda: len(session_members(term.pid)) >= 2, "sleep to start in the shell's session")
        flood = term.input_args(2, "echo waiting for the shell\n" * 2400)
        answers: dict[str, Any] = {}

        async def write() -> None:
            answers["input"] = await term.mcp.call("lomi_terminal_input", flood)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write)
            await anyio.sleep(0.5)
            assert "input" not in answers, f"the write did not wait: {dump(answers)}"
            for pid in session_members(term.pid):
                os.kill(pid, signal.SIGKILL)
        said = answers["input"]
        # Part of it was in the PTY when the shell died: it is not refused as if nothing was
        # sent, and not acknowledged as if it all was.
        assert said["status"] == "error" and said["code"] == "RUNTIME_UNAVAILABLE", dump(said)
        assert "part of it may have been written" in said["message"], dump(said)
        repeat = await term.mcp.call("lomi_terminal_input", flood)
        assert repeat["status"] == "error" and repeat["message"] == said["message"], dump(repeat)
        await assert_terminal_reads_as_exited(term, 3)


async def test_shell_killed_right_before_input(lomi, workspaces, mcp):
    async with terminal(lomi, workspaces, mcp) as term:
        os.kill(term.pid, signal.SIGKILL)
        # Sent before or after Lomi saw the shell end: written (the bytes reached the PTY), or
        # refused with nothing written; never an error for the agent's own input.
        said = await term.mcp.call("lomi_terminal_input", term.input_args(1, "echo hello\r"))
        if said["status"] == "ok":
            assert said["data"]["bytesWritten"] == len("echo hello\r"), dump(said)
            next_seq = 2
        else:
            assert said["code"] == "RUNTIME_UNAVAILABLE", dump(said)
            next_seq = 1
        await assert_terminal_reads_as_exited(term, next_seq)


# ---- Git ----


def git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True,
                          env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, f"git {args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def git_processes(project: Path) -> list[int]:
    """Live `git … commit` processes working in `project`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and words[0].endswith(b"git") and str(project).encode() in words and b"commit" in words:
            found.append(int(entry))
    return found


async def test_git_killed_during_a_commit(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.name", "Test Person")
    git(project, "config", "user.email", "person@example.invalid")
    (project / "hello.txt").write_text("hello\n")
    git(project, "add", "hello.txt")
    git(project, "commit", "-q", "-m", "first")
    first = git(project, "rev-parse", "HEAD")
    # A pre-commit hook that takes its time: the commit is under way while it runs.
    hook = project / ".git" / "hooks" / "pre-commit"
    marker = tmp_path / "hook-started"
    hook.write_text(f"#!/bin/sh\necho $$ > '{marker}.tmp' && mv '{marker}.tmp' '{marker}'\nexec sleep 30\n")
    hook.chmod(0o755)
    (project / "hello.txt").write_text("hello, world\n")
    git(project, "add", "hello.txt")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        ws = a["workspaceId"]
        epoch = (await agent.connect(ws))["retryEpoch"]
        commit = {"workspaceId": ws, "message": "Greet the world", "expectedHeadRevision": first,
                  "retryEpoch": epoch, "requestKey": "commit"}
        started = await agent.ok("lomi_git_commit", commit)
        wait_until(marker.exists, "the pre-commit hook to start")
        [pid] = wait_until(lambda: git_processes(project), "git commit in /proc")
        os.kill(pid, signal.SIGKILL)
        op = await agent.settle(started["operationId"])
        # HEAD did not move: nothing was committed, and the receipt says so.
        assert git(project, "rev-parse", "HEAD") == first
        assert op["state"] == "failed" and op["effectState"] == "none", dump(op)
        assert op["error"]["code"] != "INTERNAL", dump(op)
        assert "killed" in op["error"]["message"], dump(op)
        # The hook Git started does not outlive it.
        hook_pid = int(marker.read_text())
        # (well within the hook's own `sleep 30`, so this proves it was ended)
        wait_until(lambda: not alive(hook_pid), "the hook to end", deadline=20)
        # The next commit works (the hook lets it through now).
        hook.write_text("#!/bin/sh\nexit 0\n")
        retry = dict(commit, requestKey="commit-again")
        op = await agent.settle((await agent.ok("lomi_git_commit", retry))["operationId"])
        assert op["state"] == "succeeded" and op["result"]["parent"] == first, dump(op)
        assert git(project, "rev-parse", "HEAD") == op["result"]["commit"]
