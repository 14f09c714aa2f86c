"""MCP authorization with Lomi as its own authorization server, driven by the MCP Python SDK's
own OAuth client (`OAuthClientProvider`): discovery, registration, the authorize page while the
person approves with `lomi pairing approve`, token, tools, refresh with rotation, revocation,
denial; and the attacks a loopback authorization server must refuse."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from conftest import WAIT_DEADLINE, Lomi, dump

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:33418/callback"


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """Plays the person's browser and decision: opens the authorize page, reads the pairing
    and code it shows, decides with `lomi pairing approve|deny`, and follows the page on."""

    def __init__(self, lomi: Lomi, workspace: str, approve: bool = True) -> None:
        self.lomi = lomi
        self.workspace = workspace
        self.approve = approve
        self.urls: list[str] = []
        self.pages: list[str] = []

    async def redirect_handler(self, url: str) -> None:
        self.urls.append(url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        url = self.urls[-1]
        async with httpx.AsyncClient() as browser:
            page = await browser.get(url)
            assert page.status_code == 200, page.text
            self.pages.append(page.text)
            pairing = re.search(r"lomi pairing approve (pr_[0-9a-f]+)", page.text).group(1)
            request = re.search(r'data-request="([0-9a-f]+)"', page.text).group(1)
            code = re.search(r'id="verification-code">([A-Z0-9-]+)<', page.text).group(1)
            listed = self.lomi.pairing(pairing)
            assert listed["verificationCode"] == code and listed["state"] == "pending", dump(listed)
            status = (await browser.get(f"{self.lomi.url.removesuffix('/mcp')}/authorize/status?request={request}")).json()
            assert status == {"state": "pending"}
            if self.approve:
                await self.lomi.acli("pairing", "approve", pairing, "--workspace", self.workspace)
            else:
                await self.lomi.acli("pairing", "deny", pairing)
            back = await browser.get(f"{self.lomi.url.removesuffix('/mcp')}/authorize/continue?request={request}")
        assert back.status_code == 302, back.text
        location = back.headers["location"]
        assert location.startswith(REDIRECT), location
        query = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
        if "error" in query:
            raise PermissionError(f"authorization refused: {query}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


def provider(
    lomi: Lomi, person: Person, storage: MemoryStorage, name: str = "oauth-e2e", metadata_url: str | None = None
) -> OAuthClientProvider:
    return OAuthClientProvider(
        client_metadata_url=metadata_url,
        server_url=lomi.url,
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
    )


# The revisions a client may speak: the handshake era's (the SDK's "legacy" mode: an
# `initialize` without a token) and the stateless one. Each must start the sign-in with a 401.
REVISIONS = [pytest.param("legacy", id="2025-11-25"), pytest.param("2026-07-28", id="2026-07-28")]


def oauth_client(lomi: Lomi, auth: OAuthClientProvider, mode: str = "auto") -> Client:
    http = create_mcp_http_client(auth=auth)
    return Client(streamable_http_client(lomi.url, http_client=http), mode=mode)


def structured(result: Any) -> dict[str, Any]:
    assert result.structured_content, result
    return result.structured_content


@pytest.mark.parametrize("mode", REVISIONS)
async def test_the_sdk_oauth_client_pairs_refreshes_and_is_cut_off_by_revoke(lomi, workspaces, tmp_path, mode):
    """Added by URL alone: Lomi's 401 starts the sign-in at either revision, the person
    approves, the tools are listed; a relaunch signs in no second time; revoked, it lists none."""
    a, _ = workspaces
    person = Person(lomi, a["workspaceId"])
    storage = MemoryStorage()
    async with oauth_client(lomi, provider(lomi, person, storage), mode) as client:
        status = structured(await client.call_tool("lomi_pairing_status", {}))
        assert status["status"] == "ok" and status["data"]["state"] == "approved", dump(status)
        listed = structured(await client.call_tool("lomi_workspace_list", {}))
        assert [w["workspaceId"] for w in listed["data"]["workspaces"]] == [a["workspaceId"]]
        tools = await client.list_tools()
        assert any(t.name == "lomi_terminal_create" for t in tools.tools)
    assert len(person.urls) == 1, "one authorization"
    page = person.pages[0]
    assert "oauth-e2e" in page and "Approve" in page
    pairing_id = status["data"]["pairingId"]
    shown = lomi.pairing(pairing_id)
    assert shown["credential"] == "oauth" and shown["clientName"] == "oauth-e2e", dump(shown)
    # Only hashes are kept.
    domain = (lomi.data_dir / "domain.json").read_text()
    assert storage.tokens.access_token not in domain and storage.tokens.refresh_token not in domain
    assert hashlib.sha256(storage.tokens.refresh_token.encode()).hexdigest() in domain

    # A relaunched client with its stored tokens needs no new approval, also after Lomi restarts.
    lomi.restart("SIGTERM")
    async with oauth_client(lomi, provider(lomi, person, storage), mode) as client:
        again = structured(await client.call_tool("lomi_pairing_status", {}))
        assert again["data"]["pairingId"] == pairing_id, dump(again)
        relisted = await client.list_tools()
        assert any(t.name == "lomi_terminal_create" for t in relisted.tools)
    assert len(person.urls) == 1, "no second authorization"

    # Revocation ends it: the next call is refused, and the refresh token is dead.
    old_refresh = storage.tokens.refresh_token
    lomi.cli("pairing", "revoke", pairing_id)
    async with oauth_client(lomi, provider(lomi, person, storage), mode) as client:
        assert (await client.list_tools()).tools == [], "a revoked client is listed no tools"
        refused = structured(await client.call_tool("lomi_workspace_list", {}))
        assert refused["status"] == "error" and refused["code"] == "PAIRING_REVOKED", dump(refused)
    assert len(person.urls) == 1, "no sign-in started by the revocation"
    answer = httpx.post(
        f"{lomi.url.removesuffix('/mcp')}/token",
        data={"grant_type": "refresh_token", "refresh_token": old_refresh, "client_id": storage.client.client_id},
    )
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant", answer.text


@pytest.fixture
def short_tokens(lomi):
    """Access tokens that live 2 s, so the client refreshes within the test."""
    lomi.stop()
    lomi.start(env={"LOMI_OAUTH_ACCESS_SECONDS": "2"})
    return lomi


async def test_an_expired_access_token_is_refreshed_and_the_old_refresh_token_dies(short_tokens, workspaces):
    lomi = short_tokens
    a, _ = workspaces
    person = Person(lomi, a["workspaceId"])
    storage = MemoryStorage()
    async with oauth_client(lomi, provider(lomi, person, storage)) as client:
        await client.call_tool("lomi_workspace_list", {})
        first = storage.tokens
        assert first.expires_in == 2
        await anyio.sleep(2.5)
        listed = structured(await client.call_tool("lomi_workspace_list", {}))
        assert listed["status"] == "ok", dump(listed)
    assert storage.tokens.refresh_token != first.refresh_token, "the refresh token rotates"
    assert len(person.urls) == 1, "refreshed, not authorized again"
    # The rotated-out refresh token presented again: refused, and the pairing is revoked (one
    # of its two holders is not the client).
    base = lomi.url.removesuffix("/mcp")
    replay = httpx.post(
        f"{base}/token",
        data={"grant_type": "refresh_token", "refresh_token": first.refresh_token, "client_id": storage.client.client_id},
    )
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant", replay.text
    pairing = [p for p in lomi.cli("pairing", "list") if p["credential"] == "oauth"][0]
    assert pairing["state"] == "revoked", dump(pairing)


async def test_a_denied_authorization_reaches_the_client_as_access_denied(lomi, workspaces):
    a, _ = workspaces
    person = Person(lomi, a["workspaceId"], approve=False)
    with pytest.raises(Exception) as failed:
        async with oauth_client(lomi, provider(lomi, person, MemoryStorage())) as client:
            await client.call_tool("lomi_workspace_list", {})
    assert "access_denied" in repr(failed.value) or "authorization refused" in repr(failed.value), failed.value
    assert [p["state"] for p in lomi.cli("pairing", "list")] == ["denied"]


# Requests a client without a token sends first, at each revision: each must be a 401 naming
# the protected-resource metadata (what starts any SDK's sign-in), never a session.
UNSIGNED = {
    "initialize-2025-11-25": ("POST", {"MCP-Protocol-Version": "2025-11-25"}, "2025-11-25"),
    "initialize-2025-06-18": ("POST", {}, "2025-06-18"),
    "initialize-2024-11-05": ("POST", {}, "2024-11-05"),
    "discover-2026-07-28": ("POST", {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}, None),
    "sse-stream": ("GET", {}, None),
}


def unsigned(lomi: Lomi, case: str) -> httpx.Response:
    method, headers, version = UNSIGNED[case]
    body = (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "unsigned", "version": "0"}}}
        if version else {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
    )
    return httpx.request(
        method, lomi.url, json=body if method == "POST" else None,
        headers={"Accept": "application/json, text/event-stream", **headers},
    )


@pytest.mark.parametrize("case", sorted(UNSIGNED))
def test_a_request_without_a_token_is_told_where_to_sign_in_at_every_revision(lomi, workspaces, case):
    base = lomi.url.removesuffix("/mcp")
    answer = unsigned(lomi, case)
    assert answer.status_code == 401, answer.text
    assert "mcp-session-id" not in answer.headers, answer.headers
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer "), challenge
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge, challenge
    assert "lomi pairing create" in answer.text and "lomi mcp" in answer.text, answer.text
    assert lomi.cli("pairing", "list") == [], "nothing waits for the person"


async def test_session_pairing_is_the_persons_choice_and_lists_no_tools_before_approval(lomi, workspaces, mcp):
    """With `network.sessionPairing` on, a handshake-era client without a token pairs for its
    session: pending, listed no tools until the person approves it, then told its list changed.
    A stateless request without a token is still a 401 (it has no session to pend on)."""
    a, _ = workspaces
    lomi.allow_session_pairing()
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with mcp.session(client_name="no-sign-in", message_handler=on_message) as agent:
        assert (await agent.session.list_tools()).tools == [], "an unapproved client is listed no tools"
        pending = [p for p in lomi.cli("pairing", "list") if p["clientName"] == "no-sign-in"]
        assert len(pending) == 1 and pending[0]["state"] == "pending" and pending[0]["credential"] == "session", dump(pending)
        status = await agent.ok("lomi_pairing_status")
        assert status["state"] == "pending" and status["pairingId"] == pending[0]["pairingId"], dump(status)
        await agent.error("lomi_workspace_list", {}, "PAIRING_REQUIRED")
        lomi.cli("pairing", "approve", status["pairingId"], "--workspace", a["workspaceId"])
        with anyio.fail_after(WAIT_DEADLINE):
            await changed.wait()
        names = {t.name for t in (await agent.session.list_tools()).tools}
        assert "lomi_terminal_create" in names and "lomi_connect" in names, names
    assert unsigned(lomi, "discover-2026-07-28").status_code == 401
    # Off again: the next client without a token is told to sign in.
    lomi.cli("settings", "set", "network", "sessionPairing", "false")
    assert unsigned(lomi, "initialize-2025-11-25").status_code == 401


def test_the_metadata_names_lomi_as_its_own_authorization_server(lomi):
    base = lomi.url.removesuffix("/mcp")
    prm = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    assert prm["resource"] == lomi.url and prm["authorization_servers"] == [base], prm
    asm = httpx.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == base and asm["code_challenge_methods_supported"] == ["S256"], asm
    assert asm["token_endpoint_auth_methods_supported"] == ["none"], asm


# ---- attacks ----


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def register(base: str, name: str, redirect: str = REDIRECT) -> str:
    answer = httpx.post(f"{base}/register", json={"client_name": name, "redirect_uris": [redirect]})
    assert answer.status_code == 201, answer.text
    return answer.json()["client_id"]


def authorized_code(lomi: Lomi, workspace: str, client_id: str, challenge: str, scope: str | None = None) -> str:
    base = lomi.url.removesuffix("/mcp")
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
        "resource": lomi.url,
    }
    if scope is not None:
        params["scope"] = scope
    page = httpx.get(f"{base}/authorize?{urlencode(params)}")
    assert page.status_code == 200, page.text
    pairing = re.search(r"lomi pairing approve (pr_[0-9a-f]+)", page.text).group(1)
    request = re.search(r'data-request="([0-9a-f]+)"', page.text).group(1)
    if scope is not None:
        asked = [f"lomi:{f}" for f in (lomi.pairing(pairing)["requestedFamilies"] or [])]
        assert asked == [s for s in scope.split() if s.startswith("lomi:")], (asked, scope)
    lomi.cli("pairing", "approve", pairing, "--workspace", workspace)
    back = httpx.get(f"{base}/authorize/continue?request={request}")
    assert back.status_code == 302, back.text
    query = parse_qs(urlparse(back.headers["location"]).query)
    assert query["state"] == ["s1"] and query["iss"] == [base], query
    return query["code"][0]


def exchange(base: str, client_id: str, code: str, verifier: str, redirect: str = REDIRECT) -> httpx.Response:
    return httpx.post(
        f"{base}/token",
        data={
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": code,
            "redirect_uri": redirect,
            "code_verifier": verifier,
        },
    )


def test_codes_and_refresh_tokens_belong_to_their_client_and_pkce_is_checked(lomi, workspaces):
    a, _ = workspaces
    base = lomi.url.removesuffix("/mcp")
    first = register(base, "first")
    second = register(base, "second")
    verifier, challenge = pkce()

    # Another client cannot use the first's code; the code is then used up.
    code = authorized_code(lomi, a["workspaceId"], first, challenge)
    stolen = exchange(base, second, code, verifier)
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant", stolen.text
    late = exchange(base, first, code, verifier)
    assert late.status_code == 400 and late.json()["error"] == "invalid_grant", late.text

    # A wrong PKCE verifier is refused.
    code = authorized_code(lomi, a["workspaceId"], first, challenge)
    wrong = exchange(base, first, code, pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant", wrong.text
    assert "code_verifier" in wrong.json()["error_description"]

    # A redirect URI other than the authorization's is refused.
    code = authorized_code(lomi, a["workspaceId"], first, challenge)
    moved = exchange(base, first, code, verifier, redirect="http://127.0.0.1:33418/elsewhere")
    assert moved.status_code == 400 and moved.json()["error"] == "invalid_grant", moved.text

    # The right client, code and verifier get tokens; the refresh token is the first client's.
    code = authorized_code(lomi, a["workspaceId"], first, challenge)
    tokens = exchange(base, first, code, verifier)
    assert tokens.status_code == 200, tokens.text
    tokens = tokens.json()
    assert tokens["token_type"] == "Bearer" and tokens["access_token"].startswith("lomi_at_"), tokens
    assert tokens["expires_in"] == 3600
    taken = httpx.post(
        f"{base}/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": second},
    )
    assert taken.status_code == 400 and taken.json()["error"] == "invalid_grant", taken.text
    unknown = httpx.post(f"{base}/token", data={"grant_type": "password", "client_id": first})
    assert unknown.status_code == 400 and unknown.json()["error"] == "unsupported_grant_type", unknown.text


def test_redirects_and_origins_are_checked(lomi, workspaces):
    base = lomi.url.removesuffix("/mcp")
    # Registration takes loopback http and https redirect URIs only.
    for bad in ["http://evil.example/cb", "javascript:alert(1)", "http://127.0.0.1/cb#x"]:
        answer = httpx.post(f"{base}/register", json={"client_name": "x", "redirect_uris": [bad]})
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri", answer.text
    client = register(base, "checked")
    _, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client,
        "redirect_uri": "http://127.0.0.1:33418/not-registered",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s",
    }
    # An unregistered redirect is never followed: the page says so, nothing is sent anywhere.
    wrong = httpx.get(f"{base}/authorize?{urlencode(params)}")
    assert wrong.status_code == 400 and "location" not in wrong.headers, wrong.text
    assert lomi.cli("pairing", "list") == [], "no pairing was started"
    # Plain PKCE is refused, back at the client.
    plain = httpx.get(
        f"{base}/authorize?{urlencode({**params, 'redirect_uri': REDIRECT, 'code_challenge_method': 'plain'})}"
    )
    assert plain.status_code == 302 and "error=invalid_request" in plain.headers["location"], plain.headers
    # A page on another origin cannot drive /authorize or /token in the person's browser.
    foreign = {"Origin": "http://evil.example"}
    assert httpx.get(f"{base}/authorize?{urlencode({**params, 'redirect_uri': REDIRECT})}", headers=foreign).status_code == 403
    assert httpx.post(f"{base}/token", data={"grant_type": "refresh_token"}, headers=foreign).status_code == 403
    assert httpx.post(f"{base}/register", json={}, headers=foreign).status_code == 403
    # A foreign Host (DNS rebinding) too.
    rebinding = httpx.get(f"{base}/.well-known/oauth-authorization-server", headers={"Host": f"evil.example:{lomi.port}"})
    assert rebinding.status_code == 403


async def test_a_stateless_client_works_with_a_token_the_person_created(lomi, workspaces):
    """The SDK pinned to 2026-07-28 (no handshake, no session), with a `lomi pairing create`
    token: every request stands alone, its identity is the token."""
    a, _ = workspaces
    token = lomi.create_token(a["workspaceId"], name="stateless")["token"]
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(lomi.url, http_client=http), mode="2026-07-28") as client:
        listed = structured(await client.call_tool("lomi_workspace_list", {}))
        assert [w["workspaceId"] for w in listed["data"]["workspaces"]] == [a["workspaceId"]], dump(listed)
        connection = structured(await client.call_tool("lomi_connect", {"workspaceId": a["workspaceId"]}))
        assert connection["status"] == "ok", dump(connection)
    # A request whose standard headers contradict its body is refused before anything runs.
    answer = httpx.post(
        lomi.url,
        json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "lomi_workspace_list", "arguments": {}}},
        headers={
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "lomi_store_status",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert answer.status_code == 400 and answer.json()["error"]["code"] == -32020, answer.text


async def test_a_client_asking_for_one_family_is_approved_for_it(lomi, workspaces, mcp):
    """Scopes name tool families: a client asking for `lomi:browser` is offered the browser
    at approval, and the person's plain approval grants exactly that."""
    a, _ = workspaces
    base = lomi.url.removesuffix("/mcp")
    prm = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    assert "lomi:browser" in prm["scopes_supported"] and len(prm["scopes_supported"]) == 8, prm
    client = register(base, "browser-only")
    verifier, challenge = pkce()
    code = authorized_code(lomi, a["workspaceId"], client, challenge, scope="lomi:browser offline_access")
    tokens = exchange(base, client, code, verifier).json()
    assert tokens["scope"] == "lomi:browser", tokens
    async with mcp.session(token=tokens["access_token"]) as agent:
        names = {tool.name for tool in (await agent.session.list_tools()).tools}
    assert "lomi_browser_navigate" in names and "lomi_connect" in names, names
    assert not any(n.startswith("lomi_terminal_") for n in names), names


