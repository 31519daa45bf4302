"""The run's partition logic against a real instance and the real code location (gates stubbed, no Docker):
staleness rounds launch exactly the stale work, and the bulk freshness scan never calls a partition fresh that
Dagster's resolver would run, and plans a cold partition without asking it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import CRAWL_JOB
from skill2env_dagster.assets.freshness import FreshnessScan
from skill2env_dagster.assets.tasks import CREATION_SETTINGS_METADATA
from skill2env_dagster.cli.runner.home import instance_config_text
from skill2env_dagster.cli.runner.partitions import PartitionRunner, pipeline_chain
from skill2env_dagster.definitions import build_defs
from skill2env_dagster.models.freshness import Plan
from skill2env_dagster.models.gate import GateReport, GateVerdict
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.tasks.pipeline import CreationSettings

pytestmark = pytest.mark.dagster
KEY = "hub__log-triage-awk"
PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


class PassingDocker(DockerResource):
    """Every gate passes without an engine: this tests which runs are launched, not the gates."""

    def gate(self, task_dir: Path | str) -> GateReport:
        return GateReport(task=str(task_dir), verdict=GateVerdict.RETAINED)

    def gate_many(self, task_dirs: list[Path | str]) -> list[GateReport]:
        return [self.gate(d) for d in task_dirs]


@pytest.fixture
def setup(examples_dir, tmp_path):
    hub = tmp_path / "hub"
    shutil.copytree(examples_dir / "log-triage-awk", hub / "log-triage-awk")
    (tmp_path / "sources.yaml").write_text(f"sources:\n  - {{name: hub, kind: dir, path: {hub}}}\n")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "base-images.json").write_text(json.dumps(PINS))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text(instance_config_text())
    defs = build_defs({"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                       "skillhub": SkillHubResource(sources_file=str(tmp_path / "sources.yaml")),
                       "docker": PassingDocker(state_dir=str(tmp_path / "state"))})
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        yield hub, defs, instance


def _crawl(defs, instance) -> None:
    assert defs.resolve_job_def(CRAWL_JOB).execute_in_process(instance=instance).success


def _plan(defs, instance, settings: CreationSettings, eligible: bool = True) -> Plan | None:
    scan = FreshnessScan(instance, defs.resolve_asset_graph(), pipeline_chain(defs),
                         settings.model_dump(mode="json"), CREATION_SETTINGS_METADATA)
    return scan.plan(KEY, eligible)


def _fresh(defs, instance, settings: CreationSettings) -> bool:
    plan = _plan(defs, instance, settings)
    return plan is not None and not plan.selection


def test_rounds_run_exactly_the_stale_work_and_the_scan_agrees(setup):
    hub, defs, instance = setup
    settings = CreationSettings(max_variants=1)
    runner = PartitionRunner(defs, instance, settings, {})
    _crawl(defs, instance)
    assert not _fresh(defs, instance, settings)

    cold_plan = _plan(defs, instance, settings)  # nothing materialised: planned without the resolver
    assert cold_plan == Plan(tuple(a.path[-1] for a in runner.chain))
    assert _plan(defs, instance, settings, eligible=False) == Plan(("skillhub_snapshot",), tuple(
        a.path[-1] for a in runner.chain[1:]))
    cold = runner.process(KEY, eligible=True, plan=cold_plan)
    assert (cold.status, cold.runs) == ("ran", 1)  # the whole chain in one run, no second question needed
    assert sorted(cold.materialized) == sorted(a.path[-1] for a in runner.chain)
    assert runner.needed(KEY, True) == [] and _fresh(defs, instance, settings)

    _crawl(defs, instance)  # an unchanged hub: nothing new observed
    assert runner.process(KEY, True).status == "up_to_date" and _fresh(defs, instance, settings)

    md = hub / "log-triage-awk" / "SKILL.md"
    md.write_text(md.read_text() + "\nNever rewrite the input log in place.\n")
    _crawl(defs, instance)
    assert _plan(defs, instance, settings) is None  # a newer observation: the resolver decides
    assert [a.path[-1] for a in runner.needed(KEY, True)] == ["skillhub_snapshot"]
    edited = runner.process(KEY, True)
    assert edited.status == "ran" and edited.materialized[0] == "skillhub_snapshot" and edited.runs >= 2
    assert runner.needed(KEY, True) == [] and _fresh(defs, instance, settings)

    more = CreationSettings(max_variants=2)  # run config is no part of Dagster's staleness: recorded, compared
    assert not _fresh(defs, instance, more)
    assert [a.path[-1] for a in PartitionRunner(defs, instance, more, {}).needed(KEY, True)] == ["task_bundles"]


def test_analytics_are_stale_when_missing_or_older_than_a_partition(setup):
    """The run's cheap analytics check (two queries per asset) must see every case the run relies on: never
    materialised, fresh after the analytics job, and stale again when a partition is re-materialised after it
    (the case of a run interrupted between its partitions and its analytics)."""
    from skill2env_dagster.artifacts import ANALYTICS_JOB
    from skill2env_dagster.cli.runner.session import analytics_stale

    hub, defs, instance = setup
    settings = CreationSettings(max_variants=1)
    runner = PartitionRunner(defs, instance, settings, {})
    job = defs.resolve_job_def(ANALYTICS_JOB)
    _crawl(defs, instance)
    assert runner.process(KEY, eligible=True).status == "ran"
    assert analytics_stale(defs, instance, job)
    assert job.execute_in_process(instance=instance).success
    assert not analytics_stale(defs, instance, job)

    md = hub / "log-triage-awk" / "SKILL.md"
    md.write_text(md.read_text() + "\nNever rewrite the input log in place.\n")
    _crawl(defs, instance)
    assert runner.process(KEY, True).status == "ran"
    assert analytics_stale(defs, instance, job)


def test_a_moved_hub_refreshes_the_recorded_paths_and_rebuilds_nothing(setup, tmp_path):
    """Same content at a new path: later stages read the skill's files through the stored record and the old
    folder may be gone, so the crawl points the record at the new folder; nothing turns stale or re-runs."""
    from skill2env_dagster.artifacts import SNAPSHOT
    from skill2env_dagster.store import ArtifactStore

    hub, defs, instance = setup
    runner = PartitionRunner(defs, instance, CreationSettings(max_variants=1), {})
    _crawl(defs, instance)
    assert runner.process(KEY, eligible=True).status == "ran"

    moved = tmp_path / "moved-hub"
    shutil.move(hub, moved)
    (tmp_path / "sources.yaml").write_text(f"sources:\n  - {{name: hub, kind: dir, path: {moved}}}\n")
    _crawl(defs, instance)
    record = ArtifactStore(tmp_path / "artifacts").load(SNAPSHOT, KEY)
    assert record.abs_path.startswith(str(moved))
    assert runner.needed(KEY, True) == [] and runner.process(KEY, True).status == "up_to_date"
