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
The head (daemon, run queue, Postgres) and the Docker engine are not pinned: they share the hosts' cores, and the
speed-up prints their CPU seconds per run, the machine's busy cores and each run's queued/running time, so that a
figure below target says where the time went. Figures go to WORK/figures.json too, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.artifacts import TASKS
from skill2env_dagster.store import ArtifactStore
from tests.support.distributed import (
    DONE,
    Deployment,
    deployment,
    hub_sources,
    materializations,
    step_started,
    wait_run,
)

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


def speed(hub: Path, work: Path, hosts: int, n: int, seed: int, concurrency: int,
          pg_env: dict[str, str]) -> dict[str, Any]:
    pinned = [(f"h{i + 1}", str(i)) for i in range(hosts)]
    root = work / f"hosts{hosts}"
    with deployment(root, hub_sources(root, hub), pinned, concurrency, pg_env=pg_env) as d, \
            dg.DagsterInstance.get() as instance:
        eligible = prepare(d, instance)
        chosen = sorted(random.Random(seed).sample(eligible, min(n, len(eligible))))
        cpu0 = {h: host_cpu_s(h) for h in d.hosts}
        others0 = other_cpu_s(d)
        start_load, t0, since = load(), time.monotonic(), time.time()
        d.backfill("skill_pipeline", chosen)
        deadline = time.monotonic() + 6 * 3600
        while True:
            runs = instance.get_runs(filters=dg.RunsFilter(
                job_name="skill_pipeline", created_after=datetime.fromtimestamp(since - 5, tz=UTC)))
            if len(runs) >= len(chosen) and all(r.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)
                                                for r in runs):
                break
            assert time.monotonic() < deadline, "the backfill did not finish"
            time.sleep(2)
        wall = time.monotonic() - t0
        cpu = {h[-2:]: round(host_cpu_s(h) - cpu0[h], 1) for h in d.hosts}
        others = {k: round(v - others0[k], 1) for k, v in other_cpu_s(d).items()}
        by_host: dict[str, int] = {}
        for r in runs:
            h = d.host_of(r)
            by_host[h[-2:]] = by_host.get(h[-2:], 0) + 1
        records = instance.get_run_records(filters=dg.RunsFilter(run_ids=[r.run_id for r in runs]))
        store = ArtifactStore(d.root / "artifacts")
        return {"hosts": hosts, "skills": len(chosen), "wall_s": round(wall, 1),
                "failed": sum(r.status == dg.DagsterRunStatus.FAILURE for r in runs), "runs_by_host": by_host,
                "cpu_s_by_host": cpu, "cpu_s_elsewhere": others,
                "timeline": timeline(records, hosts * concurrency, wall),
                "tasks": sum(len(store.load(TASKS, k).bundles) for k in chosen if store.exists(TASKS, k)),
                "load_before": start_load, "load_after": load()}


