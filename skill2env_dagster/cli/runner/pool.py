"""Parallel partitions: N long-lived worker processes, each executing one partition's Dagster runs at a time
against the shared instance.

Why long-lived workers and not Dagster's run queue: the queue (QueuedRunCoordinator + daemon + the default run
launcher) starts a fresh Python process per run, which pays the import of Dagster and the code location every
time (`benchmarks/bench_run.py` measures it: seconds per run on this machine) — for thousands of small per-skill
runs that is a large share of the work. Here each worker runs partition after partition in-process, with the
same instance, the same asset code and the same `docker`/`llm` pools: the op-level pool slots are claimed in the
instance, so they bound Docker and model work across all workers.

Workers are forked from the main process once it has imported the code location (it is single-threaded then;
each worker opens its own instance connections), so a worker is ready in milliseconds instead of re-importing
for tens of seconds on a loaded machine.

Process groups: each worker leads its own process group, so a Ctrl-C in the terminal reaches only the main
process, which then forwards exactly one SIGINT to every worker (a second signal could interrupt a container's
clean-up). A worker that dies (OOM kill) fails only the partition it held, and a replacement takes its place.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import queue
import signal
import time
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from skill2env_dagster.cli.runner.console import LOG_FORMAT
from skill2env_dagster.cli.runner.home import RunHome
from skill2env_dagster.cli.runner.interrupts import SigintLatch
from skill2env_dagster.cli.runner.location import open_instance, run_defs
from skill2env_dagster.cli.runner.outcome import PartitionOutcome, Work
from skill2env_dagster.export.funnel import FailedPartition
from skill2env_dagster.tasks.pipeline import CreationSettings

log = logging.getLogger(__name__)
STOP_GRACE_S = 180.0  # how long interrupted workers get to finish their clean-up before they are killed


@dataclass(frozen=True)
class WorkerInit:
    """Everything a worker needs to build its runner (plain data: the instance is opened anew in the worker)."""

    out: str
    settings: dict[str, Any]
    tags: dict[str, str]
    log_file: str
    verbose: bool


def _worker_logging(init: WorkerInit) -> None:
    """The parent's handlers (and its terminal stream) stay with the parent: a worker logs to the file only."""
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handlers: list[logging.Handler] = [logging.FileHandler(init.log_file, encoding="utf-8")]
    if init.verbose:
        handlers.append(logging.StreamHandler())
    for h in handlers:
        h.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(h)
    root.setLevel(logging.DEBUG if init.verbose else logging.INFO)


def worker_main(init: WorkerInit, tasks: Any, results: Any) -> None:
    """Take (key, eligible, plan) items until the None sentinel; report ("start", key), then ("done", outcome)."""
    os.setpgrp()  # our own process group: only the main process forwards Ctrl-C to us, exactly once
    _worker_logging(init)

    from skill2env_dagster.cli.runner.partitions import PartitionRunner

    home = RunHome(Path(init.out))
    os.environ.update(home.env())
    latch = SigintLatch().open()  # our own: the parent's pipe came with the fork
    runner = PartitionRunner(run_defs(home), open_instance(),
                             CreationSettings.model_validate(init.settings), init.tags, latch)
    results.put(("ready", os.getpid(), ""))
    try:
        while not latch.fired() and (item := tasks.get()) is not None:
            key, eligible, plan = item
            results.put(("start", os.getpid(), key))
            try:
                outcome = runner.process(key, eligible, plan)
            except Exception as e:  # one partition's crash must not lose the others
                log.exception("partition %s crashed outside its run", key)
                outcome = PartitionOutcome(key=key, status="failed", failure=FailedPartition(
                    partition=key, stage="run", reason=type(e).__name__, message=str(e)[:500]))
            results.put(("done", os.getpid(), outcome.model_dump_json()))
            if outcome.status == "interrupted":
                return
    except KeyboardInterrupt:
        return


