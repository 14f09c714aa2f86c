"""Terminal panels with real shells in real PTYs, through the MCP Python SDK: the seed's example
flow (create → operation_get → input → read), ordered and deduplicated input under leases, the
person's takeover through `lomi terminal attach` driven by a PTY, full-screen programs, interrupt,
close killing the whole session, a 50 MB flood, bad input, and a broker SIGKILL.

Everything that waits polls with a deadline (or uses the server-side `waitFor`); processes are
checked in /proc, where a zombie (state Z) counts as gone: PID 1 in a container may reap nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import shutil
import subprocess
import termios
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mcp_types
import pytest

from conftest import LOMI_BIN, WAIT_DEADLINE, Envelope, Mcp, Movement, dump

pytestmark = pytest.mark.anyio

PROC_DEADLINE = WAIT_DEADLINE
SCREEN_DEADLINE = WAIT_DEADLINE


# ---- /proc ----


def proc_stat(pid: int) -> dict[str, Any] | None:
    """state, pgrp, session and tpgid of a process (fields counted from the last `)`)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return {"state": fields[0], "pgrp": int(fields[2]), "session": int(fields[3]), "tpgid": int(fields[5])}


def alive(pid: int) -> bool:
    stat = proc_stat(pid)
    return stat is not None and stat["state"] not in ("Z", "X", "x")


def live_processes(fragment: str) -> dict[int, str]:
    """Live (not zombie) processes whose command line contains `fragment`: pid → cmdline."""
    found = {}
    own = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == own:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if fragment in cmdline and alive(int(entry)):
            found[int(entry)] = cmdline.strip()
    return found


def wait_until(predicate, what: str, deadline: float = PROC_DEADLINE):
    """Polls `predicate` (a function returning a truthy value when done) until `deadline` s."""
    end = time.monotonic() + deadline
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out after {deadline}s waiting for {what}")
        time.sleep(0.02)


async def await_until(predicate, what: str, deadline: float = PROC_DEADLINE):
    return await anyio.to_thread.run_sync(lambda: wait_until(predicate, what, deadline))


def foreground(fragment: str, session: int) -> int | None:
    """The pid of a live process of `session` running `fragment` in the terminal's foreground."""
    for pid, cmdline in live_processes(fragment).items():
        stat = proc_stat(pid)
        if cmdline == fragment and stat and stat["session"] == session and stat["pgrp"] == stat["tpgid"]:
            return pid
    return None


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


# ---- the agent's side ----


@contextlib.asynccontextmanager
async def agent_for(lomi, mcp, workspace_id: str, name: str = "terminal-agent") -> AsyncIterator[Mcp]:
    """An MCP session of a fresh token pairing granted `workspace_id`."""
    token = lomi.create_token(workspace_id, name=name)["token"]
    async with mcp.session(token=token, client_name=name) as agent:
        yield agent


async def call_long(agent: Mcp, tool: str, arguments: dict[str, Any], deadline: float) -> Envelope:
    """Like `agent.call`, with a longer deadline than the suite's per-call one."""
    with anyio.fail_after(deadline):
        result = await agent.session.call_tool(tool, arguments)
    assert isinstance(result, mcp_types.CallToolResult)
    agent.transcript.add(f"[{agent.label}] {tool} {json.dumps(arguments)}", "(long call)")
    envelope = Envelope(result.structured_content or {})
    envelope.raw = result
    return envelope


