"""Assets `task_bundles` and `gate_reports`, partitioned by skill, each with a blocking asset check.

`task_bundles` creates every sampled variant of a skill in the frozen creator order, gates each candidate on the
real engine, repairs solution-only failures, and publishes retained/rejected folders. `gate_reports` answers for
the published retained folders: it reuses a task's creation-time report while the folder's content and the gate
version are unchanged (gate once, gates/reuse.py) and gates the folder again otherwise, so what downstream
consumers read is verified as published. Both hold the `docker` pool: they build images and start containers.
"""

# No `from __future__ import annotations`: Dagster resolves the dg.Config parameter type at decoration time.

from pathlib import Path
from typing import Any

import dagster as dg

from skill2env_dagster.artifacts import AXES, GATES, KNOWLEDGE, PLANS, SNAPSHOT, TASKS
from skill2env_dagster.assets.common import (
    INFRA_RETRY,
    asset_code_version,
    infra_failures,
    skills_partitions,
    skipped,
    stage_run,
    usage_metadata,
)
from skill2env_dagster.assets.plans import knowledge_of
from skill2env_dagster.creator import CreatorAgent
from skill2env_dagster.creator.lab import DockerLab
from skill2env_dagster.creator.settings import limits_from_env
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.reuse import reusable_report
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.llm.tools import ToolChat
from skill2env_dagster.models.task import TaskBundle, TaskBundleSet, TaskGateReports
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource, env_task_fingerprint
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.tasks.generator import OfflineGenerator, TaskAuthor, TaskGenerator
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill

TASKS_VERSION = asset_code_version(TASKS, fingerprint=env_task_fingerprint())
GATES_VERSION = asset_code_version(GATES)
FROZEN_CHECK, PASS_CHECK = "retained_tasks_frozen", "retained_tasks_pass_gates"
# task_bundles records its run config under this key: run config is no part of Dagster's staleness, so a headless
# run compares it to decide whether a different --max-variants must re-create the tasks.
CREATION_SETTINGS_METADATA = "creation_settings"


class TaskCreationConfig(dg.Config, CreationSettings):
    """Run config of `task_bundles`: the domain's CreationSettings fields, defaults and bounds."""


def task_generator(llm: LLMResource, docker: DockerResource) -> TaskGenerator | TaskAuthor:
    """The offline recipes when no model is configured, else the creator agent: the model authors each task in
    the sandbox with the gate's own settings (S2E_CREATOR_* set its budgets)."""
    if llm.offline:
        return OfflineGenerator()
    settings = docker.settings()
    return CreatorAgent(ToolChat(llm.to_config()), llm.model, TASKS_VERSION, lambda: DockerLab(settings), settings,
                        limits_from_env())


def gate_version(docker: DockerResource) -> str:
    """The gates' code version plus the settings that can change a verdict (limits, timeouts, registries)."""
    return f"{GATES_VERSION}:{docker.verdict_fingerprint()}"


def _content_digest(result: TaskBundleSet) -> str:
    """Data version without usage and without the creation-time reports (their timings differ on every run), so
    re-creating identical tasks is no data change downstream."""
    dump = result.model_dump(mode="json", exclude={"usage": True,
                                                   "bundles": {"__all__": {"creation_gate": {"report"}}}})
    return sha256_bytes(canonical_json(dump).encode())[:24]


def _table(bundles: list[TaskBundle]) -> str:
    rows = [f"| {b.task_name} | {b.axes.archetype} | {b.axes.primary_verifier_pattern} | {b.status} | "
            f"{', '.join(r.value for r in b.reasons) or '-'} | {b.repair_attempts} |" for b in bundles]
    return "| task | archetype | verifier | status | reasons | repairs |\n|---|---|---|---|---|---|\n" + "\n".join(rows)


def _blueprints(bundles: list[TaskBundle]) -> str:
    """One row per blueprint: shape, rules (with their skill lines), challenges, required steps, fallbacks."""
    rows = []
    for b in bundles:
        bp = b.blueprint
        if bp is None:
            continue
        rules = "; ".join(f"{p.id} {p.kind} ({p.source.label})" for p in bp.predicates)
        challenges = ", ".join(f"{c.pattern}→{c.effect}" for c in bp.challenges) or "-"
        fallback = (bp.axes.fallback_reason or "-").replace("|", "/")[:120]
        rows.append(f"| {b.task_name} | {bp.shape} | {rules} | {challenges} | {bp.complexity.required_steps} | "
                    f"{fallback} |")
    head = ("| task | shape | rules (skill line) | challenges | required steps | axis fallback |\n"
            "|---|---|---|---|---|---|\n")
    return head + "\n".join(rows) if rows else "no blueprints"


def _bundle_metadata(result: TaskBundleSet, settings: CreationSettings) -> dict[str, Any]:
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
        "blueprints": dg.MetadataValue.md(_blueprints(result.bundles)),
        "task_folders": dg.MetadataValue.json([b.path for b in result.bundles]),
        "instruction_preview": dg.MetadataValue.md(first.instruction_preview if first else "(none)"),
        "rubric": dg.MetadataValue.md(first.rubric if first else "(none)"),
        "metrics": dg.MetadataValue.json({b.task_name: b.metrics for b in result.bundles}),
        "generator": result.generator,
        "model": result.model or "",
        "prompt_version": result.prompt_version,
        **usage_metadata(result.usage),
        CREATION_SETTINGS_METADATA: dg.MetadataValue.json(settings.model_dump(mode="json")),
    }


