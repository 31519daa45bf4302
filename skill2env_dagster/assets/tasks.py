"""Assets `task_bundles` and `gate_reports`, partitioned by skill, each with a blocking asset check.

`task_bundles` creates every sampled variant of a skill in the frozen creator order, gates each candidate on the
real engine, repairs solution-only failures, and publishes retained/rejected folders. `gate_reports` re-runs the
gates on the published retained folders, so what downstream consumers read is verified as published.
"""


import hashlib
from pathlib import Path

import dagster as dg

from skill2env_dagster.assets.partitions import skills_partitions
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.models.axes import AxisSampleSet
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.skill import SkillRecord, SkillStatus
from skill2env_dagster.models.task import TaskBundle, TaskBundleSet, TaskGateReports
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore, canonical_json, sha256_bytes
from skill2env_dagster.tasks import recipes
from skill2env_dagster.reasons import LLMError, is_retryable
from skill2env_dagster.resources.llm import LLMResource, env_fingerprint
from skill2env_dagster.tasks.generator import OfflineGenerator, TaskGenerator
from skill2env_dagster.tasks.llm_generator import LLMGenerator, task_prompts_version
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill

SNAPSHOT, PLANS, AXES = "skillhub_snapshot", "workflow_plans", "axis_samples"
TASKS, GATES = "task_bundles", "gate_reports"


class TaskCreationConfig(dg.Config):
    max_variants: int = 8
    max_repairs: int = 2


FROZEN_CHECK, PASS_CHECK = "retained_tasks_frozen", "retained_tasks_pass_gates"


def _code_version() -> str:
    """Recipes, wording and the creator decide every offline task, the task prompts (and model settings) every
    model-made one: a change to either marks all bundles stale."""
    h = hashlib.sha256()
    folder = Path(recipes.__file__).parent.parent
    for p in sorted(folder.rglob("*.py")):
        h.update(p.read_bytes())
    return f"{h.hexdigest()[:12]}+{task_prompts_version(env_fingerprint())}"


def _generator(llm: LLMResource) -> TaskGenerator:
    """The offline recipes when no model is configured, else one model call per creation step."""
    if llm.is_offline():
        return OfflineGenerator()
    return LLMGenerator(llm.client(), llm.model, task_prompts_version(llm.fingerprint()))


def _table(bundles: list[TaskBundle]) -> str:
    rows = [f"| {b.task_name} | {b.axes.archetype} | {b.axes.primary_verifier_pattern} | {b.status} | "
            f"{', '.join(r.value for r in b.reasons) or '-'} | {b.repair_attempts} |" for b in bundles]
    return "| task | archetype | verifier | status | reasons | repairs |\n|---|---|---|---|---|---|\n" + "\n".join(rows)


def _bundle_metadata(result: TaskBundleSet) -> dict[str, object]:
    retained = result.retained()
    first = retained[0] if retained else (result.bundles[0] if result.bundles else None)
    return {
        "skill_md": dg.MetadataValue.path(result.skill_md_path),
        "source_commit": result.source_commit or "",
        "bundle_digest": result.bundle_digest,
        "created": len(result.bundles),
        "retained": len(retained),
        "rejected_by_reason": dg.MetadataValue.json(result.reason_histogram()),
        "tasks": dg.MetadataValue.md(_table(result.bundles) if result.bundles else "no candidates"),
        "task_folders": dg.MetadataValue.json([b.path for b in result.bundles]),
        "instruction_preview": dg.MetadataValue.md(first.instruction_preview if first else "(none)"),
        "rubric": dg.MetadataValue.md(first.rubric if first else "(none)"),
        "metrics": dg.MetadataValue.json({b.task_name: b.metrics for b in result.bundles}),
        "generator": result.generator,
        "model": result.model or "",
        "prompt_version": result.prompt_version,
        "llm_calls": result.usage.calls, "cache_hits": result.usage.cache_hits,
        "prompt_tokens": result.usage.prompt_tokens, "completion_tokens": result.usage.completion_tokens,
        "cost_usd": dg.MetadataValue.float(result.usage.cost_usd),
    }


def _frozen_check(result: TaskBundleSet) -> dg.AssetCheckResult:
    """Every retained folder still hashes to its recorded freeze hash and names this skill as its source."""
    bad = [b.task_name for b in result.retained()
           if not Path(b.path).is_dir() or compute_freeze_hash(b.path) != b.freeze_hash or b.skill_id != result.skill_id]
    return dg.AssetCheckResult(check_name=FROZEN_CHECK, passed=not bad,
                               metadata={"retained": len(result.retained()), "modified": dg.MetadataValue.json(bad)})


