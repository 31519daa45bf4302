"""Artifact store resource: where every stage reads and writes its validated files."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from skill2env_dagster.store import ArtifactStore


class ArtifactStoreResource(dg.ConfigurableResource):
    """Root folder of all artifacts (default `var/artifacts`, overridable with S2E_ARTIFACTS_DIR)."""

    root: str = Field(default="var/artifacts", description="Folder holding one sub-folder per artifact.")

    def store(self) -> ArtifactStore:
        return ArtifactStore(self.root)
