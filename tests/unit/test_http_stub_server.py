"""The stand-in service (tasks/standins/http_stub_server.py) on the host: every status its contract promises, and
its journal replayed through the verifier's own functions gives back exactly the server's state (what a service
task's grading rests on). In tasks it runs in a container of its own, where coverage does not see it."""

from __future__ import annotations

import importlib.util
import json
import socketserver
import threading
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from skill2env_dagster.tasks.standins import http_stub

CONTRACT = {"collection": "/v1/items", "fields": ["name", "qty"], "integers": ["qty"], "id_prefix": "it-",
            "page_size": 2, "seed": [{"id": "it-1", "name": "bolt", "qty": 4}, {"id": "it-2", "name": "nut", "qty": 9},
                                     {"id": "it-3", "name": "pin", "qty": 1}],
            "flaky": [{"name": "gear", "qty": 2}]}


class _Server(ThreadingHTTPServer):
    def server_bind(self) -> None:  # without HTTPServer's reverse lookup of its own name (no DNS here)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


@pytest.fixture
def stub(tmp_path, monkeypatch):
    path = Path(http_stub.__file__).parent / "http_stub_server.py"
    spec = importlib.util.spec_from_file_location("stub_server", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "JOURNAL", str(tmp_path / "journal.jsonl"))
    mod.CONTRACT.update(CONTRACT)
    mod.STATE.update(mod.new_state(CONTRACT))
    server = _Server(("127.0.0.1", 0), mod.Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield mod, f"http://127.0.0.1:{server.server_address[1]}", server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _call(base: str, method: str, path: str, body: bytes | None = None) -> tuple[int, object]:
    req = urllib.request.Request(base + path, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_every_status_the_contract_promises_and_a_journal_that_replays_to_the_same_state(stub):
    mod, base, port = stub
    assert mod.answers(port) and _call(base, "GET", "/health") == (200, {"status": "ok"})
    assert _call(base, "GET", "/v1/items") == (200, {"items": CONTRACT["seed"][:2], "next": "/v1/items?page=2"})
    assert _call(base, "GET", "/v1/items?page=2") == (200, {"items": CONTRACT["seed"][2:], "next": None})
    assert _call(base, "GET", "/v1/items?page=x")[0] == 400
    assert _call(base, "GET", "/v1/items/it-2") == (200, CONTRACT["seed"][1])
    assert _call(base, "GET", "/v1/items/it-99")[0] == 404 and _call(base, "GET", "/elsewhere")[0] == 404
    assert _call(base, "POST", "/v1/items", b"{not json")[0] == 400
    code, payload = _call(base, "POST", "/v1/items", json.dumps({"name": "cog"}).encode())
    assert code == 422 and payload["details"] == ["missing field qty"]
    assert _call(base, "POST", "/v1/items", json.dumps({"name": "cog", "qty": 0, "x": 1}).encode())[0] == 422
    gear = json.dumps(CONTRACT["flaky"][0]).encode()
    assert _call(base, "POST", "/v1/items", gear)[0] == 503  # once: the retry succeeds
    assert _call(base, "POST", "/v1/items", gear) == (201, {"id": "it-4", "name": "gear", "qty": 2})
    assert _call(base, "POST", "/v1/items/it-1", gear)[0] == 405 and _call(base, "POST", "/nowhere", gear)[0] == 404
    assert _call(base, "DELETE", "/v1/items/it-1") == (204, None)
    assert _call(base, "DELETE", "/v1/items/it-1")[0] == 404 and _call(base, "DELETE", "/v1/items")[0] == 404
    code, journal = _call(base, "GET", "/__journal")
    # every call but /health and /__journal, in order, with the status it got
    assert code == 200 and journal == mod.read_journal() and len(journal) == 16
    assert mod.replay(CONTRACT, journal) == mod.STATE
    assert [r["id"] for r in mod.STATE["records"]] == ["it-2", "it-3", "it-4"]


def test_an_invented_journal_does_not_replay(stub):
    mod, _, _ = stub
    assert mod.replay(CONTRACT, ['["POST", "/v1/items", 201, {"name": "cog", "qty": 3}]']) is not None
    assert mod.replay(CONTRACT, ['["POST", "/v1/items", 503, {"name": "cog", "qty": 3}]']) is None  # not flaky
    assert mod.replay(CONTRACT, ['["DELETE", "/v1/items/it-9", 204, null]']) is None  # never existed
    assert mod.replay(CONTRACT, ["not json"]) is None
    assert mod.replay(CONTRACT, ['["PUT", "/v1/items", 200, null]']) is None
