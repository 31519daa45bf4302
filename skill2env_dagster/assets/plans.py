"""Assets `workflow_plans` and `axis_samples`, partitioned by skill.

Thin wrappers over `planning/`: read the skill from the store, plan (offline or LLM), write, report. The
code_version of `workflow_plans` is a hash of its prompt template(s), the model settings and the offline planner
version, so editing a prompt marks its partitions stale; `axis_samples` hashes the axis catalogues instead.
A skill that is not an eligible canonical skill is recorded as skipped (metadata status=skipped,
reason=not_eligible, no artifact file); an LLM failure fails only that partition with its reason code.
"""


from pathlib import Path

import dagster as dg

from skill2env_dagster.assets.partitions import skills_partitions
from skill2env_dagster.llm.prompts import prompt_version
from skill2env_dagster.models.axes import AxisSampleSet
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.planning import ineligibility, plan_offline, plan_with_llm, sample_axes
from skill2env_dagster.planning.axes import SAMPLER_VERSION
from skill2env_dagster.planning.catalogue import catalogue_digest
from skill2env_dagster.planning.llm_planner import PLAN_TEMPLATE
from skill2env_dagster.planning.offline import OFFLINE_PLANNER_VERSION
from skill2env_dagster.reasons import LLMError, is_retryable
from skill2env_dagster.resources.llm import LLMResource, env_fingerprint
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore, canonical_json, sha256_bytes

SNAPSHOT = "skillhub_snapshot"
PLANS = "workflow_plans"
AXES = "axis_samples"


class AxisSamplingConfig(dg.Config):
    global_seed: int = 0
    variants_per_workflow: int = 1


def plans_code_version(prompts_folder: Path | str | None = None, fingerprint: dict | None = None) -> str:
    fp = env_fingerprint() if fingerprint is None else fingerprint
    return f"{OFFLINE_PLANNER_VERSION}+{prompt_version(PLAN_TEMPLATE, fp, folder=prompts_folder)}"


def _content_digest(plans: WorkflowPlanSet) -> str:
    """Data version without usage, so a cache-hit re-run (different token counts) is not a data change."""
    return sha256_bytes(canonical_json(plans.model_dump(mode="json", exclude={"usage"})).encode())[:24]


def _skip(store: ArtifactStore, artifact: str, key: str, reason: str, log: object) -> dg.MaterializeResult:
    store.path(artifact, key).unlink(missing_ok=True)  # never leave a stale plan behind for a skipped skill
    getattr(log, "info")(f"{artifact} skill={key} status=skipped reason={reason}")
    return dg.MaterializeResult(data_version=dg.DataVersion(f"skipped:{reason}"),
                                metadata={"status": "skipped", "reason": reason})


def _plan(skill: SkillRecord, llm: LLMResource, prompts_folder: Path | str | None) -> WorkflowPlanSet:
    version = prompt_version(PLAN_TEMPLATE, llm.fingerprint(), folder=prompts_folder)
    if llm.is_offline():
        return plan_offline(skill, prompt_version=version)
    return plan_with_llm(skill, llm.client(), prompt_version=version, model=llm.model)


def build_plan_assets(prompts_folder: Path | str | None = None) -> list[dg.AssetsDefinition]:
    """Both assets; tests pass a copy of the prompts folder to observe staleness after a template edit."""

    @dg.asset(
        name=PLANS, partitions_def=skills_partitions, deps=[SNAPSHOT], pool="llm",
        code_version=plans_code_version(prompts_folder), group_name="planning",
    )
    def workflow_plans(context: dg.AssetExecutionContext, llm: LLMResource,
                       artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        """Up to eight ranked, grounded workflows for one eligible skill (offline or LLM generator)."""
        key, st = context.partition_key, artifacts.store()
        skill = st.load(SNAPSHOT, key, SkillRecord)
        if (reason := ineligibility(skill)) is not None:
            return _skip(st, PLANS, key, reason.value, context.log)
        try:
            plans = _plan(skill, llm, prompts_folder)
        except LLMError as e:
            raise dg.Failure(description=str(e), metadata={"reason": e.reason.value},
                             allow_retries=is_retryable(e.reason)) from e
        st.save(PLANS, key, plans)
        u = plans.usage
        return dg.MaterializeResult(data_version=dg.DataVersion(_content_digest(plans)), metadata={
            "status": "planned", "generator": plans.generator, "model": plans.model or "",
            "prompt_version": plans.prompt_version, "workflows": len(plans.workflows),
            "workflow_names": ", ".join(w.name for w in plans.workflows),
            "llm_calls": u.calls, "cache_hits": u.cache_hits, "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens, "cost_usd": dg.MetadataValue.float(u.cost_usd),
            "path": dg.MetadataValue.path(str(st.path(PLANS, key))),
        })

    @dg.asset(
        name=AXES, partitions_def=skills_partitions, deps=[workflow_plans],
        code_version=f"{SAMPLER_VERSION}+{catalogue_digest()}", group_name="planning",
    )
    def axis_samples(context: dg.AssetExecutionContext, config: AxisSamplingConfig,
                     artifacts: ArtifactStoreResource) -> dg.MaterializeResult:
        """Seeded diversification axes per planned workflow/variant (same inputs, same sample)."""
        key, st = context.partition_key, artifacts.store()
        if not st.exists(PLANS, key):
            return _skip(st, AXES, key, "not_eligible", context.log)
        plans = st.load(PLANS, key, WorkflowPlanSet)
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
__all__ = ["AxisSampleSet", "axis_samples", "build_plan_assets", "plan_assets", "workflow_plans"]
