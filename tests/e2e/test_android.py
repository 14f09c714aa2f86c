"""Android panels through the MCP Python SDK, against Debian's real `adb` server and the device
fixture (`lomi-adb-fixture`, a program that speaks the device side of the ADB transport on
loopback): the real adb client against the fixture; devices → attach (approved with
`lomi decide`) → UI snapshot → tap by ref → the next snapshot and capture show it; a denial;
ordered input with dedup and the sequence/lease errors; stale refs; a device killed mid-input
and restarted; launch; the policy-gated shell; bad input.

Each test gets its own adb server (`adb -P PORT nodaemon server`, never the default 5037) and its
own fixture processes, all killed by pid afterwards. Nothing sleeps for a fixed time.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import LOMI_BIN, WAIT_DEADLINE, Mcp, dump

pytestmark = pytest.mark.anyio

FIXTURE_BIN = os.environ.get("LOMI_ADB_FIXTURE", str(Path(LOMI_BIN).parent / "lomi-adb-fixture"))
DEADLINE = WAIT_DEADLINE
SCREEN = (360, 640)
BUTTON_CENTRE = (180, 240)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, what: str, deadline: float = DEADLINE):
    end = time.monotonic() + deadline
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {deadline}s waiting for {what}")
        time.sleep(0.02)


# ---- PNG, checked with the standard library only ----


def png_pixels(png: bytes) -> tuple[int, int, bytes]:
    """Checks a whole PNG (signature, chunk CRCs, IHDR first, IEND last) and returns its size
    and decompressed scanlines."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), png[:16]
    offset, chunks = 8, []
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        kind = png[offset + 4 : offset + 8]
        body = png[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", png[offset + 8 + length : offset + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        offset += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", [k for k, _ in chunks]
    width, height = struct.unpack(">II", chunks[0][1][:8])
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    return width, height, pixels


# ---- the adb server and the device fixture ----


class AdbServer:
    """A private adb server on its own port, killed by pid."""

    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.log = (log_dir / f"adb-{self.port}.log").open("wb")
        self.proc = subprocess.Popen(
            ["adb", "-P", str(self.port), "nodaemon", "server"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
        )

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0

        wait_until(listening, f"the adb server on port {self.port}")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(["adb", "-P", str(self.port), *args], capture_output=True, timeout=DEADLINE)
        if check:
            assert done.returncode == 0, f"adb {args} failed: {done}"
        return done

    def text(self, *args: str) -> str:
        return self.run(*args).stdout.decode()

    def connect(self, serial: str) -> None:
        said = self.text("connect", serial)
        assert "connected to" in said, said
        wait_until(lambda: f"{serial}\tdevice" in self.text("devices").splitlines(), f"{serial} to be a device")

    def stop(self) -> None:
        self.run("kill-server", check=False)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.log.close()


class Phone:
    """One run of the fixture binary; its stdout says which services the host opened."""

    def __init__(self, port: int = 0) -> None:
        assert Path(FIXTURE_BIN).is_file(), (
            f"no device fixture at {FIXTURE_BIN}: build it with `cargo build -p lomi-adb-fixture` "
            "or set LOMI_ADB_FIXTURE"
        )
        self.proc = subprocess.Popen(
            [FIXTURE_BIN, str(port)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline().decode().strip()
        assert first.isdigit(), f"the fixture printed {first!r}; stderr: {self.proc.stderr.read()!r}"
        self.port = int(first)
        self.services: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            text = line.decode(errors="replace").rstrip("\n")
            if text.startswith("service: "):
                self.services.append(text[len("service: ") :])

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait_for_service(self, fragment: str) -> str:
        return wait_until(
            lambda: next((s for s in self.services if fragment in s), None), f"the device to be asked {fragment!r}"
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def adb(tmp_path: Path):
    assert shutil.which("adb"), "`adb` is missing: install Debian's adb package (scripts/test does)"
    logs = tmp_path / "adb-logs"
    logs.mkdir()
    server = AdbServer(logs)
    yield server
    server.stop()


@pytest.fixture
def phones():
    started: list[Phone] = []

    def start(port: int = 0) -> Phone:
        phone = Phone(port)
        started.append(phone)
        return phone

    yield start
    for phone in started:
        phone.kill()


@pytest.fixture(autouse=True)
def adb_server_for_serve(request, monkeypatch):
    """Points every `lomi serve` of the test at the test's adb server, before it starts."""
    if "adb" in request.fixturenames:
        monkeypatch.setenv("LOMI_ADB_SERVER", request.getfixturevalue("adb").address)


# ---- the agent's side ----


class Android:
    """An agent connected to workspace A, with one attached device."""

    def __init__(self, agent: Mcp, lomi, workspace_id: str, epoch: str) -> None:
        self.agent = agent
        self.lomi = lomi
        self.ws = workspace_id
        self.epoch = epoch
        self.keys = 0
        self.panel = ""
        self.generation = ""
        self.lease = ""
        self.seq = 0

    def key(self, prefix: str) -> str:
        self.keys += 1
        return f"{prefix}-{self.keys}"

    async def revision(self) -> str:
        return (await self.agent.ok("lomi_panel_list", {"workspaceId": self.ws}))["domainRevision"]

    async def attach_args(self, serial: str, key: str | None = None) -> dict[str, Any]:
        return {
            "workspaceId": self.ws, "serial": serial, "expectedRevision": await self.revision(),
            "retryEpoch": self.epoch, "requestKey": key or self.key("attach"),
        }

    async def attach_deciding(self, serial: str, decision: str) -> dict[str, Any]:
        """Attaches a device the person has not decided on: the operation waits for them, and
        `lomi decide` answers. Returns the settled operation."""
        args = await self.attach_args(serial)
        started: dict[str, Any] = {}

        async def call() -> None:
            started["envelope"] = await self.agent.ok("lomi_android_attach", args)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            op = await anyio.to_thread.run_sync(
                lambda: self.lomi.wait_operation_for_key(args["requestKey"], "awaiting_user")
            )
            assert op["tool"] == "lomi_android_attach" and op["effectState"] == "none", dump(op)
            await self.lomi.acli("decide", op["operationId"], decision)
        settled = await self.agent.settle(op["operationId"])
        if settled["state"] == "succeeded":
            self.take(settled["result"])
        return settled

    async def attach(self, serial: str) -> dict[str, Any]:
        """Attaches a device the person already allowed: no decision needed."""
        op = await self.agent.ok("lomi_android_attach", await self.attach_args(serial))
        settled = await self.agent.settle(op["operationId"])
        assert settled["state"] == "succeeded", dump(settled)
        self.take(settled["result"])
        return settled

    def take(self, attached: dict[str, Any]) -> None:
        self.panel, self.generation, self.lease = attached["panelId"], attached["generation"], attached["leaseId"]
        self.seq = 0

    def input_args(self, seq: int | None = None, **action) -> dict[str, Any]:
        return {
            "panelId": self.panel, "leaseId": self.lease, "generation": self.generation,
            "inputSequence": str(self.seq + 1 if seq is None else seq), **action,
        }

    async def send(self, **action) -> dict[str, Any]:
        accepted = await self.agent.ok("lomi_android_input", self.input_args(**action))
        self.seq += 1
        assert accepted["inputSequence"] == str(self.seq) and accepted["duplicate"] is False, dump(accepted)
        return accepted

    async def snapshot(self) -> dict[str, Any]:
        return await self.agent.ok(
            "lomi_android_ui_snapshot", {"panelId": self.panel, "generation": self.generation}
        )

    async def capture(self, **options) -> tuple[dict[str, Any], bytes]:
        envelope = await self.agent.call(
            "lomi_android_capture", {"panelId": self.panel, "generation": self.generation, **options}
        )
        assert envelope["status"] == "ok", dump(envelope)
        images = [c for c in envelope.raw.content if c.type == "image"]
        assert len(images) == 1 and images[0].mime_type == "image/png", envelope.raw
        png = base64.b64decode(images[0].data)
        data = envelope["data"]
        assert data["sha256"] == hashlib.sha256(png).hexdigest() and data["bytes"] == len(png), dump(data)
        return data, png


def node(snapshot: dict[str, Any], resource_id: str) -> dict[str, Any]:
    found = [n for n in snapshot["nodes"] if n.get("resourceId") == resource_id]
    assert len(found) == 1, dump(snapshot)
    return found[0]


@contextlib.asynccontextmanager
async def android_agent(lomi, mcp, workspaces) -> AsyncIterator[Android]:
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"], name="android-agent")["token"]
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        yield Android(agent, lomi, a["workspaceId"], epoch)


@contextlib.asynccontextmanager
async def attached_phone(lomi, mcp, workspaces, adb, phones) -> AsyncIterator[tuple[Android, Phone]]:
    """A fixture device, connected to the adb server, attached by an agent with the person's
    approval."""
    phone = phones()
    adb.connect(phone.serial)
    async with android_agent(lomi, mcp, workspaces) as android:
        op = await android.attach_deciding(phone.serial, "approve")
        assert op["state"] == "succeeded", dump(op)
        yield android, phone


# ---- tests ----


def test_the_real_adb_client_drives_the_fixture(adb, phones):
    phone = phones()
    adb.connect(phone.serial)
    assert f"{phone.serial}\tdevice" in adb.text("devices").splitlines()
    assert adb.text("-s", phone.serial, "shell", "getprop", "ro.product.model").strip() == "LomiFixture"
    assert adb.text("-s", phone.serial, "shell", "getprop", "ro.build.version.sdk").strip() == "34"
    png = adb.run("-s", phone.serial, "exec-out", "screencap", "-p").stdout
    width, height, pixels = png_pixels(png)
    assert (width, height) == SCREEN
    assert len(pixels) > width * height, "the scanlines decompress to a whole image"
    assert any("getprop ro.product.model" in s for s in phone.services), phone.services


async def test_devices_attach_snapshot_tap_by_ref_capture(lomi, workspaces, mcp, adb, phones):
    phone = phones()
    adb.connect(phone.serial)
    async with android_agent(lomi, mcp, workspaces) as android:
        listed = await android.agent.ok("lomi_android_devices", {"workspaceId": android.ws})
        assert listed["adbServer"] == adb.address, dump(listed)
        [seen] = [d for d in listed["devices"] if d["serial"] == phone.serial]
        assert (seen["state"], seen["model"], seen["apiLevel"], seen["panelId"]) == (
            "ready", "LomiFixture", 34, None
        ), dump(seen)

        before_revision = await android.revision()
        op = await android.attach_deciding(phone.serial, "approve")
        assert op["state"] == "succeeded" and op["effectState"] == "complete", dump(op)
        result = op["result"]
        assert result["serial"] == phone.serial and result["model"] == "LomiFixture", dump(op)
        assert (result["screenWidth"], result["screenHeight"]) == SCREEN
        assert result["domainRevision"] == str(int(before_revision) + 1)
        assert result["generation"].startswith(f"{phone.serial}/LOMIFIXTURE0001/"), dump(op)
        listed = await android.agent.ok("lomi_android_devices", {"workspaceId": android.ws})
        [seen] = [d for d in listed["devices"] if d["serial"] == phone.serial]
        assert (seen["panelId"], seen["generation"]) == (android.panel, android.generation), dump(listed)
        panels = await android.agent.ok("lomi_panel_list", {"workspaceId": android.ws})
        assert [(p["panelId"], p["kind"], p["generation"]) for p in panels["panels"]] == [
            (android.panel, "android", android.generation)
        ], dump(panels)

        snapshot = await android.snapshot()
        button = node(snapshot, "fixture:id/button")
        assert button["text"] == "Press me" and button["clickable"] is True, dump(button)
        assert button["bounds"] == {"left": 40, "top": 200, "right": 320, "bottom": 280}
        assert snapshot["truncated"] is False and snapshot["attempts"] == 1
        _, png_before = await android.capture()

        accepted = await android.send(tap={"snapshotId": snapshot["snapshotId"], "elementRef": button["elementRef"]})
        assert accepted["dispatched"] == "input tap %d %d" % BUTTON_CENTRE, dump(accepted)
        phone.wait_for_service("'input' 'tap' '180' '240'")

        after = await android.snapshot()
        assert node(after, "fixture:id/button")["text"] == "Pressed", dump(after)
        assert after["snapshotId"] != snapshot["snapshotId"]
        data, png_after = await android.capture()
        assert (data["width"], data["height"], data["mimeType"]) == (*SCREEN, "image/png"), dump(data)
        assert data["scale"] == 1, dump(data)
        assert png_pixels(png_after)[2] != png_pixels(png_before)[2], "the capture did not change after the tap"

        # A scaled, clipped capture goes through lomi-capture: the button's area at half size.
        small, small_png = await android.capture(clip={"x": 40, "y": 200, "width": 280, "height": 80}, scale=0.5)
        assert (small["width"], small["height"]) == (140, 40), dump(small)
        assert small["scale"] == 0.5, dump(small)  # image pixels per screen pixel
        assert png_pixels(small_png)[:2] == (140, 40)

        # Detach, then attach again: the person's approval is remembered, nothing waits.
        revision = await android.revision()
        detached = await android.agent.settle((await android.agent.ok("lomi_android_detach", {
            "workspaceId": android.ws, "panelId": android.panel, "expectedRevision": revision,
            "retryEpoch": android.epoch, "requestKey": "detach-1",
        }))["operationId"])
        assert detached["state"] == "succeeded", dump(detached)
        old_panel = android.panel
        await android.attach(phone.serial)
        assert android.panel != old_panel
    stored = (lomi.data_dir / "android-devices.json").read_text()
    assert phone.serial in stored and '"allowed": true' in stored, stored


async def test_a_denied_attach_fails_user_denied_and_is_remembered(lomi, workspaces, mcp, adb, phones):
    phone = phones()
    adb.connect(phone.serial)
    async with android_agent(lomi, mcp, workspaces) as android:
        revision = await android.revision()
        op = await android.attach_deciding(phone.serial, "deny")
        assert op["state"] == "failed" and op["effectState"] == "none", dump(op)
        assert op["error"]["code"] == "USER_DENIED", dump(op)
        assert await android.revision() == revision, "a denied attach adds no panel"
        # The next attach follows the person's choice without asking again.
        again = await android.agent.ok("lomi_android_attach", await android.attach_args(phone.serial))
        settled = await android.agent.settle(again["operationId"])
        assert settled["state"] == "failed" and settled["error"]["code"] == "USER_DENIED", dump(settled)
        assert f"lomi android forget {phone.serial}" in settled["error"]["message"], dump(settled)
        assert lomi.cli("android", "choices") == {phone.serial: False}
        # The person forgets the decision: the next attach waits for them again.
        assert lomi.run("android", "forget", phone.serial).returncode == 0
        assert lomi.cli("android", "choices") == {}
        op = await android.attach_deciding(phone.serial, "approve")
        assert op["state"] == "succeeded", dump(op)
    assert not any("input" in s for s in phone.services), phone.services


async def test_ordered_input_dedup_and_sequence_and_lease_errors(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        agent = android.agent
        first = await android.send(text="hello")
        # The same sequence with the same payload is acknowledged, not typed again.
        again = await agent.ok("lomi_android_input", android.input_args(seq=1, text="hello"))
        assert again["duplicate"] is True and again["inputSequence"] == "1", dump(again)
        await agent.error("lomi_android_input", android.input_args(seq=1, text="other"), "SEQUENCE_CONFLICT")
        gap = await agent.error("lomi_android_input", android.input_args(seq=5, key="66"), "SEQUENCE_GAP")
        assert gap["details"]["nextInputSequence"] == "2", dump(gap)
        await android.send(key="KEYCODE_ENTER")
        await android.send(swipe={"fromX": 10, "fromY": 600, "toX": 10, "toY": 100, "durationMs": 50})
        await android.send(longPress={"x": 20, "y": 400})
        snapshot = await android.snapshot()
        assert node(snapshot, "fixture:id/text")["text"] == "hello", dump(snapshot)
        assert sum("'input' 'text'" in s for s in phone.services) == 1, phone.services
        assert any("'input' 'swipe' '20' '400' '20' '400' '800'" in s for s in phone.services), phone.services

        # Without a lease of this client, or with a wrong generation, nothing is sent.
        await agent.error(
            "lomi_android_input", dict(android.input_args(text="x"), leaseId="ls_" + "0" * 32), "LEASE_REQUIRED"
        )
        await agent.error(
            "lomi_android_input", dict(android.input_args(text="x"), generation="other"), "GENERATION_MISMATCH"
        )
        released = await agent.ok("lomi_lease_release", {"leaseId": android.lease})
        assert released["released"] is True
        await agent.error("lomi_android_input", android.input_args(text="x"), "LEASE_REQUIRED")
        lease = await agent.ok("lomi_lease_acquire", {"panelId": android.panel, "generation": android.generation})
        android.lease, android.seq = lease["leaseId"], 0
        await android.send(text="!")
        assert node(await android.snapshot(), "fixture:id/text")["text"] == "hello!"
        assert first["dispatched"].startswith("input text")


async def test_a_ref_from_a_changed_ui_is_stale(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        snapshot = await android.snapshot()
        button = node(snapshot, "fixture:id/button")
        # The UI changes (text typed into the field) after the snapshot was taken.
        await android.send(text="changed")
        taps_before = sum("'input' 'tap'" in s for s in phone.services)
        stale = await android.agent.error(
            "lomi_android_input",
            android.input_args(tap={"snapshotId": snapshot["snapshotId"], "elementRef": button["elementRef"]}),
            "SNAPSHOT_STALE",
        )
        assert "changed" in stale["message"], dump(stale)
        # A refused input does not use its sequence number, and nothing was tapped.
        assert sum("'input' 'tap'" in s for s in phone.services) == taps_before
        fresh = await android.snapshot()
        # An older snapshot than the latest is stale too, even if the UI did not change since.
        await android.agent.error(
            "lomi_android_input",
            android.input_args(tap={"snapshotId": snapshot["snapshotId"], "elementRef": button["elementRef"]}),
            "SNAPSHOT_STALE",
        )
        await android.send(tap={"snapshotId": fresh["snapshotId"], "elementRef": node(fresh, "fixture:id/button")["elementRef"]})
        assert node(await android.snapshot(), "fixture:id/button")["text"] == "Pressed"
        await android.agent.error(
            "lomi_android_input",
            android.input_args(tap={"snapshotId": fresh["snapshotId"], "elementRef": "n999"}),
            "SNAPSHOT_STALE",
        )


async def test_a_device_lost_mid_input_settles_honestly_and_returns_with_a_new_generation(
    lomi, workspaces, mcp, adb, phones
):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        agent = android.agent
        old_generation, old_lease = android.generation, android.lease
        # A slow swipe keeps the command running on the device; kill the device while it does.
        slow = android.input_args(swipe={"fromX": 10, "fromY": 600, "toX": 10, "toY": 100, "durationMs": 8000})
        answers: dict[str, Any] = {}

        async def swipe() -> None:
            answers["swipe"] = await agent.call("lomi_android_input", slow)

        async with anyio.create_task_group() as tg:
            tg.start_soon(swipe)
            await anyio.to_thread.run_sync(lambda: phone.wait_for_service("'input' 'swipe'"))
            phone.kill()
        lost = answers["swipe"]
        assert lost["status"] == "error" and lost["code"] == "RUNTIME_UNAVAILABLE", dump(lost)
        assert lost["details"]["effectState"] == "unknown" and lost["details"]["deviceGone"] is True, dump(lost)
        # The panel stays; its runtime ended, and with it the lease.
        panels = await agent.ok("lomi_panel_list", {"workspaceId": android.ws})
        assert [(p["panelId"], p["generation"]) for p in panels["panels"]] == [(android.panel, None)], dump(panels)
        await agent.error("lomi_android_input", android.input_args(text="x"), "LEASE_EXPIRED")
        await agent.error("lomi_android_ui_snapshot", {"panelId": android.panel}, "GENERATION_MISMATCH")

        # Work under the ended lease is refused before anything is recorded.
        lease = await agent.error(
            "lomi_android_launch",
            {"panelId": android.panel, "leaseId": old_lease, "generation": old_generation, "component": "a/.B",
             "retryEpoch": android.epoch, "requestKey": "launch-gone"},
            "LEASE_EXPIRED",
        )
        assert lease["message"]

        # The device comes back (a new boot on the same address): attaching it again gives the same
        # panel a new generation; the person's approval is remembered.
        back = phones(phone.port)
        op = await android.attach(back.serial)
        assert op["result"]["panelId"] == android.panel and op["result"]["reattached"] is True, dump(op)
        assert android.generation != old_generation and android.generation.startswith(f"{back.serial}/"), dump(op)
        await agent.error(
            "lomi_android_input",
            {"panelId": android.panel, "leaseId": old_lease, "generation": old_generation, "inputSequence": "2",
             "text": "x"},
            "LEASE_EXPIRED",
        )
        await android.send(text="back")
        assert node(await android.snapshot(), "fixture:id/text")["text"] == "back"


async def test_work_for_a_device_that_went_away_fails_with_no_effect(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        phone.kill()
        wait_until(
            lambda: f"{phone.serial}\tdevice" not in adb.text("devices").splitlines(), "adb to notice the device left"
        )
        op = await android.agent.settle((await android.agent.ok("lomi_android_launch", {
            "panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
            "component": "org.example/.Main", "retryEpoch": android.epoch, "requestKey": "launch-gone",
        }))["operationId"])
        # Nothing reached the device: failed with effect none, never succeeded.
        assert op["state"] == "failed" and op["effectState"] == "none", dump(op)
        assert op["error"]["code"] in ("NOT_FOUND", "UNSUPPORTED"), dump(op)
        panels = await android.agent.ok("lomi_panel_list", {"workspaceId": android.ws})
        assert panels["panels"][0]["generation"] is None, dump(panels)
        await android.agent.error("lomi_android_capture", {"panelId": android.panel}, "GENERATION_MISMATCH")


async def test_launch_confirms_delivery_only(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        base = {"panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
                "retryEpoch": android.epoch}
        op = await android.agent.settle(
            (await android.agent.ok("lomi_android_launch", {**base, "requestKey": "l1", "component": "org.example/.Main"}))[
                "operationId"
            ]
        )
        assert op["state"] == "succeeded" and op["result"]["delivered"] is True, dump(op)
        assert op["result"]["amOutput"] == "Starting: Intent { cmp=org.example/.Main }", dump(op)
        intent = {"action": "android.intent.action.VIEW", "data": "https://example.com/?q=a b&x=$(reboot)"}
        op = await android.agent.settle(
            (await android.agent.ok("lomi_android_launch", {**base, "requestKey": "l2", "intent": intent}))["operationId"]
        )
        assert op["state"] == "succeeded", dump(op)
        assert "dat=https://example.com/?q=a b&x=$(reboot)" in op["result"]["amOutput"], dump(op)
        # A retry is the same operation: one launch.
        retry = await android.agent.ok("lomi_android_launch", {**base, "requestKey": "l2", "intent": intent})
        assert retry["operationId"] == op["operationId"]
        assert sum("'am' 'start'" in s for s in phone.services) == 2, phone.services
        await android.agent.error(
            "lomi_android_launch", {**base, "requestKey": "l3", "component": "a/.B", "intent": intent}, "INVALID_ARGUMENT"
        )
        await android.agent.error("lomi_android_launch", {**base, "requestKey": "l4"}, "INVALID_ARGUMENT")


async def test_shell_waits_for_the_person_and_bounds_its_output(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        args = {"panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
                "command": "getprop", "maxBytes": 40, "retryEpoch": android.epoch, "requestKey": "sh1"}

        async def call() -> None:
            await android.agent.ok("lomi_android_shell", args)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            op = await anyio.to_thread.run_sync(lambda: lomi.wait_operation_for_key("sh1", "awaiting_user"))
            assert not any(s.endswith("getprop") for s in phone.services), "nothing runs before the person decides"
            await lomi.acli("decide", op["operationId"], "approve")
        settled = await android.agent.settle(op["operationId"])
        assert settled["state"] == "succeeded", dump(settled)
        assert settled["result"]["truncated"] is True and settled["result"]["bytes"] == 40, dump(settled)
        assert settled["result"]["output"].startswith("[ro.build.version.release]: [14]"), dump(settled)


async def test_bad_input(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        agent = android.agent
        # An unknown serial is NOT_FOUND before anything is recorded.
        receipts = len(lomi.cli("operation", "list"))
        await agent.error("lomi_android_attach", await android.attach_args("emulator-9999"), "NOT_FOUND")
        assert len(lomi.cli("operation", "list")) == receipts
        await agent.error("lomi_android_capture", {"panelId": "pn_" + "0" * 32}, "NOT_FOUND")
        # Off-screen coordinates are refused without using the sequence.
        # The fixture starts with auto-rotate on, so a point is refused when it is off the
        # screen in both orientations.
        for action in ({"tap": {"x": 640, "y": 10}}, {"tap": {"x": 10, "y": 640}},
                       {"swipe": {"fromX": 0, "fromY": 0, "toX": 5000, "toY": 1}}):
            refused = await agent.error("lomi_android_input", android.input_args(**action), "INVALID_ARGUMENT")
            assert "off the 360x640 screen" in refused["message"], dump(refused)
        # Unions: exactly one action, and a tap is coordinates or a ref, not both.
        await agent.error("lomi_android_input", android.input_args(text="a", key="66"), "INVALID_ARGUMENT")
        await agent.error("lomi_android_input", android.input_args(), "INVALID_ARGUMENT")
        await agent.error(
            "lomi_android_input",
            android.input_args(tap={"x": 1, "y": 1, "snapshotId": "snap_x", "elementRef": "n1"}),
            "INVALID_ARGUMENT",
        )
        await agent.error("lomi_android_input", android.input_args(tap={"x": -1, "y": 1}), "INVALID_ARGUMENT")
        await agent.error("lomi_android_input", android.input_args(key="66; reboot"), "INVALID_ARGUMENT")
        await agent.error("lomi_android_input", android.input_args(text="a", color="red"), "INVALID_ARGUMENT")
        await agent.error("lomi_android_input", android.input_args(text="line\nbreak"), "INVALID_ARGUMENT")
        await agent.error("lomi_android_capture", {"panelId": android.panel, "scale": 3}, "INVALID_ARGUMENT")
        await agent.error(
            "lomi_android_capture", {"panelId": android.panel, "clip": {"x": 300, "y": 0, "width": 100, "height": 10}},
            "INVALID_ARGUMENT",
        )
        # Text with shell metacharacters reaches the device literally, never interpreted.
        literal = "a b;rm -rf / $(reboot) `id` 'q' \"d\" | & > < * ~ #"
        await android.send(text=literal)
        assert node(await android.snapshot(), "fixture:id/text")["text"] == literal
        assert android.seq == 1, "refused inputs used no sequence numbers"


async def test_shell_by_policy_a_busy_ui_and_a_device_lost_mid_command(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        # The person lets shell commands run without asking.
        assert lomi.run("confirm", "lomi_android_shell", "--off").returncode == 0
        keys = iter(range(1, 100))

        async def shell(command: str) -> dict[str, Any]:
            op = await android.agent.ok("lomi_android_shell", {
                "panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
                "command": command, "retryEpoch": android.epoch, "requestKey": f"sh-{next(keys)}",
            })
            return await android.agent.settle(op["operationId"])

        op = await shell("setprop lomi.fixture.busy_dumps 2")
        assert op["state"] == "succeeded" and op["result"]["output"] == "", dump(op)
        # The UI reports it is not idle twice: the snapshot retries and says how many runs it took.
        snapshot = await android.snapshot()
        assert snapshot["attempts"] == 3 and snapshot["nodes"], dump(snapshot)
        # Busy past the retries: it says so instead of answering with a partial tree.
        await shell("setprop lomi.fixture.busy_dumps 3")
        busy = await android.agent.error(
            "lomi_android_ui_snapshot", {"panelId": android.panel}, "RUNTIME_UNAVAILABLE"
        )
        assert "never became idle in 3" in busy["message"], dump(busy)

        # A command still running on the device when it goes away: outcome_unknown, never
        # succeeded, and the panel's runtime ends.
        started: dict[str, Any] = {}

        async def slow() -> None:
            started["op"] = await android.agent.ok("lomi_android_shell", {
                "panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
                "command": "input swipe 5 5 5 5 8000", "retryEpoch": android.epoch, "requestKey": "sh-slow",
            })

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.to_thread.run_sync(lambda: phone.wait_for_service("input swipe 5 5 5 5 8000"))
            phone.kill()
        op = await android.agent.settle(started["op"]["operationId"])
        assert op["state"] == "outcome_unknown" and op["effectState"] == "unknown", dump(op)
        assert "cannot tell whether the command took effect" in op["error"]["message"], dump(op)
        panels = await android.agent.ok("lomi_panel_list", {"workspaceId": android.ws})
        assert panels["panels"][0]["generation"] is None, dump(panels)


# ---- files, apps, log and rotation ----


def tiny_apk(path: Path, package: str, version_code: int, version_name: str) -> bytes:
    """A zip with a stored, plain-text AndroidManifest.xml: what the fixture installs (a real
    APK's manifest is binary XML, which Lomi reads too; see lomi-android/src/apk.rs)."""
    import zipfile

    manifest = (
        '<manifest xmlns:android="http://schemas.android.com/apk/res/android" '
        f'package="{package}" android:versionCode="{version_code}" android:versionName="{version_name}"/>'
    )
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as apk:
        apk.writestr("AndroidManifest.xml", manifest)
        apk.writestr("classes.dex", b"dex\n035\0" + bytes(64))
    return path.read_bytes()


FRAMEWORK_RES = Path("/usr/share/android-framework-res/framework-res.apk")


def real_apk(folder: Path, package: str, version_code: int, version_name: str) -> Path:
    """An APK built by Debian's `aapt` against Android's framework resources: its
    AndroidManifest.xml is compiled binary XML, deflated, as on a phone."""
    assert shutil.which("aapt") and FRAMEWORK_RES.is_file(), (
        "`aapt` or framework-res.apk is missing: install Debian's aapt and android-framework-res (scripts/test does)"
    )
    source = folder / "apk-source"
    source.mkdir()
    (source / "AndroidManifest.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<manifest xmlns:android="http://schemas.android.com/apk/res/android" '
        f'package="{package}" android:versionCode="{version_code}" android:versionName="{version_name}">\n'
        '  <application android:label="Lomi test"><activity android:name=".Main"/></application>\n'
        '</manifest>\n'
    )
    apk = folder / "app.apk"
    done = subprocess.run(
        ["aapt", "package", "-f", "-M", str(source / "AndroidManifest.xml"), "-I", str(FRAMEWORK_RES), "-F", str(apk)],
        capture_output=True, timeout=DEADLINE,
    )
    assert done.returncode == 0, f"aapt package failed: {done}"
    return apk


def badging(apk: Path) -> tuple[str, int, str]:
    """What `aapt dump badging` reads from the APK: package, versionCode, versionName."""
    import re

    said = subprocess.run(["aapt", "dump", "badging", str(apk)], capture_output=True, timeout=DEADLINE, check=True)
    line = said.stdout.decode().splitlines()[0]
    found = re.match(r"package: name='([^']*)' versionCode='(\d+)' versionName='([^']*)'", line)
    assert found, line
    return found[1], int(found[2]), found[3]


def guarded(android: Android, key: str, **args: Any) -> dict[str, Any]:
    return {"panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
            "retryEpoch": android.epoch, "requestKey": key, **args}


async def run_op(android: Android, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    started = await android.agent.ok(tool, args)
    return await android.agent.settle(started["operationId"])


async def test_install_apps_launch_logcat_stop_uninstall(lomi, workspaces, mcp, adb, phones, tmp_path):
    project = tmp_path / "project-a"
    apk = tiny_apk(project / "demo.apk", "org.lomi.demo", 7, "1.7")
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        agent = android.agent
        before = await agent.ok("lomi_android_apps", {"panelId": android.panel})
        assert before["apps"] == [], dump(before)
        op = await run_op(android, "lomi_android_install", guarded(android, "i1", path="demo.apk"))
        assert (op["state"], op["effectState"]) == ("succeeded", "complete"), dump(op)
        result = op["result"]
        assert (result["package"], result["versionCode"], result["versionName"]) == ("org.lomi.demo", 7, "1.7"), dump(op)
        assert result["sha256"] == hashlib.sha256(apk).hexdigest() and result["bytes"] == len(apk), dump(op)
        # The APK went over the sync service, pm installed it, and its copy was removed.
        assert "sync:" in phone.services, phone.services
        assert any("'pm' 'install' '-r' '/data/local/tmp/lomi-install-" in s for s in phone.services), phone.services
        assert any(s.startswith("exec:'rm' '-f' '/data/local/tmp/lomi-install-") for s in phone.services), phone.services
        apps = await agent.ok("lomi_android_apps", {"panelId": android.panel, "generation": android.generation})
        assert apps["apps"] == [{"package": "org.lomi.demo", "versionCode": 7}], dump(apps)
        everything = await agent.ok("lomi_android_apps", {"panelId": android.panel, "includeSystem": True})
        assert {"package": "com.android.settings", "versionCode": 34} in everything["apps"], dump(everything)

        # The log so far, then a launch and a wait for the app's start line after the cursor.
        log = await agent.ok("lomi_android_logcat", {"panelId": android.panel})
        assert any(line["tag"] == "PackageManager" and "org.lomi.demo" in line["message"] for line in log["lines"]), dump(log)
        cursor = log["nextCursor"]
        op = await run_op(android, "lomi_android_launch", guarded(android, "l1", component="org.lomi.demo/.Main"))
        assert op["state"] == "succeeded", dump(op)
        waited = await agent.ok("lomi_android_logcat", {
            "panelId": android.panel, "sinceCursor": cursor, "waitFor": "org.lomi.demo started .Main", "timeoutMs": 30_000,
        })
        assert waited["matched"] is True and waited["lines"][-1]["tag"] == "LomiFixtureApp", dump(waited)
        assert not any(line["tag"] == "PackageManager" for line in waited["lines"]), "the cursor skips earlier lines"
        by_package = await agent.ok("lomi_android_logcat", {"panelId": android.panel, "package": "org.lomi.demo"})
        assert [line["message"] for line in by_package["lines"]] == ["org.lomi.demo started .Main"], dump(by_package)
        by_tag = await agent.ok("lomi_android_logcat", {"panelId": android.panel, "tag": "ActivityManager", "level": "I"})
        assert by_tag["lines"] and all(line["tag"] == "ActivityManager" for line in by_tag["lines"]), dump(by_tag)
        # Nothing new after the cursor: the wait times out, unmatched.
        began = time.monotonic()
        none = await agent.ok("lomi_android_logcat", {
            "panelId": android.panel, "sinceCursor": waited["nextCursor"], "waitFor": "never printed", "timeoutMs": 600,
        })
        assert none["matched"] is False and none["lines"] == [] and time.monotonic() - began >= 0.5, dump(none)
        # A small budget pages through the log with the cursor, each line once.
        pages, seen, cursor = 0, [], None
        while True:
            args = {"panelId": android.panel, "maxBytes": 1024}
            if cursor:
                args["sinceCursor"] = cursor
            page = await agent.ok("lomi_android_logcat", args)
            seen += [line["message"] for line in page["lines"]]
            cursor, pages = page["nextCursor"], pages + 1
            if not page["more"]:
                break
        assert seen == [line["message"] for line in (await agent.ok("lomi_android_logcat", {"panelId": android.panel}))["lines"]]

        op = await run_op(android, "lomi_android_stop", guarded(android, "s1", package="org.lomi.demo"))
        assert op["state"] == "succeeded", dump(op)
        await agent.error("lomi_android_logcat", {"panelId": android.panel, "package": "org.lomi.demo"}, "NOT_FOUND")
        op = await run_op(android, "lomi_android_uninstall", guarded(android, "u1", package="org.lomi.demo"))
        assert op["state"] == "succeeded", dump(op)
        assert (await agent.ok("lomi_android_apps", {"panelId": android.panel}))["apps"] == []
        again = await run_op(android, "lomi_android_uninstall", guarded(android, "u2", package="org.lomi.demo"))
        assert (again["state"], again["effectState"], again["error"]["code"]) == ("failed", "none", "NOT_FOUND"), dump(again)

        # Not an APK: the package manager is never asked.
        (project / "notes.apk").write_bytes(b"just text")
        bad = await run_op(android, "lomi_android_install", guarded(android, "i2", path="notes.apk"))
        assert (bad["state"], bad["effectState"], bad["error"]["code"]) == ("failed", "none", "INVALID_ARGUMENT"), dump(bad)
        assert "not an APK" in bad["error"]["message"], dump(bad)
        # pm's refusal, in its words: a downgrade without allowDowngrade.
        tiny_apk(project / "demo.apk", "org.lomi.demo", 7, "1.7")
        assert (await run_op(android, "lomi_android_install", guarded(android, "i3", path="demo.apk")))["state"] == "succeeded"
        tiny_apk(project / "old.apk", "org.lomi.demo", 7, "1.7")
        refused = await run_op(android, "lomi_android_install", guarded(android, "i4", path="old.apk", replace=False))
        assert (refused["state"], refused["effectState"]) == ("failed", "none"), dump(refused)
        assert "INSTALL_FAILED_ALREADY_EXISTS" in refused["error"]["message"], dump(refused)

        op = await run_op(android, "lomi_android_open_url", guarded(android, "o1", url="https://example.com/a?b=1&c=$(x)"))
        assert op["state"] == "succeeded" and op["result"]["delivered"] is True, dump(op)
        assert "act=android.intent.action.VIEW dat=https://example.com/a?b=1&c=$(x)" in op["result"]["amOutput"], dump(op)
        await agent.error("lomi_android_open_url", guarded(android, "o2", url="no scheme"), "INVALID_ARGUMENT")


async def test_a_real_apk_from_aapt_installs_lists_launches_logs_stops_and_uninstalls(
    lomi, workspaces, mcp, adb, phones, tmp_path
):
    import zipfile

    project = tmp_path / "project-a"
    apk = real_apk(project, "org.lomi.real", 42, "4.2-real")
    with zipfile.ZipFile(apk) as opened:
        info = opened.getinfo("AndroidManifest.xml")
        manifest = opened.read(info)
    # Binary XML (RES_XML_TYPE), deflated: not the plain-text manifests other tests use.
    assert manifest[:4] == b"\x03\x00\x08\x00" and info.compress_type == zipfile.ZIP_DEFLATED, manifest[:16]
    # aapt's own reading is the independent check of what Lomi and the fixture read.
    expected = badging(apk)
    assert expected == ("org.lomi.real", 42, "4.2-real"), expected
    package = expected[0]
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        agent = android.agent
        op = await run_op(android, "lomi_android_install", guarded(android, "i1", path="app.apk"))
        assert (op["state"], op["effectState"]) == ("succeeded", "complete"), dump(op)
        result = op["result"]
        assert (result["package"], result["versionCode"], result["versionName"]) == expected, dump(op)
        assert result["sha256"] == hashlib.sha256(apk.read_bytes()).hexdigest(), dump(op)
        apps = await agent.ok("lomi_android_apps", {"panelId": android.panel})
        assert apps["apps"] == [{"package": package, "versionCode": 42}], dump(apps)
        cursor = (await agent.ok("lomi_android_logcat", {"panelId": android.panel}))["nextCursor"]
        op = await run_op(android, "lomi_android_launch", guarded(android, "l1", component=f"{package}/.Main"))
        assert op["state"] == "succeeded", dump(op)
        waited = await agent.ok("lomi_android_logcat", {
            "panelId": android.panel, "sinceCursor": cursor, "waitFor": f"{package} started .Main", "timeoutMs": 30_000,
        })
        assert waited["matched"] is True and waited["lines"][-1]["tag"] == "LomiFixtureApp", dump(waited)
        op = await run_op(android, "lomi_android_stop", guarded(android, "s1", package=package))
        assert op["state"] == "succeeded", dump(op)
        await agent.error("lomi_android_logcat", {"panelId": android.panel, "package": package}, "NOT_FOUND")
        op = await run_op(android, "lomi_android_uninstall", guarded(android, "u1", package=package))
        assert op["state"] == "succeeded", dump(op)
        assert (await agent.ok("lomi_android_apps", {"panelId": android.panel}))["apps"] == [], "uninstalled"

        # Debian's adb client installs the same APK on the fixture (its streamed install).
        said = adb.text("-s", phone.serial, "install", str(apk))
        assert "Success" in said, said
        listed = adb.text("-s", phone.serial, "shell", "pm", "list", "packages", "--show-versioncode", "-3")
        assert f"package:{package} versionCode:42" in listed, listed
        described = adb.text("-s", phone.serial, "shell", "dumpsys", "package", package)
        assert "versionName=4.2-real" in described, described
        assert "Success" in adb.text("-s", phone.serial, "uninstall", package)


async def test_push_pull_round_trip_and_paths_outside_the_project(lomi, workspaces, mcp, adb, phones, tmp_path):
    project = tmp_path / "project-a"
    data = os.urandom(300_000)
    (project / "data.bin").write_bytes(data)
    (tmp_path / "secret.txt").write_text("outside the project")
    os.symlink("../secret.txt", project / "link.txt")
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        agent = android.agent
        digest = hashlib.sha256(data).hexdigest()
        op = await run_op(android, "lomi_android_push", guarded(android, "p1", path="data.bin", devicePath="/sdcard/data.bin"))
        assert op["state"] == "succeeded", dump(op)
        assert (op["result"]["sha256"], op["result"]["bytes"]) == (digest, len(data)), dump(op)
        assert "exec:'sha256sum' '/sdcard/data.bin'" in phone.services, phone.services
        # Debian's adb client reads back the same bytes.
        pulled_by_adb = tmp_path / "by-adb.bin"
        adb.run("-s", phone.serial, "pull", "/sdcard/data.bin", str(pulled_by_adb))
        assert pulled_by_adb.read_bytes() == data

        op = await run_op(android, "lomi_android_pull", guarded(android, "q1", devicePath="/sdcard/data.bin", path="back.bin"))
        assert op["state"] == "succeeded", dump(op)
        assert (project / "back.bin").read_bytes() == data and op["result"]["sha256"] == digest, dump(op)
        # An existing file is replaced only with overwrite; that is checked before anything runs.
        await agent.error("lomi_android_pull", guarded(android, "q2", devicePath="/sdcard/data.bin", path="back.bin"),
                          "INVALID_ARGUMENT")
        op = await run_op(android, "lomi_android_pull",
                          guarded(android, "q3", devicePath="/data/local/tmp/none", path="none.bin"))
        assert (op["state"], op["effectState"], op["error"]["code"]) == ("failed", "none", "NOT_FOUND"), dump(op)
        assert not (project / "none.bin").exists()

        # Paths that lead outside the project are refused before any receipt or device command.
        services = len(phone.services)
        for n, escaping in enumerate(["../secret.txt", "/etc/passwd", "link.txt", "sub/../../secret.txt"]):
            refused = await agent.error(
                "lomi_android_push", guarded(android, f"x-{n}", path=escaping, devicePath="/sdcard/x"),
                "INVALID_ARGUMENT",
            )
            assert "outside" in refused["message"] or "does not exist" in refused["message"], dump(dict(refused))
            await agent.error(
                "lomi_android_pull", guarded(android, f"y-{n}", devicePath="/sdcard/data.bin", path=escaping),
                "INVALID_ARGUMENT",
            )
            await agent.error("lomi_android_install", guarded(android, f"z-{n}", path=escaping), "INVALID_ARGUMENT")
        assert len(phone.services) == services, phone.services[services:]
        assert (tmp_path / "secret.txt").read_text() == "outside the project"
        assert [o for o in lomi.cli("operation", "list") if o["requestKey"].startswith(("x-", "y-", "z-"))] == []
        # The device refuses a place the shell user cannot write: failed, in its words.
        op = await run_op(android, "lomi_android_push", guarded(android, "p2", path="data.bin", devicePath="/system/data.bin"))
        assert (op["state"], op["effectState"], op["error"]["code"]) == ("failed", "none", "INVALID_ARGUMENT"), dump(op)
        assert "Permission denied" in op["error"]["message"], dump(op)
        await agent.error("lomi_android_push", guarded(android, "p3", path="data.bin", devicePath="relative"), "INVALID_ARGUMENT")


async def test_rotation_set_and_read_back_and_the_screen_in_attach_and_snapshot(lomi, workspaces, mcp, adb, phones):
    phone = phones()
    adb.connect(phone.serial)
    async with android_agent(lomi, mcp, workspaces) as android:
        op = await android.attach_deciding(phone.serial, "approve")
        assert op["state"] == "succeeded", dump(op)
        result = op["result"]
        assert (result["screenWidth"], result["screenHeight"], result["screenDensity"]) == (*SCREEN, 320), dump(op)
        snap = await android.snapshot()
        assert (snap["screenWidth"], snap["screenHeight"], snap["screenDensity"]) == (*SCREEN, 320), dump(snap)
        agent = android.agent
        read = await agent.ok("lomi_android_orientation", {"panelId": android.panel})
        assert read == {"panelId": android.panel, "rotation": 0, "orientation": "portrait", "autoRotate": True}, dump(read)
        op = await run_op(android, "lomi_android_rotate", guarded(android, "r1", rotation=1))
        assert op["state"] == "succeeded", dump(op)
        assert (op["result"]["rotation"], op["result"]["orientation"], op["result"]["autoRotate"]) == (1, "landscape", False)
        read = await agent.ok("lomi_android_orientation", {"panelId": android.panel, "generation": android.generation})
        assert (read["rotation"], read["autoRotate"]) == (1, False), dump(read)
        # Debian's adb client sees the same setting.
        assert adb.text("-s", phone.serial, "shell", "settings", "get", "system", "user_rotation").strip() == "1"
        await agent.error("lomi_android_rotate", guarded(android, "r2", rotation=4), "INVALID_ARGUMENT")


async def test_taps_and_swipes_follow_the_rotation(lomi, workspaces, mcp, adb, phones):
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        agent = android.agent
        op = await run_op(android, "lomi_android_rotate", guarded(android, "r1", rotation=1))
        assert op["state"] == "succeeded", dump(op)
        snap = await android.snapshot()
        assert (snap["screenWidth"], snap["screenHeight"]) == (640, 360), dump(snap)
        # (600, 100) exists only in landscape: accepted and sent as given.
        accepted = await android.send(tap={"x": 600, "y": 100})
        assert accepted["dispatched"] == "input tap 600 100", dump(accepted)
        phone.wait_for_service("'input' 'tap' '600' '100'")
        await android.send(swipe={"fromX": 630, "fromY": 10, "toX": 20, "toY": 350})
        # Off the landscape screen: refused, saying which screen, without using a sequence.
        for action in ({"tap": {"x": 100, "y": 600}}, {"swipe": {"fromX": 0, "fromY": 0, "toX": 10, "toY": 360}}):
            refused = await agent.error("lomi_android_input", android.input_args(**action), "INVALID_ARGUMENT")
            assert "off the 640x360 screen (rotation 1, landscape)" in refused["message"], dump(refused)
        # Turned back by someone else, and read: Lomi checks against what it read.
        adb.run("-s", phone.serial, "shell", "settings", "put", "system", "user_rotation", "0")
        read = await agent.ok("lomi_android_orientation", {"panelId": android.panel})
        assert (read["rotation"], read["autoRotate"]) == (0, False), dump(read)
        refused = await agent.error("lomi_android_input", android.input_args(tap={"x": 600, "y": 100}), "INVALID_ARGUMENT")
        assert "off the 360x640 screen (rotation 0, portrait)" in refused["message"], dump(refused)
        await android.send(tap={"x": 100, "y": 600})
        assert android.seq == 3, "refused inputs used no sequence numbers"


async def test_a_device_unplugged_mid_install_settles_honestly(lomi, workspaces, mcp, adb, phones, tmp_path):
    tiny_apk(tmp_path / "project-a" / "demo.apk", "org.lomi.demo", 1, "1.0")
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        # The package manager takes its time; the device goes away while it works.
        adb.run("-s", phone.serial, "shell", "setprop", "lomi.fixture.install_ms", "3000")
        args = guarded(android, "i1", path="demo.apk")
        answers: dict[str, Any] = {}

        async def call() -> None:
            answers["call"] = await android.agent.ok("lomi_android_install", args)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await anyio.to_thread.run_sync(lambda: phone.wait_for_service("'pm' 'install'"))
            phone.kill()
        op = await android.agent.settle(answers["call"]["operationId"])
        # pm may or may not have finished: Lomi cannot say, and says so.
        assert (op["state"], op["effectState"]) == ("outcome_unknown", "unknown"), dump(op)
        assert op["error"]["code"] in ("RUNTIME_UNAVAILABLE", "OUTCOME_UNKNOWN"), dump(op)
        listing = await android.agent.ok("lomi_panel_list", {"workspaceId": android.ws})
        panel = next(p for p in listing["panels"] if p["panelId"] == android.panel)
        assert panel.get("generation") is None, dump(listing)
        # Later work on the panel is refused with what to do, and a retry is the same operation.
        await android.agent.error("lomi_android_apps", {"panelId": android.panel}, "GENERATION_MISMATCH")
        retry = await android.agent.ok("lomi_android_install", args)
        assert retry["operationId"] == op["operationId"] and retry["state"] == "outcome_unknown", dump(retry)
