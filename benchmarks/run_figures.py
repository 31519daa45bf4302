"""Issue 11's corpus figures from a finished `skill2env run` folder: the whole hub through every gate stage.

Usage: .venv/bin/python benchmarks/run_figures.py DIR [--read 10]     (DIR = the run's --out folder)

Reads only what the run wrote: the crawl's eligible skills (artifacts/skillhub_snapshot), the retained tasks
(DIR/tasks, each task.toml's [metadata]), the rejected candidates with their reasons (artifacts/task_bundles) and
the retrieval probe (artifacts/retrieval_probe). Prints coverage (eligible skills with >= 1 retained task, and the
reasons of every other skill), the realised archetype/verifier combinations, the share of the most common
normalised verifier skeleton (benchmarks/bench_generation.py's definition) and the probe's masked rows; with
--read N, N retained tasks picked at random (seed 11) with their skill, blueprint summary and what makes them hard.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_generation import skeleton  # the one definition of a verifier skeleton


def _eligible(artifacts: Path) -> set[str]:
    out = set()
    for f in (artifacts / "skillhub_snapshot").glob("*.json"):
        r = json.loads(f.read_text())
        if r["status"] == "eligible" and not r.get("duplicate_of"):
            out.add(r["skill_id"])
    return out


def _rejections(artifacts: Path) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for f in (artifacts / "task_bundles").glob("*.json"):
        d = json.loads(f.read_text())
        c: Counter[str] = Counter()
        for t in d.get("bundles", []):
            if t.get("status") != "retained":
                c.update(t.get("reasons") or ["unknown"])
        if d.get("skipped_reason"):
            c[str(d["skipped_reason"])] += 1
        out[f.stem] = c
    return out


def describe(name: str, m: dict) -> str:
    rules = "; ".join(m.get("blueprint_rules", []))[:300]
    return (f"- {name}\n  skill {m['source_skill']} · {m.get('blueprint_shape')} ({m['archetype']}/"
            f"{m['primary_verifier_pattern']}) · {m['complexity']} · {m.get('blueprint_files_to_read')} files to read, "
            f"{m.get('blueprint_dependent_steps')} dependent steps\n  objective: {m.get('blueprint_objective')}\n"
            f"  rules: {rules}\n  patterns: {', '.join(m.get('blueprint_patterns', []))} "
            f"(effects: {', '.join(m.get('blueprint_effects', []))})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("--read", type=int, default=0, help="also show N random retained tasks")
    args = ap.parse_args()
    run = args.run
    artifacts = run / "artifacts"
    metas = {t.name: tomllib.loads((t / "task.toml").read_text())["metadata"] for t in (run / "tasks").iterdir()
             if (t / "task.toml").is_file()}
    eligible = _eligible(artifacts)
    covered = {m["source_skill"] for m in metas.values()}
    print(f"coverage: {len(covered & eligible)}/{len(eligible)} eligible skills with >= 1 retained task "
          f"({100 * len(covered & eligible) / max(1, len(eligible)):.1f} %); {len(metas)} retained tasks")
    why = _rejections(artifacts)
    missing = Counter(", ".join(f"{k}×{v}" for k, v in sorted(why.get(s, Counter()).items())) or "no candidate"
                      for s in sorted(eligible - covered))
    for reason, n in missing.most_common():
        print(f"  {n:3d} skills without a retained task: {reason}")
    combos = Counter((m["archetype"], m["primary_verifier_pattern"]) for m in metas.values())
    print(f"realised archetype/verifier combinations: {len(combos)}")
    for (a, v), n in combos.most_common():
        print(f"  {n:3d} {a} / {v}")
    shapes = Counter(m.get("blueprint_shape", m.get("recipe", "?")) for m in metas.values())
    print("shapes: " + ", ".join(f"{s} {n}" for s, n in shapes.most_common()))
    skeletons = Counter(skeleton(run / "tasks" / name / "tests") for name in metas)
    top = skeletons.most_common(1)[0][1] if skeletons else 0
    print(f"most common normalised verifier skeleton: {top}/{len(metas)} = {100 * top / max(1, len(metas)):.1f} % "
          f"({len(skeletons)} distinct)")
    probe = json.loads((artifacts / "retrieval_probe" / "corpus.json").read_text())
    print(f"retrieval probe: {probe['n_tasks']} tasks vs {probe['n_skills']} skills, chance {probe['chance']:.4f}")
    for mode, m in probe["modes"].items():
        print(f"  {mode:28s} top1 {m['top1']:.3f}  top10 {m['top10']:.3f}")
    if args.read:
        print(f"\n{args.read} tasks to read:")
        for name in random.Random(11).sample(sorted(metas), min(args.read, len(metas))):
            print(describe(name, metas[name]))


if __name__ == "__main__":
    main()
