"""The model-backed task generator: the TaskGenerator protocol with one structured model call per creation step.

blueprint → environment → instruction → tests → rubric → (freeze, by the builder) → solution → cheats; a repair is
another solution call carrying the gate's evidence. The blueprint (`llm_blueprint`) is built from the plan's
workflow, the axis sample and the skill's extracted knowledge, and every later prompt carries it; the tests must
grade exactly its acceptance metrics. Each step's template is `prompts/task_<step>.j2`; skill text and files, the
planner's workflow, earlier drafts and gate evidence all enter the prompt through the `untrusted` fence. Replies
are parsed into the pydantic models of `llm_replies` (paths checked before anything is written), and every call's
token usage is kept so the asset can report the cost of a skill's tasks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

from skill2env_dagster.artifacts import TASK_PROMPTS
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.prompts import prompt_version, render_messages
from skill2env_dagster.models.blueprint import TaskBlueprint
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.plan import Usage, total_usage
from skill2env_dagster.reasons import ReasonCode, Skill2EnvError
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec
from skill2env_dagster.tasks.generator import CreationContext, EnvironmentDraft, dockerfile
from skill2env_dagster.tasks.llm_blueprint import blueprint_inputs, skill_files, to_blueprint
from skill2env_dagster.tasks.llm_replies import (
    CheatsReply,
    EnvironmentReply,
    InstructionReply,
    RubricReply,
    SolutionReply,
    VerifierReply,
)

STEPS = ("blueprint", "environment", "instruction", "tests", "rubric", "solution", "cheats")
TEMPLATES = dict(zip(STEPS, TASK_PROMPTS, strict=True))
BODY_LIMIT = 16_000
M = TypeVar("M", bound=BaseModel)


class JSONCompleter(Protocol):
    """What the generator needs from an LLM client (LLMClient satisfies it)."""

    def complete_json(self, messages: list[dict[str, str]], schema: type[M], *, purpose: str) -> tuple[M, Usage]: ...


def task_prompts_version(model_fingerprint: dict[str, object] | None = None,
                         folder: Path | str | None = None) -> str:
    """One hash over the step templates (and their includes) and the model settings: editing any task
    prompt changes it, which stales `task_bundles`."""
    parts = {step: prompt_version(name, model_fingerprint, folder=folder) for step, name in TEMPLATES.items()}
    return sha256_bytes(canonical_json(parts).encode())[:16]


class LLMGenerator:
    """Drives one candidate at a time; remembers each task's drafts so later steps see the earlier ones."""

    kind: Literal["offline", "llm"] = "llm"
    model: str | None

    def __init__(self, client: JSONCompleter, model: str, prompt_version: str,
                 folder: Path | str | None = None) -> None:
        self.client, self.model, self.prompt_version, self.folder = client, model, prompt_version, folder
        self.usages: list[Usage] = []
        self._drafts: dict[str, dict[str, BaseModel]] = {}
        self._blueprints: dict[str, TaskBlueprint] = {}
        self._knowledge: dict[str, tuple[SkillKnowledge, str]] = {}  # bundle digest -> (knowledge, quoted files)

    # --- plumbing ----------------------------------------------------------------------------------------------
    def _call(self, ctx: CreationContext, step: str, schema: type[M], **extra: object) -> M:
        messages = render_messages(TEMPLATES[step], folder=self.folder, **self._vars(ctx), **extra)
        try:
            reply, usage = self.client.complete_json(messages, schema, purpose=f"task_{step}:{ctx.task_name}")
        except LLMError as e:
            self.usages.append(e.usage or Usage())  # tokens spent on a failed step are still spent
            raise
        self.usages.append(usage)
        self._drafts.setdefault(ctx.task_name, {})[step] = reply
        return reply

    def _skill(self, ctx: CreationContext) -> tuple[SkillKnowledge, str]:
        """The skill's knowledge and its quoted files, once per skill content."""
        key = ctx.skill.bundle_digest
        if key not in self._knowledge:
            knowledge = ctx.knowledge or extract_knowledge(ctx.skill)
            self._knowledge[key] = knowledge, skill_files(ctx.skill, knowledge)
        return self._knowledge[key]

    def _vars(self, ctx: CreationContext) -> dict[str, object]:
        s = ctx.sample
        bp = self._blueprints.get(ctx.task_name)
        return {
            "skill": {"name": ctx.skill.name or ctx.skill.skill_id, "description": ctx.skill.description or ""},
            "body": (ctx.skill.body or "")[:BODY_LIMIT],
            "files": self._skill(ctx)[1],
            "blueprint_json": json.dumps(bp.model_dump(mode="json", exclude={"schema_version", "task_name",
                                                                             "skill_id"}), ensure_ascii=False)
            if bp else "",
            "workflow_json": json.dumps(ctx.workflow.model_dump(mode="json", include={"name", "summary", "meta_plan"}),
                                        ensure_ascii=False),
            "sample": {k: getattr(s, k) for k in ("archetype", "primary_verifier_pattern", "complexity", "persona",
                                                   "tone", "expertise")},
        }

    def _draft(self, ctx: CreationContext, step: str) -> BaseModel:
        return self._drafts[ctx.task_name][step]

    def _instruction(self, ctx: CreationContext) -> str:
        draft = self._draft(ctx, "instruction")
        assert isinstance(draft, InstructionReply)  # the instruction step stores its reply under this name
        return draft.instruction

    def _json(self, ctx: CreationContext, step: str) -> str:
        return json.dumps(self._draft(ctx, step).model_dump(mode="json"), ensure_ascii=False)

    def total_usage(self) -> Usage:
        return total_usage(self.usages)

    def metadata(self, ctx: CreationContext) -> dict[str, object]:
        return {}  # the blueprint's summary is added by the pipeline, for every generator

    # --- the steps ---------------------------------------------------------------------------------------------
    def blueprint(self, ctx: CreationContext) -> TaskBlueprint:
        """Asked once per task; later steps are rendered with it."""
        if ctx.task_name not in self._blueprints:
            inputs = blueprint_inputs(ctx, self._skill(ctx)[0])
            reply = self._call(ctx, "blueprint", inputs.schema(), lines=inputs.listing(), patterns=inputs.patterns,
                               required=inputs.required, max_rules=6)
            self._blueprints[ctx.task_name] = to_blueprint(reply, ctx, inputs)
        return self._blueprints[ctx.task_name]

    def environment(self, ctx: CreationContext) -> EnvironmentDraft:
        r = self._call(ctx, "environment", EnvironmentReply)
        files: dict[str, str | bytes] = {**r.files,
                                         "Dockerfile": dockerfile(ctx.base_images[r.image], r.dockerfile_lines)}
        return EnvironmentDraft(files, r.image, "llm", ctx.sample.archetype, ctx.sample.primary_verifier_pattern)

    def instruction(self, ctx: CreationContext) -> str:
        r = self._call(ctx, "instruction", InstructionReply, environment_json=self._json(ctx, "environment"))
        return r.instruction.strip() + "\n"

    def tests(self, ctx: CreationContext) -> tuple[dict[str, str], list[str]]:
        r = self._call(ctx, "tests", VerifierReply, environment_json=self._json(ctx, "environment"),
                       instruction=self._instruction(ctx))
        wanted = [c.metric for c in self.blueprint(ctx).acceptance]
        if set(r.metrics) != set(wanted):
            raise Skill2EnvError(ReasonCode.CREATOR_CONTRACT_FAILED, f"the tests grade {list(r.metrics)}, the "
                                 f"blueprint's acceptance criteria name {wanted}")
        return dict(r.files), list(r.metrics)

    def rubric(self, ctx: CreationContext) -> str:
        r = self._call(ctx, "rubric", RubricReply, tests_json=self._json(ctx, "tests"),
                       instruction=self._instruction(ctx))
        spec = RubricSpec(*([Bullet(t, "llm") for t in part] for part in (r.must_do, r.must_avoid, r.best_practice)))
        return spec.render()[0]

    def solution(self, ctx: CreationContext, evidence: str) -> dict[str, str]:
        """First write, or a repair: the same call with the gate evidence and the previous attempt."""
        drafts = self._drafts.get(ctx.task_name, {})
        previous = drafts.get("solution")
        r = self._call(ctx, "solution", SolutionReply, environment_json=self._json(ctx, "environment"),
                       instruction=self._instruction(ctx),
                       tests_json=self._json(ctx, "tests"), evidence=evidence,
                       previous_json=json.dumps(previous.model_dump(mode="json")) if previous else "")
        return dict(r.files)

    def cheats(self, ctx: CreationContext) -> dict[str, str]:
        """After the freeze and the solution: 2-4 task-specific shortcuts, as solution/cheats/<name>.sh."""
        r = self._call(ctx, "cheats", CheatsReply, environment_json=self._json(ctx, "environment"),
                       instruction=self._instruction(ctx), tests_json=self._json(ctx, "tests"))
        return r.files()
