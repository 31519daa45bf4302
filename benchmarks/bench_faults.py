"""Faults that must lose nothing, repeated: a Docker engine restart mid-gate (and a Postgres outage mid-run, see
--pg-trials).

Usage:
  .venv/bin/python benchmarks/bench_faults.py --work /tmp/faults --engine-trials 5

--engine-trials  per trial, `skill2env run` on one example skill (log-triage-awk, offline generator) with its gates
                 on a private dockerd of ours (tests/support/engine.py: own socket, data-root, exec-root; never the
                 machine's engine), restarted as soon as the first Oracle's solve.sh starts (the engine's event
                 stream is the trigger). Counts: runs that exit 0, tasks rejected for the engine (target 0), tasks
                 left as infrastructure errors, step retries of task_bundles/gate_reports, wall time.
Figures go to WORK/figures.json with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.artifacts import TASKS
from skill2env_dagster.cli.runner.home import RunHome
from skill2env_dagster.reasons import INFRA_CODES
from skill2env_dagster.store import ArtifactStore
from tests.support.engine import PrivateEngine, RestartOnExec

REPO = Path(__file__).resolve().parents[1]
SKILL = "log-triage-awk"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def skill_run(hub: Path, out: Path, env: dict[str, str]) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "skill2env_dagster", "run", str(hub), "--out", str(out), "--max-variants", "1",
           "--skip-docker-up", "--json"]
    keep = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "S2E_ARTIFACTS_DIR", "S2E_SOURCES")}
    done = subprocess.run(cmd, capture_output=True, text=True, env={**keep, **env}, timeout=1800)
    return done.returncode, done.stderr[-2000:]


def step_retries(out: Path) -> list[str]:
    with dg.DagsterInstance.from_config(str(RunHome(out.resolve()).dagster_home)) as instance:
        return [str(rec.event_log_entry.step_key) for run in instance.get_runs()
                for rec in instance.get_records_for_run(
                    run_id=run.run_id, of_type=dg.DagsterEventType.STEP_UP_FOR_RETRY).records]


def engine_trials(work: Path, trials: int) -> dict[str, Any]:
    hub = work / "hub"
    shutil.copytree(REPO / "examples" / "skillhub" / SKILL, hub / SKILL, dirs_exist_ok=True)
    engine = PrivateEngine(Path(tempfile.mkdtemp(prefix="s2e-eng-", dir="/tmp")))
    engine.start()
    rows = []
    try:
        for i in range(trials):
            out = work / f"engine-{i}"
            shutil.rmtree(out, ignore_errors=True)
            start, before = time.perf_counter(), load()
            with RestartOnExec(engine, "solve.sh") as trigger:
                code, err = skill_run(hub, out, {"DOCKER_HOST": engine.url})
            bundles = ArtifactStore(out / "artifacts").load(TASKS, f"hub__{SKILL}").bundles if code == 0 else []
            row = {"trial": i, "exit": code, "restarts": trigger.restarts,
                   "seconds": round(time.perf_counter() - start, 1),
                   "retained": sum(b.status == "retained" for b in bundles),
                   "rejected_for_infra": sum(b.status == "rejected" and any(r in INFRA_CODES for r in b.reasons)
                                             for b in bundles),
                   "infra_errors": sum(b.status == "error" for b in bundles),
                   "step_retries": step_retries(out), "load": f"{before} -> {load()}"}
            if code != 0:
                row["stderr"] = err
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        engine.remove()
    return {"trials": rows, "ok": sum(r["exit"] == 0 and r["restarts"] == 1 and r["rejected_for_infra"] == 0
                                      and r["infra_errors"] == 0 and r["retained"] >= 1 for r in rows)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--engine-trials", type=int, default=0)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"load_start": load()}
    if a.engine_trials:
        figures["engine_restart"] = engine_trials(a.work, a.engine_trials)
        print(f"engine restart mid-gate: {figures['engine_restart']['ok']}/{a.engine_trials} trials ok", flush=True)
    figures["load_end"] = load()
    (a.work / "figures.json").write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
