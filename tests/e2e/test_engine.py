"""The operation engine's order, tool by tool, against the real parts: a retry is answered from
its receipt before the target is looked up, and cancellation reaches running effects.

1. One table of mutations (`CASES`) and one check (`check_retry`): each mutation is made and
   settled, its target is made to go away (the panel closed, the document closed, the device
   detached, the file deleted, the commit reset), and the exact same call is sent again: it must
   answer the prior operation (same operationId, same settled state and result), never NOT_FOUND,
   and the real resource must show no second effect. The same requestKey with other arguments
   must answer IDEMPOTENCY_CONFLICT, again without an effect.
2. Cancellation of running work, for every tool whose effect takes the cancel token, each read
   as `cancelling` and then its settled state, with the real resource inspected: a browser
   navigation to a page this test serves slowly on 127.0.0.1 (`cancelled`, effect `partial`, the
   tab still on the page before); a tab opened on that page (`cancelled`, `partial`: the tab
   stays, blank); a click and an upload whose page handlers wait for the site, so Chromium
   cannot confirm them (`outcome_unknown`); a terminal whose program has not printed yet
   (`cancelled`, `partial`: stopped, checked in /proc, no panel); a browser while it starts (no
   panel, no Chromium process, no folder left in /tmp; held_chromium.py holds the launch before
   Chromium runs, at Lomi's DevTools handshake and at its first tab); an Android shell command
   and an attach while the device fixture is busy with a slow `input swipe` (it serves one
   command at a time, like a busy device); an attach waiting for the person (`cancelled`, no
   effect, never run); and a cancel of work that already succeeded, which leaves it `succeeded`.
   The other actions (hover, type, press, select, scroll) share the click's path. Effects that
   do not take the token (lomi_workspace_close, lomi_git_commit, lomi_browser_evaluate, …) run
   to their end and are not here.

Nothing sleeps for a fixed time: waits poll with deadlines, and the slow things are the page
server, which holds its answer until it is released or 6 s pass, the device's swipes and the
held Chromium.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import SETTLED, WAIT_DEADLINE, dump
from test_android import Android, adb, adb_server_for_serve, phones, tiny_apk  # noqa: F401 (fixtures)
from test_browser import ref
from test_terminal import live_processes, proc_stat

pytestmark = pytest.mark.anyio

SLOW_SECONDS = 6.0
DEADLINE = WAIT_DEADLINE


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- pages on 127.0.0.1 that remember every request ----

FORM = """<!doctype html><title>Form</title>
<label for="file">Attachment</label><input id="file" type="file">
<button onclick="fetch('/clicked')">Press</button><button onclick="fetch('/other')">Other</button>"""

# Handlers that wait for the site (a synchronous request for /slow): meanwhile the page's main
# thread answers nothing, so Chromium cannot confirm the event that started them.
BUSY = """<!doctype html><title>Busy</title>
<script>function hold() { const r = new XMLHttpRequest(); r.open('GET', '/slow', false); r.send(); }</script>
<button onmousedown="hold()" onclick="fetch('/clicked')">Hold</button>
<label for="file">Attachment</label>
<input id="file" type="file" oninput="hold(); fetch('/uploaded/' + this.files[0].name)">"""


# The peers' tools: a drop and a fill each fetch, so a second effect would show in the hits.
PEER = """<!doctype html><title>Peer</title>
<label for="name">Name</label><input id="name">
<div id="card" draggable="true" role="listitem" aria-label="Card">Card</div>
<div id="bin" role="region" aria-label="Bin" style="min-height:80px">Bin</div>
<script>
const bin = document.getElementById('bin');
bin.addEventListener('dragover', (e) => e.preventDefault());
bin.addEventListener('drop', (e) => { e.preventDefault(); fetch('/dropped'); });
document.getElementById('name').addEventListener('input', () => fetch('/filled'));
</script>"""


class Pages:
    """Pages on 127.0.0.1:<port>; every request's path is kept in `hits`. `/slow` sends nothing
    until the site closes or SLOW_SECONDS pass."""

    def __init__(self) -> None:
        self.pages = {
            "/start": "<!doctype html><title>Start</title><h1>Start page</h1>",
            "/one": "<!doctype html><title>One</title><h1>One</h1>",
            "/two": "<!doctype html><title>Two</title><h1>Two</h1>",
            "/form": FORM,
            "/peer": PEER,
            "/dropped": "ok",
            "/filled": "ok",
            "/busy": BUSY,
            "/clicked": "ok",
            "/other": "ok",
            "/slow": "<!doctype html><title>Slow done</title><h1>Slow page</h1>",
        }
        self.hits: list[str] = []
        self.slow_asked = threading.Event()
        self.release = threading.Event()
        pages = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0]
                pages.hits.append(path)
                if path == "/slow":
                    pages.slow_asked.set()
                    pages.release.wait(SLOW_SECONDS)
                body = pages.pages.get(path)
                data = (body if body is not None else "missing").encode()
                try:
                    self.send_response(200 if body is not None else 404)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the browser gave up on it

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pages():
    p = Pages()
    yield p
    p.close()


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(project), *args], capture_output=True, text=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, f"git {args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip()


# ---- the world one case acts in ----


class World:
    """An approved agent session on workspace A, its project, the pages, and (for Android
    cases) the adb server and device fixture."""

    def __init__(self, lomi, session, ws: str, epoch: str, project: Path, pages: Pages, adb=None, phones=None):
        self.lomi = lomi
        self.s = session
        self.ws = ws
        self.epoch = epoch
        self.project = project
        self.pages = pages
        self.adb = adb
        self.phones = phones
        # Set by cancel_running: seconds from its cancel to the settled receipt.
        self.cancel_took = float("nan")
        self.keys = 0
        self.phone = None
        self.android: Android | None = None

    def key(self, prefix: str = "k") -> str:
        self.keys += 1
        return f"{prefix}-{self.keys}"

    def keyed(self, args: dict[str, Any], prefix: str = "case") -> dict[str, Any]:
        return dict(args, retryEpoch=self.epoch, requestKey=self.key(prefix))

    async def revision(self) -> str:
        return (await self.s.ok("lomi_panel_list", {"workspaceId": self.ws}))["domainRevision"]

    async def panels(self) -> list[tuple[str, str]]:
        listing = await self.s.ok("lomi_panel_list", {"workspaceId": self.ws})
        return [(p["panelId"], p["kind"]) for p in listing["panels"]]

    async def op(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A helper mutation (not the one under test), under a fresh key, settled and succeeded."""
        started = await self.s.ok(tool, self.keyed(args, "helper"))
        settled = await self.s.settle(started["operationId"])
        assert settled["state"] == "succeeded", f"helper {tool} did not succeed:\n{dump(settled)}"
        return settled["result"]

    # terminals

    async def terminal(self) -> dict[str, Any]:
        return await self.op("lomi_terminal_create", {
            "workspaceId": self.ws, "cwdRelative": "", "title": "Helper", "expectedRevision": await self.revision(),
        })

    async def close_terminal(self, panel: str) -> None:
        await self.op("lomi_terminal_close", {
            "workspaceId": self.ws, "panelId": panel, "expectedRevision": await self.revision(),
        })

    # browsers

    async def browser(self, path: str | None = None) -> dict[str, Any]:
        created = await self.op("lomi_browser_create", {
            "workspaceId": self.ws, "title": "Helper", "expectedRevision": await self.revision(),
        })
        if path is not None:
            await self.op("lomi_browser_navigate", {
                "panelId": created["panelId"], "browserGeneration": created["browserGeneration"],
                "url": self.pages.url(path),
            })
        return created

    async def close_browser(self, panel: str) -> None:
        await self.op("lomi_browser_close", {
            "workspaceId": self.ws, "panelId": panel, "expectedRevision": await self.revision(),
        })

    async def browser_target(self, path: str, needle: str) -> tuple[dict[str, Any], dict[str, Any], str]:
        """A browser on `path`, its snapshot and the ref of the line holding `needle`."""
        created = await self.browser(path)
        snap = await self.s.ok("lomi_browser_snapshot", {"panelId": created["panelId"]})
        return created, snap, ref(snap, needle)

    # Android

    async def attached(self) -> Android:
        """The device fixture, attached with the person's approval (remembered afterwards)."""
        if self.android is None:
            self.phone = self.phones()
            self.adb.connect(self.phone.serial)
            self.android = Android(self.s, self.lomi, self.ws, self.epoch)
            self.android.keys = 1000
            op = await self.android.attach_deciding(self.phone.serial, "approve")
            assert op["state"] == "succeeded", dump(op)
        return self.android

    async def detach(self, panel: str) -> None:
        await self.op("lomi_android_detach", {
            "workspaceId": self.ws, "panelId": panel, "expectedRevision": await self.revision(),
        })

    def services(self, fragment: str) -> int:
        return sum(fragment in s for s in self.phone.services)


