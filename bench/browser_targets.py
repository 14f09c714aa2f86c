#!/usr/bin/env python3
"""Prints Lomi's browser targets as ratios against the better peer of the same run.

Usage: browser_targets.py [RESULTS_DIR] [--real]

Reads the newest lomi-DATE, lomi-bounded-DATE, playwright-DATE and chrome-devtools-DATE result
JSONs of bench/peers/mcp_bench.py in RESULTS_DIR (the ones `bench/browser` just wrote), and the
newest capture-settled-*.json of bench/capture_settled.py. Medians only;
"better peer" is whichever peer has the lower median for that figure.

With --real, reads the newest *-DATE-real.json files (the real-pages scenario, --scenario real)
instead and prints min / median / max of each server beside the ratio of the medians."""

import json
import re
import sys
from pathlib import Path


def newest_file(results: Path, name: str, tag: str = "") -> Path | None:
    """The newest NAME-YYYY-MM-DD[-TAG].json: exactly that name and tag (lomi is not lomi-bounded)."""
    pattern = re.compile(rf"{re.escape(name)}-\d{{4}}-\d{{2}}-\d{{2}}{'-' + re.escape(tag) if tag else ''}\.json")
    files = sorted(
        (p for p in results.glob(f"{name}-*.json") if pattern.fullmatch(p.name)),
        key=lambda p: p.stat().st_mtime,
    )
    return files[-1] if files else None


def newest(results: Path, name: str, tag: str = "") -> dict | None:
    path = newest_file(results, name, tag)
    return json.loads(path.read_text()) if path else None


def median(result: dict | None, *path: str) -> float | None:
    """The median at path; read_bytes falls back to text_bytes (result files written before the
    harness counted structuredContent)."""
    found = median_at(result, *path)
    if found is None and path and path[-1] == "read_bytes":
        return median_at(result, *path[:-1], "text_bytes")
    return found


def median_at(result: dict | None, *path: str) -> float | None:
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
    ("large snapshot bytes", ("fixtures", "large", "steps", "snapshot", "read_bytes"), 0.7),
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


def node(result: dict | None, *path: str | int) -> dict | None:
    for key in path:
        if isinstance(result, dict) and key in result:
            result = result[key]
        elif isinstance(result, list) and isinstance(key, int) and key < len(result):
            result = result[key]
        else:
            return None
    return result if isinstance(result, dict) else None


def mmm(figures: dict | None) -> str:
    if not figures or not figures.get("n"):
        return "n/a"
    return f"{figures['min']:,.0f} / {figures['median']:,.0f} / {figures['max']:,.0f}"


REAL_TARGETS = [
    # (figure, path, limit or None for a figure shown without a target)
    ("task ms (every call)", ("task", "latency_ms"), 0.5),
    ("task bytes read", ("task", "read_bytes"), 0.5),
    ("task calls", ("task", "calls"), None),
    ('task: locate link "Built-in Functions" bytes', ("task", "hop_locate_bytes", 0), None),
    ('task: locate link "len()" bytes', ("task", "hop_locate_bytes", 1), None),
    *(
        (f"{page} {what}", ("fixtures", page, "steps", "snapshot", key), None)
        for page in ("stdtypes", "functions", "tutorial")
        for what, key in (("snapshot ms", "latency_ms"), ("snapshot bytes", "read_bytes"))
    ),
    ("full-page capture ms (tutorial)", ("fixtures", "fullpage", "steps", "full_capture", "latency_ms"), None),
    ("full-page capture PNG bytes (tutorial)", ("fixtures", "fullpage", "steps", "full_capture", "png_bytes"), None),
    ("full-page capture wire bytes (tutorial)", ("fixtures", "fullpage", "steps", "full_capture", "wire_bytes"), None),
]


def real(results: Path) -> None:
    """The real-pages scenario: min / median / max per server, ratio of medians vs the better peer."""
    lomi = newest(results, "lomi", "real")
    peers = [newest(results, "playwright", "real"), newest(results, "chrome-devtools", "real")]
    if lomi is None:
        raise SystemExit(f"no lomi-DATE-real.json in {results}")
    print()
    print("| real pages (min / median / max) | Lomi | @playwright/mcp | chrome-devtools-mcp | ratio vs better peer | limit | met |")
    print("|---|---|---|---|---|---|---|")
    runs = [r.get("task") if r else None for r in (lomi, *peers)]
    cells = [f"{t['succeeded']}/{t['runs']}" if t else "n/a" for t in runs]
    met = "yes" if runs[0] and runs[0]["succeeded"] == runs[0]["runs"] else "NO"
    print(f"| task succeeded | {' | '.join(cells)} | | 100 % | {met} |")
    for label, path, limit in REAL_TARGETS:
        mine, *theirs = (node(r, *path) for r in (lomi, *peers))
        known = [t["median"] for t in theirs if t and t.get("n")]
        ratio = mine["median"] / min(known) if mine and mine.get("n") and known else None
        verdict = "" if limit is None or ratio is None else ("yes" if ratio <= limit else "NO")
        print(f"| {label} | {mmm(mine)} | {' | '.join(mmm(t) for t in theirs)} | "
              f"{f'{ratio:.2f}×' if ratio is not None else 'n/a'} | {f'≤ {limit}×' if limit else ''} | {verdict} |")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--real"]
    results = Path(args[0] if args else "bench/peers/results")
    if "--real" in sys.argv[1:]:
        real(results)
        return
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
    bounded_bytes = median(bounded, "fixtures", "large", "steps", "snapshot", "read_bytes")
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
