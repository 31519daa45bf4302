"""Scale-out deployment, for real: Debian's PostgreSQL as Dagster's storage, the project image built from our
Dockerfile, a `dagster-daemon` dequeuing runs, and the DockerRunLauncher starting each run in a container.

One crawl run and one partitioned run (a skill's snapshot) go through the launcher; the test then reads the
result back from Postgres and the artifact store the container wrote to.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import dagster as dg
import pytest
import yaml

from tests.ops.conftest import REPO, run_script, unavailable
from tests.support.distributed import wait_run
from tests.support.hub import make_hub, write_sources

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.dagster, pytest.mark.timeout(900)]

VENV_BIN = REPO / ".venv" / "bin"
SCALE_OUT = REPO / "deploy" / "scale-out" / "dagster.yaml"


@pytest.fixture
def postgres_url():
    """A fresh database per test (the script creates it), dropped afterwards."""
    db = f"s2e_test_{uuid.uuid4().hex[:8]}"
    url = run_script("scripts/postgres-up.sh", env={"S2E_PG_DB": db}, timeout=300)
    if not url.startswith("postgresql"):
        unavailable(f"postgres-up.sh printed no URL: {url!r}")
    yield url
    subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-qc", f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'],
                   capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def run_image(docker_engine) -> str:
    """The project image from ./Dockerfile (Docker's layer cache makes repeat builds quick)."""
    return run_script("deploy/build-image.sh", timeout=900)


def _home(root: Path) -> Path:
    """DAGSTER_HOME with the shipped scale-out config, volumes pointed at this test's folder."""
    home = root / "dagster_home"
    home.mkdir(parents=True)
    config = yaml.safe_load(SCALE_OUT.read_text())
    config["run_launcher"]["config"]["container_kwargs"]["volumes"] = [
        "/var/run/docker.sock:/var/run/docker.sock", f"{root}:{root}"]
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return home


def _cli(env: dict[str, str], *args: str) -> None:
    proc = subprocess.run([str(VENV_BIN / "dagster"), *args, "-w", str(REPO / "workspace.yaml")], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"dagster {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"


def _why(instance: dg.DagsterInstance, run: dg.DagsterRun) -> str:
    """The run's own error events, and its container's log when it got that far."""
    events = [f"{e.dagster_event_type}: {e.message} {getattr(e.dagster_event, 'event_specific_data', '')}"[:1500]
              for e in instance.all_logs(run.run_id) if (e.is_dagster_event and "FAIL" in str(e.dagster_event_type))
              or (e.dagster_event_type and "ENGINE" in str(e.dagster_event_type))]
    cid = run.tags.get("docker/container_id")
    logs = subprocess.run(["docker", "logs", "--tail", "60", cid], capture_output=True, text=True,
                          timeout=30) if cid else None
    return "\n".join(events) + (f"\n--- container log ---\n{logs.stdout}{logs.stderr}" if logs else "")


def test_partitioned_run_through_docker_run_launcher_on_postgres(tmp_path, postgres_url, run_image, monkeypatch):
    root = tmp_path.resolve()
    hub = make_hub(root / "hub", ("csv-cleaner",))
    sources = write_sources(root / "sources.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}], root / "cache")
    env = {"DAGSTER_HOME": str(_home(root)), "S2E_PG_URL": postgres_url, "S2E_RUN_IMAGE": run_image,
           "S2E_ARTIFACTS_DIR": str(root / "artifacts"), "S2E_SOURCES": str(sources)}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    full_env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    # As operations.md says: create the schema once before two processes race to create it on a fresh database
    # (Postgres refuses the loser with `type "runs" already exists`).
    migrate = subprocess.run([str(VENV_BIN / "dagster"), "instance", "migrate"], cwd=REPO, env=full_env,
                             capture_output=True, text=True, timeout=120)
    assert migrate.returncode == 0, f"dagster instance migrate failed:\n{migrate.stdout}\n{migrate.stderr}"

    # Keep the change sensor from launching its own runs in the middle of this one-skill scenario. Stopped before
    # the daemon starts: both write the sensor's state on first sight, and the loser of that race is refused
    # ("InstigatorState ... is already present in storage").
    _cli(full_env, "sensor", "stop", "skillhub_change_sensor")
    with open(root / "daemon.log", "wb") as log:
        daemon = subprocess.Popen([str(VENV_BIN / "dagster-daemon"), "run", "-w", str(REPO / "workspace.yaml")],
                                  cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    run_ids = [str(uuid.uuid4()), str(uuid.uuid4())]
    try:
        with dg.DagsterInstance.get() as instance:
            assert type(instance.run_launcher).__name__ == "DockerRunLauncher"
            assert "postgres" in type(instance.run_storage).__module__

            _cli(full_env, "job", "launch", "-j", "skillhub_crawl_job", "--run-id", run_ids[0])
            crawl = wait_run(instance, run_ids[0])
            assert crawl.status == dg.DagsterRunStatus.SUCCESS, _why(instance, crawl)
            assert instance.get_dynamic_partitions("skills") == ["t__csv-cleaner"]

            _cli(full_env, "job", "launch", "-j", "skill_snapshot_refresh", "--run-id", run_ids[1],
                 "--tags", '{"dagster/partition": "t__csv-cleaner"}')
            snap = wait_run(instance, run_ids[1])
            assert snap.status == dg.DagsterRunStatus.SUCCESS, _why(instance, snap)
            assert snap.tags["dagster/image"] == run_image and snap.tags.get("docker/container_id")

            flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey("skillhub_snapshot"), asset_partitions=["t__csv-cleaner"])
            records = instance.fetch_materializations(flt, limit=5).records
            assert [r.run_id for r in records] == [run_ids[1]]
            assert (root / "artifacts" / "skillhub_snapshot" / "t__csv-cleaner.json").is_file()
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)  # the group this test started
        for run_id in run_ids:
            ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=dagster/run_id={run_id}"],
                                 capture_output=True, text=True).stdout.split()
            if ids:
                subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