class Term:
    """One terminal panel as an agent holds it: its ids, its lease and the next inputSequence."""

    def __init__(self, agent: Mcp, workspace_id: str, epoch: str, created: dict[str, Any]) -> None:
        self.agent = agent
        self.workspace_id = workspace_id
        self.epoch = epoch
        self.panel = created["panelId"]
        self.generation = created["generation"]
        self.lease = created["leaseId"]
        self.pid = created["pid"]
        self.created = created
        self.seq = 0
        self.keys = 0

    def input_args(self, seq: int, text: str | None = None, keys: list[str] | None = None, **over) -> dict:
        args = {"panelId": self.panel, "leaseId": self.lease, "generation": self.generation, "inputSequence": str(seq)}
        if text is not None:
            args["text"] = text
        if keys is not None:
            args["keys"] = keys
        args.update(over)
        return args

    async def send(self, text: str | None = None, keys: list[str] | None = None) -> dict[str, Any]:
        self.seq += 1
        return await self.agent.ok("lomi_terminal_input", self.input_args(self.seq, text, keys))

    async def read(self, **args) -> dict[str, Any]:
        return await self.agent.ok("lomi_terminal_read", {"panelId": self.panel, **args})

    async def run(self, command: str, expect: str, timeout_ms: int = 60_000) -> dict[str, Any]:
        """Types `command` + Enter and waits (server side) for `expect` in the output after it."""
        sent = await self.send(command + "\r")
        read = await self.read(
            sinceCursor=sent["outputCursor"],
            maxBytes=512 * 1024,
            waitFor={"text": expect},
            timeoutMs=timeout_ms,
        )
        assert read["waited"] == "matched", f"{expect!r} never came after {command!r}\n{dump(read)}"
        return read

    async def screen_until(self, predicate, what: str) -> dict[str, Any]:
        """Reads the screen until `predicate(screen)` holds."""
        end = time.monotonic() + SCREEN_DEADLINE
        while True:
            screen = (await self.read())["screen"]
            if predicate(screen):
                return screen
            if time.monotonic() > end:
                pytest.fail(f"the screen never showed {what}:\n" + "\n".join(screen["lines"]))
            await anyio.sleep(0.05)

    async def interrupt(self) -> dict[str, Any]:
        self.keys += 1
        answer = await self.agent.ok(
            "lomi_terminal_interrupt",
            {
                "panelId": self.panel,
                "leaseId": self.lease,
                "generation": self.generation,
                "retryEpoch": self.epoch,
                "requestKey": f"interrupt-{self.panel}-{self.keys}",
            },
        )
        return await self.agent.settle(answer["operationId"])

    async def close(self) -> dict[str, Any]:
        revision = (await panels(self.agent, self.workspace_id))["domainRevision"]
        answer = await self.agent.ok(
            "lomi_terminal_close",
            {
                "workspaceId": self.workspace_id,
                "panelId": self.panel,
                "expectedRevision": revision,
                "retryEpoch": self.epoch,
                "requestKey": f"close-{self.panel}",
            },
        )
        return await self.agent.settle(answer["operationId"])


async def panels(agent: Mcp, workspace_id: str) -> dict[str, Any]:
    return await agent.ok("lomi_panel_list", {"workspaceId": workspace_id})


async def create_terminal(agent: Mcp, workspace_id: str, key: str, epoch: str | None = None, **extra) -> Term:
    if epoch is None:
        epoch = (await agent.connect(workspace_id))["retryEpoch"]
    revision = (await panels(agent, workspace_id))["domainRevision"]
    answer = await agent.ok(
        "lomi_terminal_create",
        {
            "workspaceId": workspace_id,
            "cwdRelative": "",
            "title": key,
            "expectedRevision": revision,
            "retryEpoch": epoch,
            "requestKey": key,
            **extra,
        },
    )
    op = await agent.settle(answer["operationId"])
    assert op["state"] == "succeeded", dump(op)
    return Term(agent, workspace_id, epoch, op["result"])


# ---- the person's side: `lomi terminal attach` in a PTY ----


class Attach:
    """`lomi terminal attach PANEL` with a PTY as its terminal; a thread collects what it shows."""

    def __init__(self, lomi, panel: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [LOMI_BIN, "--data-dir", str(lomi.data_dir), "terminal", "attach", panel],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self.shown = bytearray()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the attach process closed its side
                return
            if not chunk:
                return
            with self.lock:
                self.shown += chunk

    def text(self) -> str:
        with self.lock:
            return self.shown.decode(errors="replace")

    def raw_mode(self) -> bool:
        """The attach switched its terminal to raw mode (tcgetattr on a Linux master reads the
        slave's settings): keystrokes now go through one by one."""
        lflag = termios.tcgetattr(self.master)[3]
        return not lflag & (termios.ICANON | termios.ECHO)

    def ready(self) -> None:
        wait_until(lambda: "attached to" in self.text() and self.raw_mode(), f"attach to start:\n{self.text()}")

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=PROC_DEADLINE)
        self.reader.join(timeout=PROC_DEADLINE)
        with contextlib.suppress(OSError):
            os.close(self.master)


@pytest.fixture(autouse=True)
def stop_serve_cleanly(lomi):
    """After each test, a clean stop of serve (SIGTERM by pid) ends every terminal it still has,
    whole sessions included, even when the test failed before closing them; the `lomi` fixture's
    SIGKILL comes after."""
    yield
    if lomi.running:
        lomi.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            lomi.proc.wait(timeout=PROC_DEADLINE)


# ---- tests ----


