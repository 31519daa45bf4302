"""`skill2env demo [--out DIR]`: crawl → snapshot → plans → axes → task bundles → gates on examples/skillhub,
through Dagster with a persistent instance (so the runs show in `dagster dev`), then a funnel and an export of
every retained task to DIR/tasks/<task>/ (each a complete Harbor task)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from skill2env_dagster.artifacts import (
    ANALYTICS_JOB,
    CORPUS_KEY,
    CRAWL,
    CRAWL_JOB,
    EXPORT,
    GATES,
    PIPELINE_JOB,
    PLANS,
    PROBE,
    SKILLS_PARTITION,
    TASKS,
)

REPO = Path(__file__).resolve().parents[2]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the whole pipeline on examples/skillhub through Dagster (real Docker)")
    p.add_argument("--out", type=Path, default=Path("out/demo"), help="output folder (default out/demo)")
    p.add_argument("--max-variants", type=int, default=2, help="task variants per skill (default 2)")
    p.add_argument("--only", nargs="*", default=None, help="restrict to these skill ids (after the crawl)")
    p.add_argument("--skip-docker-up", action="store_true", help="do not run scripts/docker-up.sh first")
    p.set_defaults(func=run)


def _infra(skip: bool) -> None:
    from skill2env_dagster.gates.base_images import ensure_base_images

    if not skip:
        done = subprocess.run(["bash", str(REPO / "scripts" / "docker-up.sh")], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"scripts/docker-up.sh failed:\n{done.stderr[-2000:]}")
    ensure_base_images()


def _resources(out: Path) -> dict:
    from skill2env_dagster.resources.docker import DockerResource
    from skill2env_dagster.resources.llm import LLMResource
    from skill2env_dagster.resources.skillhub import SkillHubResource
    from skill2env_dagster.resources.store import ArtifactStoreResource

    sources = out / "sources.yaml"
    sources.write_text(f"sources:\n  - name: examples\n    kind: dir\n    path: {REPO / 'examples' / 'skillhub'}\n"
                       f"    priority: 10\nsettings:\n  cache_dir: {out / 'git-cache'}\n")
    return {"artifacts": ArtifactStoreResource(root=str(out / "artifacts")),
            "skillhub": SkillHubResource(sources_file=str(sources)),
            "llm": LLMResource.from_env(), "docker": DockerResource()}


def _materialize(out: Path, max_variants: int, only: list[str] | None) -> list[str]:
    """Run the real code location's jobs (crawl, then one skill_pipeline run per skill) in a persistent instance,
    so `dagster dev` with the same DAGSTER_HOME shows every run, materialisation and lineage afterwards."""
    import dagster as dg

    from skill2env_dagster.definitions import build_defs

    home = Path(os.environ.get("DAGSTER_HOME") or out / "dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    instance = dg.DagsterInstance.get()
    defs = build_defs(_resources(out))
    defs.resolve_job_def(CRAWL_JOB).execute_in_process(instance=instance)
    keys = [k for k in instance.get_dynamic_partitions(SKILLS_PARTITION) if only is None or k in only]
    config = {"ops": {TASKS.name: {"config": {"max_variants": max_variants}}}}
    pipeline = defs.resolve_job_def(PIPELINE_JOB)
    failed = []
    for i, key in enumerate(sorted(keys), 1):
        print(f"demo: [{i}/{len(keys)}] {key}", file=sys.stderr, flush=True)
        res = pipeline.execute_in_process(partition_key=key, instance=instance, run_config=config,
                                          raise_on_error=False)
        if not res.success:
            failed.append(key)
    if not defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(instance=instance,
                                                                      raise_on_error=False).success:
        failed.append("corpus_analytics")
    return failed


def _funnel(out: Path, failed: list[str]) -> dict:
    from skill2env_dagster.export.inputs import load_inputs
    from skill2env_dagster.export.run import CURRENT_EXPORT
    from skill2env_dagster.export.stats import corpus_stats
    from skill2env_dagster.export.tables import build_tables
    from skill2env_dagster.models.plan import Usage
    from skill2env_dagster.skillhub.snapshot import latest_snapshot_dir, load_record
    from skill2env_dagster.store import ArtifactStore

    store = ArtifactStore(out / "artifacts")
    snap = latest_snapshot_dir(store.dir(CRAWL))  # the whole crawl, not only the partitions run
    skills = {p.stem: load_record(snap, p.stem) for p in sorted((snap / "records").glob("*.json"))}
    bundles = store.load_all(TASKS)
    gates = store.load_all(GATES)
    screened = Counter(r.value for s in skills.values() if s.status.value == "screened_out" for r in s.reasons)
    created = [b for s in bundles.values() for b in s.bundles]
    rejected = Counter(r.value for b in created if b.status != "retained" for r in b.reasons)
    verified = {name for g in gates.values() for name, r in g.reports.items() if r.verdict.value == "retained"}
    probe = _probe_summary(store)
    stats = corpus_stats(build_tables(load_inputs(store)), exported=0)  # its usage and failure figures
    return {
        "generator": _generator(),
        "generators": stats.generators,
        "skills_crawled": len(skills),
        "screened_out_by_reason": dict(screened),
        "duplicates": sum(s.status.value == "duplicate" for s in skills.values()),
        "invalid": sum(s.status.value == "invalid" for s in skills.values()),
        "planned": len(store.keys(PLANS)),
        "created": len(created),
        "retained": len(verified),
        "rejected_by_reason": dict(rejected),
        "failed_by_stage": stats.stage_failures,
        "failure_examples": stats.failure_examples,
        "llm_usage": Usage(**stats.cost.model_dump(include=set(Usage.model_fields))).report(),
        "failed_partitions": failed,
        "retrieval_probe": probe,
        "export_dir": str(store.dir(EXPORT) / CURRENT_EXPORT),
        "_retained_paths": sorted(b.path for b in created if b.task_name in verified),
    }


def _probe_summary(store) -> dict:
    """Top-1 / top-10 of the main probe modes against chance (full report: the retrieval_probe asset)."""
    if not store.exists(PROBE, CORPUS_KEY):
        return {}
    report = store.load(PROBE, CORPUS_KEY)
    keep = ("instruction_rubric", "rubric_only", "instruction_only", "masked_instruction_rubric")
    return {"n_skills": report.n_skills, "chance": round(report.chance, 4),
            **{m: {"top1": round(report.modes[m].top1, 3), "top10": round(report.modes[m].top10, 3)}
               for m in keep if m in report.modes}}


def _export(paths: list[str], dest: Path) -> list[str]:
    from skill2env_dagster.store import atomic_replace_dir

    dest.mkdir(parents=True, exist_ok=True)
    keep = {Path(p).name for p in paths}
    for old in dest.iterdir():  # the folder mirrors the current retained set: drop tasks no longer retained
        if old.is_dir() and old.name not in keep:
            shutil.rmtree(old)
    names = []
    for p in paths:
        staging = dest / f".{Path(p).name}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(p, staging, symlinks=True)
        atomic_replace_dir(staging, dest / Path(p).name)
        names.append(Path(p).name)
    return names


def _generator() -> str:
    """Which generator the code location uses, from the same S2E_LLM_* settings (validated: a bad value stops
    the demo here with the variable named)."""
    from skill2env_dagster.llm.config import from_env

    return from_env().describe()


def run(args: argparse.Namespace) -> int:
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"demo: generator: {_generator()}", file=sys.stderr, flush=True)
    _infra(args.skip_docker_up)
    failed = _materialize(out, args.max_variants, args.only)
    funnel = _funnel(out, failed)
    funnel["exported"] = _export(funnel.pop("_retained_paths"), out / "tasks")
    funnel["tasks_dir"] = str(out / "tasks")
    funnel["dagster_home"] = os.environ["DAGSTER_HOME"]
    print(json.dumps(funnel, indent=2))
    print(f"\nBrowse the runs: DAGSTER_HOME={out / 'dagster_home'} S2E_ARTIFACTS_DIR={out / 'artifacts'} "
          f"S2E_SOURCES={out / 'sources.yaml'} .venv/bin/dagster dev -w workspace.yaml", file=sys.stderr)
    return 0 if funnel["exported"] and not failed else 1


if __name__ == "__main__":
    sys.exit(run(argparse.ArgumentParser().parse_args()))
