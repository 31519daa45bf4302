"""Nightly crawl schedule and the sensor that sends new and changed skills (only those) down the pipeline."""


import json
from typing import Any

import dagster as dg

from skill2env_dagster.artifacts import CRAWL
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.skillhub.snapshot import diff_snapshots

NIGHTLY_CRON = "0 2 * * *"


def build_crawl_schedule(crawl_job: Any) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="nightly_skillhub_crawl",
        job=crawl_job,
        cron_schedule=NIGHTLY_CRON,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Re-crawl every source at 02:00 UTC; the change sensor then requests the changed skills.",
    )


def build_change_sensor(
    pipeline_job: Any, snapshot_job: Any
) -> dg.SensorDefinition:
    """Cursor = last snapshot id handled. A new snapshot is diffed against it: eligible new/changed skills get a
    full pipeline run, other new/changed skills only a snapshot refresh (to record their new verdict)."""

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
        if current == context.cursor:
            return dg.SkipReason(f"snapshot {current} already handled")
        diff = diff_snapshots(root / context.cursor if context.cursor else None, root / current)
        eligible = set(diff.eligible)
        requests = [
            dg.RunRequest(
                run_key=f"{current}:{key}",
                partition_key=key,
                job_name=(pipeline_job if key in eligible else snapshot_job).name,
                tags={"skill2env/skill": key, "skill2env/snapshot": current},
            )
            for key in diff.touched
        ]
        context.log.info("snapshot %s: %d added, %d changed, %d removed", current, len(diff.added),
                         len(diff.changed), len(diff.removed))
        return dg.SensorResult(run_requests=requests, cursor=current)

    return skillhub_change_sensor
