"""The browser tools agents know from the peers (@playwright/mcp, chrome-devtools-mcp), each
checked by its effect in a real Chromium page served on 127.0.0.1: an item dragged and dropped
by HTML5 drag and drop, several fields filled at once and read back from the page, the viewport,
device scale and colour scheme the page sees (matchMedia), a page printed to a PDF in the
project, and a logged response's body read back bounded and saved whole."""

import hashlib
import json
from typing import Any

import pytest

from conftest import dump
from test_browser import Agent, Site, agent_for, ref

pytestmark = pytest.mark.anyio

BOARD = """<!doctype html><title>Board</title>
<style>.col{display:inline-block;width:200px;min-height:120px;margin:10px;border:1px solid #999;vertical-align:top}
.card{margin:8px;padding:8px;background:#dde}</style>
<div class="col" id="todo" role="region" aria-label="Todo">
  <div class="card" id="c1" draggable="true" role="listitem" aria-label="Write tests">Write tests</div>
</div>
<div class="col" id="done" role="region" aria-label="Done"></div>
<div id="log" role="status">no drop yet</div>
<script>
let dragged = null;
document.querySelectorAll('.card').forEach(c => c.addEventListener('dragstart', e => {
  dragged = c; e.dataTransfer.setData('text/plain', c.id);
}));
for (const col of document.querySelectorAll('.col')) {
  col.addEventListener('dragover', e => e.preventDefault());
  col.addEventListener('drop', e => {
    e.preventDefault();
    const id = e.dataTransfer.getData('text/plain');
    col.appendChild(document.getElementById(id));
    document.getElementById('log').textContent = 'dropped ' + id + ' in ' + col.id;
  });
}
</script>"""

SIGNUP = """<!doctype html><title>Signup</title>
<label for="name">Name</label><input id="name" value="old">
<label for="bio">Bio</label><textarea id="bio"></textarea>
<label for="news">Newsletter</label><input id="news" type="checkbox">
<label for="tos">Terms</label><input id="tos" type="checkbox" checked>
<label for="plan-a">Plan A</label><input id="plan-a" type="radio" name="plan" value="a" checked>
<label for="plan-b">Plan B</label><input id="plan-b" type="radio" name="plan" value="b">
<label for="size">Size</label>
<select id="size"><option value="s">Small</option><option value="l">Large</option></select>
<button id="go">Send</button>"""

MEDIA = """<!doctype html><title>Media</title>
<style>body{background:white} @media (prefers-color-scheme: dark){body{background:black}}</style>
<p>Media page</p>"""

REPORT = """<!doctype html><title>Report</title><h1>Quarterly report</h1>
<p>Numbers go here.</p>
<button onclick="fetch('/data.json').then(r => r.json()).then(d => document.getElementById('out').textContent = d.answer)">Load</button>
<div id="out" role="status">not loaded</div>"""

DATA = json.dumps({"answer": 42, "items": [f"item-{n}" for n in range(2000)]})


@pytest.fixture
def site():
    s = Site({"/board": BOARD, "/signup": SIGNUP, "/media": MEDIA, "/report": REPORT, "/data.json": DATA})
    yield s
    s.close()


async def page_value(agent: Agent, expression: str) -> Any:
    """Reads something back from the page itself (lomi_browser_evaluate; no person asked)."""
    op = await agent.act("lomi_browser_evaluate", {"expression": expression})
    assert op["state"] == "succeeded", dump(op)
    return op["result"]["value"]


def token_for(lomi, workspaces) -> str:
    a, _ = workspaces
    return lomi.create_token(a["workspaceId"])["token"]


async def ready(lomi, workspaces, session, site: Site, path: str) -> Agent:
    assert lomi.run("confirm", "lomi_browser_evaluate", "--off").returncode == 0
    agent = await agent_for(lomi, workspaces, session)
    await agent.create()
    await agent.navigate(site.url(path))
    return agent


