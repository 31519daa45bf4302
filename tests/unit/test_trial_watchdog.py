"""The trial's watchdog: a command that overran must not return before its timeout action has finished.

The engine's exec returns as soon as the command's own processes die, which happens early in a reap; the reap
then goes on for another round. A caller that ran its next command at that point had it killed too (seen once in
CI as an empty result for `true`). These tests use a fake engine container, so the race is forced, not hoped for.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from skill2env_dagster.gates.container import Trial
from skill2env_dagster.gates.settings import GateSettings


class _Box:
    """Stands in for a docker Container: exec_run blocks until the timeout action starts, then returns."""

    def __init__(self) -> None:
        self.reap_started = threading.Event()

    def exec_run(self, cmd: list[str], environment: dict[str, str]) -> tuple[int, bytes]:
        self.reap_started.wait(10)
        return 137, b""


def _trial(box: _Box) -> Trial:
    trial = Trial(client=None, image="unused", settings=GateSettings(), workdir=None)  # type: ignore[arg-type]
    trial.container = box  # type: ignore[assignment]
    return trial


def test_a_timed_out_command_returns_only_after_its_reap_has_finished() -> None:
    box, finished = _Box(), threading.Event()

    def slow_reap() -> None:
        box.reap_started.set()  # the command's processes are gone: its exec returns now
        time.sleep(0.3)  # ... while the reap still runs its next round
        finished.set()

    res = _trial(box).sh("sleep 100", timeout=0.05, on_timeout=slow_reap)
    assert res.timed_out
    assert finished.is_set(), "sh returned while the reap was still killing processes"


def test_a_command_in_time_does_not_wait_for_the_watchdog() -> None:
    class Quick(_Box):
        def exec_run(self, cmd: list[str], environment: dict[str, str]) -> tuple[int, bytes]:
            return 0, b"ok"

    called: list[Any] = []
    start = time.perf_counter()
    res = _trial(Quick()).sh("true", timeout=5, on_timeout=lambda: called.append(1))
    assert (res.exit_code, res.timed_out, res.output) == (0, False, b"ok")
    assert time.perf_counter() - start < 1 and not called
