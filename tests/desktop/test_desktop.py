"""Lomi's desktop app in a real window (Xvfb, tauri-driver, WebKitWebDriver): the person
approves an agent by clicking, grants one workspace of two, decides an awaiting_user
operation, takes a terminal over by typing in it, revokes the agent; the window hides (not
quits) while agents are paired; SIGTERM stops the broker cleanly; a second launch shows the
running window instead of starting a second broker; an agent fills a small store, the window
warns at 90 % and at the cap, and the person frees room in Settings → Storage."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from conftest import DESKTOP_BIN, WAIT_DEADLINE, Desktop, process_gone, support
from webdriver import WebDriverError

pytestmark = pytest.mark.anyio

dump = support.dump
DEADLINE = WAIT_DEADLINE


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def window_mapped(title: str = "Lomi") -> bool:
    """Whether X shows the app's window (xwininfo, from x11-utils)."""
    done = subprocess.run(["xwininfo", "-name", title], capture_output=True, text=True, timeout=10)
    return "IsViewable" in done.stdout


def wait_until(predicate, what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"{what}: not within {deadline}s")
        time.sleep(0.05)


async def test_approve_decide_take_over_and_revoke_in_the_window(desktop: Desktop, tmp_path: Path):
    desktop.start()
    lomi = desktop.lomi
    window = desktop.window
    assert window is not None
    a = lomi.add_workspace("Alpha workspace", tmp_path / "project-a")
    b = lomi.add_workspace("Secret Bravo workspace", tmp_path / "project-b")
    (tmp_path / "project-a" / "old.txt").write_bytes(b"bye\n")
    mcp = support.McpFactory(lomi, lomi.transcript)
    # A client without a token pairs for its session (the person's choice; off, it signs in).
    lomi.allow_session_pairing()

    async with mcp.session(client_name="Desktop e2e agent") as agent:
        # A new client is pending; the window asks the person, showing the client's code.
        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "pending", dump(status)
        dialog = window.wait_for("#approval-dialog")
        assert window.text_of("#approval-dialog .client-name") == "Desktop e2e agent"
        assert window.text_of("#approval-dialog .verification-code") == status["verificationCode"]
        boxes = window.find_all("#approval-dialog input.grant")
        assert len(boxes) == 2 and not any(window.selected(box) for box in boxes), "no workspace is preselected"
        await agent.error("lomi_workspace_list", {}, "PAIRING_REQUIRED")

        window.click_on(f'#approval-dialog input[data-workspace-id="{a["workspaceId"]}"]')
        desktop.screenshot("approval-dialog.png")
        window.click_on("#approve")
        window.wait_gone("#approval-dialog")
        assert dialog not in window.find_all("#approval-dialog")

        # Granted exactly Alpha: Bravo is never shown.
        listing = await agent.ok("lomi_workspace_list")
        assert [w["workspaceId"] for w in listing["workspaces"]] == [a["workspaceId"]], dump(listing)
        assert "Bravo" not in dump(listing)
        await agent.error("lomi_connect", {"workspaceId": b["workspaceId"]}, "NOT_FOUND")

        # An awaiting_user operation (deleting a file waits by default) is decided in the window.
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        request = {
            "workspaceId": a["workspaceId"], "path": "old.txt", "expectedRevision": sha(b"bye\n"),
            "retryEpoch": epoch, "requestKey": "delete-old",
        }
        answer = await agent.ok("lomi_file_delete", request)
        assert answer["state"] == "awaiting_user", dump(answer)
        window.wait_for("#decision-dialog")
        what = window.text_of("#decision-dialog .what")
        assert "Delete old.txt" in what and str(tmp_path / "project-a") in what, what
        assert (tmp_path / "project-a" / "old.txt").exists(), "nothing is deleted before the person decides"
        desktop.screenshot("decision-dialog.png")
        window.click_on("#decision-approve")
        settled = await agent.settle(answer["operationId"])
        assert settled["state"] == "succeeded", dump(settled)
        assert not (tmp_path / "project-a" / "old.txt").exists()
        window.wait_gone("#decision-dialog")

        # A terminal the agent opened shows in the window; typing there is a takeover.
        revision = (await agent.ok("lomi_panel_list", {"workspaceId": a["workspaceId"]}))["domainRevision"]
        created = await agent.ok("lomi_terminal_create", {
            "workspaceId": a["workspaceId"], "cwdRelative": "", "title": "Agent shell",
            "expectedRevision": revision, "retryEpoch": epoch, "requestKey": "term-1",
        })
        term = (await agent.settle(created["operationId"]))["result"]
        panel = term["panelId"]
        base = {"panelId": panel, "leaseId": term["leaseId"], "generation": term["generation"]}
        sent = await agent.ok("lomi_terminal_input", {**base, "inputSequence": "1", "text": "echo agent-$((6*7))\r"})
        read = await agent.ok("lomi_terminal_read", {
            "panelId": panel, "sinceCursor": sent["outputCursor"], "waitFor": {"text": "agent-42"}, "timeoutMs": 60_000,
        })
        assert read["waited"] == "matched", dump(read)
        window.wait_for(f'.terminal-panel[data-panel-id="{panel}"] .xterm-rows')
        wait_until(
            lambda: "agent-42" in window.text_of(f'.terminal-panel[data-panel-id="{panel}"] .xterm-rows'),
            "the agent's output in the window's terminal",
        )
        # Click into the terminal (xterm.js focuses its input) and type, key by key.
        window.click_on(f'.terminal-panel[data-panel-id="{panel}"] .xterm-screen')
        window.keys("echo person-$((7*6))\ue007")
        back = await agent.ok("lomi_terminal_read", {
            "panelId": panel, "sinceCursor": read["outputCursor"],
            "waitFor": {"text": "person-42"}, "timeoutMs": 60_000,
        })
        assert back["waited"] == "matched", dump(back)
        await agent.error("lomi_terminal_input", {**base, "inputSequence": "2", "text": "echo late\r"}, "LEASE_EXPIRED")
        wait_until(
            lambda: "person-42" in window.text_of(f'.terminal-panel[data-panel-id="{panel}"] .xterm-rows'),
            "the person's typing in the window's terminal",
        )
        window.wait_for('#feed tr.state-succeeded[data-operation-id="%s"]' % answer["operationId"])
        desktop.screenshot("main-window.png")

        # Closing the window while an agent is paired hides it: Lomi stays, in the tray.
        pid = desktop.pid
        assert pid is not None
        assert window_mapped(), "the window is shown"
        window.script("return window.__TAURI_INTERNALS__.invoke('plugin:window|close', {label: 'main'})")
        wait_until(lambda: not window_mapped(), "the window hides on close")
        assert not process_gone(pid), "closing the window while paired must not quit Lomi"
        await agent.ok("lomi_workspace_list")

        # A second launch does not start a second broker: it shows the running window.
        again = subprocess.run(
            [DESKTOP_BIN, "--data-dir", str(desktop.data_dir), "--http", "127.0.0.1:0"],
            capture_output=True, text=True, timeout=30,
        )
        assert again.returncode == 0, f"{again.stdout}\n{again.stderr}"
        assert "already running" in again.stdout, again.stdout
        wait_until(window_mapped, "the window shows again for a second launch")

        # Revoking in Settings cuts the agent off at its next call.
        window.click_on("#tab-settings")
        pairing = status["pairingId"]
        row = f'.pairing-row[data-pairing-id="{pairing}"]'
        assert window.text_of(f"{row} .pairing-grants") == "Alpha workspace"
        assert window.text_of(f"{row} .last-active") != "never"
        # The person keeps browser sign-ins for Alpha: new browser panels share one profile.
        keep = f'.workspace[data-workspace-id="{a["workspaceId"]}"] input.persistent-profile'
        assert not window.selected_of(keep)
        window.click_on(keep)
        wait_until(lambda: lomi.cli("browser", "profile", a["workspaceId"])["persistent"] is True,
                   "the browser profile choice is saved")
        wait_until(lambda: window.selected_of(keep), "the choice shows checked")
        desktop.screenshot("settings.png")
        window.click_on(f"{row} .revoke")
        wait_until(lambda: lomi.pairing(pairing)["state"] == "revoked", "the pairing is revoked")
        await agent.error("lomi_workspace_list", {}, "PAIRING_REVOKED")

    # SIGTERM: the broker stops cleanly (broker.json and the socket removed), and the
    # operations it recorded are all settled.
    ops = lomi.cli("operation", "list")
    assert ops and all(op["state"] in support.SETTLED for op in ops), dump(ops)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: process_gone(pid), "lomi-desktop exits on SIGTERM")
    assert not (desktop.data_dir / "broker.json").exists(), "a clean stop removes broker.json"
    assert not (desktop.data_dir / "lomi.sock").exists(), "a clean stop removes the socket"
    # The store (opened by the command itself now) holds every receipt, all settled.
    store = lomi.cli("store", "status")
    assert store["receipts"] >= 2 and store["unsettledReceipts"] == 0, dump(store)
    assert store["receiptsByState"]["succeeded"] == store["receipts"], dump(store)