async def test_drag_moves_an_item_by_html5_drag_and_drop(lomi, workspaces, mcp, site):
    async with mcp.session(token=token_for(lomi, workspaces)) as session:
        agent = await ready(lomi, workspaces, session, site, "/board")
        snap = await agent.snapshot()
        card, done = ref(snap, 'listitem "Write tests"'), ref(snap, 'region "Done"')
        dragged = await agent.act("lomi_browser_drag", {
            "snapshotId": snap["snapshotId"], "elementRef": card, "targetRef": done,
        })
        assert dragged["state"] == "succeeded" and dragged["effectState"] == "complete", dump(dragged)
        observed = dragged["result"]["observed"]
        assert observed["event"] == "drop" and observed["html5"] is True, dump(dragged)
        assert await page_value(agent, "document.getElementById('c1').parentElement.id") == "done"
        assert await page_value(agent, "document.getElementById('log').textContent") == "dropped c1 in done"

        # A stale snapshot is refused before anything moves; the same ref twice is bad input.
        await agent.navigate(site.url("/board"))
        stale = await agent.act("lomi_browser_drag", {
            "snapshotId": snap["snapshotId"], "elementRef": card, "targetRef": done,
        })
        assert stale["state"] == "failed" and stale["effectState"] == "none", dump(stale)
        assert stale["error"]["code"] == "SNAPSHOT_STALE", dump(stale)
        same = await session.call("lomi_browser_drag", {
            "panelId": agent.panel, "browserGeneration": agent.generation, "snapshotId": snap["snapshotId"],
            "elementRef": card, "targetRef": card, "retryEpoch": agent.epoch, "requestKey": agent.key(),
        })
        assert same["status"] == "error" and same["code"] == "INVALID_ARGUMENT", dump(same)
        await agent.close()


async def test_fill_sets_several_fields_each_confirmed(lomi, workspaces, mcp, site):
    async with mcp.session(token=token_for(lomi, workspaces)) as session:
        agent = await ready(lomi, workspaces, session, site, "/signup")
        snap = await agent.snapshot()
        fields = [
            {"elementRef": ref(snap, 'textbox "Name"'), "value": "Ada Lovelace"},
            {"elementRef": ref(snap, 'textbox "Bio"'), "value": "Wrote the first program"},
            {"elementRef": ref(snap, 'checkbox "Newsletter"'), "value": "true"},
            {"elementRef": ref(snap, 'checkbox "Terms"'), "value": "false"},
            {"elementRef": ref(snap, 'radio "Plan B"'), "value": "true"},
            {"elementRef": ref(snap, 'combobox "Size"'), "value": "Large"},
        ]
        filled = await agent.act("lomi_browser_fill", {"snapshotId": snap["snapshotId"], "fields": fields})
        assert filled["state"] == "succeeded" and filled["effectState"] == "complete", dump(filled)
        kinds = [f["kind"] for f in filled["result"]["observed"]["fields"]]
        assert kinds == ["text", "text", "checkbox", "checkbox", "radio", "select"], dump(filled)
        back = await page_value(agent, """({
            name: document.getElementById('name').value, bio: document.getElementById('bio').value,
            news: document.getElementById('news').checked, tos: document.getElementById('tos').checked,
            plan: document.querySelector('input[name=plan]:checked').value,
            size: document.getElementById('size').value })""")
        assert back == {"name": "Ada Lovelace", "bio": "Wrote the first program", "news": True, "tos": False,
                        "plan": "b", "size": "l"}, dump(back)

        # Every field is checked before the first is touched: a button is not a field.
        bad = await agent.act("lomi_browser_fill", {"snapshotId": snap["snapshotId"], "fields": [
            {"elementRef": ref(snap, 'textbox "Name"'), "value": "Someone else"},
            {"elementRef": ref(snap, 'button "Send"'), "value": "x"},
        ]})
        assert bad["state"] == "failed" and bad["effectState"] == "none", dump(bad)
        assert bad["error"]["code"] == "INVALID_ARGUMENT" and "not a form field" in bad["error"]["message"], dump(bad)
        assert await page_value(agent, "document.getElementById('name').value") == "Ada Lovelace"
        checkbox = await agent.act("lomi_browser_fill", {"snapshotId": snap["snapshotId"], "fields": [
            {"elementRef": ref(snap, 'checkbox "Newsletter"'), "value": "yes"},
        ]})
        assert checkbox["state"] == "failed" and '"true" or "false"' in checkbox["error"]["message"], dump(checkbox)
        await agent.close()


