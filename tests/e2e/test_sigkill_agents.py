"""SIGKILL with many agents in flight: eight MCP clients, two each on terminals, project files,
Git and browsers, mutate in their own workspaces with their own retry epochs and request keys,
and `lomi serve` is SIGKILLed at a random moment (seeded; the seed is printed), then started
again on the same data dir. After every restart:

- no receipt is lost: every request whose reservation was answered has its receipt, under the
  operationId the agent was given, and no request key has two;
- nothing is replayed: each real effect (a line a shell appended, a file, a commit, a request
  the page server saw) happened at most once, a `succeeded` receipt's effect is there, a receipt
  with effect `none` has none, a retry under the old epoch is refused, and no effect of an
  earlier round appears later;
- every receipt that was not settled before the kill reads `outcome_unknown` (effect
  `unknown`); one the agent saw settled keeps its state; none is `queued` or `running`;
- the store passes `PRAGMA integrity_check`;
- no shell, Chromium or Git process of the killed serve is left running.

20 rounds by default (`LOMI_CRASH_ROUNDS` sets another number, `LOMI_CRASH_SEED` replays a
seed); the soak suite (`scripts/soak`, LOMI_SOAK_TESTS=1) runs 200. Between rounds the person
frees room with `lomi store reconcile --retire idle`, so long runs stay under the receipt cap;
at the end every receipt an agent was given is found, live or in the history.
"""

from __future__ import annotations

import collections
import datetime
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import SETTLED, WAIT_DEADLINE, Lomi, Mcp, dump
from test_browser import Site, ref
from test_git import git, make_repository
from test_terminal import Term, wait_until

pytestmark = pytest.mark.anyio

# 20 rounds in the slow suite (CI), 200 in the soak suite, 3 in a quick local run.
ROUNDS = int(
    os.environ.get("LOMI_CRASH_ROUNDS")
    or (200 if os.environ.get("LOMI_SOAK_TESTS") == "1" else 20 if os.environ.get("LOMI_SLOW_TESTS") == "1" else 3)
)
KINDS = ("terminal", "files", "git", "browser")
CLIENTS = 8
# When the kill comes: in a quarter of the rounds this long (seconds) after the clients start,
# while they connect and start shells and Chromium; otherwise this long after every client's
# runtime is up, while they mutate.
KILL_EARLY = (0.02, 2.0)
KILL_LATE = (0.02, 1.0)
READY_DEADLINE = WAIT_DEADLINE
LEFTOVER_DEADLINE = WAIT_DEADLINE
UNSETTLED = ("queued", "awaiting_user", "running", "cancelling")


class Pages:
    """The page server's pages, made on request: `/page/KEY` links to `/clicked/KEY`."""

    def get(self, path: str) -> str | None:
        if path.startswith("/page/"):
            key = path.removeprefix("/page/")
            return f'<!doctype html><title>{key}</title><h1>{key}</h1><a href="/clicked/{key}">Go on</a>'
        if path.startswith("/clicked/"):
            return f"<!doctype html><title>Clicked</title><h1>Clicked {path.removeprefix('/clicked/')}</h1>"
        return None


@dataclass
class Sent:
    """One mutation an agent sent, and what it learned about it before the kill."""

    tool: str
    round: int
    args: dict[str, Any]
    # The page-server path whose requests are this mutation's effect (browser tools).
    counted_by: str | None = None
    answered: bool = False
    operation_id: str | None = None
    # The last state the agent read (from the call's answer or lomi_operation_get).
    seen: str | None = None
    seen_effect: str | None = None
    refused: str | None = None  # an error envelope's code: nothing was reserved


@dataclass
class Marker:
    """One line a terminal client asked its shell to append to `terminal.log`."""

    text: str
    round: int
    answered: bool = False  # lomi_terminal_input confirmed the dispatch
    confirmed: bool = False  # the shell's output showed the command had run


