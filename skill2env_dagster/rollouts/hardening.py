"""Iterative task hardening (seed 003): a `too_easy` task is revised, rebuilt through the creator's frozen order
and the gates, checked to be harder, and rolled out again, up to R rounds, every round kept with its reason and
figures.

The loop is independent of how a task is revised (`Rebuilder`); `SampleRebuilder` revises the axis sample the
task's blueprint is derived from — the next complexity level (more rules in play, more required steps) plus one
more difficulty pattern whose effect plants cases the previous world did not contain (out-of-scope records, facts
split across files, a second deliverable built from the first, corrupted inputs, a superseded copy...), keeping
every earlier pattern — and rebuilds with the skill's own generator and the previous version's shape, so both
generators take part. A round counts only when the previous version's reference solution (a stand-in for a
policy that learned it) scores at most the too_easy threshold on the rebuild: otherwise the rebuild demands
nothing new and the round is rejected (`hardening_not_harder`). A rebuild the gates reject ends the task's
hardening with that reason; in both cases the previous round stands. The rebuilt task's task.toml records the
whole history under `[metadata] hardening`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.catalogue import PatternPool, load_patterns
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.models.axes import AxisSample, AxisSampleSet
from skill2env_dagster.models.hardening import HardeningRound, HardeningSet, Outcome, Revision, TaskHardening
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.rollout import Rollout, SolverRollouts, TaskCalibration, TaskRollouts
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.models.task import TaskBundle, TaskBundleSet
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.judge import Judge, TaskJudged, judge_task
from skill2env_dagster.rollouts.runner import TaskRef, replay_solution, roll_out_task
from skill2env_dagster.rollouts.sandbox import SandboxFactory
from skill2env_dagster.rollouts.settings import RolloutSettings
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import TaskAuthor, TaskGenerator, make_context
from skill2env_dagster.tasks.grounding import ground
from skill2env_dagster.tasks.pipeline import CreationSettings, GateFn, create_task
from skill2env_dagster.tasks.publish import publish
from skill2env_dagster.tasks.shapes import SHAPES

log = logging.getLogger(__name__)
LEVELS = ("easy", "medium", "hard", "complex")
HISTORY_KEY = "hardening"
# Effects that plant cases the previous world did not contain, the ones a memorised program misses most first;
# the rest (boundary, rule_in_docs, ordering, multi_rule) mostly re-describe what a shape's world already has.
PLANTING = ("precondition", "split_sources", "dependent", "corrupted", "distractor", "encoding", "validator",
            "preserve", "partial_prior", "layered", "budget", "flaky")


@dataclass(frozen=True)
class Rebuilt:
    revision: Revision
    task: TaskRef | None  # the retained rebuild; None when the gates rejected it


class Rebuilder(Protocol):
    def rebuild(self, task: TaskRef, round_no: int, why: str) -> Rebuilt:
        """A harder version of `task` (named for the round), built and gated like any candidate."""
        ...

    def withdraw(self, task: TaskRef, evidence: str) -> str:
        """Move a retained rebuild that is not harder to the rejected area (with the evidence); its new folder."""
        ...


RollOut = Callable[[TaskRef], tuple[list[Rollout], TaskCalibration]]
Replay = Callable[[TaskRef, TaskRef], Rollout]  # (previous version, rebuild) -> previous solve.sh on the rebuild
# (rebuild, its rollouts and calibration, the task it was rebuilt from) -> the judge's verdicts on them
JudgeRound = Callable[[TaskRef, list[Rollout], TaskCalibration, str], TaskJudged]


@dataclass(frozen=True)
class Trials:
    """How a round is measured: the harder check, then the rollouts of the rebuild, then the judge on them
    (`judge` None: no judge endpoint; `not_judged` says why)."""

    roll_out: RollOut
    replay: Replay
    too_easy_above: float  # the calibration's threshold (RolloutSettings.too_easy_above)
    judge: JudgeRound | None = None
    not_judged: str = "no_model"


def task_trials(settings: RolloutSettings, endpoint: LLMConfig, open_sandbox: SandboxFactory, folder: Path,
                timeout_cap_sec: float | None = None, judge: Judge | None = None) -> Trials:
    """The trials of a round on real sandboxes; trajectories go to folder/<rebuilt task>/; every episode of a
    retained rebuild is judged when a judge is given."""
    def judged(t: TaskRef, rollouts: list[Rollout], cal: TaskCalibration, origin: str) -> TaskJudged:
        assert judge is not None
        task = TaskRollouts(task_name=t.name, path=str(t.path), rollouts=rollouts, calibration=cal)
        return judge_task(task, folder / t.name, judge, hardened_from=origin)

    return Trials(
        roll_out=lambda t: roll_out_task(t, settings, endpoint, open_sandbox, folder / t.name,
                                         timeout_cap_sec=timeout_cap_sec),
        replay=lambda prev, t: replay_solution(prev, t, settings, open_sandbox, folder / t.name,
                                               timeout_cap_sec=timeout_cap_sec),
        too_easy_above=settings.too_easy_above, judge=judged if judge is not None else None)


def next_level(complexity: str) -> str:
    """One complexity level up; `complex` stays `complex` (the added pattern still makes the round harder)."""
    return LEVELS[min(LEVELS.index(complexity) + 1, len(LEVELS) - 1)]


def revise_sample(sample: AxisSample, candidates: Sequence[str]) -> tuple[AxisSample, str]:
    """The revised sample (next level, the first candidate pattern added to the earlier ones) and what changed."""
    added = [p for p in candidates if p != sample.difficulty_pattern and p not in sample.added_patterns][:1]
    revised = sample.model_copy(update={"complexity": next_level(sample.complexity),
                                        "added_patterns": [*sample.added_patterns, *added]})
    summary = f"complexity {sample.complexity} → {revised.complexity}"
    if added:
        summary += f"; + pattern {added[0]}"
    return revised, summary


def hardening_patterns(sample: AxisSample, pool: PatternPool, effects: Collection[str] | None,
                       present: Collection[str]) -> list[str]:
    """Candidate patterns for the next round, best first. With the shape's realisable `effects` known: one per
    effect not `present` (in play or tried before), planting effects first, the sample's capability dimension first
    within an effect. Without (a model-written task): the dimension's patterns."""
    tried = {sample.difficulty_pattern, *sample.added_patterns}
    fits = [p for p in pool.patterns if p.suits(sample.archetype) and p.id not in tried]
    if effects is None:
        return [p.id for p in fits if p.dimension == sample.capability_dimension]
    rank = {e: i for i, e in enumerate(PLANTING)}
    ranked = sorted((p for p in fits if p.effect in effects and p.effect not in present),
                    key=lambda p: (rank.get(p.effect, len(rank)), p.dimension != sample.capability_dimension, p.id))
    first: dict[str, str] = {}  # effect -> its best pattern, in rank order
    for p in ranked:
        first.setdefault(p.effect, p.id)
    return list(first.values())


