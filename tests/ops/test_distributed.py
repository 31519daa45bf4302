"""The distributed deployment for real: Dagster's storage in Postgres, the run queue and run monitoring in a
`dagster-daemon` on this (head) host, and two worker hosts - containers of the project image, each a Celery worker
of dagster-celery - taking whole runs from the broker (the same Postgres, through kombu's SQLAlchemy transport).

One scenario, in the order a deployment meets it: the crawl and a snapshot batch run through the hosts; skill
runs spread over both hosts; then a worker is killed (kill -9) in the middle of a partition, run monitoring marks
that run failed and run retries re-launch it from the failed step, and the partition completes exactly once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid

import dagster as dg
import pytest

from skill2env_dagster.artifacts import TASKS
from skill2env_dagster.store import ArtifactStore
from tests.ops.conftest import REPO, run_script, unavailable
from tests.support.hub import make_hub, write_sources

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.dagster]

VENV_BIN = REPO / ".venv" / "bin"
CELERY = REPO / "deploy" / "celery"
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
HOSTS = ("h1", "h2")


@pytest.fixture
def deployment(tmp_path, docker_engine, monkeypatch):
    """Postgres database, instance config, daemon and two worker hosts; everything removed afterwards."""
    db = f"s2e_dist_{uuid.uuid4().hex[:8]}"
    pg = run_script("scripts/postgres-up.sh", env={"S2E_PG_DB": db}, timeout=300)
    if not pg.startswith("postgresql"):
        unavailable(f"postgres-up.sh printed no URL: {pg!r}")
    image = run_script("deploy/build-image.sh", timeout=1800)
    root = tmp_path.resolve()
    hub = make_hub(root / "hub")
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(CELERY / "dagster.yaml", home / "dagster.yaml")
    label = f"s2e-dist-{uuid.uuid4().hex[:8]}"
    env = {"DAGSTER_HOME": str(home), "S2E_PG_URL": pg, "S2E_BROKER_URL": f"sqla+{pg}",
           "S2E_RESULTS_URL": f"db+{pg}", "S2E_ARTIFACTS_DIR": str(root / "artifacts"), "S2E_RUN_IMAGE": image,
           "S2E_SOURCES": str(write_sources(root / "sources.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}],
                                            root / "cache")),
           "S2E_STATE_DIR": str(root / "state"), "S2E_GATE_LABEL": label}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    full = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    # The gates' base images: recorded where every host reads them (the shared state dir).
    subprocess.run([str(VENV_BIN / "skill2env"), "base-images"], env=full, check=True, capture_output=True)
    _dagster(full, "instance", "migrate")
    _dagster(full, "instance", "concurrency", "set", "docker", "4")  # deployment-wide: 2 per host
    _dagster(full, "instance", "concurrency", "set", "llm", "4")
    with open(root / "daemon.log", "wb") as log:
        daemon = subprocess.Popen([str(VENV_BIN / "dagster-daemon"), "run", "-w", str(REPO / "workspace.yaml")],
                                  cwd=REPO, env=full, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    hosts = []
    try:
        _dagster(full, "sensor", "stop", "skillhub_change_sensor", "-w", str(REPO / "workspace.yaml"))
        for name in HOSTS:
            cid = subprocess.run(["bash", str(CELERY / "worker-host.sh"), f"{label}-{name}", "", "1"], env=full,
                                 capture_output=True, text=True, timeout=120)
            assert cid.returncode == 0, cid.stderr
            hosts.append(f"s2e-host-{label}-{name}")
        with dg.DagsterInstance.get() as instance:
            yield instance, full, hosts, root
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
        for h in hosts:
            with open(root / f"{h}.log", "w") as out:
                subprocess.run(["docker", "logs", h], stdout=out, stderr=subprocess.STDOUT)
            subprocess.run(["docker", "rm", "-f", h], capture_output=True)
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=skill2env.gate={label}"],
                             capture_output=True, text=True).stdout.split()
        if ids:  # gate containers a killed worker left behind (ours only: the label is this test's)
            subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
        drop = f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'
        subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-qc", drop], capture_output=True, timeout=60)


def _dagster(env: dict[str, str], *args: str) -> None:
    proc = subprocess.run([str(VENV_BIN / "dagster"), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, f"dagster {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"


def _launch(env: dict[str, str], job: str, tags: dict[str, str] | None = None) -> str:
    run_id = str(uuid.uuid4())
    extra = ["--tags", json.dumps(tags)] if tags else []
    _dagster(env, "job", "launch", "-w", str(REPO / "workspace.yaml"), "-j", job, "--run-id", run_id, *extra)
    return run_id


def _wait(instance: dg.DagsterInstance, run_id: str, timeout: float = 600) -> dg.DagsterRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status in DONE:
            return run
        time.sleep(1)
    raise TimeoutError(f"run {run_id} not finished after {timeout}s")


def _host_of(hosts: list[str], run: dg.DagsterRun) -> str:
    """The worker host whose Celery worker received the run's task (its log names the task id)."""
    task = run.tags["dagster-celery/task_id"]
    for h in hosts:
        if task in subprocess.run(["docker", "logs", h], capture_output=True, text=True).stderr:
            return h
    raise AssertionError(f"no host received task {task}")