async def test_emulate_changes_what_the_page_sees(lomi, workspaces, mcp, site):
    async with mcp.session(token=token_for(lomi, workspaces)) as session:
        agent = await ready(lomi, workspaces, session, site, "/media")
        dark = "matchMedia('(prefers-color-scheme: dark)').matches"
        assert await page_value(agent, dark) is False
        emulated = await agent.act("lomi_browser_emulate", {
            "viewport": {"width": 390, "height": 844}, "deviceScaleFactor": 2, "colorScheme": "dark",
            "userAgent": "LomiPhone/1.0",
        })
        assert emulated["state"] == "succeeded", dump(emulated)
        result = emulated["result"]
        assert result["viewport"] == {"width": 390, "height": 844} and result["deviceScaleFactor"] == 2, dump(result)
        assert result["colorScheme"] == "dark" and result["observed"]["prefersDark"] is True, dump(result)
        page = await page_value(agent, f"({{dark: {dark}, w: innerWidth, h: innerHeight, dpr: devicePixelRatio, "
                                       "ua: navigator.userAgent, bg: getComputedStyle(document.body).backgroundColor})")
        assert page == {"dark": True, "w": 390, "h": 844, "dpr": 2, "ua": "LomiPhone/1.0", "bg": "rgb(0, 0, 0)"}, dump(page)
        # What is not given stays; a new tab gets the same device.
        lighter = await agent.act("lomi_browser_emulate", {"colorScheme": "light"})
        assert lighter["state"] == "succeeded" and lighter["result"]["viewport"]["width"] == 390, dump(lighter)
        assert await page_value(agent, dark) is False
        opened = await agent.act("lomi_browser_tab_open", {"url": site.url("/media")})
        assert opened["state"] == "succeeded", dump(opened)
        assert await page_value(agent, "[innerWidth, devicePixelRatio]") == [390, 2]
        # Reset goes back to the browser's own device.
        reset = await agent.act("lomi_browser_emulate", {"reset": True})
        assert reset["state"] == "succeeded" and reset["result"]["viewport"] == {"width": 1280, "height": 720}, dump(reset)
        assert reset["result"]["userAgent"] is None and reset["result"]["colorScheme"] is None, dump(reset)
        assert await page_value(agent, "[innerWidth, devicePixelRatio]") == [1280, 1]
        bad = await session.call("lomi_browser_emulate", {
            "panelId": agent.panel, "browserGeneration": agent.generation, "colorScheme": "purple",
            "retryEpoch": agent.epoch, "requestKey": agent.key(),
        })
        assert bad["status"] == "error" and bad["code"] == "INVALID_ARGUMENT", dump(bad)
        await agent.close()


