"""task_bundles in-process with a model configured (the creator agent): a model that never calls a tool gets
recorded rejections (the partition succeeds, usage is reported); a misconfigured endpoint fails the partition once
with the reason and a failure record; the generator follows the LLM resource; the code_version carries the
creator's prompts and limits."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from skill2env_dagster.artifacts import AXES, FAILURES, PLANS, SKILLS_PARTITION, SNAPSHOT, TASKS
from skill2env_dagster.assets import tasks as task_assets
from skill2env_dagster.creator import CreatorAgent
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource, env_task_fingerprint
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import OfflineGenerator
from tests.support.fake_openai import FakeOpenAI
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

pytestmark = pytest.mark.dagster
PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


@pytest.fixture
def planned(examples_dir, tmp_path):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    store = ArtifactStore(tmp_path / "artifacts")
    store.save(SNAPSHOT, skill.skill_id, skill)
    store.save(PLANS, skill.skill_id, plans)
    store.save(AXES, skill.skill_id, axes.model_copy(update={"samples": axes.samples[:2]}))
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "base-images.json").write_text(json.dumps(PINS))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, [skill.skill_id])
    return skill, store, instance


def _materialize(tmp_path, skill, instance, llm):
    return dg.materialize(
        [task_assets.task_bundles], partition_key=skill.skill_id, instance=instance, raise_on_error=False,
        resources={"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                   "docker": DockerResource(state_dir=str(tmp_path / "state")), "llm": llm})


def test_a_model_that_never_calls_a_tool_gets_recorded_rejections_and_the_partition_succeeds(planned, tmp_path):
    """The creator agent answered with prose only: each candidate gets its reminders, then a recorded reason."""
    skill, store, instance = planned
    with FakeOpenAI(lambda body: "I would write a great task here.") as srv:
        result = _materialize(tmp_path, skill, instance,
                              LLMResource(base_url=srv.base_url, model="fake-model", cache_dir=""))
        served = (srv.prompt_tokens, srv.completion_tokens)
    assert result.success
    bundles = store.load(TASKS, skill.skill_id)
    assert [b.status for b in bundles.bundles] == ["rejected", "rejected"]
    assert all(b.reasons == [ReasonCode.CREATOR_INCOMPLETE] for b in bundles.bundles)
    assert all(b.creator[0].stop == "incomplete" and b.creator[0].turns == 3 for b in bundles.bundles)
    assert (bundles.usage.prompt_tokens, bundles.usage.completion_tokens) == served
    meta = result.asset_materializations_for_node("task_bundles")[0].metadata
    assert meta["rejected_by_reason"].value == {"creator_incomplete": 2} and meta["retained"].value == 0
    assert meta["cost_usd"].value == "unknown" and meta["llm_calls"].value == 6
    assert not any((tmp_path / "artifacts" / ".staging").rglob("*.*"))
    assert not store.exists(FAILURES, skill.skill_id)


def test_endpoint_failure_fails_the_partition_once_and_records_why(planned, tmp_path):
    skill, store, instance = planned
    with FakeOpenAI(lambda body: "unused", api_key="right-key") as srv:
        result = _materialize(tmp_path, skill, instance, LLMResource(base_url=srv.base_url, model="fake-model",
                                                                     api_key="wrong-key", cache_dir=""))
        requests = srv.count
    assert not result.success and requests == 1  # reported once: the sibling candidate sent nothing
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    info = failure.step_failure_data.user_failure_data
    assert info.metadata["reason"].value == "llm_misconfigured" and "S2E_LLM_API_KEY" in info.description
    assert not store.exists(TASKS, skill.skill_id)
    record = store.load(FAILURES, skill.skill_id).stages["task_bundles"]
    assert record.reason is ReasonCode.LLM_MISCONFIGURED and record.usage.failed_calls == 1
    assert all("wrong-key" not in f.read_text() for f in (tmp_path / "artifacts").rglob("*.json"))
    assert not any((tmp_path / "artifacts" / ".staging").rglob("*.*"))


def test_generator_follows_the_llm_resource():
    """Offline without a model; with one, the creator agent, which opens no engine until it authors a task."""
    docker = DockerResource()
    assert isinstance(task_assets.task_generator(LLMResource(), docker), OfflineGenerator)
    gen = task_assets.task_generator(LLMResource(base_url="http://127.0.0.1:9/v1", model="m", cache_dir=""), docker)
    assert isinstance(gen, CreatorAgent) and gen.model == "m" and gen.prompt_version == task_assets.TASKS_VERSION


def test_code_version_is_the_declared_scope():
    from skill2env_dagster.versions import code_version

    assert task_assets.task_bundles.code_versions_by_key[task_assets.task_bundles.key] == code_version(
        TASKS.scope, fingerprint=env_task_fingerprint())
