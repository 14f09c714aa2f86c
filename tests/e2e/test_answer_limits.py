"""Answers on real pages stay within what a standard MCP client accepts, and say where the rest
is: the Python manual Debian ships (python3.11-doc) served on 127.0.0.1, read through the MCP
Python SDK with its default client (which drops a message over 1 MiB).

- The manual's whole index (genindex-all.html, 1.7 MB of HTML) snapshotted at the largest
  maxBytes: the answer fits, the tree is sent once (in structuredContent; the text block is its
  header), the note names the maxBytes asked for and the line to go on from, and following
  `nextFromLine` reads every line of the tree exactly once.
- A tall page captured whole: scaled to what Chromium captures at once, the scale in the result,
  the image within the inline limit; saved into the project at full size when it is too large
  to send, and then not sent.
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
async def test_a_tall_real_page_is_captured_whole_within_the_limits(lomi, workspaces, mcp, manual, tmp_path):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await agent_for(lomi, workspaces, session)
        await agent.create()
        await agent.navigate(f"{manual}/library/stdtypes.html")

        # Sent in the answer: scaled to fit what Chromium captures and what a client accepts.
        # Rendering this page whole takes Chromium seconds, many on a busy machine.
        envelope = await session.call("lomi_browser_capture", {"panelId": agent.panel, "fullPage": True}, deadline=90)
        assert envelope["status"] == "ok", dump(envelope)
        view = envelope["data"]
        png = image_block(envelope)
        assert wire_bytes(envelope.raw) < MAX_ANSWER_BYTES
        assert view["inline"] is True and len(png) == view["bytes"] <= MAX_INLINE_IMAGE_BYTES, dump(view)
        assert png_size(png) == (view["width"], view["height"]), dump(view)
        assert view["height"] > 5 * view["width"], dump(view)  # the whole page, not the viewport
        assert 0 < view["scale"] < 1, dump(view)
        # The page's own height at that scale.
        css_height = view["height"] / view["scale"]
        assert css_height > 16_384, dump(view)

        # Too large to send: saved at full size, and said so instead of sent.
        (tmp_path / "project-a" / "shots").mkdir()
        envelope = await session.call("lomi_browser_capture", {
            "panelId": agent.panel, "fullPage": True, "maxBytes": 16_777_216,
            "save": {"path": "shots/stdtypes.png", "retryEpoch": agent.epoch, "requestKey": "tall-1"},
        }, deadline=90)
        assert envelope["status"] == "ok", dump(envelope)
        saved = envelope["data"]
        assert saved["saved"]["state"] == "succeeded", dump(saved)
        written = (tmp_path / "project-a" / "shots" / "stdtypes.png").read_bytes()
        assert hashlib.sha256(written).hexdigest() == saved["sha256"] and len(written) == saved["bytes"], dump(saved)
        assert png_size(written) == (saved["width"], saved["height"])
        assert saved["bytes"] > MAX_INLINE_IMAGE_BYTES, dump(saved)
        assert saved["inline"] is False, dump(saved)
        assert not [c for c in envelope.raw.content if c.type == "image"], "a capture too large to send is not sent"
        assert wire_bytes(envelope.raw) < MAX_ANSWER_BYTES

        # Asking to be sent more than fits is refused with what to do instead.
        refused = await session.error("lomi_browser_capture", {
            "panelId": agent.panel, "fullPage": True, "maxBytes": 2_000_000,
        }, "INVALID_ARGUMENT")
        assert "with save" in refused["message"], dump(refused)
