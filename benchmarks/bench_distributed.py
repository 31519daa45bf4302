"""The distributed deployment (deploy/celery) on one machine: worker hosts as containers, each pinned to its own
core, the offline generator; and kill -9 of a worker mid-partition, repeated.

Usage (a quiet machine: the speed-up is a timing; see docs/benchmarks.md):
  .venv/bin/python benchmarks/bench_distributed.py --hub /work/shared/corpus/skills --work /tmp/dist-bench \
      --eligible 40 --speedup --kill-trials 10

--speedup      the same >= --eligible eligible skills through 1 host (core 0) and through 2 hosts (cores 0 and 1),
               each on a fresh deployment: crawl, snapshot batches, then one backfill of skill_pipeline over the
               skills; wall time from the backfill to the last run's end (target: 2 hosts >= 1.6x faster)
--kill-trials  on a 2-host deployment, per trial one skill's pipeline run, kill -9 of its worker once
               task_bundles has started; counts partitions and assets lost (0 materializations by the run and its
               retry) or duplicated (> 1), and duplicate task names (target: 0 of each in 10 trials)
The head (daemon, run queue, Postgres) is not pinned. Figures go to WORK/figures.json too, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.artifacts import TASKS
from skill2env_dagster.store import ArtifactStore
from tests.support.distributed import (
    Deployment,
    deployment,
    materializations,
    step_started,
    wait_run,
)
from tests.support.hub import write_sources

CHAIN = ["skillhub_snapshot", "skill_knowledge", "workflow_plans", "axis_samples", "task_bundles", "gate_reports"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def prepare(d: Deployment, instance: dg.DagsterInstance) -> list[str]:
    """Crawl and every snapshot (batch runs) through the hosts; returns the eligible skills."""
    assert wait_run(instance, d.launch("skillhub_crawl_job")).status == dg.DagsterRunStatus.SUCCESS
    keys = instance.get_dynamic_partitions("skills")
    for i in range(0, len(keys), 200):
        part = keys[i:i + 200]
        run = wait_run(instance, d.launch("skill_snapshot_refresh", {
            "dagster/asset_partition_range_start": part[0], "dagster/asset_partition_range_end": part[-1]}))
        assert run.status == dg.DagsterRunStatus.SUCCESS
    store = ArtifactStore(d.root / "artifacts")
    from skill2env_dagster.artifacts import SNAPSHOT

    return [k for k in keys if store.load(SNAPSHOT, k).is_eligible]


def speed(hub_sources: Path, work: Path, hosts: int, n: int, seed: int, concurrency: int) -> dict[str, Any]:
    pinned = [(f"h{i + 1}", str(i)) for i in range(hosts)]
    with deployment(work / f"hosts{hosts}", hub_sources, pinned, concurrency) as d, \
            dg.DagsterInstance.get() as instance:
        eligible = prepare(d, instance)
        chosen = sorted(random.Random(seed).sample(eligible, min(n, len(eligible))))
        start_load, t0, since = load(), time.monotonic(), time.time()
        d.backfill("skill_pipeline", chosen)
        deadline = time.monotonic() + 6 * 3600
        while True:
            runs = [r for r in instance.get_runs(filters=dg.RunsFilter(job_name="skill_pipeline"))
                    if r.create_timestamp >= since - 5]
            if len(runs) >= len(chosen) and all(r.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)
                                                for r in runs):
                break
            assert time.monotonic() < deadline, "the backfill did not finish"
            time.sleep(2)
        wall = time.monotonic() - t0
        by_host: dict[str, int] = {}
        for r in runs:
            h = d.host_of(r)
            by_host[h[-2:]] = by_host.get(h[-2:], 0) + 1
        return {"hosts": hosts, "skills": len(chosen), "wall_s": round(wall, 1),
                "failed": sum(r.status == dg.DagsterRunStatus.FAILURE for r in runs), "runs_by_host": by_host,
                "load_before": start_load, "load_after": load()}


def kill_trials(hub_sources: Path, work: Path, trials: int, seed: int) -> dict[str, Any]:
    lost = duplicated = dup_tasks = 0
    rows = []
    with deployment(work / "kill", hub_sources, [("h1", ""), ("h2", "")], 1) as d, \
            dg.DagsterInstance.get() as instance:
        eligible = prepare(d, instance)
        for key in random.Random(seed).sample(eligible, min(trials, len(eligible))):
            victim = d.launch("skill_pipeline", {"dagster/partition": key})
            while not step_started(instance, victim, "task_bundles"):
                assert instance.get_run_by_id(victim).status not in (dg.DagsterRunStatus.SUCCESS,
                                                                      dg.DagsterRunStatus.FAILURE)
                time.sleep(0.3)
            d.kill_run_worker(d.host_of(instance.get_run_by_id(victim)))
            failed = wait_run(instance, victim)
            deadline = time.monotonic() + 600
            while not (retries := instance.get_runs(filters=dg.RunsFilter(tags={"dagster/parent_run_id": victim}))):
                assert time.monotonic() < deadline, f"{key}: no retry"
                time.sleep(1)
            retried = wait_run(instance, retries[0].run_id)
            counts = {a: materializations(instance, a, key, {victim, retried.run_id}) for a in CHAIN}
            names = [b.task_name for b in ArtifactStore(d.root / "artifacts").load(TASKS, key).bundles]
            lost += any(c == 0 for c in counts.values())
            duplicated += any(c > 1 for c in counts.values())
            dup_tasks += len(names) - len(set(names))
            rows.append({"skill": key, "killed_run": failed.status.value, "retry": retried.status.value,
                         "materializations": counts, "tasks": len(names)})
            print(f"  {key}: killed run {failed.status.value}, retry {retried.status.value}, {counts}", flush=True)
    return {"trials": len(rows), "partitions_lost": lost, "partitions_duplicated": duplicated,
            "duplicate_tasks": dup_tasks, "rows": rows, "load_after": load()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hub", type=Path, required=True, help="a folder of skills (e.g. /work/shared/corpus/skills)")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--eligible", type=int, default=40)
    p.add_argument("--seed", type=int, default=26)
    p.add_argument("--concurrency", type=int, default=2, help="runs at once per worker host")
    p.add_argument("--speedup", action="store_true")
    p.add_argument("--kill-trials", type=int, default=0)
    a = p.parse_args()
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    sources = write_sources(work / "sources.yaml", [{"name": "hub", "kind": "dir", "path": str(a.hub.resolve())}],
                            work / "cache")
    figures: dict[str, Any] = {}
    if a.speedup:
        for hosts in (1, 2):
            print(f"{hosts} host(s), load {load()} ...", flush=True)
            figures[f"hosts_{hosts}"] = speed(sources, work, hosts, a.eligible, a.seed, a.concurrency)
            print(json.dumps(figures[f"hosts_{hosts}"]), flush=True)
        one, two = figures["hosts_1"]["wall_s"], figures["hosts_2"]["wall_s"]
        figures["speedup"] = round(one / two, 2)
        print(f"2 hosts vs 1: {figures['speedup']}x (target >= 1.6)")
    if a.kill_trials:
        figures["kill"] = kill_trials(sources, work, a.kill_trials, a.seed)
        k = figures["kill"]
        print(f"kill -9 of a worker, {k['trials']} trials: partitions lost {k['partitions_lost']}, duplicated "
              f"{k['partitions_duplicated']}, duplicate tasks {k['duplicate_tasks']} (target 0 each)")
    (work / "figures.json").write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
