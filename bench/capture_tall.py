#!/usr/bin/env python3
"""A tall real page captured whole, for every adapter given, through the same harness code.

Python's library/functions.html as Debian ships it (python3.11-doc, about 32,300 CSS pixels tall
at 1280 wide), served on 127.0.0.1: each server navigates to it, the page is left 1 s to settle,
then its full-page capture (the adapter's `full_capture` step) is timed `--repeat` times. For
Lomi that answers the top two screens at full width; its `full_save` step (when the adapter has
one) writes the whole page at full width into the project, the same pixels the peers return
(Chrome DevTools MCP saves a PNG over 2 MB to a temp file, Playwright MCP to its output folder).
Prints one line per server and step (min / median / max ms, the PNG's size in pixels and bytes)
and the ratios of Lomi's medians to the better peer's.

Usage: capture_tall.py --adapter A.json [--adapter B.json ...] [--var NAME=VALUE ...]
                       [--repeat 5] [--out results/capture-tall-DATE.json]
"""

import argparse
import asyncio
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
import mcp_bench  # noqa: E402  (the harness, for its adapters, connections and fixtures)

DOCS = Path("/usr/share/doc/python3.11/html")
PAGE = "library/functions.html"
SETTLE_S = 1.0


def png_size(text: str, png: bytes | None) -> str:
    """The PNG's width x height (from its header), and what the answer says of a saved file."""
    size = ""
    if png and png.startswith(b"\x89PNG"):
        width, height = struct.unpack(">II", png[16:24])
        size = f"{width}x{height} {len(png)} B"
    result = re.search(r'"result":(\{[^{}]*"sha256"[^{}]*\})', text)
    if result:
        saved = json.loads(result.group(1))
        return f"{size} (saved {saved.get('path')}: {saved.get('bytes')} B)"
    return size or "?"


async def measure(adapter: dict[str, Any], overrides: dict[str, str], repeat: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"capture-tall-{adapter['name']}-"))
    (workdir / "out").mkdir()
    v: dict[str, Any] = {
        "workdir": str(workdir),
        "outdir": str(workdir / "out"),
        "bench_dir": str(mcp_bench.HERE),
        "env_dir": os.environ.get("PEERS_ENV", str(Path.home() / ".cache" / "mcp-peers")),
        "chromium": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
        "port": mcp_bench.free_port(),
        "seq": 0,
    }
    v.update(overrides)
    figures: dict[str, Any] = {"label": adapter["label"], "steps": {}}
    errlog = open(workdir / "server.stderr.log", "w")  # noqa: SIM115
    try:
        with mcp_bench.FixtureServer(DOCS) as site:
            async with mcp_bench.connect(adapter, v, errlog, 60.0) as conn:
                for call in adapter.get("setup", []):
                    await mcp_bench.run_calls(conn, [call], v)
                v["url"] = site.url(PAGE, "tall")
                await mcp_bench.run_calls(conn, mcp_bench.calls_of(adapter, "navigate"), v)
                await asyncio.sleep(SETTLE_S)
                for step in ("full_capture", "full_save"):
                    if step not in adapter["steps"]:
                        continue
                    times, size = [], "?"
                    for _ in range(repeat):
                        v["seq"] = int(v["seq"]) + 1
                        record = await mcp_bench.run_calls(conn, mcp_bench.calls_of(adapter, step), v)
                        png, _how = mcp_bench.screenshot_png(
                            record["results"][-1], record["text"], [workdir / "out", workdir]
                        )
                        size = png_size("".join(record["texts"]), png)
                        times.append(record["ms"])
                    figures["steps"][step] = dict(mcp_bench.summarize(times), size=size)
    finally:
        errlog.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", action="append", required=True)
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not (DOCS / PAGE).is_file():
        sys.exit(f"{DOCS / PAGE} is missing: install Debian's python3.11-doc")
    overrides = dict(kv.split("=", 1) for kv in args.var)
    results: dict[str, Any] = {
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "page": PAGE,
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
        for step, s in figures["steps"].items():
            print(f"{adapter['label']:<22} {step:<12} ms min/med/max {s['min']}/{s['median']}/{s['max']}  {s['size']}",
                  flush=True)
    peers = [f["steps"]["full_capture"]["median"] for name, f in results["servers"].items()
             if name != "lomi" and "steps" in f and "full_capture" in f["steps"]]
    lomi = results["servers"].get("lomi", {}).get("steps", {})
    if peers and lomi:
        best = min(peers)
        for step, s in lomi.items():
            print(f"ratio Lomi {step} / better peer's full page (median): {s['median'] / best:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