def _materializations(instance: dg.DagsterInstance, asset: str, key: str, runs: set[str] | None = None) -> int:
    flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key])
    return sum(runs is None or r.run_id in runs for r in instance.fetch_materializations(flt, limit=50).records)


def _step_started(instance: dg.DagsterInstance, run_id: str, step: str) -> bool:
    return any(e.dagster_event is not None and e.dagster_event.event_type_value == "STEP_START"
               and e.dagster_event.step_key == step for e in instance.all_logs(run_id))


def _kill_run_worker(host: str) -> None:
    """kill -9 of the Celery pool process executing the run (a child of the worker's main process, PID 1)."""
    script = ("import os, signal\n"
              "for p in os.listdir('/proc'):\n"
              "    if p.isdigit() and int(p) != os.getpid() and open(f'/proc/{p}/stat').read().split(')')[-1]"
              ".split()[1] == '1':\n"
              "        os.kill(int(p), signal.SIGKILL)\n")
    subprocess.run(["docker", "exec", host, "python", "-c", script], check=True, timeout=60)


def test_runs_spread_over_two_worker_hosts_and_a_killed_worker_is_retried(deployment):
    instance, env, hosts, root = deployment
    crawl = _wait(instance, _launch(env, "skillhub_crawl_job"))
    assert crawl.status == dg.DagsterRunStatus.SUCCESS
    keys = instance.get_dynamic_partitions("skills")
    assert keys == ["t__csv-cleaner", "t__log-counter", "t__unit-converter"]

    batch = _wait(instance, _launch(env, "skill_snapshot_refresh", {
        "dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}))
    assert batch.status == dg.DagsterRunStatus.SUCCESS
    assert [_materializations(instance, "skillhub_snapshot", k) for k in keys] == [1, 1, 1]

    # Two skills in one backfill: its runs are queued together, and each worker host (concurrency 1) takes one.
    _dagster(env, "job", "backfill", "-w", str(REPO / "workspace.yaml"), "-j", "skill_pipeline", "--partitions",
             ",".join(keys[:2]), "--noprompt")
    deadline = time.monotonic() + 300
    while len(first := instance.get_runs(filters=dg.RunsFilter(job_name="skill_pipeline"))) < 2:
        assert time.monotonic() < deadline, "the backfill launched no runs"
        time.sleep(1)
    done = [_wait(instance, r.run_id) for r in first]
    assert [r.status for r in done] == [dg.DagsterRunStatus.SUCCESS] * 2
    assert {_host_of(hosts, r) for r in done} == set(hosts)

    # kill -9 of the worker in the middle of the third skill's partition (once its tasks are being built).
    victim = _launch(env, "skill_pipeline", {"dagster/partition": keys[2]})
    deadline = time.monotonic() + 600
    while not _step_started(instance, victim, "task_bundles"):
        assert time.monotonic() < deadline, "task_bundles never started"
        assert instance.get_run_by_id(victim).status not in DONE, "the run ended before the kill"
        time.sleep(0.5)
    _kill_run_worker(_host_of(hosts, instance.get_run_by_id(victim)))
    failed = _wait(instance, victim)
    assert failed.status == dg.DagsterRunStatus.FAILURE
    deadline = time.monotonic() + 300
    while not (retries := instance.get_runs(filters=dg.RunsFilter(tags={"dagster/parent_run_id": victim}))):
        assert time.monotonic() < deadline, "run retries never re-launched the killed run"
        time.sleep(1)
    retried = _wait(instance, retries[0].run_id)
    assert retried.status == dg.DagsterRunStatus.SUCCESS

    # Exactly once: the killed run and its retry materialized every asset of the partition once between them (the
    # retry ran from the failed step), and the retained tasks are the bundle's, each once.
    chain = ["skillhub_snapshot", "skill_knowledge", "workflow_plans", "axis_samples", "task_bundles", "gate_reports"]
    pair = {victim, retried.run_id}
    assert {a: _materializations(instance, a, keys[2], pair) for a in chain} == dict.fromkeys(chain, 1)
    bundle = ArtifactStore(root / "artifacts").load(TASKS, keys[2])
    names = [b.task_name for b in bundle.bundles]
    assert len(names) == len(set(names))
    store_tmp = [p for p in (root / "artifacts").rglob("*.tmp") if ".staging" not in p.parts]
    assert store_tmp == []
