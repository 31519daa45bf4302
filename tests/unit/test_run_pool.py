"""The run's worker pool: workers that were never given a partition do not hold up the end of a run, and a
worker's last outcome is never mistaken for its death."""

from __future__ import annotations

import os
import queue
import signal
import time

from skill2env_dagster.cli.runner import pool as pool_module
from skill2env_dagster.cli.runner.outcome import PartitionOutcome
from skill2env_dagster.cli.runner.pool import WorkerInit, WorkerPool


def _init(tmp_path) -> WorkerInit:
    return WorkerInit(out=str(tmp_path), settings={}, tags={}, log_file=str(tmp_path / "log"), verbose=False)


def _slow_start(init, tasks, results) -> None:  # a worker still loading the definitions (never done by itself)
    time.sleep(600)


def _spy(p, events: list[tuple[str, int]]) -> None:
    """Record each kill and join of process `p` in `events`."""
    kill, join = p.kill, p.join

    def spy_kill() -> None:
        events.append(("kill", p.pid))
        kill()

    def spy_join(timeout: float | None = None) -> None:
        events.append(("join", p.pid))
        join(timeout)

    p.kill, p.join = spy_kill, spy_join


def test_idle_workers_are_stopped_at_once_when_there_was_nothing_to_do(tmp_path, monkeypatch):
    """Each idle worker is killed before it is waited for: a join first would block for as long as the worker
    takes to load the definitions (seconds per worker at the end of a warm run with nothing to do)."""
    monkeypatch.setattr(pool_module, "worker_main", _slow_start)
    pool = WorkerPool(_init(tmp_path), workers=2)
    pool.start()
    events: list[tuple[str, int]] = []
    for p in pool.procs.values():
        _spy(p, events)
    assert list(pool.outcomes([])) == []
    pool.close()
    for pid, p in pool.procs.items():
        assert next(e for e, of in events if of == pid) == "kill", events
        assert p.exitcode == -signal.SIGKILL


def _report_and_exit(init, tasks, results) -> None:
    """A worker that finishes its partition and exits at once (its last messages are flushed before it dies)."""
    done = PartitionOutcome(key="hub__a", status="ran", runs=1)
    results.put(("start", os.getpid(), "hub__a"))
    results.put(("done", os.getpid(), done.model_dump_json()))


def test_a_worker_that_reported_and_exited_is_not_taken_for_dead(tmp_path, monkeypatch):
    """The wait for results may time out just before a worker's last outcome arrives, and the worker may exit
    right after sending it: the pool must read that outcome, not fail the partition as `worker_died`."""
    monkeypatch.setattr(pool_module, "worker_main", _report_and_exit)
    pool = WorkerPool(_init(tmp_path), workers=1)
    pool.start()
    for p in pool.procs.values():
        p.join()  # the worker has sent both messages and exited
    real_get, calls = pool.results.get, []

    def get(block: bool = True, timeout: float | None = None):
        calls.append(timeout)
        if len(calls) == 1:
            raise queue.Empty  # this wait timed out just before the messages arrived
        return real_get(block, timeout)

    monkeypatch.setattr(pool.results, "get", get)
    try:
        outcomes = list(pool.outcomes([("hub__a", True, None)]))
    finally:
        pool.close()
    assert [(o.key, o.status) for o in outcomes] == [("hub__a", "ran")]
