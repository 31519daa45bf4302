"""LLMClient against a real loopback OpenAI-compatible server with injected faults: retries where they help, one
reason code per failure, configuration errors reported once, usage counted on every path, the key nowhere."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.llm.endpoint import forget_endpoints
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.reasons import ReasonCode
from tests.support.fake_openai import (
    FakeOpenAI,
    FaultMix,
    context_too_long,
    drop,
    malformed,
    model_not_found,
    rate_limit,
    reset,
    schema_violation,
    server_error,
    short_body,
    slow,
    truncated,
    unauthorized,
    unsupported_param,
)

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
        input_usd_per_mtok=1.0,
        output_usd_per_mtok=2.0,
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
    answer, _usage = client.complete_json(MSGS, Answer, purpose="t")
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
    """The retry must be answered within the client's timeout: the file's 2 s for a loopback reply (at 0.5 s a
    loaded machine could answer the second attempt too late: a third attempt, and this test failed by timing)."""
    server.enqueue(slow(30))  # outlasts the timeout by far; the server's thread is a daemon
    client, delays = _client(server, tmp_path)
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


def test_falls_back_to_json_mode_once_per_endpoint_and_remembers_it_on_disk(tmp_path):
    with FakeOpenAI(_answer, json_schema_supported=False) as srv:
        client, _ = _client(srv, tmp_path)
        answer, usage = client.complete_json(MSGS, Answer, purpose="t")
        assert answer.city == "Lyon" and usage.calls == 1 and usage.failed_calls == 1
        assert [r.body["response_format"]["type"] for r in srv.requests] == ["json_schema", "json_object"]
        assert "JSON schema" in srv.requests[1].body["messages"][0]["content"]
        other, _ = _client(srv, tmp_path)  # another partition in the same process
        other.complete_json([{"role": "user", "content": "x"}], Answer, purpose="t")
        assert srv.requests[-1].body["response_format"]["type"] == "json_object" and srv.count == 3
        forget_endpoints()  # a new process: learned from the cache directory, no refused request spent
        again, _ = _client(srv, tmp_path)
        again.complete_json([{"role": "user", "content": "y"}], Answer, purpose="t")
        assert srv.requests[-1].body["response_format"]["type"] == "json_object" and srv.count == 4
        memo = next((tmp_path / "cache" / "endpoints").glob("*.json")).read_text()
        assert "json_object" in memo and SECRET not in memo


def test_a_400_that_is_not_about_the_format_is_no_fallback(server, tmp_path, caplog):
    server.enqueue(unsupported_param("temperature"))
    client, _ = _client(server, tmp_path)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason is ReasonCode.LLM_MISCONFIGURED and server.count == 1
    assert "S2E_LLM_TEMPERATURE" in str(err.value) and server.base_url in str(err.value)
    assert server.requests[0].body["response_format"]["type"] == "json_schema"
    assert err.value.usage.failed_calls == 1 and err.value.usage.calls == 0
    with pytest.raises(LLMError) as again:  # reported once: later calls fail at once, without a request
        client.complete_json([{"role": "user", "content": "x"}], Answer, purpose="t2")
    assert again.value.reason is ReasonCode.LLM_MISCONFIGURED and server.count == 1
    assert caplog.text.count("llm endpoint misconfigured") == 1


@pytest.mark.parametrize(("fault", "variable"), [(unauthorized(), "S2E_LLM_API_KEY"),
                                                 (model_not_found(), "S2E_LLM_MODEL")])
def test_configuration_errors_are_not_retried_and_name_the_setting(server, tmp_path, fault, variable):
    server.enqueue(fault)
    client, delays = _client(server, tmp_path)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason is ReasonCode.LLM_MISCONFIGURED and server.count == 1 and delays == []
    assert variable in str(err.value) and server.base_url in str(err.value) and SECRET not in str(err.value)


def test_persistent_wrong_key_and_model_modes(tmp_path):
    with FakeOpenAI(_answer, api_key="the-right-key") as srv:
        client, _ = _client(srv, tmp_path)
        with pytest.raises(LLMError) as err:
            client.complete_json(MSGS, Answer, purpose="t")
        assert "401" in str(err.value) and "the key was refused" in str(err.value)
    forget_endpoints()
    with FakeOpenAI(_answer, models={"served-model"}) as srv:
        client, _ = _client(srv, tmp_path)
        with pytest.raises(LLMError) as err:
            client.complete_json(MSGS, Answer, purpose="t")
        assert "404" in str(err.value) and "'fake-model'" in str(err.value)


def test_a_too_long_prompt_is_rejected_for_this_request_only(server, tmp_path):
    server.enqueue(context_too_long())
    client, _ = _client(server, tmp_path)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason is ReasonCode.LLM_REQUEST_REJECTED and server.count == 1
    answer, _ = client.complete_json([{"role": "user", "content": "short"}], Answer, purpose="t")
    assert answer.city == "Lyon" and server.count == 2  # not remembered as an endpoint failure


@pytest.mark.parametrize("fault", [truncated(), short_body(), reset()], ids=["truncated", "short_body", "reset"])
def test_cut_bodies_and_resets_are_retried(server, tmp_path, fault):
    server.enqueue(fault)
    client, delays = _client(server, tmp_path)
    answer, usage = client.complete_json(MSGS, Answer, purpose="t")
    assert answer.city == "Lyon" and server.count == 2 and len(delays) == 1
    assert usage.calls == 1 and usage.failed_calls == 1


def test_truncated_bodies_exhausted_map_to_unavailable(server, tmp_path):
    server.enqueue(truncated(), truncated(), truncated())
    client, _ = _client(server, tmp_path)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason is ReasonCode.LLM_UNAVAILABLE and "truncated or undecodable" in str(err.value)
    assert err.value.usage.failed_calls == 3


def test_closed_port_names_the_url(tmp_path):
    with FakeOpenAI(_answer) as srv:
        url = srv.base_url
    cfg = LLMConfig(base_url=url, model="m", max_retries=1, backoff_base=0.0, cache_dir="")
    with pytest.raises(LLMError) as err:
        LLMClient(cfg, sleep=lambda s: None).complete_json(MSGS, Answer, purpose="t")
    assert err.value.reason is ReasonCode.LLM_UNAVAILABLE and url in str(err.value)
    assert "S2E_LLM_BASE_URL" in str(err.value)


def test_keyless_server_gets_no_authorization_header(server, tmp_path):
    client, _ = _client(server, tmp_path, api_key="")
    client.complete_json(MSGS, Answer, purpose="t")
    assert "authorization" not in server.requests[0].headers


def test_usage_is_recorded_on_failure_and_equals_what_was_served(server, tmp_path):
    server.enqueue(server_error(), schema_violation(), schema_violation())
    client, _ = _client(server, tmp_path)
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS, Answer, purpose="t")
    usage = err.value.usage
    assert err.value.reason is ReasonCode.LLM_SCHEMA_VIOLATION
    assert usage.calls == 2 and usage.failed_calls == 1
    assert (usage.prompt_tokens, usage.completion_tokens) == (server.prompt_tokens, server.completion_tokens) != (0, 0)
    assert usage.cost_usd == pytest.approx((usage.prompt_tokens + 2 * usage.completion_tokens) / 1e6)


def test_usage_under_a_fault_mix_matches_the_server(tmp_path):
    mix = FaultMix([server_error(), rate_limit(0), truncated(), short_body(), reset(), malformed(),
                    schema_violation()], rate=0.5, seed=7)
    with FakeOpenAI(_answer, fault_mix=mix) as srv:
        client, _ = _client(srv, tmp_path, max_retries=6, max_repairs=3, cache_dir="")
        total = []
        for i in range(12):
            try:
                total.append(client.complete_json([{"role": "user", "content": f"q{i}"}], Answer, purpose="t")[1])
            except LLMError as e:
                total.append(e.usage)
        calls = sum(u.calls for u in total)
        assert sum(u.calls + u.failed_calls for u in total) == srv.count
        assert calls == len(srv.served) and srv.faults_served
        assert sum(u.prompt_tokens for u in total) == srv.prompt_tokens
        assert sum(u.completion_tokens for u in total) == srv.completion_tokens


def test_unknown_price_is_unknown_cost_not_zero(server, tmp_path):
    client, _ = _client(server, tmp_path, input_usd_per_mtok=None, output_usd_per_mtok=None)
    _, usage = client.complete_json(MSGS, Answer, purpose="t")
    assert usage.cost_usd is None and usage.report()["cost_usd"] == "unknown"


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
    assert err.value.reason == ReasonCode.LLM_MISCONFIGURED


def test_corrupt_cache_entry_is_a_miss(server, tmp_path):
    client, _ = _client(server, tmp_path)
    client.complete_json(MSGS, Answer, purpose="t")
    for f in (tmp_path / "cache").rglob("*.json"):
        f.write_text("{not json")
    client.complete_json(MSGS, Answer, purpose="t")
    assert server.count == 2
