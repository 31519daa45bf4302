"""The trial's watchdog: a command that overran must not return before its timeout action has finished.

The engine's exec returns as soon as the command's own processes die, which happens early in a reap; the reap
then goes on for another round. A caller that ran its next command at that point had it killed too (seen once in
CI as an empty result for `true`). These tests use a fake engine container, so the race is forced, not hoped for.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from skill2env_dagster.gates.container import Trial, parse_setup
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.reasons import InfraError


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
    # An hour's watchdog: were sh to wait for it, this test would hang (and fail at the per-test limit).
    res = _trial(Quick()).sh("true", timeout=3600, on_timeout=lambda: called.append(1))
    assert (res.exit_code, res.timed_out, res.output) == (0, False, b"ok")
    assert not called


def test_two_reaps_never_run_at_once() -> None:
    """A command's watchdog and a rollout's deadline can both reap; each reaper stops and kills every process it does
    not keep, so two at once would kill each other (and then the container)."""
    class Counting(_Box):
        def __init__(self) -> None:
            super().__init__()
            self.running = self.most = 0
            self.lock = threading.Lock()

        def exec_run(self, cmd: list[str], environment: dict[str, str]) -> tuple[int, bytes]:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
            time.sleep(0.2)
            with self.lock:
                self.running -= 1
            return 0, b"reaped\n"

    box = Counting()
    trial = _trial(box)
    threads = [threading.Thread(target=trial.reap_or_kill) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box.most == 1


@pytest.mark.parametrize("out", [b"keeper none\n", b"keeper none\n/tests\n", b"", b"/tests\n"])
def test_a_setup_without_the_keeper_is_an_error_not_a_path_taken_for_a_pid(out: bytes) -> None:
    with pytest.raises(InfraError):
        parse_setup(0, out)


def test_the_setup_gives_the_keeper_and_the_grading_paths_the_image_holds() -> None:
    assert parse_setup(0, b"keeper 7 \n/tests\n/solution\n") == ("7", ["/tests", "/solution"])
