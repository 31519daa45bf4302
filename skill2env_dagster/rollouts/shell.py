"""One long-lived shell per episode that runs the agent's commands, so that a step costs no `docker exec`.

A `docker exec` round trip (create, start, inspect, and the runtime entering the container's namespaces) is most
of a step's cost, ~100 ms on a loaded engine. The episode's first command starts a small server instead: a
`/bin/sh` loop attached to one exec's stdin and stdout that reads one request per line (`<timeout> <cap>
<base64 command>`) and runs each through the same wrapper as a single exec would (`docker_sandbox._WRAP`: fresh
bash, timeout, output capped through a fifo, background processes not waited for), answering
`S2E <exit code> <bytes>\\n` and the bytes.

Nothing is lost if the server goes away — the agent may kill every process, the trial's reaper does at a timeout,
the container may die: a read that ends early returns None and the caller runs the command (or the next one) as
its own exec, and a later command starts a new server. The server's own stdin is never handed to a command
(commands read /dev/null), so a background process cannot hold it.
"""

from __future__ import annotations

import base64
import logging
import select
import socket
import struct
from typing import Any

log = logging.getLogger(__name__)

SERVER = """exec 2>/dev/null
while IFS=' ' read -r t cap b64; do
  S2E_CMD=$(printf %s "$b64" | base64 -d) S2E_TIMEOUT=$t S2E_CAP=$cap /bin/sh -c "$S2E_WRAP" < /dev/null
done
"""
HEADER = b"S2E "


class ShellServer:
    """The server of one container (see module docstring); `run` returns the wrapper's output, or None when the
    server is not there to answer (the caller falls back to an exec of its own)."""

    def __init__(self, api: Any, container_id: str, wrapper: str, env: dict[str, str]) -> None:
        self.api, self.cid, self.wrapper, self.env = api, container_id, wrapper, env
        self._sock: Any = None
        self._raw: socket.socket | None = None
        self._buf = b""
        self.started = 0  # servers started in this container (a restart follows every kill)

    def _start(self) -> bool:
        try:
            exec_id = self.api.exec_create(self.cid, ["/bin/sh", "-c", SERVER], stdin=True, stdout=True,
                                           stderr=False, environment={**self.env, "S2E_WRAP": self.wrapper})["Id"]
            self._sock = self.api.exec_start(exec_id, socket=True)
        except Exception as e:  # the engine refused: the caller uses single execs
            log.debug("shell server did not start: %s", e)
            return False
        self._raw = getattr(self._sock, "_sock", self._sock)
        self._buf = b""
        self.started += 1
        return True

    def close(self) -> None:
        for s in (self._sock, self._raw):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass
        self._sock = self._raw = None

    def run(self, command: str, timeout: float, cap: int, wait: float) -> tuple[bytes | None, str]:
        """The wrapper's output for `command` ("S2E <code> <size>" line, then the bytes) and "ok"; else None and
        why: "unavailable" (no server could be started: the command was not sent, run it as an exec), "lost" (the
        server went away after the command was sent: it was killed with the command, as an exec would have
        been), "timeout" (no answer within `wait`: the caller stops what runs)."""
        if not self._alive() and not self._start():
            return None, "unavailable"
        assert self._raw is not None
        line = f"{max(1, round(timeout))} {cap} {base64.b64encode(command.encode()).decode()}\n".encode()
        try:
            self._raw.settimeout(wait)
            self._raw.sendall(line)
            out = self._answer()
        except TimeoutError:
            self.close()
            return None, "timeout"
        except (OSError, ValueError) as e:  # reset, a broken frame: this server is done
            log.debug("shell server lost: %s", e)
            out = None
        if out is None:
            self.close()
            return None, "lost"
        return out, "ok"

    def _alive(self) -> bool:
        """A server is attached and has not hung up since its last answer (between commands it sends nothing, so
        anything readable is its end)."""
        if self._raw is None:
            return False
        try:
            readable, _, _ = select.select([self._raw], [], [], 0)
            if readable and not self._raw.recv(1, socket.MSG_PEEK):
                self.close()
                return False
        except (OSError, ValueError):
            self.close()
            return False
        return True

    def _answer(self) -> bytes | None:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                head = self._buf[:end].split()
                if len(head) != 3 or head[0] != HEADER.strip() or not head[2].isdigit():
                    raise ValueError(f"unexpected answer {self._buf[:80]!r}")
                size = int(head[2])
                if len(self._buf) >= end + 1 + size:
                    out = self._buf[: end + 1 + size]
                    self._buf = self._buf[end + 1 + size:]
                    return out
            chunk = self._frame()
            if chunk is None:
                self.close()
                return None
            self._buf += chunk

    def _frame(self) -> bytes | None:
        """The next stdout payload of the exec's multiplexed stream; None at its end."""
        header = self._exactly(8)
        if header is None:
            return None
        _, size = struct.unpack(">BxxxL", header)
        return self._exactly(size) if size else b""

    def _exactly(self, n: int) -> bytes | None:
        assert self._raw is not None
        data = b""
        while len(data) < n:
            got = self._raw.recv(n - len(data))
            if not got:
                return None
            data += got
        return data
