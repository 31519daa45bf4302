"""Task generators: a blueprint, then one method per creation step. The offline generator derives everything from
a TaskBlueprint built out of the skill's own rules (see `blueprints.py`).

The protocol is blueprint-based: `blueprint()` fixes the contract first, then environment → instruction → tests →
rubric → (freeze, by the builder) → solution → cheats release it. A model-backed generator implements the same
protocol; the pipeline and the repair loop do not care which one they drive.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.blueprint import TaskBlueprint
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.plan import Usage, Workflow, WorkflowFocus
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.tasks.blueprints import Planned, plan_task
from skill2env_dagster.tasks.compose.context import method_context
from skill2env_dagster.tasks.compose.instruction import InstructionError, check, compose, container_paths
from skill2env_dagster.tasks.compose.rubric import complete
from skill2env_dagster.tasks.compose.rubric_in_play import in_play
from skill2env_dagster.tasks.grounding import Grounding, ground

if TYPE_CHECKING:
    from skill2env_dagster.models.gate import GateReport
    from skill2env_dagster.models.task import TaskBundle
    from skill2env_dagster.store import ArtifactStore

OFFLINE_PROMPT_VERSION = "offline-blueprints-1"


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
    knowledge: SkillKnowledge | None = None
    focus: WorkflowFocus | None = field(default=None)  # the part of the method the planner built the workflow on
    shape: str | None = None  # an offline shape to try first (a hardening rebuild keeps its previous shape)


@dataclass
class EnvironmentDraft:
    files: dict[str, str | bytes]  # relative to environment/, including Dockerfile
    image: Literal["minimal", "python"]
    recipe: str  # the offline shape, or "llm"
    archetype: str
    verifier: str


class TaskGenerator(Protocol):
    kind: Literal["offline", "llm"]
    model: str | None
    prompt_version: str

    def blueprint(self, ctx: CreationContext) -> TaskBlueprint | None: ...
    def environment(self, ctx: CreationContext) -> EnvironmentDraft: ...
    def instruction(self, ctx: CreationContext) -> str: ...
    def tests(self, ctx: CreationContext) -> tuple[dict[str, str], list[str]]: ...
    def rubric(self, ctx: CreationContext) -> str: ...
    def solution(self, ctx: CreationContext, evidence: str) -> dict[str, str]: ...
    def total_usage(self) -> Usage: ...
    def cheats(self, ctx: CreationContext) -> dict[str, str]: ...
    def metadata(self, ctx: CreationContext) -> dict[str, Any]: ...


class Provenance(Protocol):
    """What task.toml records of whoever made a task (both kinds of creator have it)."""

    kind: Literal["offline", "llm"]
    model: str | None
    prompt_version: str

    def blueprint(self, ctx: CreationContext) -> TaskBlueprint | None: ...
    def metadata(self, ctx: CreationContext) -> dict[str, Any]: ...


@runtime_checkable
class TaskAuthor(Protocol):
    """A creator that authors a whole candidate itself (the model-backed creator agent: it writes, runs and checks
    its draft in the sandbox, freezes it and submits it to the gate), instead of answering one method per step."""

    kind: Literal["offline", "llm"]
    model: str | None
    prompt_version: str

    def author(self, store: ArtifactStore, ctx: CreationContext, gate: Any, settings: Any,
               gate_version: str = "") -> tuple[TaskBundle, GateReport | None]: ...
    def total_usage(self) -> Usage: ...


def task_seed(skill: SkillRecord, sample: AxisSample) -> int:
    """Deterministic per (skill content, workflow, variant, axis seed)."""
    key = f"{skill.bundle_digest}:{sample.workflow}:{sample.variant}:{sample.seed}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16)


def dockerfile(base_ref: str, lines: list[str]) -> str:
    return "\n".join([f"FROM {base_ref}", "WORKDIR /app", *lines]) + "\n"


class OfflineGenerator:
    """Deterministic, model-free generator: a blueprint per task, realised by the shape it names."""

    kind: Literal["offline", "llm"] = "offline"
    model: str | None = None
    prompt_version = OFFLINE_PROMPT_VERSION

    def total_usage(self) -> Usage:
        return Usage()  # no model, no calls

    def __init__(self) -> None:
        self._planned: dict[str, Planned] = {}
        self._used: dict[str, list[str]] = {}  # skill id -> shapes its earlier variants realised
        self._rubric_sources: dict[str, dict[str, str]] = {}

    def plan(self, ctx: CreationContext) -> Planned:
        """The task's blueprint and design, made once per task name; a skill's later variants prefer shapes its
        earlier variants did not use."""
        if ctx.task_name not in self._planned:
            used = self._used.setdefault(ctx.skill.skill_id, [])
            knowledge = ctx.knowledge or extract_knowledge(ctx.skill)
            planned = plan_task(ctx.skill, knowledge, ctx.workflow, ctx.sample, ctx.task_name, ctx.seed,
                                ctx.grounding.vocabulary, used, ctx.focus, ctx.shape)
            self._planned[ctx.task_name] = planned
            used.append(planned.design.shape)
        return self._planned[ctx.task_name]

    def blueprint(self, ctx: CreationContext) -> TaskBlueprint:
        return self.plan(ctx).blueprint

    def environment(self, ctx: CreationContext) -> EnvironmentDraft:
        d = self.plan(ctx).design
        files = {**d.env_files, "Dockerfile": dockerfile(ctx.base_images[d.image], d.docker_lines)}
        # Design keeps archetype/verifier as str (shapes declare them as class attributes); the axis Literals
        # are checked where the blueprint is made.
        return EnvironmentDraft(files, d.image, d.shape, d.archetype, d.verifier)  # type: ignore[arg-type]

    def instruction(self, ctx: CreationContext) -> str:
        planned, s = self.plan(ctx), ctx.sample
        d = planned.design
        if d.slots.text:
            text = d.slots.text
        else:
            slots = replace(d.slots, context=d.slots.context or method_context(planned.blueprint.predicates))
            text = compose(slots, s.persona, s.tone, s.expertise, ctx.seed)
        skill_text = f"{ctx.skill.description or ''}\n{ctx.skill.body}"
        unstated = [x for x in d.stated if " ".join(x.split()) not in text]
        if unstated:
            raise InstructionError(ReasonCode.CREATOR_CONTRACT_FAILED,
                                   f"instruction: graded rules it does not state: {unstated}")
        return check(text, env_paths=container_paths(d.env_files, d.extra_dirs), outputs=d.slots.outputs,
                     skill_text=skill_text)

    def tests(self, ctx: CreationContext) -> tuple[dict[str, str], list[str]]:
        d = self.plan(ctx).design
        return d.tests(), list(d.check.names)

    def rubric(self, ctx: CreationContext) -> str:
        planned = self.plan(ctx)
        knowledge = ctx.knowledge or extract_knowledge(ctx.skill)
        spec = complete(planned.design.rubric, knowledge, planned.blueprint.predicates)
        text, sources = in_play(spec, planned.blueprint).render()
        self._rubric_sources[ctx.task_name] = sources
        return text

    def solution(self, ctx: CreationContext, evidence: str) -> dict[str, str]:
        d = self.plan(ctx).design
        return {"solve.sh": d.solve, **({"wrong.sh": d.wrong} if d.wrong else {})}

    def cheats(self, ctx: CreationContext) -> dict[str, str]:
        return dict(self.plan(ctx).design.cheats)

    def metadata(self, ctx: CreationContext) -> dict[str, Any]:
        if ctx.task_name not in self._rubric_sources:
            self.rubric(ctx)
        return {"rubric_sources": self._rubric_sources[ctx.task_name]}


def make_context(skill: SkillRecord, workflow: Workflow, sample: AxisSample, base_images: dict[str, str],
                 task_name: str, grounding: Grounding | None = None, knowledge: SkillKnowledge | None = None,
                 focus: WorkflowFocus | None = None, shape: str | None = None) -> CreationContext:
    return CreationContext(skill, workflow, sample, grounding or ground(skill), base_images, task_name,
                           task_seed(skill, sample), knowledge, focus, shape)
