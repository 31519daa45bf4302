"""Solver rollouts and their calibration: the `solver_rollouts` artifact of one skill.

A rollout is one episode of one policy on one retained task: the agent phase in a fresh hardened container, then
the verifier. Its trajectory is stored in ATIF next to the artifact; this record keeps the figures. A rollout is
`scored` only when the verifier produced a reward we trust; any other outcome (the model endpoint failed, the
container died, the reward file was missing) is kept with its reason and left out of every mean.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RewardForm(_Strict):
    """How the judge score s ∈ [−5, 5] joins the verifier reward r_V (recorded with every combined reward).

    `additive` (the paper's): r = r_V + weight·s/5. `gated`: the judge term counts only when r_V ≥ threshold,
    so an episode that failed the tests cannot climb on style alone (nor be pushed further down by it).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    form: Literal["additive", "gated"] = "additive"
    weight: float = Field(default=0.2, ge=0, le=1, description="λ.")
    threshold: float = Field(default=1.0, ge=0, le=1, description="r_V the gated form requires.")

    def combine(self, reward_v: float, score: int) -> float:
        term = self.weight * score / 5
        if self.form == "gated" and reward_v < self.threshold - 1e-9:
            term = 0.0
        return round(reward_v + term, 6)

    def reward(self, reward_v: float | None, score: int | None, *, hacking: bool, judge_term: bool) -> float | None:
        """The reward a trainer gets, in every form: 0 for evidenced hacking (the judge's finding or the runner's
        tamper evidence), whatever the tests said; r_V alone when the task's judge is not calibrated
        (`judge_term` False); else `combine`. None when there is nothing to give (no r_V, or no score to add)."""
        if hacking:
            return 0.0
        if reward_v is None:
            return None
        if not judge_term:
            return round(reward_v, 6)
        return None if score is None else self.combine(reward_v, score)


class RolloutKind(StrEnum):
    SOLVER = "solver"
    ORACLE = "oracle"  # solution/solve.sh run as one tool call: the judge's upper reference
    NOOP = "noop"  # no action at all: the judge's lower reference


# Hardening's replay of the previous version's solution on a rebuilt task: an Oracle episode under this name.
PREVIOUS_SOLUTION = "previous_solution"
# The solver names the references use in their rollout ids (`runner.rollout_id`): a solver configuration may not
# take one, else its episodes would share the reference's trajectory file and its verdict.
RESERVED_SOLVER_NAMES = frozenset({RolloutKind.ORACLE.value, RolloutKind.NOOP.value, PREVIOUS_SOLUTION})


class StopReason(StrEnum):
    """Why the agent phase ended. The first four are normal ends (the verifier still runs)."""

    AGENT_DONE = "agent_done"
    MAX_TURNS = "max_turns"
    MAX_TOKENS = "max_tokens"
    MAX_WALL_TIME = "max_wall_time"
    AGENT_TIMEOUT = "agent_timeout"  # the task's own timeout: every process was killed, then the verifier ran
    MODEL_FAILED = "model_failed"
    CONTAINER_DIED = "container_died"
    INFRA_FAILED = "infra_failed"  # the engine failed mid-episode
    SETUP_FAILED = "setup_failed"  # the task could not be read, built or started


class Rollout(_Strict):
    rollout_id: str = Field(description="<task>--<solver>--<attempt>, unique in the skill.")
    task_name: str
    kind: RolloutKind
    solver: str = Field(description="Solver configuration name ('oracle'/'noop' for the references).")
    model: str = ""
    attempt: int = Field(ge=0)
    stop: StopReason
    reason: ReasonCode | None = Field(default=None, description="Why it is not scored; on a scored rollout, why "
                                      "the reward is 0 by rule (tamper_detected, reap_failed); else None.")
    evidence: str = ""
    scored: bool
    metrics: dict[str, float] = Field(default_factory=dict, description="The verifier's metrics.")
    reward_v: float | None = Field(default=None, description="Mean of the metrics; None when not scored.")
    passed: bool = Field(default=False, description="Every metric at 1.")
    turns: int = Field(default=0, ge=0)
    tool_calls: int = Field(default=0, ge=0)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = Field(default=0.0, ge=0, description="The whole rollout: set-up, agent loop, verifier.")
    agent_seconds: float = Field(default=0.0, ge=0, description="The agent loop alone.")
    model_seconds: float = Field(default=0.0, ge=0)
    tool_seconds: float = Field(default=0.0, ge=0)
    workspace_digest: str = Field(default="", description="The paths the episode changed (the listing's start).")
    workspace: str = Field(default="", description=(
        "File next to the trajectory holding the judge's view of the final workspace (rollouts.workspace)."))
    trajectory: str = Field(description="ATIF file, relative to the skill's rollout folder.")
    trajectory_digest: str = ""


DifficultyLabel = Literal["too_easy", "learnable", "unsolved", "uncalibrated"]


class TaskCalibration(_Strict):
    """From the scored solver rollouts of one task (reference rollouts excluded)."""

    scored: int = Field(ge=0)
    unscored: int = Field(ge=0)
    pass_rate: float | None = None
    mean_reward_v: float | None = None
    mean_by_metric: dict[str, float] = Field(default_factory=dict)
    label: DifficultyLabel
    label_reason: str
    oracle_passed: bool | None = Field(default=None, description="The Oracle rollout scored 1 on every metric.")


class TaskRollouts(_Strict):
    task_name: str
    path: str = Field(description="The published task folder.")
    rollouts: list[Rollout] = Field(default_factory=list)
    calibration: TaskCalibration


class SolverRollouts(_Strict):
    """The `solver_rollouts` artifact of one skill."""

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    solvers: list[str] = Field(default_factory=list, description="Solver configuration names, in order.")
    models: dict[str, str] = Field(default_factory=dict, description="Solver name -> model.")
    tasks: list[TaskRollouts] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = Field(default=0.0, ge=0)

    def rollouts(self) -> list[Rollout]:
        return [r for t in self.tasks for r in t.rollouts]
