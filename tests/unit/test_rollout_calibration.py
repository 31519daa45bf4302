"""Reward forms and difficulty labels."""

from __future__ import annotations

import pytest

from skill2env_dagster.models.rollout import RewardForm, Rollout, RolloutKind, StopReason
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.calibration import calibrate


def _r(kind: RolloutKind, reward: float | None, i: int = 0, passed: bool | None = None) -> Rollout:
    scored = reward is not None
    return Rollout(rollout_id=f"t--{kind.value}--{i}", task_name="t", kind=kind, solver=kind.value, attempt=i,
                   stop=StopReason.AGENT_DONE if scored else StopReason.MODEL_FAILED, scored=scored,
                   reason=None if scored else ReasonCode.LLM_RATE_LIMITED,
                   metrics={"m": reward} if scored else {}, reward_v=reward,
                   passed=(reward == 1.0) if passed is None else passed, trajectory="x.json")


def test_additive_is_the_papers_form():
    form = RewardForm()
    assert form.combine(1.0, 5) == pytest.approx(1.2)
    assert form.combine(0.5, -5) == pytest.approx(0.3)
    assert form.combine(0.0, 5) == pytest.approx(0.2)  # failed every test, still positive: the seed's complaint


def test_gated_counts_the_judge_only_at_the_threshold():
    form = RewardForm(form="gated", threshold=1.0)
    assert form.combine(0.0, 5) == 0.0
    assert form.combine(0.5, -5) == 0.5
    assert form.combine(1.0, -5) == pytest.approx(0.8)
    assert RewardForm(form="gated", threshold=0.5, weight=0.1).combine(0.5, 5) == pytest.approx(0.6)


def _solver(*rewards: float | None) -> list[Rollout]:
    return [_r(RolloutKind.SOLVER, x, i) for i, x in enumerate(rewards)]


def test_labels():
    oracle_ok, oracle_bad = _r(RolloutKind.ORACLE, 1.0), _r(RolloutKind.ORACLE, 0.5)
    easy = calibrate([oracle_ok, *_solver(1.0, 1.0, 0.5, 1.0)], 0.7)
    assert (easy.label, easy.pass_rate, easy.mean_reward_v) == ("too_easy", 0.75, 0.875)
    assert calibrate([oracle_ok, *_solver(1.0, 0.0, 0.5, 0.0)], 0.7).label == "learnable"
    assert calibrate([oracle_ok, *_solver(0.7, 0.7)], 0.7).label == "learnable"  # above, not at, the threshold
    unsolved = calibrate([oracle_ok, *_solver(0.0, 0.0, None)], 0.7)
    assert (unsolved.label, unsolved.scored, unsolved.unscored) == ("unsolved", 2, 1)
    assert calibrate([oracle_bad, *_solver(0.0, 0.0)], 0.7).label == "uncalibrated"
    none = calibrate([oracle_ok, *_solver(None, None)], 0.7)
    assert none.label == "uncalibrated" and "llm_rate_limited" in none.label_reason
    assert none.mean_reward_v is None and none.pass_rate is None
