"""The distributed deployment for real: Dagster's storage in Postgres, the run queue and run monitoring in a
`dagster-daemon` on this (head) host, and two worker hosts - containers of the project image, each a Celery worker
of dagster-celery - taking whole runs from the broker (the same Postgres, through kombu's SQLAlchemy transport).

One scenario, in the order a deployment meets it: the crawl and a snapshot batch run through the hosts; skill
runs spread over both hosts; then a worker is killed (kill -9) in the middle of a partition, run monitoring marks
that run failed and run retries re-launch it from the failed step, and the partition completes exactly once.

Nothing here is decided by timing: which host takes a run is fixed by stopping the other one; the kill lands while
the victim is frozen mid-task_bundles (Deployment.kill_run_worker); every wait ends on a state. The only clock is
the hang guard below (pytest-timeout): 126-261 s on a normal load, more than 600 s once at load 15.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import TASKS
from skill2env_dagster.store import ArtifactStore
from tests.ops.conftest import ONE_TASK, unavailable
from tests.support.distributed import DONE, UnavailableError, deployment, materializations, step_started, wait_run
from tests.support.hub import make_hub, write_sources

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.dagster]
HANG_GUARD_S = 3600  # a deployment that is stuck, not slow: no wait below has a shorter deadline of its own
VICTIM = "log-triage-awk"  # one of our example skills whose pipeline builds and gates tasks: something to interrupt
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "skillhub"
CHAIN = ["skillhub_snapshot", "skill_knowledge", "workflow_plans", "axis_samples", "task_bundles", "gate_reports"]


@pytest.fixture
def dist(tmp_path, docker_engine):
    hub = make_hub(tmp_path / "hub", ("csv-cleaner", "log-counter"))
    shutil.copytree(EXAMPLES / VICTIM, hub / VICTIM)
    sources = write_sources(tmp_path / "sources.yaml", [{"name": "t", "kind": "dir", "path": str(hub.resolve())}],
                            tmp_path / "cache")
    try:
        with deployment(tmp_path, sources, [("h1", ""), ("h2", "")]) as d, dg.DagsterInstance.get() as instance:
            yield d, instance
    except UnavailableError as e:
        unavailable(str(e))


@pytest.mark.timeout(HANG_GUARD_S)
def test_runs_spread_over_two_worker_hosts_and_a_killed_worker_is_retried(dist):
    d, instance = dist
    crawl = wait_run(instance, d.launch("skillhub_crawl_job"), HANG_GUARD_S)
    assert crawl.status == dg.DagsterRunStatus.SUCCESS
    keys = instance.get_dynamic_partitions("skills")
    assert keys == ["t__csv-cleaner", "t__log-counter", f"t__{VICTIM}"]

    batch = wait_run(instance, d.launch("skill_snapshot_refresh", {
        "dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}), HANG_GUARD_S)
    assert batch.status == dg.DagsterRunStatus.SUCCESS
    assert [materializations(instance, "skillhub_snapshot", k) for k in keys] == [1, 1, 1]

    # Each host executes runs: one skill's run while h2 is stopped goes to h1, the next one while h1 is stopped to
    # h2 (a deterministic way to say which host may take the next run from the broker).
    ran_on = []
    for key, busy in zip(keys[:2], reversed(d.hosts), strict=True):
        with d.stopped(busy):
            run = wait_run(instance, d.launch("skill_pipeline", {"dagster/partition": key}, ONE_TASK), HANG_GUARD_S)
        assert run.status == dg.DagsterRunStatus.SUCCESS
        ran_on.append(d.host_of(run))
    assert ran_on == d.hosts

    # kill -9 of the worker in the middle of the third skill's partition, once its tasks are being built: the host is
    # frozen before the run's state is read, so the run cannot end between that check and the kill. A run that had
    # already ended when its host froze is not a trial: the partition is launched again (a new victim).
    for _ in range(3):
        victim = d.launch("skill_pipeline", {"dagster/partition": keys[2]}, ONE_TASK)
        while not step_started(instance, victim, "task_bundles"):
            assert instance.get_run_by_id(victim).status not in DONE, "ended before task_bundles started"
            time.sleep(0.5)
        host = d.host_of(instance.get_run_by_id(victim))
        if d.kill_run_worker(host, lambda v=victim: instance.get_run_by_id(v).status not in DONE):
            break
        wait_run(instance, victim, HANG_GUARD_S)
    else:
        pytest.fail("the victim's run ended before its host froze, 3 times in a row")
    failed = wait_run(instance, victim, HANG_GUARD_S)
    assert failed.status == dg.DagsterRunStatus.FAILURE
    while not (retries := instance.get_runs(filters=dg.RunsFilter(tags={"dagster/parent_run_id": victim}))):
        time.sleep(1)  # run monitoring marks the run failed, then the daemon's run retries re-launch it
    retried = wait_run(instance, retries[0].run_id, HANG_GUARD_S)
    assert retried.status == dg.DagsterRunStatus.SUCCESS

    # Exactly once: the killed run and its retry materialized every asset of the partition once between them (the
    # retry ran from the failed step), and the bundle lists each task once.
    pair = {victim, retried.run_id}
    assert {a: materializations(instance, a, keys[2], pair) for a in CHAIN} == dict.fromkeys(CHAIN, 1)
    names = [b.task_name for b in ArtifactStore(d.root / "artifacts").load(TASKS, keys[2]).bundles]
    assert names, f"{VICTIM} built no task: the kill interrupted no task building"
    assert len(names) == len(set(names))
    assert [p for p in (d.root / "artifacts").rglob("*.tmp") if ".staging" not in p.parts] == []
