#!/usr/bin/env python3
"""Prints Lomi's browser targets as ratios against the better peer of the same run.

Reads the newest lomi-*, lomi-bounded-*, playwright-* and chrome-devtools-* result JSONs of
bench/peers/mcp_bench.py in RESULTS_DIR (the ones `bench/browser` just wrote), and the newest
capture-settled-*.json of bench/capture_settled.py. Medians only;
"better peer" is whichever peer has the lower median for that figure."""

import json
import sys
from pathlib import Path


def newest_file(results: Path, name: str) -> Path | None:
    files = sorted(
        (p for p in results.glob(f"{name}-*.json") if not p.name.startswith(f"{name}-bounded")),
        key=lambda p: p.stat().st_mtime,
    )
    return files[-1] if files else None


def newest(results: Path, name: str) -> dict | None:
    path = newest_file(results, name)
    return json.loads(path.read_text()) if path else None


def median(result: dict | None, *path: str) -> float | None:
    node = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if isinstance(node, dict):
        return node.get("median")
    return node if isinstance(node, (int, float)) else None


TARGETS = [
    # (figure, path, limit)
    ("cold start ms", ("cold", "start_ms"), 0.3),
    ("large snapshot ms", ("fixtures", "large", "steps", "snapshot", "latency_ms"), 0.5),
    ("large snapshot bytes", ("fixtures", "large", "steps", "snapshot", "text_bytes"), 0.7),
    ("click ms (confirmed)", ("fixtures", "form", "steps", "click", "latency_ms"), 0.4),
    ("type ms", ("fixtures", "form", "steps", "type", "latency_ms"), 1.0),
    ("navigate ms (form)", ("fixtures", "form", "steps", "navigate", "latency_ms"), 1.0),
    ("navigate ms (large)", ("fixtures", "large", "steps", "navigate", "latency_ms"), 1.0),
    ("capture ms (form)", ("fixtures", "form", "steps", "screenshot", "latency_ms"), 1.0),
    ("capture ms (large)", ("fixtures", "large", "steps", "screenshot", "latency_ms"), 1.0),
    ("RSS MiB (server + browser)", ("rss_tree_mb_end",), 0.8),
]


def print_row(label: str, mine: float | None, theirs: list[float | None], limit: float) -> None:
    """One table row: Lomi, @playwright/mcp, chrome-devtools-mcp, and Lomi's ratio against the
    better (lower) peer."""
    known = [v for v in theirs if v]
    cells = [f"{v:,.0f}" if v is not None else "n/a" for v in (mine, *theirs)]
    if mine is None or not known:
        print(f"| {label} | {' | '.join(cells)} | n/a | ≤ {limit}× | ? |")
        return
    ratio = mine / min(known)
    print(f"| {label} | {' | '.join(cells)} | {ratio:.2f}× | ≤ {limit}× | {'yes' if ratio <= limit else 'NO'} |")


def main() -> None:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/peers/results")
    lomi_file = newest_file(results, "lomi")
    lomi = json.loads(lomi_file.read_text()) if lomi_file else None
    bounded = newest(results, "lomi-bounded")
    peers = {"@playwright/mcp": newest(results, "playwright"), "chrome-devtools-mcp": newest(results, "chrome-devtools")}
    if lomi is None:
        raise SystemExit(f"no lomi-*.json in {results}")
    lomi_mtime = lomi_file.stat().st_mtime
    print()
    print("| target | Lomi | @playwright/mcp | chrome-devtools-mcp | ratio vs better peer | limit | met |")
    print("|---|---|---|---|---|---|---|")
    for label, path, limit in TARGETS:
        print_row(label, median(lomi, *path), [median(r, *path) for r in peers.values()], limit)
    bounded_bytes = median(bounded, "fixtures", "large", "steps", "snapshot", "text_bytes")
    if bounded_bytes is not None:
        print(f"| large snapshot bytes, bounded (maxBytes 8192) | {bounded_bytes:,.0f} | | | | ≤ 8,192 | {'yes' if bounded_bytes <= 8192 else 'NO'} |")
    # The settled-page capture of the same bench run: written after the harness's lomi-*.json.
    settled = [
        p for p in sorted(results.glob("capture-settled-*.json"), key=lambda p: p.stat().st_mtime)
        if p.stat().st_mtime >= lomi_mtime
    ]
    if settled:
        servers = json.loads(settled[-1].read_text())["servers"]
        for fixture in ("form", "large"):
            mine, *theirs = (
                servers.get(name, {}).get("fixtures", {}).get(fixture, {}).get("median")
                for name in ("lomi", "playwright", "chrome-devtools")
            )
            print_row(f"capture ms, settled page ({fixture})", mine, theirs, 1.0)
    tools = lomi.get("tools_list_bytes")
    print(f"\ntools/list: {lomi.get('tool_count')} tools, {tools:,} bytes" if tools else "")


if __name__ == "__main__":
    main()
