"""The difficulty report over every calibrated skill: labels, per-task figures, the judge's scale, the holes,
and a histogram of mean r_V per task coloured by label (matplotlib, Agg backend)."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from skill2env_dagster.atomic import atomic_write_bytes
from skill2env_dagster.export.plots import pyplot
from skill2env_dagster.models.difficulty import DifficultyBin, DifficultyReport, JudgeScale, TaskDifficulty
from skill2env_dagster.models.judge import JudgeScores, JudgeVerdict, TaskJudgement
from skill2env_dagster.models.rollout import RolloutKind, SolverRollouts

PLOT_FILE = "difficulty_histogram.png"
BINS = 10  # over [0, 1]
LABEL_COLOURS = {"too_easy": "#C44E52", "learnable": "#55A868", "unsolved": "#4C72B0", "uncalibrated": "#8C8C8C"}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _scale(verdicts: list[JudgeVerdict]) -> JudgeScale:
    def scores(kind: RolloutKind) -> list[float]:
        return [float(v.score) for v in verdicts if v.kind is kind and v.score is not None]

    compared = [v for v in verdicts if v.kind is RolloutKind.SOLVER and v.score is not None]
    agreed = sum(v.passed == (v.score is not None and v.score > 0) for v in compared)
    return JudgeScale(oracle_mean=_mean(scores(RolloutKind.ORACLE)), noop_mean=_mean(scores(RolloutKind.NOOP)),
                      solver_mean=_mean(scores(RolloutKind.SOLVER)),
                      judged=sum(v.status == "judged" for v in verdicts),
                      judge_failed=sum(v.status == "judge_failed" for v in verdicts),
                      agreement=round(agreed / len(compared), 4) if compared else None, compared=len(compared))


def histogram_bins(tasks: list[TaskDifficulty]) -> list[DifficultyBin]:
    """Tasks per mean-r_V bin and label; a task with no scored rollout has no mean and is in no bin."""
    bins = [DifficultyBin(lo=i / BINS, hi=(i + 1) / BINS) for i in range(BINS)]
    for t in tasks:
        if t.mean_reward_v is not None:
            b = bins[min(int(t.mean_reward_v * BINS), BINS - 1)]
            b.by_label[t.label] = b.by_label.get(t.label, 0) + 1
    return bins


def build_report(rollouts: Mapping[str, SolverRollouts], scores: Mapping[str, JudgeScores], too_easy_above: float,
                 hardening: Mapping[str, int] | None = None) -> DifficultyReport:
    """One row per calibrated task; the judge's columns stay empty for skills that were not judged."""
    rows: list[TaskDifficulty] = []
    for skill, sr in sorted(rollouts.items()):
        judged: dict[str, TaskJudgement] = {t.task_name: t for t in scores[skill].tasks} if skill in scores else {}
        for t in sr.tasks:
            c, j = t.calibration, judged.get(t.task_name)
            rows.append(TaskDifficulty(
                skill_id=skill, task_name=t.task_name, label=c.label, label_reason=c.label_reason, scored=c.scored,
                pass_rate=c.pass_rate, mean_reward_v=c.mean_reward_v, mean_by_metric=c.mean_by_metric,
                mean_reward=j.mean_reward if j else None, oracle_score=j.oracle_score if j else None,
                noop_score=j.noop_score if j else None, solver_mean_score=j.solver_mean_score if j else None,
                shortcuts=j.shortcuts if j else 0, hardening_rounds=(hardening or {}).get(t.task_name, 0)))
    forms = [s.reward_form for s in scores.values()]
    return DifficultyReport(
        too_easy_above=too_easy_above, reward_form=forms[0] if forms else None,
        labels=dict(Counter(r.label for r in rows)), tasks=rows,
        judge_scale=_scale([v for s in scores.values() for v in s.verdicts]),
        shortcuts=[h for s in scores.values() for h in s.shortcuts], bins=histogram_bins(rows))


def write_histogram(report: DifficultyReport, path: Path) -> Path:
    """The report's bins as stacked bars by label, the too_easy threshold marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 1 / BINS
    bottom = [0] * len(report.bins)
    for lab, colour in LABEL_COLOURS.items():
        heights = [b.by_label.get(lab, 0) for b in report.bins]
        if any(heights):
            ax.bar([b.lo for b in report.bins], heights, width=width, bottom=bottom, align="edge", color=colour,
                   edgecolor="white", label=f"{lab} ({sum(heights)})")
            bottom = [x + h for x, h in zip(bottom, heights, strict=True)]
    if any(bottom):
        ax.legend(fontsize=8)
    ax.axvline(report.too_easy_above, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("mean verifier reward r_V of the solver rollouts")
    ax.set_ylabel("tasks")
    ax.set_title(f"Task difficulty ({len(report.tasks)} tasks)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path
