"""Load benchmark for Lomi's MCP endpoint: N concurrent MCP sessions doing real mutations
through the operation engine for a bounded time, saturated (each session sends its next call as
soon as the last one settled) and paced (a fixed total rate), printing throughput and latency
percentiles over repeated rounds, the cold start of `lomi serve` to a served tools/list, and
the store's raw admission rate measured in the same run. Run it with bench/load (see README).

Each mutation kind is measured on its own (`--mutation KIND` picks one): `file` is
`lomi_file_write` of a small file, each session its own file in its own workspace's project: a
real receipt (reserve, running, settled: durable commits) and a real atomic file write (fsync of
the file and its folder). The domain mutations change `domain.json` (written by group commit):
`rename` and `layout` are `lomi_workspace_update` (a new name; a new arrangement of two
terminal panels each session opened first), `panel` opens a terminal panel (`sleep`) and closes
it, two mutations that also start and end a process. The Python clients do `file` and `rename`."""

import argparse
import asyncio
import json
import multiprocessing
import os
import random
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


# The store's receipt cap for the load rounds: a round at 1,000 mutations/s makes more receipts
# than the default cap (4,096) holds, and filling it is Retention's concern, not this benchmark's.
STORE_CAP = 65_536


class Serve:
    def __init__(self, lomi, data_dir, store_cap=None):
        self.lomi = lomi
        self.data_dir = Path(data_dir)
        self.store_cap = store_cap
        self.process = None

    def start(self):
        broker_file = self.data_dir / "broker.json"
        if broker_file.exists():
            broker_file.unlink()
        cap = ["--store-cap", str(self.store_cap)] if self.store_cap else []
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [self.lomi, "serve", "--headless", "--http", "127.0.0.1:0", "--data-dir", str(self.data_dir), *cap],
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


async def worker(client, url, token, workspace_id, deadline, times, failures, mode):
    """One session: connects, then calls until `deadline`. `mode.interval` paces it (open
    loop); `mode.mutation` is "file", "rename" or "read" (the client's own ceiling: the same
    calls, sessions and processes, against a read). Each settled call appends (end, ms)."""
    session = Session(client, url, token)
    await session.open()
    connection = await session.call("lomi_connect", {"workspaceId": workspace_id})
    epoch = connection["data"]["retryEpoch"]
    revision = connection["data"]["domainRevision"]
    path = f"load-{workspace_id}.txt"
    if mode.mutation == "file":
        created = await session.call(
            "lomi_file_create",
            {"workspaceId": workspace_id, "path": path, "text": "0\n", "retryEpoch": epoch, "requestKey": "load-0"},
        )
        if (created.get("data") or {}).get("state") != "succeeded":
            failures.append(created)
            return
        revision = created["data"]["result"]["diskRevision"]
    n = 0
    # Each paced session starts at its own phase, so the sessions together send at an even
    # rate rather than in bursts of fifty.
    next_at = time.perf_counter() + random.uniform(0, mode.interval)
    while time.time() < deadline:
        n += 1
        if mode.interval:
            # Paced (open-loop) load: each session sends at its share of the target rate.
            next_at += mode.interval
            delay = next_at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        started = time.perf_counter()
        if mode.mutation == "read":
            reply = await session.call("lomi_panel_list", {"workspaceId": workspace_id})
            times.append((time.time(), (time.perf_counter() - started) * 1000))
            if reply["status"] != "ok":
                failures.append(reply)
                return
            continue
        key = {"retryEpoch": epoch, "requestKey": f"load-{n}"}
        if mode.mutation == "file":
            tool, arguments = "lomi_file_write", {"path": path, "expectedDiskRevision": revision, "text": f"{n}\n"}
        else:
            tool, arguments = "lomi_workspace_update", {"expectedRevision": revision, "change": {"rename": {"name": f"load {n}"}}}
        reply = await session.call(tool, {"workspaceId": workspace_id, **arguments, **key})
        times.append((time.time(), (time.perf_counter() - started) * 1000))
        data = reply.get("data") or {}
        if reply["status"] != "ok" or data.get("state") != "succeeded":
            failures.append(reply)
            return
        result = data["result"]
        revision = result["diskRevision"] if mode.mutation == "file" else result["workspace"]["domainRevision"]


class Mode:
    """What the sessions do: `mutation` ("file", "rename" or "read") and, when paced, the time
    between one session's calls."""

    def __init__(self, mutation, interval=0.0):
        self.mutation = mutation
        self.interval = interval


async def drive(url, token, workspace_ids, deadline, mode):
    times, failures = [], []
    limits = httpx.Limits(max_connections=len(workspace_ids) * 2, max_keepalive_connections=len(workspace_ids) * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(*(worker(client, url, token, ws, deadline, times, failures, mode) for ws in workspace_ids))
    return times, failures


def drive_process(job):
    """One load-generating process: its share of the sessions, on its own event loop (one
    Python process cannot keep 50 sessions busy on its own)."""
    url, token, workspace_ids, deadline, mode = job
    return asyncio.run(drive(url, token, workspace_ids, deadline, mode))


# The mutation kinds, each measured on its own: the tool (or tools) a call makes.
KINDS = {
    "file": "lomi_file_write",
    "rename": "lomi_workspace_update (rename)",
    "layout": "lomi_workspace_update (layout of two panels)",
    "panel": "lomi_terminal_create + lomi_terminal_close (each one mutation)",
}

# Calls settled in the first second (sessions still opening, files being created) are left out
# of the figures: the rate and the latencies are those of the steady state.
WARM_UP = 1.0


def load_rust(client, url, token, workspaces, seconds, mode):
    """The same load from `lomi-load` (Rust, two threads): its ceiling is far above Lomi's."""
    command = [client, "--url", url, "--token", token, "--seconds", str(seconds), "--warm-up", str(WARM_UP),
               "--mutation", mode.mutation, "--interval-ms", str(mode.interval * 1000)]
    for workspace in workspaces:
        command += ["--workspace", workspace]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"lomi-load failed: {done.stderr.strip()[:2000]}")
    figures = json.loads(done.stdout)
    return figures["rate"], figures["latenciesMs"]


