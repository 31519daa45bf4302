"""A hub where every skill has work for the offline pipeline: eligible skills of a crawled hub whose offline plan
has at least one workflow, their folders copied to a new folder (outside the repository).

Why: `bench_distributed.py --speedup` on a random sample of eligible corpus skills measures mostly Dagster's per-run
overhead (36 of 40 got no task from the offline generator), not the hosts. Run on this folder, every run builds and
gates tasks.

Usage (the crawl of any `skill2env run --snapshots-only`, e.g. bench_hub_scale.py's WORK/run on the ClawHub archive):
  .venv/bin/python benchmarks/hub_with_work.py --run /tmp/hub-scale/run --out /tmp/hub-with-work --count 48
Skills are tried in a seeded random order until --count have a workflow; prints how many were tried.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from skill2env_dagster.models.skill import SkillRecord  # noqa: E402
from skill2env_dagster.planning import plan_offline  # noqa: E402
from skill2env_dagster.skillhub.snapshot import latest_snapshot_dir  # noqa: E402
from skill2env_dagster.store import read_model  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=Path, required=True, help="a `skill2env run` output folder (its crawl snapshot)")
    p.add_argument("--out", type=Path, required=True, help="new folder for the chosen skills (outside the repo)")
    p.add_argument("--count", type=int, default=48)
    p.add_argument("--seed", type=int, default=26)
    a = p.parse_args()
    out = a.out.resolve()
    if REPO in out.parents or out == REPO:
        raise SystemExit("--out must be outside the repository")
    snap = latest_snapshot_dir(a.run / "artifacts" / "skillhub_crawl")
    paths = sorted((snap / "records").glob("*.json"))
    random.Random(a.seed).shuffle(paths)
    chosen: list[SkillRecord] = []
    tried, t0 = 0, time.monotonic()
    for path in paths:
        record = read_model(path, SkillRecord)
        if not record.is_eligible:
            continue
        tried += 1
        if plan_offline(record, prompt_version="hub-with-work").workflows:
            chosen.append(record)
            if len(chosen) == a.count:
                break
    for r in chosen:
        # One folder per skill, named by its id: the copy's crawl gives each the same skill again, nothing nested.
        shutil.copytree(r.abs_path, out / r.skill_id, symlinks=True)
    print(f"{len(chosen)} skills with an offline workflow among {tried} eligible skills tried "
          f"({len(chosen) / max(1, tried):.1%}, seed {a.seed}, {time.monotonic() - t0:.0f} s) -> {out}")
    return 0 if len(chosen) == a.count else 1


if __name__ == "__main__":
    sys.exit(main())
