"""Answers on real pages stay within what a standard MCP client accepts, and say where the rest
is: the Python manual Debian ships (python3.11-doc) served on 127.0.0.1, read through the MCP
Python SDK with its default client (which drops a message over 1 MiB).

- The manual's whole index (genindex-all.html, 1.7 MB of HTML) snapshotted at the largest
  maxBytes: the answer fits, the tree is sent once (in structuredContent; the text block is its
  header), the note names the maxBytes asked for and the line to go on from, and following
  `nextFromLine` reads every line of the tree exactly once.
- A tall page captured whole (library/functions.html, about 32,000 CSS pixels): never scaled
  down. The answer shows its first two screens at the viewport's full width and says how tall
  the page is; a clip shows any other part; a save writes the whole page at full width into the
  project, and the answer names the file's path, size and SHA-256.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import dump
from test_browser import agent_for, image_block, png_size

pytestmark = pytest.mark.anyio

MANUAL = Path("/usr/share/doc/python3.11/html")
MAX_ANSWER_BYTES = 1_000_000
MAX_INLINE_IMAGE_BYTES = 700_000


@pytest.fixture
def manual():
    if not (MANUAL / "genindex-all.html").is_file():
        pytest.fail(f"{MANUAL} is missing: scripts/test installs python3.11-doc")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(MANUAL))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def wire_bytes(result: Any) -> int:
    return len(json.dumps(result.model_dump(by_alias=True, exclude_none=True, mode="json")).encode())


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


async def test_the_whole_index_of_a_real_manual_comes_in_pages_a_client_accepts(lomi, workspaces, mcp, manual):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        await agent.navigate(f"{manual}/genindex-all.html")

        envelope = await session.call("lomi_browser_snapshot", {"panelId": agent.panel, "maxBytes": 960_000})
        first = envelope["data"]
        raw = envelope.raw
        assert first["truncated"] is True and first["nextFromLine"] > 0, dump({k: v for k, v in first.items() if k != "text"})
        assert wire_bytes(raw) < MAX_ANSWER_BYTES, wire_bytes(raw)
        # Sent once: the text block is the header and where the tree is, not the tree again.
        shown = text_of(raw)
        assert len(shown) < 2048, shown[:3000]
        assert f"snapshotId={first['snapshotId']}" in shown and "structuredContent" in shown, shown
        assert f"not shown within maxBytes 960000; go on with fromLine {first['nextFromLine']}" in first["text"], first["text"][-400:]

        # Page on: every line of the tree once, in order, each answer within the limit.
        total = first["lines"]
        pages = [first]
        while pages[-1]["nextFromLine"] is not None:
            envelope = await session.call("lomi_browser_snapshot", {
                "panelId": agent.panel, "maxBytes": 960_000, "fromLine": pages[-1]["nextFromLine"],
            })
            assert wire_bytes(envelope.raw) < MAX_ANSWER_BYTES
            page = envelope["data"]
            assert page["lines"] == total, dump({k: v for k, v in page.items() if k != "text"})
            pages.append(page)
            assert len(pages) < 20, "the pages do not end"
        body = [
            line
            for page in pages
            for line in page["text"].splitlines()
            if not line.startswith("… ")
        ]
        assert len(body) == total, (len(body), total, len(pages))
        assert any("__abs__()" in line for line in body), "the index's entries are in the pages"

        # The default answer names the maxBytes it was given, not an internal figure.
        default = await agent.snapshot()
        assert "not shown within maxBytes 262144; go on with fromLine" in default["text"], default["text"][-300:]


@pytest.mark.long
async def test_a_tall_real_page_is_captured_readable_and_saved_whole(lomi, workspaces, mcp, manual, tmp_path):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        await agent.navigate(f"{manual}/library/functions.html")
        # The browser's viewport: 1280 x 720 CSS pixels at device scale 1 (the default).
        width, screen = 1280, 720

        # Sent in the answer: the top two screens at the viewport's full width, not shrunk.
        envelope = await session.call("lomi_browser_capture", {"panelId": agent.panel, "fullPage": True}, deadline=90)
        assert envelope["status"] == "ok", dump(envelope)
        view = envelope["data"]
        png = image_block(envelope)
        assert wire_bytes(envelope.raw) < MAX_ANSWER_BYTES
        assert view["inline"] is True and len(png) == view["bytes"] <= MAX_INLINE_IMAGE_BYTES, dump(view)
        assert hashlib.sha256(png).hexdigest() == view["sha256"], dump(view)
        assert png_size(png) == (view["width"], view["height"]) == (width, 2 * screen), dump(view)
        assert view["scale"] == 1, dump(view)
        page_height = view["areaHeight"]
        assert page_height > 16_384, dump(view)  # the whole page's height, for what comes next

        # Any other part of it, as a clip: the third and fourth screens, also at full width.
        envelope = await session.call("lomi_browser_capture", {
            "panelId": agent.panel, "clip": {"x": 0, "y": 2 * screen, "width": width, "height": 2 * screen},
        }, deadline=90)
        part = envelope["data"]
        assert png_size(image_block(envelope)) == (width, 2 * screen) and part["areaHeight"] is None, dump(part)

        # The whole page saved into the project, at full width; the answer shows its top and
        # names the file.
        (tmp_path / "project-a" / "shots").mkdir()
        save = {"path": "shots/functions.png", "retryEpoch": agent.epoch, "requestKey": "tall-1"}
        envelope = await session.call("lomi_browser_capture", {"panelId": agent.panel, "fullPage": True, "save": save}, deadline=90)
        assert envelope["status"] == "ok", dump(envelope)
        shown = envelope["data"]
        assert shown["saved"]["state"] == "succeeded", dump(shown)
        file = shown["saved"]["result"]
        assert file["path"] == "shots/functions.png", dump(file)
        written = (tmp_path / "project-a" / "shots" / "functions.png").read_bytes()
        assert hashlib.sha256(written).hexdigest() == file["sha256"] and len(written) == file["bytes"], dump(file)
        assert png_size(written) == (width, page_height), dump(shown)
        top = image_block(envelope)
        assert png_size(top) == (shown["width"], shown["height"]) == (width, 2 * screen), dump(shown)
        assert shown["areaHeight"] == page_height and len(top) <= MAX_INLINE_IMAGE_BYTES, dump(shown)
        assert wire_bytes(envelope.raw) < MAX_ANSWER_BYTES

        # A retry answers the same operation with the top of the file it saved.
        again = await session.call("lomi_browser_capture", {"panelId": agent.panel, "fullPage": True, "save": save}, deadline=90)
        assert again["data"]["saved"]["operationId"] == shown["saved"]["operationId"], dump(again)
        assert png_size(image_block(again))[0] == width, dump(again["data"])

        # Asking to be sent more than fits is refused with what to do instead, and so is a
        # file over the maxBytes given for it (never a smaller scale).
        refused = await session.error("lomi_browser_capture", {
            "panelId": agent.panel, "fullPage": True, "maxBytes": 2_000_000,
        }, "INVALID_ARGUMENT")
        assert "with save" in refused["message"], dump(refused)
        refused = await session.error("lomi_browser_capture", {
            "panelId": agent.panel, "fullPage": True, "maxBytes": 100_000,
            "save": dict(save, path="shots/small.png", requestKey="tall-2"),
        }, "INVALID_ARGUMENT")
        assert "over maxBytes 100000" in refused["message"], dump(refused)
        assert not (tmp_path / "project-a" / "shots" / "small.png").exists()
