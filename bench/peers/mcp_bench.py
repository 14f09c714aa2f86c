#!/usr/bin/env python3
"""Side-by-side benchmark harness for browser-control MCP servers.

One run = one adapter (a JSON/YAML file mapping generic steps to a server's tool
names and argument shapes). The harness

  * serves bench/peers/fixtures/ on 127.0.0.1:<random free port> (Python
    http.server, started and stopped here). Whether typing / clicking really
    worked is checked with one extra, untimed snapshot after the action (the page
    prints what it saw); the pages make no network requests of their own,
  * measures cold start: spawn -> initialize -> tools/list (and the first
    navigate, which includes the browser launch) over --cold-runs fresh processes,
  * opens one session and, per fixture, repeats --repeat times (default 15):
        form:   navigate, snapshot, type (textbox "Name"), click (button "Submit"), screenshot
        large:  navigate, snapshot, screenshot
        iframe: navigate, snapshot, frame_click (button "Frame button" inside the iframe)
    recording latency, response bytes as the agent reads them (text blocks or
    structuredContent, the larger), approx tokens (= bytes / 4), wire bytes,
    and for screenshots the PNG bytes + dimensions (PNG signature checked, IHDR decoded),
  * with --scenario real, uses real pages instead: Python's HTML documentation as Debian
    ships it (python3.11-doc, --docs), served the same way, and per --repeat
        stdtypes, functions, tutorial:  navigate, snapshot  (three real pages, large to small)
        fullpage:  navigate, full_capture (tutorial/index.html, its whole length)
        task:      from library/index.html, locate link "Built-in Functions" and click it,
                   then locate link "len()" and click it; success = the tab shows
                   library/functions.html#len (checked untimed through the adapter's
                   `where` step); time and bytes read are summed over every call of the task,
  * writes results/<adapter>-<UTC date>.json and results/<adapter>-<UTC date>.md;
    `report` merges several result JSONs into one side-by-side markdown table.

Transports: "stdio" (the harness spawns `command`+`args`) and "streamable-http"
(`url`; optionally the harness spawns `command`+`args` itself and waits for it).

Usage (absolute paths are safest; relative ones are resolved against the cwd):
    $PEERS_ENV/venv/bin/python bench/peers/mcp_bench.py run \
        --adapter bench/peers/adapters/playwright.json [--repeat 15]
    .../mcp_bench.py report results/a.json results/b.json --out results/summary.md
    .../mcp_bench.py check --adapter adapters/lomi.json     # validate an adapter file only
"""

from __future__ import annotations

import argparse
import itertools
import base64
import datetime as _dt
import http.server
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
RESULTS = HERE / "results"
DOCS = Path("/usr/share/doc/python3.11-doc/html")
# locate: how the server's agent looks for a named element (default: snapshot); full_capture: a
# capture of the page's whole length; full_save: the same saved whole into a file, for a server
# whose full_capture answers only part of a tall page (capture_tall.py); where: the URL the tab
# shows (untimed, for verifying).
GENERIC_STEPS = ["navigate", "snapshot", "click", "type", "screenshot", "frame_click", "locate", "full_capture",
                 "full_save", "where"]
# step -> role/label of the element to find in the snapshot (for steps that need a ref)
TARGETS = {
    "type": ("textbox", "Name"),
    "click": ("button", "Submit"),
    "frame_click": ("button", "Frame button"),
}
# "verify": after step X, take one extra (untimed) snapshot and look for these texts
# (${text} = the text typed in this iteration). The fixture pages make no network
# requests of their own, so the timings are not inflated by instrumentation.
PLANS = {
    "form": {"page": "form.html", "steps": ["navigate", "snapshot", "type", "click", "screenshot"],
             "verify": {"after": "click", "checks": {"type": "name=${text}", "click": "Submitted #1"}}},
    "large": {"page": "large.html", "steps": ["navigate", "snapshot", "screenshot"]},
    "iframe": {"page": "iframe.html", "steps": ["navigate", "snapshot", "frame_click"],
               "verify": {"after": "frame_click", "checks": {"frame_click": "Frame button clicked 1 time"}}},
}
# The real-pages scenario (--scenario real): pages of Python's documentation (site "docs").
REAL_PLANS = {
    "stdtypes": {"page": "library/stdtypes.html", "site": "docs", "steps": ["navigate", "snapshot"]},
    "functions": {"page": "library/functions.html", "site": "docs", "steps": ["navigate", "snapshot"]},
    "tutorial": {"page": "tutorial/index.html", "site": "docs", "steps": ["navigate", "snapshot"]},
    "fullpage": {"page": "tutorial/index.html", "site": "docs", "steps": ["navigate", "full_capture"]},
}
# The search-and-click task: from `start`, each hop locates a link by role and name and clicks
# it; the tab must end on `lands`.
TASK = {"start": "library/index.html", "hops": [("link", "Built-in Functions"), ("link", "len()")],
        "lands": "library/functions.html#len"}
SCENARIOS = {"synthetic": ["form", "large", "iframe"], "real": [*REAL_PLANS, "task"]}
PNG_SIG = b"\x89PNG\r\n\x1a\n"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------
# Fixture server (http.server on 127.0.0.1, random free port)
# --------------------------------------------------------------------------


class FixtureServer:
    """Static http.server for bench/peers/fixtures on 127.0.0.1:<free port>, no caching."""

    def __init__(self, root: Path) -> None:
        self.requests = 0
        srv = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def __init__(self, *a: Any, **kw: Any) -> None:
                super().__init__(*a, directory=str(root), **kw)

            def log_message(self, *a: Any) -> None:
                srv.requests += 1

            def end_headers(self) -> None:
                self.send_header("Cache-Control", "no-store")
                super().end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="fixtures")

    def __enter__(self) -> "FixtureServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, page: str, iter_id: str) -> str:
        return f"http://127.0.0.1:{self.port}/{page}?iter={iter_id}"


# --------------------------------------------------------------------------
# Adapters
# --------------------------------------------------------------------------

VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


SEQ = itertools.count(1)


def lookup(name: str, vars_: dict[str, Any]) -> Any:
    """The value of ${name}; ${seq} is a fresh number on every use (for request keys)."""
    if name == "seq" and name not in vars_:
        return next(SEQ)
    if name not in vars_:
        raise KeyError(f"adapter uses ${{{name}}} which is not set")
    return vars_[name]


