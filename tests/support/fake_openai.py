"""A real loopback HTTP server speaking the OpenAI chat-completions API, with scripted faults and server modes.

Tests start it on 127.0.0.1 on a free port, point the client at `server.base_url`, and read `server.requests`
(every request body and header set received) to count HTTP calls, and `server.served` (the usage of every
completion it answered) to check the tokens we report against what was really served.

Faults are queued and consumed one per request (or drawn at random per request by a `FaultMix`):

    rate_limit(retry_after)  429 with a Retry-After header
    server_error             500
    slow(seconds)            sleep before answering (exceed the client timeout; not counted as served)
    drop                     close the connection without answering
    reset                    abort the connection with a TCP reset
    truncated                200 whose body is cut mid-JSON (Content-Length matches: the SDK's JSONDecodeError)
    short_body               200 announcing the full Content-Length, then closing after half of it
    malformed                200 whose message content is not JSON
    schema_violation         200 whose content is JSON that does not match the requested schema
    unauthorized             401
    model_not_found          404 for the model
    unsupported_param(name)  400 naming an unsupported request parameter
    context_too_long         400 the prompt exceeds the model's context (this request only)

Server modes (persistent):

    json_schema_supported=False  400 "response_format json_schema is not supported" for json_schema requests
    api_key="k"                  401 unless the request carries `Authorization: Bearer k`
    models={"m"}                 404 for any other model
    fault_mix=FaultMix(...)      a random fault on a share of the requests
    fault_for=f                  f(body) picks a fault per request once the queue is empty (e.g. by model name),
                                 so concurrent conversations each get their own faults

A responder returns the reply's content (a string) or a whole assistant message (a dict with `content` and/or
`tool_calls`, for tool-calling agents).
"""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]
FaultPicker = Callable[[dict[str, Any]], "Fault | None"]


@dataclass
class Fault:
    kind: str
    seconds: float = 0.0
    param: str = ""


def rate_limit(retry_after: float = 1.0) -> Fault:
    return Fault("rate_limit", retry_after)


def slow(seconds: float) -> Fault:
    return Fault("slow", seconds)


def unsupported_param(name: str) -> Fault:
    return Fault("unsupported_param", param=name)


def _fault(kind: str) -> Callable[[], Fault]:
    return lambda: Fault(kind)


(server_error, drop, reset, truncated, short_body, malformed, schema_violation, unauthorized, model_not_found,
 context_too_long) = map(_fault, ("server_error", "drop", "reset", "truncated", "short_body", "malformed",
                                  "schema_violation", "unauthorized", "model_not_found", "context_too_long"))


