"""The code location one run executes: the project's Definitions bound to this run's folder.

Both the session (main process) and the pool's workers (forked) build it, so it lives below both.
"""

from __future__ import annotations

from typing import Any

from skill2env_dagster.cli.runner.home import RunHome


def run_defs(home: RunHome) -> Any:
    """The code location's Definitions with this run's store, sources and gate-container label."""
    from skill2env_dagster.definitions import build_defs
    from skill2env_dagster.resources.docker import DockerResource
    from skill2env_dagster.resources.skillhub import SkillHubResource
    from skill2env_dagster.resources.store import ArtifactStoreResource

    return build_defs({"artifacts": ArtifactStoreResource(root=str(home.artifacts)),
                       "skillhub": SkillHubResource(sources_file=str(home.sources_file)),
                       "docker": DockerResource(run_label=home.gate_label)})


def open_instance() -> Any:
    """The run folder's Dagster instance (DAGSTER_HOME), holding its database connection open.

    Dagster's Postgres storage opens a new connection for every event by default (right for a short-lived run
    worker); `skill2env run` and its workers are long-lived and write an event per partition of a batch, and the
    connection set-up was two thirds of a snapshot batch's time. The webserver's own setting keeps one connection
    per storage (no statement timeout: a whole hub's freshness scan is one long query). SQLite: no change."""
    import dagster as dg

    instance = dg.DagsterInstance.get()
    instance.optimize_for_webserver(statement_timeout=0, pool_recycle=3600, max_overflow=4)
    return instance
