"""Creation + gating throughput of the offline task generator over the example skills.

Usage: .venv/bin/python benchmarks/bench_tasks.py [--variants 2] [--concurrency 2] [--no-gates]
Crawls examples/skillhub, plans and samples axes offline for every eligible skill, creates `--variants` task
candidates per skill (frozen-order builder, no gates), then gates all of them with the real engine
(`run_gates`, `--concurrency` at a time), and prints: tasks created per second, seconds per stage (crawl, plan,
create, gate), per-recipe creation time, and the share of candidates the gates retain. Needs the engine, the
registry and the base images (scripts/docker-up.sh) unless --no-gates. Prints figures only.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from skill2env_dagster.gates.runner import run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.planning import plan_offline, sample_axes
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.pipeline import build_candidate, task_name

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "skillhub"


def _base_images(no_gates: bool) -> dict[str, str]:
    if no_gates:
        return {f: f"127.0.0.1:5000/s2e-{f}@sha256:" + "0" * 64 for f in ("minimal", "python")}
    from skill2env_dagster.gates.base_images import load_base_images

    return load_base_images()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--no-gates", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    skills = [r for r in crawl_paths([EXAMPLES]).records if r.is_eligible]
    t1 = time.perf_counter()
    planned = [(s, plan_offline(s, prompt_version="bench")) for s in skills]
    planned = [(s, p, sample_axes(p)) for s, p in planned]
    t2 = time.perf_counter()
    pins, gen = _base_images(args.no_gates), OfflineGenerator()
    folders, recipes, per_recipe = [], [], defaultdict(float)
    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as tmp:
        for skill, plans, axes in planned:
            wf = {w.name: w for w in plans.workflows}
            for s in axes.samples[: args.variants]:
                start = time.perf_counter()
                builder = TaskBuilder(Path(tmp) / task_name(skill, s))
                ctx = make_context(skill, wf[s.workflow], s, pins, task_name(skill, s))
                env, _ = build_candidate(builder, ctx, gen)
                per_recipe[env.recipe] += time.perf_counter() - start
                folders.append(builder.dir.root)
                recipes.append(env.recipe)
        t3 = time.perf_counter()
        reports = [] if args.no_gates else run_gates(folders, GateSettings(concurrency=args.concurrency))
        t4 = time.perf_counter()
    n = len(folders)
    print(f"skills eligible: {len(skills)}  candidates: {n}  recipes: {dict(Counter(recipes))}")
    print(f"stage seconds: crawl {t1 - t0:.2f}  plan+axes {t2 - t1:.2f}  create {t3 - t2:.2f}  gate {t4 - t3:.2f}")
    print(f"creation: {n / (t3 - t2):.1f} tasks/s ({1000 * (t3 - t2) / n:.1f} ms/task)")
    for recipe, secs in sorted(per_recipe.items()):
        print(f"  {recipe:22s} {1000 * secs / recipes.count(recipe):7.1f} ms/task")
    if reports:
        verdicts = Counter(r.verdict.value for r in reports)
        retained = verdicts.get(GateVerdict.RETAINED.value, 0)
        print(f"gating: {n / (t4 - t3):.2f} tasks/s ({(t4 - t3) / n:.2f} s/task at concurrency {args.concurrency})")
        print(f"retained share: {retained}/{n} = {retained / n:.0%}  verdicts: {dict(verdicts)}")
        print(f"end to end (create + gate): {n / (t4 - t2):.2f} tasks/s")


if __name__ == "__main__":
    main()
