#!/usr/bin/env python3
"""Capture sets, Lomi beside Playwright: 10 pages of Python's documentation (python3.11-doc,
served on 127.0.0.1) at 2 viewports, full page, 20 PNGs written each run.

Lomi: one `lomi_browser_capture_set` call in a browser panel created beforehand, followed with
`lomi_operation_get` until it settles (the PNGs, their comparison with the files they replace
and the manifest are in the project then). Playwright: playwright-core driving the same
Chromium in one browser launched beforehand, `setViewportSize` + `goto` + `screenshot
({fullPage: true})` + a file write per capture (bench/capture_set_playwright.mjs). Runs
alternate (Lomi, Playwright, Lomi, …) so both meet the same load on the machine. Each run
writes into a fresh folder, so Lomi compares with nothing and writes every file.

Usage: capture_set.py --lomi BIN --datadir DIR --token TOKEN --project DIR [--repeat 5]
Prints min / median / max seconds of each, the bytes written and the ratio of the medians.
"""

import argparse
import asyncio
import functools
import http.server
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

DOCS = Path("/usr/share/doc/python3.11-doc/html")
PAGES = [
    "library/os.path.html", "library/json.html", "library/glob.html", "library/string.html",
    "library/time.html", "library/random.html", "library/shutil.html", "library/tempfile.html",
    "tutorial/index.html", "tutorial/controlflow.html",
]
VIEWPORTS = [{"width": 1280, "height": 800}, {"width": 390, "height": 844}]
HERE = Path(__file__).resolve().parent


def serve_docs() -> http.server.ThreadingHTTPServer:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(DOCS)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def call(session: ClientSession, tool: str, args: dict) -> dict:
    result = await session.call_tool(tool, args)
    envelope = result.structured_content or {}
    if envelope.get("status") != "ok":
        raise RuntimeError(f"{tool}: {json.dumps(envelope)[:2000]}")
    return envelope["data"]


class Playwright:
    """The peer's node process: one browser, one set per `run`."""

    def __init__(self, args, urls: list[str], work: Path) -> None:
        config = work / "config.json"
        config.write_text(json.dumps({
            "urls": urls, "viewports": VIEWPORTS,
            "chromium": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
        }))
        env = dict(os.environ, NODE_PATH=str(Path(args.peers) / "node_modules"))
        self.proc = subprocess.Popen(
            ["node", str(HERE / "capture_set_playwright.mjs"), str(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(Path(args.peers)),
        )
        self.work = work
        assert json.loads(self.proc.stdout.readline())["ready"]

    def run(self, run: int) -> tuple[float, int]:
        self.proc.stdin.write(f"{self.work / f'playwright-run-{run}'}\n")
        self.proc.stdin.flush()
        figures = json.loads(self.proc.stdout.readline())
        assert figures["files"] == len(PAGES) * len(VIEWPORTS), figures
        return figures["ms"] / 1000, figures["bytes"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by a process and its live descendants (the
    browser's processes)."""
    import psutil

    total = 0.0
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


async def runs(args, urls: list[str]) -> tuple[list[float], int, list[float], int]:
    """Lomi's runs and Playwright's, alternating."""
    port = free_port()
    server = subprocess.Popen(
        [args.lomi, "serve", "--headless", "--http", f"127.0.0.1:{port}", "--data-dir", args.datadir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, LOMI_LOG="warn"),
    )
    work = Path(tempfile.mkdtemp(prefix="capture-set-playwright-"))
    peer = Playwright(args, urls, work)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        headers = {"Authorization": f"Bearer {args.token}"}
        async with create_mcp_http_client(headers=headers) as http, \
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            workspace = (await call(session, "lomi_workspace_list", {}))["workspaces"][0]["workspaceId"]
            epoch = (await call(session, "lomi_connect", {"workspaceId": workspace}))["retryEpoch"]
            revision = (await call(session, "lomi_panel_list", {"workspaceId": workspace}))["domainRevision"]
            created = await call(session, "lomi_browser_create", {
                "workspaceId": workspace, "title": "Bench", "expectedRevision": revision,
                "retryEpoch": epoch, "requestKey": "bench-create",
            })
            while created["state"] not in ("succeeded", "failed"):
                created = await call(session, "lomi_operation_get", {"operationId": created["operationId"]})
            panel, generation = created["result"]["panelId"], created["result"]["browserGeneration"]
            targets = [
                {"name": f"page-{i}-{v['width']}", "url": url, "viewport": v, "fullPage": True}
                for i, url in enumerate(urls) for v in VIEWPORTS
            ]
            lomi, lomi_bytes, playwright, playwright_bytes = [], 0, [], 0
            for run in range(args.repeat):
                folder = f"lomi-run-{run}"
                (Path(args.project) / folder).mkdir()
                started, cpu = time.perf_counter(), cpu_seconds(server.pid)
                op = await call(session, "lomi_browser_capture_set", {
                    "panelId": panel, "browserGeneration": generation, "folder": folder,
                    "targets": targets, "retryEpoch": epoch, "requestKey": f"bench-set-{run}",
                })
                while op["state"] not in ("succeeded", "failed", "cancelled", "outcome_unknown"):
                    await asyncio.sleep(0.01)
                    op = await call(session, "lomi_operation_get", {"operationId": op["operationId"]})
                lomi.append(time.perf_counter() - started)
                lomi_cpu = cpu_seconds(server.pid) - cpu
                if op["state"] != "succeeded":
                    raise RuntimeError(json.dumps(op)[:2000])
                lomi_bytes = sum(c["bytes"] for c in op["result"]["captures"])
                cpu = cpu_seconds(peer.proc.pid)
                seconds, playwright_bytes = await asyncio.to_thread(peer.run, run)
                peer_cpu = cpu_seconds(peer.proc.pid) - cpu
                playwright.append(seconds)
                print(
                    f"run {run}: Lomi {lomi[-1]:.2f} s ({lomi_cpu:.1f} CPU-s with its browser), "
                    f"Playwright {seconds:.2f} s ({peer_cpu:.1f} CPU-s with its browser)",
                    file=sys.stderr,
                )
            return lomi, lomi_bytes, playwright, playwright_bytes
    finally:
        peer.close()
        shutil.rmtree(work, ignore_errors=True)
        server.terminate()
        server.wait(timeout=30)


def line(label: str, times: list[float], written: int) -> str:
    return (f"{label:<11} min {min(times):6.2f} s  median {statistics.median(times):6.2f} s  "
            f"max {max(times):6.2f} s  ({len(times)} runs, {written / 1e6:.1f} MB in 20 PNGs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lomi", required=True)
    parser.add_argument("--datadir", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--peers", default=os.environ.get("PEERS_ENV", str(Path.home() / ".cache" / "mcp-peers")))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    docs = serve_docs()
    urls = [f"http://127.0.0.1:{docs.server_address[1]}/{page}" for page in PAGES]
    try:
        lomi, lomi_bytes, peer, peer_bytes = asyncio.run(runs(args, urls))
    finally:
        docs.shutdown()
    print(line("Lomi", lomi, lomi_bytes))
    print(line("Playwright", peer, peer_bytes))
    ratio = statistics.median(lomi) / statistics.median(peer)
    print(f"capture set (10 pages x 2 viewports, full page): Lomi / Playwright = {ratio:.2f}x (target <= 0.70x)")


if __name__ == "__main__":
    main()
