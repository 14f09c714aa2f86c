"""Load benchmark for Lomi's MCP endpoint: N concurrent MCP sessions doing real mutations
(lomi_workspace_update through the operation engine) for a bounded time, printing throughput
and latency percentiles, the cold start of `lomi serve` to a served tools/list, and the
store's raw admission rate measured in the same run. Run it with bench/load (see README)."""

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def spread(values):
    return f"min {min(values):8.1f}  median {statistics.median(values):8.1f}  max {max(values):8.1f}"


class Serve:
    def __init__(self, lomi, data_dir):
        self.lomi = lomi
        self.data_dir = Path(data_dir)
        self.process = None

    def start(self):
        broker_file = self.data_dir / "broker.json"
        if broker_file.exists():
            broker_file.unlink()
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [self.lomi, "serve", "--headless", "--http", "127.0.0.1:0", "--data-dir", str(self.data_dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not broker_file.exists():
            if self.process.poll() is not None:
                raise RuntimeError("lomi serve exited early")
            time.sleep(0.001)
        for _ in range(1000):
            try:
                self.url = json.loads(broker_file.read_text())["url"]
                break
            except (json.JSONDecodeError, KeyError):
                time.sleep(0.001)
        return started

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def cli(self, *args):
        out = subprocess.run(
            [self.lomi, *args, "--data-dir", str(self.data_dir), "--json"], check=True, capture_output=True, text=True
        )
        return json.loads(out.stdout)


def parse_reply(response):
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                payload = line[5:].strip()
                if payload:
                    message = json.loads(payload)
                    if "id" in message:
                        return message
        raise RuntimeError(f"no JSON-RPC reply in stream: {response.text[:200]}")
    return response.json()


class Session:
    def __init__(self, client, url, token=None):
        self.client = client
        self.url = url
        self.headers = dict(ACCEPT)
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.next_id = 0

    async def rpc(self, method, params=None):
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        response = await self.client.post(self.url, headers=self.headers, json=body)
        response.raise_for_status()
        if "mcp-session-id" in response.headers:
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        return parse_reply(response)

    async def open(self):
        await self.rpc(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "lomi-load", "version": "1"}},
        )
        await self.client.post(
            self.url, headers=self.headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )

    async def call(self, tool, arguments):
        reply = await self.rpc("tools/call", {"name": tool, "arguments": arguments})
        return reply["result"]["structuredContent"]


async def cold_start(lomi, runs):
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as data_dir:
            serve = Serve(lomi, data_dir)
            started = serve.start()
            try:
                async with httpx.AsyncClient(timeout=30) as client:
                    session = Session(client, serve.url)
                    await session.open()
                    tools = await session.rpc("tools/list")
                    assert tools["result"]["tools"], tools
                times.append((time.perf_counter() - started) * 1000)
            finally:
                serve.stop()
    return times


async def worker(client, url, token, workspace_id, deadline, latencies, failures, interval=0.0, read_only=False):
    session = Session(client, url, token)
    await session.open()
    connection = await session.call("lomi_connect", {"workspaceId": workspace_id})
    epoch = connection["data"]["retryEpoch"]
    revision = connection["data"]["domainRevision"]
    n = 0
    next_at = time.perf_counter()
    while time.time() < deadline:
        n += 1
        if interval:
            # Paced (open-loop) load: each session sends at its share of the target rate.
            next_at += interval
            delay = next_at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        started = time.perf_counter()
        if read_only:
            # The client's own ceiling: the same calls, sessions and processes, against a read.
            reply = await session.call("lomi_panel_list", {"workspaceId": workspace_id})
            latencies.append((time.perf_counter() - started) * 1000)
            if reply["status"] != "ok":
                failures.append(reply)
                return
            continue
        reply = await session.call(
            "lomi_workspace_update",
            {
                "workspaceId": workspace_id,
                "expectedRevision": revision,
                "retryEpoch": epoch,
                "requestKey": f"load-{n}",
                "change": {"rename": {"name": f"load {n}"}},
            },
        )
        latencies.append((time.perf_counter() - started) * 1000)
        data = reply.get("data") or {}
        if reply["status"] != "ok" or data.get("state") != "succeeded":
            failures.append(reply)
            return
        revision = data["result"]["workspace"]["domainRevision"]