# ---- the table ----

Args = dict[str, Any]


async def nothing(w: World, args: Args, op: dict[str, Any]) -> None:
    """The mutation itself removed its target."""


@dataclass
class Case:
    tool: str
    # Makes what the mutation needs; returns its whole arguments (with retryEpoch/requestKey).
    prepare: Callable[[World], Awaitable[Args]]
    # Makes the mutation's target go away after it settled.
    gone: Callable[[World, Args, dict[str, Any]], Awaitable[None]]
    # The real resource, read before and after the retry: it must not change.
    observe: Callable[[World], Awaitable[Any]]
    # The same request key with other arguments.
    change: Callable[[Args], Args]
    # The operation in the tool's answer (lomi_browser_capture nests it under `saved`).
    operation: Callable[[dict[str, Any]], dict[str, Any]] = lambda data: data
    android: bool = False
    marks: list[Any] = field(default_factory=list)
    # How the case is named when one tool has several (its target goes away in other ways).
    label: str = ""

    @property
    def name(self) -> str:
        return f"{self.tool}-{self.label}" if self.label else self.tool


def changed(**over: Any) -> Callable[[Args], Args]:
    return lambda args: dict(args, **over)


async def observe_panels(w: World) -> Any:
    return await w.panels()


async def observe_hits(w: World) -> Any:
    return {"hits": list(w.pages.hits), "panels": await w.panels()}


# workspace


async def prep_workspace_update(w: World) -> Args:
    return w.keyed({"workspaceId": w.ws, "expectedRevision": await w.revision(), "change": {"rename": {"name": "Renamed once"}}})


async def gone_workspace_update(w: World, args: Args, op: dict[str, Any]) -> None:
    # The revision the request was made against is gone: another rename moved it on.
    await w.op("lomi_workspace_update", {"workspaceId": w.ws, "expectedRevision": await w.revision(),
                                          "change": {"rename": {"name": "Renamed by the helper"}}})


async def observe_workspace(w: World) -> Any:
    found = w.lomi.workspace(w.ws)
    return found["name"], found["domainRevision"]


# terminals


async def prep_terminal_create(w: World) -> Args:
    return w.keyed({"workspaceId": w.ws, "cwdRelative": "", "title": "Tests", "expectedRevision": await w.revision()})


async def gone_terminal_create(w: World, args: Args, op: dict[str, Any]) -> None:
    await w.close_terminal(op["result"]["panelId"])


async def prep_terminal_interrupt(w: World) -> Args:
    t = await w.terminal()
    return w.keyed({"panelId": t["panelId"], "leaseId": t["leaseId"], "generation": t["generation"]})


async def gone_by_target_terminal(w: World, args: Args, op: dict[str, Any]) -> None:
    await w.close_terminal(args["panelId"])


async def prep_terminal_close(w: World) -> Args:
    t = await w.terminal()
    return w.keyed({"workspaceId": w.ws, "panelId": t["panelId"], "expectedRevision": await w.revision()})


# browsers


async def prep_browser_create(w: World) -> Args:
    return w.keyed({"workspaceId": w.ws, "title": "Browser", "expectedRevision": await w.revision()})


async def gone_browser_create(w: World, args: Args, op: dict[str, Any]) -> None:
    await w.close_browser(op["result"]["panelId"])


async def gone_browser(w: World, args: Args, op: dict[str, Any]) -> None:
    await w.close_browser(args["panelId"])


async def prep_browser_navigate(w: World) -> Args:
    b = await w.browser("/start")
    return w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"], "url": w.pages.url("/one")})


async def prep_browser_click(w: World) -> Args:
    b, snap, button = await w.browser_target("/form", 'button "Press"')
    return w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                    "snapshotId": snap["snapshotId"], "elementRef": button})


async def prep_browser_upload(w: World) -> Args:
    (w.project / "notes.txt").write_text("attached\n")
    (w.project / "other.txt").write_text("other\n")
    b, snap, field_ref = await w.browser_target("/form", 'button "Attachment"')
    return w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                    "snapshotId": snap["snapshotId"], "elementRef": field_ref, "paths": ["notes.txt"]})


async def prep_browser_tab_open(w: World) -> Args:
    b = await w.browser("/start")
    return w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"], "url": w.pages.url("/one")})


async def prep_browser_capture(w: World) -> Args:
    b = await w.browser("/start")
    return {"panelId": b["panelId"], "save": {"path": "shot.png", "retryEpoch": w.epoch, "requestKey": w.key("case")}}


async def gone_browser_capture(w: World, args: Args, op: dict[str, Any]) -> None:
    await w.close_browser(args["panelId"])


async def gone_shot(w: World, args: Args, op: dict[str, Any]) -> None:
    assert (w.project / "shot.png").exists(), dump(op)
    (w.project / "shot.png").unlink()


async def observe_shot(w: World) -> Any:
    files = sorted(p.name for p in w.project.iterdir())
    shot = w.project / "shot.png"
    return files, sha(shot.read_bytes()) if shot.exists() else None, await w.panels()


def capture_elsewhere(args: Args) -> Args:
    return dict(args, save=dict(args["save"], path="elsewhere.png"))


