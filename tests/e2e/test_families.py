"""Tool families: the person chooses which families of tools a pairing sees. `tools/list`
shows those and the session tools, a hidden tool answers as unknown, and the client is told
(`notifications/tools/list_changed`) when the person changes the choice."""

import anyio
import pytest
from mcp import types as mcp_types
from mcp.shared.exceptions import MCPError

from conftest import WAIT_DEADLINE, dump
from test_catalog import catalog

pytestmark = pytest.mark.anyio

SESSION_TOOLS = {
    "lomi_pairing_status",
    "lomi_workspace_list",
    "lomi_panel_list",
    "lomi_connect",
    "lomi_operation_get",
    "lomi_operation_cancel",
    "lomi_events_read",
    "lomi_store_status",
}


def names_with(prefix: str) -> set[str]:
    return {t["name"] for t in catalog()["tools"] if t["name"].startswith(prefix)}


class ListChanges:
    """Counts the tools/list_changed notifications a client receives."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def __call__(self, message) -> None:
        if isinstance(getattr(message, "root", message), mcp_types.ToolListChangedNotification):
            self.count += 1
            self.event.set()

    async def wait(self) -> None:
        with anyio.fail_after(WAIT_DEADLINE):
            await self.event.wait()
        self.event = anyio.Event()


async def listed(agent) -> set[str]:
    return {tool.name for tool in (await agent.session.list_tools()).tools}


async def test_a_pairing_sees_only_its_families_and_is_told_when_they_change(lomi, workspaces, mcp):
    a, _ = workspaces
    everything = {t["name"] for t in catalog()["tools"]}
    browser = names_with("lomi_browser_")
    changes = ListChanges()
    # A client without a token pairs for its session here (the person's choice).
    lomi.allow_session_pairing()
    async with mcp.session(message_handler=changes) as agent:
        # Before the person decides, the client is shown no tool at all.
        assert await listed(agent) == set()
        pending = await agent.ok("lomi_pairing_status")
        approved = lomi.cli(
            "pairing", "approve", pending["pairingId"], "--workspace", a["workspaceId"], "--family", "browser"
        )
        assert approved["families"] == ["browser"], dump(approved)
        await changes.wait()
        assert await listed(agent) == SESSION_TOOLS | browser

        connection = await agent.connect(a["workspaceId"])
        # A tool of another family is not there for this pairing: the same answer as a tool
        # Lomi does not have, and nothing starts.
        with pytest.raises(MCPError) as refused:
            await agent.session.call_tool(
                "lomi_terminal_create",
                {"workspaceId": a["workspaceId"], "retryEpoch": connection["retryEpoch"], "requestKey": "t1"},
            )
        assert "there is no tool" in str(refused.value), refused.value
        assert lomi.cli("operation", "list") == [], "a hidden tool recorded an operation"
        # A browser tool and the session tools still answer.
        await agent.ok("lomi_panel_list", {"workspaceId": a["workspaceId"]})

        shown = lomi.pairing(pending["pairingId"])
        assert shown["families"] == ["browser"], dump(shown)
        with pytest.raises(MCPError):  # settings belong to the workspace family
            await agent.session.call_tool("lomi_settings_get", {})

        # The person gives it every family: the client is told, and sees everything.
        lomi.cli("pairing", "families", pending["pairingId"], "--all")
        await changes.wait()
        assert await listed(agent) == everything
        pairings = (await agent.ok("lomi_settings_get", {"section": "pairings"}))["pairings"]["pairings"]
        mine = next(p for p in pairings if p["pairingId"] == pending["pairingId"])
        assert mine["allFamilies"] is True and mine["families"] == [], dump(mine)

        # … and then only files and Git.
        lomi.cli("pairing", "families", pending["pairingId"], "--family", "files", "--family", "git")
        await changes.wait()
        assert await listed(agent) == SESSION_TOOLS | names_with("lomi_file_") | names_with("lomi_dir_") | names_with(
            "lomi_git_"
        )
        assert changes.count == 3


async def test_a_token_created_for_one_family_lists_only_it(lomi, workspaces, mcp):
    a, _ = workspaces
    created = lomi.cli(
        "pairing", "create", "--name", "files-only", "--workspace", a["workspaceId"], "--family", "files"
    )
    async with mcp.session(token=created["token"]) as agent:
        assert await listed(agent) == SESSION_TOOLS | names_with("lomi_file_") | names_with("lomi_dir_")
    text = lomi.run("pairing", "list").stdout
    assert "tools: files" in text, text


def test_an_unknown_family_is_refused_with_the_list(lomi, workspaces):
    a, _ = workspaces
    error = lomi.cli_fails("pairing", "create", "--name", "x", "--workspace", a["workspaceId"], "--family", "shell")
    assert "no tool family" in error and "browser" in error, error
