"""`skill2env run --snapshots-only`: a hub's screening pass in batch runs (no engine needed), and its nightly
re-run on an unchanged hub launching no partition run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import dagster as dg
import pytest

from skill2env_dagster.cli.runner.home import RunHome
from tests.support.hub import make_hub, write_skill

pytestmark = pytest.mark.dagster


def _run(hub, out) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "S2E_ARTIFACTS_DIR", "S2E_SOURCES")}
    done = subprocess.run([sys.executable, "-m", "skill2env_dagster", "run", str(hub), "--out", str(out),
                           "--snapshots-only", "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _runs_by_job(out) -> dict[str, int]:
    with dg.DagsterInstance.from_config(str(RunHome(out).dagster_home)) as instance:
        runs = instance.get_runs()
    return {job: sum(r.job_name == job for r in runs) for job in sorted({r.job_name for r in runs})}


def test_snapshots_in_one_batch_run_then_nothing_on_an_unchanged_hub(tmp_path):
    hub = make_hub(tmp_path / "hub")
    for i in range(4):
        write_skill(hub, f"extra-{i}", body=f"Steps for job {i}: read `in{i}.csv`, keep rows where `qty > {i}`.")
    out = tmp_path / "out"
    first = _run(hub, out)
    assert first["skills_crawled"] == 7 and first["work"]["runs"] == 1 and first["work"]["ran"] == 7
    assert first["created"] == 0  # no plans, no tasks
    assert _runs_by_job(out) == {"skill_snapshot_refresh": 1, "skillhub_crawl_job": 1}

    again = _run(hub, out)
    assert again["work"]["runs"] == 0 and again["work"]["up_to_date"] == 7
    assert _runs_by_job(out) == {"skill_snapshot_refresh": 1, "skillhub_crawl_job": 2}

    write_skill(hub, "extra-2", body="Steps for job 2, now: read `in2.csv`, keep rows where `qty > 20`.")
    edited = _run(hub, out)
    assert edited["work"]["ran_partitions"] == ["hub__extra-2"] and edited["work"]["runs"] == 1
