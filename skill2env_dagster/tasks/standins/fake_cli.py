#!/usr/bin/env python3
"""Fake vendor CLI (stand-in kit): `CLI start|list [PAGE]|get ID|create k=v ...|delete ID` against the stub service.

The service runs beside the container (environment/docker-compose.yaml); `start` (and every other command) waits
until it answers /health.
"""

import json
import sys
import time
import urllib.error
import urllib.request

STUB = "/usr/local/lib/s2e-stub"
with open(STUB + "/contract.json") as _f:
    CONTRACT = json.load(_f)
BASE = f"http://127.0.0.1:{CONTRACT['port']}"


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def ensure_running():
    for _ in range(100):
        try:
            if call("GET", "/health")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"the service does not answer at {BASE}")


def value(text):
    return int(text) if text.lstrip("-").isdigit() else text


def main(argv):
    ensure_running()
    col = CONTRACT["collection"]
    if not argv or argv[0] == "start":
        print(f"service up at {BASE}{col}")
        return 0
    cmd, args = argv[0], argv[1:]
    if cmd == "list":
        status, text = call("GET", f"{col}?page={args[0] if args else 1}")
    elif cmd == "get" and args:
        status, text = call("GET", f"{col}/{args[0]}")
    elif cmd == "create":
        status, text = call("POST", col, {k: value(v) for k, v in (a.split("=", 1) for a in args)})
    elif cmd == "delete" and args:
        status, text = call("DELETE", f"{col}/{args[0]}")
    else:
        print("usage: start | list [PAGE] | get ID | create field=value ... | delete ID", file=sys.stderr)
        return 2
    print(text)
    return 0 if status < 400 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