def subst(obj: Any, vars_: dict[str, Any]) -> Any:
    """Replace ${name} in strings (recursively). A string that is exactly "${name}"
    becomes the raw value (so integers such as pageId stay integers)."""
    if isinstance(obj, str):
        m = VAR_RE.fullmatch(obj)
        if m:
            return lookup(m.group(1), vars_)

        def rep(mm: re.Match[str]) -> str:
            return str(lookup(mm.group(1), vars_))

        return VAR_RE.sub(rep, obj)
    if isinstance(obj, list):
        return [subst(x, vars_) for x in obj]
    if isinstance(obj, dict):
        return {k: subst(v, vars_) for k, v in obj.items()}
    return obj


def load_adapter(path: str) -> dict[str, Any]:
    p = Path(path).expanduser().resolve()
    text = p.read_text()
    if p.suffix in (".yaml", ".yml"):
        import yaml  # PyYAML

        ad = yaml.safe_load(text)
    else:
        ad = json.loads(text)
    ad["_path"] = str(p)
    ad.setdefault("name", p.stem)
    ad.setdefault("label", ad["name"])
    ad.setdefault("transport", "stdio")
    problems = []
    if ad["transport"] not in ("stdio", "streamable-http"):
        problems.append(f"transport must be stdio or streamable-http, not {ad['transport']!r}")
    if ad["transport"] == "stdio" and not ad.get("command"):
        problems.append("stdio adapter needs 'command'")
    if ad["transport"] == "streamable-http" and not ad.get("url"):
        problems.append("streamable-http adapter needs 'url'")
    steps = ad.get("steps") or {}
    for s in ("navigate", "snapshot"):
        if s not in steps:
            problems.append(f"missing step {s!r}")
    for s, calls in steps.items():
        if s not in GENERIC_STEPS:
            problems.append(f"unknown step {s!r} (known: {GENERIC_STEPS})")
        for c in calls if isinstance(calls, list) else [calls]:
            if "tool" not in c:
                problems.append(f"step {s!r}: every call needs 'tool'")
    if any(s in steps for s in TARGETS) and not ad.get("ref_pattern"):
        problems.append("steps that target elements need 'ref_pattern'")
    if problems:
        raise SystemExit(f"adapter {p}: " + "; ".join(problems))
    return ad


def calls_of(ad: dict[str, Any], step: str) -> list[dict[str, Any]]:
    c = ad["steps"][step]
    return c if isinstance(c, list) else [c]


def adapter_version(ad: dict[str, Any]) -> str:
    v = ad.get("version")
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and v.get("package_json"):
        try:
            env_dir = os.environ.get("PEERS_ENV", str(Path.home() / ".cache" / "mcp-peers"))
            return json.loads(Path(v["package_json"].replace("${env_dir}", env_dir)).read_text())["version"]
        except (OSError, ValueError, KeyError):
            return "?"
    return "?"


def find_ref(ad: dict[str, Any], step: str, text: str) -> str | None:
    role, label = TARGETS[step]
    pats = ad.get("ref_pattern")
    if step == "frame_click" and ad.get("frame_ref_pattern"):
        pats = ad["frame_ref_pattern"]
    return match_ref(pats, role, label, text)


def match_ref(pats: str | list[str], role: str, label: str, text: str) -> str | None:
    """The first ref that one of the patterns (tried in order) finds for role + label."""
    for pat in pats if isinstance(pats, list) else [pats]:
        rx = pat.replace("{role}", re.escape(role)).replace("{label}", re.escape(label))
        m = re.search(rx, text)
        if m:
            return m.group(1)
    return None


# --------------------------------------------------------------------------
# Result helpers
# --------------------------------------------------------------------------


def result_text(res: Any) -> str:
    return "\n".join(c.text for c in (res.content or []) if getattr(c, "type", None) == "text")


def structured(res: Any) -> Any:
    return getattr(res, "structured_content", None) if hasattr(res, "structured_content") else getattr(res, "structuredContent", None)


def string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in string_leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in string_leaves(v)]
    return []


def read_bytes_and_text(res: Any, text: str) -> tuple[int, str]:
    """What the agent reads: a client gives its model either the text blocks or
    structuredContent, so count the larger of the two. A server may put a large answer only in
    structuredContent (with a short text block saying so): its strings are then added to the
    text that refs and checks are read from, as a model reading that JSON would see them."""
    data = structured(res)
    text_len = len(text.encode())
    if data is None:
        return text_len, text
    data_len = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
    if data_len <= text_len:
        return text_len, text
    return data_len, text + "\n" + "\n".join(string_leaves(data))


def result_is_error(res: Any) -> bool:
    return bool(getattr(res, "is_error", None) or getattr(res, "isError", None))


def wire_bytes(res: Any) -> int:
    try:
        return len(res.model_dump_json(by_alias=True, exclude_none=True).encode())
    except Exception:  # noqa: BLE001
        return -1


def png_info(data: bytes) -> dict[str, Any]:
    """Check the PNG signature, read IHDR, and fully decode when Pillow is there."""
    out: dict[str, Any] = {"png_bytes": len(data), "png_ok": False}
    if data[:8] != PNG_SIG or data[12:16] != b"IHDR":
        return out
    out["width"], out["height"] = struct.unpack(">II", data[16:24])
    out["png_ok"] = True
    try:
        import io

        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            im.load()
            out["decoded"] = f"{im.size[0]}x{im.size[1]} {im.mode}"
    except ImportError:
        out["decoded"] = "pillow missing"
    except Exception as e:  # noqa: BLE001
        out["png_ok"] = False
        out["decoded"] = f"decode error: {e!r}"[:200]
    return out


PNG_PATH_RE = re.compile(r"(/[^\s\"'`()\[\]<>]+\.png)")