@dataclass
class Client:
    """One agent: its token pairing, workspace and project, and everything it sent."""

    index: int
    kind: str
    workspace_id: str
    project: Path
    token: str
    sent: dict[str, Sent] = field(default_factory=dict)
    markers: list[Marker] = field(default_factory=list)
    epoch: str = ""
    round: int = 0
    keys: int = 0
    # Set once the round's runtime (terminal, browser) is up, or at once for files and Git.
    ready: anyio.Event = field(default_factory=anyio.Event)

    def key(self) -> str:
        self.keys += 1
        return f"r{self.round}-c{self.index}-{self.keys}"

    async def mutate(
        self, agent: Mcp, tool: str, args: dict[str, Any], counted_by: str | None = None
    ) -> dict[str, Any] | None:
        """Sends one mutation under a fresh request key and follows it until it settles;
        returns the settled receipt, or None when it was refused before any reservation."""
        key = self.key()
        args = dict(args, retryEpoch=self.epoch, requestKey=key)
        sent = self.sent[key] = Sent(tool, self.round, args, counted_by)
        envelope = await agent.call(tool, args)
        sent.answered = True
        if envelope["status"] == "error":
            sent.refused = envelope["code"]
            return None
        op = envelope["data"]
        sent.operation_id, sent.seen, sent.seen_effect = op["operationId"], op["state"], op["effectState"]
        if op["state"] not in SETTLED:
            op = await agent.settle(op["operationId"])
            sent.seen, sent.seen_effect = op["state"], op["effectState"]
        return op

    async def work(self, mcp, site: Site) -> None:
        async with mcp.session(token=self.token, client_name=f"agent-{self.index}") as agent:
            self.epoch = (await agent.connect(self.workspace_id))["retryEpoch"]
            await getattr(self, f"work_{self.kind}")(agent, site)

    async def revision(self, agent: Mcp) -> str:
        return (await agent.ok("lomi_panel_list", {"workspaceId": self.workspace_id}))["domainRevision"]

    # ---- the four kinds of work; each loops until the kill ----

    async def work_terminal(self, agent: Mcp, site: Site) -> None:
        while True:
            created = await self.mutate(agent, "lomi_terminal_create", {
                "workspaceId": self.workspace_id, "cwdRelative": "", "title": f"agent {self.index}",
                "argv": ["/bin/sh"], "expectedRevision": await self.revision(agent),
            })
            if not created or created["state"] != "succeeded":
                continue
            self.ready.set()
            term = Term(agent, self.workspace_id, self.epoch, created["result"])
            typed: list[Marker] = []
            for n in range(6):
                marker = Marker(f"{self.key()}-line", self.round)
                self.markers.append(marker)
                typed.append(marker)
                # The shell prints `<marker>:42` only once it ran the line.
                sent = await term.send(f"echo {marker.text} >> terminal.log; echo {marker.text}:$((6*7))\r")
                marker.answered = True
                if n % 2 == 1:
                    read = await term.read(
                        sinceCursor=sent["outputCursor"], waitFor={"text": f"{marker.text}:42"}, timeoutMs=60_000
                    )
                    assert read["waited"] == "matched", dump(read)
                    # The shell runs its lines in order: every earlier one has run too.
                    for earlier in typed:
                        earlier.confirmed = True
            await self.mutate(agent, "lomi_terminal_close", {
                "workspaceId": self.workspace_id, "panelId": term.panel, "expectedRevision": await self.revision(agent),
            })

    async def work_files(self, agent: Mcp, site: Site) -> None:
        self.ready.set()
        for n in range(1_000_000):
            name = f"{self.round}-{n}"
            await self.mutate(agent, "lomi_file_create", {
                "workspaceId": self.workspace_id, "path": f"made/{name}.txt", "text": f"{name}\n",
                "createParents": True,
            })

    async def work_git(self, agent: Mcp, site: Site) -> None:
        self.ready.set()
        for n in range(1_000_000):
            head = (await agent.ok("lomi_git_status", {"workspaceId": self.workspace_id}))["head"]
            path = f"work/{self.round}-{n}.txt"
            await self.mutate(agent, "lomi_file_create", {
                "workspaceId": self.workspace_id, "path": path, "text": "work\n", "createParents": True,
            })
            await self.mutate(agent, "lomi_git_stage", {"workspaceId": self.workspace_id, "paths": [path]})
            await self.mutate(agent, "lomi_git_commit", {
                "workspaceId": self.workspace_id, "message": f"commit {self.round}-{n}",
                "expectedHeadRevision": head,
            })

    async def work_browser(self, agent: Mcp, site: Site) -> None:
        created = None
        while not created or created["state"] != "succeeded":
            created = await self.mutate(agent, "lomi_browser_create", {
                "workspaceId": self.workspace_id, "title": f"agent {self.index}",
                "expectedRevision": await self.revision(agent),
            })
        self.ready.set()
        target = {"panelId": created["result"]["panelId"], "browserGeneration": created["result"]["browserGeneration"]}
        for n in range(1_000_000):
            page = f"{self.round}-{self.index}-{n}"
            went = await self.mutate(
                agent, "lomi_browser_navigate", dict(target, url=site.url(f"/page/{page}")), counted_by=f"/page/{page}"
            )
            if not went or went["state"] != "succeeded":
                continue
            snapshot = await agent.ok("lomi_browser_snapshot", {"panelId": target["panelId"]})
            # The link leads to /clicked/<page>: the page server sees the click's effect.
            await self.mutate(agent, "lomi_browser_click", dict(
                target, snapshotId=snapshot["snapshotId"], elementRef=ref(snapshot, "Go on"),
            ), counted_by=f"/clicked/{page}")


