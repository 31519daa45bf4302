"""A hardening round that makes a task harder, through the Dagster assets on real containers: a scripted model
that replays the task's own reference solution (a policy that has memorised the task) makes it `too_easy`;
`task_hardening` revises it (next complexity level, one more difficulty pattern planting cases the first world
did not have), rebuilds it through the frozen creator order and the gates, checks that the previous version's
solution no longer solves it, and rolls it out again: the memorising policy now scores at most the too_easy
threshold; every episode of the rebuild is judged. Every round shows in the asset's metadata, the rebuilt
task.toml records the history, and the export
and the run's tasks/ mirror take the hardened version in place of the original."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import AXES, GATES, HARDENING, PLANS, ROLLOUTS, SKILLS_PARTITION, SNAPSHOT, TASKS
from skill2env_dagster.assets import rollouts as rollout_assets
from skill2env_dagster.catalogue import load_patterns
from skill2env_dagster.cli.runner.tasks_dir import mirror_tasks
from skill2env_dagster.export import export_corpus, load_inputs
from skill2env_dagster.export.funnel import retained_paths
from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.export import ExportManifest
from skill2env_dagster.models.task import TaskGateReports
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
from tests.support.scripted_agent import outcome_judge_reply, replay
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
    plans, axes = plans_and_axes(skill, ["deadline_audit"], "easy")
    # A first version whose sampled pattern plants nothing new, so the round's split sources bite.
    boundary = sorted(load_patterns().with_effect("boundary"), key=lambda p: p.id)[0]
    axes = axes.model_copy(update={"samples": [axes.samples[0].model_copy(update={
        "difficulty_pattern": boundary.id, "capability_dimension": boundary.dimension})]})
    created, reports = create_tasks_for_skill(store, skill, plans, axes, OfflineGenerator(),
                                        lambda p: gate_task(p, GateSettings(run_id=RUN_ID)),
                                        load_base_images(),
                                        CreationSettings(max_variants=1))
    gates = TaskGateReports(skill_id=key, reports=reports)
    for artifact, model in ((SNAPSHOT, skill), (PLANS, plans), (AXES, axes), (TASKS, created), (GATES, gates)):
        store.save(artifact, key, model)
    original = created.retained()[0]
    script = (Path(original.path) / "solution" / "solve.sh").read_text()
    (tmp_path / "rollouts.yaml").write_text(SETTINGS)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, [key])
    agent = replay(script)
    with FakeOpenAI(lambda body: agent(body) if body.get("tools") else outcome_judge_reply(body)) as srv:
        resources = {"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                     "docker": DockerResource(),
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
    # The harder check: the original's solution, run on the rebuild, scores at most the too_easy threshold.
    prev = first.previous_solution
    assert prev is not None and prev.scored and prev.reward_v is not None and prev.reward_v <= 0.7, prev
    assert first.revision.evidence.startswith(f"previous solution on new task: r={prev.reward_v:.2f}")
    assert first.before.mean_reward_v == 1.0 and first.after is not None
    assert first.after.oracle_passed  # the rebuilt task's own Oracle passes
    # The memorising policy replays the same solution: the rebuild is no longer too easy for it.
    assert first.after.mean_reward_v is not None and first.after.mean_reward_v <= 0.7
    assert h.outcome == "hardened" and h.final_label != "too_easy" and len(h.rounds) == 1
    # Every episode of the rebuild is judged, its judge's scale checked like any task's.
    assert sorted(v.rollout_id for v in first.verdicts) == sorted(r.rollout_id for r in first.rollouts if r.scored)
    assert first.judgement is not None and first.judgement.hardened_from == original.task_name
    assert (first.judgement.oracle_score, first.judgement.noop_score) == (4, -3)
    assert first.judgement.calibration == "ok" and all(v.status == "judged" for v in first.verdicts)
    meta = TaskToml.from_toml((Path(h.final_path) / "task.toml").read_text()).metadata
    assert meta[HISTORY_KEY][0]["from_task"] == original.task_name
    assert meta[HISTORY_KEY][0]["previous_solution_reward_v"] == prev.reward_v
    assert meta["complexity"] == first.revision.complexity_after
    event = instance.get_latest_materialization_event(dg.AssetKey(HARDENING.name))
    table = event.asset_materialization.metadata["rounds"].value
    assert original.task_name in table and "retained" in table and "too_easy (1.00)" in table
    assert f"r={prev.reward_v:.2f}" in table

    # The hardened version replaces the original: in the exported dataset and in the run's tasks/ mirror.
    export_corpus(load_inputs(store), tmp_path / "export")
    dataset = tmp_path / "export" / "dataset"
    manifest = ExportManifest.model_validate_json((dataset / "manifest.json").read_text())
    assert [e.task_name for e in manifest.tasks] == [h.final_task]
    lineage = manifest.tasks[0].hardening
    assert lineage is not None and (lineage.origin, lineage.round) == (original.task_name, 1)
    assert not (dataset / original.task_name).exists()
    assert mirror_tasks(retained_paths(store, [key]), tmp_path / "tasks") == [h.final_task]
