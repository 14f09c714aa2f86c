"""Window idle benchmark: the CPU the desktop app uses (lomi-desktop and every process under it:
WebKit's web and network processes, the terminals' shells) over a quiet stretch with four
terminal panels open in the window and no agent acting. Each run starts the app on a fresh data
dir, opens the panels through MCP (`--browser`: the fourth a browser on a blank page), lets
the window settle, then reads the processes' CPU time
(/proc utime + stime) at the start and the end of the stretch. Prints each run and the
min / median / max in percent of one core. Run it with bench/window_idle (see README)."""

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_load import Session  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
PANELS = 4


def ok(reply, what):
    if reply.get("status") != "ok":
        raise RuntimeError(f"{what}: {reply}")
    return reply["data"]


def tree(pid):
    """`pid` and every process under it."""
    children = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rfind(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        p = pending.pop()
        found.append(p)
        pending.extend(children.get(p, []))
    return found


def cpu_ticks(pids):
    """utime + stime of each process still there, by pid."""
    ticks = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        rest = fields[fields.rfind(")") + 2 :].split()
        ticks[pid] = int(rest[11]) + int(rest[12])
    return ticks


def cli(lomi, data_dir, *args):
    out = subprocess.run([lomi, *args, "--data-dir", str(data_dir), "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


async def open_panels(url, token, workspace_id, browser):
    async with httpx.AsyncClient(timeout=30.0) as client:
        session = Session(client, url, token)
        await session.open()
        epoch = ok(await session.call("lomi_connect", {"workspaceId": workspace_id}), "connect")["retryEpoch"]
        for n in range(PANELS):
            revision = ok(await session.call("lomi_panel_list", {"workspaceId": workspace_id}), "panels")["domainRevision"]
            common = {"workspaceId": workspace_id, "expectedRevision": revision, "retryEpoch": epoch, "requestKey": f"idle-{n}"}
            if browser and n == PANELS - 1:
                tool, arguments = "lomi_browser_create", {**common, "title": "Browser"}
            else:
                tool, arguments = "lomi_terminal_create", {**common, "cwdRelative": "", "title": f"Shell {n + 1}"}
            op = ok(await session.call(tool, arguments), tool)
            for _ in range(200):
                got = ok(await session.call("lomi_operation_get", {"operationId": op["operationId"]}), "get")
                if got["state"] == "succeeded":
                    break
                if got["state"] in ("failed", "cancelled", "outcome_unknown"):
                    raise RuntimeError(f"{tool}: {got}")
                await asyncio.sleep(0.05)


def run(desktop, lomi, seconds, settle, browser):
    with tempfile.TemporaryDirectory(prefix="lomi-window-idle-") as tmp:
        data_dir, project = Path(tmp) / "data", Path(tmp) / "project"
        data_dir.mkdir()
        project.mkdir()
        app = subprocess.Popen(
            [desktop, "--data-dir", str(data_dir), "--http", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            broker = data_dir / "broker.json"
            deadline = time.monotonic() + 60
            while True:
                try:
                    url = json.loads(broker.read_text())["url"]
                    break
                except (OSError, json.JSONDecodeError, KeyError):
                    if app.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("lomi-desktop did not start")
                    time.sleep(0.05)
            workspace = cli(lomi, data_dir, "workspace", "add", "--name", "Idle", "--project", str(project))
            token = cli(lomi, data_dir, "pairing", "create", "--name", "idle-bench", "--workspace", workspace["workspaceId"])["token"]
            asyncio.run(open_panels(url, token, workspace["workspaceId"], browser))
            time.sleep(settle)
            before = cpu_ticks(tree(app.pid))
            time.sleep(seconds)
            after = cpu_ticks(tree(app.pid))
            used = sum(after[p] - before[p] for p in after if p in before)
            return 100.0 * used / TICKS / seconds, len(after)
        finally:
            app.send_signal(signal.SIGTERM)
            try:
                app.wait(timeout=20)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--desktop", required=True, help="the lomi-desktop binary")
    parser.add_argument("--lomi", required=True, help="the lomi binary (workspace add, pairing create)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0, help="the quiet stretch measured")
    parser.add_argument("--settle", type=float, default=5.0, help="wait after the panels opened")
    parser.add_argument("--label", default="", help="a name for this build in the output")
    parser.add_argument("--browser", action="store_true", help="make the fourth panel a browser (Chromium, a blank page)")
    args = parser.parse_args()
    figures = []
    for n in range(args.runs):
        percent, processes = run(args.desktop, args.lomi, args.seconds, args.settle, args.browser)
        figures.append(percent)
        print(f"run {n + 1}: {percent:.2f} % of a core over {args.seconds:.0f} s ({processes} processes)", flush=True)
    label = f"{args.label}: " if args.label else ""
    panels = f"{PANELS - 1} terminal panels and a browser panel" if args.browser else f"{PANELS} terminal panels"
    print(
        f"{label}window idle CPU with {panels}, % of one core over {args.seconds:.0f} s:"
        f" min {min(figures):.2f} / median {statistics.median(figures):.2f} / max {max(figures):.2f}"
    )


if __name__ == "__main__":
    main()