def _history_entry(r: HardeningRound, origin: str) -> dict[str, object]:
    entry: dict[str, object] = {"round": r.round, "from_task": origin, "why": r.why,
                                "revision": r.revision.summary, "retained": r.revision.retained,
                                "label_before": r.before.label, "mean_reward_v_before": r.before.mean_reward_v or 0.0}
    if r.revision.reason is not None:
        entry["reason"] = r.revision.reason.value
    if r.previous_solution is not None and r.previous_solution.reward_v is not None:
        entry["previous_solution_reward_v"] = r.previous_solution.reward_v
    if r.after is not None:
        entry |= {"label_after": r.after.label, "mean_reward_v_after": r.after.mean_reward_v or 0.0}
    return entry


def record_history(task_dir: Path, origin: str, rounds: Sequence[HardeningRound]) -> None:
    """Write the rounds so far into the rebuilt task's task.toml (not frozen: grading and world are untouched)."""
    toml = TaskDir(task_dir).config
    config = TaskToml.from_toml(toml.read_text(encoding="utf-8"))
    updated = config.with_metadata(**{HISTORY_KEY: [_history_entry(r, origin) for r in rounds]})
    atomic_write_text(toml, updated.to_toml())


def _outcome(rounds: list[HardeningRound]) -> Outcome:
    if not rounds:
        return "still_too_easy"  # R = 0: nothing was tried
    last = rounds[-1]
    if last.after is None:
        return "not_harder" if last.revision.reason is ReasonCode.HARDENING_NOT_HARDER else "rebuild_rejected"
    if last.after.label == "too_easy":
        return "still_too_easy"
    return "uncalibrated" if last.after.label == "uncalibrated" else "hardened"


