#!/usr/bin/env python3
"""Stub HTTP service (stand-in kit): keeps a JSON resource contract offline; its state lives only in memory.

Usage: python3 -I http_stub_server.py CONTRACT.json (serve) or `--check CONTRACT.json` (exit 0 when it answers
/health: the service's health check). It runs as a stand-in service in a container of its own beside the agent's
(gates/services.py), sharing only its loopback. The contract names the collection path, the record fields,
which are integers (sent as JSON numbers, at least 1), the seed records, the page size and the records whose first
POST is answered 503 (a transient failure). Endpoints: GET /health; GET <collection>?page=N (pages of page_size,
`next` names the following page or is null); GET <collection>/<id>; POST <collection> (201 / 400 bad JSON /
422 missing, unknown or mistyped fields / 503 once for a flaky record); DELETE <collection>/<id> (204 / 404).

Every answered request is appended to the journal (JOURNAL, one JSON line: method, path, status, body; created
empty at start); nothing else is stored. The runner copies the journal out of the service's container for the
verifier (GET /__journal also serves it, unjournaled, for runners that do not copy files out). The verifier
replays it through the same functions (`new_state`, `post`, `delete`, from this file): a record exists only if the
journal shows the call that created it, answered as this code answers it.
"""

import json
import os
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

JOURNAL = "/var/lib/s2e-stub/journal.jsonl"
LOCK = threading.Lock()
ANSWERS = (200, 201, 204, 400, 404, 405, 422, 503)  # every status this server answers
CONTRACT = {}
STATE = {}


def new_state(contract):
    return {"records": [dict(r) for r in contract["seed"]], "next_id": len(contract["seed"]) + 1,
            "flaky": [dict(r) for r in contract.get("flaky", [])]}


def problems(contract, body):
    if not isinstance(body, dict):
        return ["body must be a JSON object"]
    out = [f"missing field {f}" for f in contract["fields"] if f not in body]
    out += [f"field {f} must be a positive integer" for f in contract["integers"]
            if f in body and (not isinstance(body[f], int) or isinstance(body[f], bool) or body[f] < 1)]
    out += [f"field {f} must be a non-empty string" for f in contract["fields"]
            if f in body and f not in contract["integers"] and (not isinstance(body[f], str) or not body[f])]
    out += [f"unknown field {f}" for f in body if f not in contract["fields"]]
    return out


def post(contract, state, body):
    """(status, payload) of a create call; updates state."""
    bad = problems(contract, body)
    if bad:
        return 422, {"error": "validation_failed", "details": bad}
    if body in state["flaky"]:
        state["flaky"].remove(body)
        return 503, {"error": "temporarily_unavailable"}
    record = {"id": f"{contract['id_prefix']}{state['next_id']}", **body}
    state["next_id"] += 1
    state["records"].append(record)
    return 201, record


def delete(state, rid):
    before = len(state["records"])
    state["records"] = [r for r in state["records"] if str(r["id"]) != rid]
    return 204 if len(state["records"]) < before else 404


def replay(contract, lines):
    """The state the journal's calls lead to, or None when an entry's status is not what this code answers (an
    invented or edited journal: also one with an entry this server never writes). Calls that change nothing
    (reads, malformed JSON, wrong paths) are skipped."""
    state = new_state(contract)
    base = contract["collection"]
    for line in lines:
        try:
            method, path, code, body = json.loads(line)
        except (ValueError, TypeError):
            return None
        if method not in ("GET", "POST", "DELETE") or not isinstance(path, str) or not path.startswith("/") \
                or not isinstance(code, int) or code not in ANSWERS:
            return None
        path = urlparse(path).path
        if method == "POST" and path == base and code != 400:
            answer = post(contract, state, body)[0]
        elif method == "DELETE" and path.startswith(base + "/") and path != base + "/":
            answer = delete(state, path[len(base) + 1:])
        else:
            continue
        if answer != code:
            return None
    return state


def read_journal():
    try:
        with open(JOURNAL) as fh:
            return [ln for ln in fh.read().splitlines() if ln.strip()]
    except OSError:
        return []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, payload=None, body=None):
        # Journaled before the answer is sent: a client that has its answer finds its call in the journal (the
        # verifier may read it as soon as the agent's last call has returned).
        if urlparse(self.path).path not in ("/health", "/__journal"):
            with LOCK, open(JOURNAL, "a") as fh:
                fh.write(json.dumps([self.command, self.path, code, body]) + "\n")
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def route(self):
        url = urlparse(self.path)
        base = CONTRACT["collection"]
        if url.path == base:
            return None, parse_qs(url.query)
        if url.path.startswith(base + "/"):
            return url.path[len(base) + 1:], {}
        return False, {}

    def do_GET(self):
        path = urlparse(self.path).path
        if path == "/health":
            return self.reply(200, {"status": "ok"})
        if path == "/__journal":
            with LOCK:
                lines = read_journal()
            return self.reply(200, lines)
        rid, query = self.route()
        if rid is False:
            return self.reply(404, {"error": "not_found"})
        with LOCK:
            records = list(STATE["records"])
        if rid is None:
            try:
                page = max(1, int(query.get("page", ["1"])[0]))
            except ValueError:
                return self.reply(400, {"error": "bad_page"})
            size = CONTRACT["page_size"]
            items = records[(page - 1) * size: page * size]
            more = page * size < len(records)
            return self.reply(200, {"items": items,
                                    "next": f"{CONTRACT['collection']}?page={page + 1}" if more else None})
        match = [r for r in records if str(r["id"]) == rid]
        return self.reply(200, match[0]) if match else self.reply(404, {"error": "not_found"})

    def do_POST(self):
        rid, _ = self.route()
        if rid is not None:
            return self.reply(404 if rid is False else 405, {"error": "not_allowed"})
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        except ValueError:
            return self.reply(400, {"error": "invalid_json"})
        with LOCK:
            code, payload = post(CONTRACT, STATE, body)
        return self.reply(code, payload, body)

    def do_DELETE(self):
        rid, _ = self.route()
        if not rid:
            return self.reply(404, {"error": "not_found"})
        with LOCK:
            code = delete(STATE, rid)
        return self.reply(code) if code == 204 else self.reply(code, {"error": "not_found"})


def answers(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


if __name__ == "__main__":
    check = sys.argv[1] == "--check"
    with open(sys.argv[-1]) as _f:
        CONTRACT.update(json.load(_f))
    if check:
        sys.exit(0 if answers(CONTRACT["port"]) else 1)
    STATE.update(replay(CONTRACT, read_journal()) or new_state(CONTRACT))  # a restart keeps what was created
    os.makedirs(os.path.dirname(JOURNAL), exist_ok=True)
    open(JOURNAL, "a").close()
    ThreadingHTTPServer(("127.0.0.1", CONTRACT["port"]), Handler).serve_forever()
