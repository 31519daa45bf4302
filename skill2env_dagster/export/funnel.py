"""The funnel a headless run reports: how many skills entered, where they left and why, how many tasks came out,
and how much work the run did to get there.

Counted from the artifact store over the skills of the current crawl, so a second run over an unchanged hub
reports the same funnel with zero work, and skills removed from the hub (or outside `--only`) do not count. Every
count is of skills, from their final records (the snapshot, after the model's second opinion; the crawl's record
only for a skill whose snapshot is missing or of another bundle): a skill the opinion cleared counts as eligible.
Screened-out skills are counted once, their reasons apart (a skill may carry several); non-blocking findings
(licence_unknown, standin_possible) are recorded, not screened out, and shown apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.artifacts import (
    CORPUS_KEY,
    GATES,
    HARDENING,
    JUDGE,
    PLANS,
    ROLLOUTS,
    SFT,
    SNAPSHOT,
    STATS,
    TASKS,
)
from skill2env_dagster.export.hardened import with_hardened
from skill2env_dagster.export.inputs import load_inputs
from skill2env_dagster.export.stats import corpus_stats
from skill2env_dagster.export.tables import build_tables
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.models.plan import Usage, total_usage
from skill2env_dagster.models.skill import SkillRecord, SkillStatus
from skill2env_dagster.reasons import INFO_CODES, ReasonCode
from skill2env_dagster.store import ArtifactStore


class SkillCounts(BaseModel):
    """How far one skill (or a sum of skills) got: what the progress view shows while a run goes on."""

    model_config = ConfigDict(extra="forbid")

    planned: int = 0
    created: int = 0
    retained: int = Field(default=0, description="Tasks whose gate report (from their published folder) is retained.")
    rejected_by_reason: dict[str, int] = Field(default_factory=dict)
    without_tasks: dict[str, str] = Field(default_factory=dict, description="Skill -> why it has no retained task "
                                          "(no_checkable_rule and the plan's first refusal, or its rejections).")

    def __add__(self, other: SkillCounts) -> SkillCounts:
        rejected = Counter(self.rejected_by_reason) + Counter(other.rejected_by_reason)
        return SkillCounts(planned=self.planned + other.planned, created=self.created + other.created,
                           retained=self.retained + other.retained, rejected_by_reason=dict(rejected),
                           without_tasks={**self.without_tasks, **other.without_tasks})


class FailedPartition(BaseModel):
    """A partition whose run failed: the others carry on, and this one is listed with why."""

    model_config = ConfigDict(extra="forbid")

    partition: str
    stage: str = Field(description="The asset (step) that failed, or 'run' when it failed outside any asset.")
    reason: str = Field(description="A reason code from reasons.py when the failure carries one, else the error type.")
    message: str = ""


class WorkDone(BaseModel):
    """What this run had to do: a run over an unchanged hub reports zero partitions run."""

    model_config = ConfigDict(extra="forbid")

    partitions: int = Field(default=0, description="Skill partitions in scope (all crawled, or --only).")
    up_to_date: int = Field(default=0, description="Partitions with nothing stale or missing: no run launched.")
    ran: int = Field(default=0, description="Partitions that materialised at least one asset.")
    ran_partitions: list[str] = Field(default_factory=list, description="Which ones (after an edit: the edited).")
    failed: int = 0
    runs: int = Field(default=0, description="Dagster runs launched for partitions (one per staleness round).")
    assets_materialized: int = 0
    analytics: Literal["ran", "up_to_date", "failed", "not_run"] = "not_run"
    workers: int = 1
    seconds: float = 0.0
    seconds_by_stage: dict[str, float] = Field(default_factory=dict, description="Asset -> seconds summed over runs.")


class RolloutSummary(BaseModel):
    """Solver rollouts, judge and SFT rows of the skills in scope — or why there are none (an honest status, never a
    made-up score): `no_model` without a solver endpoint, `not_requested` without `--rollouts`."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["skipped", "ran", "up_to_date", "failed"] = "skipped"
    reason: Literal["no_model", "not_requested", ""] = "not_requested"
    ran: int = Field(default=0, description="Skills whose skill_rollouts run this run launched.")
    up_to_date: int = 0
    failed: int = 0
    tasks: int = 0
    rollouts: int = 0
    labels: dict[str, int] = Field(default_factory=dict, description="Difficulty label -> tasks.")
    judged: int = Field(default=0, description="Episodes judged, hardened rebuilds' included.")
    judge_failed: int = 0
    hardened_judged: int = Field(default=0, description="Of `judged`, episodes of hardened rebuilds.")
    judge_scale: dict[str, int] = Field(default_factory=dict, description=(
        "Tasks by the judge's calibration: ok | judge_miscalibrated (judge term out) | unchecked."))
    hacking: int = Field(default=0, description="Episodes with evidenced hacking: reward 0, no SFT row.")
    sft_rows: int = 0
    llm_usage: dict[str, object] = Field(default_factory=dict, description="Solver and judge calls, tokens, cost.")


