"""Browser panels over MCP with Debian's real Chromium and pages served on 127.0.0.1 by the
test: a form filled and read back, iframes of two origins, stale refs refused, uploads from the
project, a JavaScript dialog, two tabs, console and network reads, PNG captures checked by
decoding them, a killed browser settled honestly, no Chromium left behind, and bad input.

Chromium processes are found in /proc by their process group (the browser leads its own);
a zombie counts as gone, since PID 1 in a container may reap nothing."""

import collections
import hashlib
import http.server
import os
import re
import signal
import struct
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import WAIT_DEADLINE, dump, live_processes

pytestmark = pytest.mark.anyio

GONE_DEADLINE = WAIT_DEADLINE

FORM = """<!doctype html><title>Form</title>
<h1>Order</h1>
<label for="name">Name</label><input id="name">
<label for="size">Size</label>
<select id="size"><option value="s">Small</option><option value="l">Large</option></select>
<label for="file">Attachment</label><input id="file" type="file">
<button id="go" onclick="show()">Submit</button>
<button id="ask" onclick="document.getElementById('out').textContent = confirm('Really?') ? 'confirmed' : 'declined'">Ask</button>
<button id="log" onclick="console.log('hello from the page', 42); fetch('/ping?x=1')">Log</button>
<div id="out" role="status">nothing yet</div>
<script>
function show() {
  const f = document.getElementById('file').files;
  document.getElementById('out').textContent = 'Sent ' + document.getElementById('name').value + ' ' +
    document.getElementById('size').value + ' files=' + (f.length ? f[0].name : 'none');
}
</script>"""

RERENDER = """<!doctype html><title>Rerender</title>
<div id="box"><button onclick="render()">Press me</button></div><p id="count">presses: 0</p>
<script>
let n = 0;
function render() {
  n += 1;
  document.getElementById('count').textContent = 'presses: ' + n;
  document.getElementById('box').innerHTML = '<button onclick="render()">Press me</button>';
}
</script>"""

INNER = """<!doctype html><button onclick="this.textContent = 'clicked in ' + location.host">Frame button</button>"""

CAPTURE = """<!doctype html><style>body{margin:0;height:2000px}
#box{position:absolute;left:30px;top:40px;width:240px;height:90px;background:#2a6}</style>
<div id="box" role="img" aria-label="Green box"></div>"""

OPENER = """<!doctype html><title>Opener</title><h1>Opener page</h1>
<button onclick="window.open('/popup', 'pop', 'width=400,height=300')">Open popup</button>
<a href="/popup?via=link" target="_blank">Open link</a>"""

POPUP = """<!doctype html><title>Popup</title><h1>Popup page</h1>
<button onclick="console.log('popup says hi'); fetch('/ping?from=popup')">Say hi</button>
<button onclick="window.close()">Close me</button>"""

KEEPER = """<!doctype html><title>Keeper</title>
<button onclick="localStorage.setItem('kept', 'yes'); document.cookie = 'kept=yes; max-age=3600; path=/'; show()">Remember</button>
<div id="out" role="status"></div>
<script>
function show() {
  document.getElementById('out').textContent =
    'stored=' + (localStorage.getItem('kept') || 'none') + ' cookie=' + (document.cookie || 'none');
}
show();
</script>"""


class Site:
    """Pages on 127.0.0.1:<port>; `/hang` holds its request until the site stops; `/partial`
    sends the start of a page and holds the rest until `finish` is set. `hits` counts the
    requests each path got. `pages` is anything with `get(path)` (a dict, or pages made on
    request)."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages
        self.hits: collections.Counter[str] = collections.Counter()
        self.counting = threading.Lock()
        self.release = threading.Event()
        self.finish = threading.Event()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0]
                with site.counting:
                    site.hits[path] += 1
                if path == "/hang":
                    site.release.wait(60)
                    return
                if path == "/partial":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.end_headers()
                    self.wfile.write(b"<!doctype html><title>Partial</title><h1>Arrived so far</h1>")
                    self.wfile.flush()
                    site.finish.wait(60)
                    self.wfile.write(b"<p>The rest</p>")
                    return
                body = site.pages.get(path)
                status = 200 if body is not None else 404
                data = (body if body is not None else "<h1>missing</h1>").encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self) -> None:
        self.release.set()
        self.finish.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    s = Site({"/form": FORM, "/rerender": RERENDER, "/inner": INNER, "/capture": CAPTURE, "/ping": "pong",
              "/opener": OPENER, "/popup": POPUP, "/keeper": KEEPER})
    yield s
    s.close()


# ---- /proc ----


def group_alive(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid`."""
    return [pid for pid, _, fields in live_processes() if int(fields[2]) == pgid]


