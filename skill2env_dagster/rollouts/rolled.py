"""Every rolled-out task of the run, the originals and the hardened rebuilds alike, with its judge's verdicts and
where its trajectories are: what the SFT export and the difficulty report read, so that a hardened task enters
both like any other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skill2env_dagster.models.hardening import HardeningSet
from skill2env_dagster.models.judge import JudgeScores, JudgeVerdict, Shortcut, TaskJudgement
from skill2env_dagster.models.rollout import SolverRollouts, TaskRollouts
from skill2env_dagster.rollouts.judge import shortcuts_of


@dataclass(frozen=True)
class RolledTask:
    skill: str
    task: TaskRollouts
    folder: Path  # its trajectories
    judgement: TaskJudgement | None = None  # None: not judged (no judge endpoint, or judge_scores not run)
    verdicts: dict[str, JudgeVerdict] = field(default_factory=dict)  # rollout id -> verdict
    shortcuts: tuple[Shortcut, ...] = ()
    hardening_rounds: int = 0  # rounds tried on this task (originals only)
    hardened_from: str = ""  # set on a rebuild: the version it was rebuilt from


def rolled_tasks(rollouts: Mapping[str, SolverRollouts], scores: Mapping[str, JudgeScores],
                 folders: Mapping[str, Path], hardening: Mapping[str, HardeningSet] | None = None,
                 hardening_folders: Mapping[str, Path] | None = None) -> list[RolledTask]:
    """The skills' tasks in order, each followed by the rebuilds of its hardening rounds that were rolled out."""
    out: list[RolledTask] = []
    for skill, sr in sorted(rollouts.items()):
        js = scores.get(skill)
        judged = {t.task_name: t for t in js.tasks} if js else {}
        verdicts = {v.rollout_id: v for v in js.verdicts} if js else {}
        hs = (hardening or {}).get(skill)
        rounds = {t.task_name: t.rounds for t in hs.tasks} if hs else {}
        for t in sr.tasks:
            out.append(RolledTask(skill, t, folders[skill], judged.get(t.task_name),
                                  {k: v for k, v in verdicts.items() if v.task_name == t.task_name},
                                  tuple(s for s in js.shortcuts if s.task_name == t.task_name) if js else (),
                                  hardening_rounds=len(rounds.get(t.task_name, []))))
            for r in rounds.get(t.task_name, []):
                if r.after is None:
                    continue  # rejected by the gates or not harder: never rolled out
                name = r.revision.task_name
                rebuilt = TaskRollouts(task_name=name, path=r.revision.path, rollouts=r.rollouts, calibration=r.after)
                origin = r.judgement.hardened_from if r.judgement else t.task_name
                out.append(RolledTask(skill, rebuilt, (hardening_folders or {})[skill] / name, r.judgement,
                                      {v.rollout_id: v for v in r.verdicts},
                                      tuple(shortcuts_of(r.verdicts, r.rollouts)), hardened_from=origin))
    return out