class Funnel(BaseModel):
    """Crawled → screened out by reason → duplicates → planned → created → retained / rejected by reason."""

    model_config = ConfigDict(extra="forbid")

    generator: str = Field(default="", description="The generator the code location used (from S2E_LLM_*).")
    generators: dict[str, int] = Field(default_factory=dict, description="Generator -> skills it handled.")
    llm_usage: dict[str, object] = Field(
        default_factory=dict, description="Model calls, failed calls, tokens and cost (USD, or 'unknown' when no "
        "price is configured: never a made-up 0); failed stages included.")
    skills_crawled: int = 0
    sources_unavailable: dict[str, str] = Field(default_factory=dict, description="Source name -> why it was not "
                                                "crawled (its skills are missing from every count below).")
    screened_out: int = Field(default=0, description="Skills screened out (each once, whatever its reasons).")
    screened_out_by_reason: dict[str, int] = Field(default_factory=dict, description="Reason -> screened-out skills "
                                                   "carrying it (a skill may carry several).")
    recorded_by_reason: dict[str, int] = Field(default_factory=dict, description="Non-blocking finding -> skills "
                                               "carrying it, whatever their status (recorded, not screened out).")
    second_opinion: dict[str, int] = Field(default_factory=dict, description="The model's second opinion on these "
                                           "skills: asked, answered from its cache, failed (the rules' verdict "
                                           "stood), cleared (screened out -> eligible), screened_out (eligible -> "
                                           "screened out).")
    duplicates: int = 0
    invalid: int = 0
    eligible: int = 0
    planned: int = 0
    created: int = 0
    retained: int = 0
    rejected_by_reason: dict[str, int] = Field(default_factory=dict)
    no_checkable_rule: int = Field(default=0, description="Planned skills no rule of which decides a task (offline).")
    without_tasks: dict[str, str] = Field(default_factory=dict, description="Planned skill -> why it has no retained "
                                          "task: no_checkable_rule with the first rule refused and why, or the "
                                          "rejections of its candidates.")
    failed_partitions: list[FailedPartition] = Field(default_factory=list)
    failed_by_stage: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Stage -> reason -> skills whose last run of that stage failed.")
    failure_examples: dict[str, str] = Field(default_factory=dict, description="Reason -> one failure message.")
    retrieval_probe: dict[str, object] = Field(default_factory=dict)
    rollouts: RolloutSummary = Field(default_factory=RolloutSummary)
    work: WorkDone = Field(default_factory=WorkDone)
    exported: list[str] = Field(default_factory=list, description="Task folders copied to tasks_dir.")
    tasks_dir: str = ""
    export_dir: str = ""
    dagster_home: str = ""
    log_file: str = ""


def _why_none(store: ArtifactStore, skill_id: str, rejected: dict[str, int]) -> str:
    """Why a planned skill has no retained task, in one line."""
    plans = store.load(PLANS, skill_id)
    if plans.skipped_reason is not None:
        why = plans.refusals[0] if plans.refusals else ""
        return f"{plans.skipped_reason.value}: {why}".rstrip(": ")
    if rejected:
        return "rejected: " + ", ".join(f"{r} {n}" for r, n in sorted(rejected.items(), key=lambda x: -x[1]))
    return "not created yet"