class WorkerPool:
    """`outcomes(work)` yields each partition's outcome as workers finish them (in completion order)."""

    def __init__(self, init: WorkerInit, workers: int) -> None:
        self.init, self.n = init, workers
        self.ctx = mp.get_context("fork")
        self.tasks: Any = self.ctx.Queue()
        self.results: Any = self.ctx.Queue()
        self.procs: dict[int, BaseProcess] = {}
        self.held: dict[int, str] = {}  # pid -> partition it is working on
        self.replacements = workers  # a worker that dies is replaced, up to this many times
        self.dispatched = False  # any partition handed to the workers
        self.ready: deque[PartitionOutcome] = deque()  # outcomes read while checking on the workers

    def start(self) -> None:
        """Fork the workers (call once the code location is imported and before any thread is started)."""
        for _ in range(self.n):
            self._spawn()

    def _spawn(self) -> None:
        p = self.ctx.Process(target=worker_main, args=(self.init, self.tasks, self.results), daemon=True)
        p.start()
        assert p.pid is not None
        self.procs[p.pid] = p

    def outcomes(self, work: list[Work]) -> Generator[PartitionOutcome, None, None]:
        self.dispatched = self.dispatched or bool(work)
        for item in work:
            self.tasks.put(item)
        for _ in range(self.n + self.replacements):
            self.tasks.put(None)
        pending = {k for k, _, _ in work}
        while pending:
            outcome = self._next(pending)
            if outcome is not None:
                pending.discard(outcome.key)
                yield outcome

    def _next(self, pending: set[str]) -> PartitionOutcome | None:
        if self.ready:
            return self.ready.popleft()
        try:
            message = self.results.get(timeout=0.5)
        except queue.Empty:
            return self._check_workers(pending)
        return self._take(message)

    def _take(self, message: tuple[str, int, str]) -> PartitionOutcome | None:
        kind, pid, payload = message
        if kind == "start":
            self.held[pid] = payload
        elif kind == "done":
            self.held.pop(pid, None)
            return PartitionOutcome.model_validate_json(payload)
        return None

    def _drain(self) -> None:
        """Read every message already sent. A worker flushes its queue before it exits, so once it is seen dead
        its last "done" is here even if the wait for results timed out just before it arrived."""
        while True:
            try:
                message = self.results.get_nowait()
            except queue.Empty:
                return
            if (outcome := self._take(message)) is not None:
                self.ready.append(outcome)

    def _check_workers(self, pending: set[str]) -> PartitionOutcome | None:
        """A worker that died without reporting fails the partition it held; a replacement is started."""
        dead = [pid for pid, p in self.procs.items() if not p.is_alive()]
        if dead:
            self._drain()
        for pid in dead:
            p = self.procs.pop(pid)
            key = self.held.pop(pid, None)
            if p.exitcode not in (0, None) and self.replacements > 0:
                self.replacements -= 1
                self._spawn()
            if key is not None and key in pending:
                log.error("worker %d died (exit code %s) while running %s", pid, p.exitcode, key)
                self.ready.append(PartitionOutcome(key=key, status="failed", failure=FailedPartition(
                    partition=key, stage="run", reason="worker_died", message=f"exit code {p.exitcode}")))
        if self.ready:
            return self.ready.popleft()
        if not self.procs:
            raise RuntimeError(f"every worker exited with {len(pending)} partitions left; see the log file")
        return None

    def interrupt(self) -> None:
        """Forward one SIGINT to each live worker, wait for their clean-up, kill what is still alive after that."""
        for p in self.procs.values():
            if p.is_alive() and p.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        try:
            for p in self.procs.values():
                p.join(max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
            pass
        for p in self.procs.values():
            if p.is_alive():
                p.kill()
                p.join(5)

    def close(self) -> None:
        """Let idle workers go (sentinels are harmless extras after a normal end), then reap them. Workers that
        were never given a partition hold no run and no container: stopped at once rather than waited for (they
        may still be loading the definitions, which made a warm run with nothing to do wait seconds for them)."""
        if not self.dispatched:
            for p in self.procs.values():
                p.kill()
        for _ in self.procs:
            self.tasks.put(None)
        for p in self.procs.values():
            p.join(10)
            if p.is_alive():
                p.kill()
        for q in (self.tasks, self.results):
            q.cancel_join_thread()
            q.close()