async def test_pdf_is_saved_into_the_project(lomi, workspaces, mcp, site, tmp_path):
    async with mcp.session(token=token_for(lomi, workspaces)) as session:
        agent = await ready(lomi, workspaces, session, site, "/report")
        op = await agent.op("lomi_browser_pdf", {"panelId": agent.panel, "path": "report.pdf"})
        assert op["state"] == "succeeded", dump(op)
        saved = tmp_path / "project-a" / "report.pdf"
        data = saved.read_bytes()
        assert data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:], data[:64]
        assert op["result"]["bytes"] == len(data) and op["result"]["sha256"] == hashlib.sha256(data).hexdigest(), dump(op)
        assert op["result"]["url"] == site.url("/report"), dump(op)
        # An existing file is refused unless overwrite; a path outside the project too.
        again = await agent.op("lomi_browser_pdf", {"panelId": agent.panel, "path": "report.pdf"})
        assert again["state"] == "failed" and again["effectState"] == "none", dump(again)
        outside = await agent.op("lomi_browser_pdf", {"panelId": agent.panel, "path": "../escape.pdf"})
        assert outside["state"] == "failed" and not (tmp_path / "escape.pdf").exists(), dump(outside)
        await agent.close()


async def test_a_response_body_is_read_bounded_and_saved_whole(lomi, workspaces, mcp, site, tmp_path):
    async with mcp.session(token=token_for(lomi, workspaces)) as session:
        agent = await ready(lomi, workspaces, session, site, "/report")
        snap = await agent.snapshot()
        clicked = await agent.act("lomi_browser_click", {"snapshotId": snap["snapshotId"], "elementRef": ref(snap, 'button "Load"')})
        assert clicked["state"] == "succeeded", dump(clicked)
        waited = await session.ok("lomi_browser_wait", {"panelId": agent.panel, "text": "42"})
        assert waited["matched"], dump(waited)
        log = await session.ok("lomi_browser_network", {"panelId": agent.panel})
        entry = next(e for e in log["entries"] if e["url"].endswith("/data.json"))

        whole = await session.ok("lomi_browser_network_body", {"panelId": agent.panel, "cursor": entry["cursor"],
                                                               "maxBytes": 524288})
        assert whole["encoding"] == "utf8" and not whole["truncated"] and whole["bytes"] == len(DATA.encode()), dump(whole)
        assert json.loads(whole["body"]) == json.loads(DATA) and whole["status"] == 200, dump(whole)
        cut = await session.ok("lomi_browser_network_body", {"panelId": agent.panel, "cursor": entry["cursor"], "maxBytes": 100})
        # maxBytes counts the body as sent: JSON-escaped in the answer.
        sent = len(json.dumps(cut["body"])) - 2
        assert cut["truncated"] and DATA.startswith(cut["body"]) and 90 <= sent <= 100, (sent, dump(cut))
        assert cut["bytes"] == len(DATA.encode()), dump(cut)

        save_args = {
            "panelId": agent.panel, "cursor": entry["cursor"], "maxBytes": 16,
            "save": {"path": "data.json", "retryEpoch": agent.epoch, "requestKey": agent.key()},
        }
        saved = await session.ok("lomi_browser_network_body", save_args)
        op = await session.settle(saved["saved"]["operationId"])
        assert op["state"] == "succeeded" and op["result"]["bytes"] == len(DATA.encode()), dump(op)
        assert (tmp_path / "project-a" / "data.json").read_text() == DATA

        missing = await session.call("lomi_browser_network_body", {"panelId": agent.panel, "cursor": "99999"})
        assert missing["status"] == "error" and missing["code"] == "NOT_FOUND", dump(missing)
        bad = await session.call("lomi_browser_network_body", {"panelId": agent.panel, "cursor": entry["cursor"],
                                                                "maxBytes": 600000})
        assert bad["status"] == "error" and bad["code"] == "INVALID_ARGUMENT" and "save" in bad["message"], dump(bad)
        await agent.close()
        # The same save retried after its browser is gone names the operation it made, and
        # writes nothing again.
        (tmp_path / "project-a" / "data.json").write_text("changed by the person")
        again = await session.call("lomi_browser_network_body", save_args)
        assert again["status"] == "error" and again["code"] == "NOT_FOUND", dump(again)
        assert again["details"]["operation"]["operationId"] == op["operationId"], dump(again)
        assert (tmp_path / "project-a" / "data.json").read_text() == "changed by the person"