@dataclass
class FaultMix:
    """A random fault on `rate` of the requests (seeded), drawn from `faults`."""

    faults: Sequence[Fault]
    rate: float = 0.3
    seed: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def draw(self) -> Fault | None:
        return self.rng.choice(list(self.faults)) if self.rng.random() < self.rate else None


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class FakeOpenAI:
    """Context manager: `with FakeOpenAI(responder) as srv: ... srv.base_url ... len(srv.requests)`."""

    def __init__(self, responder: Responder | None = None, *, json_schema_supported: bool = True,
                 api_key: str | None = None, models: set[str] | None = None,
                 fault_mix: FaultMix | None = None, fault_for: FaultPicker | None = None) -> None:
        self.responder: Responder = responder or (lambda body: "{}")
        self.json_schema_supported = json_schema_supported
        self.api_key = api_key
        self.models = models
        self.fault_mix = fault_mix
        self.fault_for = fault_for
        self.faults: deque[Fault] = deque()
        self.requests: list[Received] = []
        self.served: list[dict[str, int]] = []  # usage of every completion answered (also if its content is junk)
        self.faults_served: list[str] = []
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

    @property
    def prompt_tokens(self) -> int:
        return sum(u["prompt_tokens"] for u in self.served)

    @property
    def completion_tokens(self) -> int:
        return sum(u["completion_tokens"] for u in self.served)

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
    def _next_fault(self, body: dict[str, Any]) -> Fault | None:
        with self._lock:
            if self.faults:
                return self.faults.popleft()
            if self.fault_mix:
                return self.fault_mix.draw()
        return self.fault_for(body) if self.fault_for else None

    def record(self, item: Received) -> None:
        with self._lock:
            self.requests.append(item)

    def completion(self, body: dict[str, Any], content: str | dict[str, Any]) -> dict[str, Any]:
        """A chat completion carrying `content`; its usage is recorded as served."""
        payload = completion(body, content)
        with self._lock:
            self.served.append({k: payload["usage"][k] for k in ("prompt_tokens", "completion_tokens")})
        return payload

    def refusal(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
        """What a persistent server mode refuses this request with, if anything."""
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, _error("Incorrect API key provided.", "invalid_request_error", code="invalid_api_key")
        if self.models is not None and body.get("model") not in self.models:
            return 404, _error(f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                               "invalid_request_error", code="model_not_found")
        wants_schema = (body.get("response_format") or {}).get("type") == "json_schema"
        if wants_schema and not self.json_schema_supported:
            return 400, _error("Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
                               "this model.", "invalid_request_error", param="response_format")
        return None


def _error(message: str, kind: str, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def completion(body: dict[str, Any], reply: str | dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "content": reply} if isinstance(reply, str) else {"role": "assistant", **reply}
    prompt_tokens = max(1, len(json.dumps(body.get("messages", []))) // 4)
    completion_tokens = max(1, len(json.dumps(message)) // 4)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
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

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            headers = {k.lower(): v for k, v in self.headers.items()}
            fake.record(Received(self.path, headers, body))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, _error("not found", "invalid_request_error"))
            refused = fake.refusal(body, headers)
            if refused is not None:
                return self._send(*refused)
            fault = fake._next_fault(body)
            if fault is None:
                return self._send(200, fake.completion(body, fake.responder(body)))
            with fake._lock:
                fake.faults_served.append(fault.kind)
            return self._fault(fault, body)

        def _fault(self, fault: Fault, body: dict[str, Any]) -> None:
            if fault.kind == "rate_limit":
                return self._send(429, _error("rate limited", "rate_limit_error"),
                                  {"Retry-After": f"{fault.seconds:g}"})
            if fault.kind == "server_error":
                return self._send(500, _error("boom", "server_error"))
            if fault.kind == "unauthorized":
                return self._send(401, _error("Incorrect API key provided.", "invalid_request_error",
                                              code="invalid_api_key"))
            if fault.kind == "model_not_found":
                return self._send(404, _error(f"The model `{body.get('model')}` does not exist.",
                                              "invalid_request_error", code="model_not_found"))
            if fault.kind == "unsupported_param":
                return self._send(400, _error(f"Unsupported parameter: '{fault.param}' is not supported with this "
                                              "model.", "invalid_request_error", param=fault.param,
                                              code="unsupported_parameter"))
            if fault.kind == "context_too_long":
                return self._send(400, _error("This model's maximum context length is 8192 tokens. However, you "
                                              "requested 9500 tokens. Please reduce the length of the messages.",
                                              "invalid_request_error", param="messages",
                                              code="context_length_exceeded"))
            if fault.kind == "drop":
                self.close_connection = True
                self.connection.close()
                return None
            if fault.kind == "reset":
                self.close_connection = True
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                return None
            if fault.kind == "slow":  # meant to outlast the client's timeout: not counted as served
                time.sleep(fault.seconds)
                return self._send(200, completion(body, fake.responder(body)))
            if fault.kind == "truncated":
                data = json.dumps(completion(body, fake.responder(body))).encode()
                return self._send_raw(200, data[: len(data) // 2])
            if fault.kind == "short_body":
                data = json.dumps(completion(body, fake.responder(body))).encode()
                return self._send_raw(200, data[: len(data) // 2], length=len(data), close=True)
            if fault.kind == "malformed":
                return self._send(200, fake.completion(body, '{"workflows": [ {"rank": 1, this is not json'))
            if fault.kind == "schema_violation":
                return self._send(200, fake.completion(body, json.dumps({"unexpected": "shape", "api_key": "nope"})))
            raise ValueError(f"unknown fault {fault.kind}")

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send_raw(status, json.dumps(payload).encode(), headers=headers)

        def _send_raw(self, status: int, data: bytes, *, length: int | None = None, close: bool = False,
                      headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) if length is None else length))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                if close:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass  # the client gave up (timeout); nothing to do

    return Handler
