"""A model that returns garbage, times out or refuses gets a recorded status, never a crash: as the solver (the
episode ends with its stop reason and reason code, its trajectory valid) and as the judge (`judge_failed` with the
reason, no score and never a 0)."""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager

import pytest
from pydantic import SecretStr

from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.tools import ToolChat
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.rollout import RewardForm, StopReason
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.episode import EpisodeSpec, run_episode
from skill2env_dagster.rollouts.judge import Judge
from skill2env_dagster.rollouts.policy import ModelPolicy
from skill2env_dagster.rollouts.settings import AgentLimits, JudgeSettings
from tests.support.fake_openai import FakeOpenAI, malformed, server_error, slow, truncated
from tests.support.scripted_agent import judge_reply
from tests.unit.test_rollout_episode import FIXTURE, MemorySandbox

RUBRIC = ("## Must-do\n- Write the count.\n\n## Must-avoid\n- Editing the data.\n\n"
          "## Best-practice\n- Count with a tool.\n")


def _config(srv: FakeOpenAI, timeout: float = 5.0) -> LLMConfig:
    return LLMConfig(base_url=srv.base_url, model="m", api_key=SecretStr("k"), timeout=timeout, max_retries=1,
                     backoff_base=0.01, backoff_cap=0.02, max_repairs=0, cache_dir="")


def _episode(tmp_path, srv: FakeOpenAI, timeout: float = 5.0):
    task = tmp_path / "task"
    if not task.exists():
        shutil.copytree(FIXTURE, task)
    sb = MemorySandbox()

    @contextmanager
    def opener(_):
        yield sb

    policy = ModelPolicy("s", ToolChat(_config(srv, timeout)), 0.7, 256)
    spec = EpisodeSpec("task", task, f"task--s--{len(list(tmp_path.glob('*.json')))}", 0, AgentLimits(max_turns=4))
    r = run_episode(spec, policy, opener, tmp_path)
    AtifTrajectory.model_validate_json((tmp_path / r.trajectory).read_text())  # always a valid record
    return r, sb


@pytest.mark.parametrize("fault, reason", [(truncated, ReasonCode.LLM_UNAVAILABLE),
                                           (server_error, ReasonCode.LLM_UNAVAILABLE)])
def test_a_solver_that_sends_garbage_or_fails_is_a_recorded_status(tmp_path, fault, reason):
    with FakeOpenAI(lambda body: "x", fault_for=lambda body: fault()) as srv:
        r, sb = _episode(tmp_path, srv)
    assert (r.stop, r.scored, r.reward_v) == (StopReason.MODEL_FAILED, False, None)
    assert r.reason is not None and r.evidence and sb.commands == []


def test_a_solver_that_times_out_is_model_failed(tmp_path):
    with FakeOpenAI(lambda body: "x", fault_for=lambda body: slow(3)) as srv:
        r, _ = _episode(tmp_path, srv, timeout=0.5)
    assert (r.stop, r.reason, r.scored) == (StopReason.MODEL_FAILED, ReasonCode.LLM_UNAVAILABLE, False)


def test_garbage_text_or_a_refusal_ends_the_episode_and_is_scored(tmp_path):
    for reply in ("I'm sorry, but I can't help with that.", "%%% \x00 ]]]{{ not a tool call"):
        with FakeOpenAI(lambda body, reply=reply: reply) as srv:
            r, sb = _episode(tmp_path, srv)
        assert (r.stop, r.scored, r.turns, r.tool_calls) == (StopReason.AGENT_DONE, True, 1, 0)
        assert sb.verified


def test_garbage_tool_calls_are_shown_back_and_recorded(tmp_path):
    call = {"content": "", "tool_calls": [{"id": "c1", "type": "function",
                                           "function": {"name": "bash", "arguments": "{{{not json"}}]}
    with FakeOpenAI(lambda body: call if sum(m["role"] == "assistant" for m in body["messages"]) == 0
                    else "done") as srv:
        r, sb = _episode(tmp_path, srv)
    assert (r.stop, r.scored, r.tool_calls) == (StopReason.AGENT_DONE, True, 1) and sb.commands == []
    traj = AtifTrajectory.model_validate_json((tmp_path / r.trajectory).read_text())
    assert "not valid JSON" in json.dumps(traj.steps[2].extra)


def _judge_once(srv: FakeOpenAI, timeout: float = 5.0):
    from tests.unit.test_judge import _rollout, _traj

    judge = Judge(LLMClient(_config(srv, timeout), sleep=lambda s: None), JudgeSettings(max_attempts=2), RewardForm())
    return judge.judge(_rollout(), _traj(2), "Count the records.", RUBRIC)


@pytest.mark.parametrize("reply", ["I'm sorry, I can't evaluate this episode.", "<<garbage>> {\"score\": ",
                                   json.dumps({"score": 99, "bullets": []})])
def test_a_judge_that_refuses_or_answers_garbage_is_judge_failed(reply):
    with FakeOpenAI(lambda body: reply) as srv:
        v = _judge_once(srv)
    assert (v.status, v.score, v.reward) == ("judge_failed", None, None)
    assert v.reason is ReasonCode.JUDGE_FAILED and v.problem


@pytest.mark.parametrize("fault", [malformed, truncated])
def test_a_judge_whose_replies_break_is_judge_failed(fault):
    with FakeOpenAI(lambda body: judge_reply(body), fault_for=lambda body: fault()) as srv:
        v = _judge_once(srv)
    assert (v.status, v.score) == ("judge_failed", None) and v.reason is not None


def test_a_judge_that_times_out_says_so():
    with FakeOpenAI(lambda body: judge_reply(body), fault_for=lambda body: slow(3)) as srv:
        v = _judge_once(srv, timeout=0.5)
    assert (v.status, v.reason, v.score) == ("judge_failed", ReasonCode.LLM_UNAVAILABLE, None)