async def drive(url, token, workspace_ids, deadline, interval, read_only=False):
    latencies, failures = [], []
    limits = httpx.Limits(max_connections=len(workspace_ids) * 2, max_keepalive_connections=len(workspace_ids) * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(
            *(worker(client, url, token, ws, deadline, latencies, failures, interval, read_only) for ws in workspace_ids)
        )
    return latencies, failures


def drive_process(job):
    """One load-generating process: its share of the sessions, on its own event loop (one
    Python process cannot keep 50 sessions busy on its own)."""
    url, token, workspace_ids, deadline, interval, read_only = job
    return asyncio.run(drive(url, token, workspace_ids, deadline, interval, read_only))


def load(lomi, sessions, seconds, processes, rate=0.0, read_only=False):
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as project:
        serve = Serve(lomi, data_dir)
        serve.start()
        try:
            workspaces = [
                serve.cli("workspace", "add", "--name", f"load {i}", "--project", project)["workspaceId"]
                for i in range(sessions)
            ]
            grants = [arg for ws in workspaces for arg in ("--workspace", ws)]
            token = serve.cli("pairing", "create", "--name", "load", *grants)["token"]
            shares = [workspaces[i::processes] for i in range(processes) if workspaces[i::processes]]
            with multiprocessing.Pool(len(shares)) as pool:
                started = time.perf_counter()
                deadline_wall = time.time() + seconds
                interval = sessions / rate if rate else 0.0
                jobs = [(serve.url, token, share, deadline_wall, interval, read_only) for share in shares]
                results = pool.map(drive_process, jobs)
                elapsed = time.perf_counter() - started
            latencies = [x for lat, _ in results for x in lat]
            failures = [f for _, fail in results for f in fail]
            if failures:
                raise RuntimeError(f"{len(failures)} sessions failed, first: {failures[0]}")
            return len(latencies) / elapsed, latencies
        finally:
            serve.stop()


def store_admission(root):
    out = subprocess.run(
        ["cargo", "bench", "--locked", "-q", "-p", "lomi-store", "--bench", "admission"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    return [line for line in out.stdout.splitlines() if line.strip()] or [out.stderr.strip()[-500:]]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lomi", required=True)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold-runs", type=int, default=7)
    parser.add_argument("--processes", type=int, default=4, help="load-generating processes")
    parser.add_argument("--rate", type=float, default=200.0, help="target rate of the paced run (mutations/s)")
    args = parser.parse_args()

    root = Path(__file__).resolve().parent.parent
    print(
        f"Lomi MCP load benchmark: {args.sessions} sessions x {args.seconds:.0f} s, {args.rounds} rounds, "
        f"{args.processes} client processes"
    )
    cold = asyncio.run(cold_start(args.lomi, args.cold_runs))
    print(f"cold start, spawn to served tools/list (ms):   {spread(cold)}")
    rates, p50s, p99s = [], [], []
    for _ in range(args.rounds):
        rate, latencies = load(args.lomi, args.sessions, args.seconds, args.processes)
        rates.append(rate)
        p50s.append(percentile(latencies, 0.50))
        p99s.append(percentile(latencies, 0.99))
    ceilings = [load(args.lomi, args.sessions, args.seconds, args.processes, read_only=True)[0] for _ in range(args.rounds)]
    print("saturated (every session sends its next mutation as soon as the last one settled):")
    print(f"  client ceiling: read-tool calls/s, same clients: {spread(ceilings)}")
    print(f"  mutations/s (settled, over MCP):              {spread(rates)}")
    print(f"  latency p50 (ms):                             {spread(p50s)}")
    print(f"  latency p99 (ms):                             {spread(p99s)}")
    rates, p50s, p99s = [], [], []
    for _ in range(args.rounds):
        rate, latencies = load(args.lomi, args.sessions, args.seconds, args.processes, args.rate)
        rates.append(rate)
        p50s.append(percentile(latencies, 0.50))
        p99s.append(percentile(latencies, 0.99))
    print(f"paced at {args.rate:.0f} mutations/s in all:")
    print(f"  mutations/s (settled, over MCP):              {spread(rates)}")
    print(f"  latency p50 (ms):                             {spread(p50s)}")
    print(f"  latency p99 (ms):                             {spread(p99s)}")
    print("store admission in the same run (cargo bench -p lomi-store):")
    for line in store_admission(root):
        print(f"  {line}")


if __name__ == "__main__":
    sys.exit(main())
