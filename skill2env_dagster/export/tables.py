"""Flat Arrow tables (skills, plans, axes, tasks, gates, probe, usage) built from the stage artifacts.

Every table has an explicit schema so that an empty stage still yields a typed, queryable table rather than a
file without columns.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from skill2env_dagster.artifacts import PLANS, SNAPSHOT, TASKS
from skill2env_dagster.export.inputs import CorpusInputs
from skill2env_dagster.models.failure import StageFailure
from skill2env_dagster.models.probe import ALL_MODES

S, INT, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
LS = pa.list_(S)

SCHEMAS: dict[str, pa.Schema] = {
    "skills": pa.schema([("skill_id", S), ("source", S), ("rel_path", S), ("name", S), ("domain", S),
                         ("status", S), ("eligible", B), ("reasons", LS), ("license", S), ("duplicate_of", S),
                         ("bundle_digest", S), ("n_files", INT), ("body_chars", INT), ("failed_stage", S),
                         ("failure_reason", S), ("failure_message", S)]),
    "plans": pa.schema([("skill_id", S), ("rank", INT), ("workflow", S), ("summary", S), ("criteria_total", INT),
                        ("generator", S), ("model", S), ("prompt_version", S)]),
    "axes": pa.schema([("skill_id", S), ("variant", INT), ("workflow", S), ("archetype", S),
                       ("primary_verifier_pattern", S), ("complexity", S), ("persona", S), ("tone", S),
                       ("expertise", S), ("capability_dimension", S), ("difficulty_pattern", S),
                       ("from_pool", B), ("seed", pa.uint64())]),  # seeds are 64-bit unsigned
    "tasks": pa.schema([("task_name", S), ("skill_id", S), ("workflow", S), ("variant", INT), ("generator", S),
                        ("archetype", S), ("primary_verifier_pattern", S), ("complexity", S), ("persona", S),
                        ("tone", S), ("expertise", S), ("recipe", S), ("image", S), ("status", S),
                        ("reasons", LS), ("n_metrics", INT), ("repair_attempts", INT), ("size_bytes", INT),
                        ("path", S), ("contaminated", B)]),
    "gates": pa.schema([("skill_id", S), ("task_name", S), ("verdict", S), ("reason", S), ("check_name", S),
                        ("check_verdict", S), ("check_reason", S), ("seconds", F)]),
    "probe": pa.schema([("task_id", S), ("source_skill", S), ("generator", S), ("domain", S), ("status", S),
                        ("reason", S)] + [(f"rank_{m}", INT) for m in ALL_MODES]),
    "probe_skills": pa.schema([("skill_id", S), ("domain", S), ("n_tasks", INT), ("top1", F), ("mrr", F),
                               ("masked_top1", F)]),
    # cost_usd is NULL when tokens were spent at an unconfigured price ("unknown", never 0)
    "usage": pa.schema([("stage", S), ("skill_id", S), ("status", S), ("generator", S), ("calls", INT),
                        ("failed_calls", INT), ("cache_hits", INT), ("prompt_tokens", INT), ("completion_tokens", INT),
                        ("cost_usd", F)]),
}


def _skills(x: CorpusInputs) -> list[dict]:
    failed = x.first_failure()
    return [dict(skill_id=s.skill_id, source=s.source, rel_path=s.rel_path, name=s.name, domain=s.domain,
                 status=s.status.value, eligible=s.is_eligible, reasons=[r.value for r in s.reasons],
                 license=s.license,
                 duplicate_of=s.duplicate_of, bundle_digest=s.bundle_digest, n_files=len(s.files),
                 body_chars=len(s.body), **_failure_columns(failed.get(s.skill_id))) for s in x.skills]


def _failure_columns(f: StageFailure | None) -> dict[str, str | None]:
    if f is None:
        return {"failed_stage": None, "failure_reason": None, "failure_message": None}
    return {"failed_stage": f.stage, "failure_reason": f.reason.value, "failure_message": f.message}


def _plans(x: CorpusInputs) -> list[dict]:
    return [dict(skill_id=p.skill_id, rank=w.rank, workflow=w.name, summary=w.summary,
                 criteria_total=w.criteria.total(), generator=p.generator, model=p.model,
                 prompt_version=p.prompt_version) for p in x.plans for w in p.workflows]


def _axes(x: CorpusInputs) -> list[dict]:
    return [dict(skill_id=a.skill_id, **s.model_dump(exclude={"fallbacks"})) for a in x.axes for s in a.samples]


def _tasks(x: CorpusInputs) -> list[dict]:
    flagged = set(x.decontam.flagged) if x.decontam else set()
    return [dict(task_name=b.task_name, skill_id=b.skill_id, workflow=b.workflow, variant=b.variant,
                 generator=s.generator, **b.axes.model_dump(), recipe=b.recipe, image=b.image, status=b.status,
                 reasons=[r.value for r in b.reasons], n_metrics=len(b.metrics), repair_attempts=b.repair_attempts,
                 size_bytes=b.size_bytes, path=b.path, contaminated=b.task_name in flagged)
            for s in x.bundles for b in s.bundles]


def _gates(x: CorpusInputs) -> list[dict]:
    rows = []
    for g in x.gates:
        for name, r in sorted(g.reports.items()):
            base = dict(skill_id=g.skill_id, task_name=name, verdict=r.verdict.value,
                        reason=r.reason.value if r.reason else None)
            rows += [dict(base, check_name=c.name, check_verdict=c.verdict.value,
                          check_reason=c.reason.value if c.reason else None, seconds=c.seconds) for c in r.checks]
            if not r.checks:
                rows.append(dict(base, check_name=None, check_verdict=None, check_reason=None, seconds=r.seconds))
    return rows


def _probe(x: CorpusInputs) -> list[dict]:
    if x.probe is None:
        return []
    return [dict(task_id=t.task_id, source_skill=t.source_skill, generator=t.generator, domain=t.domain,
                 status=t.status, reason=t.reason.value if t.reason else None,
                 **{f"rank_{m}": t.ranks.get(m) for m in ALL_MODES}) for t in x.probe.per_task]


def _probe_skills(x: CorpusInputs) -> list[dict]:
    return [s.model_dump() for s in x.probe.per_skill] if x.probe else []


def _usage(x: CorpusInputs) -> list[dict]:
    """Every stage's model usage, the failed attempts included (their tokens were spent too)."""
    rows = [{"stage": PLANS.name, "skill_id": p.skill_id, "status": "ok", "generator": p.generator,
             **p.usage.model_dump()} for p in x.plans]
    rows += [{"stage": TASKS.name, "skill_id": b.skill_id, "status": "ok", "generator": b.generator,
              **b.usage.model_dump()} for b in x.bundles]
    # the screening second opinion generates no tasks: no generator, so it is not counted as one in `generators`
    rows += [{"stage": SNAPSHOT.name, "skill_id": s.skill_id, "status": "ok", "generator": None,
              **s.second_opinion.usage.model_dump()} for s in x.skills if s.second_opinion is not None]
    return rows + [{"stage": f.stage, "skill_id": skill_id, "status": "failed", "generator": f.generator,
                    **f.usage.model_dump()} for skill_id, f in x.stage_failures()]


BUILDERS: dict[str, Callable[[CorpusInputs], list[dict]]] = {
    "skills": _skills, "plans": _plans, "axes": _axes, "tasks": _tasks, "gates": _gates,
    "probe": _probe, "probe_skills": _probe_skills, "usage": _usage,
}


def build_tables(inputs: CorpusInputs) -> dict[str, pa.Table]:
    """One typed Arrow table per name in SCHEMAS (empty but typed when its stage has not run)."""
    return {name: pa.Table.from_pylist(BUILDERS[name](inputs), schema=SCHEMAS[name]) for name in SCHEMAS}
