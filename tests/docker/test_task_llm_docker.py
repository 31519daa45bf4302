"""The model-backed generator on the real engine: canned step replies from the loopback fake server make a
blueprint and a task that the builder freezes and the gates retain, running the model-written cheats; a broken
first solve.sh is repaired by a second solution call carrying the gate's per-metric evidence, and the freeze hash
is unchanged; a task whose model-written cheat earns the reward is rejected `shortcut_passed`, naming the cheat,
and never repaired."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.models.gate import CheckVerdict
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.llm_generator import LLMGenerator, task_prompts_version
from skill2env_dagster.tasks.pipeline import create_tasks_for_skill
from tests.support.fake_openai import FakeOpenAI
from tests.unit.task_helpers import plans_and_axes, skill_from_dir
from tests.unit.task_llm_support import CHEATS, PASSING_CHEAT, REPLIES, StepResponder

pytestmark = pytest.mark.docker


def _run(examples_dir, tmp_path, responder):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    axes = axes.model_copy(update={"samples": axes.samples[:1]})
    with FakeOpenAI(responder) as srv:
        gen = LLMGenerator(LLMClient(LLMConfig(base_url=srv.base_url, model="fake-model", cache_dir="")),
                           "fake-model", task_prompts_version({"model": "fake-model"}))
        result, reports = create_tasks_for_skill(ArtifactStore(tmp_path / "store"), skill, plans, axes, gen,
                                                 lambda p: gate_task(p, GateSettings()), load_base_images())
        bodies = [r.body for r in srv.requests]
    (b,) = result.bundles
    return b, reports.get(b.task_name), gen, bodies


@pytest.mark.parametrize("broken_first", [False, True])
def test_llm_candidate_passes_gates(docker_client, examples_dir, tmp_path, broken_first):
    responder = StepResponder(broken_first_solution=broken_first)
    b, r, gen, bodies = _run(examples_dir, tmp_path, responder)
    assert b.status == "retained", (b.reasons, b.evidence)
    assert b.recipe == "llm" and b.repair_attempts == (1 if broken_first else 0)
    assert b.blueprint is not None and [c.metric for c in b.blueprint.acceptance] == b.metrics
    assert responder.calls.count("SolutionReply") == (2 if broken_first else 1)
    assert compute_freeze_hash(b.path) == b.freeze_hash
    assert r is not None and r.oracle == {"file_present": 1.0, "rows_correct": 1.0} and set(r.nop.values()) == {0.0}
    assert r.wrong is not None and r.wrong["rows_correct"] < 1.0
    assert sorted(a.name for a in r.cheats) == sorted(f"cheats/{n}.sh" for n in CHEATS)  # the model's, run
    assert all(a.verdict is CheckVerdict.PASS and a.status == "ok" for a in r.cheats), r.cheats
    assert gen.total_usage().calls == (8 if broken_first else 7)
    if broken_first:  # the repair saw the Oracle's and the no-op's per-metric rewards
        repair = "\n".join(m["content"] for m in bodies[-1]["messages"])
        assert "Oracle (solve.sh) per-metric rewards: {'file_present'" in repair
        assert "no-op (untouched environment) per-metric rewards: {'file_present': 0.0" in repair


def test_a_passing_model_cheat_rejects_the_task(docker_client, examples_dir, tmp_path):
    responder = StepResponder(dict(REPLIES, CheatsReply={"cheats": {**CHEATS, **PASSING_CHEAT}}))
    b, r, _, _ = _run(examples_dir, tmp_path, responder)
    assert b.status == "rejected" and b.reasons == [ReasonCode.SHORTCUT_PASSED], (b.reasons, b.evidence)
    assert any("cheats/hard_coded_answer.sh" in e for e in b.evidence) and b.repair_attempts == 0
    assert responder.calls.count("SolutionReply") == 1 and compute_freeze_hash(b.path) == b.freeze_hash
    assert r is not None
    (passed,) = [a for a in r.cheats if a.verdict is CheckVerdict.FAIL]
    assert passed.name == "cheats/hard_coded_answer.sh" and passed.mean == 1.0