def _frozen_check(result: TaskBundleSet) -> dg.AssetCheckResult:
    """Every retained folder still hashes to its recorded freeze hash and names this skill as its source."""
    bad = [b.task_name for b in result.retained()
           if not Path(b.path).is_dir() or compute_freeze_hash(b.path) != b.freeze_hash
           or b.skill_id != result.skill_id]
    return dg.AssetCheckResult(check_name=FROZEN_CHECK, passed=not bad,
                               metadata={"retained": len(result.retained()), "modified": dg.MetadataValue.json(bad)})


@dg.asset(
    name=TASKS.name, partitions_def=skills_partitions, deps=[KNOWLEDGE.name, PLANS.name, AXES.name],
    group_name="tasks", kinds={"docker", "harbor"}, code_version=TASKS_VERSION, pool="docker", retry_policy=INFRA_RETRY,
    check_specs=[dg.AssetCheckSpec(FROZEN_CHECK, asset=TASKS.name, blocking=True,
                                   description="Retained tasks are unchanged since their freeze.")],
)
def task_bundles(context: dg.AssetExecutionContext, config: TaskCreationConfig, artifacts: ArtifactStoreResource,
                 docker: DockerResource, llm: LLMResource) -> dg.MaterializeResult:
    """Harbor task folders for one skill: created in frozen order, gated on the real engine, solution-repaired."""
    key, store = context.partition_key, artifacts.store()
    skill = store.load(SNAPSHOT, key)
    if not skill.is_eligible or not store.exists(PLANS, key) or not store.exists(AXES, key):
        return skipped(store, TASKS, key, ReasonCode.NOT_ELIGIBLE, context.log, check_results=[
            dg.AssetCheckResult(check_name=FROZEN_CHECK, passed=True, metadata={"skipped": "not_eligible"})])
    plans, axes = store.load(PLANS, key), store.load(AXES, key)
    settings = CreationSettings.model_validate(config.model_dump())
    gen = task_generator(llm, docker)
    with stage_run(store, TASKS, key, gen.kind, gen.model):
        result, reports = create_tasks_for_skill(store, skill, plans, axes, gen, docker.gate, docker.base_images(),
                                                 settings, gate_version(docker), knowledge_of(store, skill))
        infra_failures(store, TASKS, key, reports.values(), gen.kind, gen.model)
        store.save(TASKS, key, result)
    context.log.info(f"task_bundles skill={key} created={len(result.bundles)} retained={len(result.retained())}")
    return dg.MaterializeResult(data_version=dg.DataVersion(_content_digest(result)),
                                metadata=_bundle_metadata(result, settings), check_results=[_frozen_check(result)])


def _verdicts(reports: TaskGateReports) -> str:
    rows = [f"| {name} | {r.verdict.value} | {r.reason.value if r.reason else '-'} | {r.oracle} | {r.nop} |"
            for name, r in sorted(reports.reports.items())]
    return "| task | verdict | reason | oracle | nop |\n|---|---|---|---|---|\n" + "\n".join(rows)


@dg.asset(
    name=GATES.name, partitions_def=skills_partitions, deps=[TASKS.name], group_name="tasks", kinds={"docker"},
    code_version=GATES_VERSION, pool="docker", retry_policy=INFRA_RETRY,
    check_specs=[dg.AssetCheckSpec(PASS_CHECK, asset=GATES.name, blocking=True,
                                   description="Every retained task passes every gate from its published folder.")],
)
def gate_reports(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource,
                 docker: DockerResource) -> dg.MaterializeResult:
    """One gate report per published retained task: the creation-time one while it still stands for the folder,
    else the gates again (static checks, build, Oracle, no-op, wrong.sh)."""
    key, store = context.partition_key, artifacts.store()
    retained = store.load(TASKS, key).retained() if store.exists(TASKS, key) else []
    version = gate_version(docker)
    reused = {b.task_name: r for b in retained if (r := reusable_report(b.creation_gate, b.path, version))}
    regate = [b for b in retained if b.task_name not in reused]
    gated = docker.gate_many([b.path for b in regate]) if regate else []
    found = dict(zip((b.task_name for b in regate), gated, strict=True))
    infra_failures(store, GATES, key, gated, "offline", None)
    reports = TaskGateReports(skill_id=key, reports={b.task_name: reused.get(b.task_name) or found[b.task_name]
                                                     for b in retained}, reused=sorted(reused))
    store.save(GATES, key, reports)
    context.log.info(f"gate_reports skill={key} reused={len(reused)} gated={len(regate)}")
    failing = reports.failing()
    content = sha256_bytes(canonical_json({k: r.verdict.value for k, r in reports.reports.items()}).encode())
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content[:24]),
        metadata={"tasks": len(reports.reports), "passing": len(reports.reports) - len(failing),
                  "reused_creation_gate": len(reused), "gated_again": len(regate),
                  "verdicts": dg.MetadataValue.md(_verdicts(reports) if reports.reports else "no retained tasks"),
                  "task_folders": dg.MetadataValue.json([b.path for b in retained])},
        check_results=[dg.AssetCheckResult(check_name=PASS_CHECK, passed=not failing,
                                           metadata={"failing": dg.MetadataValue.json(failing)})],
    )


TASK_ASSETS = [task_bundles, gate_reports]
