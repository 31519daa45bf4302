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
