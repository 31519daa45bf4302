"""What a run was asked to do (the command line, or the demo's fixed sources)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from skill2env_dagster.skillhub.config import SourcesConfig
from skill2env_dagster.tasks.pipeline import CreationSettings


@dataclass
class RunOptions:
    out: Path
    items: list[str] = field(default_factory=list)
    sources_files: list[Path] = field(default_factory=list)
    sources: SourcesConfig | None = None  # given whole (the demo), instead of items/sources_files
    workers: int = 1
    only: list[str] | None = None
    settings: CreationSettings = field(default_factory=CreationSettings)
    skip_docker_up: bool = False
    rollouts: bool = False  # also run skill_rollouts (k model episodes per retained task, judge, hardening)
    snapshots_only: bool = False  # crawl and record every skill's snapshot (its verdict); create no tasks
