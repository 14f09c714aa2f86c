"""Client ID metadata documents: a client whose client_id is an https URL, served here by a
local HTTPS server with a certificate authority made for the test (`openssl`), which `lomi
serve` trusts only through LOMI_CIMD_TEST_CA. The MCP Python SDK's OAuthClientProvider signs
in with it end to end; Lomi shows the person the document's name, the redirect host and where
the metadata came from; and refuses a document that is unreachable, too large, redirected,
on a private address, naming another client, or a redirect URI it does not list."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from conftest import Lomi, dump
from https_documents import DocumentServer, make_authority
from test_oauth import REDIRECT, MemoryStorage, Person, oauth_client, pkce, provider, structured

pytestmark = pytest.mark.anyio

NAME = "CIMD e2e client"


@pytest.fixture
def authority(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_authority(tmp_path / "ca")


@pytest.fixture
def documents(authority):
    _, cert, key = authority
    server = DocumentServer(cert, key)
    yield server
    server.close()


@pytest.fixture
def trusting(lomi: Lomi, authority) -> Lomi:
    """Lomi started with the test CA as the one authority for metadata documents."""
    lomi.stop()
    lomi.start(env={"LOMI_CIMD_TEST_CA": str(authority[0])})
    return lomi


def document(url: str, **fields) -> dict:
    return {"client_id": url, "client_name": NAME, "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none", **fields}


def authorize(lomi: Lomi, client_id: str, redirect: str = REDIRECT) -> httpx.Response:
    _, challenge = pkce()
    params = {
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s", "resource": lomi.url,
    }
    return httpx.get(f"{lomi.url.removesuffix('/mcp')}/authorize?{urlencode(params)}", timeout=30)


def test_lomi_advertises_metadata_documents_for_public_clients(lomi):
    asm = httpx.get(f"{lomi.url.removesuffix('/mcp')}/.well-known/oauth-authorization-server").json()
    assert asm["client_id_metadata_document_supported"] is True, asm
    assert "none" in asm["token_endpoint_auth_methods_supported"], asm
    assert asm["registration_endpoint"].endswith("/register"), "registration stays"


async def test_the_sdk_signs_in_with_its_metadata_document(trusting, workspaces, documents):
    lomi = trusting
    a, _ = workspaces
    url = documents.serve("/oauth/client.json", {})
    documents.serve("/oauth/client.json", document(url))
    person = Person(lomi, a["workspaceId"])
    storage = MemoryStorage()
    # The name it would register with is not the one shown: the document's is.
    auth = provider(lomi, person, storage, name="not this name", metadata_url=url)
    async with oauth_client(lomi, auth, "2026-07-28") as client:
        status = structured(await client.call_tool("lomi_pairing_status", {}))
        assert status["data"]["state"] == "approved", dump(status)
        tools = await client.list_tools()
        assert any(t.name == "lomi_terminal_create" for t in tools.tools)
    assert storage.client.client_id == url, "the SDK used the document's URL as its client_id"
    assert documents.requests == ["/oauth/client.json"], documents.requests
    page = person.pages[0]
    assert re.search(r'id="client">CIMD e2e client<', page), page
    assert re.search(r'id="redirect-host">127\.0\.0\.1<', page), page
    assert f'id="metadata-source">{url}<' in page, page
    (pairing,) = lomi.cli("pairing", "list")
    assert pairing["clientName"] == NAME and pairing["credential"] == "oauth", dump(pairing)
    assert pairing["signIn"] == {"redirectHost": "127.0.0.1", "metadataUrl": url}, dump(pairing)
    # Nothing was registered: no client of Lomi's own making.
    clients = json.loads((lomi.data_dir / "domain.json").read_text())["oauthClients"]
    assert [c["clientId"] for c in clients] == [url], dump(clients)


REFUSALS = {
    "unreachable": ("closed", "could not be fetched"),
    "too-large": ("/big.json", "larger than 5120 bytes"),
    "redirected": ("/moved.json", "does not follow redirects"),
    "another-client-id": ("/other.json", "names another client_id"),
    "secret": ("/secret.json", "client_secret"),
    "private-address": ("https://10.11.12.13/client.json", "private address (10.11.12.13)"),
    "metadata-address": ("https://169.254.169.254/latest/client.json", "private address (169.254.169.254)"),
    "not-normal-form": ("/a/../client.json", "normal form"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_bad_document_is_refused_and_nothing_starts(trusting, documents, case):
    lomi = trusting
    where, reason = REFUSALS[case]
    good = documents.serve("/client.json", {})
    documents.serve("/client.json", document(good))
    if where == "closed":
        probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        port = probe.server_address[1]
        probe.server_close()
        client_id = f"https://127.0.0.1:{port}/client.json"
    elif where.startswith("https://"):
        client_id = where
    elif where == "/a/../client.json":
        client_id = documents.url("/a/../client.json")
    else:
        client_id = documents.url(where)
        body = {
            "/big.json": document(client_id, client_uri="https://x.example/" + "a" * 6000),
            "/moved.json": {},
            "/other.json": document(good),
            "/secret.json": document(client_id, client_secret="s3cret"),
        }[where]
        headers = {"Location": good} if where == "/moved.json" else {}
        documents.serve(where, body, status=302 if where == "/moved.json" else 200, headers=headers)
    answer = authorize(lomi, client_id)
    assert answer.status_code == 400 and "location" not in answer.headers, answer.text
    assert reason in answer.text, answer.text
    assert lomi.cli("pairing", "list") == [], "nothing waits for the person"
    if case in ("private-address", "metadata-address"):
        assert documents.requests == [], "no connection was tried"
    # The redirect was not followed to the good document.
    assert "/client.json" not in documents.requests, documents.requests


def test_a_redirect_uri_the_document_does_not_list_is_never_followed(trusting, documents):
    lomi = trusting
    url = documents.serve("/client.json", {})
    documents.serve("/client.json", document(url))
    answer = authorize(lomi, url, redirect="http://127.0.0.1:33418/elsewhere")
    assert answer.status_code == 400 and "location" not in answer.headers, answer.text
    assert "redirect address is not one" in answer.text, answer.text
    assert lomi.cli("pairing", "list") == []
    # The listed one goes on to the person.
    assert authorize(lomi, url).status_code == 200


def test_without_the_test_authority_lomi_fetches_nothing_from_loopback(lomi, documents):
    """The default Lomi: the test server on 127.0.0.1 is a private address to it, so the test
    authority is never needed and never trusted outside the tests."""
    url = documents.serve("/client.json", {})
    documents.serve("/client.json", document(url))
    answer = authorize(lomi, url)
    assert answer.status_code == 400, answer.text
    assert "private address (127.0.0.1)" in answer.text, answer.text
    assert documents.requests == []
