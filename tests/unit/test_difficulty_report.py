"""The difficulty report without Docker: judge-verifier agreement and the histogram's bins."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.models.judge import JudgeScores, JudgeVerdict
from skill2env_dagster.models.rollout import (
    RewardForm,
    RolloutKind,
    SolverRollouts,
    TaskCalibration,
    TaskRollouts,
)
from skill2env_dagster.rollouts.report import build_report, write_histogram
from skill2env_dagster.rollouts.rolled import rolled_tasks


def _verdict(rid: str, task: str, passed: bool, score: int | None, kind: RolloutKind = RolloutKind.SOLVER):
    return JudgeVerdict(rollout_id=rid, task_name=task, kind=kind, solver="s", passed=passed,
                        status="judged" if score is not None else "judge_failed", score=score,
                        reward_v=1.0 if passed else 0.0, reward_form=RewardForm())


def _task(name: str, label: str, mean: float | None) -> TaskRollouts:
    return TaskRollouts(task_name=name, path="/x", calibration=TaskCalibration(
        scored=0 if mean is None else 2, unscored=0, label=label, label_reason="x", mean_reward_v=mean))


def test_agreement_counts_solver_verdicts_whose_sign_matches_the_verifier():
    verdicts = [_verdict("a", "t1", True, 4), _verdict("b", "t1", True, -5),  # a shortcut: disagree
                _verdict("c", "t1", False, -2), _verdict("d", "t1", False, 1),  # rewarding a failure: disagree
                _verdict("e", "t1", False, 0), _verdict("f", "t1", False, None),  # 0 agrees; failed: not compared
                _verdict("o", "t1", True, -3, RolloutKind.ORACLE)]  # references are the scale, not agreement
    scores = JudgeScores(skill_id="k", judge_model="j", prompt_version="v", reward_form=RewardForm(),
                         verdicts=verdicts)
    rollouts = SolverRollouts(skill_id="k", tasks=[_task("t1", "learnable", 0.4)])
    scale = build_report(rolled_tasks({"k": rollouts}, {"k": scores}, {"k": Path("/x")}), 0.7).judge_scale
    assert (scale.compared, scale.agreement) == (5, 0.6)


def test_bins_place_each_mean_once_and_the_plot_draws_them(tmp_path):
    tasks = [_task("a", "too_easy", 1.0), _task("b", "too_easy", 0.95), _task("c", "learnable", 0.5),
             _task("d", "unsolved", 0.0), _task("e", "uncalibrated", None)]
    report = build_report(rolled_tasks({"k": SolverRollouts(skill_id="k", tasks=tasks)}, {}, {"k": Path("/x")}), 0.7)
    filled = {(b.lo, b.hi): b.by_label for b in report.bins if b.by_label}
    assert filled == {(0.0, 0.1): {"unsolved": 1}, (0.5, 0.6): {"learnable": 1}, (0.9, 1.0): {"too_easy": 2}}
    assert len(report.bins) == 10 and report.judge_scale.agreement is None
    png = write_histogram(report, tmp_path / "h.png").read_bytes()
    assert png.startswith(b"\x89PNG")