# ---- a client on the MCP TypeScript SDK ----

TS_SDK = os.environ.get("LOMI_MCP_TS_SDK", str(Path.home() / ".cache/lomi/mcp-ts-sdk/node_modules"))
TS_CLIENT = Path(__file__).with_name("ts_oauth_client.mjs")


class TsClient:
    """One run of ts_oauth_client.mjs (the TypeScript SDK's OAuth client) on a state file: a
    first run signs in, a later one is a relaunch with the stored tokens."""

    def __init__(self, lomi: Lomi, state: Path) -> None:
        assert (Path(TS_SDK) / "@modelcontextprotocol/sdk/package.json").is_file(), (
            f"no @modelcontextprotocol/sdk in {TS_SDK}: scripts/test installs it "
            "(ensure_mcp_ts_sdk in scripts/common.sh), or set LOMI_MCP_TS_SDK"
        )
        self.lomi = lomi
        self.proc = subprocess.Popen(
            ["node", str(TS_CLIENT), lomi.url, str(state)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "LOMI_MCP_TS_SDK": TS_SDK},
        )

    async def line(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT_DEADLINE):
            text = await anyio.to_thread.run_sync(self.proc.stdout.readline, abandon_on_cancel=True)
        self.lomi.transcript.add("ts client", text or f"(ended)\n{self.proc.stderr.read()}")
        assert text, f"the TypeScript client ended without a word: {self.proc.stderr.read()}"
        return json.loads(text)

    async def finish(self) -> int:
        with anyio.fail_after(WAIT_DEADLINE):
            return await anyio.to_thread.run_sync(self.proc.wait, abandon_on_cancel=True)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