def screenshot_png(res: Any, text: str, dirs: list[Path]) -> tuple[bytes | None, str]:
    for c in res.content or []:
        if getattr(c, "type", None) == "image":
            try:
                data = base64.b64decode(c.data)
            except (ValueError, TypeError):
                continue
            return data, f"inline {getattr(c, 'mime_type', None) or getattr(c, 'mimeType', '')}"
    cands = PNG_PATH_RE.findall(text) + [str(d / m) for d in dirs for m in re.findall(r"([\w./-]+\.png)", text)]
    for cand in cands:
        p = Path(cand)
        if p.is_file():
            return p.read_bytes(), "file"
    return None, "missing"


def summarize(xs: list[float]) -> dict[str, Any]:
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "min": round(min(xs), 2), "median": round(statistics.median(xs), 2),
            "max": round(max(xs), 2), "mean": round(statistics.fmean(xs), 2)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_rss_mb(pid: int) -> float | None:
    try:
        import psutil

        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
        return round(sum(p.memory_info().rss for p in procs if p.is_running()) / 2**20, 1)
    except Exception:  # noqa: BLE001
        return None


def descendants(pid: int) -> list[int]:
    try:
        import psutil

        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:  # noqa: BLE001
        return []


def kill_leftovers(pids: list[int]) -> int:
    """Kill processes (by pid) that this run's server started and that outlived it."""
    n = 0
    try:
        import psutil
    except ImportError:
        return 0
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                p.kill()
                n += 1
        except psutil.Error:
            pass
    return n


# --------------------------------------------------------------------------
# Connecting to a server
# --------------------------------------------------------------------------


class Conn:
    """One MCP client session (stdio or Streamable HTTP) plus the server's pid.
    Use via `async with connect(...) as conn`."""

    def __init__(self, session: Any, pid: int | None, init: Any, tools: Any, timeout: float) -> None:
        self.session, self.pid, self.init, self.tools, self.timeout = session, pid, init, tools, timeout

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        return await self.session.call_tool(tool, args, read_timeout_seconds=self.timeout)


async def _wait_listening(url: str, proc: subprocess.Popen[bytes] | None, ready_timeout: float) -> None:
    host, port = re.match(r"https?://([^/:]+):?(\d+)?", url).groups()  # type: ignore[union-attr]
    port_i = int(port or (443 if url.startswith("https") else 80))
    deadline = time.perf_counter() + ready_timeout
    while True:
        try:
            with socket.create_connection((host, port_i), timeout=0.5):
                return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode} before listening")
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{url} not listening after {ready_timeout}s")
            await anyio.sleep(0.02)


@asynccontextmanager
async def connect(ad: dict[str, Any], v: dict[str, Any], errlog: Any, timeout: float) -> AsyncIterator[Conn]:
    from mcp.client.session import ClientSession

    proc: subprocess.Popen[bytes] | None = None
    pid: int | None = None
    kids: list[int] = []
    stack = AsyncExitStack()
    try:
        if ad["transport"] == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            cmd = [str(x) for x in subst([ad["command"], *ad.get("args", [])], v)]
            params = StdioServerParameters(command=cmd[0], args=cmd[1:], env={k: str(x) for k, x in subst(ad.get("env") or {}, v).items()},
                                           cwd=subst(ad.get("cwd", "${workdir}"), v))
            transport = stdio_client(params, errlog=errlog)
            before = _children()
        else:
            try:
                from mcp.client.streamable_http import streamable_http_client as http_client
            except ImportError:  # mcp 1.x
                from mcp.client.streamable_http import streamablehttp_client as http_client
            url = str(subst(ad["url"], v))
            if ad.get("command"):
                cmd = [str(x) for x in subst([ad["command"], *ad.get("args", [])], v)]
                env = dict(os.environ, **{k: str(x) for k, x in subst(ad.get("env") or {}, v).items()})
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog,
                                        cwd=subst(ad.get("cwd", "${workdir}"), v), env=env, start_new_session=True)
                pid = proc.pid
            await _wait_listening(url, proc, float(ad.get("ready_timeout_s", 30)))
            headers = {k: str(x) for k, x in subst(ad.get("headers") or {}, v).items()}
            if headers:
                from mcp.shared._httpx_utils import create_mcp_http_client

                client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                transport = http_client(url, http_client=client)
            else:
                transport = http_client(url)
        async with transport as streams:
            if ad["transport"] == "stdio":
                new = _children() - before
                pid = new.pop() if len(new) == 1 else None
            async with ClientSession(streams[0], streams[1], read_timeout_seconds=timeout) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                conn = Conn(session, pid, init, tools, timeout)
                try:
                    yield conn
                finally:
                    kids = descendants(pid) if pid else []
    finally:
        await stack.aclose()
        if proc is not None:
            kids = kids or descendants(proc.pid)
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # the process group we started (start_new_session)
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.2)
        kill_leftovers(kids + ([pid] if pid else []))


def chromium_tmp_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("org.chromium.Chromium.*"))


def remove_stale_chromium_dirs(before: set[Path]) -> int:
    """Chromium leaves $TMPDIR/org.chromium.Chromium.* (SingletonSocket) behind when it is
    killed. Remove the ones that appeared during this run and whose socket is dead."""
    n = 0
    for d in chromium_tmp_dirs() - before:
        sock = d / "SingletonSocket"
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(0.5)
                s.connect(str(sock))
            continue  # a live browser still owns it
        except OSError:
            pass
        shutil.rmtree(d, ignore_errors=True)
        n += 1
    return n


def _children() -> set[int]:
    try:
        import psutil

        return {c.pid for c in psutil.Process().children(recursive=False)}
    except Exception:  # noqa: BLE001
        return set()


# --------------------------------------------------------------------------
# Running steps
# --------------------------------------------------------------------------


class StepFailed(Exception):
    pass