async def test_deny_in_the_window_and_close_quits_when_nobody_is_paired(desktop: Desktop, tmp_path: Path):
    desktop.start()
    lomi = desktop.lomi
    window = desktop.window
    assert window is not None
    mcp = support.McpFactory(lomi, lomi.transcript)
    lomi.allow_session_pairing()
    async with mcp.session(client_name="Unwanted agent") as agent:
        status = await agent.ok("lomi_pairing_status")
        window.wait_for("#approval-dialog")
        assert "add one in Settings" in window.text_of("#approval-dialog")
        window.click_on("#deny")
        window.wait_gone("#approval-dialog")
        await agent.error("lomi_workspace_list", {}, "PAIRING_DENIED")
        assert lomi.pairing(status["pairingId"])["state"] == "denied"

    # Nobody paired: closing the window quits Lomi, and the broker stops cleanly.
    pid = desktop.pid
    assert pid is not None
    try:
        window.script("window.__TAURI_INTERNALS__.invoke('plugin:window|close', {label: 'main'}); return true")
    except WebDriverError:
        pass  # the window may be gone before WebDriver hears back
    wait_until(lambda: process_gone(pid), "closing the window quits Lomi when no agent is paired")
    assert not (desktop.data_dir / "broker.json").exists()


def web_processes(app: int) -> list[int]:
    """The window's WebKit web processes: children of the app named WebKitWebProcess (the
    kernel keeps 15 characters of a name)."""
    return [pid for pid, name, fields in support.live_processes() if name == "WebKitWebProces" and fields[1] == str(app)]


async def test_the_window_comes_back_when_its_web_process_crashes(desktop: Desktop, tmp_path: Path):
    """WebKit's web process behind the window is killed: the app says so in its log and loads
    the page again in a new one, which follows Lomi's state as the first did. (WebKit ends the
    WebDriver session with the process, so the page is seen through the app, not WebDriver.)"""
    desktop.start()
    window = desktop.window
    assert window is not None and desktop.pid is not None
    window.wait_for("#app > *")
    log = desktop.logs / "driver.stderr"

    def loads() -> int:
        return log.read_text(errors="replace").count("the window's page follows the overview")

    wait_until(lambda: loads() == 1, "the page to follow the overview")
    [before] = web_processes(desktop.pid)
    os.kill(before, signal.SIGKILL)
    wait_until(lambda: "the window's web process ended (it crashed); loading the window again" in log.read_text(errors="replace"),
               "the app to log that the window's web process ended")
    wait_until(lambda: web_processes(desktop.pid) not in ([], [before]), "a new web process for the window")
    wait_until(lambda: loads() == 2, "the page, loaded again, to follow the overview")
    assert not process_gone(desktop.pid)
    # The app still serves agents.
    mcp = support.McpFactory(desktop.lomi, desktop.lomi.transcript)
    desktop.lomi.allow_session_pairing()
    async with mcp.session(client_name="Agent after the crash") as agent:
        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "pending", status


def test_a_headless_broker_refuses_to_show_a_window(tmp_path: Path):
    """The app launched where `lomi serve --headless` already runs leaves it alone and says so."""
    transcript = support.Transcript()
    logs = tmp_path / "logs"
    data = tmp_path / "data"
    logs.mkdir()
    data.mkdir()
    lomi = support.Lomi(data, logs, transcript)
    lomi.start()
    try:
        done = subprocess.run(
            [DESKTOP_BIN, "--data-dir", str(data), "--http", "127.0.0.1:0"],
            capture_output=True, text=True, timeout=30,
        )
        assert done.returncode != 0, done.stdout
        assert "without a window" in done.stderr, done.stderr
        assert lomi.running, "the headless broker keeps running"
        # `lomi` alone with a display opens the app, which says the same.
        bare = subprocess.run([support.LOMI_BIN, "--data-dir", str(data)], capture_output=True, text=True, timeout=30)
        assert bare.returncode != 0 and "without a window" in bare.stderr, bare.stderr
        assert lomi.stop() == 0
    finally:
        lomi.kill()