async def prep_browser_drag(w: World) -> Args:
    b, snap, card = await w.browser_target("/peer", 'listitem "Card"')
    return w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                    "snapshotId": snap["snapshotId"], "elementRef": card, "targetRef": ref_of(snap, 'region "Bin"')})


async def prep_browser_fill(w: World) -> Args:
    b, snap, name = await w.browser_target("/peer", 'textbox "Name"')
    return w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                    "snapshotId": snap["snapshotId"], "fields": [{"elementRef": name, "value": "Ada"}]})


async def prep_browser_emulate(w: World) -> Args:
    b = await w.browser("/start")
    return w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"], "colorScheme": "dark"})


async def prep_browser_pdf(w: World) -> Args:
    b = await w.browser("/start")
    return w.keyed({"panelId": b["panelId"], "path": "page.pdf"})


async def observe_pdf(w: World) -> Any:
    files = sorted(p.name for p in w.project.iterdir())
    pdf = w.project / "page.pdf"
    return files, sha(pdf.read_bytes()) if pdf.exists() else None, await w.panels()


def ref_of(snap: dict[str, Any], needle: str) -> str:
    for line in snap["text"].splitlines():
        if needle in line:
            return re.search(r"\[((?:f\d+)?e\d+)\]", line).group(1)
    raise AssertionError(f"no {needle!r} in {snap['text']}")


async def prep_browser_close(w: World) -> Args:
    b = await w.browser()
    return w.keyed({"workspaceId": w.ws, "panelId": b["panelId"], "expectedRevision": await w.revision()})


# files, editor, workspace close, git


async def prep_file_write(w: World) -> Args:
    (w.project / "notes.txt").write_bytes(b"one\n")
    return w.keyed({"workspaceId": w.ws, "path": "notes.txt", "expectedDiskRevision": sha(b"one\n"), "text": "two\n"})


async def gone_file(w: World, args: Args, op: dict[str, Any]) -> None:
    (w.project / args["path"]).unlink()


async def observe_files(w: World) -> Any:
    return {p.name: p.read_bytes() for p in sorted(w.project.iterdir()) if p.is_file()}


async def prep_file_create(w: World) -> Args:
    return w.keyed({"workspaceId": w.ws, "path": "made.txt", "text": "made\n"})


async def prep_editor_save(w: World) -> Args:
    (w.project / "doc.txt").write_bytes(b"line one\n")
    doc = await w.s.ok("lomi_editor_open", {"workspaceId": w.ws, "path": "doc.txt"})
    await w.s.ok("lomi_editor_edit", {"documentId": doc["documentId"], "expectedBufferRevision": doc["bufferRevision"],
                                      "edits": [{"start": 0, "end": 0, "text": "saved "}]})
    return w.keyed({"documentId": doc["documentId"], "expectedBufferRevision": str(int(doc["bufferRevision"]) + 1)})


async def gone_editor_save(w: World, args: Args, op: dict[str, Any]) -> None:
    assert (w.project / "doc.txt").read_bytes() == b"saved line one\n"
    # The document gets another edit, is closed and its edit dropped; the file changes on disk,
    # so a second save would show.
    await w.s.ok("lomi_editor_edit", {"documentId": args["documentId"], "expectedBufferRevision": args["expectedBufferRevision"],
                                      "edits": [{"start": 0, "end": 0, "text": "unsaved "}]})
    closed = await w.s.ok("lomi_editor_close", {"documentId": args["documentId"], "discard": True})
    assert closed["discarded"] is True, dump(closed)
    (w.project / "doc.txt").write_bytes(b"changed by the person\n")


async def prep_workspace_close(w: World) -> Args:
    (w.project / "doc.txt").write_bytes(b"line one\n")
    doc = await w.s.ok("lomi_editor_open", {"workspaceId": w.ws, "path": "doc.txt"})
    await w.s.ok("lomi_editor_edit", {"documentId": doc["documentId"], "expectedBufferRevision": doc["bufferRevision"],
                                      "edits": [{"start": 0, "end": 0, "text": "saved "}]})
    return w.keyed({"workspaceId": w.ws, "expectedRevision": await w.revision(),
                    "documents": [{"documentId": doc["documentId"], "action": "save"}]})


async def gone_workspace_close(w: World, args: Args, op: dict[str, Any]) -> None:
    # Its documents are closed by the operation itself; the file changes on disk (a second save
    # would show) and the workspace's revision moves on.
    assert (w.project / "doc.txt").read_bytes() == b"saved line one\n"
    (w.project / "doc.txt").write_bytes(b"changed by the person\n")
    await w.op("lomi_workspace_update", {"workspaceId": w.ws, "expectedRevision": await w.revision(),
                                          "change": {"rename": {"name": "Moved on"}}})


async def prep_git_commit(w: World) -> Args:
    git(w.project, "init", "-q", "-b", "main")
    git(w.project, "config", "user.name", "Test Person")
    git(w.project, "config", "user.email", "person@example.invalid")
    (w.project / "hello.txt").write_text("hello\n")
    git(w.project, "add", "hello.txt")
    git(w.project, "commit", "-q", "-m", "first")
    first = git(w.project, "rev-parse", "HEAD")
    (w.project / "hello.txt").write_text("hello, world\n")
    git(w.project, "add", "hello.txt")
    return w.keyed({"workspaceId": w.ws, "message": "Greet the world", "expectedHeadRevision": first})


async def gone_git_commit(w: World, args: Args, op: dict[str, Any]) -> None:
    # The person takes the commit back (keeping the change staged): a second commit would show.
    assert git(w.project, "rev-parse", "HEAD") == op["result"]["commit"], dump(op)
    git(w.project, "reset", "-q", "--soft", "HEAD~1")


async def observe_git(w: World) -> Any:
    return git(w.project, "log", "--format=%H %s").splitlines(), git(w.project, "diff", "--cached", "--name-only")


# Android


async def prep_android_attach(w: World) -> Args:
    android = await w.attached()  # the person approves the device once; it is remembered
    await w.detach(android.panel)
    return w.keyed({"workspaceId": w.ws, "serial": w.phone.serial, "expectedRevision": await w.revision()})


async def gone_android_attach(w: World, args: Args, op: dict[str, Any]) -> None:
    await w.detach(op["result"]["panelId"])


async def observe_android_panels(w: World) -> Any:
    return await w.panels(), w.services("getprop"), w.services("'am' 'start'")


async def prep_android_launch(w: World) -> Args:
    a = await w.attached()
    return w.keyed({"panelId": a.panel, "leaseId": a.lease, "generation": a.generation, "component": "org.example/.Main"})


async def gone_android(w: World, args: Args, op: dict[str, Any]) -> None:
    await w.detach(args["panelId"])


async def observe_launches(w: World) -> Any:
    return await w.panels(), w.services("'am' 'start'")


async def prep_android_shell(w: World) -> Args:
    a = await w.attached()
    assert w.lomi.run("confirm", "lomi_android_shell", "--off").returncode == 0
    return w.keyed({"panelId": a.panel, "leaseId": a.lease, "generation": a.generation, "command": "wm size"})


async def observe_shell(w: World) -> Any:
    return await w.panels(), w.services("wm size")


