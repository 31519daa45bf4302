"""Garbage in, recorded rejections out: a server with constrained decoding that answers every request with a
random instance of the schema it was sent (the planner's JSON schema; the creator agent's tool schemas). Every
skill is planned, every candidate gets a status with reason codes (none crashes, none stops another), usage
matches what the server served, nothing is left in staging. (The Docker gates' verdicts on such candidates:
tests/docker/test_llm_endpoint_e2e.py.)"""

from __future__ import annotations

import pytest

from skill2env_dagster.artifacts import STAGING
from skill2env_dagster.creator import CreatorAgent, CreatorLimits
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.gates.static_checks import run_static_checks
from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.llm.tools import ToolChat
from skill2env_dagster.models.gate import CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.planning import plan_with_llm, sample_axes
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill
from tests.support.fake_openai import FakeOpenAI
from tests.support.random_replies import RandomReplies
from tests.unit.creator_support import PINS, FakeLab
from tests.unit.task_helpers import skill_from_dir


def static_gate(path) -> GateReport:
    """The gates' static half (no engine needed here): a candidate passing it would go on to the Docker gates."""
    checks = run_static_checks(path, ("127.0.0.1:5000",))
    failed = next((c for c in checks if c.verdict is not CheckVerdict.PASS), None)
    return GateReport(task=str(path), verdict=GateVerdict.REJECTED if failed else GateVerdict.RETAINED,
                      reason=failed.reason if failed else None, checks=checks)


@pytest.mark.parametrize("name", ["log-triage-awk", "csv-dedupe"])
def test_random_schema_valid_replies_are_planned_built_and_judged(examples_dir, tmp_path, name):
    skill = skill_from_dir(examples_dir / name)
    replies = RandomReplies()
    store = ArtifactStore(tmp_path / "store")
    with FakeOpenAI(replies) as srv:
        config = LLMConfig(base_url=srv.base_url, model="constrained", cache_dir="", max_repairs=0)
        plans = plan_with_llm(skill, LLMClient(config), prompt_version="pv", model="constrained")
        axes = sample_axes(plans)
        agent = CreatorAgent(ToolChat(config), "constrained", "pv", FakeLab(), GateSettings(),
                             CreatorLimits(max_turns=6, max_candidates=1))
        result, _ = create_tasks_for_skill(store, skill, plans, axes, agent, static_gate, PINS,
                                           CreationSettings(max_variants=3, max_repairs=0))
        served = (srv.prompt_tokens, srv.completion_tokens, len(srv.served))
    assert 1 <= len(plans.workflows) <= 8 and plans.usage.calls == 1
    assert result.bundles, "every planned skill yields candidates"
    for b in result.bundles:
        assert b.status in ("retained", "rejected"), (b.status, b.reasons, b.evidence)
        assert b.status == "retained" or (b.reasons and b.reasons[0] is not ReasonCode.INTERNAL_ERROR), b.evidence
        assert b.creator and b.creator[0].turns <= 6
    total = plans.usage + result.usage
    assert (total.prompt_tokens, total.completion_tokens, total.calls) == served
    assert not any(store.dir(STAGING).rglob("*.*"))
    assert replies.drawn.get("PlanReply") == 1 and sum(replies.drawn.values()) > len(result.bundles)
