"""Soak benchmark of `lomi serve`: three agents, each its own MCP session through the MCP
Python SDK (default settings), do mixed work for an hour (or --minutes N): terminal commands,
browser navigation and actions on Python's documentation served on 127.0.0.1, and file edits
committed with Git. Every minute it prints one line of what the lomi process holds; at the end
minute 5 against the last minute, and whether each series levelled off. Run it with bench/soak
(see README); it is run on purpose, never by CI.

The person's part is played too: every --retire-every minutes they look at `lomi store status`
and, once it warns (75 % of the 4,096-receipt cap), retire the retry epochs older than that
period (`lomi store reconcile --retire older-than …`, docs/recovery.md); an agent whose epoch
was retired calls lomi_connect again, as docs/errors.md tells it to. If an agent still meets the
cap (RESOURCE_EXHAUSTED), the person runs the command its message names
(`lomi store reconcile --retire idle`).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

DOCS_DIRS = [Path("/usr/share/doc/python3.11/html"), Path("/usr/share/doc/python3.11-doc/html")]
# Pages of the documentation the browser visits, and a word to find on each one's snapshot.
PAGES = [
    ("library/os.html", "process"),
    ("library/asyncio.html", "asyncio"),
    ("tutorial/index.html", "tutorial"),
    ("library/functions.html", "built-in"),
    ("reference/datamodel.html", "object"),
    ("library/pathlib.html", "path"),
    ("howto/logging.html", "logging"),
    ("library/json.html", "json"),
]
SETTLED = {"succeeded", "failed", "cancelled", "outcome_unknown"}
# How long an operation may stay unsettled before the agent reports it as left running.
SETTLE_DEADLINE = 60.0
CAPTURE_EVERY = 5  # browser steps between captures
COMMIT_EVERY = 3  # file steps between commits


def now() -> float:
    return time.monotonic()


class ToolError(Exception):
    """A tool answered an error envelope, or its operation settled as not succeeded."""

    def __init__(self, code: str, message: str, where: str) -> None:
        super().__init__(f"{where}: {code}: {message}")
        self.code = code


class Tally:
    """What the agents did, per minute: operations (receipted mutations), calls, errors by code,
    call latencies."""

    def __init__(self) -> None:
        self.ops = 0
        self.calls = 0
        self.errors: collections.Counter[str] = collections.Counter()
        self.latencies: list[float] = []

    def take(self) -> Tally:
        taken = Tally()
        taken.ops, taken.calls, taken.errors, taken.latencies = self.ops, self.calls, self.errors, self.latencies
        self.ops, self.calls, self.errors, self.latencies = 0, 0, collections.Counter(), []
        return taken


class Agent:
    """One agent: its MCP session, its workspace and project, its terminal and browser."""

    def __init__(self, index: int, url: str, token: str, workspace: str, project: Path, docs: str, tally: Tally,
                 totals: collections.Counter[str], notes: list[str], args: argparse.Namespace) -> None:
        self.index = index
        self.url = url
        self.token = token
        self.ws = workspace
        self.project = project
        self.docs = docs
        self.tally = tally
        self.totals = totals
        self.notes = notes
        self.pause = args.pause
        self.terminal_life = args.terminal_life
        self.browser_life = args.browser_life
        self.rng = random.Random(index)
        self.session: ClientSession | None = None
        self.epoch = ""
        self.keys = 0
        self.term: dict[str, Any] | None = None
        self.browser: dict[str, Any] | None = None
        self.browser_steps = 0
        self.file_steps = 0
        self.staged: set[str] = set()
        self.reconnects = 0

    # ---- calls ----

    def error(self, code: str) -> None:
        self.tally.errors[code] += 1
        self.totals[code] += 1

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """tools/call → structuredContent; an error envelope raises ToolError."""
        assert self.session is not None
        started = now()
        result = await self.session.call_tool(tool, args)
        self.tally.latencies.append((now() - started) * 1000)
        self.tally.calls += 1
        envelope = result.structured_content or {}
        if envelope.get("status") != "ok":
            code = envelope.get("code") or "NO_ENVELOPE"
            self.error(code)
            message = str(envelope.get("message", result.content))[:300]
            if code in ("INTERNAL", "NO_ENVELOPE"):
                self.notes.append(f"agent {self.index}: {tool} answered {code}: {message}")
            raise ToolError(code, message, tool)
        return envelope["data"]

    def key(self) -> str:
        self.keys += 1
        return f"a{self.index}-{self.keys}"

    async def op(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A mutation under the agent's retry epoch, followed until it settles; a failed one
        raises ToolError with its code."""
        started = await self.call(tool, dict(args, retryEpoch=self.epoch, requestKey=self.key()))
        self.tally.ops += 1
        op = started
        deadline = now() + SETTLE_DEADLINE
        while op.get("state") not in SETTLED:
            if now() > deadline:
                self.error("LEFT_RUNNING")
                self.notes.append(f"agent {self.index}: {tool} {op.get('operationId')} still {op.get('state')} "
                                  f"after {SETTLE_DEADLINE:.0f}s")
                raise ToolError("LEFT_RUNNING", json.dumps(op)[:300], tool)
            await asyncio.sleep(0.05)
            op = await self.call("lomi_operation_get", {"operationId": started["operationId"]})
        if op["state"] != "succeeded":
            error = op.get("error") or {}
            code = f"{error.get('code', 'NONE')} ({op['state']})"
            self.error(code)
            if error.get("code") == "INTERNAL" or op["state"] == "outcome_unknown":
                self.notes.append(f"agent {self.index}: {tool} settled {op['state']}: {json.dumps(error)[:300]}")
            raise ToolError(error.get("code", op["state"]), str(error.get("message"))[:300], tool)
        return op.get("result") or {}

    async def revision(self) -> str:
        return (await self.call("lomi_panel_list", {"workspaceId": self.ws}))["domainRevision"]

    async def connect(self) -> None:
        self.epoch = (await self.call("lomi_connect", {"workspaceId": self.ws}))["retryEpoch"]

    # ---- the three kinds of work ----

    async def terminal_step(self) -> None:
        if self.term and now() - self.term["born"] > self.terminal_life:
            await self.close_terminal()
        if self.term is None:
            created = await self.op("lomi_terminal_create", {
                "workspaceId": self.ws, "cwdRelative": "", "title": f"soak {self.keys}",
                "expectedRevision": await self.revision(),
            })
            self.term = dict(created, born=now(), seq=0)
        n = self.rng.randrange(1000, 9999)
        command, expect = self.rng.choice([
            (f"echo soak-$(({n}*7))", f"soak-{n * 7}"),
            ("git log --oneline | wc -l | sed 's/^/commits=/'", "commits="),
            (f"seq 1 {n} | tail -n 1 | sed 's/^/last=/'", f"last={n}"),
            ("ls -1 | wc -l | sed 's/^/files=/'", "files="),
        ])
        term = self.term
        term["seq"] += 1
        sent = await self.call("lomi_terminal_input", {
            "panelId": term["panelId"], "leaseId": term["leaseId"], "generation": term["generation"],
            "inputSequence": str(term["seq"]), "text": command + "\r",
        })
        read = await self.call("lomi_terminal_read", {
            "panelId": term["panelId"], "sinceCursor": sent["outputCursor"], "maxBytes": 65536,
            "waitFor": {"text": expect}, "timeoutMs": 10_000,
        })
        if read.get("waited") != "matched":
            self.error("TERMINAL_NO_MATCH")
            self.notes.append(f"agent {self.index}: {expect!r} never came after {command!r}")

    async def close_terminal(self) -> None:
        term, self.term = self.term, None
        if term:
            await self.op("lomi_terminal_close", {
                "workspaceId": self.ws, "panelId": term["panelId"], "expectedRevision": await self.revision(),
            })

    async def browser_step(self) -> None:
        if self.browser and now() - self.browser["born"] > self.browser_life:
            await self.close_browser()
        if self.browser is None:
            created = await self.op("lomi_browser_create", {
                "workspaceId": self.ws, "title": "Docs", "expectedRevision": await self.revision(),
            })
            self.browser = dict(created, born=now())
        panel = {"panelId": self.browser["panelId"], "browserGeneration": self.browser["browserGeneration"]}
        self.browser_steps += 1
        page, word = self.rng.choice(PAGES)
        await self.op("lomi_browser_navigate", dict(panel, url=f"{self.docs}/{page}"))
        snap = await self.call("lomi_browser_snapshot", {"panelId": panel["panelId"], "find": word, "maxBytes": 65536})
        links = re.findall(r'link "[^"]*" \[((?:f\d+)?e\d+)\]', snap["text"])
        if links:
            await self.op("lomi_browser_click", dict(panel, snapshotId=snap["snapshotId"], elementRef=self.rng.choice(links)))
        if self.browser_steps % CAPTURE_EVERY == 0:
            await self.call("lomi_browser_capture", {"panelId": panel["panelId"], "scale": 0.5})

    async def close_browser(self) -> None:
        browser, self.browser = self.browser, None
        if browser:
            await self.op("lomi_browser_close", {
                "workspaceId": self.ws, "panelId": browser["panelId"], "expectedRevision": await self.revision(),
            })

    async def file_step(self) -> None:
        self.file_steps += 1
        path = f"notes/note-{self.rng.randrange(8)}.md"
        line = f"step {self.file_steps} of agent {self.index}\n"
        if (self.project / path).exists():
            read = await self.call("lomi_file_read", {"workspaceId": self.ws, "path": path})
            text = (read["text"] or "").splitlines(keepends=True)[-40:]
            await self.op("lomi_file_write", {
                "workspaceId": self.ws, "path": path, "expectedDiskRevision": read["diskRevision"],
                "text": "".join(text) + line,
            })
        else:
            await self.op("lomi_file_create", {
                "workspaceId": self.ws, "path": path, "text": f"# Note\n{line}", "createParents": True,
            })
        self.staged.add(path)
        if self.file_steps % COMMIT_EVERY == 0:
            await self.op("lomi_git_stage", {"workspaceId": self.ws, "paths": sorted(self.staged)})
            self.staged.clear()
            head = (await self.call("lomi_git_status", {"workspaceId": self.ws}))["head"]
            await self.op("lomi_git_commit", {
                "workspaceId": self.ws, "message": f"Notes, step {self.file_steps}", "expectedHeadRevision": head,
            })

    # ---- the loop ----

    async def recover(self, kind: str, error: ToolError) -> None:
        """What an agent does after an error: reconnect after its epoch ended, wait for the person
        at the cap, and otherwise start the failed kind of work over with a fresh panel."""
        if error.code in ("RETRY_EPOCH_EXPIRED", "RETRY_EPOCH_INVALID"):
            self.reconnects += 1
            await self.connect()
            return
        if error.code == "RESOURCE_EXHAUSTED":
            await asyncio.sleep(2)
            return
        if kind == "terminal" and self.term is not None:
            with contextlib.suppress(ToolError):
                await self.close_terminal()
            self.term = None
        if kind == "browser" and self.browser is not None:
            with contextlib.suppress(ToolError):
                await self.close_browser()
            self.browser = None

    async def run(self, deadline: float) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(self.url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self.session = session
                    await self.connect()
                    steps = [("terminal", self.terminal_step), ("browser", self.browser_step), ("files", self.file_step)]
                    turn = self.index
                    while now() < deadline:
                        kind, step = steps[turn % len(steps)]
                        turn += 1
                        try:
                            await step()
                        except ToolError as error:
                            try:
                                await self.recover(kind, error)
                            except ToolError as again:
                                self.notes.append(f"agent {self.index}: recovering from {error} failed: {again}")
                        await asyncio.sleep(self.pause)
                    # Leave the workspace as an agent that finished would: its panels closed.
                    for close in (self.close_terminal, self.close_browser):
                        try:
                            await close()
                        except ToolError as error:
                            if error.code in ("RETRY_EPOCH_EXPIRED", "RETRY_EPOCH_INVALID"):
                                await self.connect()
                                with contextlib.suppress(ToolError):
                                    await close()


# ---- the lomi process, as /proc shows it ----


def status_field(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def pss_kib(pid: int) -> int:
    """Proportional set size: shared pages (Chromium's processes share many) divided among
    their sharers, so a sum over processes does not count them several times as RSS does."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        children[int(text[text.rfind(")") + 2 :].split()[1])].append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def sample(pid: int, data_dir: Path) -> dict[str, float]:
    kids = descendants(pid)
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except FileNotFoundError:
        fds = 0
    sqlite_bytes = sum(
        p.stat().st_size for p in data_dir.iterdir()
        if p.is_file() and (p.suffix in (".db", ".sqlite3") or p.name.endswith(("-wal", ".db-wal", ".sqlite3-wal")))
    )
    return {
        "rss": status_field(pid, "VmRSS") / 1024,
        "kids_rss": sum(status_field(k, "VmRSS") for k in kids) / 1024,
        "kids_pss": sum(pss_kib(k) for k in kids) / 1024,
        "kids": len(kids),
        "fds": fds,
        "threads": status_field(pid, "Threads"),
        "sqlite": sqlite_bytes / (1024 * 1024),
    }


# ---- the person ----


class Person:
    """The person at Lomi's side: `lomi` commands against the running serve."""

    def __init__(self, lomi: str, data_dir: Path, notes: list[str]) -> None:
        self.lomi = lomi
        self.data_dir = data_dir
        self.notes = notes
        self.retirements: list[str] = []

    def cli(self, *args: str) -> Any:
        done = subprocess.run([self.lomi, "--data-dir", str(self.data_dir), *args, "--json"],
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"`lomi {' '.join(args)}` failed ({done.returncode}): {done.stderr.strip()[:500]}")
        return json.loads(done.stdout)

    def look_and_retire(self, minute: int, older_than_minutes: int, at_cap: bool) -> None:
        status = self.cli("store", "status")
        level = status["warningLevel"]
        if level == "none":
            return  # room enough (at the cap, someone freed it meanwhile)
        if at_cap or level == "full":
            how = ["--retire", "idle"]
        else:
            how = ["--retire", "older-than", f"{older_than_minutes}m"]
        done = self.cli("store", "reconcile", *how, "--yes")
        self.retirements.append(
            f"minute {minute}: store at {status['receipts']} receipts ({level}); `lomi store reconcile "
            f"{' '.join(how)} --yes` retired {done.get('retryEpochsRetired')} epoch(s), archived "
            f"{done.get('receiptsArchived')} receipt(s), now {done.get('warningLevel')}"
        )


# ---- the run ----


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


def make_repository(project: Path) -> None:
    project.mkdir(parents=True)
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.name", "Soak Person")
    git(project, "config", "user.email", "soak@example.invalid")
    (project / "README.md").write_text("# Soak project\n")
    git(project, "add", "README.md")
    git(project, "commit", "-q", "-m", "First commit")


def levelled(values: list[float]) -> str:
    """Whether a series levelled off, from the first sample kept (minute 5, after start-up) to
    the last: its growth over the second half against its growth over the first half, each end
    the median of three samples around it. Levelled: the second half grew by at most 5 % of the
    series' middle value or one unit (noise), or by at most half of what the first half grew."""
    if len(values) < 4:
        return "too short to say"
    mid = len(values) // 2
    start = statistics.median(values[:3])
    middle = statistics.median(values[mid - 1 : mid + 2])
    end = statistics.median(values[-3:])
    first, second = middle - start, end - middle
    noise = max(0.05 * abs(middle), 1.0)
    verdict = "levelled" if second <= noise or second <= 0.5 * first else "still growing"
    return f"{verdict} (1st half {first:+.1f}, 2nd half {second:+.1f})"


async def main_async(args: argparse.Namespace) -> int:
    docs_dir = next((d for d in DOCS_DIRS if (d / "index.html").exists()), None)
    if docs_dir is None:
        sys.exit(f"Python's documentation is missing ({DOCS_DIRS[0]}): install Debian's python3.11-doc")
    work = Path(tempfile.mkdtemp(prefix="lomi-soak."))
    data_dir = work / "data"
    data_dir.mkdir()
    notes: list[str] = []
    print(f"soak: {args.minutes} minute(s), {args.agents} agents; work dir {work}", flush=True)

    docs_port = free_port()
    docs = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(docs_dir),
                             str(docs_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    serve_log = (work / "serve.log").open("wb")
    serve = subprocess.Popen([args.lomi, "serve", "--headless", "--http", "127.0.0.1:0", "--data-dir", str(data_dir)],
                             stdout=serve_log, stderr=serve_log, stdin=subprocess.DEVNULL)
    code = 1
    try:
        broker: dict[str, Any] = {}
        for _ in range(600):
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                broker = json.loads((data_dir / "broker.json").read_text())
            if broker.get("pid") == serve.pid:
                break
            if serve.poll() is not None:
                sys.exit(f"lomi serve exited with {serve.returncode}; see {work / 'serve.log'}")
            time.sleep(0.05)
        else:
            sys.exit("lomi serve wrote no broker.json in 30 s")
        person = Person(args.lomi, data_dir, notes)
        print(f"soak: the store's receipt cap is {person.cli('store', 'status')['receiptCap']}", flush=True)

        tally = Tally()
        totals: collections.Counter[str] = collections.Counter()
        agents = []
        for i in range(args.agents):
            project = work / f"project-{i}"
            make_repository(project)
            workspace = person.cli("workspace", "add", "--name", f"Soak {i}", "--project", str(project))["workspaceId"]
            token = person.cli("pairing", "create", "--name", f"soak-agent-{i}", "--workspace", workspace)["token"]
            agents.append(Agent(i, broker["url"], token, workspace, project, f"http://127.0.0.1:{docs_port}", tally,
                                totals, notes, args))

        started = now()
        # The agents work on a little past the last sample, so that it is taken mid-work.
        deadline = started + args.minutes * 60 + 10
        tasks = [asyncio.create_task(agent.run(deadline)) for agent in agents]
        print(f"{'min':>4} {'rss MiB':>8} {'kids MiB':>9} {'kids PSS':>9} {'kids':>5} {'fds':>5} {'thr':>4} {'sqlite MiB':>10} "
              f"{'ops':>5} {'calls':>6} {'p95 ms':>7}  errors", flush=True)
        rows: list[dict[str, Any]] = []
        at_cap_seen = 0
        async def person_looks(minute: int, at_cap: bool) -> None:
            try:
                await asyncio.to_thread(person.look_and_retire, minute, args.retire_every, at_cap)
            except RuntimeError as error:
                notes.append(f"minute {minute}: the person's command failed: {error}")

        for minute in range(1, args.minutes + 1):
            while now() < started + minute * 60:
                for t in tasks:
                    if t.done() and t.exception() is not None:
                        raise t.exception()
                # An agent met the cap: the person, told, runs the command its message names.
                if totals["RESOURCE_EXHAUSTED"] > at_cap_seen:
                    at_cap_seen = totals["RESOURCE_EXHAUSTED"]
                    await person_looks(minute, at_cap=True)
                await asyncio.sleep(0.5)
            taken = tally.take()
            row = sample(serve.pid, data_dir)
            row.update(minute=minute, ops=taken.ops, calls=taken.calls)
            p95 = sorted(taken.latencies)[int(0.95 * (len(taken.latencies) - 1))] if taken.latencies else 0.0
            errors = " ".join(f"{c}={n}" for c, n in sorted(taken.errors.items())) or "-"
            print(f"{minute:>4} {row['rss']:>8.1f} {row['kids_rss']:>9.1f} {row['kids_pss']:>9.1f} {row['kids']:>5} "
                  f"{row['fds']:>5} {row['threads']:>4} {row['sqlite']:>10.2f} {taken.ops:>5} {taken.calls:>6} "
                  f"{p95:>7.0f}  {errors}", flush=True)
            rows.append(row)
            if minute % args.retire_every == 0:
                await person_looks(minute, at_cap=False)
        for t in tasks:
            try:
                await asyncio.wait_for(t, timeout=120)
            except Exception as error:  # an agent's session broke: the run's finding, reported below
                notes.append(f"an agent ended with {type(error).__name__}: {error}")
        ended = now()

        # Receipts left running: none should be once every agent stopped.
        await asyncio.sleep(2)
        live = person.cli("operation", "list", "--limit", "4096")
        running = [op for op in live if op.get("state") not in SETTLED]
        for op in running:
            notes.append(f"receipt left {op['state']}: {op.get('tool')} {op.get('operationId')}")
        store = person.cli("store", "status")

        print()
        print(f"soak: {sum(r['ops'] for r in rows)} operations, {sum(r['calls'] for r in rows)} calls in "
              f"{(ended - started) / 60:.1f} min; {sum(a.reconnects for a in agents)} reconnects; "
              f"store {store['receipts']} live receipts, {store.get('historyReceipts')} in the history")
        first_kept = 4 if len(rows) >= 8 else 0  # minute 5: after start-up, when the run is long enough
        kept = rows[first_kept:]
        print(f"{'series':<18} {'minute ' + str(rows[first_kept]['minute']):>10} {'minute ' + str(rows[-1]['minute']):>10}  "
              "levelled off? (from minute " + str(rows[first_kept]["minute"]) + ")")
        for key, label in [("rss", "lomi RSS MiB"), ("kids_rss", "children RSS MiB"), ("kids_pss", "children PSS MiB"), ("kids", "children"),
                           ("fds", "open fds"), ("threads", "threads"), ("sqlite", "SQLite MiB")]:
            series = [r[key] for r in kept]
            print(f"{label:<18} {rows[first_kept][key]:>10.1f} {rows[-1][key]:>10.1f}  {levelled(series)}")
        ops = [r["ops"] for r in kept]
        print(f"{'ops/min':<18} {rows[first_kept]['ops']:>10} {rows[-1]['ops']:>10}  "
              f"{'steady' if len(ops) < 4 or statistics.mean(ops[len(ops) // 2:]) >= 0.9 * statistics.mean(ops[: len(ops) // 2]) else 'falling'}"
              + (f" (mean 1st half {statistics.mean(ops[: len(ops) // 2]):.0f}, 2nd half {statistics.mean(ops[len(ops) // 2:]):.0f})"
                 if len(ops) >= 4 else ""))
        total_ops = sum(r["ops"] for r in rows)
        if total_ops:
            print(f"SQLite bytes per operation: {(rows[-1]['sqlite'] - rows[0]['sqlite']) * 1024 * 1024 / total_ops:.0f} "
                  "(the history keeps every retired receipt: it grows by design)")
        print("errors by code: " + (" ".join(f"{c}={n}" for c, n in sorted(totals.items())) or "none"))
        print("the person: " + ("; ".join(person.retirements) if person.retirements else "never needed to retire"))
        for note in notes[:50]:
            print(f"finding: {note}")
        if len(notes) > 50:
            print(f"finding: … and {len(notes) - 50} more")
        code = 0
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGTERM)
            try:
                stopped = serve.wait(timeout=20)
                print(f"soak: lomi serve stopped with {stopped}")
            except subprocess.TimeoutExpired:
                print("finding: lomi serve ignored SIGTERM for 20 s; killed")
                serve.kill()
                serve.wait()
        docs.terminate()
        docs.wait()
        serve_log.close()
        db = data_dir / "lomi.sqlite3"
        if db.exists():
            with contextlib.closing(sqlite3.connect(db)) as conn:
                print(f"soak: SQLite integrity_check: {conn.execute('PRAGMA integrity_check').fetchone()[0]}")
        if args.keep or code != 0:
            print(f"soak: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lomi", required=True)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.2, help="seconds an agent waits between steps")
    parser.add_argument("--terminal-life", type=float, default=180.0,
                        help="seconds before an agent closes its terminal and creates another")
    parser.add_argument("--browser-life", type=float, default=240.0,
                        help="seconds before an agent closes its browser and creates another")
    parser.add_argument("--retire-every", type=int, default=5, help="minutes between the person's looks at the store")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (data dir, projects, serve log)")
    args = parser.parse_args()
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