def e2e_module(name: str):
    """A module of tests/e2e (for its fixtures: the adb server and phone, the web site)."""
    spec = importlib.util.spec_from_file_location(
        f"lomi_e2e_{name}", Path(__file__).parent.parent / "e2e" / f"{name}.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_workspace_agent(desktop: Desktop, workspace: str, agent: str, project: Path):
    """A workspace on `project`, a bearer token for `agent` granted it, and an MCP factory."""
    lomi = desktop.lomi
    added = lomi.add_workspace(workspace, project)
    token = lomi.create_token(added["workspaceId"], name=agent)["token"]
    return added, token, support.McpFactory(lomi, lomi.transcript)


def android_support():
    """tests/e2e/test_android.py's private adb server and device fixture."""
    return e2e_module("test_android")


async def test_an_android_attach_is_decided_in_the_window_and_the_panel_shows_its_capture(
    desktop: Desktop, tmp_path: Path
):
    android = android_support()
    logs = tmp_path / "adb-logs"
    logs.mkdir()
    adb = android.AdbServer(logs)
    phone = android.Phone()
    try:
        adb.connect(phone.serial)
        desktop.start("--adb-server", adb.address)
        window = desktop.window
        assert window is not None
        a, token, mcp = one_workspace_agent(desktop, "Phone workspace", "Android agent", tmp_path / "project-a")
        async with mcp.session(token=token) as agent:
            epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
            revision = (await agent.ok("lomi_panel_list", {"workspaceId": a["workspaceId"]}))["domainRevision"]
            # The first attach of a device waits for the person: the window asks.
            answer = await agent.ok("lomi_android_attach", {
                "workspaceId": a["workspaceId"], "serial": phone.serial, "expectedRevision": revision,
                "retryEpoch": epoch, "requestKey": "attach-1",
            })
            assert answer["state"] == "awaiting_user", dump(answer)
            what = window.text_of("#decision-dialog .what")
            assert phone.serial in what and "use the phone" in what, what
            assert phone.serial in window.text_of("#decision-dialog .effect[data-kind=device]")
            assert window.text_of("#decision-dialog .client-name") == "Android agent"
            window.click_on("#decision-approve")
            attached = await agent.settle(answer["operationId"])
            assert attached["state"] == "succeeded", dump(attached)
            panel = attached["result"]["panelId"]

            # Before any capture the panel says so; after the agent's capture it shows it.
            window.wait_for(f'.android-panel[data-panel-id="{panel}"] .no-capture')
            envelope = await agent.call("lomi_android_capture", {
                "panelId": panel, "generation": attached["result"]["generation"],
            })
            assert envelope["status"] == "ok", dump(envelope)
            [image] = [c for c in envelope.raw.content if c.type == "image"]
            window.wait_for(f'.android-panel[data-panel-id="{panel}"] img.capture[data-sequence]')
            def natural_size():
                return window.script(
                    "const img = document.querySelector(arguments[0]);"
                    "return img.complete && img.naturalWidth ? [img.naturalWidth, img.naturalHeight] : null;",
                    f'.android-panel[data-panel-id="{panel}"] img.capture',
                )

            wait_until(lambda: natural_size() is not None, "the capture to load in the window")
            shown = natural_size()
            width, height, _ = android.png_pixels(base64.b64decode(image.data))
            assert shown == [width, height] == list(android.SCREEN), shown
            # Let the page paint the decoded image before the screenshot.
            window.script(
                "return document.querySelector(arguments[0]).decode()"
                ".then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))))",
                f'.android-panel[data-panel-id="{panel}"] img.capture',
            )
            desktop.screenshot("android-panel.png")
    finally:
        desktop.stop()
        phone.kill()
        adb.stop()


PAGE_A = """<!doctype html><title>Page A</title><style>body{margin:0;background:#fff}
h1{font:bold 64px sans-serif;color:#2a6;margin:40px}</style><h1>Lomi page A</h1>"""

PAGE_B = """<!doctype html><title>Page B</title><style>body{margin:0;background:#226}
h1{font:bold 64px sans-serif;color:#fc3;margin:40px}</style><h1>Lomi page B</h1>"""


async def test_a_browser_panel_shows_its_address_and_a_live_view_of_the_page(desktop: Desktop, tmp_path: Path):
    browser = e2e_module("test_browser")
    site = browser.Site({"/a": PAGE_A, "/b": PAGE_B})
    try:
        desktop.start()
        window = desktop.window
        assert window is not None
        a, token, mcp = one_workspace_agent(desktop, "Web workspace", "Browser agent", tmp_path / "project-a")
        async with mcp.session(token=token) as session:
            epoch = (await session.connect(a["workspaceId"]))["retryEpoch"]
            agent = browser.Agent(session, a["workspaceId"], epoch)
            await agent.create()
            card = f'.browser-panel[data-panel-id="{agent.panel}"]'
            view = f"{card} img.browser-view"

            def shown() -> list | None:
                """The view's address, image source and decoded size, once an image is in."""
                return window.script(
                    "const card = document.querySelector(arguments[0]);"
                    "const img = card && card.querySelector('img.browser-view');"
                    "return img && !img.hidden && img.complete && img.naturalWidth"
                    " ? [card.querySelector('.address').textContent, img.src, img.naturalWidth, img.naturalHeight]"
                    " : null;",
                    card,
                )

            # The agent navigates: the window shows the page's address and what it renders.
            def seen(url: str) -> list:
                """The view once it shows `url` (a new frame decoding reads as none for a moment)."""
                found: list = []

                def showing() -> bool:
                    now = shown()
                    found[:] = now or []
                    return bool(now) and now[0] == url

                wait_until(showing, f"{url}'s address and view in the window")
                return found

            await agent.navigate(site.url("/a"))
            address, first, width, height = seen(site.url("/a"))
            assert first.startswith("data:image/jpeg;base64,"), first[:40]
            assert [width, height] == [1280, 720], "the view is the whole viewport"

            # The next page replaces both, without the person doing anything.
            await agent.navigate(site.url("/b"))
            seen(site.url("/b"))
            wait_until(lambda: (shown() or [None, first])[1] != first, "page B's view replacing page A's")
            # Page B is dark blue where page A is white: the view is of the page, not a placeholder.
            # (The frames between the two pages may still be white: Chromium paints the new
            # document before its styles apply, and a loaded machine shows that frame longer.)
            corners: list = []

            def page_b_shown() -> bool:
                corner = window.script(
                    "const img = document.querySelector(arguments[0]);"
                    "if (!img || !img.complete || !img.naturalWidth) return null;"
                    "const c = document.createElement('canvas'); c.width = 4; c.height = 4;"
                    "const g = c.getContext('2d'); g.drawImage(img, 0, 0, 4, 4, 0, 0, 4, 4);"
                    "return Array.from(g.getImageData(1, 1, 1, 1).data.slice(0, 3));",
                    view,
                )
                corners.append(corner)
                return corner is not None and corner[2] > 80 and corner[0] < 80

            end = time.monotonic() + DEADLINE
            while not page_b_shown():
                if time.monotonic() > end:
                    pytest.fail(f"page B's dark blue background: not within {DEADLINE}s; the view's corner was {corners[-3:]}")
                time.sleep(0.05)
            window.script(
                "return document.querySelector(arguments[0]).decode()"
                ".then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))))",
                view,
            )
            desktop.screenshot("browser-panel.png")

            # Closing the panel takes its view away.
            await agent.close()
            window.wait_gone(card)
    finally:
        desktop.stop()
        site.close()


STORE_CAP = 20


async def test_storage_warns_before_the_store_is_full_and_frees_room_in_the_window(desktop: Desktop, tmp_path: Path):
    """An agent fills a small store (the hidden `--store-cap`): the window's notice appears at
    90 % and at the cap, opens Settings → Storage, and "Free room" for that agent shows its
    preview, asks, applies it; the agent reconnects and works again."""
    desktop.start("--store-cap", str(STORE_CAP))
    lomi = desktop.lomi
    window = desktop.window
    assert window is not None
    a, token, mcp = one_workspace_agent(desktop, "Busy workspace", "Busy agent", tmp_path / "project-a")
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], int(connection["domainRevision"])
        serial = 0

        async def rename() -> dict:
            nonlocal serial, revision
            serial += 1
            request = support.rename_args(a["workspaceId"], str(revision), epoch, f"k-{serial}", f"Busy #{serial}")
            envelope = await agent.call("lomi_workspace_update", request)
            if envelope["status"] == "ok":
                op = envelope["data"]
                if op["state"] != "succeeded":
                    op = await agent.settle(op["operationId"])
                assert op["state"] == "succeeded", dump(op)
                revision += 1
            return envelope

        # Up to 90 % of the receipt cap: the window says so, once, with a way to Storage.
        while (await agent.ok("lomi_store_status"))["warningLevel"] != "critical":
            assert (await rename())["status"] == "ok"
        assert lomi.cli("store", "status")["receipts"] == STORE_CAP * 9 // 10
        window.wait_for("#store-notice.level-critical")
        notice = window.text_of("#store-notice .notice-text")
        assert "90 % full" in notice and "Room left: 2 receipts" in notice, notice
        # The app's notifications read the store on their own beat: let them see 90 % too.
        wait_until(lambda: any("90 % full" in n for n in desktop.notifications()), "the native notification at 90 %")

        # At the cap the agent is refused (RESOURCE_EXHAUSTED) and the notice says the store is full.
        while (await rename())["status"] == "ok":
            pass
        refused = await rename()
        assert refused["code"] == "RESOURCE_EXHAUSTED", dump(refused)
        window.wait_for("#store-notice.level-full")
        assert "agents' changes are refused" in window.text_of("#store-notice .notice-text")
        # The desktop notifications too, once per level however often the overview changed.
        wait_until(lambda: any("store is full" in n for n in desktop.notifications()), "the native notification at the cap")
        store_notices = [n for n in desktop.notifications() if "Lomi's store" in n]
        # Each level at most once and in order; 75 % shows only if the window saw the store
        # between 75 and 90 % (the renames may pass it between two of its reads).
        levels = [n.split(":", 1)[0] for n in store_notices]
        order = ["Lomi's store is 75 % full", "Lomi's store is 90 % full", "Lomi's store is full"]
        assert levels in (order, order[1:]), store_notices
        desktop.screenshot("store-notice.png")

        # The notice opens Storage: the store's room, per agent.
        window.click_on("#open-storage")
        window.wait_for("#settings-storage")
        window.wait_gone("#store-notice")
        assert window.text_of("#store-receipts .meter-text") == f"{STORE_CAP} of {STORE_CAP} (100 %) · 0 left"
        assert len(window.find_all("#settings-storage .store-pairing")) == 1
        assert window.text_of("#settings-storage .store-pairing td") == "Busy agent"

        # Free room for this agent: the preview first, nothing changes until the person confirms.
        window.click_on("#settings-storage input.retire-pairing")
        wait_until(lambda: window.selected_of("#settings-storage input.retire-pairing"), "the agent's choice")
        window.click_on("#free-room")
        what = window.text_of("#free-room-dialog .what")
        assert f"end 1 connection of Busy agent and move {STORE_CAP} settled receipts to the history" in what, what
        assert "must call lomi_connect again" in what and "history keeps every receipt" in what, what
        assert lomi.cli("store", "status")["receipts"] == STORE_CAP, "a preview changes nothing"
        desktop.screenshot("storage-preview.png")
        window.click_on("#free-room-confirm")
        window.wait_gone("#free-room-dialog")
        wait_until(
            lambda: window.text_of("#store-receipts .meter-text") == f"0 of {STORE_CAP} (0 %) · {STORE_CAP} left",
            "the Storage view shows room again",
        )
        assert "moved 20 receipts to the history" in window.text_of("#settings-storage .free-room-result")
        window.script("document.getElementById('settings-storage').scrollIntoView({block: 'start'}); return true")
        desktop.screenshot("storage.png")
        status = lomi.cli("store", "status")
        assert (status["receipts"], status["historyReceipts"], status["warningLevel"]) == (0, STORE_CAP, "none"), dump(status)

        # The agent's ended connection is refused; after lomi_connect its next change succeeds.
        await agent.error(
            "lomi_workspace_update",
            support.rename_args(a["workspaceId"], str(revision), epoch, "after", "After"),
            "RETRY_EPOCH_EXPIRED",
        )
        connection = await agent.connect(a["workspaceId"])
        epoch, revision = connection["retryEpoch"], int(connection["domainRevision"])
        assert (await rename())["status"] == "ok"
        wait_until(
            lambda: window.text_of("#store-receipts .meter-text").startswith(f"1 of {STORE_CAP}"),
            "the agent's new receipt in the Storage view",
        )