# ---- what happened for real ----


def effect_count(client: Client, sent: Sent, site: Site, subjects: dict[Path, list[str]]) -> int | None:
    """How many times the request's effect happened, for the tools whose effect can be counted."""
    if sent.counted_by is not None:
        return site.hits[sent.counted_by]
    if sent.tool == "lomi_file_create":
        path = client.project / sent.args["path"]
        if not path.exists():
            return 0
        assert path.read_text() == sent.args["text"], f"{path} holds something else than {sent.args}"
        return 1
    if sent.tool == "lomi_git_commit":
        return subjects[client.project].count(sent.args["message"])
    return None


def timestamp(value: Any) -> float:
    """A receipt's timestamp in seconds since the epoch (RFC 3339 text or milliseconds)."""
    if isinstance(value, (int, float)):
        return value / 1000
    return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


class Audit:
    """Checks each round after the restart and keeps the figures."""

    def __init__(self, lomi: Lomi, mcp, clients: list[Client], site: Site) -> None:
        self.lomi = lomi
        self.mcp = mcp
        self.clients = clients
        self.site = site
        self.receipts_checked = 0
        self.effects_counted = 0
        self.unknown = 0
        self.lines_counted = 0
        self.retried = 0
        self.recovered = 0  # receipts the restart settled
        self.states: collections.Counter[str] = collections.Counter()  # "tool state" → receipts
        self.effects: dict[str, int] = {}  # request key or marker → count when its round was checked
        self.given: set[str] = set()  # every operationId an agent was given

    def subjects(self) -> dict[Path, list[str]]:
        return {c.project: git(c.project, "log", "--format=%s").splitlines() for c in self.clients if c.kind == "git"}

    def lines(self, client: Client) -> list[str]:
        log = client.project / "terminal.log"
        return log.read_text().splitlines() if log.exists() else []

    async def round(self, number: int, killed_at: float) -> None:
        # First wait until nothing of the killed serve runs: a shell or Git still finishing a
        # line would add an effect after it was counted.
        await self.no_leftovers()
        receipts: dict[str, list[dict[str, Any]]] = {}
        for op in self.lomi.cli("operation", "list", "--limit", "100000"):
            receipts.setdefault(op["requestKey"], []).append(op)
            assert op["state"] not in UNSETTLED, f"after the restart a receipt is still {op['state']}:\n{dump(op)}"
        subjects = self.subjects()
        sent_keys = set()
        for client in self.clients:
            for key, sent in client.sent.items():
                if sent.round != number:
                    continue
                sent_keys.add(key)
                self.check_receipt(key, sent, receipts.get(key, []), killed_at)
                count = effect_count(client, sent, self.site, subjects)
                if count is None:
                    continue
                self.effects_counted += 1
                self.effects[key] = count
                shown = f"{key} ({sent.tool} {dump(sent.args)}): effect seen {count} times; receipt {dump(receipts.get(key))}"
                assert count <= 1, f"replayed: {shown}"
                [op] = receipts.get(key) or [None]
                # A click is confirmed once its event is dispatched; the request the link makes
                # is proof only when the receipt says the navigation committed.
                proven = sent.tool != "lomi_browser_click" or (op and (op.get("result") or {}).get("navigated"))
                if op and op["state"] == "succeeded" and proven:
                    assert count == 1, f"succeeded without its effect: {shown}"
                if op and op["effectState"] == "none" or sent.refused:
                    assert count == 0, f"an effect of a request that had none: {shown}"
                if op is None:
                    assert count == 0, f"an effect without a receipt: {shown}"
            if client.kind == "terminal":
                lines = self.lines(client)
                for marker in client.markers:
                    if marker.round != number:
                        continue
                    count = lines.count(marker.text)
                    self.lines_counted += 1
                    self.effects[marker.text] = count
                    assert count <= 1, f"{marker.text} appended {count} times: replayed input"
                    if marker.confirmed:
                        assert count == 1, f"{marker.text}: the shell showed it ran, but terminal.log lacks it"
        ours = {key for key in receipts if key.startswith(f"r{number}-")}
        assert ours <= sent_keys, f"receipts for requests nobody sent: {sorted(ours - sent_keys)}"
        async with anyio.create_task_group() as tg:
            for client in self.clients:
                tg.start_soon(self.retry_unsettled, client, number)

        assert self.lomi.integrity() == "ok", f"the store after round {number}: {self.lomi.integrity()}"
        # The person frees room, so that long runs stay under the receipt cap.
        self.lomi.cli("store", "reconcile", "--retire", "idle", "--yes")

    def check_receipt(self, key: str, sent: Sent, found: list[dict[str, Any]], killed_at: float) -> None:
        shown = f"{key} ({sent.tool}): sent {dump(sent.__dict__)}\nreceipts {dump(found)}"
        assert len(found) <= 1, f"one request, several receipts: {shown}"
        if sent.operation_id is not None:
            assert found and found[0]["operationId"] == sent.operation_id, f"a receipt the agent was given is lost: {shown}"
            self.given.add(sent.operation_id)
        if sent.refused is not None:
            assert not found, f"a refused request has a receipt: {shown}"
        if not found:
            return
        [op] = found
        self.receipts_checked += 1
        assert op["state"] in SETTLED, shown
        if sent.seen in SETTLED:
            assert (op["state"], op["effectState"]) == (sent.seen, sent.seen_effect), f"a settled receipt changed: {shown}"
        if op["state"] == "outcome_unknown":
            self.unknown += 1
        self.states[f"{sent.tool} {op['state']}"] += 1
        if timestamp(op["settledAt"]) > killed_at:
            # Settled by the restart: it was unsettled when serve was killed.
            self.recovered += 1
            assert (op["state"], op["effectState"]) == ("outcome_unknown", "unknown"), f"settled after the kill: {shown}"

    async def retry_unsettled(self, client: Client, number: int) -> None:
        """What the kill left unsettled, sent again exactly as before: the old epoch is refused,
        so nothing runs twice (the effects are counted again at the end)."""
        retries = [
            sent for sent in client.sent.values()
            if sent.round == number and sent.seen not in SETTLED and sent.refused is None
        ]
        if not retries:
            return
        async with self.mcp.session(token=client.token, client_name=f"agent-{client.index}") as agent:
            for sent in retries:
                await agent.error(sent.tool, sent.args, "RETRY_EPOCH_INVALID")
                self.retried += 1

    async def no_leftovers(self) -> None:
        deadline = time.monotonic() + LEFTOVER_DEADLINE
        while left := self.lomi.leftovers():
            if time.monotonic() > deadline:
                pytest.fail(f"processes of the killed serve still run: {dump(left)}\n{self.lomi.logs()}")
            await anyio.sleep(0.05)

    def nothing_appeared_later(self) -> None:
        """Counts every effect again: an effect of an earlier round that appeared after its check
        was replayed."""
        subjects = self.subjects()
        for client in self.clients:
            lines = self.lines(client) if client.kind == "terminal" else []
            for marker in client.markers:
                if marker.text in self.effects:
                    assert lines.count(marker.text) == self.effects[marker.text], f"{marker.text} appeared later"
            for key, sent in client.sent.items():
                if key in self.effects:
                    assert effect_count(client, sent, self.site, subjects) == self.effects[key], f"{key} ({sent.tool}) changed later"

    def all_given_receipts_kept(self) -> None:
        """Every receipt an agent was given is still there, live or in the history."""
        live = {op["operationId"] for op in self.lomi.cli("operation", "list", "--limit", "100000")}
        history = {op["operationId"] for op in self.lomi.cli("operation", "list", "--history", "--limit", "1000000")}
        lost = self.given - live - history
        assert not lost, f"{len(lost)} receipts lost after maintenance: {sorted(lost)[:20]}"


