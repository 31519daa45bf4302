"""Difficulty from k rollouts: pass rate, mean verifier reward per metric, and a label.

Labels (on the mean verifier reward r_V of the scored solver rollouts; the judge term is left out so that a label
means the same with or without a judge):
- `too_easy`: mean r_V above the threshold (default 0.7, the seed's hardening trigger);
- `unsolved`: r_V = 0 in every scored rollout while the Oracle rollout passed on the same engine;
- `learnable`: everything in between;
- `uncalibrated`: no scored solver rollout, or all zero while the Oracle did not pass (then the task, not the
  solver, is in question). The reason says which.
"""

from __future__ import annotations

from collections import Counter

from skill2env_dagster.gates.reward import TOLERANCE
from skill2env_dagster.models.rollout import DifficultyLabel, Rollout, RolloutKind, TaskCalibration


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 6)


def _label(mean: float, rewards: list[float], oracle_passed: bool | None, too_easy_above: float,
           n: int) -> tuple[DifficultyLabel, str]:
    if mean > too_easy_above:
        return "too_easy", f"mean r_V {mean:.3f} > {too_easy_above}"
    if all(r <= TOLERANCE for r in rewards):
        if oracle_passed:
            return "unsolved", f"r_V = 0 in all {n} scored rollouts; the Oracle passed"
        return "uncalibrated", "r_V = 0 in every rollout and the Oracle did not pass here"
    return "learnable", f"mean r_V {mean:.3f} ≤ {too_easy_above}, not all zero"


def calibrate(rollouts: list[Rollout], too_easy_above: float) -> TaskCalibration:
    """One task's calibration from all its rollouts (the references only inform `oracle_passed`)."""
    solver = [r for r in rollouts if r.kind is RolloutKind.SOLVER]
    scored = [r for r in solver if r.scored]
    oracle = next((r for r in rollouts if r.kind is RolloutKind.ORACLE), None)
    oracle_passed = None if oracle is None else oracle.passed
    if not scored:
        why = Counter(r.reason.value if r.reason else "unknown" for r in solver)
        return TaskCalibration(scored=0, unscored=len(solver), oracle_passed=oracle_passed, label="uncalibrated",
                               label_reason=f"no scored solver rollout (unscored: {dict(why) or 'none run'})")
    rewards = [r.reward_v or 0.0 for r in scored]
    mean = _mean(rewards)
    label, reason = _label(mean, rewards, oracle_passed, too_easy_above, len(scored))
    metrics = sorted({k for r in scored for k in r.metrics})
    return TaskCalibration(
        scored=len(scored), unscored=len(solver) - len(scored), oracle_passed=oracle_passed,
        pass_rate=_mean([1.0 if r.passed else 0.0 for r in scored]), mean_reward_v=mean,
        mean_by_metric={m: _mean([r.metrics.get(m, 0.0) for r in scored]) for m in metrics},
        label=label, label_reason=reason)
