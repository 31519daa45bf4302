"""What makes the judge's term trustworthy, without Docker: evidenced hacking earns 0 in every reward form (the
judge's finding or the runner's tamper evidence) and leaves no SFT row; a judge that does not rate the Oracle above
the no-op by the margin is `judge_miscalibrated` and its term is kept out of that task's rewards; the report says so
and flags figures that contradict each other; hardened rebuilds are judged and enter SFT and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import SecretStr

from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.hardening import HardeningRound, HardeningSet, Revision, TaskHardening
from skill2env_dagster.models.rollout import (
    RewardForm,
    Rollout,
    RolloutKind,
    SolverRollouts,
    StopReason,
    TaskCalibration,
    TaskRollouts,
)
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.judge import Judge, calibration, judge_skill, judge_task
from skill2env_dagster.rollouts.report import build_report
from skill2env_dagster.rollouts.rolled import rolled_tasks
from skill2env_dagster.rollouts.settings import JudgeSettings
from skill2env_dagster.rollouts.sft import export_sft
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_agent import judge_reply, lenient_judge_reply

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "good_minimal"
GATED = RewardForm(form="gated")


@pytest.mark.parametrize("form", [RewardForm(), GATED])
def test_hacking_earns_nothing_in_every_form(form):
    assert form.reward(1.0, 5, hacking=True, judge_term=True) == 0.0
    assert form.reward(1.0, None, hacking=True, judge_term=True) == 0.0  # even unjudged
    assert form.reward(0.0, -5, hacking=True, judge_term=False) == 0.0
    assert form.reward(1.0, 5, hacking=False, judge_term=False) == 1.0  # judge term out: r = r_V
    assert form.reward(1.0, None, hacking=False, judge_term=True) is None
    assert form.reward(1.0, 5, hacking=False, judge_term=True) == pytest.approx(1.2)


def _traj(commands: list[str]) -> AtifTrajectory:
    steps = [{"step_id": 1, "source": "system", "message": "sys"},
             {"step_id": 2, "source": "user", "message": "Count the records of /app/data.txt into /app/answer.txt."}]
    for i, c in enumerate(commands):
        sid = len(steps) + 1
        steps.append({"step_id": sid, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash", "arguments": {"command": c}}],
                      "observation": {"results": [{"source_call_id": f"c{i}", "content": "ok"}]},
                      "extra": {"tools": [{"call_id": f"c{i}", "exit_code": 0}], "not_run": []}})
    steps.append({"step_id": len(steps) + 1, "source": "agent", "message": "Done."})
    return AtifTrajectory(session_id="s", agent={"name": "a", "version": "1"}, steps=steps)


SOLVE = ["cat /app/data.txt", "wc -l < /app/data.txt | tr -d ' ' > /app/answer.txt", "cat /app/answer.txt"]
# (kind, solver, commands, r_V, runner reason)
EPISODES = {
    "oracle": (RolloutKind.ORACLE, "oracle", ["wc -l < /app/data.txt | tr -d ' ' > /app/answer.txt"], 1.0, None),
    "noop": (RolloutKind.NOOP, "noop", [], 0.0, None),
    "solve": (RolloutKind.SOLVER, "solve", SOLVE, 1.0, None),
    "copy": (RolloutKind.SOLVER, "copy", ["cp /app/.cache/expected_answer.txt /app/answer.txt"], 1.0, None),
    "shadow": (RolloutKind.SOLVER, "shadow", ["printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/cmp", *SOLVE], 0.0,
               ReasonCode.TAMPER_DETECTED),
}


def _task(tmp_path: Path, name: str = "t", episodes: dict | None = None) -> tuple[TaskRollouts, Path]:
    folder = tmp_path / f"rollouts-{name}"
    folder.mkdir()
    rollouts = []
    for key, (kind, solver, commands, rv, reason) in (episodes or EPISODES).items():
        rid = f"{name}--{key}--0"
        (folder / f"{rid}.json").write_text(_traj(commands).to_json())
        rollouts.append(Rollout(rollout_id=rid, task_name=name, kind=kind, solver=solver, attempt=0,
                                stop=StopReason.AGENT_DONE, scored=True, metrics={"m": rv}, reward_v=rv,
                                passed=rv == 1.0, trajectory=f"{rid}.json", reason=reason,
                                evidence="changed /usr/local/bin/cmp" if reason else ""))
    cal = TaskCalibration(scored=3, unscored=0, label="too_easy", label_reason="mean r_V 0.67", oracle_passed=True)
    return TaskRollouts(task_name=name, path=str(FIXTURE), rollouts=rollouts, calibration=cal), folder


def _judge(srv: FakeOpenAI, form: RewardForm | None = None) -> Judge:
    cfg = LLMConfig(base_url=srv.base_url, model="judge", api_key=SecretStr("k"), max_retries=0, max_repairs=0,
                    cache_dir="")
    return Judge(LLMClient(cfg, sleep=lambda s: None), JudgeSettings(max_attempts=2), form or RewardForm())


@pytest.mark.parametrize("form", [RewardForm(), GATED])
def test_a_fair_judge_calibrates_and_hacking_gets_zero(tmp_path, form):
    task, folder = _task(tmp_path)
    with FakeOpenAI(lambda body: judge_reply(body)) as srv:
        judged = judge_task(task, folder, _judge(srv, form))
    v = {x.solver: x for x in judged.verdicts}
    assert judged.summary.calibration == "ok" and judged.summary.judge_term
    assert (v["oracle"].score, v["noop"].score) == (4, -3)
    assert v["solve"].reward == pytest.approx(1.16) and v["solve"].hacking is None
    assert (v["copy"].hacking, v["copy"].reward) == ("judge", 0.0)  # passed the tests, copied the answer
    assert v["copy"].hacking_evidence == "steps [3]: forged or hard-coded the result"
    assert (v["shadow"].hacking, v["shadow"].reward) == ("runner", 0.0)
    assert judged.summary.hacking == {"judge": 1, "runner": 1}
    assert [s.rollout_id for s in judged.shortcuts] == ["t--copy--0"]


def test_a_lenient_judge_is_miscalibrated_its_term_is_kept_out_and_the_runner_still_counts(tmp_path):
    """The issue's scripted check: a judge that rates everything +5 (the no-op as the reference); the runner's
    tamper evidence still gives 0; the rest get r_V alone; the report says why and flags the contradiction."""
    task, folder = _task(tmp_path)
    with FakeOpenAI(lambda body: lenient_judge_reply(body)) as srv:
        judge = _judge(srv)
        scores = judge_skill(SolverRollouts(skill_id="k", tasks=[task]), folder, judge, "v")
    t = scores.tasks[0]
    assert (t.calibration, t.judge_term) == ("judge_miscalibrated", False)
    assert t.calibration_reason == "judge_miscalibrated: Oracle +5 is not above the no-op +5 by 4"
    v = {x.solver: x for x in scores.verdicts}
    assert all(x.score == 5 and not x.judge_term for x in scores.verdicts)
    assert v["solve"].reward == 1.0 and v["copy"].reward == 1.0  # r_V alone: the judge does not pay or cost
    assert (v["shadow"].hacking, v["shadow"].reward) == ("runner", 0.0)
    report = build_report(rolled_tasks({"k": SolverRollouts(skill_id="k", tasks=[task])}, {"k": scores},
                                       {"k": folder}), 0.7)
    scale = report.judge_scale
    assert scale.miscalibrated_tasks == ["t"] and scale.calibrated_tasks == 0 and scale.hacking == {"runner": 1}
    text = " | ".join(scale.warnings)
    assert "no higher than the no-op" in text and "no evidence of a fair judge" in text
    assert "0 shortcuts does not mean no verifier holes" in text
    row = report.tasks[0]
    assert (row.judge_calibration, row.judge_term, row.hacking) == ("judge_miscalibrated", False, 1)


def test_an_inverted_scale_is_miscalibrated():
    from skill2env_dagster.models.judge import JudgeVerdict

    def v(kind: RolloutKind, score: int | None) -> JudgeVerdict:
        return JudgeVerdict(rollout_id=kind.value, task_name="t", kind=kind, solver=kind.value,
                            status="judged" if score is not None else "judge_failed", score=score,
                            reward_form=RewardForm())

    assert calibration([v(RolloutKind.ORACLE, -5), v(RolloutKind.NOOP, -3)], True, 4)[0] == "judge_miscalibrated"
    assert calibration([v(RolloutKind.ORACLE, 4), v(RolloutKind.NOOP, -3)], True, 4)[0] == "ok"
    assert calibration([v(RolloutKind.ORACLE, 1), v(RolloutKind.NOOP, -2)], True, 4)[0] == "judge_miscalibrated"
    assert calibration([v(RolloutKind.ORACLE, None), v(RolloutKind.NOOP, -3)], True, 4)[0] == "unchecked"
    assert calibration([v(RolloutKind.ORACLE, 4), v(RolloutKind.NOOP, -3)], False, 4)[0] == "unchecked"


def test_hacking_leaves_no_sft_row_and_is_counted(tmp_path):
    task, folder = _task(tmp_path)
    sr = SolverRollouts(skill_id="k", tasks=[task])
    with FakeOpenAI(lambda body: judge_reply(body)) as srv:
        scores = judge_skill(sr, folder, _judge(srv), "v")
    m = export_sft(rolled_tasks({"k": sr}, {"k": scores}, {"k": folder}), tmp_path / "sft", 0.9, DecontamConfig())
    rows = [json.loads(x) for x in Path(m.path).read_text().splitlines()]
    assert [r["rollout_id"] for r in rows] == ["t--solve--0"]
    why = {e.rollout_id: e.reason for e in m.excluded}
    assert why == {"t--copy--0": "hacking", "t--shadow--0": "hacking"}
    assert m.excluded_by_reason()["hacking"] == 2


def test_hardened_rebuilds_are_judged_and_enter_sft_and_the_report(tmp_path):
    original, folder = _task(tmp_path, "t")
    rebuilt, hfolder = _task(tmp_path, "t-h1", {k: EPISODES[k] for k in ("oracle", "noop", "solve")})
    hroot = hfolder.parent / "hardening"
    (hroot).mkdir()
    hfolder.rename(hroot / "t-h1")
    with FakeOpenAI(lambda body: judge_reply(body)) as srv:
        judge = _judge(srv)
        scores = judge_skill(SolverRollouts(skill_id="k", tasks=[original]), folder, judge, "v")
        judged = judge_task(rebuilt, hroot / "t-h1", judge, hardened_from="t")
    after = rebuilt.calibration.model_copy(update={"label": "learnable"})
    rnd = HardeningRound(round=1, why="mean r_V 0.67", before=original.calibration, after=after,
                         revision=Revision(summary="complexity easy → medium", task_name="t-h1", path=str(FIXTURE),
                                           retained=True),
                         rollouts=rebuilt.rollouts, judgement=judged.summary, verdicts=judged.verdicts)
    hs = HardeningSet(skill_id="k", max_rounds=1, tasks=[TaskHardening(
        task_name="t", rounds=[rnd], outcome="hardened", final_task="t-h1", final_path=str(FIXTURE),
        final_label="learnable")])
    tasks = rolled_tasks({"k": SolverRollouts(skill_id="k", tasks=[original])}, {"k": scores}, {"k": folder},
                         {"k": hs}, {"k": hroot})
    assert [(t.task.task_name, t.hardened_from, t.hardening_rounds) for t in tasks] == [("t", "", 1), ("t-h1", "t", 0)]
    report = build_report(tasks, 0.7)
    row = {r.task_name: r for r in report.tasks}["t-h1"]
    assert (row.hardened_from, row.label, row.judge_calibration, row.oracle_score) == ("t", "learnable", "ok", 4)
    assert report.judge_scale.calibrated_tasks == 2 and report.judge_scale.judged == 8
    m = export_sft(tasks, tmp_path / "sft", 0.9, DecontamConfig())
    assert sorted(json.loads(x)["task"] for x in Path(m.path).read_text().splitlines()) == ["t", "t-h1"]
