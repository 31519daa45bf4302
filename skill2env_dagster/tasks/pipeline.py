"""Create, gate, repair and publish the task candidates of one skill.

Per candidate: the builder runs the creator steps in the frozen order; the gates run on the staged folder; while
the only failures are the Oracle's or wrong.sh's (solution bugs), only solution/ is regenerated with the gate's
evidence, up to `max_repairs` times, and the freeze hash is re-checked every time. Then the folder is published
to the retained or the rejected area in one rename.
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from skill2env_dagster.gates.reuse import record_creation_gate
from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.models.axes import AxisSample, AxisSampleSet
from skill2env_dagster.models.gate import CheckResult, CheckVerdict, GateReport, GateVerdict, ShortcutAttempt
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.labels import to_label
from skill2env_dagster.models.plan import Workflow, WorkflowPlanSet
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.models.task import Axes, CreationGate, TaskBundle, TaskBundleSet, TaskStatus
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import (
    AgentTable,
    EnvironmentTable,
    NetworkMode,
    TaskInfo,
    TaskToml,
    VerifierTable,
)
from skill2env_dagster.reasons import LLM_ENDPOINT_CODES, ReasonCode, Skill2EnvError, is_retryable
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import (
    CreationContext,
    EnvironmentDraft,
    Provenance,
    TaskAuthor,
    TaskGenerator,
    make_context,
)
from skill2env_dagster.tasks.grounding import ground
from skill2env_dagster.tasks.publish import publish, staging_dir

log = logging.getLogger(__name__)

GateFn = Callable[[Path], GateReport]
REPAIRABLE_CHECKS = {"oracle", "wrong_solution"}
SOLUTION_SCRIPTS = ("solution/solve.sh:", "solution/wrong.sh:")  # bash_syntax problems a repair can fix
EVIDENCE_CHARS = 4000
AGENT_TIMEOUT_SEC = 1800.0
VERIFIER_TIMEOUT_SEC = 300.0


class CreationSettings(BaseModel):
    """How many candidates a skill gets and how often a failing solution is repaired (the asset's run config
    inherits these fields, so the bounds live here once)."""

    max_repairs: int = Field(default=2, ge=0, le=10, description="Solution-only repairs per candidate.")
    max_variants: int = Field(default=8, ge=1, le=64, description="Task candidates per skill, in sample order.")


def task_name(skill: SkillRecord, sample: AxisSample) -> str:
    """Deterministic: skill id + workflow + variant (≤ 200 chars, store-key safe)."""
    return f"{skill.skill_id[:120]}--{to_label(sample.workflow)}-v{sample.variant}"


def _pins(base_images: dict[str, str]) -> dict[str, str]:
    return {ref.split("@")[0]: ref.split("@")[1] for ref in base_images.values()}


def workflow_sources(workflow: Workflow, line_level: bool) -> list[str]:
    """What a workflow was planned on, for the static stage's check that the task grades a rule from it: the skill
    line of its focus when the generator builds on that line (offline), else the skill files the plan cites (a
    model writes its own blueprint from the workflow and may cite any line of them)."""
    if line_level and workflow.focus is not None:
        return [workflow.focus.source]
    files = {s.path for a in workflow.assets for s in a.sources if s.kind == "skill_file" and s.path}
    if workflow.focus is not None:
        files.add(workflow.focus.source.rsplit(":", 1)[0])
    return sorted(files)


def task_config(ctx: CreationContext, env: EnvironmentDraft, gen: Provenance) -> TaskToml:
    """task.toml before the freeze: identity, provenance, the six axes as realised, the blueprint's summary,
    timeouts, offline network."""
    s, skill = ctx.sample, ctx.skill
    blueprint = gen.blueprint(ctx)
    meta = {
        "source_skill": skill.skill_id, "source": skill.source, "source_commit": skill.source_commit or "",
        "source_bundle_digest": skill.bundle_digest, "workflow": s.workflow, "variant": s.variant,
        "archetype": env.archetype, "primary_verifier_pattern": env.verifier, "complexity": s.complexity,
        "persona": s.persona, "tone": s.tone, "expertise": s.expertise,
        "sampled_archetype": s.archetype, "sampled_verifier_pattern": s.primary_verifier_pattern,
        "capability_dimension": s.capability_dimension, "difficulty_pattern": s.difficulty_pattern,
        **({"added_patterns": s.added_patterns} if s.added_patterns else {}),  # by hardening rounds
        "recipe": env.recipe, "generator": gen.kind, "model": gen.model or "none",
        "prompt_version": gen.prompt_version, "base_image_pins": _pins({env.image: ctx.base_images[env.image]}),
        "workflow_sources": workflow_sources(ctx.workflow, gen.kind == "offline"),
        **(blueprint.summary() if blueprint else {}), **gen.metadata(ctx),
    }
    return TaskToml(
        task=TaskInfo(name=f"skill2env/{ctx.task_name}", description=ctx.workflow.summary[:300],
                      keywords=[env.archetype, env.verifier, skill.domain]),
        metadata=meta,
        agent=AgentTable(timeout_sec=AGENT_TIMEOUT_SEC),
        verifier=VerifierTable(timeout_sec=VERIFIER_TIMEOUT_SEC),
        environment=EnvironmentTable(build_timeout_sec=600, cpus=1, memory_mb=1024, network_mode=NetworkMode.NO_NETWORK,
                                     workdir="/app"),
    )


def build_candidate(builder: TaskBuilder, ctx: CreationContext,
                    gen: TaskGenerator) -> tuple[EnvironmentDraft, list[str]]:
    """The blueprint, then the creator steps in the frozen order (… → freeze → solution → cheats)."""
    gen.blueprint(ctx)
    env = gen.environment(ctx)
    builder.environment(env.files)
    builder.instruction(gen.instruction(ctx))
    tests, metrics = gen.tests(ctx)
    builder.tests(tests)
    builder.rubric(gen.rubric(ctx))
    builder.freeze(task_config(ctx, env, gen))
    builder.solution(gen.solution(ctx, ""))
    builder.cheats(gen.cheats(ctx))
    return env, metrics


def _solution_syntax(check: CheckResult) -> bool:
    """A bash_syntax failure that names only solve.sh or wrong.sh: a solution-only repair can fix it."""
    problems = check.evidence.split("; ")
    return check.name == "bash_syntax" and all(p.startswith(SOLUTION_SCRIPTS) for p in problems)


def _solution_leak(check: CheckResult) -> bool:
    """A no_leak failure where every leaked line comes from solution/ (a reference solution repeating a line of the
    world it reads): a solution-only repair can fix it, the frozen part is innocent."""
    problems = check.evidence.split("; ")
    return check.name == "no_leak" and all(" contains a line of solution/" in p for p in problems)


def repairable(report: GateReport) -> str | None:
    """Evidence for a solution-only repair, or None when some other check failed (or nothing did): a passing
    cheat, a blind verifier or a broken test is a verdict on the frozen task, never something to repair. A gate the
    engine failed during (infra_failed) is no evidence at all: its failed checks may be the engine's doing."""
    fails = [c for c in report.checks if c.verdict is CheckVerdict.FAIL]
    if report.verdict is GateVerdict.INFRA_FAILED or not fails or any(
            c.name not in REPAIRABLE_CHECKS and not _solution_syntax(c) and not _solution_leak(c) for c in fails):
        return None
    return repair_evidence(report)


