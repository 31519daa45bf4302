"""Iterative task hardening (seed 003): every round of every `too_easy` task, kept with its reason and figures."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.judge import JudgeVerdict, TaskJudgement
from skill2env_dagster.models.rollout import DifficultyLabel, Rollout, TaskCalibration
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1
Outcome = Literal["hardened", "still_too_easy", "rebuild_rejected", "not_harder", "uncalibrated"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Revision(_Strict):
    """What one round changed in the task's blueprint, and the rebuilt candidate's fate at the gates."""

    summary: str = Field(description="e.g. 'complexity easy → medium; + pattern split_across_files'.")
    complexity_before: str = ""
    complexity_after: str = ""
    patterns_added: list[str] = Field(default_factory=list)
    patterns_strengthened: list[str] = Field(default_factory=list)
    required_steps_before: int | None = None
    required_steps_after: int | None = None
    task_name: str = Field(description="The rebuilt task's name.")
    path: str = Field(default="", description="Its published folder (retained or rejected area).")
    retained: bool = Field(description="Passed the gates and defeats the previous version's solution: the round's "
                           "rebuild stands (and replaces its origin in the export).")
    reason: ReasonCode | None = Field(default=None, description="Why the gates (or the harder check) rejected it.")
    evidence: str = ""
    freeze_hash: str = ""
    metrics: list[str] = Field(default_factory=list, description="The rebuild's reward metrics.")


class HardeningRound(_Strict):
    round: int = Field(ge=1)
    why: str = Field(description="The figures that triggered the round, e.g. 'mean r_V 0.83 > 0.7'.")
    before: TaskCalibration
    revision: Revision
    after: TaskCalibration | None = Field(default=None, description="None when the rebuild was not retained.")
    previous_solution: Rollout | None = Field(
        default=None, description="The previous version's solution/solve.sh run on the rebuild (a stand-in for a "
        "policy that learned it): the round counts only when its mean r_V is at most the too_easy threshold.")
    rollouts: list[Rollout] = Field(default_factory=list)
    judgement: TaskJudgement | None = Field(default=None, description=(
        "The judge on the rebuild's rollouts, like any task's (None when no judge endpoint is configured)."))
    verdicts: list[JudgeVerdict] = Field(default_factory=list)
    not_judged: str = Field(default="", description="Why the rebuild's rollouts were not judged, when they were not.")
    seconds: float = Field(default=0.0, ge=0)


class TaskHardening(_Strict):
    task_name: str = Field(description="The task as first created.")
    rounds: list[HardeningRound] = Field(default_factory=list)
    outcome: Outcome
    final_task: str
    final_path: str
    final_label: DifficultyLabel


class HardeningSet(_Strict):
    """The `task_hardening` artifact of one skill."""

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    max_rounds: int = Field(ge=0)
    tasks: list[TaskHardening] = Field(default_factory=list)
    not_needed: dict[str, str] = Field(default_factory=dict, description="Task -> its label, when not too_easy.")
    seconds: float = Field(default=0.0, ge=0)
