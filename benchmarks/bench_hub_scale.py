"""A real hub at scale: the ClawHub archive (or a seeded slice of it) through `skill2env run`, on Postgres.

Usage (the full archive; a quiet machine; see docs/benchmarks.md):
  .venv/bin/python benchmarks/bench_hub_scale.py --mirror /work/.mirror/dvcrn+openclaw-skills-marketplace/repo \
      --commit 67b1c2373b5a --work /tmp/hub-scale --pg-url "$(bash scripts/postgres-up.sh | tail -n1)"
  ... --limit 300          a seeded random slice of that many plugin folders (develop and check on this first)
  ... --steps extract,snapshots,warm,pipeline,report   (default: all, in that order; each may be run alone)

Steps:
  extract    the archive at --commit into WORK/hub with `git archive` (blobs missing from a partial mirror are left
             out and listed; never inside the repository); with --git, WORK/hub.git instead: a repository whose main
             is that commit's plugins/ minus the missing blobs (the mirror's objects borrowed, nothing copied),
             crawled as a git source - the nightly case, where an unchanged commit's records are reused
  snapshots  cold `skill2env run WORK/hub --snapshots-only`: the crawl, then every skill's snapshot partition in
             batch runs; prints crawl time, snapshot-partition time, runs launched (target <= skills / 100)
  warm       the same command again on the unchanged archive (the nightly refresh): wall time, partition runs
  pipeline   the full offline pipeline (plans, tasks, gates in Docker) on a seeded random --sample eligible skills
  report     Dagster's Postgres rows and size, the artifact store's disk, and the extrapolation to --target skills
             on N hosts from the measured per-skill costs

Every figure is written to WORK/figures.json as well; the machine's load average is printed beside each timing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SKILL2ENV = [sys.executable, "-m", "skill2env_dagster"]
HOSTS = (1, 2, 4, 10)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def git(mirror: Path, *args: str, **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(mirror), *args], check=True, capture_output=True, **kw)


def extract(mirror: Path, commit: str, hub: Path, limit: int | None, seed: int) -> dict[str, Any]:
    """The archive's skill folders at `commit`, minus blobs a partial mirror lacks (listed, never guessed)."""
    missing_ids = {line[1:] for line in git(mirror, "rev-list", "--objects", "--missing=print", commit,
                                            text=True).stdout.split() if line.startswith("?")}
    tree = git(mirror, "ls-tree", "-r", "-z", commit).stdout.decode().split("\0")
    paths = [(row.split("\t", 1)[1], row.split()[2]) for row in tree if "\t" in row]
    skills = sorted({p.rsplit("/", 1)[0] for p, _ in paths if p.endswith("/SKILL.md") and p.startswith("plugins/")})
    plugins = sorted({"/".join(s.split("/")[:2]) for s in skills})
    if limit is not None:
        plugins = sorted(random.Random(seed).sample(plugins, min(limit, len(plugins))))
    chosen = set(plugins)
    missing = sorted(p for p, oid in paths if oid in missing_ids and "/".join(p.split("/")[:2]) in chosen)
    hub.mkdir(parents=True, exist_ok=True)
    spec = [*plugins, *(f":(exclude){p}" for p in missing)]
    archive = subprocess.Popen(["git", "-C", str(mirror), "archive", "--format=tar", commit, "--", *spec],
                               stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-f", "-", "-C", str(hub)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit("git archive failed")
    n = sum(1 for _ in hub.rglob("SKILL.md"))
    return {"commit": commit, "plugins": len(plugins), "skill_md_files": n, "missing_blobs": missing}


def git_hub(mirror: Path, commit: str, repo: Path) -> dict[str, Any]:
    """A local git repository whose `main` is `commit`'s plugins/ folder minus the blobs a partial mirror lacks,
    borrowing the mirror's objects (alternates: no blob is copied). Crawled as a git source, the nightly case:
    an unchanged commit on every re-run (`git archive` of the original commit fails on the missing blobs)."""
    missing_ids = {line[1:] for line in git(mirror, "rev-list", "--objects", "--missing=print", commit,
                                            text=True).stdout.split() if line.startswith("?")}
    tree = git(mirror, "ls-tree", "-r", "-z", commit, "--", "plugins").stdout.decode().split("\0")
    missing = sorted(row.split("\t", 1)[1] for row in tree if "\t" in row and row.split()[2] in missing_ids)
    if not (repo / "HEAD").exists():
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    (repo / "objects" / "info" / "alternates").write_text(str(mirror.resolve() / "objects") + "\n")
    (repo / "bench-worktree").mkdir(exist_ok=True)  # index commands want a work tree; nothing is checked out
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / "bench-index"), "GIT_WORK_TREE": str(repo / "bench-worktree"),
           "GIT_AUTHOR_NAME": "bench",
           "GIT_AUTHOR_EMAIL": "bench@example.invalid", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.invalid", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}

    def g(*args: str, **kw: Any) -> str:
        return subprocess.run(["git", "--git-dir", str(repo), *args], env=env, check=True, capture_output=True,
                              text=True, **kw).stdout.strip()

    g("read-tree", "--empty")
    g("read-tree", "--prefix=plugins/", f"{commit}:plugins")
    if missing:
        g("update-index", "--force-remove", "-z", "--stdin", input="\0".join(missing) + "\0")
    head = g("commit-tree", g("write-tree"), "-m", f"{commit} plugins/ without {len(missing)} missing blobs")
    g("update-ref", "refs/heads/main", head)
    n = sum(1 for row in tree if row.endswith("/SKILL.md") and row.split("\t", 1)[1] not in missing)
    return {"commit": commit, "repo_commit": head, "skill_md_files": n, "missing_blobs": missing}