async def test_seed_example_flow(lomi, workspaces, mcp):
    a, _ = workspaces
    async with agent_for(lomi, mcp, a["workspaceId"]) as agent:
        listing = await agent.ok("lomi_workspace_list")
        [workspace] = listing["workspaces"]
        connection = await agent.connect(workspace["workspaceId"])
        revision = workspace["domainRevision"]
        arguments = {
            "workspaceId": workspace["workspaceId"],
            "cwdRelative": "",
            "title": "Tests",
            "expectedRevision": revision,
            "retryEpoch": connection["retryEpoch"],
            "requestKey": "create-test-terminal-1",
        }
        answer = await agent.ok("lomi_terminal_create", arguments)
        operation_id = answer["operationId"]
        op = await agent.settle(operation_id)
        assert (op["state"], op["effectState"]) == ("succeeded", "complete"), dump(op)
        created = op["result"]
        assert set(created) >= {"panelId", "terminalSessionId", "generation", "leaseId", "domainRevision", "pid"}
        assert created["domainRevision"] == str(int(revision) + 1), dump(op)
        assert alive(created["pid"]), dump(op)
        term = Term(agent, workspace["workspaceId"], connection["retryEpoch"], created)

        read = await term.run("echo hello-$((6*7))", "hello-42")
        assert "hello-42" in read["output"]["text"], dump(read)
        screen = await term.screen_until(lambda s: "hello-42" in s["lines"], "hello-42 on a line of its own")
        assert screen["alternateScreen"] is False

        listed = await panels(agent, workspace["workspaceId"])
        assert listed["domainRevision"] == created["domainRevision"], dump(listed)
        [panel] = listed["panels"]
        assert panel["panelId"] == created["panelId"] and panel["kind"] == "terminal", dump(listed)
        assert panel["title"] == "Tests" and panel["generation"] == created["generation"], dump(listed)

        # The same request retried (same key, same arguments, same revision) is the same operation.
        again = await agent.ok("lomi_terminal_create", arguments)
        assert again["operationId"] == operation_id, dump(again)
        # (By key with the anchor projectId; without it, see the test below.)
        by_key = await agent.ok(
            "lomi_operation_get",
            {
                "retryEpoch": connection["retryEpoch"],
                "requestKey": "create-test-terminal-1",
                "tool": "lomi_terminal_create",
                "projectId": op["projectId"],
            },
        )
        assert by_key["operationId"] == operation_id and by_key["result"] == created, dump(by_key)
        listed = await panels(agent, workspace["workspaceId"])
        assert [p["panelId"] for p in listed["panels"]] == [created["panelId"]], dump(listed)
        assert alive(created["pid"])

        # The event feed carries operation metadata, never the terminal's bytes.
        page = await agent.ok("lomi_events_read", {"retryEpoch": connection["retryEpoch"]})
        assert "hello-42" not in json.dumps(page), dump(page)

        closed = await term.close()
        assert closed["state"] == "succeeded", dump(closed)


async def test_seed_key_lookup_without_project_id(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "create-test-terminal-1")
        try:
            by_key = await agent.ok(
                "lomi_operation_get",
                {"retryEpoch": term.epoch, "requestKey": "create-test-terminal-1", "tool": "lomi_terminal_create"},
            )
            assert by_key["result"]["panelId"] == term.panel, dump(by_key)
        finally:
            await term.close()


async def test_input_ordering_and_dedup(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "ordering")
        other = await create_terminal(agent, ws, "ordering-other", epoch=term.epoch)

        first = await agent.ok("lomi_terminal_input", term.input_args(1, "echo dup-$((1+1))\r"))
        assert first["duplicate"] is False and first["inputSequence"] == "1", dump(first)
        assert first["bytesWritten"] == len("echo dup-$((1+1))\r")
        start = first["outputCursor"]
        await term.read(sinceCursor=start, waitFor={"text": "dup-2"})

        # The same sequence with the same bytes: the earlier answer again, nothing typed.
        repeat = await agent.ok("lomi_terminal_input", term.input_args(1, "echo dup-$((1+1))\r"))
        assert repeat["duplicate"] is True, dump(repeat)
        assert {k: repeat[k] for k in ("inputSequence", "bytesWritten", "outputCursor")} == {
            k: first[k] for k in ("inputSequence", "bytesWritten", "outputCursor")
        }
        conflict = await agent.error("lomi_terminal_input", term.input_args(1, "echo other\r"), "SEQUENCE_CONFLICT")
        assert "2" in conflict["message"], dump(conflict)
        gap = await agent.error("lomi_terminal_input", term.input_args(3, "echo gap\r"), "SEQUENCE_GAP")
        assert gap.get("details", {}).get("nextInputSequence") == "2", dump(gap)

        # Generation: garbage, and another runtime's.
        for generation in ("g0000000000000000", other.generation):
            mismatch = await agent.error(
                "lomi_terminal_input", term.input_args(2, "echo x\r", generation=generation), "GENERATION_MISMATCH"
            )
            assert mismatch["details"]["currentGeneration"] == term.generation, dump(mismatch)

        # Leases: unknown, another panel's, released.
        unknown = "ls_" + "0" * 32
        await agent.error("lomi_terminal_input", term.input_args(2, "echo x\r", leaseId=unknown), "LEASE_REQUIRED")
        await agent.error(
            "lomi_terminal_input", term.input_args(2, "echo x\r", leaseId=other.lease), "LEASE_REQUIRED"
        )
        released = await agent.ok("lomi_lease_release", {"leaseId": other.lease})
        assert released == {"leaseId": other.lease, "released": True}, dump(released)
        await agent.error(
            "lomi_terminal_input", other.input_args(1, "echo y\r"), "LEASE_REQUIRED"
        )
        await agent.error("lomi_lease_release", {"leaseId": other.lease}, "LEASE_REQUIRED")

        # Sequence 2 goes through; nothing refused above was typed, and dup-2 came once.
        term.seq = 1
        done = await term.run("echo end-$((2+2))", "end-4")
        out = (await term.read(sinceCursor=start, maxBytes=512 * 1024))["output"]["text"]
        assert out.count("dup-2") == 1, out
        for refused in ("other", "gap", "echo x", "echo y"):
            assert refused not in out, f"{refused!r} reached the terminal:\n{out}"
        assert done["output"]["text"].count("end-4") == 1
        other_out = (await other.read(sinceCursor="0"))["output"]["text"]
        assert "echo y" not in other_out, other_out

        await term.close()
        await other.close()


