"""LLMClient against a real loopback OpenAI-compatible server with injected faults."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from skill2env_dagster.llm import LLMClient, LLMConfig, Price
from skill2env_dagster.reasons import LLMError, ReasonCode
from tests.support.fake_openai import FakeOpenAI, drop, malformed, rate_limit, schema_violation, server_error, slow

SECRET = "sk-test-SECRET-0123456789"


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    city: str
    population: int


def _answer(body: dict) -> str:
    return json.dumps({"city": "Lyon", "population": 522000})


@pytest.fixture()
def server():
    with FakeOpenAI(_answer) as srv:
        yield srv


def _client(srv: FakeOpenAI, tmp_path: Path, **over) -> tuple[LLMClient, list[float]]:
    delays: list[float] = []
    cfg = dict(
        base_url=srv.base_url,
        api_key=SECRET,
        model="fake-model",
        timeout=2.0,
        max_retries=2,
        backoff_base=0.01,
        cache_dir=str(tmp_path / "cache"),
        prices={"fake-model": Price(input_per_mtok=1.0, output_per_mtok=2.0)},
    )
    cfg.update(over)
    return LLMClient(LLMConfig(**cfg), sleep=delays.append), delays


MSGS = [{"role": "user", "content": "Which city?"}]


def test_success_reports_usage_and_cost(server, tmp_path):
    client, _ = _client(server, tmp_path)
    answer, usage = client.complete_json(MSGS, Answer, purpose="t")
    assert answer == Answer(city="Lyon", population=522000)
    assert usage.calls == 1 and usage.cache_hits == 0
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    expected = (usage.prompt_tokens * 1.0 + usage.completion_tokens * 2.0) / 1e6
    assert usage.cost_usd == pytest.approx(expected)
    sent = server.requests[0].body
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == Answer.model_json_schema()


def test_cache_hit_makes_no_http_call(server, tmp_path):
    client, _ = _client(server, tmp_path)
    client.complete_json(MSGS, Answer, purpose="t")
    again, _ = _client(server, tmp_path)  # a fresh client (new process) reads the same cache dir
    answer, usage = again.complete_json(MSGS, Answer, purpose="t")
    assert server.count == 1
    assert usage.calls == 0 and usage.cache_hits == 1 and usage.prompt_tokens == 0 and usage.cost_usd == 0
    assert answer.city == "Lyon"
    other = [{"role": "user", "content": "Which other city?"}]
    again.complete_json(other, Answer, purpose="t")
    assert server.count == 2  # different messages: different key


def test_cache_key_includes_params(server, tmp_path):
    a, _ = _client(server, tmp_path)
    a.complete_json(MSGS, Answer, purpose="t")
    b, _ = _client(server, tmp_path, temperature=0.9)
    b.complete_json(MSGS, Answer, purpose="t")
    assert server.count == 2


def test_429_honours_retry_after(server, tmp_path):
    server.enqueue(rate_limit(7))
    client, delays = _client(server, tmp_path)
    answer, usage = client.complete_json(MSGS, Answer, purpose="t")
    assert answer.city == "Lyon" and server.count == 2
    assert delays == [7.0]


def test_500_then_recovers_with_backoff(server, tmp_path):
    server.enqueue(server_error(), server_error())
    client, delays = _client(server, tmp_path)
    client.complete_json(MSGS, Answer, purpose="t")
    assert server.count == 3 and len(delays) == 2
    assert 0.005 <= delays[0] <= 0.01 and 0.01 <= delays[1] <= 0.02  # jittered, doubling


def test_persistent_429_is_rate_limited_error(server, tmp_path):
    server.enqueue(*[rate_limit(0)] * 3)
    client, _ = _client(server, tmp_path)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason == ReasonCode.LLM_RATE_LIMITED and server.count == 3


def test_timeout_then_recover(server, tmp_path):
    server.enqueue(slow(1.5))
    client, delays = _client(server, tmp_path, timeout=0.5)
    answer, _ = client.complete_json(MSGS, Answer, purpose="t")
    assert answer.city == "Lyon" and server.count == 2 and len(delays) == 1


def test_timeouts_exhausted_is_unavailable(server, tmp_path):
    server.enqueue(slow(1.0), slow(1.0))
    client, _ = _client(server, tmp_path, timeout=0.3, max_retries=1)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason == ReasonCode.LLM_UNAVAILABLE
    assert "giving up after 2 attempt" in str(err.value)


def test_dropped_connection_is_retried(server, tmp_path):
    server.enqueue(drop())
    client, _ = _client(server, tmp_path)
    answer, _ = client.complete_json(MSGS, Answer, purpose="t")
    assert answer.city == "Lyon" and server.count == 2


def test_malformed_json_is_repaired(server, tmp_path):
    server.enqueue(malformed())
    client, _ = _client(server, tmp_path)
    answer, usage = client.complete_json(MSGS, Answer, purpose="t")
    assert answer.city == "Lyon" and usage.calls == 2
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "not valid JSON" in repair and "Answer" in repair


def test_schema_violation_twice_fails_with_code(server, tmp_path):
    server.enqueue(schema_violation(), schema_violation())
    client, _ = _client(server, tmp_path)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason == ReasonCode.LLM_SCHEMA_VIOLATION and server.count == 2
    assert not list((tmp_path / "cache").rglob("*.json"))  # invalid replies are never cached


def test_falls_back_to_json_mode_when_schema_format_refused(tmp_path):
    with FakeOpenAI(_answer, json_schema_supported=False) as srv:
        client, _ = _client(srv, tmp_path)
        answer, _ = client.complete_json(MSGS, Answer, purpose="t")
        assert answer.city == "Lyon"
        assert [r.body["response_format"]["type"] for r in srv.requests] == ["json_schema", "json_object"]
        assert "JSON schema" in srv.requests[1].body["messages"][0]["content"]
        client.complete_json([{"role": "user", "content": "x"}], Answer, purpose="t")
        assert srv.requests[-1].body["response_format"]["type"] == "json_object"  # remembered


def test_key_never_leaks(server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    server.enqueue(server_error(), schema_violation())
    client, _ = _client(server, tmp_path)
    client.complete_json(MSGS, Answer, purpose="t")
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # only the auth header carries it
    for r in server.requests:
        assert SECRET not in json.dumps(r.body)
    assert SECRET not in caplog.text
    for f in (tmp_path / "cache").rglob("*"):
        if f.is_file():
            assert SECRET not in f.read_text()
    assert SECRET not in repr(client.config) and SECRET not in client.config.model_dump_json()


def test_offline_config_refuses_client():
    with pytest.raises(LLMError) as err:
        LLMClient(LLMConfig())
    assert err.value.reason == ReasonCode.LLM_UNAVAILABLE


def test_corrupt_cache_entry_is_a_miss(server, tmp_path):
    client, _ = _client(server, tmp_path)
    client.complete_json(MSGS, Answer, purpose="t")
    for f in (tmp_path / "cache").rglob("*.json"):
        f.write_text("{not json")
    client.complete_json(MSGS, Answer, purpose="t")
    assert server.count == 2
