"""Task generators: one method per creation step. The offline generator realises the steps from a recipe Design.

A model-backed generator implements the same protocol (one model call per step); the pipeline and the repair
loop do not care which one they drive.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Literal, Protocol

from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.plan import Usage, Workflow
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.tasks.grounding import Grounding, ground
from skill2env_dagster.tasks.method import best_practice, extract, instruction_context
from skill2env_dagster.tasks.recipes import Design, RecipeInput, pick_recipe
from skill2env_dagster.tasks.recipes.base import Rubric
from skill2env_dagster.tasks.wording import compose

OFFLINE_PROMPT_VERSION = "offline-recipes-1"


@dataclass
class CreationContext:
    """Everything one task candidate is made from."""

    skill: SkillRecord
    workflow: Workflow
    sample: AxisSample
    grounding: Grounding
    base_images: dict[str, str]  # flavour -> ref@sha256:...
    task_name: str
    seed: int


@dataclass
class EnvironmentDraft:
    files: dict[str, str]  # relative to environment/, including Dockerfile
    image: Literal["minimal", "python"]
    recipe: str
    archetype: str
    verifier: str


class TaskGenerator(Protocol):
    kind: Literal["offline", "llm"]
    model: str | None
    prompt_version: str

    def environment(self, ctx: CreationContext) -> EnvironmentDraft: ...
    def instruction(self, ctx: CreationContext) -> str: ...
    def tests(self, ctx: CreationContext) -> tuple[dict[str, str], list[str]]: ...
    def rubric(self, ctx: CreationContext) -> str: ...
    def solution(self, ctx: CreationContext, evidence: str) -> dict[str, str]: ...
    def total_usage(self) -> Usage: ...


def task_seed(skill: SkillRecord, sample: AxisSample) -> int:
    """Deterministic per (skill content, workflow, variant, axis seed)."""
    key = f"{skill.bundle_digest}:{sample.workflow}:{sample.variant}:{sample.seed}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)


def needs_service(g: Grounding, skill: SkillRecord) -> bool:
    """The skill's work goes through a documented local HTTP API (endpoint lines + a localhost base URL)."""
    return bool(g.endpoints) and bool(re.search(r"localhost|127\.0\.0\.1", skill.body))


def dockerfile(base_ref: str, lines: list[str]) -> str:
    return "\n".join([f"FROM {base_ref}", "WORKDIR /app", *lines]) + "\n"


class OfflineGenerator:
    """Deterministic, model-free generator: the recipe's Design, released one step at a time."""

    kind: Literal["offline", "llm"] = "offline"
    model: str | None = None
    prompt_version = OFFLINE_PROMPT_VERSION

    def total_usage(self) -> Usage:
        return Usage()  # no model, no calls

    def __init__(self) -> None:
        self._designs: dict[str, Design] = {}
        self._used: dict[str, list[str]] = {}  # skill id -> recipes its earlier variants realised

    def design(self, ctx: CreationContext) -> Design:
        """The task's whole Design, made once per task name; the recipe follows the sampled archetype and
        verifier pattern, and a skill's later variants prefer a fallback combination over repeating a recipe."""
        if ctx.task_name not in self._designs:
            s, used = ctx.sample, self._used.setdefault(ctx.skill.skill_id, [])
            fallbacks = [(c.archetype, c.primary_verifier_pattern) for c in s.fallbacks]
            recipe = pick_recipe(s.archetype, needs_service(ctx.grounding, ctx.skill), s.primary_verifier_pattern,
                                 fallbacks, avoid=used)
            inp = RecipeInput(ctx.skill, ctx.workflow, ctx.sample, ctx.grounding, ctx.seed)
            self._designs[ctx.task_name] = recipe.design(inp)
            used.append(recipe.name)
        return self._designs[ctx.task_name]

    def environment(self, ctx: CreationContext) -> EnvironmentDraft:
        d = self.design(ctx)
        files = {**d.env_files, "Dockerfile": dockerfile(ctx.base_images[d.image], d.docker_lines)}
        return EnvironmentDraft(files, d.image, d.recipe, d.archetype, d.verifier)

    def instruction(self, ctx: CreationContext) -> str:
        s, b = ctx.sample, self.design(ctx).brief
        context = instruction_context(extract(ctx.skill, ctx.grounding), random.Random(f"{ctx.seed}:method"))
        return compose(b, s.persona, s.tone, s.expertise, ctx.seed, context)

    def tests(self, ctx: CreationContext) -> tuple[dict[str, str], list[str]]:
        d = self.design(ctx)
        return dict(d.tests), list(d.metrics)

    def rubric(self, ctx: CreationContext) -> str:
        r = self.design(ctx).rubric
        practice = best_practice(extract(ctx.skill, ctx.grounding), random.Random(f"{ctx.seed}:practice"),
                                 r.best_practice)
        return Rubric(r.must_do, r.must_avoid, practice).render()

    def solution(self, ctx: CreationContext, evidence: str) -> dict[str, str]:
        d = self.design(ctx)
        return {"solve.sh": d.solve, **({"wrong.sh": d.wrong} if d.wrong else {})}


def make_context(skill: SkillRecord, workflow: Workflow, sample: AxisSample, base_images: dict[str, str],
                 task_name: str, grounding: Grounding | None = None) -> CreationContext:
    return CreationContext(skill, workflow, sample, grounding or ground(skill), base_images, task_name,
                           task_seed(skill, sample))
