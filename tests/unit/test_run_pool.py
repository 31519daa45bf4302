"""The run's worker pool: workers that were never given a partition do not hold up the end of a run."""

from __future__ import annotations

import time

from skill2env_dagster.cli.runner import pool as pool_module
from skill2env_dagster.cli.runner.pool import WorkerInit, WorkerPool


def _slow_start(init, tasks, results) -> None:  # a worker still loading the definitions
    time.sleep(60)


def test_idle_workers_are_stopped_at_once_when_there_was_nothing_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "worker_main", _slow_start)
    pool = WorkerPool(WorkerInit(out=str(tmp_path), settings={}, tags={}, log_file=str(tmp_path / "log"),
                                 verbose=False), workers=2)
    pool.start()
    assert list(pool.outcomes([])) == []
    start = time.monotonic()
    pool.close()
    assert time.monotonic() - start < 10  # a join would wait 10 s per worker
    assert not any(p.is_alive() for p in pool.procs.values())
