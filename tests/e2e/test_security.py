"""Hostile input: DNS rebinding and cross-site requests, oversized and absurdly nested bodies
over raw HTTP; strict argument decoding and non-disclosure through the SDK; loopback only."""

import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from conftest import LOMI_BIN, WAIT_DEADLINE, dump, rename_args
from rawhttp import RawSession, initialize_request, post

pytestmark = pytest.mark.anyio

FORBIDDEN = {
    "foreign-host": {"host": "evil.example:{port}"},
    "foreign-host-no-port": {"host": "evil.example"},
    "loopback-host-other-port": {"host": "127.0.0.1:1"},
    "foreign-origin": {"headers": {"Origin": "http://evil.example"}},
    "foreign-origin-same-port": {"headers": {"Origin": "http://evil.example:{port}"}},
    "loopback-origin-other-port": {"headers": {"Origin": "http://127.0.0.1:1"}},
    "null-origin": {"headers": {"Origin": "null"}},
}

ALLOWED = {
    "plain": {},
    "localhost-host": {"host": "localhost:{port}"},
    "own-origin": {"headers": {"Origin": "http://127.0.0.1:{port}"}},
}


def fill(case: dict, port: int) -> dict:
    out = {}
    if "host" in case:
        out["host"] = case["host"].format(port=port)
    if "headers" in case:
        out["headers"] = {k: v.format(port=port) for k, v in case["headers"].items()}
    return out


def assert_alive(lomi) -> None:
    """The endpoint still answers a full handshake and a tools/list."""
    session = RawSession(lomi.port, headers=lomi.bearer())
    assert session.request("tools/list")["tools"], "no tools listed"
    assert lomi.running, lomi.logs()


@pytest.mark.parametrize("case", sorted(FORBIDDEN))
def test_foreign_host_or_origin_is_403(lomi, case):
    response = post(lomi.port, initialize_request(), **fill(FORBIDDEN[case], lomi.port))
    assert response.status == 403, response.describe()
    assert "mcp-session-id" not in response.headers, response.describe()
    # Also on an existing session's other requests: the SSE stream (GET) and ending it (DELETE).
    session = RawSession(lomi.port, headers=lomi.bearer())
    forged = fill(FORBIDDEN[case], lomi.port)
    forged["headers"] = {**session.headers, **forged.get("headers", {})}
    for method, body in (("POST", {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}), ("GET", b""), ("DELETE", b"")):
        answer = post(lomi.port, body, method=method, timeout=5, **forged)
        assert answer.status == 403, f"{method}: {answer.describe()}"
    assert session.request("tools/list")["tools"], "the forged DELETE ended the session"
    assert_alive(lomi)


@pytest.mark.parametrize("case", sorted(ALLOWED))
def test_loopback_host_and_own_origin_are_served(lomi, case):
    filled = fill(ALLOWED[case], lomi.port)
    filled["headers"] = {**lomi.bearer(), **filled.get("headers", {})}
    response = post(lomi.port, initialize_request(), **filled)
    assert response.status == 200, response.describe()
    assert response.messages and response.messages[-1]["result"]["serverInfo"]["name"] == "lomi"


def test_body_over_4_mib_is_413(lomi):
    padding = "x" * (4 * 1024 * 1024 + 1)
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"pad": padding}}}
    response = post(lomi.port, body)
    assert response.status == 413, response.describe()
    # Also inside an initialized session, on a tool call.
    session = RawSession(lomi.port, headers=lomi.bearer())
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "lomi_pairing_status", "arguments": {"pad": padding}},
    }
    assert session.request_raw(call).status == 413
    assert_alive(lomi)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"[" * 10_000 + b"]" * 10_000, id="bare-arrays"),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
            + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"}",
            id="in-initialize",
        ),
    ],
)
def test_absurd_nesting_is_a_4xx_and_the_server_lives(lomi, body):
    response = post(lomi.port, body)
    assert 400 <= response.status < 500, response.describe()
    assert_alive(lomi)


