"""Raw HTTP against Lomi's MCP endpoint (stdlib http.client), for what an SDK would not send:
foreign Host/Origin headers, oversized or hostile bodies, and a hand-made MCP handshake."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from typing import Any

ACCEPT = "application/json, text/event-stream"
PROTOCOL_VERSION = "2025-11-25"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    messages: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        return f"HTTP {self.status} {self.headers}\n{self.body[:2000]!r}"


def parse_messages(content_type: str, body: bytes) -> list[dict[str, Any]]:
    """JSON-RPC messages of a JSON or SSE response body."""
    if content_type.startswith("application/json"):
        return [json.loads(body)] if body.strip() else []
    if content_type.startswith("text/event-stream"):
        messages = []
        for event in body.decode().replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(
                line[len("data:") :].lstrip() for line in event.split("\n") if line.startswith("data:")
            )
            if data.strip():
                messages.append(json.loads(data))
        return messages
    return []


def post(
    port: int,
    body: bytes | dict[str, Any],
    *,
    host: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    method: str = "POST",
) -> Response:
    """POSTs (or `method`s) to /mcp with the headers a Streamable HTTP client sends, overridable."""
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.putrequest(method, "/mcp", skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host or f"127.0.0.1:{port}")
        all_headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        all_headers.update(headers or {})
        for name, value in all_headers.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        try:
            connection.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer (413) and close before reading everything
        response = connection.getresponse()
        data = response.read()
        response_headers = {k.lower(): v for k, v in response.getheaders()}
        return Response(
            response.status,
            response_headers,
            data,
            parse_messages(response_headers.get("content-type", ""), data) if response.status < 300 else [],
        )
    finally:
        connection.close()


def initialize_request(request_id: int = 1, name: str = "raw-http") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": name, "version": "0.0.0"},
        },
    }


class RawSession:
    """An MCP session made by hand: initialize, notifications/initialized, then requests."""

    def __init__(self, port: int, headers: dict[str, str] | None = None) -> None:
        self.port = port
        self.headers = dict(headers or {})
        self.next_id = 1
        first = post(port, initialize_request(), headers=self.headers)
        assert first.status == 200, first.describe()
        self.session_id = first.headers["mcp-session-id"]
        self.initialize_result = self._result_of(first, 1)
        self.headers["Mcp-Session-Id"] = self.session_id
        self.headers["MCP-Protocol-Version"] = self.initialize_result["protocolVersion"]
        done = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers)
        assert done.status == 202, done.describe()

    @staticmethod
    def _result_of(response: Response, request_id: int) -> dict[str, Any]:
        for message in response.messages:
            if message.get("id") == request_id:
                assert "result" in message, json.dumps(message)
                return message["result"]
        raise AssertionError(f"no answer to request {request_id}:\n{response.describe()}")

    def request_raw(self, body: bytes | dict[str, Any]) -> Response:
        return post(self.port, body, headers=self.headers)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self.request_raw(message)
        assert response.status == 200, response.describe()
        return self._result_of(response, self.next_id)
