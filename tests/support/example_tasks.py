"""Offline task folders of the bundled example skills, built through the builder's real creation order (no gate):
what an export of those skills holds, for tests of what every task must carry."""

from __future__ import annotations

from pathlib import Path

import yaml

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.reasons import Skill2EnvError
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.pipeline import build_candidate, task_name
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

FAKE_PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
             "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


def build_example_tasks(examples_dir: Path, out: Path, pins: dict[str, str] | None = None,
                        limit: int | None = None) -> list[tuple[Path, OfflineGenerator, object]]:
    """(task folder, its generator, its context) for every sample of every example skill the offline generator
    realises among the eligible skills of EXPECTED.yaml (a sample it cannot realise is skipped, as the pipeline
    records it); at most `limit` tasks."""
    built = []
    expected = yaml.safe_load((examples_dir / "EXPECTED.yaml").read_text())["skills"]
    eligible = [n for n, e in expected.items() if e["status"] == "eligible"]
    for name in sorted(eligible):
        try:  # the parse of tests/unit/task_helpers is strict: a skill needing the crawl's lenient parse is skipped
            skill = skill_from_dir(examples_dir / name)
        except (ValueError, KeyError, TypeError):
            continue
        try:
            plans, axes = plans_and_axes(skill)
        except Skill2EnvError:
            continue
        for s in axes.samples:
            wf = next(w for w in plans.workflows if w.name == s.workflow)
            ctx = make_context(skill, wf, s, pins or FAKE_PINS, task_name(skill, s), focus=wf.focus)
            gen = OfflineGenerator()
            builder = TaskBuilder(out / ctx.task_name)
            try:
                build_candidate(builder, ctx, gen)
            except Skill2EnvError:
                continue
            built.append((builder.dir.root, gen, ctx))
            if limit is not None and len(built) >= limit:
                return built
    return built


def real_pins() -> dict[str, str]:
    return load_base_images()
