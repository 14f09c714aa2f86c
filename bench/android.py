"""Android benchmark, against the device fixture (lomi-adb-fixture) through a private Debian adb
server, in one run: (a) lomi_android_capture over MCP (PNG received and base64-decoded) beside
raw `adb exec-out screencap -p`; (b) lomi_android_ui_snapshot over MCP beside raw
`adb exec-out uiautomator dump /dev/tty`. Rounds alternate between the two sides; each prints
min/median/max of the per-round medians and the ratio Lomi/raw (target: at most 1.2).
Raw Streamable HTTP with httpx (bench/mcp_load.py's client) keeps the client's overhead low.
Run it with bench/android (see README)."""

import argparse
import asyncio
import base64
import hashlib
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

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_load import Serve, Session, spread  # noqa: E402


def ok(reply, what):
    if reply.get("status") != "ok":
        raise RuntimeError(f"{what}: {reply}")
    return reply["data"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, what, deadline=20.0):
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Adb:
    """A private adb server (`adb -P PORT nodaemon server`) and its client commands."""

    def __init__(self):
        self.port = free_port()
        self.process = subprocess.Popen(
            ["adb", "-P", str(self.port), "nodaemon", "server"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

        def listening():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0

        wait_for(listening, "the adb server")

    def run(self, *args):
        return subprocess.run(["adb", "-P", str(self.port), *args], check=True, capture_output=True).stdout

    def stop(self):
        subprocess.run(["adb", "-P", str(self.port), "kill-server"], capture_output=True)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Device:
    """The fixture binary; its stdout's service log is drained so it never blocks."""

    def __init__(self, binary):
        self.process = subprocess.Popen([binary], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        self.port = int(self.process.stdout.readline())
        self.serial = f"127.0.0.1:{self.port}"
        threading.Thread(target=lambda: [None for _ in self.process.stdout], daemon=True).start()

    def stop(self):
        self.process.kill()
        self.process.wait()


async def call_raw(session, tool, arguments):
    reply = await session.rpc("tools/call", {"name": tool, "arguments": arguments})
    return reply["result"]


async def attach(session, workspace_id, serial):
    epoch = ok(await session.call("lomi_connect", {"workspaceId": workspace_id}), "connect")["retryEpoch"]
    panels = ok(await session.call("lomi_panel_list", {"workspaceId": workspace_id}), "panel_list")
    op = ok(await session.call("lomi_android_attach", {
        "workspaceId": workspace_id, "serial": serial, "expectedRevision": panels["domainRevision"],
        "retryEpoch": epoch, "requestKey": "bench-attach",
    }), "attach")
    while op["state"] not in ("succeeded", "failed", "cancelled", "outcome_unknown"):
        await asyncio.sleep(0.01)
        op = ok(await session.call("lomi_operation_get", {"operationId": op["operationId"]}), "get")
    if op["state"] != "succeeded":
        raise RuntimeError(f"attach: {op}")
    return {**op["result"], "retryEpoch": epoch}


async def settled(session, started, what):
    op = ok(started, what)
    while op["state"] not in ("succeeded", "failed", "cancelled", "outcome_unknown"):
        await asyncio.sleep(0.005)
        op = ok(await session.call("lomi_operation_get", {"operationId": op["operationId"]}), "get")
    if op["state"] != "succeeded":
        raise RuntimeError(f"{what}: {op}")
    return op["result"]


KEYS = iter(range(1, 1 << 30))


def guarded(attached, **args):
    return {"panelId": attached["panelId"], "leaseId": attached["leaseId"], "generation": attached["generation"],
            "retryEpoch": attached["retryEpoch"], "requestKey": f"bench-{next(KEYS)}", **args}


async def lomi_install(session, attached, apk_name):
    started = time.perf_counter()
    result = await settled(
        session, await session.call("lomi_android_install", guarded(attached, path=apk_name)), "install"
    )
    elapsed = time.perf_counter() - started
    if result["package"] != "org.lomi.bench":
        raise RuntimeError(f"install: {result}")
    return elapsed


def raw_install(adb, serial, apk_path):
    started = time.perf_counter()
    said = adb.run("-s", serial, "install", "-r", "--no-streaming", apk_path)
    elapsed = time.perf_counter() - started
    if b"Success" not in said:
        raise RuntimeError(f"adb install: {said!r}")
    return elapsed


async def lomi_pull(session, attached, project):
    target = Path(project, "pulled.bin")
    target.unlink(missing_ok=True)
    started = time.perf_counter()
    await settled(session, await session.call(
        "lomi_android_pull", guarded(attached, devicePath="/sdcard/bench.bin", path="pulled.bin")
    ), "pull")
    elapsed = time.perf_counter() - started
    if target.stat().st_size != TRANSFER_BYTES:
        raise RuntimeError("pull: wrong size")
    return elapsed


def raw_pull(adb, serial, local):
    Path(local).unlink(missing_ok=True)
    started = time.perf_counter()
    adb.run("-s", serial, "pull", "/sdcard/bench.bin", local)
    elapsed = time.perf_counter() - started
    if Path(local).stat().st_size != TRANSFER_BYTES:
        raise RuntimeError("adb pull: wrong size")
    return elapsed


def checked_raw_pull(adb, serial, local):
    """`adb pull` with the checks Lomi makes, scripted as a person would: the device's
    `sha256sum` during the transfer (a second adb connection), then the local file's SHA-256,
    compared."""
    Path(local).unlink(missing_ok=True)
    started = time.perf_counter()
    device_hash = subprocess.Popen(
        ["adb", "-P", str(adb.port), "-s", serial, "shell", "sha256sum", "/sdcard/bench.bin"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    adb.run("-s", serial, "pull", "/sdcard/bench.bin", local)
    with open(local, "rb") as pulled:
        local_hash = hashlib.file_digest(pulled, "sha256").hexdigest()
    on_device = device_hash.communicate(timeout=60)[0].decode().split()[0]
    elapsed = time.perf_counter() - started
    if on_device != local_hash:
        raise RuntimeError("checked adb pull: the hashes differ")
    return elapsed


TRANSFER_BYTES = 10 * 1000 * 1000


def bench_apk(path):
    """A 10 MB APK the fixture installs: a stored, plain-text manifest and a stored payload."""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as apk:
        apk.writestr("AndroidManifest.xml", '<manifest xmlns:android="http://schemas.android.com/apk/res/android" '
                     'package="org.lomi.bench" android:versionCode="1" android:versionName="1.0"/>')
        apk.writestr("assets/payload.bin", os.urandom(TRANSFER_BYTES))


async def measure_transfers(session, attached, adb, serial, project, rounds, transfers):
    results = {"install": ([], []), "pull": ([], []), "checked pull": ([], [])}
    bench_apk(Path(project, "bench.apk"))
    Path(project, "bench.bin").write_bytes(os.urandom(TRANSFER_BYTES))
    local = str(Path(project).parent / f"raw-pulled-{os.getpid()}.bin")
    await settled(session, await session.call("lomi_android_push", guarded(
        attached, path="bench.bin", devicePath="/sdcard/bench.bin")), "push")
    apk_path = str(Path(project, "bench.apk"))
    for _ in range(2):  # warm-up, both sides
        await lomi_install(session, attached, "bench.apk")
        raw_install(adb, serial, apk_path)
        await lomi_pull(session, attached, project)
        raw_pull(adb, serial, local)
    for _ in range(rounds):
        lomi_times = [await lomi_install(session, attached, "bench.apk") for _ in range(transfers)]
        raw_times = [raw_install(adb, serial, apk_path) for _ in range(transfers)]
        results["install"][0].append(statistics.median(lomi_times) * 1000)
        results["install"][1].append(statistics.median(raw_times) * 1000)
        lomi_times = [await lomi_pull(session, attached, project) for _ in range(transfers)]
        raw_times = [raw_pull(adb, serial, local) for _ in range(transfers)]
        results["pull"][0].append(statistics.median(lomi_times) * 1000)
        results["pull"][1].append(statistics.median(raw_times) * 1000)
        checked_times = [checked_raw_pull(adb, serial, local) for _ in range(transfers)]
        results["checked pull"][0].append(results["pull"][0][-1])
        results["checked pull"][1].append(statistics.median(checked_times) * 1000)
    return results


async def lomi_capture(session, panel):
    started = time.perf_counter()
    result = await call_raw(session, "lomi_android_capture", {"panelId": panel})
    images = [block for block in result["content"] if block["type"] == "image"]
    png = base64.b64decode(images[0]["data"])
    elapsed = time.perf_counter() - started
    if not png.startswith(b"\x89PNG") or result["structuredContent"]["data"]["bytes"] != len(png):
        raise RuntimeError(f"bad capture: {result['structuredContent']}")
    return elapsed


def raw_capture(adb, serial):
    started = time.perf_counter()
    png = adb.run("-s", serial, "exec-out", "screencap", "-p")
    elapsed = time.perf_counter() - started
    if not png.startswith(b"\x89PNG"):
        raise RuntimeError(f"bad raw capture: {png[:40]!r}")
    return elapsed


async def lomi_snapshot(session, panel):
    started = time.perf_counter()
    snapshot = ok(await session.call("lomi_android_ui_snapshot", {"panelId": panel}), "ui_snapshot")
    elapsed = time.perf_counter() - started
    if not snapshot["nodes"]:
        raise RuntimeError(f"empty snapshot: {snapshot}")
    return elapsed


def raw_dump(adb, serial):
    started = time.perf_counter()
    dump = adb.run("-s", serial, "exec-out", "uiautomator", "dump", "/dev/tty")
    elapsed = time.perf_counter() - started
    if b"<hierarchy" not in dump:
        raise RuntimeError(f"bad raw dump: {dump[:80]!r}")
    return elapsed


async def measure(url, token, workspace_id, adb, serial, rounds, calls, project=None, transfers=0):
    results = {"capture": ([], []), "snapshot": ([], [])}
    async with httpx.AsyncClient(timeout=60) as client:
        session = Session(client, url, token)
        await session.open()
        attached = await attach(session, workspace_id, serial)
        panel = attached["panelId"]
        for _ in range(10):  # warm-up, both sides
            await lomi_capture(session, panel)
            raw_capture(adb, serial)
            await lomi_snapshot(session, panel)
            raw_dump(adb, serial)
        for _ in range(rounds):
            for name, lomi_one, raw_one in (
                ("capture", lomi_capture, raw_capture),
                ("snapshot", lomi_snapshot, raw_dump),
            ):
                lomi_times = [await lomi_one(session, panel) for _ in range(calls)]
                raw_times = [raw_one(adb, serial) for _ in range(calls)]
                results[name][0].append(statistics.median(lomi_times) * 1000)
                results[name][1].append(statistics.median(raw_times) * 1000)
        if transfers:
            results.update(await measure_transfers(session, attached, adb, serial, project, rounds, transfers))
    return results


def report(title, lomi_label, raw_label, lomi_ms, raw_ms):
    ratios = [a / b for a, b in zip(lomi_ms, raw_ms)]
    print(f"{title}, median per round (ms):")
    print(f"  {lomi_label:<56}{spread(lomi_ms)}")
    print(f"  {raw_label:<56}{spread(raw_ms)}")
    print(
        f"  {'ratio Lomi/raw (per round):':<56}min {min(ratios):8.2f}  "
        f"median {statistics.median(ratios):8.2f}  max {max(ratios):8.2f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lomi", required=True)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=30, help="calls per side per round")
    parser.add_argument("--transfers", type=int, default=3, help="10 MB installs and pulls per side per round")
    args = parser.parse_args()
    if not shutil.which("adb"):
        sys.exit("adb is not installed")

    adb = Adb()
    device = Device(args.fixture)
    try:
        adb.run("connect", device.serial)
        wait_for(lambda: f"{device.serial}\tdevice" in adb.run("devices").decode().splitlines(), "the device")
        with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as project:
            # The person allowed this device ahead (what `lomi decide … approve` would remember).
            Path(data_dir, "android-devices.json").write_text(
                json.dumps({"devices": {device.serial: {"allowed": True}}})
            )
            os.environ["LOMI_ADB_SERVER"] = f"127.0.0.1:{adb.port}"
            serve = Serve(args.lomi, data_dir)
            serve.start()
            try:
                workspace_id = serve.cli("workspace", "add", "--name", "bench", "--project", project)["workspaceId"]
                token = serve.cli("pairing", "create", "--name", "bench", "--workspace", workspace_id)["token"]
                print(
                    f"Lomi Android benchmark: {args.rounds} rounds x {args.calls} calls per side, against the "
                    f"device fixture through adb {adb.run('version').decode().splitlines()[0].split()[-1]}"
                )
                results = asyncio.run(measure(
                    serve.url, token, workspace_id, adb, device.serial, args.rounds, args.calls, project,
                    args.transfers,
                ))
                report(
                    "screenshot (360x640 PNG)",
                    "Lomi over MCP (lomi_android_capture):",
                    "adb exec-out screencap -p:",
                    *results["capture"],
                )
                report(
                    "UI snapshot",
                    "Lomi over MCP (lomi_android_ui_snapshot):",
                    "adb exec-out uiautomator dump /dev/tty:",
                    *results["snapshot"],
                )
                report(
                    "install of a 10 MB APK (until pm's Success)",
                    "Lomi over MCP (lomi_android_install):",
                    "adb install -r --no-streaming:",
                    *results["install"],
                )
                report(
                    "pull of a 10 MB file",
                    "Lomi over MCP (lomi_android_pull, into the project):",
                    "adb pull:",
                    *results["pull"],
                )
                report(
                    "pull of a 10 MB file, beside adb with the same checks",
                    "Lomi over MCP (lomi_android_pull, into the project):",
                    "adb pull + device sha256sum + local SHA-256:",
                    *results["checked pull"],
                )
            finally:
                serve.stop()
    finally:
        device.stop()
        adb.stop()


if __name__ == "__main__":
    sys.exit(main())
