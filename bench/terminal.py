"""Terminal benchmark: (a) the input → output round trip of a terminal over MCP (lomi_terminal_input
of `echo mark-N`, then lomi_terminal_read waiting server-side for the output line `mark-N`) beside
the same with tmux (`send-keys`, then `capture-pane` polled until the line shows), in one run;
(b) the throughput of reading 50 MB of output in 1 MiB pages by sinceCursor while it is produced.
Raw Streamable HTTP with httpx (bench/mcp_load.py's client) keeps the client's overhead low.
Run it with bench/terminal (see README)."""

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_load import Serve, Session, spread  # noqa: E402

MIB = 1024 * 1024
FLOOD_BYTES = 50_000_000


def ok(reply, what):
    if reply.get("status") != "ok":
        raise RuntimeError(f"{what}: {reply}")
    return reply["data"]


class LomiTerminal:
    """One terminal panel held by one MCP session of a token pairing."""

    def __init__(self, session, workspace_id):
        self.session = session
        self.workspace_id = workspace_id
        self.seq = 0

    async def create(self, key):
        connection = ok(await self.session.call("lomi_connect", {"workspaceId": self.workspace_id}), "connect")
        self.epoch = connection["retryEpoch"]
        panels = ok(await self.session.call("lomi_panel_list", {"workspaceId": self.workspace_id}), "panel_list")
        op = ok(
            await self.session.call(
                "lomi_terminal_create",
                {
                    "workspaceId": self.workspace_id,
                    "cwdRelative": "",
                    "title": key,
                    "expectedRevision": panels["domainRevision"],
                    "retryEpoch": self.epoch,
                    "requestKey": key,
                },
            ),
            "create",
        )
        while op["state"] not in ("succeeded", "failed", "cancelled", "outcome_unknown"):
            await asyncio.sleep(0.01)
            op = ok(await self.session.call("lomi_operation_get", {"operationId": op["operationId"]}), "get")
        if op["state"] != "succeeded":
            raise RuntimeError(f"terminal create: {op}")
        created = op["result"]
        self.panel, self.generation, self.lease = created["panelId"], created["generation"], created["leaseId"]

    async def send(self, text):
        self.seq += 1
        return ok(
            await self.session.call(
                "lomi_terminal_input",
                {
                    "panelId": self.panel,
                    "leaseId": self.lease,
                    "generation": self.generation,
                    "inputSequence": str(self.seq),
                    "text": text,
                },
            ),
            "input",
        )

    async def read(self, **args):
        return ok(await self.session.call("lomi_terminal_read", {"panelId": self.panel, **args}), "read")

    async def round_trip(self, n):
        """Input `echo mark-N`, then wait for the line `mark-N` (the output, not the typed echo)."""
        started = time.perf_counter()
        sent = await self.send(f"echo mark-{n}\r")
        read = await self.read(
            screen=False,
            sinceCursor=sent["outputCursor"],
            maxBytes=4096,
            waitFor={"regex": f"(?m)^mark-{n}$"},
            timeoutMs=10_000,
        )
        if read["waited"] != "matched":
            raise RuntimeError(f"mark-{n} never came: {read}")
        return time.perf_counter() - started

    async def close(self):
        panels = ok(await self.session.call("lomi_panel_list", {"workspaceId": self.workspace_id}), "panel_list")
        await self.session.call(
            "lomi_terminal_close",
            {
                "workspaceId": self.workspace_id,
                "panelId": self.panel,
                "expectedRevision": panels["domainRevision"],
                "retryEpoch": self.epoch,
                "requestKey": f"close-{self.panel}",
            },
        )


class Tmux:
    """A tmux session on its own server socket, driven by its CLI as an agent would."""

    def __init__(self, cwd):
        self.socket = f"lomi-bench-{os.getpid()}"
        self.base = ["tmux", "-L", self.socket]
        subprocess.run(
            [*self.base, "-f", "/dev/null", "new-session", "-d", "-s", "lomi-bench", "-x", "80", "-y", "24", "-c", cwd],
            check=True,
        )

    def round_trip(self, n):
        started = time.perf_counter()
        subprocess.run([*self.base, "send-keys", "-t", "lomi-bench", f"echo mark-{n}", "Enter"], check=True)
        want = f"mark-{n}"
        deadline = started + 10
        while True:
            # Polled back to back: each capture is a process start, no sleep in between.
            shown = subprocess.run(
                [*self.base, "capture-pane", "-p", "-t", "lomi-bench"], check=True, capture_output=True, text=True
            ).stdout
            if want in shown.splitlines():
                return time.perf_counter() - started
            if time.perf_counter() > deadline:
                raise RuntimeError(f"tmux never showed {want}:\n{shown}")

    def stop(self):
        subprocess.run([*self.base, "kill-server"], check=False, capture_output=True)


