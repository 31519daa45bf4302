"""task_bundles in-process with a model configured: a schema-violating step reply fails only that partition, with
the reason code in the failure metadata; the generator follows the LLM resource; the code_version carries the
task prompts' hash."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from skill2env_dagster.assets import tasks as task_assets
from skill2env_dagster.artifacts import AXES, PLANS, SKILLS_PARTITION, SNAPSHOT, TASKS
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource, env_fingerprint
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import OfflineGenerator
from skill2env_dagster.tasks.llm_generator import LLMGenerator, task_prompts_version
from tests.support.fake_openai import FakeOpenAI, schema_violation
from tests.unit.task_helpers import plans_and_axes, skill_from_dir
from tests.unit.task_llm_support import StepResponder

pytestmark = pytest.mark.dagster
PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


def test_schema_violation_fails_the_partition_with_its_reason(examples_dir, tmp_path):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    store = ArtifactStore(tmp_path / "artifacts")
    store.save(SNAPSHOT, skill.skill_id, skill)
    store.save(PLANS, skill.skill_id, plans)
    store.save(AXES, skill.skill_id, axes)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "base-images.json").write_text(json.dumps(PINS))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, [skill.skill_id])
    with FakeOpenAI(StepResponder()) as srv:
        srv.enqueue(schema_violation(), schema_violation())
        result = dg.materialize(
            [task_assets.task_bundles], partition_key=skill.skill_id, instance=instance, raise_on_error=False,
            resources={"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                       "docker": DockerResource(state_dir=str(tmp_path / "state")),
                       "llm": LLMResource(base_url=srv.base_url, model="fake-model", cache_dir="")})
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    info = failure.step_failure_data.user_failure_data
    assert info.metadata["reason"].value == "llm_schema_violation"
    assert "EnvironmentReply" in info.description
    assert not store.exists(TASKS, skill.skill_id)


def test_generator_follows_the_llm_resource():
    assert isinstance(task_assets._generator(LLMResource()), OfflineGenerator)
    gen = task_assets._generator(LLMResource(base_url="http://127.0.0.1:9/v1", model="m", cache_dir=""))
    assert isinstance(gen, LLMGenerator) and gen.model == "m"


def test_code_version_is_the_declared_scope():
    from skill2env_dagster.versions import code_version

    assert task_assets.task_bundles.code_versions_by_key[task_assets.task_bundles.key] == code_version(
        TASKS.scope, fingerprint=env_fingerprint())
