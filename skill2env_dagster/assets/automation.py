"""Nightly crawl schedule and the sensor that sends new and changed skills (only those) down the pipeline."""


import json
from typing import Any

import dagster as dg
import pyarrow.parquet as pq
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from skill2env_dagster.artifacts import CRAWL, PIPELINE_JOB, SKILLS_PARTITION, SNAPSHOT
from skill2env_dagster.assets.freshness import FreshnessScan, job_chain
from skill2env_dagster.assets.skillhub import SNAPSHOT_BATCH
from skill2env_dagster.assets.tasks import CREATION_SETTINGS_METADATA
from skill2env_dagster.models.skill import SkillStatus
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.skillhub.batches import contiguous_batches
from skill2env_dagster.skillhub.snapshot import SKILLS_TABLE

NIGHTLY_CRON = "0 2 * * *"
SNAPSHOT_TAG = "skill2env/snapshot"  # the crawl snapshot a sensor run was requested for
STAGE_TAG = "skill2env/stage"
UNFINISHED = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
              dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def build_crawl_schedule(crawl_job: Any) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="nightly_skillhub_crawl",
        job=crawl_job,
        cron_schedule=NIGHTLY_CRON,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Re-crawl every source at 02:00 UTC; the change sensor then requests the changed skills.",
    )


def build_change_sensor(pipeline_job: Any, snapshot_job: Any) -> dg.SensorDefinition:
    """What needs work is read from Dagster's own records - the same provenance scan `skill2env run` uses - never
    from a list of its own: a skill `skill2env run` (or a backfill, or an earlier tick) already processed is fresh
    and gets no run, whoever processed it. So opening the UI on a finished run's history, or an unchanged nightly
    crawl, launches nothing.

    Cursor: {"snapshot": the crawl snapshot handled, "stage": "snapshots" | "done"}. For a new snapshot, first
    every snapshot that is missing or not fresh, in batches of up to SNAPSHOT_BATCH consecutive partitions (one
    run each); once those runs have finished, one `skill_pipeline` run per eligible skill with missing or stale
    assets, selecting exactly those."""

    @dg.sensor(
        name="skillhub_change_sensor",
        jobs=[pipeline_job, snapshot_job],
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
    def skillhub_change_sensor(context: dg.SensorEvaluationContext, artifacts: ArtifactStoreResource):
        root = artifacts.store().dir(CRAWL)
        latest = root / "latest.json"
        if not latest.exists():
            return dg.SkipReason("no crawl snapshot yet: materialise skillhub_crawl")
        current = json.loads(latest.read_text())["snapshot_id"]
        state = _state(context.cursor)
        if state.get("snapshot") == current and state.get("stage") == "done":
            return dg.SkipReason(f"snapshot {current} already handled")
        repo = context.repository_def
        assert repo is not None, "the change sensor runs in a code location"
        if state.get("snapshot") != current:
            batches = _snapshot_requests(context.instance, repo, snapshot_job.name, current)
            if batches:
                context.log.info("snapshot %s: %d snapshot batch runs", current, len(batches))
                return dg.SensorResult(run_requests=batches, cursor=_cursor(current, "snapshots"))
        waiting = context.instance.get_runs_count(dg.RunsFilter(
            statuses=UNFINISHED, tags={SNAPSHOT_TAG: current, STAGE_TAG: "snapshots"}))
        if waiting:
            return dg.SensorResult(skip_reason=f"snapshot {current}: {waiting} snapshot batch runs to finish",
                                   cursor=_cursor(current, "snapshots"))
        requests = _pipeline_requests(context.instance, repo, root / current, current)
        context.log.info("snapshot %s: %d skills with work to do", current, len(requests))
        if not requests:
            return dg.SensorResult(skip_reason=f"snapshot {current}: every skill is up to date",
                                   cursor=_cursor(current, "done"))
        return dg.SensorResult(run_requests=requests, cursor=_cursor(current, "done"))

    return skillhub_change_sensor


def _state(cursor: str | None) -> dict[str, str]:
    if not cursor:
        return {}
    try:
        state = json.loads(cursor)
    except json.JSONDecodeError:  # a cursor of the earlier format (the bare snapshot id): handle it again
        return {}
    return state if isinstance(state, dict) else {}


def _cursor(snapshot: str, stage: str) -> str:
    return json.dumps({"snapshot": snapshot, "stage": stage})


def _snapshot_requests(instance: dg.DagsterInstance, repo: Any, job_name: str, current: str) -> list[dg.RunRequest]:
    snapshot = dg.AssetKey(SNAPSHOT.name)
    order = instance.get_dynamic_partitions(SKILLS_PARTITION)
    scan = FreshnessScan(instance, repo.asset_graph, [snapshot], None, CREATION_SETTINGS_METADATA)
    needed = {k for k in order if scan.needs(snapshot, k)}
    return [dg.RunRequest(job_name=job_name, run_key=f"{current}:snapshots:{b.first}:{b.last}",
                          tags={ASSET_PARTITION_RANGE_START_TAG: b.first, ASSET_PARTITION_RANGE_END_TAG: b.last,
                                SNAPSHOT_TAG: current, STAGE_TAG: "snapshots"})
            for b in contiguous_batches(order, needed, SNAPSHOT_BATCH)]


def _pipeline_requests(instance: dg.DagsterInstance, repo: Any, snap_dir: Any, current: str) -> list[dg.RunRequest]:
    """One run per skill with work, selecting what the scan says is missing (the whole chain when the scan cannot
    prove the partition's state: Dagster then re-runs what it must). Work is judged by each skill's final verdict
    - its snapshot's, after the model's second opinion (the crawl's only without a snapshot) - so a skill the
    opinion cleared is planned, and one it screened out gets its stale downstream re-run as skipped. The whole
    chain leaves out a snapshot the scan finds fresh: this stage starts only once the snapshot batches have
    finished, and a second materialisation of the same snapshot would be a second record of one crawl."""
    job = repo.get_job(PIPELINE_JOB)
    chain = job_chain(job, repo.asset_graph)
    snapshot = dg.AssetKey(SNAPSHOT.name)
    scan = FreshnessScan(instance, repo.asset_graph, chain, None, CREATION_SETTINGS_METADATA)
    crawled = set(_eligible(snap_dir))
    requests = []
    for key in sorted(instance.get_dynamic_partitions(SKILLS_PARTITION)):
        verdict = scan.verdict(key)
        plan = scan.plan(key, eligible=key in crawled if verdict is None else verdict)
        if plan is not None and not plan.selection:
            continue
        selection = ([a for a in chain if a != snapshot or scan.needs(snapshot, key)] if plan is None
                     else [dg.AssetKey(n) for n in plan.selection])
        requests.append(dg.RunRequest(job_name=PIPELINE_JOB, partition_key=key, run_key=f"{current}:{key}",
                                      asset_selection=selection,
                                      tags={"skill2env/skill": key, SNAPSHOT_TAG: current, STAGE_TAG: "pipeline"}))
    return requests


def _eligible(snap_dir: Any) -> list[str]:
    rows = pq.read_table(snap_dir / SKILLS_TABLE, columns=["skill_id", "status"]).to_pylist()
    return sorted(r["skill_id"] for r in rows if r["status"] == SkillStatus.ELIGIBLE.value)
