"""The person manages workspaces and projects on the command line (as Settings does in the
window): a second project, its removal, the last project kept, a workspace with a panel kept,
and a removed workspace gone from the agent's view and grants."""

import pytest

from conftest import dump

pytestmark = pytest.mark.anyio


async def test_the_person_adds_and_removes_projects_and_workspaces(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    ws = a["workspaceId"]
    docs = tmp_path / "docs-project"
    docs.mkdir()
    pending = lomi.create_token(ws, name="workspace-agent")
    async with mcp.session(token=pending["token"]) as agent:

        added = lomi.cli("workspace", "add-project", ws, str(docs))
        project = added["project"]["projectId"]
        assert added["workspaceId"] == ws and added["project"]["root"] == str(docs), dump(added)
        listed = await agent.ok("lomi_workspace_list")
        roots = [p["root"] for w in listed["workspaces"] if w["workspaceId"] == ws for p in w["projects"]]
        assert str(docs) in roots and len(roots) == 2, dump(listed)
        # The same folder twice, or a folder that is not there: refused with a reason.
        assert "already" in lomi.cli_fails("workspace", "add-project", ws, str(docs)).lower()
        assert lomi.cli_fails("workspace", "add-project", ws, str(tmp_path / "missing"))

        removed = lomi.cli("workspace", "remove-project", ws, project)
        assert removed == {"workspaceId": ws, "projectId": project, "removed": True}, dump(removed)
        assert docs.is_dir(), "removing a project leaves its files alone"
        listed = await agent.ok("lomi_workspace_list")
        roots = [p["root"] for w in listed["workspaces"] if w["workspaceId"] == ws for p in w["projects"]]
        assert str(docs) not in roots and len(roots) == 1, dump(listed)
        # A workspace keeps at least one project.
        last = a["projects"][0]["projectId"]
        assert lomi.cli_fails("workspace", "remove-project", ws, last)

        # A workspace with a panel open is kept; once the panel is closed it can go.
        epoch = (await agent.connect(ws))["retryEpoch"]
        revision = (await agent.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]
        created = await agent.settle((await agent.ok("lomi_terminal_create", {
            "workspaceId": ws, "cwdRelative": "", "title": "shell", "expectedRevision": revision,
            "retryEpoch": epoch, "requestKey": "shell-1",
        }))["operationId"])
        assert created["state"] == "succeeded", dump(created)
        refusal = lomi.cli_fails("workspace", "remove", ws)
        assert "panel" in refusal.lower(), refusal
        closed = await agent.settle((await agent.ok("lomi_terminal_close", {
            "workspaceId": ws, "panelId": created["result"]["panelId"],
            "expectedRevision": created["result"]["domainRevision"],
            "retryEpoch": epoch, "requestKey": "close-1",
        }))["operationId"])
        assert closed["state"] == "succeeded", dump(closed)

        gone = lomi.cli("workspace", "remove", ws)
        assert gone == {"workspaceId": ws, "removed": True}, dump(gone)
        assert ws not in [w["workspaceId"] for w in lomi.cli("workspace", "list")]
        listed = await agent.ok("lomi_workspace_list")
        assert listed["workspaces"] == [], dump(listed)
        await agent.error("lomi_connect", {"workspaceId": ws}, "NOT_FOUND")
        assert ws not in lomi.pairing(pending["pairingId"])["grants"]
        # The text answers say what happened.
        again = lomi.run("workspace", "remove", ws)
        assert again.returncode != 0 and ws in again.stderr, again.stderr
