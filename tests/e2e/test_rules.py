"""The person's rules, "approve and remember", guarded terminal lines, pause and activity, end
to end: a real `lomi serve`, agents over the MCP Python SDK, the person's `lomi` commands, and
what really happened on disk and in the shell."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import WAIT_DEADLINE, dump
from test_android import adb, attached_phone, phones  # noqa: F401 (fixtures)
from test_terminal import create_terminal, live_processes

pytestmark = pytest.mark.anyio


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Writer:
    """An agent writing existing project files, each with a fresh request key."""

    def __init__(self, agent, ws: str, epoch: str, project: Path) -> None:
        self.agent, self.ws, self.epoch, self.project = agent, ws, epoch, project
        self.keys = 0

    async def write(self, path: str, text: str) -> dict[str, Any]:
        """Sends lomi_file_write; answers the operation as admitted (it may be waiting)."""
        self.keys += 1
        before = (self.project / path).read_bytes()
        return await self.agent.ok("lomi_file_write", {
            "workspaceId": self.ws, "path": path, "expectedDiskRevision": sha(before), "text": text,
            "retryEpoch": self.epoch, "requestKey": f"write-{self.keys}",
        })


def files(project: Path, tree: dict[str, str]) -> None:
    for path, text in tree.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)


def rule_named(rules: dict[str, Any], pattern: str) -> dict[str, Any]:
    found = [r for r in rules["rules"] if (r.get("subject") or {}).get("pattern") == pattern]
    assert len(found) == 1, dump(rules)
    return found[0]


async def test_an_allow_rule_for_a_folder_runs_writes_there_and_a_deny_beats_a_broader_allow(
    lomi, workspaces, mcp, tmp_path
):
    a, _ = workspaces
    ws = a["workspaceId"]
    project = tmp_path / "project-a"
    files(project, {"docs/guide.md": "old\n", "src/main.rs": "fn main() {}\n", "docs/secrets/key.txt": "k\n"})
    lomi.cli("confirm", "lomi_file_write", json_flag=False)
    lomi.cli("rule", "add", "allow", "lomi_file_write", "--path", "docs/**")
    created = lomi.create_token(ws)
    async with mcp.session(token=created["token"]) as agent:
        w = Writer(agent, ws, (await agent.connect(ws))["retryEpoch"], project)
        # In docs/: the rule lets it run without the person.
        docs = await agent.settle((await w.write("docs/guide.md", "new\n"))["operationId"])
        assert docs["state"] == "succeeded", dump(docs)
        assert (project / "docs/guide.md").read_text() == "new\n"
        allow = rule_named(lomi.cli("rule", "list"), "docs/**")
        shown = lomi.cli("operation", "show", docs["operationId"])
        assert shown["decidedBy"] == f"rule:{allow['ruleId']}", dump(shown)
        assert "awaiting_user" not in [s["state"] for s in shown["timeline"]], dump(shown)

        # Elsewhere: the tool's default (ask) still holds it for the person.
        src = await w.write("src/main.rs", "fn main() { evil() }\n")
        waiting = lomi.wait_operation(src["operationId"], "awaiting_user")
        assert waiting["decidedBy"] == "default", dump(waiting)
        lomi.cli("decide", src["operationId"], "deny")
        denied = await agent.settle(src["operationId"])
        assert (denied["state"], denied["error"]["code"]) == ("failed", "USER_DENIED"), dump(denied)
        assert (project / "src/main.rs").read_text() == "fn main() {}\n"
        assert lomi.cli("operation", "show", src["operationId"])["decidedBy"] == "person"

        # A deny for docs/secrets/** beats the broader allows (the docs rule and a family one).
        lomi.cli("rule", "add", "allow", "files")
        lomi.cli("rule", "add", "deny", "*", "--path", "docs/secrets/**")
        deny = rule_named(lomi.cli("rule", "list"), "docs/secrets/**")
        secret = await agent.settle((await w.write("docs/secrets/key.txt", "stolen\n"))["operationId"])
        assert (secret["state"], secret["error"]["code"]) == ("failed", "USER_DENIED"), dump(secret)
        assert deny["ruleId"] in secret["error"]["message"], dump(secret)
        assert (project / "docs/secrets/key.txt").read_text() == "k\n"
        # The person's test says the same, and why.
        tested = lomi.cli("rule", "test", "lomi_file_write", "--agent", created["pairingId"], "--workspace", ws,
                          "--path", "docs/secrets/key.txt")
        assert (tested["verdict"], tested["decidedBy"]) == ("deny", f"rule:{deny['ruleId']}"), dump(tested)
        assert "deny always wins" in tested["why"], dump(tested)
        # And src/ now runs by the family's allow.
        src = await agent.settle((await w.write("src/main.rs", "fn main() { ok() }\n"))["operationId"])
        assert src["state"] == "succeeded", dump(src)

        # Each rule's use is counted from the receipts.
        rules = lomi.cli("rule", "list")
        assert rule_named(rules, "docs/**")["operations"] == 1, dump(rules)
        assert rule_named(rules, "docs/secrets/**")["operations"] == 1, dump(rules)

        # Agents read the rules but cannot change them.
        got = await agent.ok("lomi_settings_get", {"section": "rules"})
        assert len(got["rules"]["rules"]) == 3, dump(got)
        refused = await agent.error("lomi_settings_update", {
            "section": "rules", "expectedSettingsRevision": got["rules"]["settingsRevision"], "values": {"paused": False},
            "retryEpoch": w.epoch, "requestKey": "settings-rules",
        }, "PERSON_ONLY")
        assert "person" in refused["message"], dump(refused)

    # A malformed pattern is refused with an example of a valid one, and nothing is kept.
    for bad in (["--path", "/etc/**"], ["--path", "docs/../x"], ["--command", " "]):
        message = lomi.cli_fails("rule", "add", "deny", "*", *bad)
        assert "e.g." in message, message
    # A pattern of a kind the tool never acts on could never match: refused, not kept.
    assert "does not act on" in lomi.cli_fails("rule", "add", "allow", "lomi_file_write", "--url", "https://x/*")
    assert len(lomi.cli("rule", "list")["rules"]) == 3


async def test_approve_and_remember_keeps_the_suggested_rule_and_the_next_call_runs(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    ws = a["workspaceId"]
    project = tmp_path / "project-a"
    files(project, {"notes/a.md": "a\n", "notes/b.md": "b\n", "other.md": "o\n"})
    lomi.cli("confirm", "lomi_file_write", json_flag=False)
    created = lomi.create_token(ws)
    async with mcp.session(token=created["token"]) as agent:
        w = Writer(agent, ws, (await agent.connect(ws))["retryEpoch"], project)
        first = await w.write("notes/a.md", "a2\n")
        lomi.wait_operation(first["operationId"], "awaiting_user")
        [waiting] = [d for d in lomi.cli("decisions") if d["operationId"] == first["operationId"]]
        suggested = waiting["suggestedRule"]
        assert suggested == {
            "agent": created["pairingId"], "workspace": ws, "tools": "lomi_file_write",
            "subject": {"kind": "paths", "pattern": "notes/**"}, "verdict": "allow",
        }, dump(waiting)

        decided = lomi.cli("decide", first["operationId"], "approve", "--remember")
        rule = decided["rule"]
        assert (rule["verdict"], rule["subject"]["pattern"]) == ("allow", "notes/**"), dump(decided)
        done = await agent.settle(first["operationId"])
        assert done["state"] == "succeeded" and (project / "notes/a.md").read_text() == "a2\n", dump(done)

        # The next write in notes/ runs without asking; one outside it still waits.
        second = await agent.settle((await w.write("notes/b.md", "b2\n"))["operationId"])
        assert second["state"] == "succeeded", dump(second)
        assert lomi.cli("operation", "show", second["operationId"])["decidedBy"] == f"rule:{rule['ruleId']}"
        outside = await w.write("other.md", "o2\n")
        lomi.wait_operation(outside["operationId"], "awaiting_user")

        # "Deny and always deny", narrowed by hand to this one file.
        decided = lomi.cli("decide", outside["operationId"], "deny", "--remember", "--pattern", "other.md")
        assert (decided["rule"]["verdict"], decided["rule"]["subject"]["pattern"]) == ("deny", "other.md")
        again = await agent.settle((await w.write("other.md", "o3\n"))["operationId"])
        assert again["error"]["code"] == "USER_DENIED" and decided["rule"]["ruleId"] in again["error"]["message"]
        assert (project / "other.md").read_text() == "o\n"


async def test_terminal_lines_a_deny_never_reaches_the_shell_and_an_ask_runs_once_after_approval(
    lomi, workspaces, mcp, tmp_path
):
    a, _ = workspaces
    ws = a["workspaceId"]
    project = tmp_path / "project-a"
    (project / "victim").mkdir()
    (project / "victim" / "keep.txt").write_text("keep\n")
    deny = lomi.cli("rule", "add", "deny", "lomi_terminal_input", "--command", "rm -rf *")
    deny_id = deny["rules"][0]["ruleId"]
    lomi.cli("rule", "add", "ask", "terminal", "--command", "echo ran*")
    created = lomi.create_token(ws)
    async with mcp.session(token=created["token"]) as agent:
        term = await create_terminal(agent, ws, "guarded")
        start = (await term.read())["outputCursor"]

        # A denied line, whole or typed in two parts, is refused before the PTY.
        term.seq += 1
        refused = await agent.error("lomi_terminal_input", term.input_args(term.seq, "rm -rf victim\r"), "USER_DENIED")
        assert refused["details"]["ruleId"] == deny_id, dump(refused)
        term.seq -= 1  # a refused input leaves its sequence unused
        await term.send("rm -rf ")
        term.seq += 1
        await agent.error("lomi_terminal_input", term.input_args(term.seq, "victim\r"), "USER_DENIED")
        term.seq -= 1
        # Ctrl-U drops the half-typed line in the shell and in Lomi's reading of it.
        await term.send(keys=["Ctrl-U"])
        read = await term.run("echo alive-$((40+2))", "alive-42")
        output = (await term.read(sinceCursor=start, maxBytes=512 * 1024))["output"]["text"]
        # The shell never saw "victim": only the allowed half of the line was echoed.
        assert "victim" not in output, output
        assert (project / "victim" / "keep.txt").exists()
        assert read["waited"] == "matched"

        # An asked line waits for the person: nothing of it is written until then.
        held = await term.send("echo ran >> ran.txt\r")
        op_id = held["heldOperation"]
        assert held["bytesWritten"] == 0 and op_id, dump(held)
        waiting = lomi.wait_operation(op_id, "awaiting_user")
        assert waiting["tool"] == "lomi_terminal_input", dump(waiting)
        [decision] = [d for d in lomi.cli("decisions") if d["operationId"] == op_id]
        assert decision["effect"]["command"] == "echo ran >> ran.txt", dump(decision)
        assert str(project) in decision["effect"]["on"], dump(decision)  # the terminal's folder
        assert not (project / "ran.txt").exists()
        # Later input waits behind it (input order keeps its meaning).
        busy = await agent.error("lomi_terminal_input", term.input_args(term.seq + 1, "echo later\r"), "RESOURCE_BUSY")
        assert op_id in busy["message"], dump(busy)
        # The same inputSequence again is the same held input, not a second one.
        again = await agent.ok("lomi_terminal_input", term.input_args(term.seq, "echo ran >> ran.txt\r"))
        assert again["duplicate"] is True and again["heldOperation"] == op_id, dump(again)

        lomi.cli("decide", op_id, "approve")
        done = await agent.settle(op_id)
        assert done["state"] == "succeeded", dump(done)
        await term.run("cat ran.txt; echo end-$((1+1))", "end-2")
        assert (project / "ran.txt").read_text() == "ran\n"
        # Input flows again after it.
        await term.run("echo after-$((2+3))", "after-5")
        assert (project / "ran.txt").read_text() == "ran\n"

        # The rules' counts include the lines they decided.
        rules = lomi.cli("rule", "list")
        assert rule_named(rules, "rm -rf *")["lines"] == 2, dump(rules)


async def test_pause_refuses_two_agents_cancels_a_running_operation_and_resume_restores(
    lomi, workspaces, mcp, tmp_path
):
    a, _ = workspaces
    ws = a["workspaceId"]
    one, two = lomi.create_token(ws, name="agent-one"), lomi.create_token(ws, name="agent-two")
    async with mcp.session(token=one["token"]) as first, mcp.session(token=two["token"]) as second:
        epoch_one = (await first.connect(ws))["retryEpoch"]
        epoch_two = (await second.connect(ws))["retryEpoch"]
        # A running operation: a terminal whose program has not spoken yet.
        sleep = f"sleep 60.{time.monotonic_ns() % 10**6:06d}"
        revision = (await first.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]
        started = await first.ok("lomi_terminal_create", {
            "workspaceId": ws, "cwdRelative": "", "title": "Quiet", "expectedRevision": revision,
            "argv": ["sh", "-c", f"{sleep}; echo late"], "retryEpoch": epoch_one, "requestKey": "quiet",
        })
        end = time.monotonic() + WAIT_DEADLINE
        while not live_processes(sleep):
            assert time.monotonic() < end, "the quiet program never started"
            await anyio.sleep(0.02)

        paused = lomi.cli("pause")
        assert paused["paused"] is True, dump(paused)
        cancelled = await first.settle(started["operationId"])
        assert cancelled["state"] == "cancelled", dump(cancelled)

        for agent, epoch, key in ((first, epoch_one, "r1"), (second, epoch_two, "r2")):
            revision = (await agent.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]
            refused = await agent.error("lomi_workspace_update", {
                "workspaceId": ws, "expectedRevision": revision, "retryEpoch": epoch, "requestKey": key,
                "change": {"rename": {"name": f"renamed {key}"}},
            }, "PAUSED")
            assert "resume" in refused["message"], dump(refused)
            status = await agent.ok("lomi_pairing_status")
            assert status["paused"] is True, dump(status)
            # Reads keep working.
            await agent.ok("lomi_workspace_list")

        lomi.cli("resume")
        revision = (await second.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]
        renamed = await second.settle((await second.ok("lomi_workspace_update", {
            "workspaceId": ws, "expectedRevision": revision, "retryEpoch": epoch_two, "requestKey": "r2",
            "change": {"rename": {"name": "renamed after resume"}},
        }))["operationId"])
        assert renamed["state"] == "succeeded", dump(renamed)
        assert (await second.ok("lomi_pairing_status"))["paused"] is False

        # One agent alone.
        lomi.cli("pause", "--agent", one["pairingId"])
        revision = (await first.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]
        await first.error("lomi_workspace_update", {
            "workspaceId": ws, "expectedRevision": revision, "retryEpoch": epoch_one, "requestKey": "r3",
            "change": {"rename": {"name": "no"}},
        }, "PAUSED")
        assert (await second.ok("lomi_pairing_status"))["paused"] is False
        lomi.cli("resume", "--agent", one["pairingId"])
        assert (await first.ok("lomi_pairing_status"))["paused"] is False


async def test_activity_figures_match_the_receipts(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    ws = a["workspaceId"]
    project = tmp_path / "project-a"
    files(project, {"a.md": "a\n", "b.md": "b\n", "c.md": "c\n"})
    lomi.cli("rule", "add", "deny", "lomi_file_write", "--path", "c.md")
    lomi.cli("confirm", "lomi_file_write", json_flag=False)
    created = lomi.create_token(ws, name="busy-agent")
    async with mcp.session(token=created["token"]) as agent:
        w = Writer(agent, ws, (await agent.connect(ws))["retryEpoch"], project)
        for path in ("a.md", "b.md"):
            op = await w.write(path, "x\n")
            lomi.wait_operation(op["operationId"], "awaiting_user")
            lomi.cli("decide", op["operationId"], "approve" if path == "a.md" else "deny")
            await agent.settle(op["operationId"])
        await agent.settle((await w.write("c.md", "x\n"))["operationId"])
        for _ in range(3):
            await agent.ok("lomi_file_read", {"workspaceId": ws, "path": "a.md"})
        await agent.error("lomi_file_read", {"workspaceId": ws, "path": "missing.md"}, "NOT_FOUND")

    # The only agent: every receipt is its.
    receipts = lomi.cli("operation", "list", "--limit", "500")
    view = lomi.cli("activity", "--agent", created["pairingId"])
    [agent_view] = view["agents"]
    shown = dump({"activity": agent_view, "receipts": receipts})
    assert agent_view["operations"] == len(receipts) == 3, shown
    by_state = {c["name"]: c["count"] for c in agent_view["operationsByState"]}
    assert by_state == {"succeeded": 1, "failed": 2}, shown
    denials = {c["name"]: c["count"] for c in agent_view["denials"]}
    deny_rule = lomi.cli("rule", "list")["rules"][0]["ruleId"]
    assert denials == {"person": 1, f"rule:{deny_rule}": 1}, shown
    tools = {t["tool"]: t for t in agent_view["tools"]}
    assert tools["lomi_file_write"]["operations"] == 3 and tools["lomi_file_write"]["calls"] == 3, shown
    assert tools["lomi_file_read"]["calls"] == 4 and tools["lomi_file_read"]["errors"] == 1, shown
    assert tools["lomi_file_read"]["p50Ms"] is not None and tools["lomi_file_read"]["p95Ms"] >= tools["lomi_file_read"]["p50Ms"]
    errors = {c["name"]: c["count"] for c in agent_view["errorsByCode"]}
    assert errors["USER_DENIED"] == 2 and errors["NOT_FOUND"] == 1, shown
    assert agent_view["lastSeen"] is not None and agent_view["clientName"] == "busy-agent", shown
    # The words say the same.
    text = lomi.run("activity", "--agent", created["pairingId"]).stdout
    assert "3 operations" in text and "busy-agent" in text, text


async def test_rules_decide_android_shell_commands(lomi, workspaces, mcp, adb, phones):  # noqa: F811
    """An Android shell command is an operation whose subject is its command line: an allow rule
    runs `getprop` without the person (the tool asks by default), a deny rule refuses `rm …`
    before anything reaches the device."""
    lomi.cli("rule", "add", "allow", "lomi_android_shell", "--command", "getprop*")
    deny = lomi.cli("rule", "add", "deny", "android", "--command", "rm *")
    deny_id = [r for r in deny["rules"] if r["subject"]["pattern"] == "rm *"][0]["ruleId"]
    async with attached_phone(lomi, mcp, workspaces, adb, phones) as (android, phone):
        base = {"panelId": android.panel, "leaseId": android.lease, "generation": android.generation,
                "retryEpoch": android.epoch}
        ran = await android.agent.settle((await android.agent.ok(
            "lomi_android_shell", {**base, "command": "getprop", "requestKey": "allowed"}))["operationId"])
        assert ran["state"] == "succeeded", dump(ran)
        assert lomi.cli("operation", "show", ran["operationId"])["decidedBy"].startswith("rule:")
        refused = await android.agent.settle((await android.agent.ok(
            "lomi_android_shell", {**base, "command": "rm -r /sdcard/Download", "requestKey": "denied"}))["operationId"])
        assert (refused["state"], refused["error"]["code"]) == ("failed", "USER_DENIED"), dump(refused)
        assert deny_id in refused["error"]["message"], dump(refused)
        assert not any("rm -r" in s for s in phone.services), phone.services
