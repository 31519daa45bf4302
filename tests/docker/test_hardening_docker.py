"""A hardening round that makes a task harder, through the Dagster assets on real containers: a scripted model
that replays the task's own reference solution (a policy that has memorised the task) makes it `too_easy`;
`task_hardening` revises it (next complexity level, another difficulty pattern), rebuilds it through the frozen
creator order and the gates, and rolls it out again (lower for that policy, or on to R rounds while it stays
too_easy); every round shows in the asset's metadata and the rebuilt task.toml records the history."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import AXES, HARDENING, PLANS, ROLLOUTS, SKILLS_PARTITION, SNAPSHOT, TASKS
from skill2env_dagster.assets import rollouts as rollout_assets
from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.rollouts import RolloutsResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.rollouts.hardening import HISTORY_KEY, next_level
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import OfflineGenerator
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill
from tests.docker.conftest import RUN_ID
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_agent import replay
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

pytestmark = [pytest.mark.docker, pytest.mark.dagster, pytest.mark.timeout(900)]
SETTINGS = """solvers: [{name: replay, model: replay, attempts: 2}]
limits: {max_turns: 4, command_timeout_sec: 300}
hardening_rounds: 2
"""


def test_a_hardening_round_makes_the_task_harder(docker_client, examples_dir, tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    key = skill.skill_id
    plans, axes = plans_and_axes(skill, ["run_resume"])
    created, _ = create_tasks_for_skill(store, skill, plans, axes, OfflineGenerator(),
                                        lambda p: gate_task(p, GateSettings(run_id=RUN_ID)), load_base_images(),
                                        CreationSettings(max_variants=1))
    for artifact, model in ((SNAPSHOT, skill), (PLANS, plans), (AXES, axes), (TASKS, created)):
        store.save(artifact, key, model)
    original = created.retained()[0]
    script = (Path(original.path) / "solution" / "solve.sh").read_text()
    (tmp_path / "rollouts.yaml").write_text(SETTINGS)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, [key])
    with FakeOpenAI(replay(script)) as srv:
        resources = {"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")), "docker": DockerResource(),
                     "llm": LLMResource(base_url=srv.base_url, model="replay", cache_dir="", max_retries=1),
                     "rollouts": RolloutsResource(settings_file=str(tmp_path / "rollouts.yaml"))}
        assets = [rollout_assets.solver_rollouts, rollout_assets.task_hardening]
        result = dg.materialize(assets, partition_key=key, instance=instance, resources=resources)
    assert result.success
    assert store.load(ROLLOUTS, key).tasks[0].calibration.label == "too_easy"

    h = store.load(HARDENING, key).tasks[0]
    first, sample = h.rounds[0], axes.samples[0]
    assert first.revision.retained, first.revision
    assert (first.revision.complexity_before, first.revision.complexity_after) == (sample.complexity,
                                                                                 next_level(sample.complexity))
    assert first.revision.patterns_added and first.revision.patterns_added[0] != sample.difficulty_pattern
    assert first.before.mean_reward_v == 1.0 and first.after is not None
    assert first.after.oracle_passed  # the rebuilt task's own Oracle passes
    # Since tgen's generators, a reference solution is a general program: replaying the original's solve.sh may
    # still solve the harder rebuild. Then the task stays too_easy and hardening goes on, R rounds at most.
    if h.outcome == "hardened":
        assert first.after.mean_reward_v < first.before.mean_reward_v and h.final_label != "too_easy"
    else:
        assert h.outcome in ("still_too_easy", "rebuild_rejected") and len(h.rounds) == 2
    last = [r for r in h.rounds if r.revision.retained][-1]
    meta = TaskToml.from_toml((Path(h.final_path) / "task.toml").read_text()).metadata
    assert meta[HISTORY_KEY][0]["from_task"] == original.task_name
    assert meta["complexity"] == last.revision.complexity_after
    event = instance.get_latest_materialization_event(dg.AssetKey(HARDENING.name))
    table = event.asset_materialization.metadata["rounds"].value
    assert original.task_name in table and "retained" in table and "too_easy (1.00)" in table