def harder_check(revision: Revision, previous: Rollout, too_easy_above: float) -> Revision:
    """The revision with the check's evidence; not retained (`hardening_not_harder`) unless the previous version's
    solution scored at most the too_easy threshold on the rebuild. An unscored replay proves nothing either."""
    r = previous.reward_v if previous.scored else None
    shown = f"r={r:.2f}" if r is not None else f"not scored ({previous.reason})"
    harder = r is not None and r <= too_easy_above
    verdict = f"≤ {too_easy_above}: harder" if harder else f"not ≤ {too_easy_above}: not harder"
    evidence = f"previous solution on new task: {shown} ({verdict})"
    update: dict[str, object] = {"evidence": f"{evidence}; {revision.evidence}".strip("; ")[:1000]}
    if not harder:
        update |= {"retained": False, "reason": ReasonCode.HARDENING_NOT_HARDER}
    return revision.model_copy(update=update)


def harden_task(task: TaskRef, calibration: TaskCalibration, rebuilder: Rebuilder, trials: Trials,
                rounds: int) -> TaskHardening:
    """Up to `rounds` rounds while the task stays too_easy (see module docstring). A round that is not harder
    leaves the current version in place; the next round adds another pattern to it."""
    current, cal = task, calibration
    history: list[HardeningRound] = []
    for n in range(1, rounds + 1):
        if cal.label != "too_easy":
            break
        start = time.perf_counter()
        rebuilt = rebuilder.rebuild(current, n, cal.label_reason)
        if rebuilt.task is None:
            history.append(HardeningRound(round=n, why=cal.label_reason, before=cal, revision=rebuilt.revision,
                                          seconds=round(time.perf_counter() - start, 3)))
            break
        previous = trials.replay(current, rebuilt.task)
        revision = harder_check(rebuilt.revision, previous, trials.too_easy_above)
        log.info("hardening task=%s round=%d %s", task.name, n, revision.evidence[:120])
        if not revision.retained:
            revision = revision.model_copy(update={"path": rebuilder.withdraw(rebuilt.task, revision.evidence)})
            history.append(HardeningRound(round=n, why=cal.label_reason, before=cal, revision=revision,
                                          previous_solution=previous, seconds=round(time.perf_counter() - start, 3)))
            continue
        rollouts, after = trials.roll_out(rebuilt.task)
        judged = trials.judge(rebuilt.task, rollouts, after, current.name) if trials.judge else None
        history.append(HardeningRound(round=n, why=cal.label_reason, before=cal, revision=revision, after=after,
                                      rollouts=rollouts, previous_solution=previous,
                                      judgement=judged.summary if judged else None,
                                      verdicts=judged.verdicts if judged else [],
                                      not_judged="" if judged else trials.not_judged,
                                      seconds=round(time.perf_counter() - start, 3)))
        record_history(rebuilt.task.path, task.name, history)
        current, cal = rebuilt.task, after
        log.info("hardening task=%s round=%d %s -> %s (mean r_V %s)", task.name, n, history[-1].before.label,
                 after.label, after.mean_reward_v)
    return TaskHardening(task_name=task.name, rounds=history, outcome=_outcome(history), final_task=current.name,
                         final_path=str(current.path), final_label=cal.label)


def harden_skill(rollouts: SolverRollouts, rebuilder: Rebuilder, trials: Trials, rounds: int) -> HardeningSet:
    """Every too_easy task of a skill; the others are listed with their label."""
    start = time.perf_counter()
    result = HardeningSet(skill_id=rollouts.skill_id, max_rounds=rounds)
    for t in rollouts.tasks:
        if t.calibration.label != "too_easy":
            result.not_needed[t.task_name] = t.calibration.label
            continue
        result.tasks.append(harden_task(TaskRef(t.task_name, Path(t.path)), t.calibration, rebuilder, trials,
                                        rounds))
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def hardened_name(origin: str, round_no: int) -> str:
    """`<task>-h<round>`, within the store's key length."""
    suffix = f"-h{round_no}"
    return origin[: 200 - len(suffix)] + suffix


@dataclass(frozen=True)
class Version:
    """One version of a task, as the rebuilder revises it."""

    sample: AxisSample
    origin: str  # the task as first created
    shape: str | None = None  # the offline shape that realised it (None: a model-written task)
    effects: frozenset[str] = frozenset()  # the difficulty effects its world has
    required_steps: int | None = None

    @classmethod
    def of(cls, sample: AxisSample, origin: str, bundle: TaskBundle | None, shape: str | None = None) -> Version:
        bp = bundle.blueprint if bundle else None
        if bp is None:
            return cls(sample, origin, shape)
        return cls(sample, origin, bp.shape, frozenset(c.effect for c in bp.challenges), bp.complexity.required_steps)