async def prep_android_detach(w: World) -> Args:
    a = await w.attached()
    return w.keyed({"workspaceId": w.ws, "panelId": a.panel, "expectedRevision": await w.revision()})


def guarded_args(w: World, a: Android, **args: Any) -> Args:
    return w.keyed({"panelId": a.panel, "leaseId": a.lease, "generation": a.generation, **args})


async def prep_android_push(w: World) -> Args:
    a = await w.attached()
    (w.project / "data.bin").write_bytes(b"pushed once\n")
    return guarded_args(w, a, path="data.bin", devicePath="/sdcard/data.bin")


async def observe_sync(w: World) -> Any:
    files = sorted((p.name, p.read_bytes()) for p in w.project.iterdir() if p.is_file())
    return await w.panels(), w.services("sync:"), w.services("sha256sum"), files


async def prep_android_pull(w: World) -> Args:
    a = await w.attached()
    (w.project / "src.bin").write_bytes(b"on the device\n")
    await w.op("lomi_android_push", {"panelId": a.panel, "leaseId": a.lease, "generation": a.generation,
                                     "path": "src.bin", "devicePath": "/sdcard/src.bin"})
    return guarded_args(w, a, devicePath="/sdcard/src.bin", path="pulled.bin")


async def gone_android_pull(w: World, args: Args, op: dict[str, Any]) -> None:
    # The pulled file is removed too: a second pull would write it again.
    assert (w.project / "pulled.bin").read_bytes() == b"on the device\n"
    (w.project / "pulled.bin").unlink()
    await w.detach(args["panelId"])


async def prep_android_install(w: World) -> Args:
    a = await w.attached()
    tiny_apk(w.project / "demo.apk", "org.lomi.demo", 3, "1.3")
    return guarded_args(w, a, path="demo.apk")


async def observe_installs(w: World) -> Any:
    return await w.panels(), w.services("'pm' 'install'")


async def prep_android_uninstall(w: World) -> Args:
    a = await w.attached()
    tiny_apk(w.project / "demo.apk", "org.lomi.demo", 3, "1.3")
    await w.op("lomi_android_install", {"panelId": a.panel, "leaseId": a.lease, "generation": a.generation,
                                        "path": "demo.apk"})
    return guarded_args(w, a, package="org.lomi.demo")


async def observe_uninstalls(w: World) -> Any:
    return await w.panels(), w.services("'pm' 'uninstall'")


async def prep_android_stop(w: World) -> Args:
    return guarded_args(w, await w.attached(), package="org.lomi.demo")


async def observe_stops(w: World) -> Any:
    return await w.panels(), w.services("'force-stop'")


async def prep_android_open_url(w: World) -> Args:
    return guarded_args(w, await w.attached(), url="https://example.com/once")


async def prep_android_rotate(w: World) -> Args:
    return guarded_args(w, await w.attached(), rotation=1)


async def observe_rotations(w: World) -> Any:
    return await w.panels(), w.services("'put' 'system' 'user_rotation'")


CASES = [
    Case("lomi_workspace_update", prep_workspace_update, gone_workspace_update, observe_workspace,
         changed(change={"rename": {"name": "Another name"}})),
    Case("lomi_terminal_create", prep_terminal_create, gone_terminal_create, observe_panels, changed(title="Other")),
    Case("lomi_terminal_interrupt", prep_terminal_interrupt, gone_by_target_terminal, observe_panels,
         changed(generation="g0000")),
    Case("lomi_terminal_close", prep_terminal_close, nothing, observe_panels, changed(expectedRevision="999")),
    Case("lomi_browser_create", prep_browser_create, gone_browser_create, observe_panels, changed(title="Other")),
    Case("lomi_browser_navigate", prep_browser_navigate, gone_browser, observe_hits,
         lambda a: dict(a, url=a["url"].replace("/one", "/two"))),
    Case("lomi_browser_click", prep_browser_click, gone_browser, observe_hits, changed(elementRef="e999")),
    Case("lomi_browser_upload", prep_browser_upload, gone_browser, observe_hits, changed(paths=["other.txt"])),
    Case("lomi_browser_tab_open", prep_browser_tab_open, gone_browser, observe_hits,
         lambda a: dict(a, url=a["url"].replace("/one", "/two"))),
    # The saved file is deleted: the retry (which captures again) must not write it again.
    Case("lomi_browser_capture", prep_browser_capture, gone_shot, observe_shot, capture_elsewhere,
         operation=lambda data: data["saved"], label="file-deleted"),
    # The browser is closed: the capture half of the call has nothing to capture, but the save
    # half must still answer its receipt (or the conflict) rather than NOT_FOUND.
    Case("lomi_browser_capture", prep_browser_capture, gone_browser_capture, observe_shot, capture_elsewhere,
         operation=lambda data: data["saved"], label="browser-closed"),
    Case("lomi_browser_close", prep_browser_close, nothing, observe_panels, changed(expectedRevision="999")),
    Case("lomi_browser_drag", prep_browser_drag, gone_browser, observe_hits, changed(targetRef="e999")),
    Case("lomi_browser_fill", prep_browser_fill, gone_browser, observe_hits,
         lambda a: dict(a, fields=[dict(a["fields"][0], value="Grace")])),
    Case("lomi_browser_emulate", prep_browser_emulate, gone_browser, observe_panels, changed(colorScheme="light")),
    Case("lomi_browser_pdf", prep_browser_pdf, gone_browser, observe_pdf, changed(path="other.pdf")),
    Case("lomi_file_write", prep_file_write, gone_file, observe_files, changed(text="three\n")),
    Case("lomi_file_create", prep_file_create, gone_file, observe_files, changed(text="other\n")),
    Case("lomi_editor_save", prep_editor_save, gone_editor_save, observe_files, changed(expectedBufferRevision="1")),
    Case("lomi_workspace_close", prep_workspace_close, gone_workspace_close, observe_files,
         lambda a: dict(a, documents=[dict(a["documents"][0], action="discard")])),
    Case("lomi_git_commit", prep_git_commit, gone_git_commit, observe_git, changed(message="Another message")),
    Case("lomi_android_attach", prep_android_attach, gone_android_attach, observe_android_panels,
         changed(title="Other"), android=True),
    Case("lomi_android_launch", prep_android_launch, gone_android, observe_launches,
         changed(component="org.example/.Other"), android=True),
    Case("lomi_android_shell", prep_android_shell, gone_android, observe_shell, changed(command="getprop"), android=True),
    Case("lomi_android_detach", prep_android_detach, nothing, observe_panels, changed(expectedRevision="999"),
         android=True),
    Case("lomi_android_push", prep_android_push, gone_android, observe_sync, changed(devicePath="/sdcard/other.bin"),
         android=True),
    Case("lomi_android_pull", prep_android_pull, gone_android_pull, observe_sync, changed(path="other.bin"),
         android=True),
    Case("lomi_android_install", prep_android_install, gone_android, observe_installs, changed(replace=False),
         android=True),
    Case("lomi_android_uninstall", prep_android_uninstall, gone_android, observe_uninstalls,
         changed(package="org.other"), android=True),
    Case("lomi_android_stop", prep_android_stop, gone_android, observe_stops, changed(package="org.other"),
         android=True),
    Case("lomi_android_open_url", prep_android_open_url, gone_android, observe_launches,
         changed(url="https://example.com/other"), android=True),
    Case("lomi_android_rotate", prep_android_rotate, gone_android, observe_rotations, changed(rotation=2),
         android=True),
]


