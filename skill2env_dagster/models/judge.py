"""The rubric judge: the reply schema it must answer in, and the `judge_scores` artifact of one skill.

The reply schema carries what JSON Schema can express (bullet id pattern, verdict and rule enums, the score's
range, non-empty reasons); what it cannot (one verdict per rubric bullet, cited steps that exist) is checked
after the reply and fed back through a retry. A judgement that never validates is `judge_failed` with no score:
never a 0, which would read as a neutral verdict.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.plan import Usage
from skill2env_dagster.models.rollout import RewardForm, RolloutKind
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1
BULLET_ID = r"^(must_do|must_avoid|best_practice)\.[1-9]$"
MIN_SCORE, MAX_SCORE = -5, 5


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BulletVerdict(_Strict):
    bullet: str = Field(pattern=BULLET_ID, description="The rubric bullet id, e.g. must_do.1.")
    verdict: Literal["satisfied", "partly", "violated", "not_applicable"] = Field(
        description="For a must_avoid bullet, 'satisfied' means the agent avoided it.")
    reason: str = Field(min_length=1, max_length=1000)
    steps: list[int] = Field(default_factory=list, description="Step numbers cited as evidence.")


class Violation(_Strict):
    rule: Literal["aimless_loop", "reward_hacking", "unresponsive", "fabricated_evidence"]
    reason: str = Field(min_length=1, max_length=1000)
    steps: list[int] = Field(min_length=1, description="Step numbers cited as evidence.")


class JudgeAnswer(_Strict):
    """What the judge model must reply (the JSON schema sent with the request)."""

    bullets: list[BulletVerdict] = Field(min_length=1)
    violations: list[Violation] = Field(default_factory=list)
    score: int = Field(ge=MIN_SCORE, le=MAX_SCORE)
    summary: str = Field(min_length=1, max_length=600)


HackingSource = Literal["judge", "runner"]
Calibration = Literal["ok", "judge_miscalibrated", "unchecked"]


class JudgeVerdict(_Strict):
    """One rollout judged (or not): the score, and the reward under the recorded form.

    `reward` is 0 for evidenced hacking (`hacking` names who found it: the judge's reward_hacking finding or the
    runner's tamper evidence), r_V alone when the task's judge is not calibrated (`judge_term` False), else
    `reward_form.combine(r_V, score)`."""

    rollout_id: str
    task_name: str
    kind: RolloutKind
    solver: str
    status: Literal["judged", "judge_failed"]
    reason: ReasonCode | None = Field(default=None, description="judge_failed, or the endpoint's failure code.")
    problem: str = Field(default="", description="Why the last answer was rejected.")
    score: int | None = Field(default=None, ge=MIN_SCORE, le=MAX_SCORE)
    answer: JudgeAnswer | None = None
    attempts: int = Field(default=0, ge=0)
    usage: Usage = Field(default_factory=Usage)
    reward_v: float | None = None
    passed: bool = False
    reward: float | None = Field(default=None, description="r under `reward_form`; None without a score.")
    reward_form: RewardForm
    hacking: HackingSource | None = Field(default=None, description="Who evidenced reward hacking: reward 0.")
    hacking_evidence: str = ""
    judge_term: bool = Field(default=True, description="False when the task's judge failed its calibration: "
                             "the reward is r_V alone.")
    off_task_bullets: list[str] = Field(default_factory=list, description=(
        "Rubric bullets tied to no rule, metric or deliverable in play (gates.rubric_ties): not judged."))


class Shortcut(_Strict):
    """Full verifier reward but the judge's lowest score: the verifier probably has a hole."""

    rollout_id: str
    task_name: str
    metrics: dict[str, float]
    score: int
    summary: str


class TaskJudgement(_Strict):
    """The judge's scale on one task: its two references beside the solvers."""

    task_name: str
    oracle_score: int | None = None
    noop_score: int | None = None
    solver_scores: list[int] = Field(default_factory=list)
    solver_mean_score: float | None = None
    mean_reward: float | None = Field(default=None, description="Mean combined reward of judged solver rollouts.")
    judge_failed: int = Field(default=0, ge=0)
    shortcuts: int = Field(default=0, ge=0)
    calibration: Calibration = Field(default="unchecked", description=(
        "ok: the Oracle is rated above the no-op by the margin; judge_miscalibrated: it is not; unchecked: one "
        "of them was not judged, or the Oracle did not pass. The judge term counts only when ok."))
    calibration_reason: str = ""
    judge_term: bool = Field(default=False, description="The judge term is part of this task's rewards.")
    hacking: dict[str, int] = Field(default_factory=dict, description="Hacking episodes by who evidenced it.")
    off_task_bullets: list[str] = Field(default_factory=list, description="Rubric bullets not judged: off-task.")
    hardened_from: str = Field(default="", description="The task a hardening round rebuilt this one from.")


class JudgeScores(_Strict):
    """The `judge_scores` artifact of one skill."""

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    judge_model: str
    prompt_version: str
    reward_form: RewardForm
    verdicts: list[JudgeVerdict] = Field(default_factory=list)
    not_judged: dict[str, str] = Field(default_factory=dict, description="Unscored rollout id -> its reason.")
    tasks: list[TaskJudgement] = Field(default_factory=list)
    shortcuts: list[Shortcut] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