@dataclass(frozen=True)
class Built:
    """What the creator pipeline made of a revised sample."""

    retained: bool
    path: str = ""
    reasons: list[ReasonCode] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    bundle: TaskBundle | None = None  # None when the model failed before a bundle existed


class SampleRebuilder:
    """Rebuilds through the creator pipeline (frozen order, gates, solution repair, publish) from a revised sample.

    `patterns(version, tried)` lists the candidate patterns to add (best first; `tried` are the patterns earlier
    rounds of the same origin added, kept or not); `create(sample, task_name, shape)` is `tasks.pipeline.create_task`
    bound to the skill, its workflow and generator, trying `shape` first.
    """

    def __init__(self, versions: dict[str, Version], patterns: Callable[[Version, list[str]], list[str]],
                 create: Callable[[AxisSample, str, str | None], Built],
                 withdraw: Callable[[TaskRef, str], str] | None = None) -> None:
        self._versions = dict(versions)  # task name -> the version it is
        self.patterns, self.create = patterns, create
        self._withdraw = withdraw

    def withdraw(self, task: TaskRef, evidence: str) -> str:
        return self._withdraw(task, evidence) if self._withdraw else str(task.path)

    def rebuild(self, task: TaskRef, round_no: int, why: str) -> Rebuilt:
        v = self._versions[task.name]
        tried = sorted({p for x in self._versions.values() if x.origin == v.origin for p in x.sample.added_patterns})
        revised, summary = revise_sample(v.sample, self.patterns(v, tried))
        name = hardened_name(v.origin, round_no)
        built = self.create(revised, name, v.shape)
        new = Version.of(revised, v.origin, built.bundle, v.shape)
        b = built.bundle
        revision = Revision(summary=summary, complexity_before=v.sample.complexity,
                            complexity_after=revised.complexity,
                            patterns_added=revised.added_patterns[len(v.sample.added_patterns):],
                            required_steps_before=v.required_steps, required_steps_after=new.required_steps,
                            task_name=name, path=built.path, retained=built.retained,
                            reason=built.reasons[0] if built.reasons else None,
                            evidence="; ".join(built.evidence)[:1000], freeze_hash=b.freeze_hash if b else "",
                            metrics=b.metrics if b else [])
        self._versions[name] = new
        return Rebuilt(revision, TaskRef(name, Path(built.path)) if built.retained else None)


def skill_rebuilder(store: ArtifactStore, skill: SkillRecord, plans: WorkflowPlanSet, axes: AxisSampleSet,
                    bundles: TaskBundleSet, gen: TaskGenerator | TaskAuthor, gate: GateFn, base_images: dict[str, str],
                    settings: CreationSettings | None = None) -> SampleRebuilder:
    """A SampleRebuilder for one skill: its retained tasks' versions, the pattern pool, its generator and gates."""
    workflows = {w.name: w for w in plans.workflows}
    by_key = {(s.workflow, s.variant): s for s in axes.samples}
    versions = {b.task_name: Version.of(by_key[(b.workflow, b.variant)], b.task_name, b) for b in bundles.retained()
                if (b.workflow, b.variant) in by_key}
    pool, shapes = load_patterns(), {s.name: s for s in SHAPES}
    grounding = ground(skill)

    def patterns(v: Version, tried: list[str]) -> list[str]:
        shape = shapes.get(v.shape or "")
        present = v.effects | {p.effect for p in map(pool.by_id, tried) if p is not None}
        found = hardening_patterns(v.sample, pool, None if shape is None else shape.effects, present)
        return [p for p in found if p not in tried]

    def create(sample: AxisSample, name: str, shape: str | None) -> Built:
        workflow = workflows[sample.workflow]
        ctx = make_context(skill, workflow, sample, base_images, name, grounding, focus=workflow.focus, shape=shape)
        try:
            bundle, _ = create_task(store, ctx, gen, gate, settings or CreationSettings())
        except LLMError as e:  # the model failed, not the revision: recorded, the previous round stands
            return Built(False, reasons=[e.reason], evidence=[str(e)[:500]])
        return Built(bundle.status == "retained", bundle.path, bundle.reasons, bundle.evidence, bundle)

    def withdraw(task: TaskRef, evidence: str) -> str:
        reason = ReasonCode.HARDENING_NOT_HARDER.value
        return str(publish(store, task.path, skill.skill_id, task.name, False, [reason], [evidence], None))

    return SampleRebuilder(versions, patterns, create, withdraw)