async def check_retry(w: World, case: Case) -> None:
    """Mutation → settled → target gone → the exact same call is the prior operation with no
    second effect → the same key with other arguments is IDEMPOTENCY_CONFLICT."""
    tool = case.tool
    answers: list[Any] = []

    def why(text: str) -> str:
        return f"{case.name}: {text}\n{dump(answers)}"

    args = await case.prepare(w)
    first = await w.s.call(tool, args)
    answers.append({"first call": dict(first)})
    assert first["status"] == "ok", why("the first call was refused")
    started = case.operation(first["data"])
    op = await w.s.settle(started["operationId"])
    answers.append({"settled": op})
    assert op["state"] == "succeeded", why("the first call did not succeed")

    await case.gone(w, args, op)
    seen = await case.observe(w)

    retry = await w.s.call(tool, args)
    answers.append({"retry": dict(retry)})
    assert retry["status"] == "ok", why("the retry of the exact same call was refused instead of answering its receipt")
    again = case.operation(retry["data"])
    assert again["operationId"] == op["operationId"], why("the retry is another operation")
    assert again["state"] in SETTLED, why("the retry's operation is not settled")
    for name in ("state", "effectState", "result", "error", "settledAt"):
        assert again.get(name) == op.get(name), why(f"the retry answered another {name}")
    after = await case.observe(w)
    assert after == seen, why(f"the retry had an effect: before {seen!r}, after {after!r}")

    conflict = await w.s.call(tool, case.change(args))
    answers.append({"other arguments": dict(conflict)})
    assert conflict["status"] == "error" and conflict.get("code") == "IDEMPOTENCY_CONFLICT", why(
        "the same requestKey with other arguments did not answer IDEMPOTENCY_CONFLICT"
    )
    assert op["operationId"] in conflict["message"], why("the conflict does not name the prior operation")
    assert await case.observe(w) == seen, why("the conflicting call had an effect")
    receipts = [o for o in w.lomi.cli("operation", "list") if o["requestKey"] == op["requestKey"]]
    assert [o["operationId"] for o in receipts] == [op["operationId"]], why(f"receipts under the key: {dump(receipts)}")


async def world(lomi, workspaces, mcp_session, tmp_path, pages, adb=None, phones=None) -> World:
    a, _ = workspaces
    epoch = (await mcp_session.connect(a["workspaceId"]))["retryEpoch"]
    return World(lomi, mcp_session, a["workspaceId"], epoch, tmp_path / "project-a", pages, adb, phones)


def params(android: bool) -> list[Any]:
    return [pytest.param(c, id=c.name, marks=c.marks) for c in CASES if c.android == android]


@pytest.mark.parametrize("case", params(android=False))
async def test_a_retry_after_its_target_is_gone_is_the_prior_operation(lomi, workspaces, mcp, tmp_path, pages, case):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        await check_retry(await world(lomi, workspaces, session, tmp_path, pages), case)


@pytest.mark.parametrize("case", params(android=True))
async def test_a_retry_after_its_device_is_detached_is_the_prior_operation(
    lomi, workspaces, mcp, tmp_path, pages, adb, phones, case  # noqa: F811
):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        await check_retry(await world(lomi, workspaces, session, tmp_path, pages, adb, phones), case)


# ---- cancellation ----


async def states_in_feed(w: World, operation_id: str) -> list[str]:
    page = await w.s.ok("lomi_events_read", {"retryEpoch": w.epoch, "maxEvents": 500})
    return [e["state"] for e in page["events"] if e.get("operationId") == operation_id]


async def cancel_running(
    w: World, tool: str, args: Args, started: Callable[[], bool], may_finish_first: bool = False
) -> tuple[dict, dict, list[str]]:
    """Starts `tool`, waits until `started()` says its effect is under way on the real part,
    cancels it while it runs; returns (cancel's answer, the settled operation, the feed's states).
    With `may_finish_first`, the effect may have succeeded by the time the cancel is sent."""
    answers: dict[str, Any] = {}

    async def call() -> None:
        answers["call"] = await w.s.call(tool, args)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.to_thread.run_sync(lambda: wait_for(started, f"{tool} to reach the real part"))
        lookup = {"retryEpoch": args["retryEpoch"], "requestKey": args["requestKey"], "tool": tool}
        running = await w.s.ok("lomi_operation_get", lookup)
        expected = ("running", "succeeded") if may_finish_first else ("running",)
        assert running["state"] in expected, f"{tool}: not running while its effect is under way\n{dump(running)}"
        sent = time.monotonic()
        cancelled = await w.s.ok("lomi_operation_cancel", {"operationId": running["operationId"]})
    assert answers["call"]["status"] == "ok", f"{tool}: {dump(dict(answers['call']))}"
    settled = await w.s.settle(running["operationId"])
    # From the cancel to the settled receipt: how long the cancel took, whatever the time the
    # work took to start (on a busy machine, most of the call).
    w.cancel_took = time.monotonic() - sent
    return cancelled, settled, await states_in_feed(w, running["operationId"])


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out after {DEADLINE}s waiting for {what}")
        time.sleep(0.02)


async def test_a_cancelled_navigation_stops_its_slow_load(lomi, workspaces, mcp, tmp_path, pages):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        b = await w.browser("/start")
        args = w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                        "url": pages.url("/slow")}, "slow")
        cancelled, op, states = await cancel_running(w, "lomi_browser_navigate", args, pages.slow_asked.is_set)
        shown = dump({"cancel": cancelled, "settled": op, "feed": states})
        assert cancelled["state"] in ("cancelling", "cancelled"), shown
        assert (op["state"], op["effectState"]) == ("cancelled", "partial"), shown
        assert states[-2:] == ["cancelling", "cancelled"] and "running" in states, shown
        assert w.cancel_took < SLOW_SECONDS, "the cancel waited for the slow page to answer"
        # The page never loaded: the tab still shows the page before it.
        tabs = (await session.ok("lomi_browser_tab_list", {"panelId": b["panelId"]}))["tabs"]
        assert [(t["url"], t["title"]) for t in tabs] == [(pages.url("/start"), "Start")], dump(tabs)
        snap = await session.ok("lomi_browser_snapshot", {"panelId": b["panelId"]})
        assert "Start page" in snap["text"] and "Slow page" not in snap["text"], snap["text"]
        # The browser is still usable, and a retry of the cancelled request is that operation.
        retry = await session.ok("lomi_browser_navigate", args)
        assert retry["operationId"] == op["operationId"] and retry["state"] == "cancelled", dump(retry)
        await w.close_browser(b["panelId"])


