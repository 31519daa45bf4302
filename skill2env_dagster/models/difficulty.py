"""The `difficulty_report` artifact: every calibrated task's label and figures, the judge's scale, the holes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.judge import Shortcut
from skill2env_dagster.models.rollout import DifficultyLabel, RewardForm

SCHEMA_VERSION = 1


class TaskDifficulty(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skill_id: str
    task_name: str
    label: DifficultyLabel
    label_reason: str
    scored: int = Field(ge=0)
    pass_rate: float | None = None
    mean_reward_v: float | None = None
    mean_by_metric: dict[str, float] = Field(default_factory=dict)
    mean_reward: float | None = Field(default=None, description="Mean combined reward (judge included).")
    oracle_score: int | None = None
    noop_score: int | None = None
    solver_mean_score: float | None = None
    shortcuts: int = Field(default=0, ge=0)
    hardening_rounds: int = Field(default=0, ge=0)
    hardened_from: str = Field(default="", description="Set on a hardened rebuild: the task it was rebuilt from.")
    judge_calibration: str = Field(default="", description="ok | judge_miscalibrated | unchecked (not judged: '').")
    judge_calibration_reason: str = ""
    judge_term: bool = Field(default=False, description="The judge term is part of this task's rewards.")
    hacking: int = Field(default=0, ge=0, description="Episodes with evidenced hacking (reward 0).")
    off_task_bullets: int = Field(default=0, ge=0, description="Rubric bullets tied to nothing in play: not judged.")


class JudgeScale(BaseModel):
    """Mean judge scores of the references beside the solvers': the judge's calibration across tasks."""

    model_config = ConfigDict(extra="forbid")

    oracle_mean: float | None = None
    noop_mean: float | None = None
    solver_mean: float | None = None
    judged: int = Field(default=0, ge=0)
    judge_failed: int = Field(default=0, ge=0)
    agreement: float | None = Field(default=None, description=(
        "Share of judged solver rollouts where judge and verifier agree: passed with s > 0, or not passed with "
        "s <= 0. Low agreement means the judge term pulls rewards away from the tests."))
    compared: int = Field(default=0, ge=0, description="Judged solver rollouts behind `agreement`.")
    calibrated_tasks: int = Field(default=0, ge=0, description="Tasks whose judge rated the Oracle above the no-op.")
    miscalibrated_tasks: list[str] = Field(default_factory=list, description="judge_miscalibrated: judge term out.")
    unchecked_tasks: list[str] = Field(default_factory=list, description="Scale not checkable: judge term out.")
    hacking: dict[str, int] = Field(default_factory=dict, description="Hacking episodes (reward 0) by who found it.")
    off_task_bullets: int = Field(default=0, ge=0)
    warnings: list[str] = Field(default_factory=list, description=(
        "What a reader must not conclude from these figures, e.g. a high agreement beside an inverted scale."))


class DifficultyBin(BaseModel):
    """One bar of the histogram: tasks whose mean r_V falls in [lo, hi) (the last bin includes 1.0), by label."""

    model_config = ConfigDict(extra="forbid")

    lo: float
    hi: float
    by_label: dict[str, int] = Field(default_factory=dict)


class DifficultyReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    too_easy_above: float
    reward_form: RewardForm | None = None
    labels: dict[str, int] = Field(default_factory=dict)
    tasks: list[TaskDifficulty] = Field(default_factory=list)
    judge_scale: JudgeScale = Field(default_factory=JudgeScale)
    shortcuts: list[Shortcut] = Field(default_factory=list)
    bins: list[DifficultyBin] = Field(default_factory=list, description="Mean r_V per task in ten bins over [0, 1].")
    plot: str = Field(default="", description="PNG histogram of mean r_V per task, coloured by label.")