async def test_two_clients_with_their_own_leases_keep_their_order(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    count = 20
    async with agent_for(lomi, mcp, ws, "client-a") as one, agent_for(lomi, mcp, ws, "client-b") as two:
        term = await create_terminal(one, ws, "shared")
        lease = await two.ok("lomi_lease_acquire", {"panelId": term.panel, "generation": term.generation})
        assert lease["lastInputSequence"] == "0" and lease["leaseId"] != term.lease, dump(lease)
        # The other client cannot use the creator's lease.
        await two.error("lomi_terminal_input", term.input_args(1, "echo no\r"), "LEASE_REQUIRED")
        start = (await term.read())["outputCursor"]

        async def client(agent: Mcp, lease_id: str, tag: str, base: int) -> None:
            for n in range(1, count + 1):
                await agent.ok(
                    "lomi_terminal_input",
                    {
                        "panelId": term.panel,
                        "leaseId": lease_id,
                        "generation": term.generation,
                        "inputSequence": str(n),
                        "text": f"echo {tag}-$(({base}+{n}))\r",
                    },
                )

        async with anyio.create_task_group() as tg:
            tg.start_soon(client, one, term.lease, "A", 1000)
            tg.start_soon(client, two, lease["leaseId"], "B", 2000)

        for last in (f"A-{1000 + count}", f"B-{2000 + count}"):
            read = await term.read(sinceCursor=start, waitFor={"text": last}, timeoutMs=60_000)
            assert read["waited"] == "matched", dump(read)
        out = (await term.read(sinceCursor=start, maxBytes=512 * 1024))["output"]["text"]
        seen = re.findall(r"\b([AB])-(\d{4})\b", out)
        a_seen = [int(n) for tag, n in seen if tag == "A"]
        b_seen = [int(n) for tag, n in seen if tag == "B"]
        assert a_seen == list(range(1001, 1001 + count)), (a_seen, out)
        assert b_seen == list(range(2001, 2001 + count)), (b_seen, out)
        await term.close()


async def test_person_takes_over_with_lomi_terminal_attach(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "takeover")
        await term.run("echo agent-$((1+2))", "agent-3")
        person = Attach(lomi, term.panel)
        try:
            await anyio.to_thread.run_sync(person.ready)
            # The attach replays recent output: the person sees what the agent did.
            await await_until(lambda: "agent-3" in person.text(), "the replayed agent output")

            cursor = (await term.read())["outputCursor"]
            person.type(b"echo person-typed-$((40+2))\r")
            read = await term.read(sinceCursor=cursor, waitFor={"text": "person-typed-42"})
            assert read["waited"] == "matched", dump(read)
            await await_until(lambda: "person-typed-42" in person.text(), "the person's own echo")

            expired = await agent.error("lomi_terminal_input", term.input_args(2, "echo late\r"), "LEASE_EXPIRED")
            assert "person took over" in expired["message"], dump(expired)
            await agent.error(
                "lomi_terminal_interrupt",
                {
                    "panelId": term.panel,
                    "leaseId": term.lease,
                    "generation": term.generation,
                    "retryEpoch": term.epoch,
                    "requestKey": "interrupt-after-takeover",
                },
                "LEASE_EXPIRED",
            )

            # A new lease works again, until the person types again.
            lease = await agent.ok("lomi_lease_acquire", {"panelId": term.panel, "generation": term.generation})
            term.lease, term.seq = lease["leaseId"], 0
            await term.run("echo again-$((3+4))", "again-7")
            await await_until(lambda: "again-7" in person.text(), "the agent's output at the person's view")

            cursor = (await term.read())["outputCursor"]
            person.type(b"echo second-$((5+5))\r")
            await term.read(sinceCursor=cursor, waitFor={"text": "second-10"})
            expired = await agent.error("lomi_terminal_input", term.input_args(2, "echo late\r"), "LEASE_EXPIRED")
            assert "person took over" in expired["message"], dump(expired)

            # Ctrl-] detaches: attach exits 0 and nothing reaches the shell.
            cursor = (await term.read())["outputCursor"]
            person.type(b"\x1d")
            code = await anyio.to_thread.run_sync(lambda: person.proc.wait(timeout=PROC_DEADLINE))
            assert code == 0, person.text()
            assert alive(term.pid)
            lease = await agent.ok("lomi_lease_acquire", {"panelId": term.panel, "generation": term.generation})
            term.lease, term.seq = lease["leaseId"], 0
            await term.run("echo after-$((9+9))", "after-18")
            everything = (await term.read(sinceCursor="0", maxBytes=512 * 1024))["output"]["text"]
            assert "late" not in everything, "an input refused with LEASE_EXPIRED reached the shell"
        finally:
            person.stop()
        await term.close()


async def test_full_screen_programs(lomi, workspaces, mcp, tmp_path):
    a, _ = workspaces
    ws = a["workspaceId"]
    project = tmp_path / "project-a"
    (project / "numbers.txt").write_text("".join(f"line {n:04d}\n" for n in range(1, 1001)))
    (project / "poem.txt").write_text("roses are red\nviolets are blue\n")
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "full-screen")
        await term.run("echo ready-$((1+1))", "ready-2")

        await term.send("less numbers.txt\r")
        screen = await term.screen_until(
            lambda s: s["alternateScreen"] and "line 0001" in s["lines"], "less on the alternate screen"
        )
        assert screen["lines"][:3] == ["line 0001", "line 0002", "line 0003"], dump(screen)
        assert "line 0030" not in screen["lines"], "a 24-row screen shows no more than 24 lines"
        await term.send(keys=["PageDown"])
        screen = await term.screen_until(lambda s: "line 0024" in s["lines"] and "line 0001" not in s["lines"], "page 2")
        await term.send("q")
        screen = await term.screen_until(lambda s: not s["alternateScreen"], "less gone")
        assert not any(line.startswith("line 00") for line in screen["lines"]), dump(screen)

        if shutil.which("vi"):
            await term.send("vi poem.txt\r")
            screen = await term.screen_until(
                lambda s: "roses are red" in s["lines"] and "violets are blue" in s["lines"], "vi showing the file"
            )
            assert screen["alternateScreen"] is True, dump(screen)
            assert screen["lines"].index("roses are red") == 0, dump(screen)
            assert any(line.startswith("~") for line in screen["lines"]), dump(screen)
            await term.send(keys=["Escape"])
            await term.send(":q!\r")
            await term.screen_until(lambda s: not s["alternateScreen"], "vi gone")
        await term.run("echo back-$((2+3))", "back-5")
        await term.close()