async def test_a_full_data_disk_is_told_in_the_window_and_work_resumes_when_room_is_freed(
    desktop: Desktop, tmp_path: Path
):
    """The app keeps its data on a small tmpfs that fills while an agent works: the agent's
    change is refused (STORE_UNAVAILABLE) and nothing of it happens, the window says why and
    what to do (a notice that stays while writes fail) and one native notification says so;
    once the person frees space the same agent goes on without a restart and the notice goes."""
    with support.small_disk(desktop.data_dir):
        desktop.start()
        window = desktop.window
        assert window is not None
        a, token, mcp = one_workspace_agent(desktop, "Full disk", "Writer", tmp_path / "project-a")
        async with mcp.session(token=token) as agent:
            connection = await agent.connect(a["workspaceId"])
            epoch, revision = connection["retryEpoch"], connection["domainRevision"]
            filler = support.fill_disk(desktop.data_dir)
            refused = await agent.call(
                "lomi_workspace_update", support.rename_args(a["workspaceId"], revision, epoch, "full-1", "Renamed")
            )
            assert refused["status"] == "error" and refused["code"] == "STORE_UNAVAILABLE", dump(refused)
            assert desktop.lomi.workspace(a["workspaceId"])["name"] == "Full disk"

            window.wait_for("#write-failure")
            text = window.text_of("#write-failure .notice-text")
            assert text.startswith("Lomi cannot save its records:") and "full" in text, text
            assert "Free space on the disk that holds Lomi's data" in text, text
            wait_until(
                lambda: any(n.startswith("Lomi cannot save") for n in desktop.notifications()),
                "the native notification of the full disk",
            )
            desktop.screenshot("write-failure.png")

            # Room again: the same agent's retry (same key) goes through, and the notice goes.
            filler.unlink()
            done = await agent.call(
                "lomi_workspace_update", support.rename_args(a["workspaceId"], revision, epoch, "full-1", "Renamed")
            )
            assert done["status"] == "ok", dump(done)
            settled = await agent.settle(done["data"]["operationId"])
            assert settled["state"] == "succeeded", dump(settled)
            window.wait_gone("#write-failure")
            assert len([n for n in desktop.notifications() if n.startswith("Lomi cannot save")]) == 1
        desktop.stop()
        assert support.integrity(desktop.data_dir) == "ok"


async def test_settings_saved_in_the_window_move_the_revision_agents_see(desktop: Desktop, tmp_path: Path):
    """Settings → Preferences: the person's Save in the window moves the terminal section's
    revision that `lomi settings get` and an agent see; an agent's change shows in the window
    with its new revision; the person turns session pairing on there."""
    desktop.start()
    lomi = desktop.lomi
    window = desktop.window
    assert window is not None
    a, token, mcp = one_workspace_agent(desktop, "Settings workspace", "Settings agent", tmp_path / "project-a")
    window.click_on("#tab-settings")
    window.wait_for("#settings-terminal")
    shown = lambda: window.script("return document.getElementById('settings-terminal').dataset.revision")  # noqa: E731
    assert shown() == "1"
    window.script(
        "document.querySelector('#settings-terminal [data-key=cols]').value = '132'; return true"
    )
    window.click_on("#settings-terminal .save-section")
    wait_until(lambda: lomi.cli("settings", "get", "terminal")["terminal"]["cols"] == 132, "the window's save")
    assert lomi.cli("settings", "get", "terminal")["terminal"]["settingsRevision"] == "2"
    wait_until(lambda: shown() == "2", "the window showing the new revision")
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        seen = (await agent.ok("lomi_settings_get", {"section": "terminal"}))["terminal"]
        assert (seen["cols"], seen["settingsRevision"]) == (132, "2"), dump(seen)
        answer = await agent.ok("lomi_settings_update", {
            "section": "terminal", "expectedSettingsRevision": "2", "values": {"rows": 40},
            "retryEpoch": epoch, "requestKey": "rows-40",
        })
        assert (await agent.settle(answer["operationId"]))["state"] == "succeeded"
    wait_until(lambda: shown() == "3", "the agent's change in the window")
    rows = window.script("return document.querySelector('#settings-terminal [data-key=rows]').value")
    assert rows == "40", rows
    # Session pairing is the person's choice, off until they tick it here.
    assert lomi.cli("settings", "get", "network")["network"]["sessionPairing"] is False
    window.click_on("#settings-network [data-key=sessionPairing]")
    window.click_on("#settings-network .save-section")
    wait_until(lambda: lomi.cli("settings", "get", "network")["network"]["sessionPairing"] is True, "the window's save")
    desktop.screenshot("settings-preferences.png")