async def test_a_navigation_after_a_cancelled_one_goes_through(lomi, workspaces, mcp, tmp_path, pages):
    """A stopped navigation leaves nothing behind that holds the next one back (Page.navigate
    goes to the page directly, not through a queue that waits for each load)."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        b = await w.browser("/start")
        args = w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                        "url": pages.url("/slow")}, "slow")
        _, op, _ = await cancel_running(w, "lomi_browser_navigate", args, pages.slow_asked.is_set)
        assert op["state"] == "cancelled", dump(op)
        after = await session.ok("lomi_browser_navigate", w.keyed({
            "panelId": b["panelId"], "browserGeneration": b["browserGeneration"], "url": pages.url("/one"),
        }, "after"))
        after = await session.settle(after["operationId"])
        assert after["state"] == "succeeded", f"a navigation after the cancelled one: {dump(after)}\nrequests: {pages.hits}"


async def test_a_cancelled_android_shell_command_settles_cancelled(lomi, workspaces, mcp, tmp_path, pages, adb, phones):  # noqa: F811
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages, adb, phones)
        android = await w.attached()
        assert lomi.run("confirm", "lomi_android_shell", "--off").returncode == 0
        # The fixture has no `sleep`; a swipe takes its duration on the device.
        command = "input swipe 5 5 5 5 8000"
        args = w.keyed({"panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
                        "command": command}, "shell")
        cancelled, op, states = await cancel_running(
            w, "lomi_android_shell", args, lambda: w.services(command) > 0
        )
        shown = dump({"cancel": cancelled, "settled": op, "feed": states})
        assert (op["state"], op["effectState"]) == ("cancelled", "partial"), shown
        assert states[-2:] == ["cancelling", "cancelled"], shown
        assert w.cancel_took < 8, "the cancel waited for the command to end"
        assert w.services(command) == 1, w.phone.services


async def test_a_terminal_cancelled_before_its_program_spoke_is_stopped(lomi, workspaces, mcp, tmp_path, pages):
    """Creation waits for the program's first output; cancelled meanwhile, the program (and
    everything it started) is ended and no panel is added."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        # Its own duration finds this test's processes in /proc: the shell's and sleep's.
        sleep = f"sleep 8.{time.monotonic_ns() % 10**6:06d}"
        args = w.keyed({"workspaceId": w.ws, "cwdRelative": "", "title": "Quiet", "expectedRevision": await w.revision(),
                        "argv": ["sh", "-c", f"{sleep}; echo late"]}, "quiet")
        cancelled, op, states = await cancel_running(
            w, "lomi_terminal_create", args, lambda: any(c.startswith("sleep") for c in live_processes(sleep).values())
        )
        shown = dump({"cancel": cancelled, "settled": op, "feed": states})
        assert cancelled["state"] in ("cancelling", "cancelled"), shown
        # The program was started and stopped.
        assert (op["state"], op["effectState"]) == ("cancelled", "partial"), shown
        assert states[-2:] == ["cancelling", "cancelled"] and "running" in states, shown
        assert w.cancel_took < 8, "the cancel waited for the program"
        assert await w.panels() == [], shown
        assert not live_processes(sleep), f"left alive after the cancel: {live_processes(sleep)}"


HELD_CHROMIUM = Path(__file__).with_name("held_chromium.py")


def group_members(leader: int) -> list[int]:
    """Live processes of the process group `leader` leads: a browser's Chromium and helpers."""
    members = []
    for entry in os.listdir("/proc"):
        stat = proc_stat(int(entry)) if entry.isdigit() else None
        if stat is not None and stat["pgrp"] == leader and stat["state"] not in ("Z", "X", "x"):
            members.append(int(entry))
    return members


def parent_of(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(text[text.rfind(")") + 2 :].split()[1])


def chromium_leaders(lomi) -> dict[int, str]:
    """The browsers `lomi serve` started, pid → command line: its children with Chromium's
    arguments (each leads its process group)."""
    return {pid: c for pid, c in live_processes("--remote-debugging-port=0").items()
            if parent_of(pid) == lomi.proc.pid}


def profile_of(command: str) -> Path:
    """The browser's own folder (`…/lomi-chromium-*`, its profile is in it) from its command line."""
    found = [w for w in command.split(" ") if w.startswith("--user-data-dir=")]
    assert len(found) == 1, command
    return Path(found[0].split("=", 1)[1]).parent


@pytest.mark.parametrize("hold", ["racing", "before-start", "connect", "first-tab"])
async def test_a_browser_cancelled_while_it_starts_leaves_no_chromium(
    lomi, workspaces, mcp, tmp_path, pages, monkeypatch, hold
):
    """`racing`: Debian's Chromium as it is, cancelled as soon as its DevTools port is open; the
    launch may have finished first, and whichever it was, the real browser must match the
    receipt. The other two hold the launch (held_chromium.py) before Chromium runs, and after it
    is up while Lomi prepares its first tab: the cancel always lands, and nothing of the browser
    may be left (its process group and its folder in /tmp)."""
    folder = tmp_path / "held-chromium"
    if hold != "racing":
        folder.mkdir()
        launcher = folder / "chromium"
        launcher.write_text(f'#!/bin/sh\nexec {sys.executable} {HELD_CHROMIUM} {hold} {folder} -- "$@"\n')
        launcher.chmod(0o755)
        monkeypatch.setenv("LOMI_CHROMIUM", str(launcher))
        lomi.restart("SIGTERM")
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        launched: dict[int, str] = {}

        def started() -> bool:
            if hold != "racing" and not (folder / "held").exists():
                return False
            launched.update(chromium_leaders(lomi))
            if hold == "racing":
                # Up, not only started: Chromium wrote its DevTools port into the profile.
                return any((profile_of(c) / "profile" / "DevToolsActivePort").exists() for c in launched.values())
            return bool(launched)

        args = await prep_browser_create(w)
        cancelled, op, states = await cancel_running(w, "lomi_browser_create", args, started,
                                                     may_finish_first=hold == "racing")
        shown = dump({"cancel": cancelled, "settled": op, "feed": states, "launched": launched})
        assert len(launched) == 1, shown
        [(leader, command)] = launched.items()
        profile = profile_of(command)
        browsers = [p for p in await w.panels() if p[1] == "browser"]
        if hold != "racing":
            assert op["state"] == "cancelled", shown
        if op["state"] == "cancelled":
            assert op["effectState"] == "none", shown
            assert states[-2:] == ["cancelling", "cancelled"], shown
            assert browsers == [], shown
        else:
            assert (op["state"], op["effectState"]) == ("succeeded", "complete"), shown
            assert states[-1] == "succeeded", shown
            assert browsers == [(op["result"]["panelId"], "browser")], shown
            assert op["result"]["pid"] == leader and group_members(leader), shown
            assert profile.is_dir(), shown
            await w.close_browser(op["result"]["panelId"])
        await anyio.to_thread.run_sync(lambda: wait_for(
            lambda: not group_members(leader) and not profile.exists(),
            f"Chromium {leader} and its folder {profile} to be gone ({op['state']}): {group_members(leader)}",
        ))


async def test_a_click_cancelled_while_the_page_holds_it_settles_outcome_unknown(lomi, workspaces, mcp, tmp_path, pages):
    """The button's mousedown handler waits for the site, so Chromium cannot confirm the click.
    Cancelled, the click stops waiting: whether it did anything is unknown, and the receipt
    says so (`outcome_unknown`, effect unknown), after `cancelling`."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        b, snap, button = await w.browser_target("/busy", 'button "Hold"')
        args = w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                        "snapshotId": snap["snapshotId"], "elementRef": button}, "click")
        cancelled, op, states = await cancel_running(w, "lomi_browser_click", args, pages.slow_asked.is_set)
        shown = dump({"cancel": cancelled, "settled": op, "feed": states, "requests": pages.hits})
        assert cancelled["state"] in ("cancelling", "outcome_unknown"), shown
        assert (op["state"], op["effectState"]) == ("outcome_unknown", "unknown"), shown
        assert op["error"]["code"] == "OUTCOME_UNKNOWN" and "cancelled" in op["error"]["message"], shown
        assert states[-2:] == ["cancelling", "outcome_unknown"] and "running" in states, shown
        assert w.cancel_took < SLOW_SECONDS, "the cancel waited for the page"
        # The real page: the press reached it (its handler asked for /slow). Once the site
        # answers, the page is free again; the click was never finished (no release was sent).
        pages.release.set()
        after = await session.ok("lomi_browser_snapshot", {"panelId": b["panelId"]})
        assert "Hold" in after["text"], after["text"]
        assert "/clicked" not in pages.hits, shown
        await w.close_browser(b["panelId"])


async def test_a_cancelled_upload_settles_outcome_unknown_and_the_files_stay_chosen(lomi, workspaces, mcp, tmp_path, pages):
    """The file input's input handler waits for the site, so the upload is not confirmed.
    Cancelled, it settles `outcome_unknown`; a cancel cannot take the chosen files back, and
    once the page is free its handler sees them."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        (w.project / "notes.txt").write_text("attached\n")
        b, snap, field_ref = await w.browser_target("/busy", 'button "Attachment"')
        args = w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                        "snapshotId": snap["snapshotId"], "elementRef": field_ref, "paths": ["notes.txt"]}, "upload")
        cancelled, op, states = await cancel_running(w, "lomi_browser_upload", args, pages.slow_asked.is_set)
        shown = dump({"cancel": cancelled, "settled": op, "feed": states, "requests": pages.hits})
        assert (op["state"], op["effectState"]) == ("outcome_unknown", "unknown"), shown
        assert states[-2:] == ["cancelling", "outcome_unknown"] and "running" in states, shown
        assert w.cancel_took < SLOW_SECONDS, "the cancel waited for the page"
        pages.release.set()
        await anyio.to_thread.run_sync(lambda: wait_for(
            lambda: "/uploaded/notes.txt" in pages.hits, "the page's handler to see the chosen file"
        ))
        await w.close_browser(b["panelId"])


