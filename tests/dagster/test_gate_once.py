"""Gate once: `gate_reports` reuses a task's creation-time report while the published folder and the gate version
are unchanged, and records that it did; an edited folder, older gate code or different gate limits gate again.

The engine is replaced by a counting stand-in: this tests the decision, not Docker (tests/docker covers that)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import ClassVar

import dagster as dg
import pytest

from skill2env_dagster.artifacts import GATES, SKILLS_PARTITION, TASKS
from skill2env_dagster.assets import tasks as task_assets
from skill2env_dagster.gates.reuse import record_creation_gate
from skill2env_dagster.models.gate import GateReport, GateVerdict
from skill2env_dagster.models.task import Axes, TaskBundle, TaskBundleSet
from skill2env_dagster.resources.docker import DockerResource, GateConfig
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore

pytestmark = pytest.mark.dagster
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "good_minimal"
SKILL, TASK = "examples__fixture", "examples__fixture--wf-v0"


class CountingDocker(DockerResource):
    """Gates nothing: records which folders it was asked to gate and calls them retained."""

    gated: ClassVar[list[str]] = []

    def gate_many(self, task_dirs: list[Path | str]) -> list[GateReport]:
        CountingDocker.gated.extend(str(d) for d in task_dirs)
        return [GateReport(task=str(d), verdict=GateVerdict.RETAINED) for d in task_dirs]


def _bundle_set(folder: Path, gate_version: str) -> TaskBundleSet:
    report = GateReport(task=str(folder), verdict=GateVerdict.RETAINED)
    bundle = TaskBundle(task_name=TASK, skill_id=SKILL, workflow="wf", variant=0,
                        axes=Axes(archetype="a", primary_verifier_pattern="p", complexity="c", persona="p", tone="t",
                                  expertise="e"),
                        recipe="r", image="minimal", status="retained", path=str(folder),
                        creation_gate=record_creation_gate(report, folder, gate_version))
    return TaskBundleSet(skill_id=SKILL, bundle_digest="d", skill_md_path="/x/SKILL.md", generator="offline",
                         prompt_version="v", bundles=[bundle])


@pytest.fixture
def setup(tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    folder = store.dir(TASKS, SKILL) / TASK
    shutil.copytree(FIXTURE, folder)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, [SKILL])
    CountingDocker.gated.clear()

    def gate(docker: CountingDocker) -> tuple[bool, list[str]]:
        result = dg.materialize([task_assets.gate_reports], partition_key=SKILL, instance=instance,
                                resources={"artifacts": ArtifactStoreResource(root=str(store.root)), "docker": docker})
        assert result.success
        return bool(CountingDocker.gated), store.load(GATES, SKILL).reused

    return store, folder, gate


def test_unchanged_task_and_gates_reuse_the_creation_report(setup):
    store, folder, gate = setup
    docker = CountingDocker()
    store.save(TASKS, SKILL, _bundle_set(folder, task_assets.gate_version(docker)))
    gated, reused = gate(docker)
    assert not gated and reused == [TASK]
    assert store.load(GATES, SKILL).reports[TASK].verdict is GateVerdict.RETAINED


def test_an_edited_task_is_gated_again(setup):
    store, folder, gate = setup
    docker = CountingDocker()
    store.save(TASKS, SKILL, _bundle_set(folder, task_assets.gate_version(docker)))
    (folder / "tests" / "test.sh").write_text((folder / "tests" / "test.sh").read_text() + "\n# edited\n")
    gated, reused = gate(docker)
    assert gated and reused == []


def test_other_gate_code_or_limits_gate_again(setup):
    store, folder, gate = setup
    docker = CountingDocker()
    store.save(TASKS, SKILL, _bundle_set(folder, "an-older-gate-version:" + docker.verdict_fingerprint()))
    gated, reused = gate(docker)
    assert gated and reused == []
    CountingDocker.gated.clear()
    store.save(TASKS, SKILL, _bundle_set(folder, task_assets.gate_version(docker)))
    gated, reused = gate(CountingDocker(gates=GateConfig(memory_mb=2048)))  # a limit that can change a verdict
    assert gated and reused == []
    CountingDocker.gated.clear()
    gated, reused = gate(CountingDocker(gates=GateConfig(concurrency=4), run_label="elsewhere"))  # cannot change one
    assert not gated and reused == [TASK]