async def test_the_chat_tab_shows_a_streamed_reply_and_the_persons_draft_edit_wins(desktop: Desktop, tmp_path: Path):
    """Chat in the window: an agent's conversation and draft show; the person's edit, saved by
    its revision, makes the agent's stale update fail REVISION_MISMATCH; the person's Send
    streams the provider's reply (a local provider without a key, the tests' stand-in) into
    the thread as it arrives, and Stop keeps what arrived, marked cancelled."""
    standin = e2e_module("provider_standin").StandIn(key=None)
    try:
        desktop.start()
        lomi = desktop.lomi
        window = desktop.window
        assert window is not None
        a, token, mcp = one_workspace_agent(desktop, "Chat workspace", "Chat agent", tmp_path / "project-a")
        provider = {"kind": "openai_compatible", "baseUrl": standin.openai_url, "models": ["slow-model"]}
        lomi.cli("settings", "set", "providers", "local", json.dumps(provider))
        lomi.cli("settings", "set", "chat", "defaultProvider", "local")
        async with mcp.session(token=token) as agent:
            epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
            created = await agent.ok("lomi_chat_create", {"title": "Trip plans", "retryEpoch": epoch, "requestKey": "c1"})
            conversation = (await agent.settle(created["operationId"]))["result"]["conversationId"]
            drafted = await agent.ok("lomi_chat_draft_update", {
                "conversationId": conversation, "expectedDraftRevision": "1", "text": "Agent's draft",
                "retryEpoch": epoch, "requestKey": "d1",
            })
            assert (await agent.settle(drafted["operationId"]))["state"] == "succeeded"

            window.click_on("#tab-chat")
            window.click_on(f"li.conversation[data-conversation-id='{conversation}']")
            draft = lambda: window.script("const d = document.getElementById('chat-draft'); return d && d.value")  # noqa: E731
            wait_until(lambda: draft() == "Agent's draft", "the agent's draft in the window")

            # The person edits and saves the draft (from revision 2): it moves to 3.
            window.script(
                "const d = document.getElementById('chat-draft'); d.value = 'What should I pack?';"
                " d.dispatchEvent(new Event('input', {bubbles: true})); return true"
            )
            window.click_on("#chat-save")
            wait_until(lambda: lomi.cli("chat", "show", conversation)["draft"]["text"] == "What should I pack?",
                       "the person's saved draft")
            stale = await agent.error("lomi_chat_draft_update", {
                "conversationId": conversation, "expectedDraftRevision": "2", "text": "Agent's rewrite",
                "retryEpoch": epoch, "requestKey": "d2",
            }, "REVISION_MISMATCH")
            assert stale["details"]["draftRevision"] == "3", dump(stale)

        # Send: the reply streams into the thread.
        window.click_on("#chat-send")
        reply = ".message.assistant.streaming .text"
        first = window.text_of(reply)
        wait_until(lambda: len(window.text_of(reply)) > len(first) > 0, "the reply growing as it arrives")
        assert window.text_of(".message.user .text") == "What should I pack?"
        desktop.screenshot("chat-streaming.png")
        window.click_on("#chat-cancel")
        window.wait_for(".message.assistant.cancelled")
        shown = lomi.cli("chat", "show", conversation)
        assert shown["messages"][1]["state"] == "cancelled", dump(shown)
        assert shown["messages"][1]["text"].startswith("Echo: What"), dump(shown)
        assert len(standin.seen()) == 1
        assert standin.seen()[0]["body"]["messages"] == [{"role": "user", "content": "What should I pack?"}]
        desktop.screenshot("chat-stopped.png")

        # An agent's send waits for the person, whose dialog shows the message, the provider
        # and the model; approved in the window, the reply streams into the same thread.
        async with mcp.session(token=token) as agent:
            epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
            view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
            drafted = await agent.ok("lomi_chat_draft_update", {
                "conversationId": conversation, "expectedDraftRevision": view["draft"]["draftRevision"],
                "text": "Agent asks: and the weather?", "retryEpoch": epoch, "requestKey": "d3",
            })
            assert (await agent.settle(drafted["operationId"]))["state"] == "succeeded"
            view = await agent.ok("lomi_chat_get", {"conversationId": conversation})
            answer = await agent.ok("lomi_chat_send", {
                "conversationId": conversation, "expectedConversationRevision": view["conversationRevision"],
                "expectedDraftRevision": view["draft"]["draftRevision"], "model": "echo-model",
                "retryEpoch": epoch, "requestKey": "s1",
            })
            assert answer["state"] == "awaiting_user", dump(answer)
            assert window.text_of("#decision-dialog .effect[data-kind=chatSend] .effect-text") == "Agent asks: and the weather?"
            assert "local (echo-model)" in window.text_of("#decision-dialog .what")
            desktop.screenshot("chat-decision.png")
            window.click_on("#decision-approve")
            op = await agent.settle(answer["operationId"])
            assert op["state"] == "succeeded", dump(op)
        window.wait_for(".message.assistant.complete")
        assert window.text_of(".message.assistant.complete .text") == "Echo: Agent asks: and the weather?"
        assert len(standin.seen()) == 2
        desktop.screenshot("chat-agent-reply.png")
    finally:
        standin.close()


async def test_each_familys_decision_dialog_shows_its_effect(desktop: Desktop, tmp_path: Path):
    """With the person's policy set to ask, an agent calls one tool of each mutating family
    (tests/e2e/test_effects.py's scenario, in one window): each decision dialog shows what will
    happen: the diff against the disk with its added and removed lines coloured, a deleted
    file's size and first lines, from/to, the staged diff and the commit message, the command,
    the script, the address, the message with provider and model, the phone."""
    effects = e2e_module("effects_scenario")
    android = android_support()
    logs = tmp_path / "adb-logs"
    logs.mkdir()
    adb = android.AdbServer(logs)
    phone = android.Phone()
    try:
        adb.connect(phone.serial)
        desktop.start("--adb-server", adb.address)
        lomi = desktop.lomi
        window = desktop.window
        assert window is not None
        project = tmp_path / "project-e"
        a, token, mcp = one_workspace_agent(desktop, "Effects workspace", "Effects agent", project)
        head = effects.prepare(lomi, project)
        seen: list[str] = []

        def lines(css: str) -> list[str]:
            return window.script(
                "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent.replace(/\\n$/, ''))", css
            )

        async def see(waiting) -> None:
            dialog = f'#decision-dialog[data-operation-id="{waiting.operation_id}"]'
            window.wait_for(dialog)
            window.wait_for(f"{dialog} .effect[data-kind={waiting.kind}]")
            shown = window.text_of(dialog)
            for text in waiting.shows:
                assert text.split("\n")[0] in shown, f"{waiting.tool}: {text!r} not in the dialog:\n{shown}"
            if waiting.added or waiting.removed:
                added, removed = lines(f"{dialog} .effect-diff .line.add"), lines(f"{dialog} .effect-diff .line.del")
                assert set(waiting.added) <= set(added), (waiting.tool, added)
                assert set(waiting.removed) <= set(removed), (waiting.tool, removed)
                colour = window.script(
                    "return getComputedStyle(document.querySelector(arguments[0])).backgroundColor",
                    f"{dialog} .effect-diff .line.add",
                )
                assert colour not in ("rgba(0, 0, 0, 0)", "transparent"), colour
            desktop.screenshot(f"decision-{waiting.tool.removeprefix('lomi_')}.png")
            seen.append(waiting.tool)
            window.click_on("#decision-approve" if waiting.approve else "#decision-deny")
            window.wait_gone(dialog)

        async with mcp.session(token=token) as agent:
            await effects.each_family(agent, a["workspaceId"], project, head, see, phone_serial=phone.serial)
        assert len(seen) == 14, seen

        # Settings: "Ask me before" in plain words, grouped by family, the tool as the detail.
        window.click_on("#tab-settings")
        group = window.text_of('#settings-policy .policy-group[data-family="files"]')
        assert "Project files" in group and "Delete files" in group and "lomi_file_delete" in group, group
        phones_group = window.text_of('#settings-policy .policy-group[data-family="android"]')
        assert "Run commands on a phone" in phones_group, phones_group
        window.script("document.getElementById('settings-policy').scrollIntoView(); return true")
        desktop.screenshot("settings-policy.png")
    finally:
        phone.kill()
        adb.stop()


async def test_tool_families_chosen_in_the_window_shape_the_agents_tool_list(desktop: Desktop, tmp_path: Path):
    """The person approves an agent for the browser only (unticking the other families in the
    approval dialog); its tool list is the browser's and the session tools. In Settings the
    person gives it Git too, and the agent's next listing has Git."""
    desktop.start()
    lomi = desktop.lomi
    window = desktop.window
    assert window is not None
    a = lomi.add_workspace("Families workspace", tmp_path / "project-f")
    mcp = support.McpFactory(lomi, lomi.transcript)
    lomi.allow_session_pairing()
    async with mcp.session(client_name="Browser-only agent") as agent:
        status = await agent.ok("lomi_pairing_status")
        window.wait_for("#approval-dialog")
        families = window.find_all("#approval-dialog input.family")
        assert len(families) == 8 and all(window.selected(box) for box in families), "every family is ticked"
        window.click_on(f'#approval-dialog input[data-workspace-id="{a["workspaceId"]}"]')
        for family in ("workspace", "terminal", "files", "editor", "git", "android", "chat"):
            window.click_on(f'#approval-dialog input[data-family="{family}"]')
        desktop.screenshot("approval-families.png")
        window.click_on("#approve")
        window.wait_gone("#approval-dialog")
        wait_until(lambda: lomi.pairing(status["pairingId"])["state"] == "approved", "approved")
        assert lomi.pairing(status["pairingId"])["families"] == ["browser"]
        names = {tool.name for tool in (await agent.session.list_tools()).tools}
        assert "lomi_browser_click" in names and "lomi_connect" in names, names
        assert not any(n.startswith(("lomi_terminal_", "lomi_file_", "lomi_git_")) for n in names), names

        window.click_on("#tab-settings")
        row = f'.pairing-row[data-pairing-id="{status["pairingId"]}"]'
        assert window.text_of(f"{row} .pairing-families .family-toggle.on") == "browser"
        window.click_on(f'{row} .family-toggle[data-family="git"]')
        wait_until(lambda: lomi.pairing(status["pairingId"])["families"] == ["git", "browser"], "Git added")
        desktop.screenshot("settings-families.png")
        names = {tool.name for tool in (await agent.session.list_tools()).tools}
        assert "lomi_git_commit" in names and "lomi_terminal_create" not in names, names