async def test_a_tab_opened_on_a_slow_page_and_cancelled_stops_loading(lomi, workspaces, mcp, tmp_path, pages):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        b = await w.browser("/start")
        args = w.keyed({"panelId": b["panelId"], "browserGeneration": b["browserGeneration"],
                        "url": pages.url("/slow")}, "tab")
        cancelled, op, states = await cancel_running(w, "lomi_browser_tab_open", args, pages.slow_asked.is_set)
        shown = dump({"cancel": cancelled, "settled": op, "feed": states})
        # The tab was opened (and stays); its page stopped loading.
        assert (op["state"], op["effectState"]) == ("cancelled", "partial"), shown
        assert states[-2:] == ["cancelling", "cancelled"] and "running" in states, shown
        assert w.cancel_took < SLOW_SECONDS, "the cancel waited for the slow page"
        tabs = (await session.ok("lomi_browser_tab_list", {"panelId": b["panelId"]}))["tabs"]
        shown = dump({"settled": op, "tabs": tabs})
        assert len(tabs) == 2 and (tabs[0]["url"], tabs[0]["title"]) == (pages.url("/start"), "Start"), shown
        # The new tab is active, still on the blank page it opened with.
        assert (tabs[1]["url"], tabs[1]["active"]) == ("about:blank", True), shown
        snap = await session.ok("lomi_browser_snapshot", {"panelId": b["panelId"]})
        assert "Slow page" not in snap["text"], snap["text"]
        await w.close_browser(b["panelId"])


def receipt_state(lomi, request_key: str) -> str | None:
    found = [o["state"] for o in lomi.cli("operation", "list") if o["requestKey"] == request_key]
    return found[0] if found else None


