#!/usr/bin/env python3
"""Stub HTTP service (stand-in kit): keeps a JSON resource contract offline and persists its state to disk.

Usage: http_stub_server.py CONTRACT.json. The contract names the collection path, the record fields, which are
required and which are integers, and the seed records. Endpoints: GET /health; GET <collection> (optional
?field=value filters); GET <collection>/<id>; POST <collection> (201 / 400 bad JSON / 422 missing or mistyped
fields); DELETE <collection>/<id> (204 / 404). Every write is saved atomically to the contract's state_file.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

with open(sys.argv[1]) as _f:
    CONTRACT = json.load(_f)
LOCK = threading.Lock()


def load_state():
    try:
        return json.load(open(CONTRACT["state_file"]))
    except (OSError, ValueError):
        return {"records": list(CONTRACT["seed"]), "next_id": len(CONTRACT["seed"]) + 1, "requests": []}


STATE = load_state()


def save_state():
    path = CONTRACT["state_file"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as fh:
        json.dump(STATE, fh)
    os.replace(path + ".tmp", path)


def problems(body):
    if not isinstance(body, dict):
        return ["body must be a JSON object"]
    out = [f"missing field {f}" for f in CONTRACT["required"] if f not in body]
    out += [f"field {f} must be an integer" for f in CONTRACT["integers"]
            if f in body and (not isinstance(body[f], int) or isinstance(body[f], bool))]
    out += [f"unknown field {f}" for f in body if f not in CONTRACT["fields"]]
    return out


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, payload=None):
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with LOCK:
            STATE["requests"].append([self.command, self.path, code])
            save_state()

    def route(self):
        url = urlparse(self.path)
        base = CONTRACT["collection"]
        if url.path == base:
            return None, parse_qs(url.query)
        if url.path.startswith(base + "/"):
            return url.path[len(base) + 1:], {}
        return False, {}

    def do_GET(self):
        if urlparse(self.path).path == "/health":
            return self.reply(200, {"status": "ok"})
        rid, query = self.route()
        if rid is False:
            return self.reply(404, {"error": "not_found"})
        with LOCK:
            records = list(STATE["records"])
        if rid is None:
            for key, values in query.items():
                records = [r for r in records if str(r.get(key)) == values[0]]
            return self.reply(200, {"items": records})
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
        bad = problems(body)
        if bad:
            return self.reply(422, {"error": "validation_failed", "details": bad})
        with LOCK:
            record = {"id": f"{CONTRACT['id_prefix']}{STATE['next_id']}", **body}
            STATE["next_id"] += 1
            STATE["records"].append(record)
        return self.reply(201, record)

    def do_DELETE(self):
        rid, _ = self.route()
        if not rid:
            return self.reply(404, {"error": "not_found"})
        with LOCK:
            before = len(STATE["records"])
            STATE["records"] = [r for r in STATE["records"] if str(r["id"]) != rid]
            gone = len(STATE["records"]) < before
        return self.reply(204) if gone else self.reply(404, {"error": "not_found"})


if __name__ == "__main__":
    with LOCK:
        save_state()
    ThreadingHTTPServer(("127.0.0.1", CONTRACT["port"]), Handler).serve_forever()
