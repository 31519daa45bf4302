"""The model-backed generator on the real engine: canned step replies from the loopback fake server make a task
that the builder freezes and the gates retain; a broken first solve.sh is repaired by a second solution call with
the gate evidence, and the freeze hash is unchanged."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.llm_generator import LLMGenerator, task_prompts_version
from skill2env_dagster.tasks.pipeline import create_tasks_for_skill
from tests.support.fake_openai import FakeOpenAI
from tests.unit.task_helpers import plans_and_axes, skill_from_dir
from tests.unit.task_llm_support import StepResponder

pytestmark = pytest.mark.docker


@pytest.mark.parametrize("broken_first", [False, True])
def test_llm_candidate_passes_gates(docker_client, examples_dir, tmp_path, broken_first):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    axes = axes.model_copy(update={"samples": axes.samples[:1]})
    responder = StepResponder(broken_first_solution=broken_first)
    with FakeOpenAI(responder) as srv:
        gen = LLMGenerator(LLMClient(LLMConfig(base_url=srv.base_url, model="fake-model", cache_dir="")),
                           "fake-model", task_prompts_version({"model": "fake-model"}))
        result, reports = create_tasks_for_skill(ArtifactStore(tmp_path / "store"), skill, plans, axes, gen,
                                                 lambda p: gate_task(p, GateSettings()), load_base_images())
    (b,) = result.bundles
    assert b.status == "retained", (b.reasons, b.evidence)
    assert b.recipe == "llm" and b.repair_attempts == (1 if broken_first else 0)
    assert responder.calls.count("SolutionReply") == (2 if broken_first else 1)
    assert compute_freeze_hash(b.path) == b.freeze_hash
    r = reports[b.task_name]
    assert r.oracle == {"file_present": 1.0, "rows_correct": 1.0} and set(r.nop.values()) == {0.0}
    assert r.wrong is not None and r.wrong["rows_correct"] < 1.0
    assert gen.total_usage().calls == (6 if broken_first else 5)