def skill_counts(store: ArtifactStore, skill_id: str) -> SkillCounts:
    """One skill's stage counts from its artifacts (zero for a stage it never reached)."""
    planned = store.exists(PLANS, skill_id)
    if not store.exists(TASKS, skill_id):
        return SkillCounts(planned=int(planned),
                           without_tasks={skill_id: _why_none(store, skill_id, {})} if planned else {})
    bundles = store.load(TASKS, skill_id)
    gates = store.load(GATES, skill_id) if store.exists(GATES, skill_id) else None
    verified = {n for n, r in gates.reports.items() if r.verdict is GateVerdict.RETAINED} if gates else set()
    retained = sum(b.task_name in verified for b in bundles.bundles)
    rejected = bundles.reason_histogram()
    return SkillCounts(
        planned=int(planned),
        created=len(bundles.bundles),
        retained=retained,
        rejected_by_reason=rejected,
        without_tasks={skill_id: _why_none(store, skill_id, rejected)} if planned and not retained else {},
    )


def skill_verdict(record: SkillRecord | None) -> str:
    """What the crawl decided for one skill, in words for the progress line: why a skill made no task is the
    first thing a user watching a run asks."""
    if record is None:
        return "not crawled"
    if record.duplicate_of:
        return f"duplicate of {record.duplicate_of}"
    if record.fixture_of:
        return f"test fixture of {record.fixture_of}"
    if record.is_eligible:
        return "eligible"
    blocking = ", ".join(r.value for r in record.reasons if r is not ReasonCode.LICENCE_UNKNOWN)
    return f"{record.status.value.replace('_', ' ')}{f': {blocking}' if blocking else ''}"


def final_records(store: ArtifactStore, crawled: dict[str, SkillRecord]) -> dict[str, SkillRecord]:
    """Each crawled skill's final record: its stored snapshot (the verdict after the second opinion) when that is
    of the same bundle, else the crawl's record (no snapshot yet, or one of an older bundle)."""
    out: dict[str, SkillRecord] = {}
    for key, record in crawled.items():
        snap = store.load(SNAPSHOT, key) if store.exists(SNAPSHOT, key) else None
        out[key] = snap if snap is not None and snap.bundle_digest == record.bundle_digest else record
    return out


def screened_reasons(skills: Iterable[SkillRecord]) -> Counter[str]:
    """Reason -> screened-out skills carrying it (non-blocking findings left out: they screen nothing out)."""
    return Counter(r.value for s in skills if s.status is SkillStatus.SCREENED_OUT
                   for r in set(s.reasons) if r not in INFO_CODES)


def recorded_reasons(skills: Iterable[SkillRecord]) -> Counter[str]:
    """Non-blocking finding -> skills carrying it, whatever their status."""
    return Counter(r.value for s in skills for r in set(s.reasons) if r in INFO_CODES)


def opinion_counts(skills: Iterable[SkillRecord]) -> dict[str, int]:
    """What the second opinion did to these skills (empty when it was asked about none)."""
    ops = [(s, s.second_opinion) for s in skills if s.second_opinion is not None]
    if not ops:
        return {}
    answered = [(s, op) for s, op in ops if op.status == "answered"]
    return {
        "asked": len(ops),
        "cached": sum(op.cached for _, op in ops),
        "failed": sum(op.status == "failed" for _, op in ops),
        "cleared": sum(bool(op.cleared) and s.is_eligible for s, op in answered),
        "screened_out": sum(bool(op.added) and s.status is SkillStatus.SCREENED_OUT and not (set(s.reasons) - set(
            op.added) - INFO_CODES) for s, op in answered),
    }


