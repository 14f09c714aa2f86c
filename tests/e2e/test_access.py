"""Deny and revoke cut access at once: on the same MCP session's very next call, and for a
token pairing on every later session (also after a restart)."""

import time

import anyio
import pytest

from conftest import WAIT_DEADLINE, dump, rename_args

pytestmark = pytest.mark.anyio


async def test_denied_pending_session_is_refused_on_next_call(lomi, workspaces, mcp):
    a, _ = workspaces
    lomi.allow_session_pairing()
    async with mcp.session() as agent:
        pending = await agent.ok("lomi_pairing_status")
        assert pending["state"] == "pending"
        await agent.error("lomi_workspace_list", {}, "PAIRING_REQUIRED")
        lomi.cli("pairing", "deny", pending["pairingId"])

        await agent.error("lomi_workspace_list", {}, "PAIRING_DENIED")
        await agent.error("lomi_connect", {"workspaceId": a["workspaceId"]}, "PAIRING_DENIED")
        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "denied" and status["grantedWorkspaces"] == [], dump(status)
        # A denied pairing cannot be approved afterwards by mistake.
        lomi.cli_fails("pairing", "approve", pending["pairingId"], "--workspace", a["workspaceId"])
        await agent.error("lomi_workspace_list", {}, "PAIRING_DENIED")


# The very next call after the revocation, whatever tool it is.
NEXT_CALLS = {
    "workspace_list": lambda c, op: ("lomi_workspace_list", {}),
    "panel_list": lambda c, op: ("lomi_panel_list", {"workspaceId": c["workspaceId"]}),
    "connect": lambda c, op: ("lomi_connect", {"workspaceId": c["workspaceId"]}),
    "workspace_update": lambda c, op: (
        "lomi_workspace_update",
        rename_args(c["workspaceId"], c["domainRevision"], c["retryEpoch"], "after-revoke", "Nope"),
    ),
    "operation_get": lambda c, op: ("lomi_operation_get", {"operationId": op}),
    "operation_cancel": lambda c, op: ("lomi_operation_cancel", {"operationId": op}),
    "events_read": lambda c, op: ("lomi_events_read", {"retryEpoch": c["retryEpoch"]}),
    "store_status": lambda c, op: ("lomi_store_status", {}),
    "settings_get": lambda c, op: ("lomi_settings_get", {}),
    "settings_update": lambda c, op: (
        "lomi_settings_update",
        {
            "section": "terminal",
            "expectedSettingsRevision": "1",
            "values": {"cols": 100},
            "retryEpoch": c["retryEpoch"],
            "requestKey": "after-revoke",
        },
    ),
}


@pytest.mark.parametrize("first_call", sorted(NEXT_CALLS))
async def test_revoked_session_is_refused_on_the_very_next_call(lomi, workspaces, mcp, first_call):
    a, _ = workspaces
    lomi.allow_session_pairing()
    async with mcp.session() as agent:
        pending = await agent.ok("lomi_pairing_status")
        lomi.cli("pairing", "approve", pending["pairingId"], "--workspace", a["workspaceId"])
        connection = await agent.connect(a["workspaceId"])
        done = await agent.ok(
            "lomi_workspace_update",
            rename_args(a["workspaceId"], connection["domainRevision"], connection["retryEpoch"], "k", "Before"),
        )
        await agent.settle(done["operationId"])

        revoked = lomi.cli("pairing", "revoke", pending["pairingId"])
        assert revoked["state"] == "revoked", dump(revoked)

        tool, arguments = NEXT_CALLS[first_call](connection, done["operationId"])
        refused = await agent.error(tool, arguments, "PAIRING_REVOKED")
        assert "Before" not in dump(refused), dump(refused)
        for other in sorted(NEXT_CALLS):
            tool, arguments = NEXT_CALLS[other](connection, done["operationId"])
            await agent.error(tool, arguments, "PAIRING_REVOKED")
        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "revoked" and status["grantedWorkspaces"] == [], dump(status)

    assert lomi.workspace(a["workspaceId"])["name"] == "Before"


async def test_revoked_token_is_refused_on_every_new_session(lomi, workspaces, mcp):
    a, _ = workspaces
    created = lomi.create_token(a["workspaceId"])
    async with mcp.session(token=created["token"]) as agent:
        await agent.connect(a["workspaceId"])
        lomi.cli("pairing", "revoke", created["pairingId"])
        await agent.error("lomi_workspace_list", {}, "PAIRING_REVOKED")

    async with mcp.session(token=created["token"]) as again:
        await again.error("lomi_workspace_list", {}, "PAIRING_REVOKED")
        await again.error("lomi_connect", {"workspaceId": a["workspaceId"]}, "PAIRING_REVOKED")
        status = await again.ok("lomi_pairing_status")
        assert status["state"] == "revoked" and status["pairingId"] == created["pairingId"], dump(status)

    # The revocation is durable: still refused after a restart.
    lomi.restart("SIGTERM")
    async with mcp.session(token=created["token"]) as after:
        await after.error("lomi_workspace_list", {}, "PAIRING_REVOKED")
    assert lomi.pairing(created["pairingId"])["state"] == "revoked"


async def test_session_pairing_ends_with_its_session(lomi, workspaces, mcp):
    a, _ = workspaces
    lomi.allow_session_pairing()
    async with mcp.session() as agent:
        pending = await agent.ok("lomi_pairing_status")
        lomi.cli("pairing", "approve", pending["pairingId"], "--workspace", a["workspaceId"])
        assert lomi.pairing(pending["pairingId"])["credential"] == "session"
    # The SDK ended the MCP session (HTTP DELETE): the session-bound pairing goes with it.
    deadline = time.monotonic() + WAIT_DEADLINE
    while any(p["pairingId"] == pending["pairingId"] for p in lomi.cli("pairing", "list")):
        assert time.monotonic() < deadline, dump(lomi.cli("pairing", "list"))
        await anyio.sleep(0.02)
    # A new session without a token is a new, pending pairing: approval is not inherited.
    async with mcp.session() as fresh:
        status = await fresh.ok("lomi_pairing_status")
        assert status["state"] == "pending" and status["pairingId"] != pending["pairingId"]
        await fresh.error("lomi_workspace_list", {}, "PAIRING_REQUIRED")