async def test_interrupt_sleep_and_a_process_group(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "interrupt")
        await term.send("sleep 1000\r")
        sleeper = await await_until(lambda: foreground("sleep 1000", term.pid), "sleep 1000 in the foreground")
        group = proc_stat(sleeper)["pgrp"]
        op = await term.interrupt()
        assert (op["state"], op["effectState"]) == ("succeeded", "complete"), dump(op)
        assert op["result"]["processGroup"] == group and op["result"]["signal"] == "SIGINT", dump(op)
        assert group != term.pid, "the job runs in its own group, not the shell's"
        await await_until(lambda: not alive(sleeper), "sleep 1000 to end")
        await term.run("echo shell-$((10+1))", "shell-11")
        assert alive(term.pid)

        await term.send("sh -c 'sleep 1001 | sleep 1002'\r")
        await await_until(
            lambda: foreground("sleep 1001", term.pid) and foreground("sleep 1002", term.pid), "the pipeline"
        )
        group = proc_stat(foreground("sleep 1001", term.pid))["pgrp"]
        op = await term.interrupt()
        assert op["state"] == "succeeded" and op["result"]["processGroup"] == group, dump(op)
        await await_until(
            lambda: not live_processes("sleep 1001") and not live_processes("sleep 1002"), "the whole group to end"
        )
        await term.run("echo shell-$((20+2))", "shell-22")
        assert alive(term.pid)
        await term.close()


async def test_close_kills_the_whole_session(lomi, workspaces, mcp):
    def mine() -> dict[int, str]:
        return {pid: c for pid, c in live_processes("sleep 200").items() if c in ("sleep 2001", "sleep 2002")}

    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "close")
        await term.run("sleep 2001 & sleep 2002 & echo started-$((1+1))", "started-2")
        # Exactly these two: any other program's `sleep 200…` on the machine is not the shell's.
        jobs = await await_until(lambda: len(mine()) == 2 and mine(), "both background sleeps")
        assert all(proc_stat(pid)["session"] == term.pid for pid in jobs), jobs
        before = (await panels(agent, ws))["domainRevision"]
        op = await term.close()
        assert (op["state"], op["effectState"]) == ("succeeded", "complete"), dump(op)
        # The close confirms every process is gone: no polling needed, but check /proc anyway.
        left = mine()
        assert not left, f"left alive after close: {left}"
        assert not alive(term.pid), proc_stat(term.pid)
        assert op["result"]["domainRevision"] == str(int(before) + 1), dump(op)
        listed = await panels(agent, ws)
        assert listed["panels"] == [] and listed["domainRevision"] == op["result"]["domainRevision"], dump(listed)
        await agent.error("lomi_terminal_read", {"panelId": term.panel}, "NOT_FOUND")
        await agent.error("lomi_terminal_input", term.input_args(2, "echo x\r"), "NOT_FOUND")


