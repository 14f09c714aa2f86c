"""The stdio bridge (`lomi mcp`) with a real Secret Service: pair once, relaunch and stay
paired (also across a broker restart), revoke and be refused. Runs inside the test command's
`dbus-run-session` with an unlocked GNOME Keyring (scripts/with-keyring)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

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
async def bridge(lomi: Lomi, transcript: Transcript, name: str = "bridge-e2e") -> AsyncIterator[Mcp]:
    params = StdioServerParameters(
        command=LOMI_BIN,
        args=["mcp", "--name", name, "--data-dir", str(lomi.data_dir)],
        env=dict(os.environ),
    )
    async with stdio_client(params) as (read, write):
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
