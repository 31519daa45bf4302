"""Test helpers for the task tests: a SkillRecord read straight from an example folder (no crawl/screen needed)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from skill2env_dagster.models.skill import FileEntry, SkillRecord
from skill2env_dagster.planning.axes import sample_axes
from skill2env_dagster.planning.offline import plan_offline
from skill2env_dagster.tasks.recipes import ARCHETYPE_TO_RECIPE, RECIPES

ARCHETYPES = ["transform_convert", "data_query", "repair_debug", "audit_report", "build_to_spec", "service_runtime"]


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
    return SkillRecord(skill_id=f"{source}__{folder.name}", source=source, source_kind="dir", source_uri=str(folder.parent),
                       rel_path=folder.name, abs_path=str(folder), skill_file="SKILL.md", name=meta["name"],
                       description=meta["description"], body=body, files=files, bundle_digest=digest)


def plans_and_axes(skill: SkillRecord, archetypes: list[str] | None = None):
    """Offline plans and axes; with `archetypes`, variant i is forced onto archetypes[i] and the verifier pattern
    of the recipe it maps to (one task per recipe), without fallbacks."""
    plans = plan_offline(skill, prompt_version="test")
    axes = sample_axes(plans)
    if archetypes:
        base = axes.samples
        samples = [base[i % len(base)].model_copy(update={
            "variant": i, "archetype": a, "fallbacks": [],
            "primary_verifier_pattern": RECIPES[ARCHETYPE_TO_RECIPE[a]].verifier}) for i, a in enumerate(archetypes)]
        axes = axes.model_copy(update={"samples": samples})
    return plans, axes