def instance_config(home: Path, pg_url: str | None) -> None:
    """The run's Dagster instance: the shipped local config, with Postgres storage when a URL is given."""
    config = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    config["telemetry"] = {"enabled": False}
    if pg_url:
        config["storage"] = {"postgres": {"postgres_url": pg_url}}
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    subprocess.run([str(REPO / ".venv" / "bin" / "dagster"), "instance", "migrate"], env=env, check=True,
                   capture_output=True)


def run(source: str, out: Path, workers: int, *extra: str) -> tuple[dict[str, Any], float, float]:
    """One `skill2env run`; returns its funnel, wall seconds and the start time (for the runs it launched)."""
    cmd = [*SKILL2ENV, "run", source, "--out", str(out), "--workers", str(workers), "--skip-docker-up", "--json",
           *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "S2E_ARTIFACTS_DIR", "S2E_SOURCES")}
    started = time.time()
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.monotonic() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"skill2env run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), wall, started


def runs_since(out: Path, since: float) -> dict[str, Any]:
    """Runs this step launched, by job, and the wall span and summed duration of the snapshot batch runs."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(out / "dagster_home")) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(created_after=_utc(since)))
        by_job: dict[str, int] = {}
        for r in runs:
            by_job[r.job_name] = by_job.get(r.job_name, 0) + 1
        stats = instance.get_run_records(filters=dg.RunsFilter(created_after=_utc(since),
                                                                job_name="skill_snapshot_refresh"))
        spans = [(s.start_time, s.end_time) for s in stats if s.start_time and s.end_time]
    return {"runs": len(runs), "by_job": by_job,
            "snapshot_runs_wall_s": round(max(e for _, e in spans) - min(s for s, _ in spans), 1) if spans else 0.0,
            "snapshot_runs_sum_s": round(sum(e - s for s, e in spans), 1)}


def _utc(ts: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC)


def crawl_seconds(out: Path) -> dict[str, float]:
    root = out / "artifacts" / "skillhub_crawl"
    sid = json.loads((root / "latest.json").read_text())["snapshot_id"]
    return json.loads((root / sid / "snapshot.json").read_text())["seconds"]


def eligible_sample(out: Path, n: int, seed: int) -> list[str]:
    import pyarrow.parquet as pq

    root = out / "artifacts" / "skillhub_crawl"
    sid = json.loads((root / "latest.json").read_text())["snapshot_id"]
    rows = pq.read_table(root / sid / "skills.parquet", columns=["skill_id", "status"]).to_pylist()
    eligible = sorted(r["skill_id"] for r in rows if r["status"] == "eligible")
    return sorted(random.Random(seed).sample(eligible, min(n, len(eligible))))


def storage_figures(out: Path, pg_url: str | None) -> dict[str, Any]:
    def du(p: Path) -> int:
        return int(subprocess.run(["du", "-sb", str(p)], capture_output=True, text=True).stdout.split()[0])

    figures: dict[str, Any] = {"artifacts_bytes": du(out / "artifacts"), "dagster_home_bytes": du(out / "dagster_home")}
    if pg_url:
        import sqlalchemy as sa

        with sa.create_engine(pg_url).connect() as c:
            tables = ["runs", "event_logs", "asset_keys", "asset_event_tags", "dynamic_partitions",
                      "concurrency_slots", "run_tags"]
            have = set(sa.inspect(c).get_table_names())
            figures["postgres_rows"] = {t: c.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar()
                                        for t in tables if t in have}
            figures["postgres_bytes"] = c.execute(sa.text("SELECT pg_database_size(current_database())")).scalar()
    return figures


def extrapolate(f: dict[str, Any], target: int) -> list[str]:
    """Time for `target` skills on N hosts of 2 cores from the measured per-skill costs: the crawl is one host's
    job (its parse and screen use that host's cores); snapshot batches and eligible skills spread over the hosts."""
    snaps, pipe = f["snapshots"], f.get("pipeline")
    skills = snaps["skills"]
    crawl_per = snaps["crawl_s"] / skills
    snap_per = snaps["snapshot_phase_s"] / skills
    eligible_share = snaps["eligible"] / skills
    lines = [f"per skill: crawl {crawl_per * 1000:.1f} ms, snapshot {snap_per * 1000:.1f} ms; eligible share "
             f"{eligible_share:.1%}"]
    if pipe:
        per_eligible = pipe["wall_s"] * pipe["workers"] / max(1, pipe["skills"])  # worker-seconds per skill
        lines.append(f"per eligible skill: {per_eligible:.1f} worker-seconds ({pipe['workers']} workers, "
                     f"{pipe['skills']} skills, {pipe['wall_s']:.0f} s)")
    for n in HOSTS:
        crawl = crawl_per * target
        snap = snap_per * target / n
        work = (eligible_share * target * per_eligible / (2 * n)) if pipe else 0.0
        total = crawl + snap + work
        lines.append(f"{target} skills on {n:>2} host(s): crawl {crawl / 3600:.2f} h + snapshots {snap / 3600:.2f} h"
                     + (f" + eligible pipeline {work / 3600:.1f} h" if pipe else "") + f" = {total / 3600:.1f} h")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mirror", type=Path, required=True, help="bare git mirror of the archive")
    p.add_argument("--commit", default="67b1c2373b5a")
    p.add_argument("--work", type=Path, required=True, help="working folder (outside the repository)")
    p.add_argument("--limit", type=int, default=None, help="a seeded slice of this many plugin folders")
    p.add_argument("--seed", type=int, default=26)
    p.add_argument("--sample", type=int, default=200, help="eligible skills for the full pipeline")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--pg-url", default=os.environ.get("S2E_PG_URL"), help="Postgres for Dagster (default SQLite)")
    p.add_argument("--target", type=int, default=47_000, help="hub size to extrapolate to")
    p.add_argument("--steps", default="extract,snapshots,warm,pipeline,report")
    p.add_argument("--git", action="store_true", help="crawl a git source (WORK/hub.git@main, see git_hub) instead "
                   "of the extracted folder: what a nightly refresh of a hub's repository does")
    a = p.parse_args()
    work, steps = a.work.resolve(), a.steps.split(",")
    if REPO in work.parents or work == REPO:
        raise SystemExit("--work must be outside the repository (never commit the archive)")
    hub, out, figures_file = work / "hub", work / "run", work / "figures.json"
    source = f"{work / 'hub.git'}@main" if a.git else str(hub)
    figures: dict[str, Any] = json.loads(figures_file.read_text()) if figures_file.exists() else {}

    def save() -> None:
        figures_file.write_text(json.dumps(figures, indent=2))

    if "extract" in steps:
        t0 = time.monotonic()
        made = git_hub(a.mirror, a.commit, work / "hub.git") if a.git else extract(a.mirror, a.commit, hub, a.limit,
                                                                                   a.seed)
        figures["extract"] = ex = {**made, "seconds": round(time.monotonic() - t0, 1)}
        where = f"at {ex['repo_commit'][:12]}" if a.git else f"in {ex['plugins']} plugin folders"
        print(f"{'git source' if a.git else 'extract'}: {ex['skill_md_files']} SKILL.md {where}, "
              f"{len(ex['missing_blobs'])} blobs missing from the mirror left out, {ex['seconds']} s")
        save()
    if "snapshots" in steps:
        instance_config(out / "dagster_home", a.pg_url)
        print(f"snapshots (cold), load {load()} ...", flush=True)
        funnel, wall, since = run(source, out, a.workers, "--snapshots-only")
        runs = runs_since(out, since)
        crawl = crawl_seconds(out)
        skills = funnel["skills_crawled"]
        figures["snapshots"] = {
            "skills": skills, "eligible": funnel["eligible"], "wall_s": round(wall, 1), "load_after": load(),
            "crawl_s": round(sum(crawl.values()), 1), "crawl_stages_s": crawl,
            "snapshot_phase_s": runs["snapshot_runs_wall_s"], "runs": runs, "storage": (a.pg_url and "postgres")
            or "sqlite"}
        s = figures["snapshots"]
        print(f"crawl: {skills} skills in {s['crawl_s']} s {crawl}; snapshot partitions: {runs['snapshot_runs_wall_s']}"
              f" s in {runs['by_job'].get('skill_snapshot_refresh', 0)} runs; all runs {runs['runs']} "
              f"(target <= {skills // 100}); wall {s['wall_s']} s (target <= 3600), load {s['load_after']}")
        save()
    if "warm" in steps:
        print(f"warm nightly re-run, load {load()} ...", flush=True)
        funnel, wall, since = run(source, out, a.workers, "--snapshots-only")
        runs = runs_since(out, since)
        partition_runs = sum(n for job, n in runs["by_job"].items() if job != "skillhub_crawl_job")
        figures["warm"] = {"wall_s": round(wall, 1), "runs": runs, "partition_runs": partition_runs,
                           "load_after": load()}
        print(f"warm: {wall:.1f} s (target <= 300), partition runs {partition_runs} (target 0), runs {runs['by_job']}"
              f", load {load()}")
        save()
    if "pipeline" in steps:
        ids = eligible_sample(out, a.sample, a.seed)
        print(f"full pipeline on {len(ids)} eligible skills (seed {a.seed}), load {load()} ...", flush=True)
        funnel, wall, since = run(source, out, a.workers, "--only", *ids)
        runs = runs_since(out, since)
        figures["pipeline"] = {"skills": len(ids), "workers": a.workers, "wall_s": round(wall, 1),
                               "created": funnel["created"], "retained": funnel["retained"],
                               "failed": len(funnel["failed_partitions"]), "runs": runs, "load_after": load()}
        pf = figures["pipeline"]
        print(f"pipeline: {len(ids)} skills in {wall:.0f} s with {a.workers} workers; created {pf['created']}, retained"
              f" {pf['retained']}, failed partitions {pf['failed']}; runs {runs['by_job']}; load {load()}")
        save()
    if "report" in steps:
        figures["storage"] = storage_figures(out, a.pg_url)
        print(f"storage: {json.dumps(figures['storage'])}")
        if "snapshots" in figures:
            for line in extrapolate(figures, a.target):
                print(line)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
