"""The LLM planner: one structured call per skill, then grounding checks against the skill's real files.

The model sees the skill as fenced untrusted data (see prompts/plan_workflows.j2) and must answer in the
`PlanReply` schema; whatever it says, the artifact's shape is fixed by `WorkflowPlanSet`. Afterwards every cited
skill file is checked against the bundle (uncited/invented paths are dropped and recorded as risks), external
sources without a pinned revision are dropped, and ranks are renumbered by the model's order.
"""

from __future__ import annotations

import json
from typing import Protocol, TypeVar

from pydantic import BaseModel, Field

from skill2env_dagster.catalogue import AxisCatalogue, load_axes
from skill2env_dagster.knowledge.lines import numbered_within, split_lines
from skill2env_dagster.knowledge.source import read_skill_file
from skill2env_dagster.llm.prompts import render_messages
from skill2env_dagster.llm.schema import ReplyModel
from skill2env_dagster.models.labels import to_label
from skill2env_dagster.models.plan import AssetRecommendation, Usage, Workflow, WorkflowPlanSet
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.planning.facts import SkillFacts, extract_facts

PLAN_TEMPLATE = "plan_workflows.j2"
BODY_LIMIT = 24_000
M = TypeVar("M", bound=BaseModel)


class JSONCompleter(Protocol):
    """What the planner needs from an LLM client (LLMClient satisfies it; tests may pass a fake)."""

    def complete_json(self, messages: list[dict[str, str]], schema: type[M], *, purpose: str) -> tuple[M, Usage]: ...


class PlanReply(ReplyModel):
    """The wire schema the model must answer in: just the ranked workflows (provenance is added by us). Every rule
    is in its JSON schema (label patterns, score bounds, list bounds); what grounding fixes afterwards (cited
    files that do not exist, unpinned sources, repeated names, ranks) is repaired, never a rejection."""

    workflows: list[Workflow] = Field(min_length=1, max_length=8)


def plan_messages(skill: SkillRecord, facts: SkillFacts, catalogue: AxisCatalogue) -> list[dict[str, str]]:
    """Render the planning prompt; skill-derived text goes only through the `untrusted` fence."""
    files = [f.rel_path for f in skill.files if f.refused is None and f.kind != "symlink"]
    facts_json = json.dumps(facts.model_dump(exclude={"skill_id", "name", "domain"}), ensure_ascii=False)
    return render_messages(
        PLAN_TEMPLATE,
        max_workflows=8,
        archetypes=sorted(catalogue.archetype),
        verifier_patterns=sorted(catalogue.primary_verifier_pattern),
        personas=sorted(catalogue.persona),
        skill={"skill_id": skill.skill_id, "domain": skill.domain, "name": skill.name or "",
               "description": skill.description or ""},
        files=files[:300],
        facts_json=facts_json,
        skill_md=numbered_within(split_lines(_skill_md(skill)), BODY_LIMIT),
        skill_file=skill.skill_file,
        body_limit=BODY_LIMIT,
    )


def _skill_md(skill: SkillRecord) -> str:
    """SKILL.md as the file has it (so its line numbers are the file's), or the record's body when the file on
    disk is not the one the record was read from."""
    text = read_skill_file(skill, skill.skill_file)
    return text if text is not None and (skill.body or "").strip() in text else (skill.body or "")


def plan_with_llm(skill: SkillRecord, client: JSONCompleter, *, prompt_version: str, model: str,
                  catalogue: AxisCatalogue | None = None) -> WorkflowPlanSet:
    """Plans from the model, grounded and labelled `generator: llm`; LLMError propagates with its reason."""
    cat = catalogue or load_axes()
    reply, usage = client.complete_json(plan_messages(skill, extract_facts(skill), cat), PlanReply,
                                        purpose=f"plan:{skill.skill_id}")
    workflows = ground_workflows(reply.workflows, skill)
    return WorkflowPlanSet(skill_id=skill.skill_id, bundle_digest=skill.bundle_digest, generator="llm", model=model,
                           prompt_version=prompt_version, workflows=workflows, usage=usage)


def ground_workflows(workflows: list[Workflow], skill: SkillRecord) -> list[Workflow]:
    """Keep only citations of real skill files (pinned to the bundle digest) and pinned external sources."""
    real = {f.rel_path for f in skill.files if f.refused is None}
    out, names = [], set()
    for i, w in enumerate(workflows[:8]):
        dropped: list[str] = []
        assets = [_ground_asset(a, real, skill.bundle_digest, dropped) for a in w.assets]
        name = w.name if w.name not in names else to_label(f"{w.name[:44]}-{i + 1}")
        names.add(name)
        risks = list(w.meta_plan.risks) + [f"ungrounded source dropped: {d[:120]}" for d in dropped]
        out.append(w.model_copy(update={
            "rank": i + 1, "name": name, "assets": assets,
            "meta_plan": w.meta_plan.model_copy(update={"risks": risks}),
        }))
    return out


def _ground_asset(a: AssetRecommendation, real: set[str], digest: str, dropped: list[str]) -> AssetRecommendation:
    sources = []
    for s in a.sources:
        if s.kind == "skill_file":
            path = (s.path or "").removeprefix("./")
            if path in real:
                sources.append(s.model_copy(update={"path": path, "revision": digest}))
            else:
                dropped.append(f"skill_file {s.path!r} not in bundle")
        elif s.url and s.revision:
            sources.append(s)
        else:
            dropped.append(f"external {s.url!r} without a pinned revision")
    return a.model_copy(update={"sources": sources})