@pytest.mark.long
async def test_flood_keeps_memory_bounded(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    serve_pid = lomi.proc.pid
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "flood")
        await term.run("echo ready-$((1+1))", "ready-2")
        rss_before = rss_kib(serve_pid)
        sent = await term.send("head -c 50000000 /dev/zero | tr '\\0' a; echo flood-$((6*7))-done\r")
        # How long 50 MB takes depends on the machine: wait as long as the output moves.
        moves = Movement("the flood's last line", lomi.logs)
        while True:
            waited = await call_long(
                agent,
                "lomi_terminal_read",
                {
                    "panelId": term.panel,
                    "screen": False,
                    "sinceCursor": sent["outputCursor"],
                    "waitFor": {"text": "flood-42-done"},
                    "timeoutMs": 30_000,
                },
                deadline=90,
            )
            assert waited["status"] == "ok" and waited["data"]["waited"] in ("matched", "timed_out"), dump(waited)
            if waited["data"]["waited"] == "matched":
                break
            moves.seen(waited["data"]["outputCursor"], dump({**waited["data"], "output": None}))
        end = int(waited["data"]["outputCursor"])
        assert end - int(sent["outputCursor"]) >= 50_000_000, dump(waited["data"])

        page = await term.read(sinceCursor="0", maxBytes=65536)
        output = page["output"]
        assert output["truncatedBefore"] is True, dump({**page, "screen": None})
        assert len(output["text"]) <= 65536 and output["more"] is True
        assert int(output["startCursor"]) > 0
        # What is retained is bounded by the scrollback (4 MiB of raw output by default), not 50 MB.
        retained = int(page["outputCursor"]) - int(output["startCursor"])
        assert 0 < retained <= 4 * 1024 * 1024, (retained, output["startCursor"], page["outputCursor"])

        rss_after, peak = rss_kib(serve_pid), rss_kib(serve_pid, "VmHWM")
        assert rss_after < 200 * 1024, f"serve RSS {rss_after} KiB after the flood (before: {rss_before} KiB)"
        assert peak < 200 * 1024, f"serve peak RSS {peak} KiB during the flood"
        await term.run("echo alive-$((8*8))", "alive-64")
        screen = (await term.read())["screen"]
        assert "alive-64" in screen["lines"], dump(screen)
        await term.close()