async def latency(url, token, workspace_id, project, rounds, trips):
    lomi_medians, tmux_medians = [], []
    tmux = Tmux(project)
    async with httpx.AsyncClient(timeout=60) as client:
        session = Session(client, url, token)
        await session.open()
        term = LomiTerminal(session, workspace_id)
        await term.create("bench-latency")
        try:
            n = 0
            for _ in range(20):  # warm-up, both sides
                n += 1
                await term.round_trip(n)
                tmux.round_trip(n)
            for _ in range(rounds):
                times = []
                for _ in range(trips):
                    n += 1
                    times.append(await term.round_trip(n))
                lomi_medians.append(statistics.median(times) * 1000)
                times = []
                for _ in range(trips):
                    n += 1
                    times.append(tmux.round_trip(n))
                tmux_medians.append(statistics.median(times) * 1000)
                # Keep both screens' scrollback small and alike.
                await term.send("clear\r")
                subprocess.run([*tmux.base, "send-keys", "-t", "lomi-bench", "clear", "Enter"], check=True)
        finally:
            await term.close()
            tmux.stop()
    return lomi_medians, tmux_medians


async def throughput(url, token, workspace_id, rounds):
    """Pages of at most 1 MiB by sinceCursor, each read waiting server-side for the next output."""
    rates, produced_rates, lost = [], [], []
    async with httpx.AsyncClient(timeout=120) as client:
        session = Session(client, url, token)
        await session.open()
        for r in range(rounds):
            term = LomiTerminal(session, workspace_id)
            await term.create(f"bench-flood-{r}")
            try:
                warm = await term.send("echo ready-$((1+1))\r")
                await term.read(screen=False, sinceCursor=warm["outputCursor"], waitFor={"text": "ready-2"})
                started = time.perf_counter()
                sent = await term.send(f"head -c {FLOOD_BYTES} /dev/zero | tr '\\0' a; echo flood-$((6*7))-done\r")
                cursor = start = int(sent["outputCursor"])
                total = None
                got = missed = 0
                while total is None or cursor < total:
                    page = await term.read(
                        screen=False,
                        sinceCursor=str(cursor),
                        maxBytes=MIB,
                        waitFor={"regex": "[^\\n]"},
                        timeoutMs=10_000,
                    )
                    output = page["output"]
                    if output["truncatedBefore"]:
                        missed += int(output["startCursor"]) - cursor
                    got += int(output["endCursor"]) - int(output["startCursor"])
                    cursor = int(output["endCursor"])
                    if total is None and "flood-42-done" in output["text"]:
                        total = int(page["outputCursor"])
                    if page["waited"] == "timed_out" and not output["text"]:
                        raise RuntimeError(f"the flood stalled at {cursor}: {page}")
                elapsed = time.perf_counter() - started
                rates.append(got / elapsed / 1e6)
                lost.append(missed)
                produced_rates.append((total - start) / elapsed / 1e6)
            finally:
                await term.close()
    return rates, produced_rates, lost


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lomi", required=True)
    parser.add_argument("--rounds", type=int, default=5, help="latency rounds")
    parser.add_argument("--trips", type=int, default=200, help="round trips per latency round")
    parser.add_argument("--flood-rounds", type=int, default=3)
    args = parser.parse_args()
    if not shutil.which("tmux"):
        sys.exit("tmux is not installed")

    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as project:
        serve = Serve(args.lomi, data_dir)
        serve.start()
        try:
            workspace_id = serve.cli("workspace", "add", "--name", "bench", "--project", project)["workspaceId"]
            token = serve.cli("pairing", "create", "--name", "bench", "--workspace", workspace_id)["token"]
            print(
                f"Lomi terminal benchmark: {args.rounds} rounds x {args.trips} round trips "
                f"(`echo mark-N` → its output line), {args.flood_rounds} rounds of a 50 MB flood"
            )
            lomi_ms, tmux_ms = asyncio.run(latency(serve.url, token, workspace_id, project, args.rounds, args.trips))
            ratios = [a / b for a, b in zip(lomi_ms, tmux_ms)]
            print("round trip, median per round (ms):")
            print(f"  Lomi over MCP (input + read waitFor):        {spread(lomi_ms)}")
            print(f"  tmux (send-keys + capture-pane polling):     {spread(tmux_ms)}")
            print(
                f"  ratio Lomi/tmux (per round):                 min {min(ratios):8.2f}  "
                f"median {statistics.median(ratios):8.2f}  max {max(ratios):8.2f}"
            )
            rates, produced, lost = asyncio.run(throughput(serve.url, token, workspace_id, args.flood_rounds))
            print("50 MB of output read in 1 MiB pages by sinceCursor while it is produced:")
            print(f"  read MB/s (bytes returned / wall time):      {spread(rates)}")
            print(f"  produced MB/s (output cursor / wall time):   {spread(produced)}")
            print(f"  bytes lost to the 4 MiB scrollback (per round): {lost}")
        finally:
            serve.stop()


if __name__ == "__main__":
    sys.exit(main())
