"""Chat with tools against the loopback fake server: tool calls parsed as sent, faults retried or mapped."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.tools import ToolChat
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.tools import tool_specs
from tests.support.fake_openai import FakeOpenAI, rate_limit, server_error, slow

KEY = "sk-tools-secret"


def _chat(srv: FakeOpenAI, **kw) -> ToolChat:
    cfg = LLMConfig(base_url=srv.base_url, model="m", api_key=SecretStr(KEY), max_retries=2, backoff_base=0.01,
                    backoff_cap=0.05, **kw)
    return ToolChat(cfg, sleep=lambda s: None)


def _reply(body):
    return {"content": "checking", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{not json"}}]}


def test_tool_calls_come_back_as_sent_with_usage():
    with FakeOpenAI(_reply) as srv:
        turn = _chat(srv).turn([{"role": "user", "content": "hi"}], tool_specs(True), temperature=0.9, max_tokens=77)
        body = srv.requests[0].body
    assert [c.call_id for c in turn.calls] == ["call_1", "call_2"]
    assert turn.calls[1].arguments == "{not json"  # raw: the harness decides what a malformed call means
    assert turn.usage.calls == 1 and turn.usage.prompt_tokens > 0 and turn.finish_reason == "tool_calls"
    assert (body["temperature"], body["max_tokens"], body["tool_choice"]) == (0.9, 77, "auto")
    assert [t["function"]["name"] for t in body["tools"]] == ["bash", "write_file"]
    msg = turn.as_message()
    assert msg["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "ls"}'}


def test_transient_faults_are_retried():
    with FakeOpenAI(_reply) as srv:
        srv.enqueue(rate_limit(0.01), server_error())
        turn = _chat(srv).turn([{"role": "user", "content": "hi"}], [])
        assert srv.count == 3 and len(turn.calls) == 2


@pytest.mark.parametrize("fault, reason", [(rate_limit(0.01), ReasonCode.LLM_RATE_LIMITED),
                                           (server_error(), ReasonCode.LLM_UNAVAILABLE),
                                           (slow(2), ReasonCode.LLM_UNAVAILABLE)])
def test_persistent_faults_become_reason_codes_without_the_key(fault, reason):
    with FakeOpenAI(_reply, fault_for=lambda body: fault) as srv:
        with pytest.raises(LLMError) as err:
            _chat(srv, timeout=0.5).turn([{"role": "user", "content": "hi"}], [])
        assert srv.count == 3
    assert err.value.reason is reason and KEY not in str(err.value)


def test_no_endpoint_is_an_error():
    with pytest.raises(LLMError, match="no model configured"):
        ToolChat(LLMConfig())
    assert [t["function"]["name"] for t in tool_specs(False)] == ["bash"]
