"""Nightly refresh against a git source that gains, changes and loses skills between two ticks.

The schedule and the sensor are evaluated with Dagster's test APIs (`build_schedule_context`,
`build_sensor_context`), and every run they request is executed for real against one instance, as the daemon
would: schedule tick → crawl run → sensor tick → per-skill runs.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.definitions import build_defs, default_resources
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from tests.support.hub import commit_all, git, init_repo, write_skill, write_sources

pytestmark = [pytest.mark.dagster, pytest.mark.docker]  # its per-skill runs gate in the engine

SNAPSHOT = dg.AssetKey("skillhub_snapshot")


@pytest.fixture
def nightly(tmp_path: Path):
    """A bare repo (the 'remote' hub), a work clone to push changes from, and defs reading the bare repo."""
    work, bare = tmp_path / "work", tmp_path / "hub.git"
    init_repo(work)
    for name in ("csv-cleaner", "log-counter", "unit-converter"):
        write_skill(work / "skills", name)
    commit_all(work, "three skills")
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    sources = write_sources(tmp_path / "sources.yaml",
                            [{"name": "g", "kind": "git", "url": str(bare), "ref": "main", "subdir": "skills"}],
                            tmp_path / "git-cache")
    resources = {
        **default_resources(),
        "artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
        "skillhub": SkillHubResource(sources_file=str(sources)),
        "llm": LLMResource(cache_dir=str(tmp_path / "llm_cache")),  # no endpoint: the offline planner
    }
    with dg.DagsterInstance.ephemeral() as instance:
        yield work, build_defs(resources), resources, instance


def _run(defs: dg.Definitions, instance: dg.DagsterInstance, request: dg.RunRequest, job_name: str) -> None:
    job = defs.resolve_job_def(request.job_name or job_name)
    result = job.execute_in_process(instance=instance, partition_key=request.partition_key, tags=request.tags,
                                    asset_selection=request.asset_selection)
    assert result.success, f"run of {job.name} for {request.partition_key} failed"


def _partitions_of(instance: dg.DagsterInstance, request: dg.RunRequest) -> list[str]:
    """The partitions a request covers: its partition, or its range of consecutive ones (a snapshot batch)."""
    if request.partition_key is not None:
        return [request.partition_key]
    keys = instance.get_dynamic_partitions("skills")
    first, last = (request.tags[f"dagster/asset_partition_range_{end}"] for end in ("start", "end"))
    return keys[keys.index(first):keys.index(last) + 1]


def _tick(defs, resources, instance, cursor: str | None, when: datetime) -> tuple[set[str], str | None]:
    """One night: the schedule's crawl run, then the sensor's ticks (snapshot batches, then pipeline runs) until it
    has nothing more to ask, each requested run executed as the daemon would; returns the partitions the sensor
    sent work to and its cursor."""
    schedule = defs.get_schedule_def("nightly_skillhub_crawl")
    scheduled = schedule.evaluate_tick(dg.build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert len(scheduled.run_requests) == 1
    _run(defs, instance, scheduled.run_requests[0], schedule.job_name)

    sensor = defs.get_sensor_def("skillhub_change_sensor")
    touched: set[str] = set()
    for _ in range(3):
        evaluated = sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources,
                                                   definitions=defs))
        if isinstance(evaluated, dg.SkipReason) or not evaluated.run_requests:
            return touched, cursor if isinstance(evaluated, dg.SkipReason) else evaluated.cursor
        for request in evaluated.run_requests:
            touched.update(_partitions_of(instance, request))
            _run(defs, instance, request, "skill_pipeline")
        cursor = evaluated.cursor
    return touched, cursor


def _materialised_count(instance: dg.DagsterInstance, key: str) -> int:
    flt = dg.AssetRecordsFilter(asset_key=SNAPSHOT, asset_partitions=[key])
    return len(instance.fetch_materializations(flt, limit=100).records)


def test_two_nights_follow_gained_changed_and_lost_skills(nightly) -> None:
    work, defs, resources, instance = nightly
    first, cursor = _tick(defs, resources, instance, None, datetime(2026, 1, 1, 2, tzinfo=UTC))
    assert sorted(first) == ["g__csv-cleaner", "g__log-counter", "g__unit-converter"]
    assert set(instance.get_dynamic_partitions("skills")) == first

    # During the day the hub gains one skill, changes one and loses one.
    write_skill(work / "skills", "image-renamer", body="Rename photos by EXIF date; dry-run first; never overwrite.")
    write_skill(work / "skills", "log-counter", body="Count 4xx codes per hour with awk and report the worst hour.")
    shutil.rmtree(work / "skills" / "unit-converter")
    commit_all(work, "gain, change, lose")
    git(work, "push", "-q", "origin", "main")

    second, cursor2 = _tick(defs, resources, instance, cursor, datetime(2026, 1, 2, 2, tzinfo=UTC))
    assert cursor2 != cursor
    assert sorted(second) == ["g__image-renamer", "g__log-counter"]
    assert set(instance.get_dynamic_partitions("skills")) == {"g__csv-cleaner", "g__image-renamer", "g__log-counter"}
    # The untouched skill ran once (first night), the changed one twice, the new one once.
    assert _materialised_count(instance, "g__csv-cleaner") == 1
    assert _materialised_count(instance, "g__log-counter") == 2
    assert _materialised_count(instance, "g__image-renamer") == 1

    # A third night with no change requests nothing.
    third, _ = _tick(defs, resources, instance, cursor2, datetime(2026, 1, 3, 2, tzinfo=UTC))
    assert third == set()
