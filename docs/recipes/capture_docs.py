#!/usr/bin/env python3
"""Captures pages of a local site into a docs folder of a Lomi project and reports what changed.

It talks to a running Lomi over MCP (the Python SDK, `pip install mcp`) with a bearer token the
person created (`lomi pairing create --name docs --workspace W`): it opens a browser panel in
the workspace, runs one `lomi_browser_capture_set` (deterministic captures, compared with the
files they replace), follows its progress, prints one line per capture and closes the panel.

    python3 capture_docs.py --endpoint http://127.0.0.1:PORT/mcp --token TOKEN \\
        --site http://127.0.0.1:8000 --folder docs/screenshots index.html guide.html

Exit status: 0 when nothing changed, 1 when a capture is new or changed, 2 on an error.
"""

import argparse
import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SETTLED = {"succeeded", "failed", "cancelled", "outcome_unknown"}


async def call(session: ClientSession, tool: str, args: dict) -> dict:
    envelope = (await session.call_tool(tool, args)).structured_content or {}
    if envelope.get("status") != "ok":
        raise SystemExit(f"{tool}: {envelope.get('code')}: {envelope.get('message')}")
    return envelope["data"]


async def settle(session: ClientSession, operation: dict) -> dict:
    while operation["state"] not in SETTLED:
        await asyncio.sleep(0.1)
        operation = await call(session, "lomi_operation_get", {"operationId": operation["operationId"]})
    return operation


async def run(args: argparse.Namespace) -> int:
    headers = {"Authorization": f"Bearer {args.token}"}
    async with create_mcp_http_client(headers=headers) as http, \
            streamable_http_client(args.endpoint, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        workspace = (await call(session, "lomi_workspace_list", {}))["workspaces"][0]["workspaceId"]
        epoch = (await call(session, "lomi_connect", {"workspaceId": workspace}))["retryEpoch"]
        revision = (await call(session, "lomi_panel_list", {"workspaceId": workspace}))["domainRevision"]
        created = await settle(session, await call(session, "lomi_browser_create", {
            "workspaceId": workspace, "title": "Docs captures", "expectedRevision": revision,
            "retryEpoch": epoch, "requestKey": "docs-browser",
        }))
        if created["state"] != "succeeded":
            raise SystemExit(f"the browser did not start: {json.dumps(created['error'])}")
        panel = created["result"]
        width, height = (int(side) for side in args.viewport.split("x"))
        targets = [
            {"name": page.rsplit(".", 1)[0].replace("/", "-"), "url": f"{args.site.rstrip('/')}/{page}",
             "viewport": {"width": width, "height": height}, "fullPage": True}
            for page in args.pages
        ]

        async def progress(done: float, total: float | None, message: str | None) -> None:
            print(f"  [{int(done)}/{int(total or 0)}] {message}", file=sys.stderr)

        started = await session.call_tool("lomi_browser_capture_set", {
            "panelId": panel["panelId"], "browserGeneration": panel["browserGeneration"],
            "folder": args.folder, "targets": targets, "deterministic": True, "threshold": args.threshold,
            "retryEpoch": epoch, "requestKey": "docs-captures",
        }, progress_callback=progress)
        envelope = started.structured_content or {}
        if envelope.get("status") != "ok":
            raise SystemExit(f"lomi_browser_capture_set: {envelope.get('code')}: {envelope.get('message')}")
        done = await settle(session, envelope["data"])
        revision = (await call(session, "lomi_panel_list", {"workspaceId": workspace}))["domainRevision"]
        await settle(session, await call(session, "lomi_browser_close", {
            "workspaceId": workspace, "panelId": panel["panelId"], "expectedRevision": revision,
            "retryEpoch": epoch, "requestKey": "docs-browser-close",
        }))
        if done["state"] != "succeeded":
            raise SystemExit(f"the capture set {done['state']}: {json.dumps(done['error'])}")
        changed = 0
        for capture in done["result"]["captures"]:
            comparison = capture["comparison"]
            if comparison is None:
                status = "new"
            elif not capture["written"]:
                status = f"unchanged ({comparison['changedRatio']:.4%} of pixels, kept)"
            else:
                status = f"changed {comparison['changedRatio']:.4%} of pixels, diff {comparison['diff']}"
            changed += capture["written"]
            print(f"{capture['path']}: {status}")
        print(f"manifest: {done['result']['manifest']}; {changed} of {len(done['result']['captures'])} written")
        return 1 if changed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", required=True, help="Lomi's MCP endpoint, http://127.0.0.1:PORT/mcp")
    parser.add_argument("--token", required=True)
    parser.add_argument("--site", required=True, help="the site's base URL")
    parser.add_argument("--folder", default="docs/screenshots", help="project-relative; it must exist")
    parser.add_argument("--viewport", default="1280x800")
    parser.add_argument("--threshold", type=float, default=0.0, help="keep files whose change is at most this share")
    parser.add_argument("pages", nargs="+")
    args = parser.parse_args()
    try:
        sys.exit(asyncio.run(run(args)))
    except SystemExit as stop:
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
