"""The difficulty report over every calibrated skill: labels, per-task figures, the judge's scale, the holes,
and a histogram of mean r_V per task coloured by label (matplotlib, Agg backend)."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from skill2env_dagster.atomic import atomic_write_bytes
from skill2env_dagster.export.plots import pyplot
from skill2env_dagster.models.difficulty import DifficultyBin, DifficultyReport, JudgeScale, TaskDifficulty
from skill2env_dagster.models.judge import JudgeVerdict, TaskJudgement
from skill2env_dagster.models.rollout import RewardForm, RolloutKind
from skill2env_dagster.rollouts.rolled import RolledTask

PLOT_FILE = "difficulty_histogram.png"
BINS = 10  # over [0, 1]
LABEL_COLOURS = {"too_easy": "#C44E52", "learnable": "#55A868", "unsolved": "#4C72B0", "uncalibrated": "#8C8C8C"}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _scale(verdicts: list[JudgeVerdict], tasks: list[TaskJudgement], shortcuts: int) -> JudgeScale:
    def scores(kind: RolloutKind) -> list[float]:
        return [float(v.score) for v in verdicts if v.kind is kind and v.score is not None]

    compared = [v for v in verdicts if v.kind is RolloutKind.SOLVER and v.score is not None]
    agreed = sum(v.passed == (v.score is not None and v.score > 0) for v in compared)
    scale = JudgeScale(oracle_mean=_mean(scores(RolloutKind.ORACLE)), noop_mean=_mean(scores(RolloutKind.NOOP)),
                       solver_mean=_mean(scores(RolloutKind.SOLVER)),
                       judged=sum(v.status == "judged" for v in verdicts),
                       judge_failed=sum(v.status == "judge_failed" for v in verdicts),
                       agreement=round(agreed / len(compared), 4) if compared else None, compared=len(compared),
                       calibrated_tasks=sum(t.calibration == "ok" for t in tasks),
                       miscalibrated_tasks=[t.task_name for t in tasks if t.calibration == "judge_miscalibrated"],
                       unchecked_tasks=[t.task_name for t in tasks if t.calibration == "unchecked"],
                       hacking=dict(Counter(v.hacking for v in verdicts if v.hacking)),
                       off_task_bullets=sum(len(t.off_task_bullets) for t in tasks))
    scale.warnings = scale_warnings(scale, shortcuts)
    return scale


def scale_warnings(s: JudgeScale, shortcuts: int) -> list[str]:
    """Say plainly when the figures contradict each other (a judge that cannot tell the reference from doing
    nothing makes its agreement and its zero shortcuts meaningless)."""
    out = []
    if s.oracle_mean is not None and s.noop_mean is not None and s.oracle_mean <= s.noop_mean:
        out.append(f"the judge rates the Oracle ({s.oracle_mean:+g}) no higher than the no-op ({s.noop_mean:+g}): "
                   "its scores do not measure the work")
    bad = len(s.miscalibrated_tasks)
    if bad:
        out.append(f"judge_miscalibrated on {bad} task(s): the judge term is kept out of their rewards (r = r_V)")
        if s.agreement is not None:
            out.append(f"agreement {s.agreement:g} over {s.compared} solver rollouts is no evidence of a fair judge "
                       f"while it is miscalibrated on {bad} task(s)")
        if shortcuts == 0:
            out.append("0 shortcuts does not mean no verifier holes: a judge that is not calibrated may not flag them")
    if s.unchecked_tasks:
        out.append(f"{len(s.unchecked_tasks)} task(s) with an unchecked judge scale (no judged Oracle or no-op, or "
                   "the Oracle failed): the judge term is kept out of their rewards")
    if s.off_task_bullets:
        out.append(f"{s.off_task_bullets} rubric bullet(s) tied to no rule in play were not judged")
    return out


def histogram_bins(tasks: list[TaskDifficulty]) -> list[DifficultyBin]:
    """Tasks per mean-r_V bin and label; a task with no scored rollout has no mean and is in no bin."""
    bins = [DifficultyBin(lo=i / BINS, hi=(i + 1) / BINS) for i in range(BINS)]
    for t in tasks:
        if t.mean_reward_v is not None:
            b = bins[min(int(t.mean_reward_v * BINS), BINS - 1)]
            b.by_label[t.label] = b.by_label.get(t.label, 0) + 1
    return bins


def build_report(tasks: Sequence[RolledTask], too_easy_above: float,
                 reward_form: RewardForm | None = None) -> DifficultyReport:
    """One row per calibrated task, hardened rebuilds included (`hardened_from` set); the judge's columns stay
    empty for tasks that were not judged."""
    rows: list[TaskDifficulty] = []
    for rt in tasks:
        c, j = rt.task.calibration, rt.judgement
        rows.append(TaskDifficulty(
            skill_id=rt.skill, task_name=rt.task.task_name, label=c.label, label_reason=c.label_reason,
            scored=c.scored, pass_rate=c.pass_rate, mean_reward_v=c.mean_reward_v, mean_by_metric=c.mean_by_metric,
            mean_reward=j.mean_reward if j else None, oracle_score=j.oracle_score if j else None,
            noop_score=j.noop_score if j else None, solver_mean_score=j.solver_mean_score if j else None,
            shortcuts=j.shortcuts if j else 0, hardening_rounds=rt.hardening_rounds, hardened_from=rt.hardened_from,
            judge_calibration=j.calibration if j else "", judge_calibration_reason=j.calibration_reason if j else "",
            judge_term=j.judge_term if j else False, hacking=sum(j.hacking.values()) if j else 0,
            off_task_bullets=len(j.off_task_bullets) if j else 0))
    shortcuts = [h for rt in tasks for h in rt.shortcuts]
    verdicts = [v for rt in tasks for v in rt.verdicts.values()]
    return DifficultyReport(
        too_easy_above=too_easy_above, reward_form=reward_form or next((v.reward_form for v in verdicts), None),
        labels=dict(Counter(r.label for r in rows)), tasks=rows,
        judge_scale=_scale(verdicts, [rt.judgement for rt in tasks if rt.judgement], len(shortcuts)),
        shortcuts=shortcuts, bins=histogram_bins(rows))


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