async def run_calls(conn: Conn, calls: list[dict[str, Any]], vars_: dict[str, Any]) -> dict[str, Any]:
    """Run the calls of one step; latency = sum of the calls' round trips."""
    rec: dict[str, Any] = {"ms": 0.0, "text_bytes": 0, "read_bytes": 0, "wire_bytes": 0, "texts": [], "results": []}
    for c in calls:
        args = subst(c.get("args") or {}, vars_)
        t0 = time.perf_counter()
        res = await conn.call(c["tool"], args)
        # "until": repeat the call (an operation that settles later) until its text matches.
        until = c.get("until")
        if until:
            deadline = time.perf_counter() + float(until.get("timeout_s", 30))
            while not re.search(until["regex"], result_text(res), re.M) and not result_is_error(res):
                if time.perf_counter() > deadline:
                    raise StepFailed(f"{c['tool']}: {until['regex']!r} did not appear")
                await anyio.sleep(0.01)
                res = await conn.call(c["tool"], args)
        rec["ms"] += (time.perf_counter() - t0) * 1000.0
        text = result_text(res)
        rec["text_bytes"] += len(text.encode())
        read, text = read_bytes_and_text(res, text)
        rec["read_bytes"] += read
        rec["wire_bytes"] += wire_bytes(res)
        rec["texts"].append(text)
        rec["results"].append(res)
        if result_is_error(res):
            raise StepFailed(f"{c['tool']} isError: {text[:300]}")
        for var, spec in (c.get("capture") or {}).items():
            m = re.search(spec["regex"], text, re.M)
            val: Any = m.group(1) if m else spec.get("default")
            if val is None:
                raise StepFailed(f"{c['tool']}: capture {var!r} found nothing")
            vars_[var] = int(val) if spec.get("type") == "int" else val
    rec["text"] = "\n".join(rec["texts"])
    return rec


async def cold_runs(ad: dict[str, Any], base_vars: dict[str, Any], site: FixtureServer, n: int, errlog: Any,
                    timeout: float, errors: list[str], overrides: dict[str, str]) -> dict[str, Any]:
    start_ms, first_nav_ms = [], []
    for i in range(n):
        v = dict(base_vars)
        if "port" not in overrides:
            v["port"] = free_port()
        try:
            t0 = time.perf_counter()
            async with connect(ad, v, errlog, timeout) as conn:
                start_ms.append((time.perf_counter() - t0) * 1000.0)
                v["url"] = site.url("form.html", f"cold{i}")
                t1 = time.perf_counter()
                for c in ad.get("setup", []):
                    await run_calls(conn, [c], v)
                await run_calls(conn, calls_of(ad, "navigate"), v)
                first_nav_ms.append((time.perf_counter() - t1) * 1000.0)
        except Exception as e:  # noqa: BLE001
            errors.append(f"cold run {i}: {e!r}"[:500])
            log(f"  cold run {i} failed: {e!r}"[:300])
    return {"start_ms": summarize(start_ms), "first_navigate_ms": summarize(first_nav_ms),
            "start_runs_ms": [round(x, 1) for x in start_ms], "first_navigate_runs_ms": [round(x, 1) for x in first_nav_ms]}


