"""Which sources the crawl reads: a path to the sources YAML."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from skill2env_dagster.skillhub.config import SourcesConfig, load_sources_config, sources_file_from_env


class SkillHubResource(dg.ConfigurableResource):
    """Points the crawl at a sources YAML (default: $S2E_SOURCES, else config/sources.yaml in the repo)."""

    sources_file: str = Field(default="", description="Path of the sources YAML; empty = $S2E_SOURCES or default.")

    def load(self) -> SourcesConfig:
        return load_sources_config(self.sources_file or sources_file_from_env())
