"""A quiet console: everything any process prints (Dagster's event lines, Alembic migrations, our logs, the
Docker SDK's warnings) goes to the run's log file, and only the progress view and the funnel reach the terminal.

Redirecting the file descriptors, not only Python's logging, is what catches all of it, including output of
worker processes (they inherit the descriptors) and of libraries that write to stderr directly.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

LOG_FORMAT = "%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s"


def new_log_file(logs: Path) -> Path:
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    latest = logs / "latest.log"
    latest.unlink(missing_ok=True)
    latest.symlink_to(path.name)
    return path


def _log_to(stream: TextIO | None, path: Path, level: int) -> None:
    """Root logging to the log file (and `stream` when verbose), replacing the CLI's default stderr handler."""
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handlers: list[logging.Handler] = [logging.FileHandler(path, encoding="utf-8")]
    if stream is not None:
        handlers.append(logging.StreamHandler(stream))
    for h in handlers:
        h.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(h)
    root.setLevel(level)


@contextmanager
def quiet_console(log_file: Path, verbose: bool) -> Iterator[TextIO]:
    """Yield the terminal stream for the progress view; meanwhile fd 1 and 2 go to `log_file` (unless verbose,
    which keeps the full log on the terminal and copies Python's log records to the file)."""
    if verbose:
        _log_to(sys.stderr, log_file, logging.DEBUG)
        yield sys.stderr
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    terminal = os.fdopen(os.dup(saved[1]), "w", buffering=1, encoding="utf-8", errors="replace")
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        _log_to(None, log_file, logging.INFO)
        yield terminal
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)
        terminal.close()