def editor_text(window) -> str:
    """The text the person sees in the editor panel, line by line as CodeMirror draws it."""
    return window.script(
        "return Array.from(document.querySelectorAll('.editor-panel .cm-line'))"
        ".map(l => l.textContent).join('\\n')"
    )


def open_files(desktop: Desktop, workspace_id: str) -> None:
    window = desktop.window
    assert window is not None
    # The workspace chosen in the sidebar, then its "Files" view beside its panels.
    window.click_on(f'#sidebar .workspace-item[data-workspace-id="{workspace_id}"]')
    window.wait_for(f'#workspace[data-workspace-id="{workspace_id}"]')
    window.click_on("#workspace-view-files")
    window.wait_for(".workbench .file-tree")


async def test_a_person_and_an_agent_edit_one_document_and_every_keystroke_is_kept(desktop: Desktop, tmp_path: Path):
    """The person opens a file from the tree and types while an agent edits the same
    document: every keystroke is kept, the agent's stale edit gets REVISION_MISMATCH, the
    agent's edits appear in the editor, and Save writes the bytes the person sees."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.rs").write_bytes(b"fn main() {\n}\n")
    desktop.start()
    window = desktop.window
    assert window is not None
    w, token, mcp = one_workspace_agent(desktop, "Editor workspace", "Editing agent", project)
    open_files(desktop, w["workspaceId"])
    window.click_on('.tree-row.file[data-path="main.rs"]')
    window.wait_for(".editor-panel .cm-content")
    wait_until(lambda: editor_text(window) == "fn main() {\n}\n", "the document in the editor")
    async with mcp.session(token=token) as agent:
        await agent.connect(w["workspaceId"])
        opened = await agent.ok("lomi_editor_open", {"workspaceId": w["workspaceId"], "path": "main.rs"})
        doc = opened["documentId"]
        assert opened["bufferRevision"] == "1", dump(opened)
        # The person's cursor at the end of the text (the empty last line), then typing.
        lines = window.find_all(".editor-panel .cm-line")
        window.click(lines[-1])
        typed = "let typed_by_the_person = 42;"
        person = anyio.to_thread.run_sync(window.keys, typed)
        landed, refused = [], 0

        async def agent_edits() -> None:
            nonlocal refused
            for n in range(6):
                now = await agent.ok("lomi_editor_open", {"workspaceId": w["workspaceId"], "path": "main.rs"})
                edit = await agent.call("lomi_editor_edit", {
                    "documentId": doc, "expectedBufferRevision": now["bufferRevision"],
                    "edits": [{"start": 0, "end": 0, "text": f"// agent {n}\n"}],
                })
                if edit.get("status") == "ok":
                    landed.append(n)
                else:
                    assert edit["code"] == "REVISION_MISMATCH", dump(edit)
                    refused += 1
                await anyio.sleep(0.05)

        async with anyio.create_task_group() as group:
            group.start_soon(agent_edits)
            await person
        assert landed, "no agent edit landed"
        stale = await agent.error("lomi_editor_edit", {
            "documentId": doc, "expectedBufferRevision": "1", "edits": [{"start": 0, "end": 0, "text": "stale"}],
        }, "REVISION_MISMATCH")
        assert int(stale["details"]["currentRevision"]) > 1 + len(landed), dump(stale)

        async def broker_text() -> str:
            return (await agent.ok("lomi_editor_open", {"workspaceId": w["workspaceId"], "path": "main.rs"}))["text"]

        end = time.monotonic() + DEADLINE
        while True:
            text = await broker_text()
            shown = editor_text(window)
            if shown == text and typed in text:
                break
            if time.monotonic() > end:
                pytest.fail(f"the window and the document did not agree:\nwindow {shown!r}\nbroker {text!r}")
            await anyio.sleep(0.1)
        assert typed in shown, shown
        for n in landed:
            assert f"// agent {n}\n" in shown, shown
        assert shown.endswith("}\n" + typed), shown
        assert window.script("return document.querySelector('.editor-panel').dataset.dirty") == "true"
        desktop.screenshot("editor-person-and-agent.png")

        window.click_on(".editor-panel .save")
        wait_until(
            lambda: window.script("return document.querySelector('.editor-panel').dataset.dirty") == "false",
            "the save",
        )
        assert (project / "main.rs").read_text() == editor_text(window)
        assert (project / "main.rs").read_text() == await broker_text()
        desktop.screenshot("editor-saved.png")

    # A terminal rewrites the file: the editor says so at once and the person reloads it.
    (project / "main.rs").write_text("fn rewritten() {}\n")
    window.wait_for(".editor-panel .disk-conflict")
    desktop.screenshot("editor-disk-changed.png")
    window.click_on(".disk-conflict .reload")
    wait_until(lambda: editor_text(window) == "fn rewritten() {}\n", "the reloaded text")
    window.wait_gone(".editor-panel .disk-conflict")
    assert window.script("return document.querySelector('.editor-panel').dataset.dirty") == "false"


async def test_an_agents_new_file_shows_in_the_tree_and_the_person_commits_it(desktop: Desktop, tmp_path: Path):
    """An agent writes a file: the tree shows it, the Git view shows its diff, the person
    stages and commits it from the window, and `git log` has the commit."""
    project = tmp_path / "repo"
    project.mkdir()
    git = lambda *args: subprocess.run(  # noqa: E731
        ["git", "-C", str(project), *args], check=True, capture_output=True, text=True
    ).stdout.strip()
    git("init", "-q", "-b", "main")
    git("config", "user.name", "Desktop Person")
    git("config", "user.email", "person@example.invalid")
    (project / "README.md").write_text("# Project\n")
    git("add", "README.md")
    git("commit", "-q", "-m", "First commit")
    desktop.start()
    window = desktop.window
    assert window is not None
    w, token, mcp = one_workspace_agent(desktop, "Git workspace", "Committing agent", project)
    open_files(desktop, w["workspaceId"])
    window.wait_for('.tree-row.file[data-path="README.md"]')
    assert window.find_all('.tree-row[data-path=".git"]', deadline=0.5) == []
    window.wait_for(".git-view .git-list, .git-view .empty")
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(w["workspaceId"]))["retryEpoch"]
        created = await agent.ok("lomi_file_create", {
            "workspaceId": w["workspaceId"], "path": "notes/agent.txt",
            "text": "hello from the agent\nsecond line\n", "createParents": True,
            "retryEpoch": epoch, "requestKey": "create-agent-file",
        })
        assert (await agent.settle(created["operationId"]))["state"] == "succeeded"
    window.click_on('.tree-row.dir[data-path="notes"]')
    window.wait_for('.tree-row.file[data-path="notes/agent.txt"]')
    row = '.git-list.unstaged .git-row[data-path="notes/agent.txt"]'
    window.click_on(f"{row} .git-path")
    wait_until(lambda: "+hello from the agent" in window.text_of(".diff-view"), "the new file's diff")
    desktop.screenshot("files-tree-and-git-diff.png")
    window.click_on(f"{row} .stage")
    window.wait_for('.git-list.staged .git-row[data-path="notes/agent.txt"]')
    # The diff shown follows the file to the staged list.
    wait_until(
        lambda: "+hello from the agent" in window.text_of('.diff-view[data-staged="true"]'),
        "the staged diff",
    )
    assert git("diff", "--cached", "--name-only") == "notes/agent.txt"
    area = window.wait_for(".commit-message")
    window.type(area, "Add the agent's notes")
    window.click_on(".git-view .commit")
    wait_until(lambda: git("log", "-1", "--format=%s") == "Add the agent's notes", "the person's commit")
    assert git("show", "--name-only", "--format=%an", "HEAD").split("\n") == ["Desktop Person", "", "notes/agent.txt"]
    window.wait_for(".git-note")
    wait_until(lambda: window.find_all(".git-list.staged .git-row", deadline=0.2) == [], "the staged list emptied")
    desktop.screenshot("git-after-commit.png")

    # Left for the panels and opened again, the tree is live still: a terminal's new file
    # shows in it and in the Git view.
    window.click_on("#workspace-view-panels")
    window.wait_gone(".workbench")
    open_files(desktop, w["workspaceId"])
    window.wait_for('.tree-row.file[data-path="README.md"]')
    (project / "later.txt").write_text("written by a terminal\n")
    window.wait_for('.tree-row.file[data-path="later.txt"]')
    window.wait_for('.git-list.unstaged .git-row[data-path="later.txt"]')


def groups_in(window, split: str) -> list[str]:
    """The panels of each tab group directly in the split `split`, in order."""
    return window.script(
        "return [...document.querySelectorAll(`.split${arguments[0]} > .tab-group`)].map((g) => g.dataset.groupPanels)",
        split,
    )


def overview_stats(window) -> tuple[int, int, int]:
    """(messages the page received, overview parts the app read, messages it sent)."""
    window.script(
        "window.__TAURI_INTERNALS__.invoke('overview_stats').then((s) => { window.lomiStats = s; });"
        " window.lomiStats = null; return true"
    )
    wait_until(lambda: window.script("return window.lomiStats !== null"), "overview_stats")
    stats = window.script("return window.lomiStats")
    return window.script("return window.lomiWindow.overviewMessages"), stats["reads"], stats["messages"]


async def test_the_person_splits_a_workspace_and_the_agents_layout_updates_compare_revisions(
    desktop: Desktop, tmp_path: Path
):
    """The person splits two panels of one tab group side by side in the window: the layout is
    the workspace's, so the revision moves; the agent's update from the old revision is refused,
    its fresh one rearranges the window at once. Meanwhile, with nothing happening, the window
    is sent nothing and nothing is read for it (no periodic rebuild of the overview)."""
    desktop.start()
    window = desktop.window
    assert window is not None
    a, token, mcp = one_workspace_agent(desktop, "Layout workspace", "Layout agent", tmp_path / "project-a")
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        panels = []
        for n in range(2):
            revision = (await agent.ok("lomi_panel_list", {"workspaceId": a["workspaceId"]}))["domainRevision"]
            created = await agent.ok("lomi_terminal_create", {
                "workspaceId": a["workspaceId"], "cwdRelative": "", "title": f"Shell {n + 1}",
                "expectedRevision": revision, "retryEpoch": epoch, "requestKey": f"term-{n}",
            })
            panels.append((await agent.settle(created["operationId"]))["result"]["panelId"])
        one, two = panels
        # Both in one tab group; the first shows.
        window.wait_for(f'.tab-group[data-group-panels="{one} {two}"]')
        window.wait_for(f'.terminal-panel[data-panel-id="{one}"] .xterm-rows')
        desktop.screenshot("workspace-tabs.png")
        listed = (await agent.ok("lomi_workspace_list", {}))["workspaces"][0]
        before = listed["domainRevision"]
        assert listed["layout"] == {"tabs": {"panels": [one, two]}}, dump(listed)

        # The person splits the shown panel out to the right.
        window.click_on(f'.tab-group[data-group-panels="{one} {two}"] .split-right')
        window.wait_for(".split.split-row")
        assert groups_in(window, ".split-row") == [two, one]
        listed = (await agent.ok("lomi_workspace_list", {}))["workspaces"][0]
        assert int(listed["domainRevision"]) == int(before) + 1, dump(listed)
        assert listed["layout"] == {"split": {"direction": "row", "children": [
            {"tabs": {"panels": [two]}}, {"tabs": {"panels": [one]}}]}}, dump(listed)
        assert listed["panelOrder"] == [two, one], dump(listed)
        desktop.screenshot("workspace-split.png")

        # The agent's change from the revision before the person's is refused.
        stacked = {"split": {"direction": "column", "children": [
            {"tabs": {"panels": [one]}}, {"tabs": {"panels": [two]}}]}}
        await agent.error("lomi_workspace_update", {
            "workspaceId": a["workspaceId"], "expectedRevision": before, "retryEpoch": epoch,
            "requestKey": "stack-stale", "change": {"layout": {"root": stacked}},
        }, "REVISION_MISMATCH")
        assert window.find_all(".split.split-row"), "the person's layout stays"
        # A layout that leaves a panel out is refused with what to fix.
        missing = await agent.error("lomi_workspace_update", {
            "workspaceId": a["workspaceId"], "expectedRevision": listed["domainRevision"], "retryEpoch": epoch,
            "requestKey": "stack-missing", "change": {"layout": {"root": {"tabs": {"panels": [one]}}}},
        }, "INVALID_ARGUMENT")
        assert f"leaves out panel {two}" in missing["message"], dump(missing)

        # From the fresh revision it goes through and the window shows it at once.
        answer = await agent.ok("lomi_workspace_update", {
            "workspaceId": a["workspaceId"], "expectedRevision": listed["domainRevision"], "retryEpoch": epoch,
            "requestKey": "stack-fresh", "change": {"layout": {"root": stacked}},
        })
        assert (await agent.settle(answer["operationId"]))["state"] == "succeeded"
        window.wait_for(".split.split-column")
        assert groups_in(window, ".split-column") == [one, two]
        window.wait_for(f'.terminal-panel[data-panel-id="{two}"] .xterm-rows')
        desktop.screenshot("workspace-agent-layout.png")

        # The operation view: the agent's layout change, its receipt opened from its row.
        window.click_on(f'#feed tr.state-succeeded[data-operation-id="{answer["operationId"]}"] td code')
        window.wait_for(f'#receipt[data-receipt-id="{answer["operationId"]}"]')
        assert "complete" in window.text_of("#receipt .effect-state")
        timeline = window.script("return [...document.querySelectorAll('#receipt .timeline li')].map((li) => li.dataset.state)")
        assert timeline[-1] == "succeeded" and len(timeline) >= 2, timeline
        desktop.screenshot("operations-receipt.png")

    # Nothing happens now: no message reaches the page and nothing is read for it. The agent's
    # session ending still changes the overview, later on a busy machine: first the figures
    # hold still for 2 s, then they must stay so for 5 s more.
    first = overview_stats(window)
    end = time.monotonic() + DEADLINE
    while True:
        time.sleep(2.0)
        now = overview_stats(window)
        if now == first:
            break
        assert time.monotonic() < end, f"the overview kept changing for {DEADLINE}s: {first} → {now}"
        first = now
    time.sleep(5.0)
    assert overview_stats(window) == first, "the overview was read or sent while nothing changed"


def e2e_module(name: str):
    """A helper module of the e2e suite (tests/e2e/NAME.py), loaded under another name."""
    spec = importlib.util.spec_from_file_location(f"lomi_e2e_{name}", Path(__file__).parent.parent / "e2e" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_a_client_signing_in_with_its_metadata_document_is_approved_in_the_window(
    desktop: Desktop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The MCP Python SDK's OAuth client, known by its client ID metadata document (served over
    HTTPS on 127.0.0.1 with a test authority the app trusts through LOMI_CIMD_TEST_CA): Lomi's
    401 starts its sign-in, the window's dialog shows the document's name, the redirect host
    and the document's URL, the person approves by clicking, and the client lists its tools."""
    import re
    from urllib.parse import parse_qs, urlparse

    import httpx
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider, TokenStorage
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    https = e2e_module("https_documents")
    ca, cert, key = https.make_authority(tmp_path / "ca")
    documents = https.DocumentServer(cert, key)
    try:
        monkeypatch.setenv("LOMI_CIMD_TEST_CA", str(ca))
        desktop.start()
        lomi = desktop.lomi
        window = desktop.window
        assert window is not None
        a = lomi.add_workspace("Sign-in workspace", tmp_path / "project-s")
        url = documents.url("/oauth/client.json")
        redirect = "http://127.0.0.1:33419/callback"
        documents.serve("/oauth/client.json", {
            "client_id": url, "client_name": "Window sign-in client", "redirect_uris": [redirect],
            "token_endpoint_auth_method": "none",
        })

        class Storage(TokenStorage):
            tokens = client = None

            async def get_tokens(self):
                return self.tokens

            async def set_tokens(self, tokens) -> None:
                self.tokens = tokens

            async def get_client_info(self):
                return self.client

            async def set_client_info(self, client_info) -> None:
                self.client = client_info

        asked: list[str] = []

        async def redirect_handler(authorize: str) -> None:
            asked.append(authorize)

        async def callback_handler() -> AuthorizationCodeResult:
            base = lomi.url.removesuffix("/mcp")
            async with httpx.AsyncClient() as browser:
                page = await browser.get(asked[-1])
                assert page.status_code == 200, page.text
                request = re.search(r'data-request="([0-9a-f]+)"', page.text).group(1)
                window.wait_for("#approval-dialog")
                assert window.text_of("#approval-dialog .client-name") == "Window sign-in client"
                assert window.text_of("#approval-dialog .redirect-host") == "127.0.0.1"
                assert window.text_of("#approval-dialog .metadata-source") == url
                window.click_on(f'#approval-dialog input[data-workspace-id="{a["workspaceId"]}"]')
                desktop.screenshot("approval-sign-in.png")
                window.click_on("#approve")
                window.wait_gone("#approval-dialog")
                back = await browser.get(f"{base}/authorize/continue?request={request}")
            assert back.status_code == 302, back.text
            query = {k: v[0] for k, v in parse_qs(urlparse(back.headers["location"]).query).items()}
            return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

        provider = OAuthClientProvider(
            server_url=lomi.url,
            client_metadata=OAuthClientMetadata(
                client_name="not shown", redirect_uris=[redirect], grant_types=["authorization_code", "refresh_token"],
                response_types=["code"], token_endpoint_auth_method="none",
            ),
            storage=Storage(),
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=url,
        )
        http = create_mcp_http_client(auth=provider)
        with anyio.fail_after(DEADLINE * 2):
            async with Client(streamable_http_client(lomi.url, http_client=http), mode="legacy") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
        assert "lomi_terminal_create" in names and "lomi_connect" in names, names
        assert len(asked) == 1 and documents.requests == ["/oauth/client.json"], (asked, documents.requests)
        (pairing,) = lomi.cli("pairing", "list")
        assert pairing["state"] == "approved" and pairing["grants"] == [a["workspaceId"]], dump(pairing)
    finally:
        documents.close()


