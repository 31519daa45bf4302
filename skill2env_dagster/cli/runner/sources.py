"""What to crawl, from the command line: folders, `GIT_URL@REF` repositories and `--sources` files, combined into
one sources file in the run's folder (what the code location and a later `dagster dev` read).

Source names are the first part of every skill id (the partition key), so they are derived stably: a folder's
name, a repository's name without `.git`, made unique in argument order; a `--sources` file keeps its names.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.cli.runner.home import RunnerError
from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig, SourceSpec, load_sources_config, source_name


def _is_url(text: str) -> bool:
    """A complete clone URL: scheme://host/path, scp-like user@host:path, or an existing local repository."""
    if "://" in text:
        return "/" in text.split("://", 1)[1].strip("/")
    if text.startswith("git@"):
        return ":" in text
    return Path(text).is_dir()


def parse_git(item: str) -> tuple[str, str] | None:
    """(url, ref) when `item` names a git repository, optionally pinned with a trailing `@REF`; else None."""
    url, sep, ref = item.rpartition("@")
    if sep and ref and ":" not in ref and _is_url(url):
        return url, ref
    if "://" in item or item.startswith("git@") or item.endswith(".git"):
        return item, "HEAD"
    return None


def _repo_name(url: str) -> str:
    tail = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return tail[:-4] if tail.endswith(".git") else tail


def cli_sources(items: list[str], taken: set[str]) -> list[SourceSpec]:
    """A dir source per existing folder, a git source per repository argument, in order (earlier wins dedup)."""
    specs: list[SourceSpec] = []
    for i, item in enumerate(items):
        if Path(item).is_dir():
            path = Path(item).resolve()
            specs.append(SourceSpec(name=source_name(path.name, taken), kind="dir", path=str(path), priority=100 + i))
        elif (git := parse_git(item)) is not None:
            url, ref = git
            if "://" not in url and not url.startswith("git@"):
                url = str(Path(url).resolve())
            specs.append(SourceSpec(name=source_name(_repo_name(url), taken), kind="git", url=url, ref=ref,
                                    priority=100 + i))
        else:
            raise RunnerError(f"{item!r} is neither a folder nor a git repository (GIT_URL@REF)")
    return specs


def combine_sources(items: list[str], files: list[Path], default_settings: CrawlSettings) -> SourcesConfig:
    """Sources files first (their names and settings kept; the first file's settings win), then the arguments."""
    configs = [load_sources_config(f) for f in files]
    sources = [s for c in configs for s in c.sources]
    taken = {s.name for s in sources}
    if len(taken) < len(sources):
        raise RunnerError("two --sources files name the same source; source names must be unique")
    sources += cli_sources(items, taken)
    if not sources:
        raise RunnerError("nothing to crawl: give a SOURCE_DIR, a GIT_URL@REF or --sources FILE")
    return SourcesConfig(sources=sources, settings=configs[0].settings if configs else default_settings)


def write_sources(config: SourcesConfig, path: Path) -> None:
    """The combined file the code location reads (paths are absolute, so it works from any folder)."""
    atomic_write_text(path, yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True), sort_keys=False))