def _attempts(label: str, attempts: list[ShortcutAttempt]) -> str:
    ran = [a for a in attempts if a.verdict is not CheckVerdict.SKIPPED]
    passed = [a for a in ran if a.verdict is CheckVerdict.FAIL]
    listed = passed or ran[:4]
    return (f"{label}: {len(ran)} run, {len(passed)} earned reward they must not; "
            + "; ".join(f"{a.name} mean {a.mean:.2f} {a.metrics} {a.reason or ''}".rstrip() for a in listed))


def repair_evidence(report: GateReport) -> str:
    """What the gates saw, for a solution-only repair: the failing checks (static ones too), the Oracle's and the
    no-op's per-metric rewards, wrong.sh's, and the mutant and cheat results when those stages ran."""
    lines = [f"failing check {c.name} ({c.reason.value if c.reason else '-'}): {c.evidence}"[:800]
             for c in report.checks if c.verdict is CheckVerdict.FAIL]
    lines.append(f"Oracle (solve.sh) per-metric rewards: {report.oracle or 'none'}")
    lines.append(f"no-op (untouched environment) per-metric rewards: {report.nop or 'none'}")
    if report.wrong is not None:
        lines.append(f"wrong.sh per-metric rewards: {report.wrong}")
    lines.append(_attempts("mutants of the Oracle's outputs", report.mutants) if report.mutants
                 else f"mutation testing: {report.mutation_testing}")
    if report.cheats:
        lines.append(_attempts("cheats", report.cheats))
    return "\n".join(lines)[:EVIDENCE_CHARS]


