"""A real loopback HTTP server speaking the OpenAI chat-completions API, with scripted faults.

Tests start it on 127.0.0.1 on a free port, point the client at `server.base_url`, and read `server.requests`
(every request body and header set received) to count HTTP calls. Faults are queued and consumed one per request:

    rate_limit(retry_after)  429 with a Retry-After header
    server_error             500
    slow(seconds)            sleep before answering (exceed the client timeout)
    drop                     close the connection without answering
    malformed                200 whose message content is not JSON
    schema_violation         200 whose content is JSON that does not match the requested schema
    reject_json_schema       400 if the request asks for response_format json_schema (persistent setting)
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]


@dataclass
class Fault:
    kind: str
    seconds: float = 0.0


def rate_limit(retry_after: float = 1.0) -> Fault:
    return Fault("rate_limit", retry_after)


def server_error() -> Fault:
    return Fault("server_error")


def slow(seconds: float) -> Fault:
    return Fault("slow", seconds)


def drop() -> Fault:
    return Fault("drop")


def malformed() -> Fault:
    return Fault("malformed")


def schema_violation() -> Fault:
    return Fault("schema_violation")


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class FakeOpenAI:
    """Context manager: `with FakeOpenAI(responder) as srv: ... srv.base_url ... len(srv.requests)`."""

    def __init__(self, responder: Responder | None = None, *, json_schema_supported: bool = True) -> None:
        self.responder: Responder = responder or (lambda body: "{}")
        self.json_schema_supported = json_schema_supported
        self.faults: deque[Fault] = deque()
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ---------------------------------------------------------------------------------
    def enqueue(self, *faults: Fault) -> FakeOpenAI:
        self.faults.extend(faults)
        return self

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        return len(self.requests)

    def start(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- behaviour -------------------------------------------------------------------------------
    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def record(self, item: Received) -> None:
        with self._lock:
            self.requests.append(item)


def completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    prompt_tokens = max(1, len(json.dumps(body.get("messages", []))) // 4)
    completion_tokens = max(1, len(content) // 4)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            return

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            fake.record(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, {"error": {"message": "not found"}})
            fault = fake._next_fault()
            wants_schema = (body.get("response_format") or {}).get("type") == "json_schema"
            if wants_schema and not fake.json_schema_supported:
                return self._send(400, {"error": {"message": "response_format json_schema is not supported"}})
            if fault is None:
                return self._send(200, completion(body, fake.responder(body)))
            return self._fault(fault, body)

        def _fault(self, fault: Fault, body: dict[str, Any]) -> None:
            if fault.kind == "rate_limit":
                return self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": f"{fault.seconds:g}"})
            if fault.kind == "server_error":
                return self._send(500, {"error": {"message": "boom"}})
            if fault.kind == "drop":
                self.close_connection = True
                self.connection.close()
                return None
            if fault.kind == "slow":
                time.sleep(fault.seconds)
                return self._send(200, completion(body, fake.responder(body)))
            if fault.kind == "malformed":
                return self._send(200, completion(body, '{"workflows": [ {"rank": 1, this is not json'))
            if fault.kind == "schema_violation":
                return self._send(200, completion(body, json.dumps({"unexpected": "shape", "api_key": "nope"})))
            raise ValueError(f"unknown fault {fault.kind}")

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to do

    return Handler
