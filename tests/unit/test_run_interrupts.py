"""Ctrl-C is never lost by `skill2env run`: not when the process started with SIGINT ignored, not when Dagster's
in-process execution caught it in its flag and cleared it as the run ended."""

from __future__ import annotations

import os
import signal

import pytest
from dagster._utils.interrupts import capture_interrupts, check_captured_interrupt

from skill2env_dagster.cli.runner.interrupts import NEVER, SigintLatch, restore_sigint


@pytest.fixture
def sigint_handler():
    saved = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, saved)


def test_the_latch_keeps_a_sigint_dagster_dropped(sigint_handler):
    restore_sigint()
    with SigintLatch() as latch:
        assert not latch.fired()
        with capture_interrupts():  # what execute_in_process wraps a run in
            os.kill(os.getpid(), signal.SIGINT)
            assert check_captured_interrupt()
        assert not check_captured_interrupt()  # Dagster cleared it when the run ended...
        assert latch.fired() and latch.fired()  # ...the latch still knows, and stays set


def test_other_signals_do_not_set_the_latch(sigint_handler):
    seen: list[int] = []
    saved = signal.signal(signal.SIGUSR1, lambda signo, _: seen.append(signo))
    try:
        with SigintLatch() as latch:
            os.kill(os.getpid(), signal.SIGUSR1)
            assert seen == [signal.SIGUSR1] and not latch.fired()
    finally:
        signal.signal(signal.SIGUSR1, saved)


def test_a_process_started_with_sigint_ignored_is_interruptible_again(sigint_handler):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    restore_sigint()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0)  # give the interpreter a point to run the handler


def test_an_unopened_latch_never_fires():
    assert not NEVER.fired()


LATE_SIGINT = """
import os, signal, sys, types
from skill2env_dagster.cli import main

class Session:  # a run stopped by Ctrl-C (without importing Dagster: a fake session module)
    def __init__(self, *args, **kwargs):
        pass

    def execute(self):
        raise KeyboardInterrupt

fake = types.ModuleType("skill2env_dagster.cli.runner.session")
fake.Session = Session
sys.modules[fake.__name__] = fake
code = main(["run", sys.argv[1], "--out", sys.argv[2], "--skip-docker-up"])
os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C, or one the process sends itself, after the run stopped
sys.exit(code)
"""


def test_a_sigint_after_the_run_stopped_keeps_exit_130(tmp_path):
    """Seen in CI under load (strace: the second SIGINT came from the run's own pid after it printed
    "interrupted"): the process then died of SIGINT (-2) instead of exiting 130."""
    import subprocess
    import sys

    (tmp_path / "hub").mkdir()
    done = subprocess.run([sys.executable, "-c", LATE_SIGINT, str(tmp_path / "hub"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr[-2000:]
    assert "skill2env run: interrupted; the next run resumes" in done.stderr
    assert "Traceback" not in done.stderr
