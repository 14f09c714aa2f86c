"""The stdio bridge (`lomi mcp`) with a real Secret Service: pair once, relaunch and stay
paired (also across a broker restart), revoke and be refused. Runs inside the test command's
`dbus-run-session` with an unlocked GNOME Keyring (scripts/with-keyring)."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from conftest import LOMI_BIN, Lomi, Mcp, Transcript

pytestmark = pytest.mark.anyio

if not os.environ.get("DBUS_SESSION_BUS_ADDRESS") and os.environ.get("CI") != "true":
    pytest.skip(
        "needs a D-Bus session with a Secret Service; run through scripts/test", allow_module_level=True
    )


@contextlib.asynccontextmanager
async def bridge(
    lomi: Lomi,
    transcript: Transcript,
    name: str = "bridge-e2e",
    env: dict[str, str] | None = None,
    errlog: Any = None,
) -> AsyncIterator[Mcp]:
    params = StdioServerParameters(
        command=LOMI_BIN,
        args=["mcp", "--name", name, "--data-dir", str(lomi.data_dir)],
        env=dict(os.environ) if env is None else env,
    )
    async with stdio_client(params, **({"errlog": errlog} if errlog else {})) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield Mcp(session, transcript, f"stdio {name}")


async def test_a_bridge_pairs_once_and_stays_paired_until_revoked(
    lomi: Lomi, tmp_path: Path, transcript: Transcript
) -> None:
    workspace = lomi.add_workspace("Bridge", tmp_path / "bridge-project")["workspaceId"]

    async with bridge(lomi, transcript) as first:
        status = await first.ok("lomi_pairing_status")
        assert status["state"] == "pending", status
        await first.error("lomi_workspace_list", None, "PAIRING_REQUIRED")
        pairing = lomi.pairing(status["pairingId"])
        assert pairing["verificationCode"] == status["verificationCode"]
        assert pairing["credential"] == "token", "a bridge pairing must outlive its session"
        lomi.cli("pairing", "approve", status["pairingId"], "--workspace", workspace)
        listed = await first.ok("lomi_workspace_list")
        assert [w["workspaceId"] for w in listed["workspaces"]] == [workspace]

    # A relaunched bridge presents the same keyring secret: same pairing, no new approval.
    async with bridge(lomi, transcript) as second:
        again = await second.ok("lomi_pairing_status")
        assert again["pairingId"] == status["pairingId"] and again["state"] == "approved"
        await second.ok("lomi_workspace_list")
    assert len(lomi.cli("pairing", "list")) == 1

    # The pairing survives a broker restart; the secret stays in the keyring, not on disk.
    lomi.restart("SIGTERM")
    domain = (lomi.data_dir / "domain.json").read_text()
    async with bridge(lomi, transcript) as third:
        after = await third.ok("lomi_pairing_status")
        assert after["pairingId"] == status["pairingId"] and after["state"] == "approved"
        await third.ok("lomi_connect", {"workspaceId": workspace})
        # Revocation ends it at once, in the open session...
        lomi.cli("pairing", "revoke", status["pairingId"])
        await third.error("lomi_workspace_list", None, "PAIRING_REVOKED")
    # The keyring holds the secret; Lomi's files hold only its SHA-256.
    secret = subprocess.run(
        ["secret-tool", "lookup", "service", "dev.lomi.bridge", "username", str(lomi.data_dir)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert len(secret) == 64, "the bridge's secret is in the OS keyring"
    assert hashlib.sha256(secret.encode()).hexdigest() in domain
    for path in lomi.data_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"{path} holds the bridge secret"

    # ...and on every relaunch.
    async with bridge(lomi, transcript) as fourth:
        await fourth.error("lomi_workspace_list", None, "PAIRING_REVOKED")


def kernel_key(description: str) -> bytes | None:
    """The payload of a `user` key of this user's kernel keyring (keyctl search and read)."""
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = 250  # x86_64
    key = libc.syscall(keyctl, 10, ctypes.c_long(-4), b"user", description.encode(), 0)  # SEARCH @u
    if key < 0:
        return None
    buffer = ctypes.create_string_buffer(4096)
    size = libc.syscall(keyctl, 11, key, buffer, 4096)  # READ
    assert size >= 0, os.strerror(ctypes.get_errno())
    return buffer.raw[:size]


async def test_with_no_dbus_session_the_bridge_keeps_its_secret_in_the_kernel_keyring(
    lomi: Lomi, tmp_path: Path, transcript: Transcript
) -> None:
    """A server reached over SSH has no D-Bus session: the bridge still pairs, says once where
    its secret is and for how long, and a relaunch finds the same secret (never in a file)."""
    workspace = lomi.add_workspace("Headless", tmp_path / "headless-project")["workspaceId"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DBUS_")}
    stderr = tmp_path / "bridge.stderr"
    with stderr.open("w") as errlog:
        async with bridge(lomi, transcript, env=env, errlog=errlog) as first:
            status = await first.ok("lomi_pairing_status")
            assert status["state"] == "pending", status
            lomi.cli("pairing", "approve", status["pairingId"], "--workspace", workspace)
            await first.ok("lomi_workspace_list")
        async with bridge(lomi, transcript, env=env, errlog=errlog) as second:
            again = await second.ok("lomi_pairing_status")
            assert again["pairingId"] == status["pairingId"] and again["state"] == "approved", again
    said = stderr.read_text()
    transcript.add("bridge stderr", said)
    notes = [line for line in said.splitlines() if "kernel keyring" in line]
    assert len(notes) == 2, f"one note per launch, nothing repeated:\n{said}"
    assert "until the machine restarts" in notes[0] and notes[0] == notes[1], said
    secret = kernel_key(f"dev.lomi.bridge:{lomi.data_dir}")
    assert secret is not None and len(secret) == 64, "the secret is in the kernel keyring"
    domain = (lomi.data_dir / "domain.json").read_text()
    assert hashlib.sha256(secret).hexdigest() in domain and secret.decode() not in domain
    for path in lomi.data_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), f"the secret is in {path}"