async def browse_and_decide(lomi: Lomi, authorize: str, workspace: str, approve: bool) -> str:
    """The person's browser on Lomi's page and their decision on the command line; the page
    sends the browser back to the client's loopback callback. Returns the client name shown."""
    base = lomi.url.removesuffix("/mcp")
    async with httpx.AsyncClient() as browser:
        page = await browser.get(authorize)
        assert page.status_code == 200, page.text
        pairing = re.search(r"lomi pairing approve (pr_[0-9a-f]+)", page.text).group(1)
        request = re.search(r'data-request="([0-9a-f]+)"', page.text).group(1)
        name = re.search(r'id="client">([^<]*)<', page.text).group(1)
        if approve:
            await lomi.acli("pairing", "approve", pairing, "--workspace", workspace)
        else:
            await lomi.acli("pairing", "deny", pairing)
        back = await browser.get(f"{base}/authorize/continue?request={request}")
        assert back.status_code == 302, back.text
        callback = back.headers["location"]
        assert callback.startswith("http://127.0.0.1:"), callback
        reached = await browser.get(callback)
        assert reached.status_code == 200, reached.text
    return name


async def test_a_typescript_sdk_client_signs_in_by_url_alone(lomi, workspaces, tmp_path):
    """The TypeScript SDK's client speaks 2025-11-25: its `initialize` without a token is
    answered 401, which starts its sign-in; the person approves; it lists the tools. Relaunched
    with its stored tokens it signs in no second time; revoked, it is listed no tools; a client
    the person denies gets no tokens and no tools."""
    a, _ = workspaces
    state = tmp_path / "ts-client.json"
    first = TsClient(lomi, state)
    try:
        asked = await first.line()
        assert set(asked) == {"authorize"} and asked["authorize"].startswith(lomi.url.removesuffix("/mcp") + "/authorize?"), asked
        assert await browse_and_decide(lomi, asked["authorize"], a["workspaceId"], approve=True) == "ts-sdk-e2e"
        done = await first.line()
        assert await first.finish() == 0, done
    finally:
        first.kill()
    assert done["signIns"] == 1 and "lomi_terminal_create" in done["tools"] and "lomi_connect" in done["tools"], done
    (pairing,) = [p for p in lomi.cli("pairing", "list") if p["clientName"] == "ts-sdk-e2e"]
    assert pairing["credential"] == "oauth" and pairing["state"] == "approved", dump(pairing)

    relaunched = TsClient(lomi, state)
    try:
        again = await relaunched.line()
        assert await relaunched.finish() == 0, again
    finally:
        relaunched.kill()
    assert again["signIns"] == 0 and again["tools"] == done["tools"], again

    lomi.cli("pairing", "revoke", pairing["pairingId"])
    revoked = TsClient(lomi, state)
    try:
        cut = await revoked.line()
        await revoked.finish()
    finally:
        revoked.kill()
    assert cut == {"tools": [], "signIns": 0, "protocol": cut.get("protocol")}, cut

    denied = TsClient(lomi, tmp_path / "ts-denied.json")
    try:
        asked = await denied.line()
        await browse_and_decide(lomi, asked["authorize"], a["workspaceId"], approve=False)
        refused = await denied.line()
        assert await denied.finish() != 0, refused
    finally:
        denied.kill()
    assert "error" in refused and "tools" not in refused, refused