def timeline(records: list[Any], slots: int, wall: float) -> dict[str, float]:
    """Where a backfill's wall time went, from Dagster's run records: queued (created -> started: the daemon's run
    queue and the broker), running (started -> ended), and the share of the hosts' run slots that were busy."""
    spans = [(r.create_timestamp.timestamp(), r.start_time, r.end_time) for r in records
             if r.start_time and r.end_time]
    if not spans:
        return {}
    running = sorted(e - s for _, s, e in spans)
    return {"runs": len(spans), "queued_mean_s": round(sum(s - c for c, s, _ in spans) / len(spans), 1),
            "run_mean_s": round(sum(running) / len(running), 1), "run_median_s": round(running[len(running) // 2], 1),
            "run_max_s": round(running[-1], 1), "slot_busy": round(sum(running) / (slots * wall), 2)}


def other_cpu_s(d: Deployment) -> dict[str, float]:
    """CPU seconds (cumulative) of what is not a worker host: the head (its code server and daemon with their
    children), the deployment's Postgres cluster, the Docker engine (dockerd + containerd: shared with anything else
    on this machine) and the whole machine (/proc/stat: everyone's). On this 2-core machine they share the cores
    the hosts are pinned to."""
    port = d.env["S2E_PG_URL"].rsplit(":", 1)[1].split("/")[0]
    clusters = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True).stdout.splitlines()
    data = next((row.split()[5] for row in clusters if row.split()[2] == port), None)
    postmaster = int(Path(data, "postmaster.pid").read_text().split()[0]) if data else None
    engine = [int(p) for p in os.listdir("/proc") if p.isdigit() and _comm(p) in ("dockerd", "containerd")]
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    busy = sum(int(x) for i, x in enumerate(fields[:8]) if i not in (3, 4))  # all but idle and iowait
    return {"head": _tree_cpu_s(d.head_pids), "postgres": _tree_cpu_s([postmaster] if postmaster else []),
            "engine": _tree_cpu_s(engine), "machine": busy / os.sysconf("SC_CLK_TCK")}


def _comm(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _tree_cpu_s(roots: list[int]) -> float:
    """CPU seconds of these processes and all their descendants, live or ended (an ended child's time is in its
    parent's cutime/cstime once reaped)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(p)] = stat
        children.setdefault(int(stat[1]), []).append(int(p))
    total, todo, seen = 0, list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        total += sum(int(x) for x in stats[pid][11:15])  # utime stime cutime cstime
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


def host_cpu_s(host: str) -> float:
    """CPU seconds a worker host's container has used (cgroup v1 cpuacct, else v2 cpu.stat): its run workers, which
    do the work of the offline pipeline (its gate containers, short shell scripts, are not counted)."""
    cid = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", host], capture_output=True, text=True).stdout.strip()
    v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage")
    if v1.is_file():
        return int(v1.read_text()) / 1e9
    for v2 in (Path(f"/sys/fs/cgroup/docker/{cid}/cpu.stat"),
               Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cpu.stat")):
        if v2.is_file():
            return int(v2.read_text().split("usage_usec")[1].split()[0]) / 1e6
    return float("nan")


def orphans(label: str) -> int:
    """Gate containers of this deployment still there (none should be: no run is executing between trials)."""
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=skill2env.gate={label}"], capture_output=True,
                         text=True).stdout
    return len(out.split())


def kill_trials(hub: Path, work: Path, trials: int, seed: int, skills: list[str],
                pg_env: dict[str, str]) -> dict[str, Any]:
    lost = duplicated = dup_tasks = left = missed = 0
    rows = []
    with deployment(work / "kill", hub_sources(work / "kill", hub), [("h1", ""), ("h2", "")], 1,
                    pg_env=pg_env) as d, dg.DagsterInstance.get() as instance:
        eligible = prepare(d, instance)
        keys = ([f"hub__{skills[i % len(skills)]}" for i in range(2 * trials)] if skills
                else random.Random(seed).sample(eligible, min(2 * trials, len(eligible))))
        for key in keys:
            if len(rows) == trials:
                break
            assert key in eligible, f"{key} is not eligible"
            victim = d.launch("skill_pipeline", {"dagster/partition": key})
            while not step_started(instance, victim, "task_bundles"):
                assert instance.get_run_by_id(victim).status not in (dg.DagsterRunStatus.SUCCESS,
                                                                      dg.DagsterRunStatus.FAILURE)
                time.sleep(0.3)
            alive = d.kill_run_worker(d.host_of(instance.get_run_by_id(victim)),
                                      lambda v=victim: instance.get_run_by_id(v).status not in DONE)
            failed = wait_run(instance, victim)
            if not alive:  # it ended before its host froze: no trial
                print(f"  {key}: the run ended before the kill, trial not counted", flush=True)
                missed += 1
                continue
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
            n_left = orphans(d.label)
            left += n_left
            rows.append({"skill": key, "killed_run": failed.status.value, "retry": retried.status.value,
                         "materializations": counts, "tasks": len(names), "gate_containers_left": n_left,
                         "load": load()})
            print(f"  {key}: killed run {failed.status.value}, retry {retried.status.value}, {counts}, "
                  f"{len(names)} tasks, gate containers left {n_left}, load {load()}", flush=True)
    return {"trials": len(rows), "partitions_lost": lost, "partitions_duplicated": duplicated,
            "duplicate_tasks": dup_tasks, "gate_containers_left": left, "missed": missed, "rows": rows,
            "load_after": load()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hub", type=Path, required=True, help="a folder of skills (e.g. /work/shared/corpus/skills)")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--eligible", type=int, default=40)
    p.add_argument("--seed", type=int, default=26)
    p.add_argument("--concurrency", type=int, default=2, help="runs at once per worker host")
    p.add_argument("--speedup", action="store_true")
    p.add_argument("--kill-trials", type=int, default=0)
    p.add_argument("--kill-skills", default="", help="comma-separated skills of --hub to kill in turn (skills whose "
                   "task_bundles has work to interrupt; default: a seeded sample of the eligible ones)")
    p.add_argument("--pg-cluster", default="", help="a Postgres cluster of your own (scripts/postgres-up.sh)")
    p.add_argument("--pg-port", default="")
    a = p.parse_args()
    # Ctrl-C and kill end it through the deployment's `finally` (hosts, daemon, database removed), also when it was
    # started in the background with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    pg_env = {"S2E_PG_CLUSTER": a.pg_cluster, "S2E_PG_PORT": a.pg_port} if a.pg_cluster else {}
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    sources = a.hub.resolve()
    figures: dict[str, Any] = {}
    if a.speedup:
        for hosts in (1, 2):
            print(f"{hosts} host(s), load {load()} ...", flush=True)
            figures[f"hosts_{hosts}"] = speed(sources, work, hosts, a.eligible, a.seed, a.concurrency, pg_env)
            print(json.dumps(figures[f"hosts_{hosts}"]), flush=True)
        one, two = figures["hosts_1"]["wall_s"], figures["hosts_2"]["wall_s"]
        figures["speedup"] = round(one / two, 2)
        # What a machine with a free core per host would show if the runs are CPU-bound: the one host's CPU seconds
        # over the busier of the two hosts' (load on this shared machine does not change CPU seconds much).
        cpu1 = sum(figures["hosts_1"]["cpu_s_by_host"].values())
        cpu2 = max(figures["hosts_2"]["cpu_s_by_host"].values())
        figures["cpu_speedup"] = round(cpu1 / cpu2, 2) if cpu2 else None
        print(f"2 hosts vs 1: {figures['speedup']}x wall (target >= 1.6); CPU seconds {cpu1:.0f} on one host, "
              f"{figures['hosts_2']['cpu_s_by_host']} on two: {figures['cpu_speedup']}x")
        for h in ("hosts_1", "hosts_2"):
            f, runs = figures[h], figures[h]["skills"]
            per_run = {k: round(v / runs, 2) for k, v in
                       {"hosts": sum(f["cpu_s_by_host"].values()), **f["cpu_s_elsewhere"]}.items()}
            print(f"{h}: {f['tasks']} tasks; CPU seconds per run {per_run}; machine cores busy "
                  f"{f['cpu_s_elsewhere']['machine'] / f['wall_s']:.2f} of {os.cpu_count()}; runs {f['timeline']}")
    if a.kill_trials:
        figures["kill"] = kill_trials(sources, work, a.kill_trials, a.seed,
                                      [s for s in a.kill_skills.split(",") if s], pg_env)
        k = figures["kill"]
        print(f"kill -9 of a worker, {k['trials']} trials: partitions lost {k['partitions_lost']}, duplicated "
              f"{k['partitions_duplicated']}, duplicate tasks {k['duplicate_tasks']}, gate containers left "
              f"{k['gate_containers_left']} (target 0 each)")
    (work / "figures.json").write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
