"""SFT export without Docker: which trajectories become rows, which are left out and why."""

from __future__ import annotations

import json
from pathlib import Path

from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.judge import JudgeScores, JudgeVerdict
from skill2env_dagster.models.rollout import (
    RewardForm,
    Rollout,
    RolloutKind,
    SolverRollouts,
    StopReason,
    TaskCalibration,
    TaskRollouts,
)
from skill2env_dagster.rollouts.rolled import rolled_tasks
from skill2env_dagster.rollouts.sft import export_sft, to_chat

INSTRUCTION = "Count the inventory records of /app/data.txt and write the number to /app/answer.txt for the report."


def _traj(commands: list[str], *, malformed: bool = False, not_run: bool = False) -> AtifTrajectory:
    steps = [{"step_id": 1, "source": "system", "message": "sys"},
             {"step_id": 2, "source": "user", "message": INSTRUCTION}]
    for i, c in enumerate(commands):
        sid = len(steps) + 1
        tools = [{"call_id": f"c{i}", "exit_code": 0}]
        if malformed and i == 0:
            tools[0]["malformed"] = "arguments are not valid JSON"
        steps.append({"step_id": sid, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash", "arguments": {"command": c}}],
                      "observation": None if not_run else {"results": [{"source_call_id": f"c{i}", "content": "ok"}]},
                      "extra": {"tools": [] if not_run else tools, "not_run": [f"c{i}"] if not_run else []}})
    steps.append({"step_id": len(steps) + 1, "source": "agent", "message": "Done."})
    return AtifTrajectory(session_id="s", agent={"name": "a", "version": "1",
                                                 "tool_definitions": [{"type": "function",
                                                                       "function": {"name": "bash"}}]}, steps=steps)


def _setup(tmp_path: Path, cases: dict[str, tuple[AtifTrajectory, float, int]]):
    folder = tmp_path / "rollouts"
    folder.mkdir()
    rollouts, verdicts = [], []
    for rid, (traj, reward_v, score) in cases.items():
        (folder / f"{rid}.json").write_text(traj.to_json())
        rollouts.append(Rollout(rollout_id=rid, task_name="t", kind=RolloutKind.SOLVER, solver="s", model="m",
                                attempt=0, stop=StopReason.AGENT_DONE, scored=True, metrics={"m": reward_v},
                                reward_v=reward_v, passed=reward_v == 1, trajectory=f"{rid}.json"))
        verdicts.append(JudgeVerdict(rollout_id=rid, task_name="t", kind=RolloutKind.SOLVER, solver="s",
                                     status="judged", score=score, reward_v=reward_v,
                                     reward=RewardForm().combine(reward_v, score), reward_form=RewardForm()))
    cal = TaskCalibration(scored=len(rollouts), unscored=0, label="learnable", label_reason="x")
    sr = SolverRollouts(skill_id="k", tasks=[TaskRollouts(task_name="t", path="/x", rollouts=rollouts,
                                                          calibration=cal)])
    js = JudgeScores(skill_id="k", judge_model="j", prompt_version="v", reward_form=RewardForm(), verdicts=verdicts)
    return {"k": sr}, {"k": js}, {"k": folder}


def test_rows_are_chosen_deduplicated_and_explained(tmp_path):
    solve = ["cat /app/data.txt", "wc -l < /app/data.txt > /app/answer.txt"]
    cases = {"a": (_traj(solve), 1.0, 4), "b": (_traj(solve), 1.0, 5), "c": (_traj(solve[1:]), 1.0, 1),
             "low": (_traj(solve), 0.5, 5), "bad": (_traj(solve, malformed=True), 1.0, 5),
             "cut": (_traj(solve, not_run=True), 1.0, 5)}
    ro, js, folders = _setup(tmp_path, cases)
    m = export_sft(rolled_tasks(ro, js, folders), tmp_path / "out", 0.9, DecontamConfig())
    rows = [json.loads(x) for x in Path(m.path).read_text().splitlines()]
    assert [r["rollout_id"] for r in rows] == ["b", "c"]  # b beats a (same calls, higher r); c differs
    why = {e.rollout_id: e.reason for e in m.excluded}
    assert why == {"a": "duplicate", "low": "below_threshold", "bad": "malformed_tool_calls",
                   "cut": "unanswered_tool_calls"}
    assert (m.rows, m.candidates, m.decontamination_checked) == (2, 6, False)
    assert rows[0]["messages"][2]["tool_calls"][0]["function"]["arguments"] == json.dumps({"command": solve[0]})
    assert rows[0]["messages"][3] == {"role": "tool", "tool_call_id": "c0", "content": "ok"}


def test_rows_that_copy_a_benchmark_are_left_out(tmp_path):
    ro, js, folders = _setup(tmp_path, {"a": (_traj(["cat /app/data.txt"]), 1.0, 5)})
    bench = tmp_path / "bench.txt"
    bench.write_text(INSTRUCTION)
    m = export_sft(rolled_tasks(ro, js, folders), tmp_path / "out", 0.9, DecontamConfig(benchmark_paths=[str(bench)]))
    assert m.rows == 0 and m.excluded[0].reason == "contaminated" and m.decontamination_checked


def test_copied_context_is_not_training_data():
    traj = _traj(["ls"])
    traj.steps[1].is_copied_context = True
    messages, why = to_chat(traj)
    assert why == "" and [m["role"] for m in messages] == ["system", "assistant", "tool", "assistant"]
