"""Faults that must lose nothing, repeated: a Docker engine restart mid-gate (and a Postgres outage mid-run, see
--pg-trials).

Usage:
  .venv/bin/python benchmarks/bench_faults.py --work /tmp/faults --engine-trials 5

--engine-trials  per trial, `skill2env run` on one example skill (log-triage-awk, offline generator) with its gates
                 on a private dockerd of ours (tests/support/engine.py: own socket, data-root, exec-root; never the
                 machine's engine), restarted as soon as the first Oracle's solve.sh starts (the engine's event
                 stream is the trigger). Counts: runs that exit 0, tasks rejected for the engine (target 0), tasks
                 left as infrastructure errors, step retries of task_bundles/gate_reports, wall time.
--pg-trials      on a 1-host distributed deployment (deploy/celery; tests/support/distributed.py) whose Postgres
                 (Dagster's storage, the Celery broker and result backend) is a cluster of ours (--pg-cluster,
                 --pg-port; scripts/postgres-up.sh creates it), per trial one skill's pipeline run; once its
                 task_bundles step has started, the cluster is stopped until that step has done its work (its
                 last log line, in the worker's own log) and --outage seconds more, then started. Counts:
                 the run (failed or not), its run retries, materializations of each asset of the chain by the run
                 and its retries (target: exactly 1 each), duplicate task names.
Figures go to WORK/figures.json with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.artifacts import TASKS
from skill2env_dagster.cli.runner.home import RunHome
from skill2env_dagster.reasons import INFRA_CODES
from skill2env_dagster.store import ArtifactStore
from tests.support.distributed import deployment, hub_sources, materializations, step_started
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


CHAIN = ["skillhub_snapshot", "skill_knowledge", "workflow_plans", "axis_samples", "task_bundles", "gate_reports"]
DONE = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


def _pg(action: str, cluster: str) -> None:
    version = sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: [int(x) for x in v.split(".")])[-1]
    subprocess.run(["pg_ctlcluster", version, cluster, action, *(["-m", "fast"] if action == "stop" else [])],
                   check=True, capture_output=True, timeout=120)


def _poll(fn: Any, deadline: float) -> Any:
    """fn() until it returns something truthy; Postgres errors while it is down are waited out."""
    while time.monotonic() < deadline:
        try:
            got = fn()
            if got:
                return got
        except Exception:  # the storage is down (this is the fault under test): try again
            pass
        time.sleep(1)
    raise TimeoutError("gave up waiting")


def _worker_logged(host: str, since: str, markers: tuple[str, ...]) -> bool:
    log = subprocess.run(["docker", "logs", "--since", since, host], capture_output=True, text=True).stderr
    return any(m in log for m in markers)


def _chain_runs(instance: dg.DagsterInstance, first: str) -> list[dg.DagsterRun]:
    """The run and its run retries (each retry's parent is the run before it), in order."""
    runs = [instance.get_run_by_id(first)]
    while kids := instance.get_runs(filters=dg.RunsFilter(tags={"dagster/parent_run_id": runs[-1].run_id})):
        runs.append(kids[0])
    return runs


def pg_trials(work: Path, hub: Path, trials: int, cluster: str, port: str, outage: float, skills: list[str]
              ) -> dict[str, Any]:
    rows = []
    pg_env = {"S2E_PG_CLUSTER": cluster, "S2E_PG_PORT": port}
    with deployment(work / "pg", hub_sources(work / "pg", hub), [("h1", "")], 1, pg_env=pg_env) as d, \
            dg.DagsterInstance.get() as instance:
        from benchmarks.bench_distributed import prepare

        eligible = prepare(d, instance)
        for i in range(trials):
            key = f"hub__{skills[i % len(skills)]}"
            assert key in eligible, f"{key} is not an eligible skill of {hub}"
            start, before, since = time.perf_counter(), load(), str(int(time.time()))
            victim = d.launch("skill_pipeline", {"dagster/partition": key})
            _poll(lambda v=victim: step_started(instance, v, "task_bundles")
                  or instance.get_run_by_id(v).status in DONE, time.monotonic() + 900)
            tid = instance.get_run_by_id(victim).tags.get("dagster-celery/task_id", "?")
            _pg("stop", cluster)
            # Down until the step has finished its work and its next events (output, materialization) found no
            # database: the worker's own log is the marker (the event log is what is down): the step's last line,
            # or the run's task ending or failing to store its state; then --outage s more.
            _poll(partial(_worker_logged, d.hosts[0], since, (f"task_bundles skill={key} created=",
                                                               "Failed operation _store_result",
                                                               f"execute_job[{tid}] succeeded",
                                                               f"execute_job[{tid}] raised")),
                  time.monotonic() + 1800)
            time.sleep(outage)
            _pg("start", cluster)

            def finished(v: str = victim) -> list[dg.DagsterRun] | None:
                chain = _chain_runs(instance, v)
                last = chain[-1]
                if last.status == dg.DagsterRunStatus.SUCCESS or (
                        last.status in DONE and len(chain) > 2):  # max_retries 2
                    return chain
                return None

            chain = _poll(finished, time.monotonic() + 1800)
            ids = {r.run_id for r in chain}
            counts = {a: materializations(instance, a, key, ids) for a in CHAIN}
            names = [b.task_name for b in ArtifactStore(d.root / "artifacts").load(TASKS, key).bundles]
            row = {"skill": key, "runs": [r.status.value for r in chain], "materializations": counts,
                   "tasks": len(names), "duplicate_tasks": len(names) - len(set(names)),
                   "seconds": round(time.perf_counter() - start, 1), "load": f"{before} -> {load()}"}
            print(json.dumps(row), flush=True)
            rows.append(row)
    ok = sum(r["runs"][-1] == "SUCCESS" and all(c == 1 for c in r["materializations"].values())
             and r["duplicate_tasks"] == 0 for r in rows)
    return {"trials": rows, "ok": ok, "failed_then_retried": sum(len(r["runs"]) > 1 for r in rows)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--engine-trials", type=int, default=0)
    ap.add_argument("--pg-trials", type=int, default=0)
    ap.add_argument("--pg-cluster", default="s2e26")
    ap.add_argument("--pg-port", default="5499")
    ap.add_argument("--outage", type=float, default=15.0, help="seconds Postgres stays down")
    ap.add_argument("--hub", type=Path, default=REPO / "examples" / "skillhub")
    ap.add_argument("--pg-skills", default="log-triage-awk,invoice-reconciliation,skill-linter",
                    help="skills of --hub with tasks to gate (a trial per skill, in turn)")
    a = ap.parse_args()
    # Ctrl-C and kill end it through its `finally` blocks (engine, deployment, databases removed), also when it
    # was started in the background with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    a.work.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"load_start": load()}
    if a.engine_trials:
        figures["engine_restart"] = engine_trials(a.work, a.engine_trials)
        print(f"engine restart mid-gate: {figures['engine_restart']['ok']}/{a.engine_trials} trials ok", flush=True)
    if a.pg_trials:
        figures["pg_outage"] = pg_trials(a.work, a.hub, a.pg_trials, a.pg_cluster, a.pg_port, a.outage,
                                        a.pg_skills.split(","))
        p = figures["pg_outage"]
        print(f"Postgres outage mid-run: {p['ok']}/{a.pg_trials} trials complete exactly once "
              f"({p['failed_then_retried']} failed and were retried)", flush=True)
    figures["load_end"] = load()
    (a.work / "figures.json").write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