@pytest.mark.long
async def test_sigkill_with_eight_agents_in_flight(lomi, mcp, tmp_path):
    seed = int(os.environ.get("LOMI_CRASH_SEED") or random.SystemRandom().randrange(2**32))
    print(f"seed {seed} ({ROUNDS} rounds; LOMI_CRASH_SEED={seed} replays the kill moments)")
    rng = random.Random(seed)

    site = Site(Pages())
    clients = []
    for index in range(CLIENTS):
        kind = KINDS[index % len(KINDS)]
        project = tmp_path / f"project-{index}"
        workspace = lomi.add_workspace(f"Agent {index} ({kind})", project)
        if kind == "git":
            make_repository(project)
        token = lomi.create_token(workspace["workspaceId"], name=f"agent-{index}")["token"]
        clients.append(Client(index, kind, workspace["workspaceId"], project, token))
    audit = Audit(lomi, mcp, clients, site)

    timing: collections.Counter[str] = collections.Counter()
    try:
        for number in range(ROUNDS):
            began = time.monotonic()
            early = rng.random() < 0.25
            delay = rng.uniform(*(KILL_EARLY if early else KILL_LATE))
            for client in clients:
                client.round = number
                client.ready = anyio.Event()
            async with anyio.create_task_group() as tg:
                for client in clients:
                    tg.start_soon(client.work, mcp, site)
                if not early:
                    with anyio.fail_after(READY_DEADLINE):
                        for client in clients:
                            await client.ready.wait()
                await anyio.sleep(delay)
                lomi.kill()
                killed_at = time.time()
                tg.cancel_scope.cancel()
            timing["work"] += time.monotonic() - began
            began = time.monotonic()
            lomi.start()
            timing["start"] += time.monotonic() - began
            began = time.monotonic()
            await audit.round(number, killed_at)
            timing["audit"] += time.monotonic() - began
        audit.nothing_appeared_later()
        audit.all_given_receipts_kept()
    finally:
        site.close()
    print(
        f"{ROUNDS} rounds: {audit.receipts_checked} receipts checked ({audit.unknown} outcome_unknown, "
        f"{audit.recovered} of them unsettled at the kill), "
        f"{audit.effects_counted} effects and {audit.lines_counted} terminal lines counted, "
        f"{audit.retried} unsettled requests retried; "
        "nothing lost, replayed or left running"
    )
    print(f"seconds spent: {dict(timing)}")
    print("\n".join(f"  {count:5} {what}" for what, count in sorted(audit.states.items())))