async def test_bad_input(lomi, workspaces, mcp):
    a, b = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "bad-input")
        receipts = len(lomi.cli("operation", "list"))

        unknown = await agent.error(
            "lomi_terminal_input", term.input_args(1, keys=["Enter", "Hyper-Q"]), "INVALID_ARGUMENT"
        )
        assert "Hyper-Q" in unknown["message"], dump(unknown)
        too_long = "x" * (64 * 1024 + 1)
        await agent.error("lomi_terminal_input", term.input_args(1, too_long), "INVALID_ARGUMENT")
        await agent.error("lomi_terminal_input", term.input_args(1, "echo\r", keys=["Enter"]), "INVALID_ARGUMENT")
        await agent.error("lomi_terminal_input", term.input_args(1), "INVALID_ARGUMENT")
        await agent.error("lomi_terminal_input", term.input_args(0, "echo\r"), "INVALID_ARGUMENT")
        # None of those used up a sequence number: 1 is still the next.
        ok = await agent.ok("lomi_terminal_input", term.input_args(1, "x" * (64 * 1024 - 1) + "\x15"))
        assert ok["duplicate"] is False and ok["bytesWritten"] == 64 * 1024, dump(ok)
        term.seq = 1

        revision = (await panels(agent, ws))["domainRevision"]
        base = {"title": "Bad", "expectedRevision": revision, "retryEpoch": term.epoch}
        for n, cwd in enumerate(("../", "/etc", "a/../../x", "no-such-dir")):
            refused = await agent.error(
                "lomi_terminal_create",
                {**base, "workspaceId": ws, "cwdRelative": cwd, "requestKey": f"bad-cwd-{n}"},
                "INVALID_ARGUMENT",
            )
            assert "cwdRelative" in refused["message"], dump(refused)
        hidden = await agent.error(
            "lomi_terminal_create",
            {**base, "workspaceId": b["workspaceId"], "cwdRelative": "", "requestKey": "ungranted"},
            "NOT_FOUND",
        )
        assert b["name"] not in hidden["message"], dump(hidden)
        assert len(lomi.cli("operation", "list")) == receipts, "a refused create left a receipt"
        assert [p["panelId"] for p in (await panels(agent, ws))["panels"]] == [term.panel]

        await agent.error("lomi_terminal_read", {"panelId": "pn_" + "0" * 32}, "NOT_FOUND")
        await agent.error("lomi_lease_acquire", {"panelId": "pn_" + "0" * 32, "generation": "g1"}, "NOT_FOUND")
        two = await agent.error(
            "lomi_terminal_read", {"panelId": term.panel, "waitFor": {"text": "a", "idleMs": 100}}, "INVALID_ARGUMENT"
        )
        assert "exactly one" in two["message"], dump(two)
        await agent.error("lomi_terminal_read", {"panelId": term.panel, "waitFor": {}}, "INVALID_ARGUMENT")
        bad_regex = await agent.error(
            "lomi_terminal_read", {"panelId": term.panel, "waitFor": {"regex": "(unclosed"}}, "INVALID_ARGUMENT"
        )
        assert "regex" in bad_regex["message"], dump(bad_regex)
        await agent.error("lomi_terminal_read", {"panelId": term.panel, "maxBytes": 0}, "INVALID_ARGUMENT")
        await agent.error(
            "lomi_terminal_read", {"panelId": term.panel, "maxBytes": 512 * 1024 + 1}, "INVALID_ARGUMENT"
        )
        await agent.error("lomi_terminal_read", {"panelId": term.panel, "sinceCursor": "-1"}, "INVALID_ARGUMENT")
        await agent.error("lomi_terminal_read", {"panelId": term.panel, "timeoutMs": 60_001}, "INVALID_ARGUMENT")
        # A client granted only workspace B cannot see A's terminal at all.
        async with agent_for(lomi, mcp, b["workspaceId"], "other-workspace") as stranger:
            await stranger.error("lomi_terminal_read", {"panelId": term.panel}, "NOT_FOUND")
            await stranger.error(
                "lomi_lease_acquire", {"panelId": term.panel, "generation": term.generation}, "NOT_FOUND"
            )
            await stranger.error("lomi_terminal_input", term.input_args(2, "echo x\r"), "NOT_FOUND")
        await term.run("echo fine-$((3*3))", "fine-9")
        await term.close()


async def test_terminal_does_not_survive_a_broker_sigkill(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    token = lomi.create_token(ws, name="restart-agent")["token"]
    async with mcp.session(token=token) as agent:
        term = await create_terminal(agent, ws, "restart")
        await term.run("sleep 3001 & echo bg-$((1+1))", "bg-2")
        [job] = await await_until(lambda: list(live_processes("sleep 3001")), "the background sleep")
        # Two that outlive the shell's hangup: one ignores SIGHUP, one left the session.
        await term.run("nohup sleep 3003 >/dev/null 2>&1 & setsid -f sleep 3004; echo escaped-$((2+1))", "escaped-3")
        await await_until(lambda: live_processes("sleep 3003") and live_processes("sleep 3004"), "the escaping sleeps")
        await term.send("sleep 3002\r")
        fg = await await_until(lambda: foreground("sleep 3002", term.pid), "sleep 3002 in the foreground")

    lomi.restart("SIGKILL")
    # The PTY's master went with the broker: the kernel hangs up the terminal, the shell gets
    # SIGHUP and passes it on to its jobs. What ignored that or left the session carries the
    # terminal's marker, and the next start on this data ends it and says so.
    await await_until(lambda: not alive(term.pid), f"the shell {term.pid} to end after the broker's SIGKILL")
    await await_until(lambda: not alive(job) and not alive(fg), "the shell's jobs to end")
    await await_until(
        lambda: not live_processes("sleep 3003") and not live_processes("sleep 3004"),
        "the next start to end what the killed Lomi's terminal left running",
    )
    assert "process(es) that agents' terminals of an earlier Lomi on this data left running" in lomi.logs(), lomi.logs()

    async with mcp.session(token=token) as agent:
        connection = await agent.connect(ws)
        listed = await panels(agent, ws)
        assert listed["panels"] == [], dump(listed)
        assert listed["domainRevision"] == connection["domainRevision"]
        await agent.error("lomi_terminal_read", {"panelId": term.panel}, "NOT_FOUND")
        ops = {o["requestKey"]: o for o in lomi.cli("operation", "list")}
        assert ops["restart"]["state"] == "succeeded", dump(ops)


async def test_clean_stop_ends_every_terminal(lomi, workspaces, mcp):
    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "clean-stop")
        await term.run("nohup sleep 4001 >/dev/null 2>&1 & echo bg-$((1+1))", "bg-2")
        await term.send("sleep 4002\r")
        await await_until(lambda: foreground("sleep 4002", term.pid), "sleep 4002 in the foreground")
        job = list(live_processes("sleep 4001"))
        assert len(job) == 1, job
    assert lomi.stop() == 0, lomi.logs()
    # A clean stop closes each terminal like lomi_terminal_close: the whole session, even a job
    # that ignores SIGHUP, is gone by the time serve has exited.
    left = {**live_processes("sleep 4001"), **live_processes("sleep 4002")}
    assert not left and not alive(term.pid), f"left after a clean stop: {left}, shell alive: {alive(term.pid)}"