async def test_approve_and_always_allow_pause_and_resume_and_the_activity_view(desktop: Desktop, tmp_path: Path):
    """Issue 33 in the window: an agent's file write waits; the dialog suggests the folder's
    rule, refuses a malformed pattern in place (the write keeps waiting), and "Approve and always
    allow" keeps the rule, which Settings → Rules lists and which lets the agent's next write in
    that folder run without asking. "Pause agents" in the top bar refuses the agent's change
    (PAUSED) and shows it; "Resume agents" lets it run. The Activity tab shows the agent."""
    desktop.start()
    lomi = desktop.lomi
    window = desktop.window
    assert window is not None
    project = tmp_path / "project-r"
    (project / "docs" / "guide").mkdir(parents=True)
    (project / "docs" / "guide" / "a.md").write_bytes(b"a\n")
    (project / "docs" / "guide" / "b.md").write_bytes(b"b\n")
    a, token, mcp = one_workspace_agent(desktop, "Rules workspace", "Rules agent", project)
    assert lomi.run("confirm", "lomi_file_write").returncode == 0
    ws = a["workspaceId"]

    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(ws))["retryEpoch"]

        def write(path: str, before: bytes, text: str, key: str) -> dict:
            return {
                "workspaceId": ws, "path": path, "expectedDiskRevision": sha(before), "text": text,
                "retryEpoch": epoch, "requestKey": key,
            }

        answer = await agent.ok("lomi_file_write", write("docs/guide/a.md", b"a\n", "a2\n", "w-a"))
        assert answer["state"] == "awaiting_user", dump(answer)
        dialog = f'#decision-dialog[data-operation-id="{answer["operationId"]}"]'
        window.wait_for(dialog)
        rule = window.text_of(f"{dialog} #remember-rule")
        assert rule == "“Overwrite files” on paths docs/guide/**, for Rules agent, in Rules workspace", rule

        # A malformed pattern: the broker's refusal with an example shows in the dialog, and
        # the write keeps waiting.
        field = window.wait_for(f"{dialog} #remember-pattern")
        window.cmd("POST", f"/element/{field}/clear")
        window.type(field, "/etc/**")
        wait_until(lambda: "/etc/**" in window.text_of(f"{dialog} #remember-rule"), "the edited pattern in words")
        window.click_on(f"{dialog} #decision-approve-always")
        refusal = window.text_of(f"{dialog} #remember-error")
        assert "relative to the project" in refusal and "docs/**" in refusal, refusal
        assert lomi.cli("operation", "show", answer["operationId"])["state"] == "awaiting_user"
        assert lomi.cli("rule", "list")["rules"] == []

        # The suggested folder again, and approve and always allow.
        window.cmd("POST", f"/element/{field}/clear")
        window.type(field, "docs/guide/**")
        wait_until(lambda: "docs/guide/**" in window.text_of(f"{dialog} #remember-rule"), "the pattern typed back")
        desktop.screenshot("decision-remember.png")
        window.click_on(f"{dialog} #decision-approve-always")
        settled = await agent.settle(answer["operationId"])
        assert settled["state"] == "succeeded", dump(settled)
        window.wait_gone(dialog)
        kept = lomi.cli("rule", "list")["rules"]
        assert len(kept) == 1 and kept[0]["verdict"] == "allow", dump(kept)
        assert kept[0]["subject"] == {"kind": "paths", "pattern": "docs/guide/**"}, dump(kept)
        assert kept[0]["tools"] == "lomi_file_write" and kept[0]["workspace"] == ws, dump(kept)

        # The next write in that folder runs without asking; the rule decided it.
        second = await agent.ok("lomi_file_write", write("docs/guide/b.md", b"b\n", "b2\n", "w-b"))
        done = await agent.settle(second["operationId"])
        assert done["state"] == "succeeded", dump(done)
        assert (project / "docs" / "guide" / "b.md").read_bytes() == b"b2\n"
        assert not window.find_all("#decision-dialog", deadline=0.5), "the rule's write did not ask"

        # Settings → Rules lists the rule in words with what it decided.
        window.click_on("#tab-settings")
        row = f'#settings-rules .rule-row[data-rule-id="{kept[0]["ruleId"]}"]'
        words = window.text_of(f"{row} .rule-words")
        assert words == "Allow “Overwrite files” on paths docs/guide/**, for Rules agent, in Rules workspace", words
        wait_until(lambda: window.text_of(f"{row} .rule-use") == "1 operation", "the rule's use counted")
        window.script("document.getElementById('settings-rules').scrollIntoView(); return true")
        desktop.screenshot("settings-rules.png")

        # Pause: shown in the top bar; the agent's change is refused at once; resume.
        assert window.text_of("#pause-agents") == "Pause agents"
        window.click_on("#pause-agents")
        window.wait_for("#paused-badge")
        wait_until(lambda: window.text_of("#pause-agents") == "Resume agents", "the control offering Resume")
        assert lomi.cli("rule", "list")["paused"] is True
        desktop.screenshot("paused.png")
        refused = await agent.error("lomi_file_write", write("docs/guide/a.md", b"a2\n", "a3\n", "w-paused"), "PAUSED")
        assert "resume" in dump(refused).lower(), dump(refused)
        assert (project / "docs" / "guide" / "a.md").read_bytes() == b"a2\n"
        window.click_on("#pause-agents")
        window.wait_gone("#paused-badge")
        wait_until(lambda: window.text_of("#pause-agents") == "Pause agents", "the control offering Pause")
        resumed = await agent.ok("lomi_file_write", write("docs/guide/a.md", b"a2\n", "a3\n", "w-resumed"))
        assert (await agent.settle(resumed["operationId"]))["state"] == "succeeded"

        # Activity: the agent's calls, operations and what decided them.
        window.click_on("#tab-activity")
        card = f'.agent-activity[data-pairing-id="{lomi.cli("pairing", "list")[0]["pairingId"]}"]'
        wait_until(lambda: "3 succeeded" in window.text_of(f"{card} .operations dd"), "the agent's operations")
        decided = window.text_of(f"{card} .decided-by dd")
        assert "by you" in decided and "docs/guide/**" in decided, decided
        assert window.find_all(f'{card} .tool-row[data-tool-name="lomi_file_write"]')
        # The refused change counts under its own code.
        assert window.text_of(f"{card} .errors dd") == "1 PAUSED", window.text_of(f"{card} .errors dd")
        desktop.screenshot("activity.png")
