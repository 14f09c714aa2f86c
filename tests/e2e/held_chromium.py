"""A stand-in for Chromium that `lomi serve` starts as LOMI_CHROMIUM in the browser-launch
cancellation tests (test_engine.py), so that a launch is reliably still under way when it is
cancelled. It holds the launch at one point and writes `held` into its folder once it holds:

- `before-start`: before Chromium runs at all (it waits, then execs the real one);
- `connect` and `first-tab`: after Chromium is up, while Lomi connects to it, or while it
  prepares the browser's first tab. It runs the real Chromium as its child (in its process
  group, killed if this process dies) and says Chromium's DevTools address is a port of its
  own, which passes bytes both ways and stops passing Lomi's at its WebSocket handshake, or
  at the first command to a tab (`Emulation.setDeviceMetricsOverride`).

Only the standard library; run as `held_chromium.py MODE FOLDER -- CHROMIUM_ARGS…` (the test
writes a launcher with that command line, since Lomi runs LOMI_CHROMIUM with Chromium's
arguments only).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# Longer than any test waits: a stand-in nobody cancels goes on as plain Chromium.
HOLD_SECONDS = 30.0
FIRST_TAB_COMMAND = b'"Emulation.setDeviceMetricsOverride"'


def main() -> None:
    mode, folder, separator, *args = sys.argv[1:]
    assert separator == "--", sys.argv
    folder_path = Path(folder)
    if mode == "before-start":
        held_before_start(folder_path, args)
    elif mode in ("connect", "first-tab"):
        held_after_start(folder_path, args, mode)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


def held_before_start(folder: Path, args: list[str]) -> None:
    (folder / "held").write_text("before-start")
    time.sleep(HOLD_SECONDS)
    os.execv(CHROMIUM, [CHROMIUM, *args])


def die_with_parent() -> None:
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def held_after_start(folder: Path, args: list[str], mode: str) -> None:
    chromium = subprocess.Popen([CHROMIUM, *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                preexec_fn=die_with_parent)
    assert chromium.stderr is not None
    prefix = "DevTools listening on ws://"
    for raw in chromium.stderr:
        line = raw.decode(errors="replace")
        if line.startswith(prefix):
            address, path = line[len(prefix):].strip().split("/", 1)
            host, port = address.rsplit(":", 1)
            relay = Relay((host, int(port)), folder, mode)
            line = f"{prefix}127.0.0.1:{relay.port}/{path}\n"
        sys.stderr.write(line)
        sys.stderr.flush()
    sys.exit(chromium.wait())


class Relay:
    """Passes TCP connections on to Chromium's DevTools port; on Lomi's side it reads the
    WebSocket handshake and frames and holds everything from the point `mode` names on."""

    def __init__(self, target: tuple[str, int], folder: Path, mode: str) -> None:
        self.target = target
        self.folder = folder
        self.mode = mode
        self.holding = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            client, _ = self.listener.accept()
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self.pass_on, args=(upstream, client), daemon=True).start()
            threading.Thread(target=self.from_lomi, args=(client, upstream), daemon=True).start()

    def hold(self) -> None:
        self.holding.set()
        (self.folder / "held").write_text(self.mode)

    @staticmethod
    def pass_on(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def from_lomi(self, client: socket.socket, upstream: socket.socket) -> None:
        buffer = b""
        upgraded = False
        try:
            while data := client.recv(65536):
                buffer += data
                if not upgraded:
                    end = buffer.find(b"\r\n\r\n")
                    if end < 0:
                        continue
                    if self.mode == "connect":
                        self.hold()
                    if self.holding.is_set():
                        continue
                    upstream.sendall(buffer[: end + 4])
                    buffer, upgraded = buffer[end + 4 :], True
                while not self.holding.is_set() and (frame := whole_frame(buffer)) is not None:
                    size, payload = frame
                    if FIRST_TAB_COMMAND in payload:
                        self.hold()
                        break
                    upstream.sendall(buffer[:size])
                    buffer = buffer[size:]
        except OSError:
            pass
        finally:
            upstream.close()


def whole_frame(buffer: bytes) -> tuple[int, bytes] | None:
    """The size and unmasked payload of the first WebSocket frame in `buffer`, once all of it
    is there (RFC 6455 §5.2; a client's frames are masked)."""
    if len(buffer) < 2:
        return None
    length, at = buffer[1] & 0x7F, 2
    if length == 126:
        if len(buffer) < 4:
            return None
        length, at = int.from_bytes(buffer[2:4], "big"), 4
    elif length == 127:
        if len(buffer) < 10:
            return None
        length, at = int.from_bytes(buffer[2:10], "big"), 10
    mask = b""
    if buffer[1] & 0x80:
        mask, at = buffer[at : at + 4], at + 4
    if len(buffer) < at + length:
        return None
    payload = buffer[at : at + length]
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return at + length, payload


if __name__ == "__main__":
    main()