def load(lomi, sessions, seconds, processes, mode, client=None):
    """One round on a fresh data dir: settled calls per second and their latencies (ms)."""
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as project:
        serve = Serve(lomi, data_dir, STORE_CAP)
        serve.start()
        try:
            workspaces = [
                serve.cli("workspace", "add", "--name", f"load {i}", "--project", project)["workspaceId"]
                for i in range(sessions)
            ]
            grants = [arg for ws in workspaces for arg in ("--workspace", ws)]
            token = serve.cli("pairing", "create", "--name", "load", *grants)["token"]
            if client:
                return load_rust(client, serve.url, token, workspaces, seconds, mode)
            shares = [workspaces[i::processes] for i in range(processes) if workspaces[i::processes]]
            with multiprocessing.Pool(len(shares)) as pool:
                start_wall = time.time()
                deadline_wall = start_wall + WARM_UP + seconds
                jobs = [(serve.url, token, share, deadline_wall, mode) for share in shares]
                results = pool.map(drive_process, jobs)
            failures = [f for _, fail in results for f in fail]
            if failures:
                raise RuntimeError(f"{len(failures)} sessions failed, first: {failures[0]}")
            since = start_wall + WARM_UP
            steady = [(end, ms) for times, _ in results for end, ms in times if end >= since]
            window = max(end for end, _ in steady) - since
            return len(steady) / window, [ms for _, ms in steady]
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


def rounds(args, mode):
    """`args.rounds` rounds of `mode`: the rates and the p50 and p99 of each."""
    rates, p50s, p99s = [], [], []
    for _ in range(args.rounds):
        rate, latencies = load(args.lomi, args.sessions, args.seconds, args.processes, mode, args.client)
        rates.append(rate)
        p50s.append(percentile(latencies, 0.50))
        p99s.append(percentile(latencies, 0.99))
    return rates, p50s, p99s


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lomi", required=True)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold-runs", type=int, default=7)
    parser.add_argument("--processes", type=int, default=4, help="load-generating processes")
    parser.add_argument("--rate", type=float, default=200.0, help="target rate of the paced run (mutations/s)")
    parser.add_argument(
        "--mutation",
        choices=["all", *KINDS],
        default="all",
        help="the mutation each call makes; all (the default) runs each kind in turn",
    )
    parser.add_argument(
        "--client",
        help="the lomi-load binary (Rust, what bench/load uses); without it, Python clients (the MCP calls "
        "made with httpx in --processes processes)",
    )
    parser.add_argument("--no-store", action="store_true", help="skip the store's admission benchmark")
    args = parser.parse_args()

    root = Path(__file__).resolve().parent.parent
    kinds = list(KINDS) if args.mutation == "all" else [args.mutation]
    if not args.client and set(kinds) - {"file", "rename"}:
        if args.mutation != "all":
            parser.error(f"--mutation {args.mutation} needs the Rust client (bench/load without --python)")
        kinds = ["file", "rename"]
    print(
        f"Lomi MCP load benchmark: {args.sessions} sessions x {args.seconds:.0f} s (after {WARM_UP:.0f} s warm-up), "
        f"{args.rounds} rounds, client {'lomi-load (Rust)' if args.client else f'Python in {args.processes} processes'}, "
        f"mutations {', '.join(KINDS[k] for k in kinds)}, {os.cpu_count()} CPUs, store cap {STORE_CAP}"
    )
    # Server and clients share this machine's CPUs (and its disk) with whatever else runs:
    # say how busy it was, so figures from a loaded machine are read as such.
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cold = asyncio.run(cold_start(args.lomi, args.cold_runs))
    print(f"cold start, spawn to served tools/list (ms):   {spread(cold)}")
    ceilings = rounds(args, Mode("read"))[0]
    print(f"client ceiling: read-tool calls/s, same clients: {spread(ceilings)}")
    for kind in kinds:
        print(f"== {kind}: {KINDS[kind]}")
        rates, p50s, p99s = rounds(args, Mode(kind))
        print("saturated (every session sends its next mutation as soon as the last one settled):")
        print(f"  mutations/s (settled, over MCP):              {spread(rates)}   target >= 1000")
        print(f"  latency p50 (ms):                             {spread(p50s)}")
        print(f"  latency p99 (ms):                             {spread(p99s)}   target <= 100")
        print(f"  ratio median mutations/s / median client ceiling: {statistics.median(rates) / statistics.median(ceilings):.3f}")
        rates, p50s, p99s = rounds(args, Mode(kind, args.sessions / args.rate))
        print(f"paced at {args.rate:.0f} mutations/s in all ({args.sessions} sessions, each every {args.sessions / args.rate * 1000:.0f} ms):")
        print(f"  mutations/s (settled, over MCP):              {spread(rates)}")
        print(f"  latency p50 (ms):                             {spread(p50s)}")
        print(f"  latency p99 (ms):                             {spread(p99s)}   target <= 20")
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.no_store:
        print("store admission in the same run (cargo bench -p lomi-store):")
        for line in store_admission(root):
            print(f"  {line}")


if __name__ == "__main__":
    sys.exit(main())
