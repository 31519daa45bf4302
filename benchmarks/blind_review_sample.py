"""A blind review's sample (docs/benchmarks.md › Blind review): N random retained tasks of a finished run, each with
the skill folder it came from, for a reviewer who must judge the task against the skill's own files.

Usage:
  .venv/bin/python benchmarks/blind_review_sample.py RUN_DIR OUT_DIR --seed 2512 [-n 12]

RUN_DIR is a `skill2env run --out RUN_DIR` folder (its `tasks/` and `artifacts/skillhub_snapshot/`). The draw is one
random task per skill, in a seeded random order of the skills, then random further tasks when fewer than N skills
have tasks (the protocol wants each from a different skill; the index says when that cannot hold). Writes
OUT_DIR/tasks/NN/task (the Harbor task folder as exported) and OUT_DIR/tasks/NN/skill (the skill folder, copied from
where the crawl found it; symlinks kept, never followed) and OUT_DIR/index.json (seed, run, each pick's task and
skill). The reviewer gets OUT_DIR, never this repository.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
from pathlib import Path

SKILL = re.compile(r'^source_skill = "([^"]+)"', re.M)


def tasks_by_skill(run: Path) -> dict[str, list[Path]]:
    by: dict[str, list[Path]] = {}
    for task in sorted(p for p in (run / "tasks").iterdir() if p.is_dir()):
        m = SKILL.search((task / "task.toml").read_text())
        if m:
            by.setdefault(m.group(1), []).append(task)
    return by


def draw(by: dict[str, list[Path]], seed: int, n: int) -> list[tuple[str, Path]]:
    """One task per skill first (skills in a seeded order), then further tasks at random."""
    rng = random.Random(seed)
    skills = sorted(by)
    rng.shuffle(skills)
    picked = [(s, rng.choice(by[s])) for s in skills][:n]
    rest = [(s, t) for s in sorted(by) for t in by[s] if (s, t) not in picked]
    while len(picked) < n and rest:
        picked.append(rest.pop(rng.randrange(len(rest))))
    return picked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("-n", type=int, default=12)
    a = ap.parse_args()
    by = tasks_by_skill(a.run)
    index = []
    for i, (skill, task) in enumerate(draw(by, a.seed, a.n), 1):
        dest = a.out / "tasks" / f"{i:02d}"
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(task, dest / "task", symlinks=True)
        snap = json.loads((a.run / "artifacts" / "skillhub_snapshot" / f"{skill}.json").read_text())
        shutil.copytree(snap["abs_path"], dest / "skill", symlinks=True)
        index.append({"folder": f"{i:02d}", "task": task.name, "skill": skill, "skill_source": snap["rel_path"]})
        print(f"{i:02d} {task.name}")
    (a.out / "index.json").write_text(json.dumps(
        {"seed": a.seed, "run": str(a.run), "skills_with_tasks": len(by),
         "one_per_skill": len({x["skill"] for x in index}) == len(index), "picked": index}, indent=1))


if __name__ == "__main__":
    main()
