"""Screenshot capture workflows through the MCP Python SDK against a real `lomi serve` and
Debian's Chromium: deterministic captures of a page that moves (a CSS animation, a blinking
caret, a late web font) are the same bytes twice; capture sets of real pages (Python's HTML
documentation as Debian ships it) write PNGs and a manifest into the project in one operation,
with progress, retries that write nothing new and a cancel that leaves a manifest of exactly
what was written; a changed word shows as a small changed ratio and a diff over that word; an
Android capture set against the device fixture."""

import hashlib
import http.server
import json
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import dump
from test_android import adb, adb_server_for_serve, attached_phone, phones  # noqa: F401
from test_browser import Agent, agent_for, wait_gone
from test_browser_real import Docs

pytestmark = pytest.mark.anyio

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf")

# A page that never holds still on its own: a spinning, colour-changing box, a focused input
# with a blinking caret, and a heading in a web font that arrives 400 ms after it is asked for.
MOVING = """<!doctype html><html><head><title>Moving</title><style>
@font-face { font-family: Late; src: url(/late.ttf); font-display: swap; }
h1 { font-family: Late, monospace; font-size: 40px; }
@keyframes spin { from { transform: rotate(0deg); background: #c33; } to { transform: rotate(360deg); background: #33c; } }
.box { width: 120px; height: 120px; animation: spin 1.3s linear infinite; margin: 20px; }
input { font-size: 24px; transition: background 3s; }
body { height: 3000px; }
</style></head><body>
<h1>Steady as she goes</h1><div class="box"></div>
<input id="field" autofocus value="caret here">
<script>document.getElementById('field').focus(); document.body.style.background = '#fefefe';</script>
</body></html>"""

WORDS = """<!doctype html><html><head><title>Words</title><style>
body { font: 20px monospace; margin: 30px; background: #fff; color: #111; }
</style></head><body>
<p>The quick brown fox jumps over the lazy dog.</p>
<p>The <span id="word">{word}</span> sat on the mat, and nothing else here changes.</p>
<p>Another line that stays the same.</p></body></html>"""


class Pages:
    """Pages on 127.0.0.1:<port> whose content a test may change; `/late.ttf` is a real font
    answered after a delay."""

    def __init__(self) -> None:
        self.word = "cat"
        pages = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?", 1)[0]
                if path == "/late.ttf":
                    time.sleep(0.4)
                    body, kind = FONT.read_bytes(), "font/ttf"
                elif path == "/moving":
                    body, kind = MOVING.encode(), "text/html; charset=utf-8"
                elif path == "/words":
                    body, kind = WORDS.replace("{word}", pages.word).encode(), "text/html; charset=utf-8"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pages():
    if not FONT.exists():
        pytest.fail(f"{FONT} is missing: install Debian's fonts-dejavu-core (Chromium depends on it)")
    p = Pages()
    yield p
    p.close()


@pytest.fixture
def docs():
    d = Docs()
    yield d
    d.close()


def rgba(png: bytes) -> tuple[int, int, list[bytes]]:
    """Decodes an 8-bit RGBA PNG (what Lomi's diff images are) into rows of pixels."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), png[:16]
    at, idat, header = 8, b"", b""
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        body = png[at + 8:at + 8 + length]
        assert zlib.crc32(kind + body) == struct.unpack(">I", png[at + 8 + length:at + 12 + length])[0]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert (depth, colour) == (8, 6), f"not RGBA8: depth {depth}, colour type {colour}"
    raw, stride, rows, prior = zlib.decompress(idat), width * 4, [], bytearray(width * 4)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 4] if i >= 4 else 0
            b = prior[i]
            c = prior[i - 4] if i >= 4 else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prior = line
    return width, height, rows


def marked_box(png: bytes) -> tuple[int, int, int, int] | None:
    """The bounding box (left, top, right, bottom; exclusive) of a diff's non-transparent pixels."""
    width, height, rows = rgba(png)
    xs, ys = [], []
    for y, row in enumerate(rows):
        for x in range(width):
            if row[x * 4 + 3]:
                xs.append(x)
                ys.append(y)
    return (min(xs), min(ys), max(xs) + 1, max(ys) + 1) if xs else None


