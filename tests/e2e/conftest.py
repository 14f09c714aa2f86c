"""Fixtures for Lomi's end-to-end tests: a real `lomi serve --headless` per test, the person's
`lomi` commands against it, and a third-party MCP client (the MCP Python SDK) talking to it.

Every failing test gets the serve logs, the CLI transcript and the MCP transcript appended to
its report, so a failure can be read without re-running it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mcp_types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

LOMI_BIN = os.environ.get("LOMI_BIN", "/root/.cache/lomi/target/debug/lomi")

# Bounds for everything that waits: nothing in this suite sleeps for a fixed time. Each wait
# ends at the event it waits for; these outer limits only end a wait that would never end, so
# they are far above what a slow, busy two-core machine needs (a quick machine never nears
# them), and a failure says what was awaited.
START_DEADLINE = 60.0
STOP_DEADLINE = 30.0
# Above the longest a tool waits on its own (timeoutMs up to 60,000), so a tool's own
# "timed out" answer is what a test sees.
CALL_DEADLINE = 90.0
CLI_DEADLINE = 60.0
# Any other event a test waits for (a state, a listed item, a feed entry).
WAIT_DEADLINE = 60.0
# An operation settling: it may run as long as it moves (its receipt's state, updatedAt or
# result changes: a capture set's result counts capture after capture), and fails after this
# long unmoved.
SETTLE_QUIET = 60.0
# ... up to this long in all.
SETTLE_DEADLINE = 600.0

SETTLED = {"succeeded", "failed", "cancelled", "outcome_unknown"}
# What a standard MCP client accepts in one message (the SDK drops an event over 1 MiB).
MAX_ANSWER_BYTES = 1_000_000
# Every serve this suite starts carries `LOMI_E2E_SERVE=<data dir>#<start>` in its environment,
# and so does everything it starts (shells, Chromium, Git): what a killed serve left running is
# found by that mark.
SERVE_MARK = "LOMI_E2E_SERVE"


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


class Transcript:
    """What a test did, in order: CLI commands and MCP calls with their answers."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, title: str, body: Any) -> None:
        text = body if isinstance(body, str) else dump(body)
        self.lines.append(f"--- {title}\n{text}")

    def text(self) -> str:
        return "\n".join(self.lines[-60:]) or "(empty)"



