"""Iterative task hardening (seed 003): a `too_easy` task is revised, rebuilt through the creator's frozen order
and the gates, and rolled out again, up to R rounds, every round kept with its reason and figures.

The loop is independent of how a task is revised (`Rebuilder`); `SampleRebuilder` revises the axis sample the
task's blueprint is derived from — the next complexity level (more rules in play, more required steps) and one
more difficulty pattern of the same capability dimension — and rebuilds with the skill's own generator, so both
generators take part. A rebuild the gates reject ends the task's hardening with that reason; the previous round
stands. The rebuilt task's task.toml records the whole history under `[metadata] hardening`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from skill2env_dagster.models.axes import AxisSample, AxisSampleSet
from skill2env_dagster.models.hardening import HardeningRound, HardeningSet, Outcome, Revision, TaskHardening
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.rollout import Rollout, SolverRollouts, TaskCalibration
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.models.task import TaskBundleSet
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.planning.catalogue import load_patterns
from skill2env_dagster.reasons import LLMError, ReasonCode
from skill2env_dagster.rollouts.runner import TaskRef
from skill2env_dagster.store import ArtifactStore, atomic_write_text
from skill2env_dagster.tasks.generator import TaskGenerator, make_context
from skill2env_dagster.tasks.grounding import ground
from skill2env_dagster.tasks.pipeline import CreationSettings, GateFn, create_task

log = logging.getLogger(__name__)
LEVELS = ("easy", "medium", "hard", "complex")
HISTORY_KEY = "hardening"


@dataclass(frozen=True)
class Rebuilt:
    revision: Revision
    task: TaskRef | None  # the retained rebuild; None when the gates rejected it


class Rebuilder(Protocol):
    def rebuild(self, task: TaskRef, round_no: int, why: str) -> Rebuilt:
        """A harder version of `task` (named for the round), built and gated like any candidate."""
        ...


RollOut = Callable[[TaskRef], tuple[list[Rollout], TaskCalibration]]


def next_level(complexity: str) -> str:
    """One complexity level up; `complex` stays `complex` (the added pattern still makes the round harder)."""
    return LEVELS[min(LEVELS.index(complexity) + 1, len(LEVELS) - 1)]


def revise_sample(sample: AxisSample, pattern_ids: Sequence[str], round_no: int,
                  used: Sequence[str] = ()) -> tuple[AxisSample, str]:
    """The revised sample (next level, a pattern of the same capability dimension not used in earlier rounds)
    and what changed."""
    candidates = [p for p in pattern_ids if p != sample.difficulty_pattern and p not in used]
    pattern = candidates[(sample.seed + round_no) % len(candidates)] if candidates else sample.difficulty_pattern
    revised = sample.model_copy(update={"complexity": next_level(sample.complexity), "difficulty_pattern": pattern})
    summary = f"complexity {sample.complexity} → {revised.complexity}"
    if pattern != sample.difficulty_pattern:
        summary += f"; + pattern {pattern} (after {sample.difficulty_pattern})"
    return revised, summary


def _history_entry(r: HardeningRound, origin: str) -> dict[str, object]:
    entry: dict[str, object] = {"round": r.round, "from_task": origin, "why": r.why,
                                "revision": r.revision.summary, "label_before": r.before.label,
                                "mean_reward_v_before": r.before.mean_reward_v or 0.0}
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
        return "rebuild_rejected"
    if last.after.label == "too_easy":
        return "still_too_easy"
    return "uncalibrated" if last.after.label == "uncalibrated" else "hardened"


def harden_task(task: TaskRef, calibration: TaskCalibration, rebuilder: Rebuilder, roll_out: RollOut,
                rounds: int) -> TaskHardening:
    """Up to `rounds` rounds while the task stays too_easy (see module docstring)."""
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
        rollouts, after = roll_out(rebuilt.task)
        history.append(HardeningRound(round=n, why=cal.label_reason, before=cal, revision=rebuilt.revision,
                                      after=after, rollouts=rollouts, seconds=round(time.perf_counter() - start, 3)))
        record_history(rebuilt.task.path, task.name, history)
        current, cal = rebuilt.task, after
        log.info("hardening task=%s round=%d %s -> %s (mean r_V %s)", task.name, n, history[-1].before.label,
                 after.label, after.mean_reward_v)
    return TaskHardening(task_name=task.name, rounds=history, outcome=_outcome(history), final_task=current.name,
                         final_path=str(current.path), final_label=cal.label)


def harden_skill(rollouts: SolverRollouts, rebuilder: Rebuilder, roll_out: RollOut, rounds: int) -> HardeningSet:
    """Every too_easy task of a skill; the others are listed with their label."""
    start = time.perf_counter()
    result = HardeningSet(skill_id=rollouts.skill_id, max_rounds=rounds)
    for t in rollouts.tasks:
        if t.calibration.label != "too_easy":
            result.not_needed[t.task_name] = t.calibration.label
            continue
        result.tasks.append(harden_task(TaskRef(t.task_name, Path(t.path)), t.calibration, rebuilder, roll_out,
                                        rounds))
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def hardened_name(origin: str, round_no: int) -> str:
    """`<task>-h<round>`, within the store's key length."""
    suffix = f"-h{round_no}"
    return origin[: 200 - len(suffix)] + suffix