def gate_and_repair(builder: TaskBuilder, ctx: CreationContext, gen: TaskGenerator, gate: GateFn,
                    max_repairs: int) -> tuple[GateReport, int]:
    report = gate(builder.dir.root)
    attempts = 0
    while attempts < max_repairs and (evidence := repairable(report)):
        attempts += 1
        log.info("repair task=%s attempt=%d evidence=%s", ctx.task_name, attempts, evidence[:200])
        builder.solution(gen.solution(ctx, evidence), evidence=evidence)
        report = gate(builder.dir.root)
    return report, attempts


def create_task(store: ArtifactStore, ctx: CreationContext, gen: TaskGenerator | TaskAuthor, gate: GateFn,
                settings: CreationSettings, gate_version: str = "") -> tuple[TaskBundle, GateReport | None]:
    """One candidate end to end. Every failure — a creator contract, a gate, a failed model call, even a bug —
    becomes this candidate's recorded status and reason, never an exception that stops its siblings; the staging
    folder is gone afterwards whatever happened.

    The final gate report is kept with the folder's content digest and `gate_version`, so `gate_reports` can
    reuse it for the published folder (gates/reuse.py); an empty version marks it as never reusable."""
    if isinstance(gen, TaskAuthor):
        return _authored(store, ctx, gen, gate, settings, gate_version)
    staging = staging_dir(store, ctx.skill.skill_id, ctx.task_name)
    builder = TaskBuilder(staging)
    env: EnvironmentDraft | None = None
    metrics: list[str] = []
    report: GateReport | None = None
    creation: CreationGate | None = None
    attempts = 0
    blueprint = None
    reasons: list[ReasonCode] = []
    evidence: list[str] = []
    try:
        try:
            blueprint = gen.blueprint(ctx)
            env, metrics = build_candidate(builder, ctx, gen)
            report, attempts = gate_and_repair(builder, ctx, gen, gate, settings.max_repairs)
            if report.verdict is GateVerdict.RETAINED:  # only a retained task's report can be reused
                creation = record_creation_gate(report, builder.dir.root, gate_version)
            builder.check_frozen()
            if report.verdict is not GateVerdict.RETAINED:
                reasons = [report.reason or ReasonCode.INTERNAL_ERROR]
                evidence = [f"{c.name}: {c.evidence}"[:500] for c in report.checks
                            if c.verdict is not CheckVerdict.PASS]
        except Skill2EnvError as e:  # creator contract, gate set-up, or a model call that failed (LLMError)
            reasons, evidence = [e.reason], [str(e)[:500]]
        except Exception as e:  # a bug must not cost the other candidates their work; the log has the traceback
            log.exception("task skill=%s task=%s crashed", ctx.skill.skill_id, ctx.task_name)
            reasons, evidence = [ReasonCode.INTERNAL_ERROR], [f"{type(e).__name__}: {e}"[:500]]
        status = _status(reasons, report)
        size = builder.size_bytes()
        path = publish(store, staging, ctx.skill.skill_id, ctx.task_name, status == "retained",
                       [r.value for r in reasons], evidence, report)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("task skill=%s task=%s status=%s reasons=%s", ctx.skill.skill_id, ctx.task_name, status, reasons)
    bundle = bundle_record(ctx, env, metrics, builder, status, reasons, evidence, path, attempts, size, report,
                           creation)
    bundle.blueprint = blueprint
    return bundle, report


def _authored(store: ArtifactStore, ctx: CreationContext, author: TaskAuthor, gate: GateFn,
              settings: CreationSettings, gate_version: str) -> tuple[TaskBundle, GateReport | None]:
    """A TaskAuthor's candidate; a failure it did not record itself (a model call, a bug) still becomes this
    candidate's status and reason, never an exception that stops its siblings."""
    try:
        return author.author(store, ctx, gate, settings, gate_version)
    except Skill2EnvError as e:
        reasons, evidence = [e.reason], [str(e)[:500]]
    except Exception as e:  # a bug must not cost the other candidates their work; the log has the traceback
        log.exception("task skill=%s task=%s crashed", ctx.skill.skill_id, ctx.task_name)
        reasons, evidence = [ReasonCode.INTERNAL_ERROR], [f"{type(e).__name__}: {e}"[:500]]
    shutil.rmtree(staging_dir(store, ctx.skill.skill_id, ctx.task_name), ignore_errors=True)
    return bundle_record(ctx, None, [], None, _status(reasons, None), reasons, evidence, "", 0, 0, None, None), None


