"""Assets `workflow_plans` and `axis_samples`, partitioned by skill.

Thin wrappers over `planning/`: read the skill from the store, plan (offline or LLM), write, report. Their code
versions come from the scopes declared in the artifact registry (`artifacts.py`), so editing the planner, a prompt
or an axis catalogue marks exactly these partitions stale. A skill that is not eligible is recorded as skipped
(no artifact file); an LLM failure fails only that partition with its reason code.
"""

# No `from __future__ import annotations`: Dagster resolves the dg.Config parameter type at decoration time.

from pathlib import Path

import dagster as dg

from skill2env_dagster.artifacts import AXES, KNOWLEDGE, PLANS, SNAPSHOT
from skill2env_dagster.assets.common import asset_code_version, skills_partitions, skipped, stage_run, usage_metadata
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.knowledge import cached_knowledge
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.planning import plan_offline, plan_with_llm, sample_axes
from skill2env_dagster.reasons import ReasonCode, StoreError
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore


class AxisSamplingConfig(dg.Config):
    global_seed: int = 0
    variants_per_workflow: int = 1


def _content_digest(plans: WorkflowPlanSet) -> str:
    """Data version without usage, so a cache-hit re-run (different token counts) is not a data change."""
    return sha256_bytes(canonical_json(plans.model_dump(mode="json", exclude={"usage"})).encode())[:24]


def knowledge_of(st: ArtifactStore, skill: SkillRecord) -> SkillKnowledge:
    """The stored `skill_knowledge` when it matches this bundle, else a fresh extraction (same result)."""
    try:
        stored = st.load(KNOWLEDGE, skill.skill_id) if st.exists(KNOWLEDGE, skill.skill_id) else None
    except StoreError:
        stored = None
    return cached_knowledge(stored, skill)


def _plan(skill: SkillRecord, llm: LLMResource, version: str, knowledge: SkillKnowledge) -> WorkflowPlanSet:
    if llm.offline:
        return plan_offline(skill, prompt_version=version, knowledge=knowledge)
    return plan_with_llm(skill, llm.client(), prompt_version=version, model=llm.model)


def build_plan_assets(prompts_folder: Path | str | None = None) -> list[dg.AssetsDefinition]:
    """Both assets; tests pass a copy of the prompts folder to observe staleness after a template edit."""
    plans_version = asset_code_version(PLANS, prompts_folder)

    @dg.asset(
        name=PLANS.name, partitions_def=skills_partitions, deps=[KNOWLEDGE.name], pool="llm",
        code_version=plans_version, group_name="planning",
    )
    def workflow_plans(context: dg.AssetExecutionContext, llm: LLMResource,
                       artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        """Up to eight ranked, grounded workflows for one eligible skill (offline or LLM generator)."""
        key, st = context.partition_key, artifacts.store()
        skill = st.load(SNAPSHOT, key)
        if not skill.is_eligible:
            return skipped(st, PLANS, key, ReasonCode.NOT_ELIGIBLE, context.log)
        with stage_run(st, PLANS, key, "offline" if llm.offline else "llm", llm.model or None):
            plans = _plan(skill, llm, plans_version, knowledge_of(st, skill))
            st.save(PLANS, key, plans)
        return dg.MaterializeResult(data_version=dg.DataVersion(_content_digest(plans)), metadata={
            "status": "planned", "generator": plans.generator, "model": plans.model or "",
            "prompt_version": plans.prompt_version, "workflows": len(plans.workflows),
            "workflow_names": ", ".join(w.name for w in plans.workflows), **usage_metadata(plans.usage),
            "path": dg.MetadataValue.path(str(st.path(PLANS, key))),
        })

    @dg.asset(
        name=AXES.name, partitions_def=skills_partitions, deps=[workflow_plans],
        code_version=asset_code_version(AXES), group_name="planning",
    )
    def axis_samples(context: dg.AssetExecutionContext, config: AxisSamplingConfig,
                     artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        """Seeded diversification axes per planned workflow/variant (same inputs, same sample)."""
        key, st = context.partition_key, artifacts.store()
        if not st.exists(PLANS, key):
            return skipped(st, AXES, key, ReasonCode.NOT_ELIGIBLE, context.log)
        plans = st.load(PLANS, key)
        samples = sample_axes(plans, global_seed=config.global_seed,
                              variants_per_workflow=config.variants_per_workflow)
        digest = st.save(AXES, key, samples)
        return dg.MaterializeResult(data_version=dg.DataVersion(digest[:24]), metadata={
            "status": "sampled", "generator": plans.generator, "variants": len(samples.samples),
            "global_seed": samples.global_seed, "from_pool": sum(s.from_pool for s in samples.samples),
            "complexity": ", ".join(s.complexity for s in samples.samples),
            "path": dg.MetadataValue.path(str(st.path(AXES, key))),
        })

    return [workflow_plans, axis_samples]


workflow_plans, axis_samples = build_plan_assets()
plan_assets = [workflow_plans, axis_samples]
__all__ = ["axis_samples", "build_plan_assets", "plan_assets", "workflow_plans"]