async def test_retries_find_their_receipts_after_the_effect(lomi, workspaces, mcp):
    """A lost reply is retried with the whole original request: the retry of a close finds the
    close even though the panel is gone, and the retry of an interrupt finds it after the lease
    ended."""
    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "retried")
        await term.send("sleep 3301\r")
        request = {
            "panelId": term.panel,
            "leaseId": term.lease,
            "generation": term.generation,
            "retryEpoch": term.epoch,
            "requestKey": "interrupt-once",
        }
        first = await agent.settle((await agent.ok("lomi_terminal_interrupt", request))["operationId"])
        assert first["state"] == "succeeded", dump(first)
        await agent.ok("lomi_lease_release", {"leaseId": term.lease})
        again = await agent.ok("lomi_terminal_interrupt", request)
        assert again["operationId"] == first["operationId"], dump(again)

        revision = (await panels(agent, ws))["domainRevision"]
        close = {
            "workspaceId": ws,
            "panelId": term.panel,
            "expectedRevision": revision,
            "retryEpoch": term.epoch,
            "requestKey": "close-once",
        }
        closed = await agent.settle((await agent.ok("lomi_terminal_close", close))["operationId"])
        assert closed["state"] == "succeeded", dump(closed)
        retried = await agent.ok("lomi_terminal_close", close)
        assert retried["operationId"] == closed["operationId"] and retried["state"] == "succeeded", dump(retried)
        conflicting = await agent.call("lomi_terminal_close", dict(close, expectedRevision=str(int(revision) + 1)))
        assert conflicting["code"] == "IDEMPOTENCY_CONFLICT", dump(conflicting)


async def test_an_agents_terminal_cannot_give_the_persons_commands(lomi, workspaces, mcp):
    """The local socket serves the person's commands to any process of the same user, except
    processes inside a terminal Lomi runs for an agent: an agent cannot approve its own work."""
    a, _ = workspaces
    ws = a["workspaceId"]
    async with agent_for(lomi, mcp, ws) as agent:
        term = await create_terminal(agent, ws, "no-self-approval")
        command = f"{LOMI_BIN} pairing list --data-dir {lomi.data_dir}; echo rc-$((40+2))=$?"
        await term.run(command, "rc-42=1")
        screen = await agent.ok("lomi_terminal_read", {"panelId": term.panel})
        shown = "".join(screen["screen"]["lines"])  # the message wraps at 80 columns
        assert "PAIRING_DENIED" in shown and "person's own terminal" in shown, dump(screen)
        await term.close()
    # The person, outside, still can.
    assert lomi.cli("pairing", "list")


async def test_a_create_retried_after_its_project_left_the_workspace_is_the_prior_operation(
    lomi, workspaces, mcp, tmp_path
):
    """A terminal create names its project; the terminal is closed and the person removes the
    project; the same create again answers its operation (never NOT_FOUND) and starts nothing."""
    a, _ = workspaces
    ws = a["workspaceId"]
    docs = tmp_path / "docs"
    docs.mkdir()
    project = lomi.cli("workspace", "add-project", ws, str(docs))["project"]["projectId"]
    token = lomi.create_token(ws)["token"]
    async with mcp.session(token=token) as agent:
        epoch = (await agent.connect(ws))["retryEpoch"]
        revision = (await agent.ok("lomi_panel_list", {"workspaceId": ws}))["domainRevision"]
        create = {
            "workspaceId": ws, "projectId": project, "cwdRelative": "", "title": "Docs",
            "expectedRevision": revision, "retryEpoch": epoch, "requestKey": "docs-shell",
        }
        op = await agent.settle((await agent.ok("lomi_terminal_create", create))["operationId"])
        assert op["state"] == "succeeded" and op["projectId"] == project, dump(op)
        created = op["result"]
        closed = await agent.ok("lomi_terminal_close", {
            "workspaceId": ws, "panelId": created["panelId"],
            "expectedRevision": created["domainRevision"], "retryEpoch": epoch, "requestKey": "docs-close",
        })
        assert (await agent.settle(closed["operationId"]))["state"] == "succeeded"
        lomi.cli("workspace", "remove-project", ws, project)
        again = await agent.ok("lomi_terminal_create", create)
        assert again["operationId"] == op["operationId"] and again["state"] == "succeeded", dump(again)
        listed = await agent.ok("lomi_panel_list", {"workspaceId": ws})
        assert listed["panels"] == [], dump(listed)
        # A new request for the removed project is refused before anything is recorded.
        await agent.error("lomi_terminal_create", dict(create, requestKey="after-removal"), "NOT_FOUND")