def _status(reasons: list[ReasonCode], report: GateReport | None) -> TaskStatus:
    """retained; error when the machine or the endpoint failed (not a verdict on the candidate); else rejected."""
    if not reasons:
        return "retained"
    if (report is not None and report.verdict is GateVerdict.INFRA_FAILED) or any(
            is_retryable(r) or r is ReasonCode.LLM_MISCONFIGURED for r in reasons):
        return "error"
    return "rejected"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def bundle_record(ctx: CreationContext, env: EnvironmentDraft | None, metrics: list[str],
                  builder: TaskBuilder | None, status: TaskStatus, reasons: list[ReasonCode], evidence: list[str],
                  path: Path | str, attempts: int, size: int, report: GateReport | None,
                  creation: CreationGate | None) -> TaskBundle:
    """The record of one finished candidate (`builder` None: it failed before a folder existed)."""
    s = ctx.sample
    final = TaskDir(Path(path))
    return TaskBundle(
        task_name=ctx.task_name, skill_id=ctx.skill.skill_id, workflow=s.workflow, variant=s.variant,
        axes=Axes(archetype=env.archetype if env else s.archetype,
                  primary_verifier_pattern=env.verifier if env else s.primary_verifier_pattern,
                  complexity=s.complexity, persona=s.persona, tone=s.tone, expertise=s.expertise),
        recipe=env.recipe if env else "none", image=env.image if env else "minimal", status=status,
        reasons=reasons, evidence=evidence, path=str(path), freeze_hash=(builder.freeze_hash if builder else "") or "",
        metrics=metrics, repair_attempts=attempts, steps=builder.records if builder else [], size_bytes=size,
        instruction_preview=_read(final.instruction), rubric=_read(final.rubric),
        gate_status=report.verdict.value if report else "", creation_gate=creation,
    )


def create_tasks_for_skill(store: ArtifactStore, skill: SkillRecord, plans: WorkflowPlanSet, axes: AxisSampleSet,
                           gen: TaskGenerator | TaskAuthor, gate: GateFn, base_images: dict[str, str],
                           settings: CreationSettings | None = None,
                           gate_version: str = "",
                           knowledge: SkillKnowledge | None = None) -> tuple[TaskBundleSet, dict[str, GateReport]]:
    """Every sampled variant of one skill becomes a candidate; returns the set and the gate reports by task
    (`gate_version` identifies the gate code behind `gate`, so its reports can be reused: see create_task)."""
    settings = settings or CreationSettings()
    knowledge = knowledge or extract_knowledge(skill)
    result = TaskBundleSet(skill_id=skill.skill_id, bundle_digest=skill.bundle_digest,
                           source_commit=skill.source_commit,
                           skill_md_path=str(Path(skill.abs_path) / skill.skill_file), generator=gen.kind,
                           model=gen.model, prompt_version=gen.prompt_version)
    workflows = {w.name: w for w in plans.workflows}
    grounding = ground(skill)
    reports: dict[str, GateReport] = {}
    for sample in axes.samples[: settings.max_variants]:
        workflow = workflows.get(sample.workflow)
        if workflow is None:
            log.warning("skill=%s variant=%d names unknown workflow %s", skill.skill_id, sample.variant,
                        sample.workflow)
            continue
        ctx = make_context(skill, workflow, sample, base_images, task_name(skill, sample), grounding, knowledge,
                           workflow.focus)
        bundle, report = create_task(store, ctx, gen, gate, settings, gate_version)
        result.bundles.append(bundle)
        if report is not None:
            reports[bundle.task_name] = report
    if not result.bundles:
        result.skipped_reason = plans.skipped_reason or ReasonCode.NOT_ELIGIBLE
    result.usage = gen.total_usage()
    _raise_if_endpoint_failed(result)
    return result, reports


def _raise_if_endpoint_failed(result: TaskBundleSet) -> None:
    """When no candidate got a verdict because the model endpoint failed for all of them, the skill's stage
    failed (so the run fails with the reason and run retries may apply): raise, carrying the usage spent."""
    errors = [b for b in result.bundles if b.status == "error"]
    if not result.bundles or len(errors) < len(result.bundles):
        return
    llm = [r for b in errors for r in b.reasons if r in LLM_ENDPOINT_CODES]
    if len(llm) < len(errors):
        return
    reason = Counter(llm).most_common(1)[0][0]
    first = next(b for b in errors if reason in b.reasons)
    raise LLMError(reason, f"all {len(errors)} candidate(s) failed on the model endpoint; first: "
                   f"{first.evidence[0] if first.evidence else reason.value}", usage=result.usage)
