"""The crawl snapshot's manifest (`snapshot.json`) and the diff between two snapshots that drives the change
sensor."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SnapshotManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    snapshot_id: str
    created_at: str
    n_skills: int
    status_counts: dict[str, int]
    reason_counts: dict[str, int]
    sources: list[dict] = Field(description="Per source: name, kind, uri, commit, skills, error.")
    seconds: dict[str, float]