def _skip(store: ArtifactStore, key: str, reason: str) -> dg.Output | dg.MaterializeResult:
    store.path(TASKS, key).unlink(missing_ok=True)
    return dg.MaterializeResult(data_version=dg.DataVersion(f"skipped:{reason}"),
                                metadata={"status": "skipped", "reason": reason},
                                check_results=[dg.AssetCheckResult(check_name=FROZEN_CHECK, passed=True,
                                                                   metadata={"skipped": reason})])


@dg.asset(
    name=TASKS, partitions_def=skills_partitions, deps=[PLANS, AXES], group_name="tasks", kinds={"docker", "harbor"},
    code_version=_code_version(),
    check_specs=[dg.AssetCheckSpec(FROZEN_CHECK, asset=TASKS, blocking=True,
                                   description="Retained tasks are unchanged since their freeze.")],
)
def task_bundles(context: dg.AssetExecutionContext, config: TaskCreationConfig, artifacts: ArtifactStoreResource,
                 docker: DockerResource, llm: LLMResource) -> dg.MaterializeResult:
    """Harbor task folders for one skill: created in frozen order, gated on the real engine, solution-repaired."""
    key, store = context.partition_key, artifacts.store()
    skill = store.load(SNAPSHOT, key, SkillRecord)
    if skill.status is not SkillStatus.ELIGIBLE or not store.exists(PLANS, key) or not store.exists(AXES, key):
        return _skip(store, key, "not_eligible")
    plans, axes = store.load(PLANS, key, WorkflowPlanSet), store.load(AXES, key, AxisSampleSet)
    settings = CreationSettings(max_repairs=config.max_repairs, max_variants=config.max_variants)
    gen = _generator(llm)
    try:
        result, _ = create_tasks_for_skill(store, skill, plans, axes, gen, docker.gate, docker.base_images(), settings)
    except LLMError as e:
        raise dg.Failure(description=f"task creation for {key} failed: {e}", metadata={"reason": e.reason.value},
                         allow_retries=is_retryable(e.reason)) from e
    if isinstance(gen, LLMGenerator):
        result.usage = gen.total_usage()
    digest = store.save(TASKS, key, result)
    context.log.info(f"task_bundles skill={key} created={len(result.bundles)} retained={len(result.retained())}")
    return dg.MaterializeResult(data_version=dg.DataVersion(digest[:24]), metadata=_bundle_metadata(result),
                                check_results=[_frozen_check(result)])


def _verdicts(reports: TaskGateReports) -> str:
    rows = [f"| {name} | {r.verdict.value} | {r.reason.value if r.reason else '-'} | {r.oracle} | {r.nop} |"
            for name, r in sorted(reports.reports.items())]
    return "| task | verdict | reason | oracle | nop |\n|---|---|---|---|---|\n" + "\n".join(rows)


@dg.asset(
    name=GATES, partitions_def=skills_partitions, deps=[TASKS], group_name="tasks", kinds={"docker"},
    check_specs=[dg.AssetCheckSpec(PASS_CHECK, asset=GATES, blocking=True,
                                   description="Every retained task passes every gate from its published folder.")],
)
def gate_reports(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource,
                 docker: DockerResource) -> dg.MaterializeResult:
    """The gates re-run on one skill's published retained tasks: static checks, build, Oracle, no-op, wrong.sh."""
    key, store = context.partition_key, artifacts.store()
    retained = store.load(TASKS, key, TaskBundleSet).retained() if store.exists(TASKS, key) else []
    found = docker.gate_many([b.path for b in retained]) if retained else []
    reports = TaskGateReports(skill_id=key, reports={b.task_name: r for b, r in zip(retained, found)})
    store.save(GATES, key, reports)
    failing = reports.failing()
    content = sha256_bytes(canonical_json({k: r.verdict.value for k, r in reports.reports.items()}).encode())
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content[:24]),
        metadata={"tasks": len(reports.reports), "passing": len(reports.reports) - len(failing),
                  "verdicts": dg.MetadataValue.md(_verdicts(reports) if reports.reports else "no retained tasks"),
                  "task_folders": dg.MetadataValue.json([b.path for b in retained])},
        check_results=[dg.AssetCheckResult(check_name=PASS_CHECK, passed=not failing,
                                           metadata={"failing": dg.MetadataValue.json(failing)})],
    )


TASK_ASSETS = [task_bundles, gate_reports]
