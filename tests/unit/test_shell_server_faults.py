"""The episode's shell server (rollouts/shell.py) against a fake engine on a socket pair: an answer split over
frames, a server that hangs up, a broken frame and a server that does not answer in time each end as the caller
expects (the output; "lost", "timeout": the caller runs the command as an exec of its own) and never hang."""

from __future__ import annotations

import base64
import socket
import struct
import threading
from collections.abc import Callable

from skill2env_dagster.rollouts.shell import ShellServer


def _frame(payload: bytes) -> bytes:
    return struct.pack(">BxxxL", 1, len(payload)) + payload


class FakeEngine:
    """exec_create/exec_start of the Docker API: each start hands back one end of a fresh socket pair, whose other
    end `serve` answers (one request line in, whatever bytes `serve` returns out)."""

    def __init__(self, serve: Callable[[bytes], bytes | None], refuse: bool = False) -> None:
        self.serve, self.refuse, self.requests = serve, refuse, []

    def exec_create(self, cid, cmd, **kwargs):
        if self.refuse:
            raise RuntimeError("engine refused the exec")
        return {"Id": "exec-1"}

    def exec_start(self, exec_id, socket: bool = False):
        ours, theirs = _socketpair()
        threading.Thread(target=self._server, args=(theirs,), daemon=True).start()
        return ours

    def _server(self, conn) -> None:
        with conn:
            buf = b""
            while b"\n" not in buf:
                got = conn.recv(4096)
                if not got:
                    return
                buf += got
            self.requests.append(buf)
            reply = self.serve(buf)
            if reply is not None:
                conn.sendall(reply)
            threading.Event().wait(0.2 if reply is not None else 5)  # a server that says nothing: the caller's wait


def _socketpair():
    return socket.socketpair()


def _server(engine: FakeEngine) -> ShellServer:
    return ShellServer(engine, "cid", "wrapper", {})


def test_an_answer_split_over_frames_is_put_back_together():
    body = b"hello\n"
    answer = b"S2E 0 " + str(len(body)).encode() + b"\n" + body
    engine = FakeEngine(lambda req: _frame(answer[:4]) + _frame(b"") + _frame(answer[4:]))
    out, state = _server(engine).run("echo hello", 5, 1000, 5)
    assert (out, state) == (answer, "ok")
    timeout, cap, b64 = engine.requests[0].split()
    assert (timeout, cap, base64.b64decode(b64)) == (b"5", b"1000", b"echo hello")


def test_a_server_that_hangs_up_mid_answer_is_lost():
    engine = FakeEngine(lambda req: _frame(b"S2E 0 10\nabc"))  # 3 of 10 bytes, then the end of the stream
    server = _server(engine)
    assert server.run("cat big", 5, 1000, 5) == (None, "lost")


def test_a_broken_frame_is_lost():
    engine = FakeEngine(lambda req: _frame(b"garbage without the header\n"))
    assert _server(engine).run("true", 5, 1000, 5) == (None, "lost")


def test_no_answer_within_the_wait_is_a_timeout():
    engine = FakeEngine(lambda req: None)
    assert _server(engine).run("sleep 100", 100, 1000, 0.3) == (None, "timeout")


def test_an_engine_that_refuses_the_exec_leaves_the_command_to_a_single_exec():
    engine = FakeEngine(lambda req: b"", refuse=True)
    assert _server(engine).run("true", 5, 1000, 5) == (None, "unavailable")
