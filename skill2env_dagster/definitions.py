"""The one Dagster code location: every asset, check, job, schedule, sensor and resource of skill2env."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import dagster as dg

from skill2env_dagster.artifacts import ANALYTICS_JOB, CRAWL_JOB, PIPELINE_JOB, ROLLOUTS_JOB, SNAPSHOT_JOB
from skill2env_dagster.assets.automation import build_change_sensor, build_crawl_schedule
from skill2env_dagster.assets.export import corpus_export, corpus_stats
from skill2env_dagster.assets.knowledge import skill_knowledge
from skill2env_dagster.assets.plans import axis_samples, workflow_plans
from skill2env_dagster.assets.probe import retrieval_probe
from skill2env_dagster.assets.rollouts import ROLLOUT_CORPUS_ASSETS, ROLLOUT_SKILL_ASSETS
from skill2env_dagster.assets.skillhub import raw_skill_md, skillhub_crawl, skillhub_snapshot
from skill2env_dagster.assets.tasks import TASK_ASSETS
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.rollouts import RolloutsResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource

SKILL_ASSETS: list[Any] = [skillhub_snapshot, skill_knowledge, workflow_plans, axis_samples, *TASK_ASSETS]
GLOBAL_ASSETS: list[Any] = [skillhub_crawl, retrieval_probe, corpus_export, corpus_stats, *ROLLOUT_CORPUS_ASSETS]


def default_resources() -> dict[str, Any]:
    """Real resources configured from the environment (S2E_* variables; see README › Configuration)."""
    artifacts = ArtifactStoreResource(root=os.environ.get("S2E_ARTIFACTS_DIR", "var/artifacts"))
    return {
        "artifacts": artifacts,
        "skillhub": SkillHubResource(sources_file=os.environ.get("S2E_SOURCES", "")),
        "llm": LLMResource.from_env(),
        "docker": DockerResource(),
        "rollouts": RolloutsResource.from_env(),
    }


def _asset_keys(assets: list[Any]) -> list[dg.AssetKey]:
    return [key for a in assets for key in a.keys]


def build_defs(resources: Mapping[str, Any] | None = None) -> dg.Definitions:
    """Tests pass their own resources (tmp store, fake LLM), which override the real ones from the environment."""
    crawl_job = dg.define_asset_job(CRAWL_JOB, selection=dg.AssetSelection.assets(skillhub_crawl))
    pipeline_job = dg.define_asset_job(
        PIPELINE_JOB, selection=dg.AssetSelection.assets(*_asset_keys(SKILL_ASSETS)),
        description="Every per-skill asset of one skill partition, from its snapshot to its gate reports.",
    )
    rollouts_job = dg.define_asset_job(
        ROLLOUTS_JOB, selection=dg.AssetSelection.assets(*_asset_keys(ROLLOUT_SKILL_ASSETS)),
        description="Solver rollouts, judge scores and hardening of one skill partition's retained tasks (k model "
        "episodes per task and solver: launched on purpose, not by every pipeline run).",
    )
    snapshot_job = dg.define_asset_job(
        SNAPSHOT_JOB, selection=dg.AssetSelection.assets(skillhub_snapshot),
        description="Refresh the snapshot record of skills that are not eligible (their verdict changed).",
    )
    analytics_job = dg.define_asset_job(
        ANALYTICS_JOB, selection=dg.AssetSelection.assets(retrieval_probe, corpus_export, corpus_stats,
                                                          *ROLLOUT_CORPUS_ASSETS),
        description="Retrieval probe over all retained tasks, then the corpus export (parquet, DuckDB, Harbor dataset) "
        "and its statistics and plots, the SFT dataset and the difficulty report.",
    )
    return dg.Definitions(
        assets=[raw_skill_md, *GLOBAL_ASSETS, *SKILL_ASSETS, *ROLLOUT_SKILL_ASSETS],
        jobs=[crawl_job, pipeline_job, rollouts_job, snapshot_job, analytics_job],
        schedules=[build_crawl_schedule(crawl_job)],
        sensors=[build_change_sensor(pipeline_job, snapshot_job)],
        resources={**default_resources(), **dict(resources or {})},
        # Steps of a run execute in its run worker's process: a per-skill run is a chain (each step needs the one
        # before), so a process per step would only add an import of the code location to every step. Runs, not
        # steps, are what spreads over processes and hosts (run queue, deploy/celery).
        executor=dg.in_process_executor,
    )


defs = build_defs()
