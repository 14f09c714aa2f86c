"""A model provider stand-in, for tests only: it speaks the streaming protocols of the OpenAI
Chat Completions API (`POST /v1/chat/completions`, SSE `data:` chunks, a usage chunk,
`data: [DONE]`) and the Anthropic Messages API (`POST /v1/messages`, named SSE events from
`message_start` to `message_stop`), on 127.0.0.1, and records every request it received.

The model named in a request chooses what it does, so one stand-in serves every case:

- any other model: replies "Echo: <the last user message>" in a few chunks, with usage;
- `slow-model`: the same reply in many chunks, one every `SLOW_EVERY` seconds;
- `cut-model`: a few chunks, then the connection is dropped mid-stream;
- `missing-model`: 404 (model not found); `busy-model`: 429 with `Retry-After: 7`;
- `broken-model`: 500.

A request whose key is not `GOOD_KEY` (or the stand-in's own) gets 401, as a real provider answers a bad key.
`test_provider_standin.py` proves with the official `openai` and `anthropic` SDKs that they
parse what it sends.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GOOD_KEY = "sk-standin-good"
SLOW_EVERY = 0.25
SLOW_CHUNKS = 120


def reply_text(body: dict[str, Any]) -> str:
    last = ""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            last = content if isinstance(content, str) else json.dumps(content)
    return f"Echo: {last}"


def pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


class StandIn:
    """Serves both protocols on a thread; `requests` is what arrived, in order."""

    def __init__(self, key: str | None = GOOD_KEY) -> None:
        """`key`: the key it takes; None takes none (a local server such as Ollama)."""
        self.key = key
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.streaming = threading.Event()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"unparsed": raw.decode(errors="replace")}
                with standin.lock:
                    standin.requests.append(
                        {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
                    )
                standin.answer(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def seen(self, path_end: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if path_end is None or r["path"].endswith(path_end)]

    # ---- answers ----

    def answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        anthropic = handler.path.endswith("/v1/messages")
        if not anthropic and not handler.path.endswith("/chat/completions"):
            return self.error(handler, anthropic, 404, "not_found_error", f"no route {handler.path}")
        # Anthropic takes `x-api-key` (its documented header) or a bearer token (what its newest
        # SDK sends); OpenAI-compatible APIs a bearer token.
        auth = handler.headers.get("Authorization", "")
        key = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        if anthropic and handler.headers.get("x-api-key") is not None:
            key = handler.headers.get("x-api-key")
        if self.key is not None and key != self.key:
            return self.error(handler, anthropic, 401, "authentication_error", "Incorrect API key provided")
        model = body.get("model", "")
        if model == "missing-model":
            return self.error(handler, anthropic, 404, "not_found_error", f"The model `{model}` does not exist")
        if model == "busy-model":
            return self.error(handler, anthropic, 429, "rate_limit_error", "Rate limit reached", {"Retry-After": "7"})
        if model == "broken-model":
            return self.error(handler, anthropic, 500, "api_error", "The server had an error")
        text = reply_text(body)
        if model == "slow-model":
            chunks, every = pieces(text + " " + "and on " * 200, SLOW_CHUNKS), SLOW_EVERY
        else:
            chunks, every = pieces(text, 4), 0.0
        cut = model == "cut-model"
        events = self.anthropic_events(model, chunks) if anthropic else self.openai_events(model, chunks)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        self.streaming.set()
        try:
            for i, event in enumerate(events):
                if cut and i == 3:
                    # Drop the connection without the stream's end or the last HTTP chunk.
                    handler.wfile.flush()
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    handler.close_connection = True
                    return
                data = event.encode()
                handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                handler.wfile.flush()
                if every and "delta" in event:
                    time.sleep(every)
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True

    @staticmethod
    def openai_events(model: str, chunks: list[str]) -> list[str]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            return "data: " + json.dumps({
                "id": "chatcmpl-standin",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }) + "\n\n"

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in chunks]
        events.append(chunk({}, "stop"))
        usage = {"prompt_tokens": 11, "completion_tokens": len(chunks), "total_tokens": 11 + len(chunks)}
        events.append("data: " + json.dumps({
            "id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 1700000000,
            "model": model, "choices": [], "usage": usage,
        }) + "\n\n")
        events.append("data: [DONE]\n\n")
        return events

    @staticmethod
    def anthropic_events(model: str, chunks: list[str]) -> list[str]:
        def event(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        events = [
            event("message_start", {"type": "message_start", "message": {
                "id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 13, "output_tokens": 1},
            }}),
            event("content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "text", "text": ""}}),
            event("ping", {"type": "ping"}),
        ]
        events += [
            event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": piece}})
            for piece in chunks
        ]
        events += [
            event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                    "usage": {"output_tokens": len(chunks)}}),
            event("message_stop", {"type": "message_stop"}),
        ]
        return events

    @staticmethod
    def error(handler: BaseHTTPRequestHandler, anthropic: bool, status: int, kind: str, message: str,
              headers: dict[str, str] | None = None) -> None:
        if anthropic:
            body = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
