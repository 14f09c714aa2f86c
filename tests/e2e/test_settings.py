"""Settings through the MCP Python SDK against a real `lomi serve`: sections compared and
swapped by their own settingsRevision, retries answered by the same operation, person-only
sections refused to agents, a provider key the person stores (in the real OS keyring: run under
`dbus-run-session -- scripts/with-keyring`) never shown, the person's CLI change moving the
revision the agent then sees, and settings changing real behaviour: a new terminal's size
(`stty size`), a new text file's line endings, a new browser's viewport.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import LOMI_BIN, dump
from test_terminal import agent_for, create_terminal

pytestmark = pytest.mark.anyio

SECRET = "sk-lomi-e2e-never-shown-4242"


def update_args(section: str, revision: str, epoch: str, key: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "section": section,
        "expectedSettingsRevision": revision,
        "values": values,
        "retryEpoch": epoch,
        "requestKey": key,
    }


async def test_settings_compare_and_swap_per_section(lomi, workspaces, mcp):
    a, _ = workspaces
    async with agent_for(lomi, mcp, a["workspaceId"], name="settings-agent") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        every = await agent.ok("lomi_settings_get", {})
        assert set(every) == {
            "terminal", "browser", "editor", "chat", "providers", "pairings", "confirmations", "rules", "network",
        }, dump(every)
        terminal = (await agent.ok("lomi_settings_get", {"section": "terminal"}))["terminal"]
        revision = terminal["settingsRevision"]
        browser_revision = every["browser"]["settingsRevision"]

        # The right revision: succeeded, and the revision moved.
        args = update_args("terminal", revision, epoch, "cols-1", {"cols": 100, "rows": 30})
        answer = await agent.ok("lomi_settings_update", args)
        op = await agent.settle(answer["operationId"])
        assert op["state"] == "succeeded", dump(op)
        moved = op["result"]["settingsRevision"]
        assert int(moved) == int(revision) + 1, dump(op)
        assert op["result"]["values"]["cols"] == 100
        now = await agent.ok("lomi_settings_get", {})
        assert now["terminal"]["settingsRevision"] == moved
        assert now["browser"]["settingsRevision"] == browser_revision, "another section moved"

        # The same request again is the same operation.
        again = await agent.ok("lomi_settings_update", args)
        assert again["operationId"] == answer["operationId"]
        # Other arguments under the same key: IDEMPOTENCY_CONFLICT.
        changed = update_args("terminal", revision, epoch, "cols-1", {"cols": 101})
        await agent.error("lomi_settings_update", changed, "IDEMPOTENCY_CONFLICT")

        # A stale revision: REVISION_MISMATCH with the current one.
        stale = await agent.error(
            "lomi_settings_update",
            update_args("terminal", revision, epoch, "cols-2", {"cols": 120}),
            "REVISION_MISMATCH",
        )
        assert stale["details"]["currentRevision"] == moved, dump(stale)
        assert stale["details"]["section"] == "terminal"

        # Bad input says what to fix, never INTERNAL.
        for values, words in [
            ({"cols": 5}, "terminal.cols must be 20 to 500"),
            ({"cols": "wide"}, "terminal.cols"),
            ({"colour": 1}, "has no field"),
            ({}, "1 to 16 fields"),
        ]:
            bad = await agent.error(
                "lomi_settings_update",
                update_args("terminal", moved, epoch, f"bad-{len(words)}", values),
                "INVALID_ARGUMENT",
            )
            assert words in bad["message"], dump(bad)
        await agent.error("lomi_settings_get", {"section": "secrets"}, "INVALID_ARGUMENT")
        await agent.error("lomi_settings_update", {**args, "extra": 1}, "INVALID_ARGUMENT")


async def test_agents_cannot_change_person_only_sections(lomi, workspaces, mcp):
    a, b = workspaces
    async with agent_for(lomi, mcp, a["workspaceId"], name="greedy-agent") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        every = await agent.ok("lomi_settings_get", {})
        # Agents read their own pairing only.
        pairings = every["pairings"]["pairings"]
        assert len(pairings) == 1 and pairings[0]["clientName"] == "greedy-agent", dump(pairings)
        assert pairings[0]["grants"] == [a["workspaceId"]]
        attempts = [
            ("pairings", {"grants": [a["workspaceId"], b["workspaceId"]]}),
            ("confirmations", {"lomi_file_delete": False}),
            ("rules", {"paused": False}),
            ("providers", {"evil": {"kind": "openai_compatible", "baseUrl": "http://attacker.example/v1"}}),
            ("network", {"mcpUrl": "http://0.0.0.0:1/mcp"}),
            ("browser", {"persistentProfileDefault": True}),
        ]
        for i, (section, values) in enumerate(attempts):
            refused = await agent.error(
                "lomi_settings_update",
                update_args(section, every[section]["settingsRevision"], epoch, f"widen-{i}", values),
                "PERSON_ONLY",
            )
            assert "person" in refused["message"], dump(refused)
        # The section that holds grants does not exist under another name either.
        await agent.error(
            "lomi_settings_update",
            update_args("grants", "1", epoch, "widen-9", {"x": 1}),
            "INVALID_ARGUMENT",
        )
        after = await agent.ok("lomi_settings_get", {})
        assert after["pairings"] == every["pairings"]
        assert after["confirmations"] == every["confirmations"]
        assert "lomi_file_delete" in after["confirmations"]["confirmTools"]
        # The agent still reaches only workspace A.
        listed = await agent.ok("lomi_workspace_list", {})
        assert [w["workspaceId"] for w in listed["workspaces"]] == [a["workspaceId"]]


def provider_key(lomi, name: str, key: str | None) -> subprocess.CompletedProcess[str]:
    args = [LOMI_BIN, "--data-dir", str(lomi.data_dir), "settings", "provider-key", name, "--json"]
    if key is None:
        args.append("--remove")
    done = subprocess.run(args, input=(key or "") + "\n", capture_output=True, text=True, timeout=30)
    lomi.transcript.add(f"$ lomi settings provider-key {name}", f"exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


async def test_a_provider_key_is_never_returned_and_the_persons_change_moves_the_revision(lomi, workspaces, mcp):
    a, _ = workspaces
    provider = json.dumps({"kind": "openai_compatible", "baseUrl": "http://127.0.0.1:11434/v1", "models": ["llama3"]})
    added = lomi.cli("settings", "set", "providers", "local", provider)
    assert added["values"]["providers"][0]["keyStored"] is False, dump(added)
    done = provider_key(lomi, "local", SECRET)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    stored = json.loads(done.stdout)
    assert stored["values"]["providers"][0]["keyStored"] is True, dump(stored)
    assert SECRET not in (lomi.data_dir / "domain.json").read_text()
    person = lomi.cli("settings", "get")
    assert SECRET not in json.dumps(person)

    async with agent_for(lomi, mcp, a["workspaceId"], name="reading-agent") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        seen = await agent.ok("lomi_settings_get", {})
        assert SECRET not in json.dumps(seen)
        assert seen["providers"]["providers"] == [
            {"name": "local", "kind": "openai_compatible", "baseUrl": "http://127.0.0.1:11434/v1",
             "models": ["llama3"], "keyStored": True}
        ], dump(seen["providers"])
        # The agent may point chat at the person's provider, and that too never shows the key.
        chat = seen["chat"]["settingsRevision"]
        # A provider the person has not configured: the operation fails and says so.
        unknown = await agent.ok(
            "lomi_settings_update",
            update_args("chat", chat, epoch, "chat-0", {"defaultProvider": "nobody"}),
        )
        failed = await agent.settle(unknown["operationId"])
        assert failed["state"] == "failed" and failed["effectState"] == "none", dump(failed)
        assert failed["error"]["code"] == "INVALID_ARGUMENT" and "not among the providers" in failed["error"]["message"]
        answer = await agent.ok(
            "lomi_settings_update",
            update_args("chat", chat, epoch, "chat-1", {"defaultProvider": "local", "defaultModel": "llama3"}),
        )
        op = await agent.settle(answer["operationId"])
        assert op["state"] == "succeeded", dump(op)
        assert SECRET not in json.dumps(op)

        # The person's CLI change moves the revision the agent then sees; the agent's old one
        # is stale.
        editor = seen["editor"]["settingsRevision"]
        changed = lomi.cli("settings", "set", "editor", "tabWidth", "2")
        assert int(changed["settingsRevision"]) == int(editor) + 1
        fresh = await agent.ok("lomi_settings_get", {"section": "editor"})
        assert fresh["editor"]["settingsRevision"] == changed["settingsRevision"]
        assert fresh["editor"]["tabWidth"] == 2
        stale = await agent.error(
            "lomi_settings_update",
            update_args("editor", editor, epoch, "editor-1", {"tabWidth": 8}),
            "REVISION_MISMATCH",
        )
        assert stale["details"]["currentRevision"] == changed["settingsRevision"]

    # Removing the key: keyStored false again.
    removed = provider_key(lomi, "local", None)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["values"]["providers"][0]["keyStored"] is False
    # The person's CLI is refused bad values too, with the reason.
    assert "terminal.cols must be 20 to 500" in lomi.cli_fails("settings", "set", "terminal", "cols", "3")


async def test_terminal_settings_shape_a_new_terminal_and_survive_a_restart(lomi, workspaces, mcp):
    a, _ = workspaces
    changed = lomi.cli("settings", "set", "terminal", "cols", "101")
    lomi.cli("settings", "set", "terminal", "rows", "33")
    async with agent_for(lomi, mcp, a["workspaceId"], name="size-agent") as agent:
        term = await create_terminal(agent, a["workspaceId"], "sized")
        read = await term.run("stty size", "33 101")
        assert "33 101" in json.dumps(read), dump(read)
        screen = (await term.read())["screen"]
        assert (screen["rows"], screen["cols"]) == (33, 101), dump(screen)
        await term.close()
    lomi.restart("SIGTERM")
    after = lomi.cli("settings", "get", "terminal")
    assert after["terminal"]["cols"] == 101 and after["terminal"]["rows"] == 33
    assert int(after["terminal"]["settingsRevision"]) == int(changed["settingsRevision"]) + 1


async def test_editor_line_endings_shape_a_new_text_file(lomi, workspaces, mcp):
    a, _ = workspaces
    root = Path(a["projects"][0]["root"])
    async with agent_for(lomi, mcp, a["workspaceId"], name="files-agent") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]

        async def create(path: str, key: str) -> None:
            answer = await agent.ok("lomi_file_create", {
                "workspaceId": a["workspaceId"], "path": path, "text": "one\ntwo\r\n", "retryEpoch": epoch, "requestKey": key,
            })
            op = await agent.settle(answer["operationId"])
            assert op["state"] == "succeeded", dump(op)

        await create("before.txt", "f1")
        assert (root / "before.txt").read_bytes() == b"one\ntwo\r\n"
        editor = (await agent.ok("lomi_settings_get", {"section": "editor"}))["editor"]
        answer = await agent.ok(
            "lomi_settings_update",
            update_args("editor", editor["settingsRevision"], epoch, "crlf", {"lineEndings": "crlf"}),
        )
        assert (await agent.settle(answer["operationId"]))["state"] == "succeeded"
        await create("after.txt", "f2")
        assert (root / "after.txt").read_bytes() == b"one\r\ntwo\r\n"


async def test_browser_viewport_setting_sizes_a_new_browser(lomi, workspaces, mcp):
    from test_browser import agent_for as browser_agent_for

    a, _ = workspaces
    lomi.cli("settings", "set", "browser", "viewport", '{"width": 800, "height": 600}')
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as session:
        agent = await browser_agent_for(lomi, workspaces, session)
        await agent.create()
        try:
            shot = await session.ok("lomi_browser_capture", {"panelId": agent.panel})
            assert (shot["width"], shot["height"]) == (800, 600), dump(shot)
        finally:
            await agent.close()


async def test_an_agents_change_waits_for_the_person_when_policy_says_so(lomi, workspaces, mcp):
    a, _ = workspaces
    before = lomi.cli("settings", "get", "confirmations")["confirmations"]["settingsRevision"]
    assert lomi.run("confirm", "lomi_settings_update").returncode == 0
    after = lomi.cli("settings", "get", "confirmations")["confirmations"]
    assert "lomi_settings_update" in after["confirmTools"]
    assert int(after["settingsRevision"]) == int(before) + 1
    async with agent_for(lomi, mcp, a["workspaceId"], name="asking-agent") as agent:
        epoch = (await agent.connect(a["workspaceId"]))["retryEpoch"]
        chat = (await agent.ok("lomi_settings_get", {"section": "chat"}))["chat"]
        answer = await agent.ok(
            "lomi_settings_update",
            update_args("chat", chat["settingsRevision"], epoch, "ask-1", {"systemPrompt": "Answer in French."}),
        )
        lomi.wait_operation(answer["operationId"], "awaiting_user")
        unchanged = (await agent.ok("lomi_settings_get", {"section": "chat"}))["chat"]
        assert unchanged == chat, "nothing changes before the person decides"
        lomi.cli("decide", answer["operationId"], "approve")
        op = await agent.settle(answer["operationId"])
        assert op["state"] == "succeeded", dump(op)
        assert (await agent.ok("lomi_settings_get", {"section": "chat"}))["chat"]["systemPrompt"] == "Answer in French."
