"""Ctrl-C must always stop a `skill2env run`, wherever it lands.

Two ways a SIGINT used to be lost (a CI run saw both partitions complete and exit 0 after the signal):

- A process started with SIGINT *ignored* keeps ignoring it: Python installs its KeyboardInterrupt handler only
  when SIGINT is at its default, and a background job of a non-interactive shell (CI, a script's `cmd &`) starts
  with SIGINT ignored. `restore_sigint()` installs Python's handler whatever the process inherited.
- Dagster's in-process execution replaces the handler by one that only sets a flag, checks that flag between
  steps, and clears it when the run ends: a signal arriving after the last step's check (while the run writes
  its final events) is dropped and the run succeeds.

`SigintLatch` sees every SIGINT whichever Python handler is installed, Dagster's included: the interpreter writes
the number of each signal it catches to the wakeup fd (`signal.set_wakeup_fd`), and the latch reads that pipe
and stays set. The runner asks it after every Dagster run and before starting more work.
"""

from __future__ import annotations

import os
import signal
from types import TracebackType


def restore_sigint() -> None:
    """Python's own SIGINT handler (KeyboardInterrupt), even if this process was started with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def ignore_further_sigint() -> None:
    """Once a run has stopped for a Ctrl-C, nothing is left to interrupt. A later SIGINT (a second Ctrl-C, or one
    the process sends itself: seen under load, from the run's own pid, after it had printed "interrupted") would
    otherwise land while the interpreter shuts down, after Python has put SIGINT back to its default action, and
    the run would end "killed by SIGINT" instead of exiting 130. SIG_IGN survives the interpreter's shutdown."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class SigintLatch:
    """Set once this process has caught a SIGINT after `open()`. One per process, from its main thread (a forked
    worker makes its own: it would otherwise share the parent's pipe)."""

    def __init__(self) -> None:
        self._fds: tuple[int, int] | None = None
        self._previous = -1
        self._fired = False

    def open(self) -> SigintLatch:
        r, w = os.pipe()
        for fd in (r, w):
            os.set_blocking(fd, False)
        self._previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        self._fds = (r, w)
        return self

    def fired(self) -> bool:
        if not self._fired and self._fds is not None:
            try:
                while data := os.read(self._fds[0], 512):
                    self._fired = self._fired or int(signal.SIGINT) in data
            except BlockingIOError:
                pass  # drained
        return self._fired

    def close(self) -> None:
        if self._fds is not None:
            self.fired()  # keep what was caught
            signal.set_wakeup_fd(self._previous)
            for fd in self._fds:
                os.close(fd)
            self._fds = None

    def __enter__(self) -> SigintLatch:
        return self.open()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


NEVER = SigintLatch()  # never opened, never fired: for runners used outside `skill2env run` (tests)