async def bench(ad: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"mcp-bench-{ad['name']}-", dir=args.tmp))
    outdir = workdir / "out"
    outdir.mkdir()
    base_vars: dict[str, Any] = {
        "workdir": str(workdir), "outdir": str(outdir), "bench_dir": str(HERE),
        "env_dir": os.environ.get("PEERS_ENV", str(Path.home() / ".cache" / "mcp-peers")),
        "chromium": os.environ.get("CHROMIUM", "/usr/bin/chromium"), "port": free_port(),
    }
    overrides = dict(kv.split("=", 1) for kv in args.var)
    base_vars.update(overrides)
    errors: list[str] = []
    result: dict[str, Any] = {
        "schema": "peers-mcp-bench/2", "adapter": ad["name"], "adapter_file": ad["_path"], "label": ad["label"],
        "version": adapter_version(ad), "transport": ad["transport"], "tag": args.tag, "environment": environment(),
        "params": {"repeat": args.repeat, "cold_runs": args.cold_runs, "fixtures": args.fixtures,
                   "call_timeout_s": args.call_timeout, "plans": {f: {**PLANS, **REAL_PLANS, "task": TASK}[f] for f in args.fixtures}, "docs": args.docs,
                   "targets": TARGETS, "tokens": "approx_tokens = read_bytes / 4",
                   "read_bytes": "the larger of the text blocks and structuredContent (JSON), per call",
                   "vars": {k: ("(redacted)" if "token" in k.lower() else val) for k, val in overrides.items()}},
        "errors": errors,
    }
    stderr_path = workdir / "server.stderr.log"
    errlog = open(stderr_path, "w")  # noqa: SIM115
    chromium_dirs_before = chromium_tmp_dirs()
    try:
        with FixtureServer(FIXTURES) as site, FixtureServer(Path(args.docs)) as docs:
            sites = {"fixtures": site, "docs": docs}
            log(f"{ad['name']}: fixtures on 127.0.0.1:{site.port}, docs on 127.0.0.1:{docs.port}; "
                f"{args.cold_runs} cold runs")
            if args.cold_runs:
                result["cold"] = await cold_runs(ad, base_vars, site, args.cold_runs, errlog, args.call_timeout, errors, overrides)
                log(f"  cold start {result['cold']['start_ms']}")
                log(f"  first navigate {result['cold']['first_navigate_ms']}")
            v = dict(base_vars)
            if "port" not in overrides:
                v["port"] = free_port()
            t0 = time.perf_counter()
            async with connect(ad, v, errlog, args.call_timeout) as conn:
                result["session_start_ms"] = round((time.perf_counter() - t0) * 1000.0, 1)
                si = conn.init.server_info
                result["server_info"] = {"name": si.name, "version": si.version}
                result["protocol_version"] = getattr(conn.init, "protocol_version", None)
                names = [t.name for t in conn.tools.tools]
                result["tool_count"] = len(names)
                result["tools"] = names
                result["tools_list_bytes"] = wire_bytes(conn.tools)
                needed = {c["tool"] for s in ad["steps"] for c in calls_of(ad, s)} | {c["tool"] for c in ad.get("setup", [])}
                missing = sorted(needed - set(names))
                if missing:
                    raise RuntimeError(f"server lacks tools {missing}")
                t1 = time.perf_counter()
                for c in ad.get("setup", []):
                    await run_calls(conn, [c], v)
                v["url"] = site.url("form.html", "warm")
                await run_calls(conn, calls_of(ad, "navigate"), v)
                result["session_first_navigate_ms"] = round((time.perf_counter() - t1) * 1000.0, 1)
                result["fixtures"] = {}
                for fx in args.fixtures:
                    if fx == "task":
                        result["task"] = await bench_task(conn, ad, v, docs, args, errors)
                    else:
                        result["fixtures"][fx] = await bench_fixture(conn, ad, fx, v, sites, args, errors, outdir)
                result["rss_tree_mb_end"] = tree_rss_mb(conn.pid) if conn.pid else None
    except Exception as e:  # noqa: BLE001
        errors.append(f"fatal: {e!r}"[:800])
        log(f"  FATAL {e!r}"[:400])
    finally:
        errlog.close()
        result["server_stderr_tail"] = stderr_path.read_text(errors="replace")[-2500:]
        result["stale_chromium_tmp_dirs_removed"] = remove_stale_chromium_dirs(chromium_dirs_before)
        if args.keep_workdir:
            result["workdir"] = str(workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    fr = result.get("fixtures", {})
    ifr = fr.get("iframe", {})
    result["iframe_support"] = None if not ifr else bool(ifr.get("verified", {}).get("frame_click"))
    return result


async def bench_fixture(conn: Conn, ad: dict[str, Any], fx: str, v: dict[str, Any], sites: dict[str, FixtureServer],
                        args: argparse.Namespace, errors: list[str], outdir: Path) -> dict[str, Any]:
    plan = {**PLANS, **REAL_PLANS}[fx]
    site = sites[plan.get("site", "fixtures")]
    steps = [s for s in plan["steps"] if s in ad["steps"] or (s == "frame_click" and "click" in ad["steps"])]
    skipped = [s for s in plan["steps"] if s not in steps]
    recs: dict[str, list[dict[str, Any]]] = {s: [] for s in steps}
    fails: dict[str, int] = {s: 0 for s in steps}
    verified = {"type": 0, "click": 0, "frame_click": 0}
    ref_found = {s: 0 for s in steps if s in TARGETS}
    samples: dict[str, str] = {}
    png_meta: list[dict[str, Any]] = []
    log(f"  fixture {fx}: {args.repeat} x {steps}")
    for i in range(args.repeat):
        iter_id = f"{fx}-{i:03d}"
        v["url"] = site.url(plan["page"], iter_id)
        v["text"] = f"hello lomi {i:03d}"
        snap = ""
        for step in steps:
            calls = calls_of(ad, step if step in ad["steps"] else "click")
            if step in TARGETS:
                v["label"] = TARGETS[step][1]
                v["role"] = TARGETS[step][0]
                ref = find_ref(ad, step, snap)
                if ref is None:
                    fails[step] += 1
                    msg = f"{fx} iter {i} {step}: no ref for {TARGETS[step][0]} {TARGETS[step][1]!r} in snapshot"
                    if fails[step] <= 2:
                        errors.append(msg)
                        log("    " + msg)
                    continue
                ref_found[step] += 1
                v["ref"] = ref
            try:
                rec = await run_calls(conn, calls, v)
            except Exception as e:  # noqa: BLE001
                fails[step] += 1
                msg = f"{fx} iter {i} {step}: {e!r}"[:500]
                if fails[step] <= 3:
                    errors.append(msg)
                    log("    " + msg[:300])
                continue
            entry = {"ms": rec["ms"], "text_bytes": rec["text_bytes"], "read_bytes": rec["read_bytes"], "wire_bytes": rec["wire_bytes"]}
            if step == "snapshot":
                snap = rec["text"]
                if ad.get("truncated_regex"):
                    entry["cut_short"] = bool(re.search(ad["truncated_regex"], snap, re.M))
            if step in ("screenshot", "full_capture"):
                png, how = screenshot_png(rec["results"][-1], rec["text"], [outdir, Path(v["workdir"])])
                meta = png_info(png) if png else {"png_bytes": None, "png_ok": False}
                meta["source"] = how
                entry.update(meta)
                png_meta.append(meta)
                if png and args.save_screenshots and i == 0:
                    (RESULTS / f"screenshot-{ad['name']}-{fx}.png").write_bytes(png)
            if i == 0:
                samples[step] = rec["text"][:4000]
                if args.dump_dir:
                    d = Path(args.dump_dir)
                    d.mkdir(parents=True, exist_ok=True)
                    (d / f"{ad['name']}-{fx}-{step}.txt").write_text(rec["text"])
            recs[step].append(entry)
            # verification, outside the timed region: one extra snapshot, look for the page's reaction
            ver = plan.get("verify")
            if ver and ver["after"] == step:
                try:
                    vrec = await run_calls(conn, calls_of(ad, "snapshot"), v)
                    for what, needle in ver["checks"].items():
                        ok = subst(needle, v) in vrec["text"]
                        verified[what] += ok
                        if not ok and i == 0:
                            errors.append(f"{fx} iter 0: {what} not verified ({subst(needle, v)!r} not in snapshot)")
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{fx} iter {i} verify snapshot: {e!r}"[:300])
    out: dict[str, Any] = {"page": plan["page"], "steps": {}, "skipped_steps": skipped, "failures": fails,
                           "refs_found": ref_found,
                           "verified": {k: val for k, val in verified.items() if k in (plan.get("verify") or {}).get("checks", {})},
                           "sample_text_head": samples}
    for step, rs in recs.items():
        tb = [r["read_bytes"] for r in rs]
        s: dict[str, Any] = {
            "tools": [c["tool"] for c in calls_of(ad, step if step in ad["steps"] else "click")],
            "ok": len(rs), "failed": fails[step],
            "latency_ms": summarize([r["ms"] for r in rs]),
            "text_bytes": summarize([r["text_bytes"] for r in rs]),
            "read_bytes": summarize(tb),
            "approx_tokens": summarize([b / 4 for b in tb]),
            "wire_bytes": summarize([r["wire_bytes"] for r in rs]),
        }
        if any("cut_short" in r for r in rs):
            s["cut_short"] = sum(1 for r in rs if r.get("cut_short"))
        if step in ("screenshot", "full_capture"):
            s["png_bytes"] = summarize([r["png_bytes"] for r in rs if r.get("png_bytes")])
            s["png_ok"] = sum(1 for r in rs if r.get("png_ok"))
            s["png_dims"] = sorted({f"{r['width']}x{r['height']}" for r in rs if r.get("width")})
            s["png_decoded"] = sorted({r.get("decoded", "") for r in rs if r.get("decoded")})
            s["png_source"] = sorted({r.get("source", "") for r in rs})
        out["steps"][step] = s
        lat = s["latency_ms"]
        log(f"    {step:<12} ok {len(rs):>2}/{args.repeat}  ms min/med/max "
            f"{lat.get('min')}/{lat.get('median')}/{lat.get('max')}  read bytes med {s['read_bytes'].get('median')}")
    return out


async def bench_task(conn: Conn, ad: dict[str, Any], v: dict[str, Any], docs: FixtureServer,
                     args: argparse.Namespace, errors: list[str]) -> dict[str, Any]:
    """The search-and-click task, --repeat times: navigate to TASK["start"], then for each hop
    the adapter's `locate` (its snapshot unless it has one), the ref read from that answer as an
    agent would (`locate_ref_pattern`, else `ref_pattern`), and `click`. Timed: every call of
    the task; bytes: every answer as read. A run succeeds when each hop found its ref and every
    call answered, and the adapter's untimed `where` (else the last answer) shows the URL."""
    locate = calls_of(ad, "locate" if "locate" in ad["steps"] else "snapshot")
    pats = ad.get("locate_ref_pattern") or ad.get("ref_pattern")
    lands = f"http://127.0.0.1:{docs.port}/{TASK['lands']}"
    lands_rx = re.compile(re.escape(lands) + r"(?![\w-])")
    runs: list[dict[str, Any]] = []
    samples: dict[str, str] = {}
    log(f"  task: {args.repeat} x navigate {TASK['start']}, then locate + click for {TASK['hops']}")
    for i in range(args.repeat):
        v["url"] = docs.url(TASK["start"], f"task-{i:03d}")
        run: dict[str, Any] = {"ms": 0.0, "read_bytes": 0, "calls": 0, "ok": False, "hop_bytes": [], "parts": {}}
        failure = None
        t0 = time.perf_counter()
        try:
            rec = await run_calls(conn, calls_of(ad, "navigate"), v)
            run["ms"] += rec["ms"]
            run["read_bytes"] += rec["read_bytes"]
            run["calls"] += len(rec["texts"])
            run["parts"]["navigate"] = (rec["ms"], rec["read_bytes"])
            last = rec["text"]
            for hop, (role, label) in enumerate(TASK["hops"]):
                v["role"], v["label"] = role, label
                found = await run_calls(conn, locate, v)
                ref = match_ref(pats, role, label, found["text"])
                clicked = None
                if ref is not None:
                    v["ref"] = ref
                    clicked = await run_calls(conn, calls_of(ad, "click"), v)
                hop_recs = [found] + ([clicked] if clicked else [])
                run["ms"] += sum(r["ms"] for r in hop_recs)
                run["read_bytes"] += sum(r["read_bytes"] for r in hop_recs)
                run["calls"] += sum(len(r["texts"]) for r in hop_recs)
                run["parts"][f"hop{hop + 1} locate"] = (found["ms"], found["read_bytes"])
                if clicked:
                    run["parts"][f"hop{hop + 1} click"] = (clicked["ms"], clicked["read_bytes"])
                run["hop_bytes"].append({"locate": found["read_bytes"], "click": clicked["read_bytes"] if clicked else None})
                if i == 0:
                    samples[f"hop{hop + 1} locate"] = found["text"][:4000]
                    if clicked:
                        samples[f"hop{hop + 1} click"] = clicked["text"][:4000]
                    if args.dump_dir:
                        d = Path(args.dump_dir)
                        d.mkdir(parents=True, exist_ok=True)
                        (d / f"{ad['name']}-task-hop{hop + 1}-locate.txt").write_text(found["text"])
                if clicked is None:
                    failure = f"hop {hop + 1}: no ref for {role} {label!r} in the {locate[0]['tool']} answer"
                    break
                last = clicked["text"]
        except Exception as e:  # noqa: BLE001
            failure = f"{e!r}"[:400]
        run["wall_ms"] = (time.perf_counter() - t0) * 1000.0
        if failure is None:
            # verification, outside the timed region: the URL the tab shows
            try:
                shown = (await run_calls(conn, calls_of(ad, "where"), v))["text"] if "where" in ad["steps"] else last
                run["ok"] = bool(lands_rx.search(shown))
                if not run["ok"]:
                    failure = f"landed elsewhere: {lands!r} not in {shown[:300]!r}"
            except Exception as e:  # noqa: BLE001
                failure = f"where: {e!r}"[:400]
        if failure:
            run["failure"] = failure
            if sum(1 for r in runs if r.get("failure")) < 3:
                errors.append(f"task run {i}: {failure}")
                log(f"    task run {i}: {failure}"[:300])
        runs.append(run)
    done = [r for r in runs if r["ok"]]
    out = {
        "start": TASK["start"], "hops": TASK["hops"], "lands": TASK["lands"],
        "locate_tools": [c["tool"] for c in locate], "click_tools": [c["tool"] for c in calls_of(ad, "click")],
        "runs": len(runs), "succeeded": len(done),
        "latency_ms": summarize([r["ms"] for r in done]),
        "wall_ms": summarize([r["wall_ms"] for r in done]),
        "read_bytes": summarize([r["read_bytes"] for r in done]),
        "approx_tokens": summarize([r["read_bytes"] / 4 for r in done]),
        "calls": summarize([r["calls"] for r in done]),
        "hop_locate_bytes": [summarize([r["hop_bytes"][h]["locate"] for r in done]) for h in range(len(TASK["hops"]))],
        # where the time and bytes go: each part of the task (navigate, hopN locate, hopN click)
        "parts": {part: {"latency_ms": summarize([r["parts"][part][0] for r in done]),
                         "read_bytes": summarize([r["parts"][part][1] for r in done])}
                  for part in (done[0]["parts"] if done else {})},
        "failures": [r["failure"] for r in runs if r.get("failure")][:5],
        "sample_text_head": samples,
    }
    lat = out["latency_ms"]
    log(f"    task         ok {len(done):>2}/{len(runs)}  ms min/med/max {lat.get('min')}/{lat.get('median')}/{lat.get('max')}"
        f"  read bytes med {out['read_bytes'].get('median')}")
    return out


# --------------------------------------------------------------------------
# Environment and markdown
# --------------------------------------------------------------------------


def _cmd(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def environment() -> dict[str, Any]:
    try:
        import importlib.metadata as md

        mcp_v = md.version("mcp")
    except Exception:  # noqa: BLE001
        mcp_v = "?"
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(), "kernel": platform.release(), "cpu_count": os.cpu_count(),
        "loadavg_at_start": load, "python": platform.python_version(), "mcp_python_sdk": mcp_v,
        "node": _cmd(["node", "--version"]),
        "chromium": _cmd([os.environ.get("CHROMIUM", "/usr/bin/chromium"), "--version"]),
    }


def _mmm(s: dict[str, Any] | None, nd: int = 0) -> str:
    if not s or not s.get("n"):
        return "–"
    f = (lambda x: f"{x:,.{nd}f}")
    return f"{f(s['min'])} / {f(s['median'])} / {f(s['max'])}"


def read_of(step: dict[str, Any]) -> dict[str, Any] | None:
    """Bytes the agent read (result files before read_bytes existed: the text blocks)."""
    return step.get("read_bytes") or step.get("text_bytes")


def render_markdown(results: list[dict[str, Any]]) -> str:
    cols = [f"{r['label']} {r.get('version', '')}".strip() + (f" [{r['tag']}]" if r.get("tag") else "") for r in results]
    head = "| metric (min / median / max) | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols)

    def row(name: str, vals: list[str]) -> str:
        return f"| {name} | " + " | ".join(vals) + " |"

    def st(r: dict[str, Any], fx: str, step: str) -> dict[str, Any]:
        return r.get("fixtures", {}).get(fx, {}).get("steps", {}).get(step, {})

    env = results[0].get("environment", {})
    p = results[0].get("params", {})
    cold = any(r.get("cold", {}).get("start_ms", {}).get("n") for r in results)
    out = [f"# MCP browser servers — side by side ({env.get('date_utc', '')})", "",
           f"{env.get('cpu_count')} CPUs (load at start {env.get('loadavg_at_start')}), {env.get('chromium')}, "
           f"Node {env.get('node')}, Python {env.get('python')}, mcp SDK {env.get('mcp_python_sdk')}. "
           f"Each step repeated {p.get('repeat')} times"
           + (f"; cold start over {p.get('cold_runs')} fresh processes. " if cold else ". ")
           + "Timings are wall-clock ms on a shared, noisy machine: compare relatively. "
           "Response bytes = what the agent reads: the larger of the text blocks and structuredContent "
           "(a client gives its model one or the other). Tokens ≈ those bytes / 4.", "", head]
    if cold:
        out.append(row("cold start ms (spawn → initialize + tools/list)", [_mmm(r.get("cold", {}).get("start_ms")) for r in results]))
        out.append(row("first navigate ms (incl. browser launch)", [_mmm(r.get("cold", {}).get("first_navigate_ms")) for r in results]))
    out.append(row("tools listed / tools/list bytes", [f"{r.get('tool_count', '–')} / {r.get('tools_list_bytes', '–'):,}"
                                                       if isinstance(r.get('tools_list_bytes'), int) else "–" for r in results]))
    for fx, steps in (("form", ["navigate", "snapshot", "type", "click", "screenshot"]),
                      ("large", ["navigate", "snapshot", "screenshot"]),
                      ("iframe", ["navigate", "snapshot", "frame_click"]),
                      *((name, plan["steps"]) for name, plan in REAL_PLANS.items())):
        if not any(fx in r.get("fixtures", {}) for r in results):
            continue
        name = f"{fx} ({REAL_PLANS[fx]['page']})" if fx in REAL_PLANS else fx
        for step in steps:
            out.append(row(f"{name} · {step} ms", [_mmm(st(r, fx, step).get("latency_ms")) for r in results]))
            if step in ("snapshot", "navigate", "type", "click", "frame_click"):
                out.append(row(f"{name} · {step} response bytes (≈tokens median)", [
                    (_mmm(read_of(st(r, fx, step))) + f" (≈{st(r, fx, step)['approx_tokens']['median']:,.0f})")
                    if (read_of(st(r, fx, step)) or {}).get("n") else "–" for r in results]))
            if step == "snapshot" and fx in REAL_PLANS:
                out.append(row(f"{name} · snapshot answers cut short (the server's own limit)", [
                    (f"{st(r, fx, step)['cut_short']}/{st(r, fx, step)['ok']}" if "cut_short" in st(r, fx, step) else "none said")
                    if st(r, fx, step) else "–" for r in results]))
            if step in ("screenshot", "full_capture"):
                out.append(row(f"{name} · {step} PNG bytes", [_mmm(st(r, fx, step).get("png_bytes")) for r in results]))
                out.append(row(f"{name} · {step} result wire bytes (JSON, base64 image)", [_mmm(st(r, fx, step).get("wire_bytes")) for r in results]))
                out.append(row(f"{name} · {step} PNG ok / dims", [
                    f"{st(r, fx, step).get('png_ok', 0)}/{p.get('repeat')} {','.join(st(r, fx, step).get('png_dims', []))}"
                    if st(r, fx, step) else "–" for r in results]))
    if any("task" in r for r in results):
        hops = " → ".join(f'{role} "{label}"' for role, label in TASK["hops"])
        out.append(row(f"task ({TASK['start']}: {hops}) · succeeded", [
            f"{r['task']['succeeded']}/{r['task']['runs']}" if "task" in r else "–" for r in results]))
        out.append(row("task · ms (every call, summed)", [_mmm(r.get("task", {}).get("latency_ms")) for r in results]))
        out.append(row("task · bytes read (every answer, ≈tokens median)", [
            _mmm(r["task"]["read_bytes"]) + f" (≈{r['task']['approx_tokens']['median']:,.0f})"
            if r.get("task", {}).get("read_bytes", {}).get("n") else "–" for r in results]))
        out.append(row("task · calls", [_mmm(r.get("task", {}).get("calls")) for r in results]))
        parts = list(next((r["task"].get("parts", {}) for r in results if r.get("task", {}).get("parts")), {}))
        for part in parts:
            out.append(row(f"task · {part} ms", [_mmm(r.get("task", {}).get("parts", {}).get(part, {}).get("latency_ms")) for r in results]))
            out.append(row(f"task · {part} bytes", [_mmm(r.get("task", {}).get("parts", {}).get(part, {}).get("read_bytes")) for r in results]))
    if any(fx in r.get("fixtures", {}) for r in results for fx in ("form", "iframe")):
        out.append(row("page verified: typed text / click / iframe click", [
            "{}/{}/{} of {}".format(r.get("fixtures", {}).get("form", {}).get("verified", {}).get("type", "–"),
                                    r.get("fixtures", {}).get("form", {}).get("verified", {}).get("click", "–"),
                                    r.get("fixtures", {}).get("iframe", {}).get("verified", {}).get("frame_click", "–"),
                                    p.get("repeat")) for r in results]))
        out.append(row("iframe support", [{True: "yes", False: "no", None: "–"}[r.get("iframe_support")] for r in results]))
    out.append(row("server process tree, sum of RSS at end (MiB; overcounts shared pages)", [str(r.get("rss_tree_mb_end", "–")) for r in results]))
    out.append(row("errors recorded", [str(len(r.get("errors", []))) for r in results]))
    out.append("")
    out.append("Tools used per step:")
    out.append("")
    for r in results:
        fx = r.get("fixtures", {})
        used = {}
        for f in fx.values():
            for s, d in f.get("steps", {}).items():
                used[s] = " + ".join(f"`{t}`" for t in d.get("tools", []))
        if "task" in r:
            used["task locate"] = " + ".join(f"`{t}`" for t in r["task"]["locate_tools"])
            used["task click"] = " + ".join(f"`{t}`" for t in r["task"]["click_tools"])
        out.append(f"- {r['label']}: " + "; ".join(f"{s} → {t}" for s, t in used.items()))
    errs = [(r["label"], e) for r in results for e in r.get("errors", [])]
    if errs:
        out += ["", "Errors:", ""] + [f"- {lab}: `{e[:300]}`" for lab, e in errs]
    out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def main() -> None:
    global RESULTS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="benchmark one or more adapters (one after the other)")
    r.add_argument("--adapter", action="append", required=True, help="adapter JSON/YAML file (repeatable)")
    r.add_argument("--repeat", type=int, default=15, help="repetitions of each step per fixture (default 15)")
    r.add_argument("--cold-runs", type=int, default=None, help="fresh processes for cold start (default = --repeat)")
    r.add_argument("--scenario", choices=list(SCENARIOS), default="synthetic",
                   help="synthetic: the fixture pages (form, large, iframe); real: Python's documentation "
                        "(stdtypes, functions, tutorial, fullpage, task) and no cold runs unless --cold-runs")
    r.add_argument("--fixtures", default=None, help="comma list, default the scenario's: "
                   + "; ".join(f"{k}: {','.join(v)}" for k, v in SCENARIOS.items()))
    r.add_argument("--docs", default=str(DOCS), help=f"the real pages' root (default {DOCS}, Debian's python3.11-doc)")
    r.add_argument("--call-timeout", type=float, default=60.0, help="seconds per tool call")
    r.add_argument("--results-dir", default=str(RESULTS))
    r.add_argument("--tag", default="", help="suffix for result file names")
    r.add_argument("--tmp", default=None, help="parent dir of per-run work dirs (default system temp)")
    r.add_argument("--keep-workdir", action="store_true")
    r.add_argument("--save-screenshots", action="store_true", help="save the first PNG per fixture into results/")
    r.add_argument("--dump-dir", default=None, help="write first-iteration response texts here")
    r.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="set/override an adapter variable, e.g. --var port=8931 for an already running HTTP server")
    rp = sub.add_parser("report", help="merge result JSONs into one side-by-side markdown table")
    rp.add_argument("files", nargs="+")
    rp.add_argument("--out", required=True, help="markdown file to write")
    ck = sub.add_parser("check", help="validate adapter files")
    ck.add_argument("--adapter", action="append", required=True)
    args = ap.parse_args()

    if args.cmd == "check":
        for a in args.adapter:
            ad = load_adapter(a)
            state = "runnable" if ad.get("runnable", True) else "NOT runnable yet"
            print(f"{ad['_path']}: ok ({ad['name']}, {ad['transport']}, steps {list(ad['steps'])}, {state})")
        return
    if args.cmd == "report":
        res = []
        for f in args.files:
            d = json.loads(Path(f).read_text())
            res += d if isinstance(d, list) else [d]
        Path(args.out).write_text(render_markdown(res))
        print(f"wrote {Path(args.out).resolve()}")
        return

    RESULTS = Path(args.results_dir).resolve()
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.fixtures is None:
        args.fixtures = ",".join(SCENARIOS[args.scenario])
    args.fixtures = [f.strip() for f in args.fixtures.split(",") if f.strip()]
    known = [*PLANS, *REAL_PLANS, "task"]
    bad = [f for f in args.fixtures if f not in known]
    if bad:
        raise SystemExit(f"unknown fixtures {bad}; known {known}")
    if any(f in REAL_PLANS or f == "task" for f in args.fixtures) and not (Path(args.docs) / "library" / "functions.html").is_file():
        raise SystemExit(f"{args.docs} has no library/functions.html: install Debian's python3.11-doc")
    if args.cold_runs is None:
        args.cold_runs = 0 if args.scenario == "real" else args.repeat
    ads = [load_adapter(a) for a in args.adapter]
    for ad in ads:
        if not ad.get("runnable", True):
            raise SystemExit(f"{ad['_path']} is marked \"runnable\": false ({ad.get('note', '')})")
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    written = []
    for ad in ads:
        res = anyio.run(bench, ad, args)
        stem = f"{ad['name']}-{date}{('-' + args.tag) if args.tag else ''}"
        jp = RESULTS / f"{stem}.json"
        jp.write_text(json.dumps(res, indent=2, default=str) + "\n")
        (RESULTS / f"{stem}.md").write_text(render_markdown([res]))
        log(f"wrote {jp} and {jp.with_suffix('.md')}")
        written.append(jp)
    if len(written) > 1:
        sp = RESULTS / f"summary-{date}{('-' + args.tag) if args.tag else ''}.md"
        sp.write_text(render_markdown([json.loads(p.read_text()) for p in written]))
        log(f"wrote {sp}")


if __name__ == "__main__":
    main()