def live_processes() -> Iterator[tuple[int, str, list[str]]]:
    """Each live (not zombie) process: its pid, its name and the fields of /proc/PID/stat after
    the name (state, ppid, pgrp, session, …)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields and fields[0] not in ("Z", "X", "x"):
            yield int(entry), name, fields


class Movement:
    """The outer limit of a wait on something that may take long but shows it is moving (an
    operation's receipt, a terminal's output cursor): `seen(mark)` fails the test when `mark` has
    not changed for `quiet` seconds, or when the wait has lasted `limit` seconds in all, naming
    what was awaited and the last thing seen."""

    def __init__(
        self, what: str, more: Callable[[], str] | None = None,
        quiet: float = SETTLE_QUIET, limit: float = SETTLE_DEADLINE,
    ) -> None:
        self.what = what
        self.more = more
        self.quiet = quiet
        self.started = self.moved = time.monotonic()
        self.limit = limit
        self.mark: Any = object()

    def seen(self, mark: Any, shown: str = "") -> None:
        now = time.monotonic()
        if mark != self.mark:
            self.mark, self.moved = mark, now
        still = now - self.moved
        if still > self.quiet or now - self.started > self.limit:
            extra = f"\n{self.more()}" if self.more else ""
            pytest.fail(
                f"waited {now - self.started:.0f}s for {self.what}; nothing moved for {still:.0f}s"
                f" (limits: {self.quiet:.0f}s unmoved, {self.limit:.0f}s in all); last seen:\n{shown}{extra}"
            )


def receipt_mark(op: dict[str, Any]) -> tuple[Any, ...]:
    """What changes on a receipt while its operation moves (a capture set's result counts its
    captures): the mark a `Movement` watches."""
    return op["state"], op["updatedAt"], op["result"]


class Lomi:
    """One data dir and the `lomi serve --headless` processes started on it, one at a time."""

    def __init__(self, data_dir: Path, log_dir: Path, transcript: Transcript) -> None:
        self.data_dir = data_dir
        self.log_dir = log_dir
        self.transcript = transcript
        self.proc: subprocess.Popen[bytes] | None = None
        self.broker: dict[str, Any] = {}
        self.starts = 0
        self.stop_took = float("nan")
        self.log_files: list[Path] = []

    # ---- the serve process ----

    @property
    def url(self) -> str:
        return self.broker["url"]

    @property
    def port(self) -> int:
        return int(self.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])

    @property
    def broker_file(self) -> Path:
        return self.data_dir / "broker.json"

    def start(self, http: str = "127.0.0.1:0", env: dict[str, str] | None = None) -> dict[str, Any]:
        """Starts serve (with `env` over the test's environment) and waits until broker.json
        names this very process."""
        assert self.proc is None or self.proc.poll() is not None, "serve already running"
        self.starts += 1
        out = self.log_dir / f"serve-{self.starts}.stdout"
        err = self.log_dir / f"serve-{self.starts}.stderr"
        self.log_files += [out, err]
        env = dict(
            os.environ, LOMI_LOG=os.environ.get("LOMI_LOG", "info"), RUST_BACKTRACE="1", NO_COLOR="1", **(env or {})
        )
        env[SERVE_MARK] = self.mark(self.starts)
        with out.open("wb") as stdout, err.open("wb") as stderr:
            self.proc = subprocess.Popen(
                [LOMI_BIN, "serve", "--headless", "--http", http, "--data-dir", str(self.data_dir)],
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        deadline = time.monotonic() + START_DEADLINE
        while True:
            # After a SIGKILL the old broker.json is still there: wait for ours (same pid).
            record = self._read_broker_file()
            if record and record.get("pid") == self.proc.pid:
                self.broker = record
                self.transcript.add(f"serve #{self.starts} ready (pid {self.proc.pid})", record)
                return record
            code = self.proc.poll()
            if code is not None:
                holders = dump(self.lock_holders())
                pytest.fail(f"lomi serve exited with {code} before it was ready\n{self.logs()}\nstore.lock held by {holders}")
            if time.monotonic() > deadline:
                pytest.fail(f"lomi serve wrote no broker.json in {START_DEADLINE}s\n{self.logs()}")
            time.sleep(0.02)

    def _read_broker_file(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.broker_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int:
        """SIGTERM and wait: the clean stop. Returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"lomi serve ignored SIGTERM for {STOP_DEADLINE}s\n{self.logs()}")
        self.transcript.add("serve stopped (SIGTERM)", f"exit code {code}")
        return code

    def kill(self) -> None:
        """SIGKILL by pid and reap: a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_DEADLINE)
            self.transcript.add("serve killed (SIGKILL)", f"pid {self.proc.pid}")

    def restart(self, how: str) -> dict[str, Any]:
        """Stops serve with SIGKILL or SIGTERM and starts it again on the same data dir; how
        long the stop took is kept in `stop_took`."""
        began = time.monotonic()
        if how == "SIGKILL":
            self.kill()
        elif how == "SIGTERM":
            assert self.stop() == 0, f"serve did not stop cleanly\n{self.logs()}"
            assert not self.broker_file.exists(), "a clean stop removes broker.json"
        else:
            raise ValueError(how)
        self.stop_took = time.monotonic() - began
        previous = self.broker.get("brokerInstanceId")
        record = self.start()
        assert record["brokerInstanceId"] != previous, "every start gets a fresh brokerInstanceId"
        return record

    def mark(self, start: int) -> str:
        return f"{self.data_dir}#{start}"

    def leftovers(self) -> dict[int, str]:
        """Live processes (pid → command line) started by an earlier serve on this data dir
        than the one running now: what a killed serve left behind."""
        earlier = {self.mark(start).encode() for start in range(1, self.starts)}
        found = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            marks = {e.split(b"=", 1)[1] for e in environ if e.startswith(SERVE_MARK.encode() + b"=")}
            state = stat[stat.rfind(")") + 2 :].split()[0]
            if marks & earlier and state not in ("Z", "X", "x"):
                found[int(entry)] = cmdline.decode(errors="replace").strip()
        return found

    def lock_holders(self) -> dict[int, str]:
        """Processes (pid → command line) with the data dir's store.lock open."""
        lock = str(self.data_dir / "store.lock")
        found = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                fds = os.listdir(f"/proc/{entry}/fd")
                if any(os.readlink(f"/proc/{entry}/fd/{fd}") == lock for fd in fds):
                    found[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
        return found

    def integrity(self) -> str:
        """SQLite's `PRAGMA integrity_check` of the store, read-only ("ok" when sound)."""
        return integrity(self.data_dir)

    def logs(self) -> str:
        parts = []
        for path in self.log_files:
            try:
                text = path.read_text(errors="replace")
            except FileNotFoundError:
                text = "(missing)"
            parts.append(f"=== {path.name} ===\n{text[-20_000:]}")
        return "\n".join(parts) or "(serve never started)"

    # ---- the person's commands ----

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Runs `lomi --data-dir D ARGS…` and records it; never raises on a non-zero exit."""
        command = [LOMI_BIN, "--data-dir", str(self.data_dir), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=CLI_DEADLINE)
        self.transcript.add(
            "$ lomi " + " ".join(args),
            f"exit {done.returncode}\nstdout: {done.stdout.strip()}\nstderr: {done.stderr.strip()}",
        )
        return done

    def cli(self, *args: str, json_flag: bool = True) -> Any:
        """Runs a person's command (with --json) that must succeed; returns its parsed JSON."""
        done = self.run(*args, *(["--json"] if json_flag else []))
        assert done.returncode == 0, (
            f"`lomi {' '.join(args)}` failed with {done.returncode}\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\n{self.logs()}"
        )
        try:
            return json.loads(done.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"`lomi {' '.join(args)}` printed no JSON:\n{done.stdout}")

    def cli_fails(self, *args: str) -> str:
        """Runs a command that must fail; returns its stderr."""
        done = self.run(*args)
        assert done.returncode != 0, f"`lomi {' '.join(args)}` should have failed:\n{done.stdout}"
        return done.stderr

    async def acli(self, *args: str, json_flag: bool = True) -> Any:
        """`cli` off the event loop, for use while MCP calls are in flight."""
        return await anyio.to_thread.run_sync(lambda: self.cli(*args, json_flag=json_flag))

    # ---- shortcuts for what most tests need ----

    def add_workspace(self, name: str, project: Path) -> dict[str, Any]:
        project.mkdir(parents=True, exist_ok=True)
        return self.cli("workspace", "add", "--name", name, "--project", str(project))

    def workspace(self, workspace_id: str) -> dict[str, Any]:
        for w in self.cli("workspace", "list"):
            if w["workspaceId"] == workspace_id:
                return w
        pytest.fail(f"no workspace {workspace_id} in `lomi workspace list`")

    def pairing(self, pairing_id: str) -> dict[str, Any]:
        for p in self.cli("pairing", "list"):
            if p["pairingId"] == pairing_id:
                return p
        pytest.fail(f"no pairing {pairing_id} in `lomi pairing list`")

    def bearer(self) -> dict[str, str]:
        """The Authorization header of an approved pairing with every tool family (made once
        per serve data dir): what a raw-HTTP test shows, since Lomi answers a request without
        a token 401 (the client is to sign in)."""
        if not getattr(self, "_bearer", None):
            self._bearer = self.create_token(name="raw-http")["token"]
        return {"Authorization": f"Bearer {self._bearer}"}

    def allow_session_pairing(self) -> None:
        """The person's choice that a client without a token may pair for its MCP session
        (pending until approved), instead of being answered 401 to sign in: for the tests of
        that pending pairing."""
        updated = self.cli("settings", "set", "network", "sessionPairing", "true")
        assert updated["values"]["sessionPairing"] is True, dump(updated)

    def create_token(self, *workspaces: str, name: str = "e2e-token") -> dict[str, Any]:
        args = ["pairing", "create", "--name", name]
        for w in workspaces:
            args += ["--workspace", w]
        return self.cli(*args)

    def wait_operation(self, operation_id: str, state: str) -> dict[str, Any]:
        """Polls `lomi operation show` until the receipt reaches `state`, for as long as it moves."""
        moves = Movement(f"operation {operation_id} to reach {state}", self.logs)
        while True:
            op = self.cli("operation", "show", operation_id)
            if op["state"] == state:
                return op
            moves.seen(receipt_mark(op), dump(op))
            time.sleep(0.02)

    def wait_operation_for_key(self, request_key: str, state: str) -> dict[str, Any]:
        """Polls `lomi operation list` for the receipt with this request key in `state`."""
        deadline = time.monotonic() + WAIT_DEADLINE
        while True:
            ops = [o for o in self.cli("operation", "list") if o["requestKey"] == request_key]
            if ops and ops[0]["state"] == state:
                return ops[0]
            if time.monotonic() > deadline:
                pytest.fail(f"no receipt for {request_key} in {state}:\n{dump(ops)}\n{self.logs()}")
            time.sleep(0.02)


@contextlib.contextmanager
def small_disk(path: Path, size: str = "16m"):
    """Mounts a small tmpfs on `path` (an existing, empty folder; root only) for the block."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill_disk(disk: Path) -> Path:
    """Writes a filler file until the disk is full; returns it (unlink it to free the room)."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError:
            pass
        # The last bytes that fit.
        try:
            while True:
                out.write(b"\0" * 512)
        except OSError:
            pass
    return filler


def integrity(data_dir: Path) -> str:
    """SQLite's `PRAGMA integrity_check` of the store in `data_dir`, opened read-only."""
    connection = sqlite3.connect(f"file:{data_dir / 'lomi.sqlite3'}?mode=ro", uri=True)
    try:
        return connection.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        connection.close()


class Envelope(dict):
    """structuredContent of one call, with the CallToolResult it came in."""

    raw: mcp_types.CallToolResult


class Mcp:
    """One MCP session (the SDK's ClientSession over Streamable HTTP) with Lomi's conventions."""

    def __init__(self, session: ClientSession, transcript: Transcript, label: str) -> None:
        self.session = session
        self.transcript = transcript
        self.label = label

    async def raw(
        self, tool: str, arguments: dict[str, Any] | None = None, deadline: float = CALL_DEADLINE
    ) -> mcp_types.CallToolResult:
        """tools/call as the SDK returns it, within `deadline` seconds."""
        with anyio.fail_after(deadline):
            result = await self.session.call_tool(tool, arguments or {})
        assert isinstance(result, mcp_types.CallToolResult), result
        self.transcript.add(
            f"[{self.label}] {tool} {json.dumps(arguments or {})}",
            result.model_dump(by_alias=True, exclude_none=True, mode="json"),
        )
        return result

    async def call(
        self, tool: str, arguments: dict[str, Any] | None = None, deadline: float = CALL_DEADLINE
    ) -> Envelope:
        """tools/call → structuredContent, after checking the envelope's invariants."""
        result = await self.raw(tool, arguments, deadline)
        envelope = Envelope(result.structured_content or {})
        envelope.raw = result
        shown = dump(result.model_dump(by_alias=True, exclude_none=True, mode="json"))
        assert envelope.get("controlApiVersion") == "1.0", f"{tool}: bad envelope\n{shown}"
        assert envelope.get("status") in ("ok", "error"), f"{tool}: bad envelope\n{shown}"
        assert result.is_error is (envelope["status"] == "error"), (
            f"{tool}: isError must be true exactly for error envelopes\n{shown}"
        )
        texts = [c for c in result.content if c.type == "text" and c.text]
        assert texts, f"{tool}: the result has no text block\n{shown}"
        # Every answer fits a standard client's message, and a large one is sent once: in
        # structuredContent, with a short text block.
        wire = len(json.dumps(result.model_dump(by_alias=True, exclude_none=True, mode="json")).encode())
        assert wire < MAX_ANSWER_BYTES, f"{tool}: a {wire}-byte answer is over {MAX_ANSWER_BYTES}"
        structured = len(json.dumps(result.structured_content or {}))
        text = sum(len(c.text) for c in texts)
        assert structured <= 16_384 or text < 4096, f"{tool}: {text} bytes of text beside {structured} of structuredContent"
        return envelope

    async def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A call that must answer status ok; returns `data`."""
        envelope = await self.call(tool, arguments)
        assert envelope["status"] == "ok", f"{tool} {arguments}: expected ok, got\n{dump(envelope)}"
        assert envelope.raw.is_error is False
        return envelope["data"]

    async def error(self, tool: str, arguments: dict[str, Any] | None, code: str) -> Envelope:
        """A call that must answer an error envelope with `code`."""
        envelope = await self.call(tool, arguments)
        assert envelope["status"] == "error" and envelope.get("code") == code, (
            f"{tool} {arguments}: expected {code}, got\n{dump(envelope)}"
        )
        assert envelope.raw.is_error is True
        assert isinstance(envelope.get("message"), str) and envelope["message"], dump(envelope)
        return envelope

    async def settle(self, operation_id: str) -> dict[str, Any]:
        """Polls lomi_operation_get until the operation settles, for as long as it moves."""
        moves = Movement(f"operation {operation_id} to settle")
        while True:
            op = await self.ok("lomi_operation_get", {"operationId": operation_id})
            if op["state"] in SETTLED:
                return op
            moves.seen(receipt_mark(op), dump(op))
            await anyio.sleep(0.02)

    async def connect(self, workspace_id: str) -> dict[str, Any]:
        return await self.ok("lomi_connect", {"workspaceId": workspace_id})

    async def rename(
        self, workspace_id: str, revision: str, epoch: str, key: str, name: str
    ) -> Envelope:
        return await self.call(
            "lomi_workspace_update",
            rename_args(workspace_id, revision, epoch, key, name),
        )


def rename_args(workspace_id: str, revision: str, epoch: str, key: str, name: str) -> dict[str, Any]:
    return {
        "workspaceId": workspace_id,
        "expectedRevision": revision,
        "retryEpoch": epoch,
        "requestKey": key,
        "change": {"rename": {"name": name}},
    }


class McpFactory:
    """Opens MCP sessions to the test's Lomi: unauthenticated or with a bearer token."""

    def __init__(self, lomi: Lomi, transcript: Transcript) -> None:
        self.lomi = lomi
        self.transcript = transcript
        self.opened = 0

    @contextlib.asynccontextmanager
    async def session(
        self, token: str | None = None, client_name: str = "lomi-e2e", message_handler: Any = None
    ) -> AsyncIterator[Mcp]:
        self.opened += 1
        label = f"mcp#{self.opened}{' token' if token else ''}"
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(self.lomi.url, http_client=http) as (read, write):
                info = mcp_types.Implementation(name=client_name, version="0.0.0")
                async with ClientSession(read, write, client_info=info, message_handler=message_handler) as session:
                    with anyio.fail_after(CALL_DEADLINE):
                        await session.initialize()
                    self.transcript.add(f"[{label}] initialized", self.lomi.url)
                    yield Mcp(session, self.transcript, label)


# ---- fixtures ----


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def transcript(request: pytest.FixtureRequest) -> Transcript:
    t = Transcript()
    request.node.lomi_transcript = t
    return t


@pytest.fixture
def lomi(tmp_path: Path, transcript: Transcript, request: pytest.FixtureRequest):
    """A running `lomi serve --headless` on a fresh data dir; always killed by pid afterwards."""
    assert Path(LOMI_BIN).is_file(), (
        f"no lomi binary at {LOMI_BIN}: build it with "
        "`CARGO_TARGET_DIR=/root/.cache/lomi/target cargo build -p lomi-cli` or set LOMI_BIN"
    )
    data_dir = tmp_path / "data"
    logs = tmp_path / "logs"
    data_dir.mkdir()
    logs.mkdir()
    instance = Lomi(data_dir, logs, transcript)
    request.node.lomi_instance = instance
    instance.start()
    yield instance
    instance.kill()


@pytest.fixture
def workspaces(lomi: Lomi, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two workspaces: A (the one tests grant) and B (never granted, never to be seen)."""
    a = lomi.add_workspace("Alpha workspace", tmp_path / "project-a")
    b = lomi.add_workspace("Secret Bravo workspace", tmp_path / "project-b")
    return a, b


@pytest.fixture
def mcp(lomi: Lomi, transcript: Transcript) -> McpFactory:
    return McpFactory(lomi, transcript)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests first: spread over several processes, a long test started last would leave
    the others idle while it ends the run."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    transcript = getattr(item, "lomi_transcript", None)
    if transcript is not None:
        report.sections.append(("lomi transcript (CLI and MCP)", transcript.text()))
    instance = getattr(item, "lomi_instance", None)
    if instance is not None:
        report.sections.append(("lomi serve logs", instance.logs()))