async def test_an_android_attach_cancelled_while_the_device_is_busy_adds_no_panel(
    lomi, workspaces, mcp, tmp_path, pages, adb, phones  # noqa: F811
):
    """The device fixture serves one command at a time, like a busy device: while a long swipe
    (sent with Debian's adb) runs, attaching cannot reach it. Cancelled then, nothing is added,
    and the device's late answers add nothing either."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages, adb, phones)
        android = await w.attached()  # the person's approval is remembered: no question this time
        await w.detach(android.panel)
        swipe = "input swipe 5 5 5 5 6000"
        busy = subprocess.Popen(["adb", "-P", str(adb.port), "-s", w.phone.serial, "shell", swipe],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: w.services(swipe) == 1, "the swipe to start"))
            sizes = w.services("wm")
            args = w.keyed({"workspaceId": w.ws, "serial": w.phone.serial, "expectedRevision": await w.revision()},
                           "attach")
            cancelled, op, states = await cancel_running(
                w, "lomi_android_attach", args, lambda: receipt_state(lomi, args["requestKey"]) == "running"
            )
            shown = dump({"cancel": cancelled, "settled": op, "feed": states, "device": w.phone.services})
            # A serial that is an address may have been `adb connect`ed: partial, as the code says.
            assert (op["state"], op["effectState"]) == ("cancelled", "partial"), shown
            assert states[-2:] == ["cancelling", "cancelled"] and "running" in states, shown
            assert w.cancel_took < 6, "the cancel waited for the device"
            assert await w.panels() == [], shown
            # The device answers the abandoned questions once the swipe is over: still no panel.
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: w.services("wm") > sizes, "the late answers"))
            assert await w.panels() == [], dump(w.phone.services)
        finally:
            busy.kill()
            busy.wait(timeout=DEADLINE)


async def test_an_android_attach_cancelled_while_waiting_for_the_person_never_runs(
    lomi, workspaces, mcp, tmp_path, pages, adb, phones  # noqa: F811
):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages, adb, phones)
        phone = phones()
        adb.connect(phone.serial)
        asked = len(phone.services)

        async def ask_and_cancel(key: str) -> tuple[dict, dict]:
            args = w.keyed({"workspaceId": w.ws, "serial": phone.serial, "expectedRevision": await w.revision()}, key)
            answers: dict[str, Any] = {}

            async def call() -> None:
                answers["call"] = await session.call("lomi_android_attach", args)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                waiting = await anyio.to_thread.run_sync(
                    lambda: lomi.wait_operation_for_key(args["requestKey"], "awaiting_user")
                )
                cancelled = await session.ok("lomi_operation_cancel", {"operationId": waiting["operationId"]})
            assert answers["call"]["status"] == "ok", dump(dict(answers["call"]))
            return cancelled, await session.settle(waiting["operationId"])

        cancelled, op = await ask_and_cancel("waiting")
        states = await states_in_feed(w, op["operationId"])
        shown = dump({"cancel": cancelled, "settled": op, "feed": states})
        assert (cancelled["state"], cancelled["effectState"]) == ("cancelled", "none"), shown
        assert (op["state"], op["effectState"]) == ("cancelled", "none"), shown
        assert "awaiting_user" in states and states[-1] == "cancelled", shown
        assert "running" not in states and "cancelling" not in states, shown
        assert await w.panels() == [], shown
        lomi.cli_fails("decide", op["operationId"], "approve")
        assert phone.services[asked:] == [], "the device was asked something"
        # The cancel decided nothing for the person: the next attach asks again.
        again, _ = await ask_and_cancel("again")
        assert again["state"] == "cancelled", dump(again)


@pytest.mark.parametrize("tool", ["lomi_workspace_update", "lomi_file_write"])
async def test_cancelling_succeeded_work_leaves_it_succeeded(lomi, workspaces, mcp, tmp_path, pages, tool):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        prepare = prep_workspace_update if tool == "lomi_workspace_update" else prep_file_write
        args = await prepare(w)
        op = await session.settle((await session.ok(tool, args))["operationId"])
        assert op["state"] == "succeeded", dump(op)
        cancelled = await session.ok("lomi_operation_cancel", {"operationId": op["operationId"]})
        assert (cancelled["state"], cancelled["effectState"]) == ("succeeded", "complete"), dump(cancelled)
        assert cancelled["result"] == op["result"] and cancelled["settledAt"] == op["settledAt"], dump([op, cancelled])
        again = await session.ok("lomi_operation_get", {"operationId": op["operationId"]})
        assert again == cancelled, dump([cancelled, again])
        assert "cancelling" not in await states_in_feed(w, op["operationId"])
        if tool == "lomi_workspace_update":
            assert lomi.workspace(w.ws)["name"] == "Renamed once"
        else:
            assert (w.project / "notes.txt").read_bytes() == b"two\n"


async def test_a_same_document_navigation_settles_at_once(lomi, workspaces, mcp, tmp_path, pages):
    """Navigating to a fragment of the page already shown is done when Chromium says so: it
    used to wait 30 s for a load that never comes and settle outcome_unknown."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages)
        b = await w.browser("/start")
        for key, url in (("frag-1", pages.url("/start#section")), ("frag-2", pages.url("/start#other"))):
            op = await session.ok("lomi_browser_navigate", w.keyed({
                "panelId": b["panelId"], "browserGeneration": b["browserGeneration"], "url": url,
            }, key))
            op = await session.settle(op["operationId"])
            assert (op["state"], op["effectState"]) == ("succeeded", "complete"), dump(op)
        after = await session.ok("lomi_browser_navigate", w.keyed({
            "panelId": b["panelId"], "browserGeneration": b["browserGeneration"], "url": pages.url("/one"),
        }, "after-frag"))
        after = await session.settle(after["operationId"])
        assert after["state"] == "succeeded" and after["result"]["url"] == pages.url("/one"), dump(after)
        await w.close_browser(b["panelId"])


def slow_sync(w: World, milliseconds: int) -> None:
    """The fixture's sync service waits this long before each packet, both ways (set with
    Debian's adb, as a person would poke a device)."""
    w.adb.run("-s", w.phone.serial, "shell", "setprop", "lomi.fixture.sync_ms", str(milliseconds))


async def test_cancelled_android_transfers_stop_half_way(lomi, workspaces, mcp, tmp_path, pages, adb, phones):  # noqa: F811
    """Push, pull and install take the cancel token while bytes move over a slow link: each
    stops half-way, in well under the transfer's time, and says what it left behind."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        w = await world(lomi, workspaces, session, tmp_path, pages, adb, phones)
        android = await w.attached()
        big = os.urandom(3 << 20)
        (w.project / "big.bin").write_bytes(big)
        # On the device first, at full speed, for the pull.
        await w.op("lomi_android_push", {"panelId": android.panel, "leaseId": android.lease,
                                         "generation": android.generation, "path": "big.bin",
                                         "devicePath": "/sdcard/big.bin"})
        slow_sync(w, 500)  # 3 MiB in 256 KiB packets: about 6 s

        def sync_opened(before: int) -> Callable[[], bool]:
            return lambda: w.services("sync:") > before

        # push: part of the file may be on the device.
        args = guarded_args(w, android, path="big.bin", devicePath="/sdcard/half.bin")
        cancelled, op, states = await cancel_running(w, "lomi_android_push", args, sync_opened(w.services("sync:")))
        shown = dump({"cancel": cancelled, "settled": op, "feed": states})
        assert (op["state"], op["effectState"]) == ("cancelled", "partial"), shown
        assert states[-2:] == ["cancelling", "cancelled"], shown
        assert w.cancel_took < 4, "the cancel waited for the whole transfer"
        assert w.services("'sha256sum' '/sdcard/half.bin'") == 0, w.phone.services

        # pull: nothing is written into the project.
        args = guarded_args(w, android, devicePath="/sdcard/big.bin", path="pulled.bin")
        cancelled, op, states = await cancel_running(w, "lomi_android_pull", args, sync_opened(w.services("sync:")))
        shown = dump({"cancel": cancelled, "settled": op, "feed": states})
        assert (op["state"], op["effectState"]) == ("cancelled", "none"), shown
        assert w.cancel_took < 4, "the cancel waited for the whole transfer"
        assert not (w.project / "pulled.bin").exists() and not list(w.project.glob(".lomi-tmp*")), shown

        # install while its APK is copied: the copy is removed, pm never runs.
        tiny_apk(w.project / "big.apk", "org.lomi.big", 1, "1.0")
        with zipfile.ZipFile(w.project / "big.apk", "a", compression=zipfile.ZIP_STORED) as grown:
            grown.writestr("assets/payload.bin", os.urandom(3 << 20))
        args = guarded_args(w, android, path="big.apk")
        cancelled, op, states = await cancel_running(w, "lomi_android_install", args, sync_opened(w.services("sync:")))
        shown = dump({"cancel": cancelled, "settled": op, "feed": states, "device": w.phone.services[-5:]})
        assert (op["state"], op["effectState"]) == ("cancelled", "none"), shown
        assert w.cancel_took < 4, "the cancel waited for the whole transfer"
        assert w.services("'pm' 'install'") == 0, shown
        assert w.services("'rm' '-f' '/data/local/tmp/lomi-install-") == 1, shown

        # The panel still works, and a retry of a cancelled request is that operation.
        slow_sync(w, 0)
        assert (await session.ok("lomi_android_apps", {"panelId": android.panel}))["apps"] == []
        retry = await session.ok("lomi_android_install", args)
        assert retry["operationId"] == op["operationId"] and retry["state"] == "cancelled", dump(retry)