def files_in(folder: Path) -> dict[str, tuple[int, str]]:
    """Each file's modification time and SHA-256."""
    return {
        p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
    }


async def capture_set(agent: Agent, key: str, folder: str, targets: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """Starts a set; answers the operation as the call returned it (maybe still running)."""
    return await agent.mcp.ok("lomi_browser_capture_set", dict(
        extra, panelId=agent.panel, browserGeneration=agent.generation, folder=folder, targets=targets,
        retryEpoch=agent.epoch, requestKey=key,
    ))


def check_manifest(project: Path, result: dict[str, Any]) -> dict[str, Any]:
    """The manifest on disk is the result, and every SHA-256 in it is its file's."""
    manifest = json.loads((project / result["manifest"]).read_text())
    assert manifest == result, dump({"manifest": manifest, "result": result})
    for entry in manifest["captures"]:
        data = (project / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"], dump(entry)
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and struct.unpack(">II", data[16:24]) == (entry["width"], entry["height"])
    return manifest


# ---- deterministic captures ----


async def test_deterministic_captures_of_a_moving_page_are_identical(lomi, workspaces, mcp, pages, tmp_path):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()

        async def captured(**options: Any) -> str:
            # Each capture starts from a fresh load: the font still on its way, the animation
            # at a new phase, the caret in its blink.
            await agent.navigate(pages.url("/moving"))
            view = await session.ok("lomi_browser_capture", dict(options, panelId=agent.panel))
            return view["sha256"]

        steady = [await captured(deterministic=True) for _ in range(2)]
        assert steady[0] == steady[1], "two deterministic captures of the same page differ"
        loose = [await captured(deterministic=False) for _ in range(2)]
        print(f"without deterministic: the two captures {'differ' if loose[0] != loose[1] else 'happen to match'}")
        assert steady[0] not in loose, "the page was captured as still without being held still"

        # The workspace default: settings browser.deterministicCaptures.
        browser = (await session.ok("lomi_settings_get", {"section": "browser"}))["browser"]
        op = await agent.op("lomi_settings_update", {
            "section": "browser", "expectedSettingsRevision": browser["settingsRevision"],
            "values": {"deterministicCaptures": True},
        })
        assert op["state"] == "succeeded", dump(op)
        by_default = [await captured() for _ in range(2)]
        assert by_default == steady, "the settings default did not make captures deterministic"

        # A set with the same option writes the same bytes again.
        await agent.navigate(pages.url("/moving"))
        project = tmp_path / "project-a"
        (project / "shots").mkdir()
        # Two targets are taken at once, in two tabs: the same bytes in both.
        started = await capture_set(agent, "moving-set", "shots", [
            {"name": "moving", "url": pages.url("/moving")}, {"name": "moving-again", "url": pages.url("/moving")},
        ])
        done = await session.settle(started["operationId"])
        assert done["state"] == "succeeded", dump(done)
        assert done["result"]["deterministic"] is True, dump(done)
        assert [c["sha256"] for c in done["result"]["captures"]] == [steady[0]] * 2, dump(done)
        # The set's extra tab is gone again.
        tabs = await session.ok("lomi_browser_tab_list", {"panelId": agent.panel})
        assert len(tabs["tabs"]) == 1, dump(tabs)
        await agent.close()
        await wait_gone(agent.pid)


# ---- capture sets of real pages ----

DOC_PAGES = ["library/os.path.html", "library/json.html", "library/glob.html", "tutorial/index.html", "library/string.html"]
VIEWPORTS = [{"width": 1280, "height": 800}, {"width": 390, "height": 844}]


def doc_targets(docs: Docs, pages: list[str]) -> list[dict[str, Any]]:
    return [
        {"name": f"{page.replace('/', '-').removesuffix('.html')}-{v['width']}", "url": docs.url(page), "viewport": v}
        for page in pages for v in VIEWPORTS
    ]


async def test_a_set_of_real_pages_writes_pngs_and_a_manifest_retries_and_cancels(lomi, workspaces, mcp, docs, tmp_path):
    a, _ = workspaces
    project = tmp_path / "project-a"
    (project / "docs" / "shots").mkdir(parents=True)
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        targets = doc_targets(docs, DOC_PAGES)
        assert len(targets) == 10

        # Progress arrives as MCP progress notifications while the call waits.
        notes: list[tuple[float, float | None, str | None]] = []

        async def noted(progress: float, total: float | None, message: str | None) -> None:
            notes.append((progress, total, message))

        arguments = {
            "panelId": agent.panel, "browserGeneration": agent.generation, "folder": "docs/shots",
            "targets": targets, "retryEpoch": agent.epoch, "requestKey": "docs-set",
        }
        raw = await session.session.call_tool("lomi_browser_capture_set", arguments, progress_callback=noted)
        started = raw.structured_content["data"]
        running = await session.ok("lomi_operation_get", {"operationId": started["operationId"]})
        if running["state"] == "running":
            # While it runs, its result lists the captures so far.
            assert running["result"] is None or running["result"]["total"] == 10, dump(running)
        op = await session.settle(started["operationId"])
        assert op["state"] == "succeeded" and op["effectState"] == "complete", dump(op)
        result = op["result"]
        assert (result["done"], result["total"]) == (10, 10), dump(result)
        # The set shows itself begun at once (the first capture may take longer than the call
        # waits), then each capture as it is written, in order.
        assert notes, "no progress notification arrived"
        assert notes[0] == (0, 10, "capturing 10 targets"), notes
        assert all(total == 10 for _, total, _ in notes) and [p for p, _, _ in notes] == sorted(p for p, _, _ in notes), notes
        assert all(message == f"captured {targets[int(p) - 1]['name']}" for p, _, message in notes[1:]), notes
        manifest = check_manifest(project, result)
        shots = project / "docs" / "shots"
        assert sorted(p.name for p in shots.glob("*.png")) == sorted(f"{t['name']}.png" for t in targets)
        for entry, target in zip(manifest["captures"], targets):
            assert entry["name"] == target["name"] and entry["target"] == target["url"], dump(entry)
            assert entry["viewport"] == target["viewport"] and entry["written"] is True, dump(entry)
            assert (entry["width"], entry["height"]) == (target["viewport"]["width"], target["viewport"]["height"]), dump(entry)
            assert entry["comparison"] is None and entry["scale"] == 1, dump(entry)

        # A retry with the same key answers the same operation and writes nothing new.
        before = files_in(shots)
        again = await session.ok("lomi_browser_capture_set", arguments)
        assert again["operationId"] == started["operationId"] and again["state"] == "succeeded", dump(again)
        assert files_in(shots) == before

        # Changed arguments under that key: IDEMPOTENCY_CONFLICT, nothing written.
        await session.error("lomi_browser_capture_set", dict(arguments, targets=targets[:2]), "IDEMPOTENCY_CONFLICT")
        assert files_in(shots) == before

        # Refusals before anything runs.
        bad = [
            dict(arguments, requestKey="bad-1", targets=[]),
            dict(arguments, requestKey="bad-2", targets=[targets[0], targets[0]]),
            dict(arguments, requestKey="bad-3", targets=[dict(targets[0], name="../escape")]),
            dict(arguments, requestKey="bad-4", threshold=2),
            dict(arguments, requestKey="bad-5", targets=[dict(targets[0], url="ftp://example.com/")]),
            dict(arguments, requestKey="bad-6", targets=[dict(targets[0], viewport={"width": 5, "height": 5})]),
        ]
        for args in bad:
            await session.error("lomi_browser_capture_set", args, "INVALID_ARGUMENT")
        refused = await session.call("lomi_browser_capture_set", dict(arguments, requestKey="bad-7", folder="missing"))
        assert refused["status"] == "error" and refused["code"] == "INVALID_ARGUMENT" and "missing" in refused["message"], dump(refused)
        await session.error("lomi_browser_capture_set", dict(arguments, requestKey="bad-8", folder="../outside"), "INVALID_ARGUMENT")
        assert files_in(shots) == before

        # A cancel mid-set stops between captures: cancelled, effect partial, and the manifest
        # lists exactly the files written.
        (project / "docs" / "cancelled").mkdir()
        many = doc_targets(docs, DOC_PAGES + ["library/re.html", "library/pathlib.html", "library/functions.html"])
        big = await capture_set(agent, "cancel-me", "docs/cancelled", many)
        deadline = time.monotonic() + 60
        while True:
            seen = await session.ok("lomi_operation_get", {"operationId": big["operationId"]})
            if seen["result"] and seen["result"]["done"] >= 2 or seen["state"] != "running":
                break
            assert time.monotonic() < deadline, dump(seen)
            await anyio.sleep(0.02)
        assert seen["state"] == "running", f"the set ended before it could be cancelled: {dump(seen)}"
        await session.ok("lomi_operation_cancel", {"operationId": big["operationId"]})
        stopped = await session.settle(big["operationId"])
        assert stopped["state"] == "cancelled" and stopped["effectState"] == "partial", dump(stopped)
        partial = stopped["result"]
        assert 2 <= partial["done"] < len(many) and partial["total"] == len(many), dump(stopped)
        check_manifest(project, partial)
        written = sorted(p.name for p in (project / "docs" / "cancelled").glob("*.png"))
        assert written == sorted(f"{c['name']}.png" for c in partial["captures"]), (written, dump(partial))
        await agent.close()
        await wait_gone(agent.pid)


# ---- change detection ----


async def test_a_changed_word_is_a_small_change_with_a_diff_over_it_and_unchanged_pages_are_kept(
    lomi, workspaces, mcp, pages, tmp_path
):
    a, _ = workspaces
    project = tmp_path / "project-a"
    (project / "shots").mkdir()
    token = lomi.create_token(a["workspaceId"])["token"]
    assert lomi.run("confirm", "lomi_browser_evaluate", "--off").returncode == 0
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        targets = [{"name": "words", "url": pages.url("/words"), "viewport": {"width": 800, "height": 300}}]

        async def run(key: str, **extra: Any) -> dict[str, Any]:
            op = await session.settle((await capture_set(agent, key, "shots", targets, deterministic=True, **extra))["operationId"])
            assert op["state"] == "succeeded", dump(op)
            check_manifest(project, op["result"])
            return op["result"]["captures"][0]

        first = await run("first")
        assert first["written"] and first["comparison"] is None, dump(first)
        original = (project / "shots" / "words.png").read_bytes()

        # The same page again: compared, nothing changed, the old file stays as it was.
        stamp = (project / "shots" / "words.png").stat().st_mtime_ns
        same = await run("same")
        assert same["written"] is False and same["path"] == "shots/words.png", dump(same)
        assert same["comparison"] == {"against": "shots/words.png", "changedPixels": 0, "changedRatio": 0, "diff": None}, dump(same)
        assert (project / "shots" / "words.png").stat().st_mtime_ns == stamp
        assert same["sha256"] == first["sha256"]

        # One word changed: a small ratio, the new file written, and a diff over that word.
        pages.word = "dog"
        changed = await run("changed")
        comparison = changed["comparison"]
        assert changed["written"] and comparison["diff"] == "shots/words.diff.png", dump(changed)
        assert 0 < comparison["changedRatio"] < 0.01 and comparison["changedPixels"] > 0, dump(changed)
        assert (project / "shots" / "words.png").read_bytes() != original
        box = (await agent.act("lomi_browser_evaluate", {
            "expression": "(r => [r.left, r.top, r.right, r.bottom])(document.getElementById('word').getBoundingClientRect())",
        }))["result"]["value"]
        marked = marked_box((project / "shots" / "words.diff.png").read_bytes())
        assert marked is not None
        left, top, right, bottom = box
        assert left - 1 <= marked[0] and top - 1 <= marked[1] and marked[2] <= right + 1 and marked[3] <= bottom + 1, (
            f"changed pixels {marked} spill outside the word's box {box}"
        )
        assert (marked[2] - marked[0]) >= (right - left) / 2, f"changed pixels {marked} cover little of the word {box}"

        # A threshold above the change keeps the old file; a baseline folder is compared instead.
        pages.word = "cow"
        kept = await run("threshold", threshold=0.05)
        assert kept["written"] is False and 0 < kept["comparison"]["changedRatio"] <= 0.05, dump(kept)
        (project / "baseline").mkdir()
        (project / "baseline" / "words.png").write_bytes(original)
        against = await run("baseline", baseline="baseline")
        assert against["comparison"]["against"] == "baseline/words.png" and against["written"], dump(against)
        assert 0 < against["comparison"]["changedRatio"] < 0.01, dump(against)
        await agent.close()
        await wait_gone(agent.pid)


# ---- Android ----


async def test_an_android_capture_set_against_the_device_fixture(lomi, workspaces, mcp, adb, phones, tmp_path):  # noqa: F811
    a, _ = workspaces
    project = tmp_path / "project-a"
    (project / "screens").mkdir()
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        screens = [
            {"name": "home", "settleMs": 0},
            {"name": "main", "component": "org.example.app/.MainActivity", "settleMs": 0},
            {"name": "link", "url": "example://settings/display", "settleMs": 0},
        ]
        args = {
            "panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
            "folder": "screens", "screens": screens, "retryEpoch": android.epoch, "requestKey": "screens-1",
        }
        op = await android.agent.settle((await android.agent.ok("lomi_android_capture_set", args))["operationId"])
        assert op["state"] == "succeeded" and op["effectState"] == "complete", dump(op)
        result = op["result"]
        check_manifest(project, result)
        assert [c["target"] for c in result["captures"]] == [
            "the screen shown", "org.example.app/.MainActivity", "example://settings/display",
        ], dump(result)
        assert all((c["width"], c["height"], c["written"]) == (360, 640, True) for c in result["captures"]), dump(result)
        phone.wait_for_service("'am' 'start' '-n' 'org.example.app/.MainActivity'")
        phone.wait_for_service("example://settings/display")

        # Again: the screens did not change, so every old file is kept.
        again = await android.agent.settle(
            (await android.agent.ok("lomi_android_capture_set", dict(args, requestKey="screens-2")))["operationId"]
        )
        assert again["state"] == "succeeded", dump(again)
        assert [(c["written"], c["comparison"]["changedPixels"]) for c in again["result"]["captures"]] == [(False, 0)] * 3

        # Without the lease's panel generation: refused, nothing recorded.
        await android.agent.error(
            "lomi_android_capture_set", dict(args, requestKey="screens-3", generation="stale"), "GENERATION_MISMATCH"
        )
        # A screen that names both a component and a URL: refused before anything runs.
        await android.agent.error("lomi_android_capture_set", dict(
            args, requestKey="screens-4", screens=[{"name": "both", "component": "a/.B", "url": "x://y"}],
        ), "INVALID_ARGUMENT")


# ---- the recipe in docs/ ----


@pytest.mark.long
async def test_the_docs_recipe_captures_a_local_site_and_reports_what_changed(lomi, workspaces, pages, tmp_path):
    a, _ = workspaces
    (tmp_path / "project-a" / "docs" / "screenshots").mkdir(parents=True)
    token = lomi.create_token(a["workspaceId"])["token"]
    recipe = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "capture_docs.py"

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(recipe), "--endpoint", lomi.url, "--token", token,
             "--site", pages.url(""), "--viewport", "800x300", "words", "moving"],
            capture_output=True, text=True, timeout=120,
        )

    first = await anyio.to_thread.run_sync(run)
    assert first.returncode == 1, (first.stdout, first.stderr)
    assert first.stdout.splitlines()[:2] == ["docs/screenshots/words.png: new", "docs/screenshots/moving.png: new"], (first.stdout, first.stderr)
    again = await anyio.to_thread.run_sync(run)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert all("unchanged" in line for line in again.stdout.splitlines()[:2]), again.stdout
    pages.word = "dog"
    changed = await anyio.to_thread.run_sync(run)
    assert changed.returncode == 1, (changed.stdout, changed.stderr)
    lines = changed.stdout.splitlines()
    assert lines[0].startswith("docs/screenshots/words.png: changed ") and "words.diff.png" in lines[0], changed.stdout
    assert "unchanged" in lines[1], changed.stdout
    print(first.stdout + again.stdout + changed.stdout)
