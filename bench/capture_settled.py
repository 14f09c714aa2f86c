#!/usr/bin/env python3
"""Capture time on a settled page, for every adapter given, through the same harness code.

The harness (bench/peers/mcp_bench.py) times a capture right after the steps before it: after
navigate + snapshot on the large fixture, after the click on the form. A server that finishes
those sooner meets a page whose first frames Chromium is still producing, and its capture waits
for them. This step measures what the capture target means: each server navigates to the
fixture, the page is left 1 s to settle, then it is captured `--repeat` times, 250 ms apart.

Usage: capture_settled.py --adapter A.json [--adapter B.json ...] [--var NAME=VALUE ...]
                          [--repeat 15] [--out results/capture-settled-DATE.json]
Prints one line per server and fixture (min / median / max ms); writes the figures as JSON.
"""

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
import mcp_bench  # noqa: E402  (the harness, for its adapters, connections and fixtures)

FIXTURES = ("form", "large")
SETTLE_S = 1.0
GAP_S = 0.25


async def measure(adapter: dict[str, Any], overrides: dict[str, str], repeat: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"capture-settled-{adapter['name']}-"))
    (workdir / "out").mkdir()
    v: dict[str, Any] = {
        "workdir": str(workdir),
        "outdir": str(workdir / "out"),
        "bench_dir": str(mcp_bench.HERE),
        "env_dir": os.environ.get("PEERS_ENV", str(Path.home() / ".cache" / "mcp-peers")),
        "chromium": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
        "port": mcp_bench.free_port(),
    }
    v.update(overrides)
    figures: dict[str, Any] = {"label": adapter["label"], "fixtures": {}}
    errlog = open(workdir / "server.stderr.log", "w")  # noqa: SIM115
    try:
        with mcp_bench.FixtureServer(mcp_bench.FIXTURES) as site:
            async with mcp_bench.connect(adapter, v, errlog, 60.0) as conn:
                for call in adapter.get("setup", []):
                    await mcp_bench.run_calls(conn, [call], v)
                for fixture in FIXTURES:
                    v["url"] = site.url(mcp_bench.PLANS[fixture]["page"], f"settled-{fixture}")
                    await mcp_bench.run_calls(conn, mcp_bench.calls_of(adapter, "navigate"), v)
                    await asyncio.sleep(SETTLE_S)
                    times = []
                    for _ in range(repeat):
                        await asyncio.sleep(GAP_S)
                        record = await mcp_bench.run_calls(conn, mcp_bench.calls_of(adapter, "screenshot"), v)
                        png, _how = mcp_bench.screenshot_png(
                            record["results"][-1], record["text"], [workdir / "out", workdir]
                        )
                        if not png or not mcp_bench.png_info(png).get("png_ok"):
                            raise RuntimeError(f"{adapter['name']}: {fixture} capture is not a PNG")
                        times.append(record["ms"])
                    figures["fixtures"][fixture] = mcp_bench.summarize(times)
    finally:
        errlog.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", action="append", required=True)
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.var)
    results: dict[str, Any] = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settle_s": SETTLE_S,
        "gap_s": GAP_S,
        "repeat": args.repeat,
        "servers": {},
    }
    for path in args.adapter:
        adapter = mcp_bench.load_adapter(path)
        try:
            figures = asyncio.run(measure(adapter, overrides, args.repeat))
        except Exception as error:  # noqa: BLE001  (one server failing leaves the others' figures)
            results["servers"][adapter["name"]] = {"label": adapter["label"], "error": repr(error)[:500]}
            print(f"{adapter['label']:<22} failed: {error!r}"[:300], flush=True)
            continue
        results["servers"][adapter["name"]] = figures
        for fixture, s in figures["fixtures"].items():
            print(f"{adapter['label']:<22} {fixture:<5} capture on a settled page ms "
                  f"min/med/max {s['min']}/{s['median']}/{s['max']}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