async def wait_gone(pgid: int) -> None:
    deadline = time.monotonic() + GONE_DEADLINE
    while group_alive(pgid):
        if time.monotonic() > deadline:
            pytest.fail(f"Chromium processes left behind in group {pgid}: {group_alive(pgid)}")
        await anyio.sleep(0.05)


# ---- PNG ----


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height, after checking the signature and decoding every chunk and the pixels."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), data[:16]
    at, idat, size = 8, [], None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunk = data[at + 8:at + 8 + length]
        assert zlib.crc32(kind + chunk) == struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0]
        if kind == b"IHDR":
            size = struct.unpack(">II", chunk[:8])
            depth, colour = chunk[8], chunk[9]
        elif kind == b"IDAT":
            idat.append(chunk)
        at += 12 + length
    assert size is not None
    raw = zlib.decompress(b"".join(idat))
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    stride = (size[0] * channels * depth + 7) // 8
    assert len(raw) == size[1] * (stride + 1), "pixel data matches the header"
    return size


def image_block(envelope) -> bytes:
    import base64

    images = [c for c in envelope.raw.content if c.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png", envelope.raw
    return base64.b64decode(images[0].data)


# ---- helpers ----


class Agent:
    """An approved MCP session with one browser panel."""

    def __init__(self, mcp_session, workspace: str, epoch: str) -> None:
        self.mcp = mcp_session
        self.ws = workspace
        self.epoch = epoch
        self.keys = 0
        self.panel = ""
        self.generation = ""
        self.pid = 0

    def key(self) -> str:
        self.keys += 1
        return f"k{self.keys}"

    async def revision(self) -> str:
        listing = await self.mcp.ok("lomi_panel_list", {"workspaceId": self.ws})
        return listing["domainRevision"]

    async def create(self) -> dict[str, Any]:
        op = await self.op("lomi_browser_create", {
            "workspaceId": self.ws, "title": "Browser", "expectedRevision": await self.revision(),
        })
        assert op["state"] == "succeeded", dump(op)
        result = op["result"]
        self.panel, self.generation, self.pid = result["panelId"], result["browserGeneration"], result["pid"]
        return result

    async def op(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A mutation, followed until it settles."""
        args = dict(args, retryEpoch=self.epoch, requestKey=self.key())
        started = await self.mcp.ok(tool, args)
        return await self.mcp.settle(started["operationId"])

    async def act(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return await self.op(tool, dict(args, panelId=self.panel, browserGeneration=self.generation))

    async def navigate(self, url: str) -> dict[str, Any]:
        op = await self.act("lomi_browser_navigate", {"url": url})
        assert op["state"] == "succeeded", dump(op)
        return op["result"]

    async def snapshot(self, **extra: Any) -> dict[str, Any]:
        return await self.mcp.ok("lomi_browser_snapshot", dict(extra, panelId=self.panel))

    async def close(self) -> dict[str, Any]:
        op = await self.op("lomi_browser_close", {
            "workspaceId": self.ws, "panelId": self.panel, "expectedRevision": await self.revision(),
        })
        assert op["state"] == "succeeded", dump(op)
        return op


def ref(snapshot: dict[str, Any], needle: str) -> str:
    for line in snapshot["text"].splitlines():
        if needle in line:
            found = re.search(r"\[((?:f\d+)?e\d+)\]", line)
            assert found, line
            return found.group(1)
    raise AssertionError(f"no {needle!r} in\n{snapshot['text']}")


async def agent_for(lomi, workspaces, mcp_session) -> Agent:
    a, _ = workspaces
    epoch = (await mcp_session.connect(a["workspaceId"]))["retryEpoch"]
    return Agent(mcp_session, a["workspaceId"], epoch)


# ---- tests ----


async def test_form_navigate_snapshot_type_select_click_read_back(lomi, workspaces, mcp, site, tmp_path):
    a, _ = workspaces
    (tmp_path / "project-a" / "notes.txt").write_text("attached\n")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        created = await agent.create()
        assert created["browserGeneration"] and created["tabId"], dump(created)
        panels = await session.ok("lomi_panel_list", {"workspaceId": agent.ws})
        assert [(p["kind"], p["generation"]) for p in panels["panels"]] == [("browser", agent.generation)]

        nav = await agent.navigate(site.url("/form"))
        assert nav["status"] == 200 and nav["url"] == site.url("/form") and nav["reached"] == "load", dump(nav)
        snap = await agent.snapshot()
        assert snap["navigationId"] == nav["navigationId"], dump(snap)
        assert 'heading "Order"' in snap["text"] and snap["title"] == "Form", snap["text"]
        # The text block is the tree itself, under one header line.
        envelope = await session.call("lomi_browser_snapshot", {"panelId": agent.panel})
        text = envelope.raw.content[0].text
        assert text.startswith(f"snapshotId={envelope['data']['snapshotId']} ") and 'button "Submit"' in text, text

        sid = snap["snapshotId"]
        typed = await agent.act("lomi_browser_type", {"snapshotId": sid, "elementRef": ref(snap, 'textbox "Name"'), "text": "Ada"})
        assert typed["state"] == "succeeded" and typed["result"]["observed"]["value"] == "Ada", dump(typed)
        chosen = await agent.act("lomi_browser_select", {"snapshotId": sid, "elementRef": ref(snap, 'combobox "Size"'), "values": ["Large"]})
        assert chosen["state"] == "succeeded" and chosen["result"]["observed"]["selected"] == ["l"], dump(chosen)
        upload = await agent.act("lomi_browser_upload", {"snapshotId": sid, "elementRef": ref(snap, 'button "Attachment"'), "paths": ["notes.txt"]})
        assert upload["state"] == "succeeded" and upload["result"]["observed"]["files"] == ["notes.txt"], dump(upload)
        clicked = await agent.act("lomi_browser_click", {"snapshotId": sid, "elementRef": ref(snap, 'button "Submit"')})
        assert clicked["state"] == "succeeded" and clicked["effectState"] == "complete", dump(clicked)
        assert clicked["result"]["observed"]["event"] == "click", dump(clicked)
        after = await agent.snapshot(find="Sent")
        assert 'Sent Ada l files=notes.txt' in after["text"], after["text"]
        # The diff against the first snapshot shows what changed, not the whole page.
        diff = await agent.snapshot(sinceSnapshotId=sid)
        assert "+ " in diff["text"] and "Sent Ada" in diff["text"] and 'heading "Order"' not in diff["text"], diff["text"]

        # A press of Enter in the field is confirmed too.
        pressed = await agent.act("lomi_browser_press", {"snapshotId": sid, "elementRef": ref(snap, 'textbox "Name"'), "key": "Enter"})
        assert pressed["state"] == "succeeded" and pressed["result"]["observed"]["event"] == "keydown", dump(pressed)
        hovered = await agent.act("lomi_browser_hover", {"snapshotId": sid, "elementRef": ref(snap, 'button "Ask"')})
        assert hovered["state"] == "succeeded", dump(hovered)
        scrolled = await agent.act("lomi_browser_scroll", {"deltaY": 200})
        assert scrolled["state"] == "succeeded" and scrolled["result"]["observed"]["event"] == "wheel", dump(scrolled)

        await agent.close()
        await wait_gone(agent.pid)
        panels = await session.ok("lomi_panel_list", {"workspaceId": agent.ws})
        assert panels["panels"] == [], dump(panels)


async def test_iframes_and_rerendering_pages_refuse_stale_refs(lomi, workspaces, mcp, site):
    other = Site({"/inner": INNER})
    try:
        site.pages["/frames"] = (
            '<!doctype html><h1>Frames</h1>'
            '<iframe title="Same origin" src="/inner" width="320" height="60"></iframe>'
            f'<iframe title="Other origin" src="{other.url("/inner", host="localhost")}" width="320" height="60"></iframe>'
        )
        a, _ = workspaces
        token = lomi.create_token(a["workspaceId"])["token"]
        async with mcp.session(token=token) as session:
            agent = await agent_for(lomi, workspaces, session)
            await agent.create()
            await agent.navigate(site.url("/frames"))
            snap = await agent.snapshot()
            assert len(snap["frames"]) == 3, dump(snap)
            assert 'iframe "Same origin"' in snap["text"] and 'iframe "Other origin"' in snap["text"], snap["text"]
            refs = re.findall(r'button "Frame button" \[(f\d+e\d+)\]', snap["text"])
            assert len(refs) == 2, snap["text"]
            for element in refs:
                op = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": element})
                assert op["state"] == "succeeded", dump(op)
            after = await agent.snapshot()
            assert f"clicked in 127.0.0.1:{site.port}" in after["text"], after["text"]
            assert f"clicked in localhost:{other.port}" in after["text"], after["text"]

            await agent.navigate(site.url("/rerender"))
            snap = await agent.snapshot()
            button = ref(snap, 'button "Press me"')
            first = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": button})
            assert first["state"] == "succeeded", dump(first)
            # The button was replaced by an identical one: the old ref is refused, nothing is clicked.
            again = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": button})
            assert again["state"] == "failed" and again["effectState"] == "none", dump(again)
            assert again["error"]["code"] == "SNAPSHOT_STALE", dump(again)
            assert "presses: 1" in (await agent.snapshot())["text"]
            # After a navigation every ref of the old document is stale.
            fresh = await agent.snapshot()
            await agent.navigate(site.url("/form"))
            stale = await agent.act("lomi_browser_click", {"snapshotId": fresh["snapshotId"], "elementRef": ref(fresh, 'button "Press me"')})
            assert stale["state"] == "failed" and stale["error"]["code"] == "SNAPSHOT_STALE", dump(stale)
            await agent.close()
    finally:
        other.close()


async def test_dialog_tabs_console_and_network(lomi, workspaces, mcp, site):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        await agent.navigate(site.url("/form"))
        snap = await agent.snapshot()
        ask = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": ref(snap, 'button "Ask"')})
        assert ask["state"] == "succeeded", dump(ask)
        waiting = await agent.snapshot()
        assert waiting["dialog"] == {"kind": "confirm", "message": "Really?", "defaultPrompt": ""} or (
            waiting["dialog"]["kind"] == "confirm" and waiting["dialog"]["message"] == "Really?"
        ), dump(waiting)
        # While the dialog is open, actions are refused with what to do.
        blocked = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": ref(snap, 'button "Submit"')})
        assert blocked["state"] == "failed" and "lomi_browser_dialog" in blocked["error"]["message"], dump(blocked)
        answered = await agent.act("lomi_browser_dialog", {"action": "accept"})
        assert answered["state"] == "succeeded", dump(answered)
        assert "confirmed" in (await agent.snapshot(find="confirmed"))["text"]

        snap = await agent.snapshot()
        logged = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": ref(snap, 'button "Log"')})
        assert logged["state"] == "succeeded", dump(logged)
        deadline = time.monotonic() + WAIT_DEADLINE
        while True:
            console = await session.ok("lomi_browser_console", {"panelId": agent.panel})
            network = await session.ok("lomi_browser_network", {"panelId": agent.panel})
            pings = [e for e in network["entries"] if "/ping?x=1" in e["url"] and e["status"] == 200]
            if any(e["text"] == "hello from the page 42" for e in console["entries"]) and pings:
                break
            assert time.monotonic() < deadline, dump({"console": console, "network": network})
            await anyio.sleep(0.05)
        assert any(e["url"] == site.url("/form") and e["resourceType"] == "Document" and e["status"] == 200 for e in network["entries"]), dump(network)
        # Paging: after the last cursor nothing is repeated.
        rest = await session.ok("lomi_browser_console", {"panelId": agent.panel, "sinceCursor": console["nextCursor"]})
        assert rest["entries"] == [], dump(rest)
        one = await session.ok("lomi_browser_network", {"panelId": agent.panel, "limit": 1})
        assert len(one["entries"]) == 1, dump(one)

        first_tab = (await session.ok("lomi_browser_tab_list", {"panelId": agent.panel}))["tabs"][0]["tabId"]
        opened = await agent.act("lomi_browser_tab_open", {"url": site.url("/rerender")})
        assert opened["state"] == "succeeded" and len(opened["result"]["tabs"]) == 2, dump(opened)
        second = opened["result"]["tabId"]
        tabs = await session.ok("lomi_browser_tab_list", {"panelId": agent.panel})
        assert [t["active"] for t in tabs["tabs"]] == [False, True], dump(tabs)
        assert 'button "Press me"' in (await agent.snapshot())["text"]
        switched = await agent.act("lomi_browser_tab_switch", {"tabId": first_tab})
        assert switched["state"] == "succeeded", dump(switched)
        assert 'heading "Order"' in (await agent.snapshot())["text"]
        closed = await agent.act("lomi_browser_tab_close", {"tabId": second})
        assert closed["state"] == "succeeded" and len(closed["result"]["tabs"]) == 1, dump(closed)
        last = await agent.act("lomi_browser_tab_close", {"tabId": first_tab})
        assert last["state"] == "failed" and last["error"]["code"] == "INVALID_ARGUMENT", dump(last)

        # evaluate waits for the person by default.
        started = await session.ok("lomi_browser_evaluate", {
            "panelId": agent.panel, "browserGeneration": agent.generation, "expression": "1 + 2",
            "retryEpoch": agent.epoch, "requestKey": "eval-1",
        })
        assert started["state"] == "awaiting_user", dump(started)
        await lomi.acli("decide", started["operationId"], "approve")
        done = await session.settle(started["operationId"])
        assert done["state"] == "succeeded" and done["result"]["value"] == 3, dump(done)
        await agent.close()


async def tabs_until(session, panel: str, count: int, url_part: str) -> list[dict[str, Any]]:
    """The tab list once it has `count` tabs and the newest shows `url_part` (a popup is
    announced by Chromium a moment after the click that opened it)."""
    deadline = time.monotonic() + WAIT_DEADLINE
    while True:
        tabs = (await session.ok("lomi_browser_tab_list", {"panelId": panel}))["tabs"]
        if len(tabs) == count and url_part in tabs[-1]["url"]:
            return tabs
        assert time.monotonic() < deadline, dump(tabs)
        await anyio.sleep(0.05)


async def test_popups_become_tabs_of_their_panel(lomi, workspaces, mcp, site):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        await agent.navigate(site.url("/opener"))
        snap = await agent.snapshot()
        clicked = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": ref(snap, 'button "Open popup"')})
        assert clicked["state"] == "succeeded", dump(clicked)
        tabs = await tabs_until(session, agent.panel, 2, "/popup")
        opener, popup = tabs[0]["tabId"], tabs[1]["tabId"]
        # Listed with its opener, not made active: the agent's snapshot still names its tab.
        assert [t["active"] for t in tabs] == [True, False], dump(tabs)
        assert tabs[0]["openerTabId"] is None and tabs[1]["openerTabId"] == opener, dump(tabs)
        assert tabs[1]["url"] == site.url("/popup"), dump(tabs)
        assert 'heading "Opener page"' in (await agent.snapshot())["text"]

        switched = await agent.act("lomi_browser_tab_switch", {"tabId": popup})
        assert switched["state"] == "succeeded", dump(switched)
        shown = await agent.snapshot()
        assert shown["tabId"] == popup and 'heading "Popup page"' in shown["text"], dump(shown)
        # Its console and network are logged like any tab's.
        said = await agent.act("lomi_browser_click", {"snapshotId": shown["snapshotId"], "elementRef": ref(shown, 'button "Say hi"')})
        assert said["state"] == "succeeded" and said["result"]["tabId"] == popup, dump(said)
        deadline = time.monotonic() + WAIT_DEADLINE
        while True:
            console = await session.ok("lomi_browser_console", {"panelId": agent.panel})
            network = await session.ok("lomi_browser_network", {"panelId": agent.panel})
            said_hi = [e for e in console["entries"] if e["text"] == "popup says hi" and e["tabId"] == popup]
            pinged = [e for e in network["entries"] if "/ping?from=popup" in e["url"] and e["tabId"] == popup and e["status"] == 200]
            if said_hi and pinged:
                break
            assert time.monotonic() < deadline, dump({"console": console, "network": network})
            await anyio.sleep(0.05)

        closed = await agent.act("lomi_browser_tab_close", {"tabId": popup})
        assert closed["state"] == "succeeded", dump(closed)
        assert [(t["tabId"], t["active"]) for t in closed["result"]["tabs"]] == [(opener, True)], dump(closed)
        assert 'heading "Opener page"' in (await agent.snapshot())["text"]

        # A target=_blank link (no opener for the page) is adopted too, and a popup that
        # closes itself leaves the list.
        snap = await agent.snapshot()
        followed = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": ref(snap, 'link "Open link"')})
        assert followed["state"] == "succeeded", dump(followed)
        tabs = await tabs_until(session, agent.panel, 2, "/popup?via=link")
        assert tabs[1]["openerTabId"] == opener and not tabs[1]["active"], dump(tabs)
        switched = await agent.act("lomi_browser_tab_switch", {"tabId": tabs[1]["tabId"]})
        assert switched["state"] == "succeeded", dump(switched)
        shown = await agent.snapshot()
        bye = await agent.act("lomi_browser_click", {"snapshotId": shown["snapshotId"], "elementRef": ref(shown, 'button "Close me"')})
        assert bye["state"] in ("succeeded", "outcome_unknown"), dump(bye)
        deadline = time.monotonic() + WAIT_DEADLINE
        while True:
            tabs = (await session.ok("lomi_browser_tab_list", {"panelId": agent.panel}))["tabs"]
            if [(t["tabId"], t["active"]) for t in tabs] == [(opener, True)]:
                break
            assert time.monotonic() < deadline, dump(tabs)
            await anyio.sleep(0.05)
        assert 'heading "Opener page"' in (await agent.snapshot())["text"]
        await agent.close()


async def kept_state(agent: Agent, site: Site) -> str:
    """What the keeper page finds in the browser's storage: `stored=… cookie=…`."""
    await agent.navigate(site.url("/keeper"))
    found = re.search(r"stored=\w+ cookie=[\w=]+", (await agent.snapshot(find="stored="))["text"])
    assert found, dump(await agent.snapshot())
    return found.group(0)


@pytest.mark.long
async def test_a_persistent_profile_is_the_persons_choice_and_one_browser_at_a_time(lomi, workspaces, mcp, site):
    a, _ = workspaces
    ws = a["workspaceId"]
    fresh = lomi.cli("browser", "profile", ws)
    assert fresh["persistent"] is False and fresh["exists"] is False, dump(fresh)
    chosen = lomi.cli("browser", "profile", ws, "--persistent")
    assert chosen["persistent"] is True and chosen["path"].endswith(f"/browser-profiles/{ws}"), dump(chosen)
    profile = Path(chosen["path"])
    token = lomi.create_token(ws)["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        assert await kept_state(agent, site) == "stored=none cookie=none"
        snap = await agent.snapshot()
        kept = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": ref(snap, 'button "Remember"')})
        assert kept["state"] == "succeeded", dump(kept)
        assert "stored=yes cookie=kept=yes" in (await agent.snapshot(find="stored="))["text"]
        assert profile.is_dir()

        # A second browser on the same profile is refused, saying which panel holds it and what to do.
        second = await agent.op("lomi_browser_create", {"workspaceId": ws, "title": "Second", "expectedRevision": await agent.revision()})
        assert second["state"] == "failed" and second["effectState"] == "none", dump(second)
        assert second["error"]["code"] == "RESOURCE_BUSY", dump(second)
        assert agent.panel in second["error"]["message"] and "lomi_browser_close" in second["error"]["message"], dump(second)
        assert second["result"]["details"]["panelId"] == agent.panel, dump(second)
        # Nor can the person delete the folder under a running browser.
        refused = lomi.cli_fails("browser", "profile", ws, "--fresh", "--delete")
        assert "RESOURCE_BUSY" in refused and "close" in refused, refused
        assert lomi.cli("browser", "profile", ws)["persistent"] is True

        # Closed and created again (the start also sweeps abandoned temp profiles): still there.
        await agent.close()
        await agent.create()
        assert await kept_state(agent, site) == "stored=yes cookie=kept=yes"
        await agent.close()

        # Turned off: a fresh profile each time, and browsers side by side again; the folder stays.
        off = lomi.cli("browser", "profile", ws, "--fresh")
        assert off["persistent"] is False and off["exists"] is True and off["deleted"] is False, dump(off)
        await agent.create()
        assert await kept_state(agent, site) == "stored=none cookie=none"
        other = Agent(session, ws, agent.epoch)
        other.keys = 1000
        await other.create()
        await other.close()
        await agent.close()
    deleted = lomi.cli("browser", "profile", ws, "--fresh", "--delete")
    assert deleted["deleted"] is True and not profile.exists(), dump(deleted)


async def test_captures_are_pngs_of_the_size_asked_for(lomi, workspaces, mcp, site, tmp_path):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        await agent.navigate(site.url("/capture"))

        async def capture(**args: Any) -> tuple[dict[str, Any], bytes]:
            envelope = await session.call("lomi_browser_capture", dict(args, panelId=agent.panel))
            assert envelope["status"] == "ok", dump(envelope)
            png = image_block(envelope)
            data = envelope["data"]
            assert data["bytes"] == len(png) and data["sha256"] == hashlib.sha256(png).hexdigest(), dump(data)
            assert png_size(png) == (data["width"], data["height"]), dump(data)
            return data, png

        viewport, _ = await capture()
        assert (viewport["width"], viewport["height"]) == (1280, 720), dump(viewport)
        scaled, _ = await capture(scale=0.5)
        assert (scaled["width"], scaled["height"]) == (640, 360), dump(scaled)
        snap = await agent.snapshot()
        element, _ = await capture(snapshotId=snap["snapshotId"], elementRef=ref(snap, 'img "Green box"'))
        assert (element["width"], element["height"]) == (240, 90), dump(element)
        clip, _ = await capture(clip={"x": 0, "y": 0, "width": 100, "height": 50})
        assert (clip["width"], clip["height"]) == (100, 50), dump(clip)
        clip2, _ = await capture(clip={"x": 0, "y": 0, "width": 100, "height": 50}, scale=0.5)
        assert (clip2["width"], clip2["height"]) == (50, 25), dump(clip2)
        # A page taller than two screens: its top two at full width, and how tall it is.
        full, _ = await capture(fullPage=True)
        assert (full["width"], full["height"], full["areaHeight"]) == (1280, 1440, 2000), dump(full)
        # Over maxBytes: fewer rows, never a smaller scale.
        small, _ = await capture(maxBytes=2048)
        assert small["bytes"] <= 2048 and small["width"] == 1280 and small["height"] < 720, dump(small)
        assert small["scale"] == 1 and small["areaHeight"] == 720, dump(small)

        # Saved into the project, as an operation of its own.
        saved, png = await capture(save={"path": "shots/page.png", "retryEpoch": agent.epoch, "requestKey": "save-1"})
        assert saved["saved"]["state"] == "failed", dump(saved)  # the directory does not exist yet
        (tmp_path / "project-a" / "shots").mkdir()
        saved, png = await capture(save={"path": "shots/page.png", "retryEpoch": agent.epoch, "requestKey": "save-2"})
        assert saved["saved"]["state"] == "succeeded", dump(saved)
        assert (tmp_path / "project-a" / "shots" / "page.png").read_bytes() == png
        outside = await session.call("lomi_browser_capture", {
            "panelId": agent.panel, "save": {"path": "../escape.png", "retryEpoch": agent.epoch, "requestKey": "save-3"},
        })
        assert outside["status"] == "ok" and outside["data"]["saved"]["state"] == "failed", dump(outside)
        assert not (tmp_path / "escape.png").exists()
        await agent.close()


async def test_bad_input_is_refused(lomi, workspaces, mcp, site, tmp_path):
    a, _ = workspaces
    (tmp_path / "project-a" / "page.html").write_text("<h1>Inside the project</h1>")
    (tmp_path / "secret.txt").write_text("outside\n")
    (tmp_path / "project-a" / "link.txt").symlink_to(tmp_path / "secret.txt")
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        common = {"panelId": agent.panel, "browserGeneration": agent.generation, "retryEpoch": agent.epoch}

        async def refused(tool: str, args: dict[str, Any], code: str = "INVALID_ARGUMENT") -> None:
            await session.error(tool, dict(common, requestKey=agent.key(), **args), code)

        for url in ["chrome://settings", "file:///etc/passwd", f"file://{tmp_path}/secret.txt",
                    "javascript:alert(1)", "chrome-extension://x/y", "view-source:http://127.0.0.1/"]:
            await refused("lomi_browser_navigate", {"url": url})
        inside = await agent.navigate(f"file://{tmp_path}/project-a/page.html")
        assert inside["url"].startswith("file://"), dump(inside)
        assert "Inside the project" in (await agent.snapshot())["text"]

        await agent.navigate(site.url("/form"))
        snap = await agent.snapshot()
        file_input = ref(snap, 'button "Attachment"')
        for path in ["../secret.txt", "/etc/passwd", "link.txt", "missing.txt"]:
            await refused("lomi_browser_upload", {"snapshotId": snap["snapshotId"], "elementRef": file_input, "paths": [path]})
        unknown = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": "e424242"})
        assert unknown["state"] == "failed" and unknown["error"]["code"] == "INVALID_ARGUMENT", dump(unknown)
        never = await agent.act("lomi_browser_click", {"snapshotId": "s999", "elementRef": "e1"})
        assert never["state"] == "failed" and never["error"]["code"] == "SNAPSHOT_STALE", dump(never)
        await refused("lomi_browser_click", {"elementRef": "e1"})
        await refused("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": "e1", "x": 1, "y": 2})
        await refused("lomi_browser_click", {"x": 1, "y": 2, "surprise": True})
        await session.error("lomi_browser_snapshot", {"panelId": agent.panel, "maxBytes": 50_000_000}, "INVALID_ARGUMENT")
        await session.error("lomi_browser_snapshot", {"panelId": agent.panel, "maxBytes": 500}, "INVALID_ARGUMENT")
        await session.error("lomi_browser_capture", {"panelId": agent.panel, "maxBytes": 1 << 30}, "INVALID_ARGUMENT")
        await session.error("lomi_browser_capture", {"panelId": agent.panel, "scale": 3}, "INVALID_ARGUMENT")
        await session.error("lomi_browser_capture", {"panelId": agent.panel, "fullPage": True, "clip": {"x": 0, "y": 0, "width": 5, "height": 5}}, "INVALID_ARGUMENT")
        await refused("lomi_browser_navigate", {"url": site.url("/form"), "browserGeneration": "bg_0000"}, "GENERATION_MISMATCH")
        # A small snapshot stays within its bound and says it was cut.
        bounded = await session.call("lomi_browser_snapshot", {"panelId": agent.panel, "maxBytes": 1024})
        assert bounded["data"]["truncated"], dump(bounded)
        assert len(bounded.raw.content[0].text.encode()) <= 1024, bounded.raw.content[0].text
        await agent.close()


async def test_killed_browser_settles_honestly_and_a_new_one_gets_a_new_generation(lomi, workspaces, mcp, site):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        first_generation, pid = agent.generation, agent.pid
        # A navigation the server never answers is in flight when Chromium is killed.
        started = await session.ok("lomi_browser_navigate", {
            "panelId": agent.panel, "browserGeneration": agent.generation, "url": site.url("/hang"),
            "retryEpoch": agent.epoch, "requestKey": "nav-hang",
        })
        assert started["state"] == "running", dump(started)
        os.kill(pid, signal.SIGKILL)
        op = await session.settle(started["operationId"])
        assert op["state"] == "outcome_unknown" and op["effectState"] == "unknown", dump(op)
        await wait_gone(pid)
        deadline = time.monotonic() + WAIT_DEADLINE
        while (await session.ok("lomi_panel_list", {"workspaceId": agent.ws}))["panels"][0]["generation"] is not None:
            assert time.monotonic() < deadline, "the crash clears the panel's generation"
            await anyio.sleep(0.05)
        await session.error("lomi_browser_navigate", {
            "panelId": agent.panel, "browserGeneration": first_generation, "url": site.url("/form"),
            "retryEpoch": agent.epoch, "requestKey": "nav-after",
        }, "GENERATION_MISMATCH")
        await agent.create()
        assert agent.generation != first_generation and agent.pid != pid
        await agent.navigate(site.url("/form"))
        await agent.close()


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
async def test_no_chromium_outlives_the_broker(lomi, workspaces, mcp, how):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        assert group_alive(agent.pid), "Chromium runs"
    if how == "SIGTERM":
        assert lomi.stop() == 0
    else:
        lomi.kill()
    await wait_gone(agent.pid)


async def test_a_snapshot_of_a_page_still_loading_says_so(lomi, workspaces, mcp, site):
    """A snapshot taken while the page's document is still arriving (as right after a click
    that navigated) says `loading`, in structuredContent and in the text an agent reads, so an
    empty or partial tree is not mistaken for the page."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        op = await agent.act("lomi_browser_navigate", {"url": site.url("/partial"), "waitUntil": "commit"})
        assert op["state"] == "succeeded", dump(op)
        deadline = time.monotonic() + WAIT_DEADLINE
        while "Arrived so far" not in (early := await agent.snapshot())["text"]:
            assert time.monotonic() < deadline, dump(early)
            await anyio.sleep(0.05)
        assert early["loading"] is True, dump(early)
        raw = await session.call("lomi_browser_snapshot", {"panelId": agent.panel})
        header = raw.raw.content[0].text.split("\n- ", 1)[0]
        assert "loading: the page is still loading" in header and "lomi_browser_wait" in header, header
        site.finish.set()
        while (done := await agent.snapshot())["loading"]:
            assert time.monotonic() < deadline, dump(done)
            await anyio.sleep(0.05)
        assert "The rest" in done["text"] and "loading:" not in done["text"], dump(done)
        await agent.close()

