"""Test helpers for the task tests: a SkillRecord read straight from an example folder (no crawl/screen needed)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from skill2env_dagster.models.skill import FileEntry, SkillRecord
from skill2env_dagster.planning.axes import sample_axes
from skill2env_dagster.planning.offline import plan_offline
from skill2env_dagster.tasks.shapes import SHAPES

SHAPE_NAMES = [s.name for s in SHAPES]


def skill_from_dir(folder: Path, source: str = "examples") -> SkillRecord:
    text = (folder / "SKILL.md").read_text()
    _, front, body = text.split("---", 2)
    meta = yaml.safe_load(front)
    files = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            files.append(FileEntry(rel_path=p.relative_to(folder).as_posix(), size=len(data),
                                   sha256=hashlib.sha256(data).hexdigest(), kind="text"))
    digest = hashlib.sha256("".join(f"{f.rel_path}{f.sha256}" for f in files).encode()).hexdigest()
    return SkillRecord(skill_id=f"{source}__{folder.name}", source=source, source_kind="dir",
                       source_uri=str(folder.parent),
                       rel_path=folder.name, abs_path=str(folder), skill_file="SKILL.md", name=meta["name"],
                       description=meta["description"], body=body, files=files, bundle_digest=digest)


def vague_skill(root: Path) -> SkillRecord:
    """A skill that states no rule, limit or pitfall: nothing to build a task on."""
    folder = root / "vague"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: vague\ndescription: Be thoughtful about things.\n---\n"
                                     "# Vague\n\nThink carefully and be kind.\n")
    return skill_from_dir(folder)


def plans_and_axes(skill: SkillRecord, shapes: list[str] | None = None, complexity: str | None = None):
    """Offline plans and axes; with `shapes`, variant i is forced onto the archetype/verifier combination of
    shapes[i] (one task per shape, on a workflow focused on that shape's family), without fallbacks; `complexity`
    forces every variant's level."""
    plans = plan_offline(skill, prompt_version="test")
    axes = sample_axes(plans)
    if shapes:
        by_name = {s.name: s for s in SHAPES}
        base = axes.samples
        focus = {w.name: w.focus.family for w in plans.workflows if w.focus}

        def start(i: int, n: str):  # a workflow on the shape's own family: shapes sharing a combination differ there
            return next((x for x in base if focus.get(x.workflow) == by_name[n].family), base[i % len(base)])

        samples = [start(i, n).model_copy(update={
            "variant": i, "archetype": by_name[n].archetype, "fallbacks": [],
            "primary_verifier_pattern": by_name[n].verifier}) for i, n in enumerate(shapes)]
        axes = axes.model_copy(update={"samples": samples})
    if complexity:
        axes = axes.model_copy(update={"samples": [s.model_copy(update={"complexity": complexity})
                                                   for s in axes.samples]})
    return plans, axes
