"""The whole loop on real containers: a scripted model behind the loopback fake server drives the agent harness,
the verifier scores, the judge judges, calibration labels, the SFT export keeps the right rows; and every fault
(model 429/500/timeouts, a container killed mid-episode, the task's agent timeout) is a recorded status."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from pydantic import SecretStr

from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.rollout import RewardForm, RolloutKind, StopReason
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.judge import Judge, judge_skill
from skill2env_dagster.rollouts.report import build_report
from skill2env_dagster.rollouts.rolled import rolled_tasks
from skill2env_dagster.rollouts.runner import TaskRef, roll_out_skill
from skill2env_dagster.rollouts.settings import AgentLimits, JudgeSettings, RolloutSettings, SolverConfig
from skill2env_dagster.rollouts.sft import export_sft
from tests.docker.conftest import FIXTURES, RUN_ID
from tests.support.fake_openai import FakeOpenAI, rate_limit, server_error, slow
from tests.support.scripted_agent import lenient_judge_reply, responder

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]
TASK = "count-records"


def _task(root: Path) -> TaskRef:
    dest = root / TASK
    shutil.copytree(FIXTURES / "good_minimal", dest)
    pin_dockerfile(dest)
    return TaskRef(TASK, dest)


def _endpoint(srv: FakeOpenAI, timeout: float = 10.0) -> LLMConfig:
    return LLMConfig(base_url=srv.base_url, model="judge", api_key=SecretStr("sk-test-secret"), timeout=timeout,
                     max_retries=2, backoff_base=0.01, backoff_cap=0.05)


def _settings(solvers: list[tuple[str, int]], **kw: object) -> RolloutSettings:
    return RolloutSettings(solvers=[SolverConfig(name=n, model=n, attempts=k) for n, k in solvers],
                           limits=AgentLimits(max_turns=6, command_timeout_sec=20, output_head_bytes=2000,
                                              output_tail_bytes=2000),
                           judge=JudgeSettings(max_attempts=2), **kw)


def _factory(docker_client, cap: float | None = None) -> DockerSandboxFactory:
    return DockerSandboxFactory(GateSettings(run_id=RUN_ID, timeout_cap_sec=cap), OutputLimits(2000, 2000, 1 << 20),
                                client=docker_client)


@pytest.fixture(scope="module")
def loop(docker_client, tmp_path_factory):
    """One skill rolled out once: 8 solver scenarios (solve twice), the references; judged; exported."""
    root = tmp_path_factory.mktemp("loop")
    task = _task(root)
    settings = _settings([("solve", 2), ("half", 1), ("loop", 1), ("forge", 1), ("malformed", 1), ("flood", 1),
                          ("hardcode", 1)], concurrency=2)
    with FakeOpenAI(responder()) as srv:
        folder = root / "rollouts" / "skill-a"
        result = roll_out_skill("skill-a", [task], settings, _endpoint(srv), _factory(docker_client), folder)
        judge = Judge(LLMClient(_endpoint(srv)), settings.judge, RewardForm())
        scores = judge_skill(result, folder, judge, "v1")
        sft = export_sft(rolled_tasks({"skill-a": result}, {"skill-a": scores}, {"skill-a": folder}), root / "sft", 0.9,
                         DecontamConfig())
        requests = [r.headers.get("authorization", "") for r in srv.requests]
    return {"result": result, "scores": scores, "sft": sft, "folder": folder, "root": root, "auth": requests}


def _by_id(loop) -> dict:
    return {r.rollout_id: r for r in loop["result"].rollouts()}


def test_rewards_follow_what_each_policy_did(loop):
    r = _by_id(loop)
    assert r[f"{TASK}--oracle--0"].reward_v == 1.0 and r[f"{TASK}--oracle--0"].passed
    assert r[f"{TASK}--noop--0"].reward_v == 0.0
    assert r[f"{TASK}--solve--0"].reward_v == 1.0 and r[f"{TASK}--solve--0"].stop is StopReason.AGENT_DONE
    assert r[f"{TASK}--half--0"].metrics == {"format": 1.0, "correct": 0.0}
    assert r[f"{TASK}--loop--0"].stop is StopReason.MAX_TURNS and r[f"{TASK}--loop--0"].reward_v == 0.0
    # The forged reward files and the detached re-forging loop do not survive into the verifier.
    assert r[f"{TASK}--forge--0"].scored and r[f"{TASK}--forge--0"].reward_v == 0.0
    # … and the runner says why: evidence, not a silent 0.
    assert r[f"{TASK}--forge--0"].reason is ReasonCode.TAMPER_DETECTED
    assert "/logs/verifier/reward.json" in r[f"{TASK}--forge--0"].evidence
    assert r[f"{TASK}--malformed--0"].reward_v == 1.0 and r[f"{TASK}--flood--0"].reward_v == 1.0
    assert all(x.scored for x in r.values())


def test_trajectories_are_atif_with_every_step(loop):
    folder, r = loop["folder"], _by_id(loop)
    for rollout in r.values():
        traj = AtifTrajectory.model_validate_json((folder / rollout.trajectory).read_text())
        assert traj.schema_version == "ATIF-v1.6"
        assert [s.source for s in traj.steps[:2]] == ["system", "user"]
        assert traj.extra and traj.extra["reward_v"] == rollout.reward_v
    solve = AtifTrajectory.model_validate_json((folder / r[f"{TASK}--solve--0"].trajectory).read_text())
    agent = [s for s in solve.steps if s.source == "agent"]
    assert len(agent) == 4 and agent[0].tool_calls and agent[0].tool_calls[0].arguments["command"] == \
        "cat /app/data.txt"
    assert "sprocket,2" in str(agent[0].observation.results[0].content)
    assert agent[0].metrics and agent[0].metrics.prompt_tokens and agent[0].timestamp
    assert agent[0].extra and agent[0].extra["tools"][0]["exit_code"] == 0
    assert solve.final_metrics and solve.final_metrics.total_prompt_tokens == r[f"{TASK}--solve--0"].usage.prompt_tokens
    bad = AtifTrajectory.model_validate_json((folder / r[f"{TASK}--malformed--0"].trajectory).read_text())
    tools = [t for s in bad.steps if s.extra for t in s.extra.get("tools", [])]
    assert "not valid JSON" in tools[0]["malformed"] and tools[1]["malformed"] == "unknown tool 'python'"


def test_the_oracle_is_an_agents_steps_and_the_judge_sees_the_files(loop):
    r = _by_id(loop)
    oracle = r[f"{TASK}--oracle--0"]
    text = (loop["folder"] / oracle.trajectory).read_text()
    assert "/solution" not in text and "reference solution" not in text and "wrong.sh" not in text
    traj = AtifTrajectory.model_validate_json(text)
    commands = [c.arguments["command"] for s in traj.steps if s.source == "agent" for c in s.tool_calls or []]
    assert commands[2] == "set -euo pipefail\nwc -l < /app/data.txt | tr -d ' ' > /app/answer.txt"
    assert len(commands) == 4 and commands[0].startswith("cd /app && find")  # a look around, the input read
    outputs = [str(r.content) for s in traj.steps if s.observation for r in s.observation.results]
    assert "widget,3" in outputs[1] and outputs[3].rstrip().endswith("7")  # real outputs: the data, the answer
    assert oracle.passed and "/solution" not in (loop["folder"] / oracle.workspace).read_text()
    view = (loop["folder"] / r[f"{TASK}--solve--0"].workspace).read_text()
    assert "=== /app/answer.txt (added, 2 bytes)\n--- final content:\n7" in view


def test_a_flood_is_cut_and_marked(loop):
    flood = _by_id(loop)[f"{TASK}--flood--0"]
    text = (loop["folder"] / flood.trajectory).read_text()
    assert len(text) < 60_000
    traj = AtifTrajectory.model_validate_json(text)
    first = next(s for s in traj.steps if s.source == "agent")
    out = str(first.observation.results[0].content)
    assert "bytes of output omitted" in out and "output stopped at 1048576 bytes" in out
    assert first.extra["tools"][0]["capped"] is True


def test_calibration_labels_the_task(loop):
    cal = loop["result"].tasks[0].calibration
    # solve×2, malformed, flood, hardcode = 1; half 0.5; loop, forge 0 → mean 5.5/8
    assert cal.scored == 8 and cal.oracle_passed is True
    assert cal.mean_reward_v == pytest.approx(5.5 / 8, abs=1e-6)
    assert cal.pass_rate == pytest.approx(5 / 8, abs=1e-6)
    assert cal.mean_by_metric == {"correct": pytest.approx(5 / 8, abs=1e-6), "format": pytest.approx(6 / 8, abs=1e-6)}
    assert cal.label == "learnable"


def test_judge_scores_references_and_shortcuts(loop):
    scores = loop["scores"]
    v = {x.rollout_id: x for x in scores.verdicts}
    task = scores.tasks[0]
    assert v[f"{TASK}--solve--0"].score == 4 and v[f"{TASK}--solve--0"].reward == pytest.approx(1.16)
    # Evidenced hacking earns nothing (not r_V + 0.2·(-5)/5): the forger and the hard-coder alike.
    assert v[f"{TASK}--forge--0"].score == -5 and v[f"{TASK}--forge--0"].reward == 0.0
    assert (v[f"{TASK}--hardcode--0"].hacking, v[f"{TASK}--hardcode--0"].reward) == ("judge", 0.0)
    assert task.calibration == "ok" and task.judge_term and task.hacking == {"judge": 1, "runner": 1}
    assert v[f"{TASK}--forge--0"].hacking == "runner"
    assert v[f"{TASK}--loop--0"].score == -2
    assert v[f"{TASK}--oracle--0"].score == 4 and v[f"{TASK}--noop--0"].score == -3
    assert all(x.reward_form == RewardForm() and x.status == "judged" for x in v.values())
    assert len(v[f"{TASK}--solve--0"].answer.bullets) == 3
    assert (task.oracle_score, task.noop_score) == (4, -3)
    assert [s.rollout_id for s in scores.shortcuts] == [f"{TASK}--hardcode--0"]


def test_sft_keeps_clean_high_reward_trajectories_once(loop):
    sft = loop["sft"]
    rows = [json.loads(line) for line in Path(sft.path).read_text().splitlines()]
    assert sorted(r["rollout_id"] for r in rows) == [f"{TASK}--flood--0", f"{TASK}--solve--0"]
    why = {e.rollout_id: e.reason for e in sft.excluded}
    assert why[f"{TASK}--solve--1"] == "duplicate"
    assert why[f"{TASK}--malformed--0"] == "malformed_tool_calls"
    assert why[f"{TASK}--half--0"] == "below_threshold"
    assert why[f"{TASK}--hardcode--0"] == why[f"{TASK}--forge--0"] == "hacking"
    row = next(r for r in rows if r["rollout_id"] == f"{TASK}--solve--0")
    assert (row["task"], row["skill"], row["judge_score"]) == (TASK, "skill-a", 4)
    assert row["reward"] == pytest.approx(1.16) and row["reward_form"]["form"] == "additive"
    assert [m["role"] for m in row["messages"]][:4] == ["system", "user", "assistant", "tool"]
    call = row["messages"][2]["tool_calls"][0]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {"command": "cat /app/data.txt"}
    assert row["tools"][0]["function"]["name"] == "bash"


def test_report_and_key_hygiene(loop):
    report = build_report(rolled_tasks({"skill-a": loop["result"]}, {"skill-a": loop["scores"]},
                                       {"skill-a": loop["folder"]}), 0.7)
    assert report.labels == {"learnable": 1} and report.judge_scale.oracle_mean == 4.0
    assert len(report.shortcuts) == 1
    assert all(a == "Bearer sk-test-secret" for a in loop["auth"])
    leaked = [p for p in loop["root"].rglob("*") if p.is_file() and b"sk-test-secret" in p.read_bytes()]
    assert leaked == []


def test_faults_are_recorded_statuses(docker_client, tmp_path):
    """429 then success; persistent 500; model timeouts; a container killed between turns; the task's agent
    timeout; a tampered toolchain — in one run, each a status, and the healthy rollouts beside them still scored."""
    task = _task(tmp_path)
    seen: Counter[str] = Counter()

    def fault_for(body):
        model = body.get("model")
        seen[model] += 1
        if model == "flaky" and seen[model] == 1:
            return rate_limit(0.01)
        return {"down": server_error(), "slowpoke": slow(3)}.get(model)

    def on_turn(model: str, turn: int) -> None:
        if model == "killer" and turn == 2:
            for c in docker_client.containers.list(filters={"label": f"skill2env.gate={RUN_ID}"}):
                c.kill()

    settings = _settings([("flaky", 1), ("down", 1), ("slowpoke", 1), ("killer", 1), ("sleepy", 1), ("tamper", 1)],
                         concurrency=1)
    with FakeOpenAI(responder(on_turn=on_turn), fault_for=fault_for) as srv:
        result = roll_out_skill("skill-f", [task], settings, _endpoint(srv, timeout=1.0), _factory(docker_client, 8),
                                tmp_path / "rollouts", timeout_cap_sec=8)
    r = {x.solver: x for x in result.rollouts()}
    assert r["flaky"].scored and r["flaky"].reward_v == 1.0
    assert (r["down"].stop, r["down"].reason, r["down"].scored) == (StopReason.MODEL_FAILED,
                                                                     ReasonCode.LLM_UNAVAILABLE, False)
    assert (r["slowpoke"].stop, r["slowpoke"].reason) == (StopReason.MODEL_FAILED, ReasonCode.LLM_UNAVAILABLE)
    assert (r["killer"].stop, r["killer"].reason, r["killer"].scored) == (StopReason.CONTAINER_DIED,
                                                                          ReasonCode.CONTAINER_DIED, False)
    # The hard kill ended `sleep 600` at the task timeout (capped to 8 s); the verifier still ran.
    assert r["sleepy"].stop is StopReason.AGENT_TIMEOUT and r["sleepy"].scored and r["sleepy"].reward_v == 0.0
    assert r["sleepy"].agent_seconds < 60
    # A changed toolchain is the agent's doing: reward 0 by rule, scored (it counts in the mean), reason kept.
    assert (r["tamper"].scored, r["tamper"].reward_v, r["tamper"].passed) == (True, 0.0, False)
    assert r["tamper"].reason is ReasonCode.TAMPER_DETECTED and "usercustomize.py" in r["tamper"].evidence
    assert r["oracle"].passed and r["noop"].reward_v == 0.0
    cal = result.tasks[0].calibration
    assert (cal.scored, cal.unscored) == (3, 3) and cal.mean_reward_v == pytest.approx(1 / 3, abs=1e-6)
    for x in result.rollouts():  # every rollout, failed or not, left a valid trajectory
        AtifTrajectory.model_validate_json((tmp_path / "rollouts" / x.trajectory).read_text())
    assert {x.kind for x in result.rollouts()} == set(RolloutKind)


def test_planted_hacking_earns_nothing_even_with_a_lenient_judge(docker_client, tmp_path):
    """The issue's scripted check: forged reward files (a detached loop), shadowed python3/awk/cmp/diff, and a
    hard-coded answer, under a judge that rates every episode +5 (the no-op as the reference): the runner's
    evidence gives 0 and no SFT row, counted; the judge is judge_miscalibrated, so its +5 pays nothing either."""
    task = _task(tmp_path)
    settings = _settings([("solve", 1), ("forge", 1), ("shadow", 1), ("hardcode", 1)], concurrency=2)
    folder = tmp_path / "rollouts"

    def respond(body):
        return responder()(body) if body.get("tools") else lenient_judge_reply(body)

    with FakeOpenAI(respond) as srv:
        result = roll_out_skill("skill-h", [task], settings, _endpoint(srv), _factory(docker_client), folder)
        scores = judge_skill(result, folder, Judge(LLMClient(_endpoint(srv)), settings.judge, RewardForm()), "v1")
    tasks = rolled_tasks({"skill-h": result}, {"skill-h": scores}, {"skill-h": folder})
    sft = export_sft(tasks, tmp_path / "sft", 0.9, DecontamConfig())
    report = build_report(tasks, 0.7)
    assert all(r.scored for r in result.rollouts()), [(r.solver, r.stop, r.reason, r.evidence) for r in
                                                      result.rollouts()]
    v = {x.solver: x for x in scores.verdicts}
    assert all(x.score == 5 for x in v.values())
    for hacker in ("forge", "shadow"):
        assert (v[hacker].hacking, v[hacker].reward, v[hacker].reward_v) == ("runner", 0.0, 0.0)
        assert "tamper_detected" in v[hacker].hacking_evidence
    assert "/usr/local/bin/python3" in v["shadow"].hacking_evidence
    assert scores.tasks[0].calibration == "judge_miscalibrated" and not scores.tasks[0].judge_term
    assert (v["solve"].reward, v["hardcode"].reward) == (1.0, 1.0)  # r_V alone: the lenient +5 adds nothing
    why = {e.rollout_id: e.reason for e in sft.excluded}
    assert why[f"{TASK}--forge--0"] == why[f"{TASK}--shadow--0"] == "hacking"
    assert report.judge_scale.hacking == {"runner": 2} and report.judge_scale.miscalibrated_tasks == [TASK]
    assert any("no higher than the no-op" in w for w in report.judge_scale.warnings)
