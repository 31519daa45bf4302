"""The sources config: which skill hubs to crawl and the limits that apply while crawling them.

The file is YAML (default `config/sources.yaml`, override with `S2E_SOURCES` or `--config`); relative source paths
are resolved against the config file's folder, so the same file works from any working directory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from skill2env_dagster.reasons import InputError, ReasonCode
from skill2env_dagster.skillhub.screen.engine import ScreenSettings

# Relative to the working directory (the project folder `dagster dev -w workspace.yaml` runs in), never to the
# package's own location: an installed wheel has no config folder.
DEFAULT_SOURCES_FILE = Path("config") / "sources.yaml"
_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class SourceSpec(BaseModel):
    """One hub: a folder tree, or a git repository crawled at a resolved commit."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Short unique name; the first part of every skill id from this source.")
    kind: Literal["dir", "git"]
    path: str | None = Field(default=None, description="Folder for `dir`; local path of the repo for `git`.")
    url: str | None = Field(default=None, description="Clone URL for `git` (a local path works too).")
    ref: str = Field(default="HEAD", description="Branch, tag or commit to crawl (git only).")
    subdir: str = Field(default=".", description="Only crawl below this folder of the source.")
    priority: int = Field(default=100, description="Lower wins when choosing the canonical copy of a duplicate.")
    include_fixtures: bool = Field(default=False, description="Crawl test-fixture skills as separate skills.")

    @model_validator(mode="after")
    def _check(self) -> SourceSpec:
        if not _SOURCE_NAME.match(self.name):
            raise ValueError(f"source name {self.name!r} must match {_SOURCE_NAME.pattern}")
        if self.kind == "dir" and not self.path:
            raise ValueError(f"dir source {self.name!r} needs `path`")
        if self.kind == "git" and not (self.url or self.path):
            raise ValueError(f"git source {self.name!r} needs `url` (or `path`)")
        return self


class CrawlSettings(BaseModel):
    """Limits and thresholds; every limit that is hit becomes a recorded status, never a crash."""

    model_config = ConfigDict(extra="forbid")

    max_file_bytes: int = Field(default=5 * 1024 * 1024, description="Larger files are recorded but not read.")
    max_skill_bytes: int = Field(default=64 * 1024 * 1024, description="Larger skills are screened out.")
    max_files: int = Field(default=5000, description="Skills with more files are screened out.")
    dedup_threshold: float = Field(default=0.8, gt=0, le=1, description="Word 5-gram Jaccard for near-duplicates.")
    dedup_num_perm: int = Field(default=128, ge=16, le=1024)
    shingle_words: int = Field(default=5, ge=1, le=16)
    cache_dir: str = Field(default="var/git-cache", description="Where git sources are cloned.")
    screen_cache_dir: str | None = Field(
        default=None, description="Where screening results are kept by bundle digest and screening code version "
                                  "(`skill2env run` uses its state folder); none: every crawl screens every skill.")
    screen: ScreenSettings = Field(default_factory=ScreenSettings)


class SourcesConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: list[SourceSpec] = Field(min_length=1)
    settings: CrawlSettings = Field(default_factory=CrawlSettings)

    @model_validator(mode="after")
    def _unique_names(self) -> SourcesConfig:
        names = [s.name for s in self.sources]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"source names must be unique; repeated: {dupes}")
        return self


def sources_file_from_env() -> Path:
    return Path(os.environ.get("S2E_SOURCES", str(DEFAULT_SOURCES_FILE)))


def load_sources_config(path: Path | str | None = None) -> SourcesConfig:
    """Read and validate the YAML file; relative paths become absolute against the file's folder."""
    path = Path(path) if path else sources_file_from_env()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        config = SourcesConfig.model_validate(raw)
    except FileNotFoundError as e:
        raise InputError(
            ReasonCode.SOURCE_UNAVAILABLE,
            f"sources config not found: {path.resolve()} (set S2E_SOURCES or pass --config)",
        ) from e
    except (yaml.YAMLError, ValidationError) as e:
        raise InputError(ReasonCode.SOURCE_UNAVAILABLE, f"sources config {path} is invalid: {e}") from e
    return _absolutise(config, path.parent.resolve())


def _absolutise(config: SourcesConfig, base: Path) -> SourcesConfig:
    def fix(p: str | None) -> str | None:
        if p is None or "://" in p or p.startswith("git@"):
            return p
        return str((base / p).resolve()) if not os.path.isabs(p) else p

    sources = [s.model_copy(update={"path": fix(s.path), "url": fix(s.url)}) for s in config.sources]
    cache = config.settings.cache_dir
    settings = config.settings.model_copy(update={"cache_dir": fix(cache) if cache else cache})
    return config.model_copy(update={"sources": sources, "settings": settings})


def source_name(text: str, used: set[str]) -> str:
    """A valid source name made from a folder or repository name, unique among `used` (which it joins)."""
    base = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._") or "source"
    name, n = base[:60], 2
    while name in used:
        name, n = f"{base[:56]}-{n}", n + 1
    used.add(name)
    return name


def dir_sources(paths: list[Path]) -> list[SourceSpec]:
    """Sources for plain folders given on the command line, named after the folder (made unique)."""
    used: set[str] = set()
    return [SourceSpec(name=source_name(Path(p).resolve().name, used), kind="dir", path=str(Path(p).resolve()),
                       priority=100 + i) for i, p in enumerate(paths)]