def _by_count(counts: Counter[str]) -> dict[str, int]:
    """Most common first, ties by name: the same counts always print the same line."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def crawl_funnel(skills: Iterable[SkillRecord], counts: SkillCounts) -> Funnel:
    """The funnel of the current crawl's skills (their final records), given their summed stage counts."""
    skills = list(skills)
    return Funnel(
        skills_crawled=len(skills),
        screened_out=sum(s.status is SkillStatus.SCREENED_OUT for s in skills),
        screened_out_by_reason=_by_count(screened_reasons(skills)),
        recorded_by_reason=_by_count(recorded_reasons(skills)),
        second_opinion=opinion_counts(skills),
        duplicates=sum(s.status is SkillStatus.DUPLICATE for s in skills),
        invalid=sum(s.status is SkillStatus.INVALID for s in skills),
        eligible=sum(s.is_eligible for s in skills),
        planned=counts.planned,
        created=counts.created,
        retained=counts.retained,
        rejected_by_reason=dict(Counter(counts.rejected_by_reason).most_common()),
        no_checkable_rule=sum(why.startswith(ReasonCode.NO_CHECKABLE_RULE.value)
                              for why in counts.without_tasks.values()),
        without_tasks=dict(sorted(counts.without_tasks.items())),
    )


def add_model_use(funnel: Funnel, store: ArtifactStore, stats_current: bool) -> None:
    """Generators, model usage and stage failures from the statistics the export computes (export/stats.py), so
    the funnel, `stats.json` and the export tables agree. Like them, they cover every skill in the store.

    `stats_current`: the `corpus_stats` artifact is up to date (the analytics just ran or had nothing to do), so
    it is read instead of computed again (building the tables costs seconds per hundred skills)."""
    current = stats_current and store.exists(STATS, CORPUS_KEY)
    stats = store.load(STATS, CORPUS_KEY) if current else corpus_stats(build_tables(load_inputs(store)), exported=0)
    funnel.generators = stats.generators
    funnel.llm_usage = Usage(**stats.cost.model_dump(include=set(Usage.model_fields))).report()
    funnel.failed_by_stage = stats.stage_failures
    funnel.failure_examples = stats.failure_examples


def retained_paths(store: ArtifactStore, skill_ids: Iterable[str]) -> list[str]:
    """Published folders of the tasks that passed their gate report, for the given skills; a hardened task's latest
    round that counted in place of its origin (as in the exported dataset)."""
    paths: list[str] = []
    for key in skill_ids:
        if not (store.exists(TASKS, key) and store.exists(GATES, key)):
            continue
        reports = store.load(GATES, key).reports
        passed = [b for b in store.load(TASKS, key).retained()
                  if (r := reports.get(b.task_name)) is not None and r.verdict is GateVerdict.RETAINED]
        hardening = [store.load(HARDENING, key)] if store.exists(HARDENING, key) else []
        paths += [b.path for b in with_hardened(passed, hardening)[0]]
    return sorted(paths)


def add_rollouts(summary: RolloutSummary, store: ArtifactStore, skill_ids: Iterable[str]) -> RolloutSummary:
    """Fill the counts from the `solver_rollouts` / `judge_scores` artifacts of the skills and the SFT manifest."""
    keys = list(skill_ids)
    rollouts = [store.load(ROLLOUTS, k) for k in keys if store.exists(ROLLOUTS, k)]
    judges = [store.load(JUDGE, k) for k in keys if store.exists(JUDGE, k)]
    rounds = [r for k in keys if store.exists(HARDENING, k) for t in store.load(HARDENING, k).tasks for r in t.rounds]
    tasks = [t for r in rollouts for t in r.tasks]
    hardened = [v for r in rounds for v in r.verdicts]
    verdicts = [v for j in judges for v in j.verdicts] + hardened
    scales = [t.calibration for j in judges for t in j.tasks] + [r.judgement.calibration for r in rounds if r.judgement]
    return summary.model_copy(update={
        "tasks": len(tasks),
        "rollouts": sum(len(t.rollouts) for t in tasks),
        "labels": dict(Counter(t.calibration.label for t in tasks).most_common()),
        "judged": sum(v.status == "judged" for v in verdicts),
        "judge_failed": sum(v.status == "judge_failed" for v in verdicts),
        "hardened_judged": sum(v.status == "judged" for v in hardened),
        "judge_scale": dict(Counter(scales).most_common()),
        "hacking": sum(v.hacking is not None for v in verdicts),
        "sft_rows": store.load(SFT, CORPUS_KEY).rows if store.exists(SFT, CORPUS_KEY) else 0,
        "llm_usage": total_usage([*(r.usage for r in rollouts), *(j.usage for j in judges)]).report(),
    })
