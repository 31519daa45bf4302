"""The model-backed path as a user runs it: `skill2env run --json` (the endpoint taken from S2E_LLM_*) on a hub
of two example skills against the loopback OpenAI-compatible fake in each server mode, checking the exit status,
the funnel's reasons, the tokens reported against the tokens served, and that the key appears in no output file,
log or message.

- constrained: random schema-valid replies (a constrained decoder; the creator agent gets random calls of its
  tools) -> both skills planned, every candidate rejected with a reason, no failed partition, nothing exported
  (exit 0: rejections are results);
- refusal: json_schema refused, canned replies -> one refused request for the whole run, then JSON mode; tasks
  retained (exit 0);
- fault mix: 429/500/truncated/cut/reset/malformed/off-schema on 30 % of requests -> retried and repaired (exit 0);
- wrong key (401) / wrong model (404): llm_misconfigured at workflow_plans for both skills, one request in total,
  the message names the variable and the URL (exit 1).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from skill2env_dagster.reasons import LLM_ENDPOINT_CODES, ReasonCode
from tests.conftest import REPO
from tests.support.fake_openai import (
    FakeOpenAI,
    FaultMix,
    malformed,
    rate_limit,
    reset,
    schema_violation,
    server_error,
    short_body,
    truncated,
)
from tests.support.random_replies import RandomReplies, schema_name
from tests.support.scripted_creator import creator_reply
from tests.unit.test_planning_llm import canned_plan

pytestmark = pytest.mark.docker

KEY = "sk-e2e-SECRET-7f3a9c"
SKILLS = ["examples__log-triage-awk", "examples__csv-dedupe"]
FAILING_FAULTS = {"rate_limit", "server_error", "truncated", "short_body", "reset"}  # no completion delivered


def canned_model() -> Callable[[dict[str, Any]], str | dict[str, Any]]:
    """A model with no objection as the screen's second opinion, answering the planner with a canned plan and the
    creator agent with a scripted task that passes."""
    answers = {"OpinionReply": lambda body: json.dumps({"reasons": [], "not_needed": [], "summary": "no blocking "
                                                         "reason"}), "PlanReply": canned_plan}
    return lambda body: creator_reply(body) if body.get("tools") else answers.get(schema_name(body),
                                                                                  lambda _: "{}")(body)


def hub(root: Path) -> Path:
    """A folder source named `examples` holding the two example skills (so their ids are SKILLS)."""
    folder = root / "examples"
    for skill in SKILLS:
        shutil.copytree(REPO / "examples" / "skillhub" / skill.split("__", 1)[1], folder / skill.split("__", 1)[1])
    return folder


def run_hub(srv: FakeOpenAI, out: Path, model: str = "e2e-model") -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S2E_") and k != "DAGSTER_HOME"}
    env.update(S2E_LLM_BASE_URL=srv.base_url, S2E_LLM_MODEL=model, S2E_LLM_API_KEY=KEY, S2E_CREATOR_MAX_TURNS="12",
               S2E_LLM_CACHE_DIR=str(out / "llm-cache"), S2E_LLM_BACKOFF_BASE="0.05", S2E_LLM_BACKOFF_CAP="1")
    done = subprocess.run([str(REPO / ".venv" / "bin" / "skill2env"), "run", str(hub(out.parent)), "--out", str(out),
                           "--skip-docker-up", "--max-variants", "1", "--json"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.stdout.strip(), done.stderr[-3000:]
    logs = "".join(p.read_text(errors="replace") for p in (out / "logs").glob("run-*.log"))
    return done.returncode, json.loads(done.stdout), done.stdout + done.stderr + logs


def failed_partitions(funnel: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {p["partition"]: (p["stage"], p["reason"]) for p in funnel["failed_partitions"]}


def assert_key_nowhere(out: Path, output: str) -> None:
    assert KEY not in output
    leaked = [p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []


def assert_tokens_served(funnel: dict[str, Any], srv: FakeOpenAI) -> None:
    usage = funnel["llm_usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (srv.prompt_tokens, srv.completion_tokens)
    assert usage["calls"] == len(srv.served) and usage["calls"] + usage["failed_calls"] == srv.count
    assert usage["cost_usd"] == ("unknown" if usage["calls"] else 0.0)  # no price configured: never $0


def test_constrained_decoding_garbage_is_planned_built_and_rejected(docker_client, tmp_path):
    replies = RandomReplies()
    with FakeOpenAI(replies, api_key=KEY) as srv:
        code, funnel, output = run_hub(srv, tmp_path / "out")
        assert_tokens_served(funnel, srv)
        url = srv.base_url
    assert code == 0 and funnel["exported"] == []  # every candidate rejected is a result, not a failed run
    assert funnel["generator"] == f"llm: model 'e2e-model' at {url}" and funnel["generators"] == {"llm": 2}
    assert f"generator: llm: model 'e2e-model' at {url}" in output  # said at the start too (stderr)
    assert funnel["failed_partitions"] == [] and funnel["failed_by_stage"] == {}
    assert funnel["planned"] == 2 and funnel["created"] >= 2 and funnel["retained"] == 0
    reasons = funnel["rejected_by_reason"]
    assert sum(reasons.values()) == funnel["created"], reasons
    assert all(ReasonCode(r) not in LLM_ENDPOINT_CODES and r != "internal_error" for r in reasons), reasons
    assert replies.drawn["PlanReply"] == 2
    assert not any((tmp_path / "out" / "artifacts" / ".staging").rglob("*.*"))
    assert_key_nowhere(tmp_path / "out", output)


def test_schema_refusal_falls_back_once_and_tasks_are_retained(docker_client, tmp_path):
    with FakeOpenAI(canned_model(), api_key=KEY, json_schema_supported=False) as srv:
        code, funnel, output = run_hub(srv, tmp_path / "out")
        assert_tokens_served(funnel, srv)
        formats = [r.body["response_format"]["type"] for r in srv.requests if "response_format" in r.body]
    assert formats.count("json_schema") == 1 and funnel["llm_usage"]["failed_calls"] == 1  # learned once per run
    assert code == 0 and funnel["retained"] >= 2 and funnel["failed_by_stage"] == {}
    assert list((tmp_path / "out" / "llm-cache" / "endpoints").glob("*.json"))  # remembered for the next run
    assert_key_nowhere(tmp_path / "out", output)


def test_fault_mix_is_retried_and_repaired(docker_client, tmp_path):
    mix = FaultMix([rate_limit(0), server_error(), truncated(), short_body(), reset(), malformed(),
                    schema_violation()], rate=0.3, seed=11)
    with FakeOpenAI(canned_model(), api_key=KEY, fault_mix=mix) as srv:
        code, funnel, output = run_hub(srv, tmp_path / "out")
        assert_tokens_served(funnel, srv)
        served_faults = list(srv.faults_served)
    assert len(set(served_faults)) >= 2, served_faults  # seeded: reset, short_body, schema_violation today
    assert funnel["llm_usage"]["failed_calls"] == sum(f in FAILING_FAULTS for f in served_faults)
    assert code == 0 and funnel["retained"] >= 1 and funnel["failed_partitions"] == []
    assert_key_nowhere(tmp_path / "out", output)


@pytest.mark.parametrize(("server", "variable"), [
    ({"api_key": "sk-the-right-one"}, "S2E_LLM_API_KEY"),
    ({"api_key": KEY, "models": {"another-model"}}, "S2E_LLM_MODEL"),
], ids=["401", "404"])
def test_configuration_errors_fail_once_with_the_variable(docker_client, tmp_path, server, variable):
    with FakeOpenAI(canned_model(), **server) as srv:
        code, funnel, output = run_hub(srv, tmp_path / "out")
        assert_tokens_served(funnel, srv)
        requests, url = srv.count, srv.base_url
    assert requests == 1  # not retried, and the second skill did not ask again: reported once
    assert code == 1 and funnel["failed_by_stage"] == {"workflow_plans": {"llm_misconfigured": 2}}
    assert failed_partitions(funnel) == dict.fromkeys(SKILLS, ("workflow_plans", "llm_misconfigured"))
    assert funnel["planned"] == 0
    message = funnel["failure_examples"]["llm_misconfigured"]
    assert variable in message and url in message
    skills = pq.read_table(Path(funnel["export_dir"]) / "tables" / "skills.parquet").to_pylist()
    failed = {r["skill_id"]: (r["failed_stage"], r["failure_reason"]) for r in skills if r["failed_stage"]}
    assert failed == dict.fromkeys(SKILLS, ("workflow_plans", "llm_misconfigured"))  # in the export too
    assert_key_nowhere(tmp_path / "out", output)