def test_absurd_nesting_in_a_tool_call_of_a_session(lomi):
    session = RawSession(lomi.port, headers=lomi.bearer())
    deep = b"[" * 10_000 + b"]" * 10_000
    body = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lomi_pairing_status",'
        b'"arguments":{"x":' + deep + b"}}}"
    )
    response = session.request_raw(body)
    if response.status == 200:
        # A JSON-RPC error or an error envelope is acceptable too; a success is not.
        (message,) = [m for m in response.messages if m.get("id") == 7] or [{}]
        assert "error" in message or message.get("result", {}).get("isError") is True, response.describe()
    else:
        assert 400 <= response.status < 500, response.describe()
    assert session.request("tools/list")["tools"]
    assert_alive(lomi)


def nested(depth: int):
    value = "leaf"
    for _ in range(depth):
        value = {"deeper": value}
    return value


# (tool, arguments) built from the granted workspace A and a live connection to it.
INVALID = {
    "unknown-field-no-arguments-tool": lambda a, c: ("lomi_workspace_list", {"verbose": True}),
    "unknown-field-connect": lambda a, c: ("lomi_connect", {"workspaceId": a, "focus": True}),
    "unknown-field-in-change": lambda a, c: (
        "lomi_workspace_update",
        {**rename_args(a, c["domainRevision"], c["retryEpoch"], "k", "N"),
         "change": {"rename": {"name": "N", "color": "red"}}},
    ),
    "unknown-field-top-level-update": lambda a, c: (
        "lomi_workspace_update",
        {**rename_args(a, c["domainRevision"], c["retryEpoch"], "k", "N"), "force": True},
    ),
    "snake-case-field": lambda a, c: ("lomi_connect", {"workspace_id": a}),
    "two-union-variants": lambda a, c: (
        "lomi_workspace_update",
        {**rename_args(a, c["domainRevision"], c["retryEpoch"], "k", "N"),
         "change": {"rename": {"name": "N"}, "layout": {"panelOrder": []}}},
    ),
    "no-union-variant": lambda a, c: (
        "lomi_workspace_update",
        {**rename_args(a, c["domainRevision"], c["retryEpoch"], "k", "N"), "change": {}},
    ),
    "operation-get-id-and-key": lambda a, c: (
        "lomi_operation_get",
        {"operationId": "op_0123", "retryEpoch": c["retryEpoch"], "requestKey": "k",
         "tool": "lomi_workspace_update"},
    ),
    "operation-get-neither": lambda a, c: ("lomi_operation_get", {}),
    "operation-get-partial-key": lambda a, c: (
        "lomi_operation_get", {"retryEpoch": c["retryEpoch"], "requestKey": "k"}
    ),
    "nested-60-levels": lambda a, c: ("lomi_connect", {"workspaceId": nested(60)}),
    "nested-60-levels-unknown-tool-field": lambda a, c: (
        "lomi_events_read", {"retryEpoch": c["retryEpoch"], "cursor": nested(60)}
    ),
    "revision-not-decimal": lambda a, c: (
        "lomi_workspace_update", rename_args(a, "latest", c["retryEpoch"], "k", "N")
    ),
    "name-with-control-characters": lambda a, c: (
        "lomi_workspace_update", rename_args(a, c["domainRevision"], c["retryEpoch"], "k", "a\u0007b")
    ),
    "events-max-zero": lambda a, c: ("lomi_events_read", {"retryEpoch": c["retryEpoch"], "maxEvents": 0}),
    "change-with-both-variants": lambda a, c: (
        "lomi_workspace_update",
        {**rename_args(a, c["domainRevision"], c["retryEpoch"], "k", "N"),
         "change": {"rename": {"name": "N"}, "layout": {"panelOrder": []}}},
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
async def test_invalid_arguments_are_invalid_argument_envelopes(lomi, workspaces, mcp, case):
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        tool, arguments = INVALID[case](a["workspaceId"], connection)
        envelope = await agent.error(tool, arguments, "INVALID_ARGUMENT")
        assert len(envelope["message"]) < 2_000, dump(envelope)
        # The message says what to fix.
        expected = {"nested": "nested deeper", "unknown-field": "unknown field", "snake-case": "workspaceId",
                    "operation-get-id-and-key": "not both", "change-with-both-variants": "exactly one of rename or layout"}
        for prefix, fragment in expected.items():
            if case.startswith(prefix):
                assert fragment in envelope["message"], dump(envelope)
    # Nothing was admitted.
    assert lomi.cli("operation", "list") == []
    assert lomi.workspace(a["workspaceId"])["domainRevision"] == connection["domainRevision"]


async def test_an_unknown_tool_is_a_protocol_error(lomi, workspaces, mcp):
    """An unknown tool name is not a tool's failure but a bad request: JSON-RPC -32602."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    async with mcp.session(token=token) as agent:
        with pytest.raises(MCPError) as raised:
            await agent.session.call_tool("lomi_does_not_exist", {})
        assert raised.value.error.code == -32602, raised.value.error
        assert "lomi_does_not_exist" in raised.value.error.message
        await agent.ok("lomi_workspace_list")


async def test_a_bearer_token_lomi_never_issued_is_refused(lomi, workspaces, mcp):
    async with mcp.session(token="lomi_" + "0" * 64) as agent:
        envelope = await agent.error("lomi_workspace_list", {}, "PAIRING_REQUIRED")
        assert "not one Lomi issued" in envelope["message"], dump(envelope)
    # No pending pairing was made up for it.
    assert lomi.cli("pairing", "list") == []


UNGRANTED = {
    "connect": lambda w, c: ("lomi_connect", {"workspaceId": w}),
    "panel_list": lambda w, c: ("lomi_panel_list", {"workspaceId": w}),
    "workspace_update": lambda w, c: (
        "lomi_workspace_update", rename_args(w, "1", c["retryEpoch"], "steal", "Stolen")
    ),
}


@pytest.mark.parametrize("case", sorted(UNGRANTED))
async def test_ungranted_workspace_reads_as_not_found(lomi, workspaces, mcp, case):
    a, b = workspaces
    token = lomi.create_token(a["workspaceId"])["token"]
    missing = "ws_" + "0" * 32
    async with mcp.session(token=token) as agent:
        connection = await agent.connect(a["workspaceId"])
        tool, arguments = UNGRANTED[case](b["workspaceId"], connection)
        existing = await agent.error(tool, arguments, "NOT_FOUND")
        text = dump(existing) + "".join(c.text for c in existing.raw.content if c.type == "text")
        for secret in (b["name"], "Bravo", b["projects"][0]["root"], b["projects"][0]["projectId"]):
            assert secret not in text, f"{secret!r} disclosed:\n{text}"
        # An ungranted workspace and one that does not exist read the same.
        tool, arguments = UNGRANTED[case](missing, connection)
        absent = await agent.error(tool, arguments, "NOT_FOUND")
        assert existing["message"].replace(b["workspaceId"], "W") == absent["message"].replace(missing, "W")
        assert existing.get("details") == absent.get("details")
    assert lomi.workspace(b["workspaceId"])["name"] == b["name"]
    assert lomi.cli("operation", "list") == []


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", "192.0.2.1:0"])
def test_serve_refuses_a_non_loopback_address(tmp_path, address):
    data = tmp_path / "data"
    data.mkdir()
    done = subprocess.run(
        [LOMI_BIN, "serve", "--headless", "--http", address, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode != 0, f"serve started on {address}:\n{done.stdout}\n{done.stderr}"
    assert re.search(r"loopback", done.stderr), done.stderr
    assert not (data / "broker.json").exists()


# How many unauthenticated sessions flood Lomi: the soak suite (scripts/soak) sends 1,000.
FLOOD = 1000 if os.environ.get("LOMI_SOAK_TESTS") == "1" else 60
MAX_PENDING = 32


def test_a_flood_of_unapproved_sessions_cannot_bury_the_one_the_person_expects(lomi, workspaces):
    """Hostile local programs open sessions that each ask to pair: at most 32 wait for the
    person, the rest are refused with a reason (and keep nothing), the person's list stays
    short, and the agent the person expects is approved and works. (Such sessions pair only
    where the person chose it: `network.sessionPairing`.)"""
    lomi.allow_session_pairing()

    def status(session: RawSession) -> dict:
        result = session.request("tools/call", {"name": "lomi_pairing_status", "arguments": {}})
        return result["structuredContent"]

    expected = RawSession(lomi.port, headers={})
    first = status(expected)
    assert first["status"] == "ok" and first["data"]["state"] == "pending", first
    flood = [RawSession(lomi.port) for _ in range(FLOOD)]
    answers = [status(session) for session in flood]
    waiting = [a for a in answers if a["status"] == "ok"]
    refused = [a for a in answers if a["status"] == "error"]
    assert len(waiting) == MAX_PENDING - 1, (len(waiting), len(refused))
    assert all(a["code"] == "PAIRING_REQUIRED" and "already waiting" in a["message"] for a in refused), refused[:2]
    listed = lomi.cli("pairing", "list")
    assert len(listed) == MAX_PENDING, len(listed)
    # The person approves the one they expect (by the code it showed), and it works at once.
    lomi.cli("pairing", "approve", first["data"]["pairingId"], "--workspace", workspaces[0]["workspaceId"])
    result = expected.request("tools/call", {"name": "lomi_workspace_list", "arguments": {}})
    assert result["structuredContent"]["status"] == "ok", result
    # A refused session asks again once there is room.
    lomi.cli("pairing", "deny", waiting[0]["data"]["pairingId"])
    again = status(flood[answers.index(refused[0])])
    assert again["status"] == "ok" and again["data"]["state"] == "pending", again


def bearer_refusal(port: int, token: str) -> dict:
    """What lomi_workspace_list answers a session that shows `token`."""
    session = RawSession(port, headers={"Authorization": f"Bearer {token}"})
    result = session.request("tools/call", {"name": "lomi_workspace_list", "arguments": {}})
    return result["structuredContent"]


def test_repeated_unknown_tokens_are_slowed_and_issued_ones_never(lomi, workspaces):
    """After five unknown tokens from one address, each further one is answered later (100 ms,
    then 200 ms, …, at most 5 s), while the person's own agents, whose tokens Lomi issued
    (revoked ones included: they answer PAIRING_REVOKED), are answered at once throughout.
    Every stored hash is compared in constant time, so an unknown, a revoked and a valid token
    take the same steps to look up."""
    a, _ = workspaces
    revoked = lomi.create_token(a["workspaceId"], name="revoked")
    lomi.cli("pairing", "revoke", revoked["pairingId"])
    valid = lomi.create_token(a["workspaceId"], name="kept")["token"]
    unknown = "lomi_" + "7" * 64
    for _ in range(5):
        refused = bearer_refusal(lomi.port, unknown)
        assert refused["code"] == "PAIRING_REQUIRED" and "late" not in refused["message"], refused
    sixth = bearer_refusal(lomi.port, unknown)
    assert "answered 100 ms late" in sixth["message"], sixth
    assert bearer_refusal(lomi.port, valid)["status"] == "ok"
    gone = bearer_refusal(lomi.port, revoked["token"])
    assert gone["code"] == "PAIRING_REVOKED" and "late" not in gone["message"], gone
    seventh = bearer_refusal(lomi.port, "lomi_" + "8" * 64)
    assert "answered 200 ms late" in seventh["message"], seventh


def raw_socket(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def read_until_closed(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or 30 s pass: a failure)."""
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_slow_headers_slow_bodies_and_hoarded_connections_are_cut_off(lomi):
    """A local program that sends a header slowly, a body slowly, or opens connections and
    sends nothing cannot hold Lomi's sockets: the header is cut off after its timeout, the
    body is answered 408, and connections over the cap are answered 503 at once; when they
    are gone, agents are served again. (The timeouts and the cap are set low for the test:
    30 s, 30 s and 512 by default.)"""
    lomi.stop()
    lomi.start(env={
        "LOMI_HTTP_MAX_CONNECTIONS": "8",
        "LOMI_HTTP_HEADER_TIMEOUT_MS": "3000",
        "LOMI_HTTP_BODY_TIMEOUT_MS": "1000",
    })
    host = f"Host: 127.0.0.1:{lomi.port}\r\n"
    # Half a header, then nothing: the connection is closed (hyper sends 408 or nothing).
    slow = raw_socket(lomi.port)
    slow.sendall(b"POST /mcp HTTP/1.1\r\n" + host.encode())
    cut = read_until_closed(slow)
    assert cut == b"" or cut.startswith(b"HTTP/1.1 408"), cut
    # A whole header, then a tenth of the body it announced: 408 with a reason.
    slow = raw_socket(lomi.port)
    slow.sendall(
        b"POST /mcp HTTP/1.1\r\n" + host.encode()
        + b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        + b"Content-Length: 100\r\n\r\n" + b"{" * 10
    )
    answer = slow.recv(65536)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"did not arrive within 1000 ms" in answer, answer
    slow.close()
    # Eight idle connections fill the cap; the ninth is told so at once.
    hoard = [raw_socket(lomi.port) for _ in range(8)]
    extra = raw_socket(lomi.port)
    refused = read_until_closed(extra)
    assert refused.startswith(b"HTTP/1.1 503"), refused
    assert b"limit" in refused and b"Retry-After: 1" in refused, refused
    for s in hoard:
        s.close()
    # Their places come back as they close; agents are served again.
    deadline = time.monotonic() + WAIT_DEADLINE
    while True:
        try:
            assert_alive(lomi)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_ending_a_session_answers_no_content_and_ends_it(lomi):
    """DELETE ends the session with 204 (the MCP Python SDK warns on anything but 200 and
    204); the session's id is unknown afterwards."""
    session = RawSession(lomi.port, headers=lomi.bearer())
    ended = post(lomi.port, b"", method="DELETE", headers=session.headers)
    assert ended.status == 204 and ended.body == b"", ended.describe()
    after = post(lomi.port, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, headers=session.headers)
    assert after.status == 404, after.describe()
    assert_alive(lomi)



def test_the_local_socket_refuses_another_user_even_when_its_mode_lets_them_in(lomi):
    """The socket and its data dir are user-only; if a mode is changed by hand (or another
    path leads to it), Lomi still serves only the user it runs as: another user's program gets
    a refusal saying to use the HTTP endpoint, and no control request is carried out."""
    socket = lomi.data_dir / "lomi.sock"
    assert oct(os.stat(socket).st_mode & 0o777) == "0o600", oct(os.stat(socket).st_mode)
    assert oct(os.stat(lomi.data_dir).st_mode & 0o777) == "0o700"
    # Another path to the same socket, open to everyone: the kernel lets user nobody connect.
    shared = Path(tempfile.mkdtemp(prefix="lomi-shared-", dir="/tmp"))
    os.chmod(shared, 0o777)
    link = shared / "lomi.sock"
    os.link(socket, link)
    os.chmod(link, 0o666)
    try:
        client = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            f"s.connect({str(link)!r})\n"
            # Lomi refuses at once, so the request may meet a closed socket.
            "try:\n"
            "    s.sendall(b'{\"control\": {\"pairingList\": {}}}\\n')\n"
            "except BrokenPipeError:\n"
            "    pass\n"
            "print(s.makefile().readline(), end='')\n"
        )
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", client],
            capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "PAIRING_DENIED" in done.stdout and "serves only the user Lomi runs as" in done.stdout, done.stdout
        deadline = time.monotonic() + WAIT_DEADLINE
        while "refused a connection from uid Some(65534)" not in lomi.logs():
            assert time.monotonic() < deadline, lomi.logs()
            time.sleep(0.05)
    finally:
        os.chmod(link, 0o600)
        link.unlink()
        shared.rmdir()
    assert_alive(lomi)
