"""Fixtures for the desktop app's end-to-end test: the real `lomi-desktop` window under Xvfb,
started and driven by `tauri-driver` (which runs WebKitWebDriver), on a fresh data dir; the
person's `lomi` commands and the MCP Python SDK from tests/e2e.

Screenshots go to `$CARGO_TARGET_DIR/desktop-artifacts/` (or LOMI_DESKTOP_ARTIFACTS).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _pytest.runner import runtestprotocol

from webdriver import Session, WebDriverError

# The e2e suite's helpers (the person's CLI, the MCP client), loaded under another name.
_spec = importlib.util.spec_from_file_location("lomi_e2e_support", Path(__file__).parent.parent / "e2e" / "conftest.py")
assert _spec and _spec.loader
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)
# test_android.py (loaded for its adb server and device fixture), test_browser.py (for its
# web site) and effects_scenario.py import these from `conftest`.
LOMI_BIN = support.LOMI_BIN
WAIT_DEADLINE = support.WAIT_DEADLINE
Mcp = support.Mcp
dump = support.dump
live_processes = support.live_processes

TARGET = Path(os.environ.get("CARGO_TARGET_DIR", "/root/.cache/lomi/target"))
DESKTOP_BIN = os.environ.get("LOMI_DESKTOP_BIN", str(TARGET / "debug" / "lomi-desktop"))
TAURI_DRIVER = os.environ.get("TAURI_DRIVER", str(Path.home() / ".cache/lomi/tauri-driver/bin/tauri-driver"))
ARTIFACTS = Path(os.environ.get("LOMI_DESKTOP_ARTIFACTS", str(TARGET / "desktop-artifacts")))

START_DEADLINE = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_gone(pid: int) -> bool:
    """True once `pid` exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True  # gone, or reaped between open and read
    return stat[stat.rfind(")") + 2] in ("Z", "X", "x")


class Desktop:
    """The app on one data dir, its window (a WebDriver session) and the person's CLI."""

    def __init__(self, tmp: Path, transcript: support.Transcript) -> None:
        self.data_dir = tmp / "data"
        self.logs = tmp / "logs"
        self.data_dir.mkdir()
        self.logs.mkdir()
        self.lomi = support.Lomi(self.data_dir, self.logs, transcript)
        self.driver: subprocess.Popen[bytes] | None = None
        self.window: Session | None = None
        self.pid: int | None = None

    def start(self, *extra: str) -> dict[str, Any]:
        assert Path(DESKTOP_BIN).is_file(), f"no lomi-desktop at {DESKTOP_BIN}: run scripts/test (build_desktop)"
        assert Path(TAURI_DRIVER).is_file(), f"no tauri-driver at {TAURI_DRIVER}: run scripts/test (ensure_tauri_driver)"
        assert os.environ.get("DISPLAY"), "the desktop test needs an X display: run it under xvfb-run"
        port, native = free_port(), free_port()
        out = self.logs / "driver.stdout"
        err = self.logs / "driver.stderr"
        self.lomi.log_files += [out, err]
        env = dict(os.environ, LOMI_LOG="info", RUST_BACKTRACE="1", NO_COLOR="1")
        with out.open("wb") as stdout, err.open("wb") as stderr:
            self.driver = subprocess.Popen(
                [TAURI_DRIVER, "--port", str(port), "--native-port", str(native)],
                stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, env=env,
            )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_DEADLINE
        while True:
            try:
                httpx.get(f"{base}/status", timeout=2.0)
                break
            except httpx.HTTPError:
                if self.driver.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"tauri-driver did not start\n{self.lomi.logs()}")
                time.sleep(0.1)
        args = ["--data-dir", str(self.data_dir), "--http", "127.0.0.1:0", *extra]
        self.window = Session(base, DESKTOP_BIN, args)
        while True:
            try:
                record = json.loads((self.data_dir / "broker.json").read_text())
                break
            except (FileNotFoundError, json.JSONDecodeError):
                if time.monotonic() > deadline:
                    pytest.fail(f"the app wrote no broker.json\n{self.lomi.logs()}")
                time.sleep(0.05)
        self.lomi.broker = record
        self.pid = record["pid"]
        return record

    def screenshot(self, name: str) -> Path:
        assert self.window is not None
        path = ARTIFACTS / name
        png = self.window.screenshot(path)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000, f"{name} is not a real screenshot"
        return path

    def notifications(self) -> list[str]:
        """The native notifications the app raised so far ("title: body"), from its log."""
        log = (self.logs / "driver.stderr").read_text(errors="replace")
        return [line.split("desktop notification: ", 1)[1] for line in log.splitlines() if "desktop notification: " in line]

    def stop(self) -> None:
        if self.window is not None:
            self.window.end()
            self.window = None
        if self.pid is not None and not process_gone(self.pid):
            os.kill(self.pid, signal.SIGKILL)
        if self.driver is not None and self.driver.poll() is None:
            self.driver.kill()
            self.driver.wait(timeout=10)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def transcript(request: pytest.FixtureRequest) -> support.Transcript:
    t = support.Transcript()
    request.node.lomi_transcript = t
    return t


@pytest.fixture
def desktop(tmp_path: Path, transcript: support.Transcript, request: pytest.FixtureRequest):
    app = Desktop(tmp_path, transcript)
    request.node.lomi_instance = app.lomi
    try:
        yield app
    finally:
        app.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    report.lomi_session_lost = call.excinfo is not None and session_lost(call.excinfo.value)
    transcript = getattr(item, "lomi_transcript", None)
    if transcript is not None:
        report.sections.append(("lomi transcript (CLI and MCP)", transcript.text()))
    instance = getattr(item, "lomi_instance", None)
    if instance is not None:
        report.sections.append(("lomi-desktop and tauri-driver logs", instance.logs()))


# WebKit ends a WebDriver session itself ("session deleted because of page crash or hang") when
# one of its own processes is lost: its network process, which it terminates when that process
# does not answer within a few seconds (a machine starved by the suites running beside this
# one), or the window's web process. The first is WebKit's, not Lomi's: such a test runs once
# more, on a new app, and says so. The second is the window crashing, which the app logs
# ("the window's web process ended", lomi-desktop's watch::renderer): that fails at once.
SESSION_LOST = "page crash or hang"
WINDOW_CRASHED = "the window's web process ended"


def session_lost(error: BaseException) -> bool:
    """The error is WebDriver answering that WebKit ended the session (alone, or as the one
    error of a task group)."""
    if isinstance(error, BaseExceptionGroup):
        return len(error.exceptions) == 1 and session_lost(error.exceptions[0])
    return isinstance(error, WebDriverError) and SESSION_LOST in str(error)


def lost_by_webkit(item: pytest.Item, reports: list[pytest.TestReport]) -> str | None:
    """The first failure's text when every failure of this run is WebKit ending the session
    while the window's page lived; None otherwise."""
    failed = [r for r in reports if r.failed]
    if not failed or not all(getattr(r, "lomi_session_lost", False) for r in failed):
        return None
    instance = getattr(item, "lomi_instance", None)
    if instance is not None:
        # WebDriver may report the lost session before the app has logged why.
        time.sleep(2.0)
        if WINDOW_CRASHED in instance.logs():
            return None
    return str(failed[0].longrepr)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool:
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    first = lost_by_webkit(item, reports)
    if first is not None:
        item.warn(pytest.PytestWarning(
            "WebKit ended the window's WebDriver session while the window's page lived (it does "
            "so when one of its own processes is lost); the test ran again on a new app. The "
            "first run:\n"
            + first[-3000:]
        ))
        item._initrequest()  # fresh fixtures for the second run
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