class SampleRebuilder:
    """Rebuilds through the creator pipeline (frozen order, gates, solution repair, publish) from a revised sample.

    `create(sample, task_name)` is `tasks.pipeline.create_task` bound to the skill, its workflow and generator;
    it returns the published bundle's (status, path, reasons, evidence).
    """

    def __init__(self, samples: dict[str, AxisSample], patterns: Callable[[AxisSample], list[str]],
                 create: Callable[[AxisSample, str], tuple[bool, str, list[ReasonCode], list[str]]]) -> None:
        self._samples = dict(samples)  # task name -> the sample it was built from
        self._origin = {name: name for name in samples}
        self.patterns, self.create = patterns, create

    def rebuild(self, task: TaskRef, round_no: int, why: str) -> Rebuilt:
        sample = self._samples[task.name]
        origin = self._origin[task.name]
        used = [s.difficulty_pattern for n, s in self._samples.items() if self._origin[n] == origin]
        revised, summary = revise_sample(sample, self.patterns(sample), round_no, used)
        name = hardened_name(origin, round_no)
        retained, path, reasons, evidence = self.create(revised, name)
        added = [revised.difficulty_pattern] if revised.difficulty_pattern != sample.difficulty_pattern else []
        revision = Revision(summary=summary, complexity_before=sample.complexity, complexity_after=revised.complexity,
                            patterns_added=added, task_name=name, path=path, retained=retained,
                            reason=reasons[0] if reasons else None, evidence="; ".join(evidence)[:1000])
        self._samples[name], self._origin[name] = revised, origin
        return Rebuilt(revision, TaskRef(name, Path(path)) if retained else None)


def skill_rebuilder(store: ArtifactStore, skill: SkillRecord, plans: WorkflowPlanSet, axes: AxisSampleSet,
                    bundles: TaskBundleSet, gen: TaskGenerator, gate: GateFn, base_images: dict[str, str],
                    settings: CreationSettings | None = None) -> SampleRebuilder:
    """A SampleRebuilder for one skill: its retained tasks' samples, its pattern pool, its generator and gates."""
    workflows = {w.name: w for w in plans.workflows}
    by_key = {(s.workflow, s.variant): s for s in axes.samples}
    samples = {b.task_name: by_key[(b.workflow, b.variant)] for b in bundles.retained()
               if (b.workflow, b.variant) in by_key}
    pool = load_patterns()
    grounding = ground(skill)

    def patterns(sample: AxisSample) -> list[str]:
        return [p.id for p in pool.by_dimension(sample.capability_dimension) if p.suits(sample.archetype)]

    def create(sample: AxisSample, name: str) -> tuple[bool, str, list[ReasonCode], list[str]]:
        ctx = make_context(skill, workflows[sample.workflow], sample, base_images, name, grounding)
        try:
            bundle, _ = create_task(store, ctx, gen, gate, settings or CreationSettings())
        except LLMError as e:  # the model failed, not the revision: recorded, the previous round stands
            return False, "", [e.reason], [str(e)[:500]]
        return bundle.status == "retained", bundle.path, bundle.reasons, bundle.evidence

    return SampleRebuilder(samples, patterns, create)
