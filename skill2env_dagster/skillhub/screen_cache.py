"""Screening results reused across crawls: a nightly re-crawl of an unchanged hub re-read every skill's files but
re-screened them too, and screening is most of a warm run's crawl (about 0.2 s per skill here).

A result is keyed by everything that decides it: the skill's bundle digest (every file's bytes), its SKILL.md path
and folder name (the parser reads both), the crawl settings other than cache folders (and the content of a custom
rule book), and the code version of the whole `skillhub` package with the rule book (`artifacts.SKILLHUB_SCOPE`).
A change to any of them misses the cache. Entries are plain JSON written atomically; one that does not validate is
ignored and rewritten.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.models.skill import Finding
from skill2env_dagster.skillhub.config import CrawlSettings

log = logging.getLogger(__name__)
_FINDINGS = TypeAdapter(list[Finding])


@lru_cache(maxsize=1)
def screening_code_version() -> str:
    from skill2env_dagster.artifacts import SKILLHUB_SCOPE  # the one scope of the crawl's code
    from skill2env_dagster.versions import code_version

    return code_version(SKILLHUB_SCOPE)


def cache_key(settings: CrawlSettings, bundle_digest: str, skill_file: str, folder_name: str) -> str:
    decisive = settings.model_dump(mode="json", exclude={"cache_dir", "screen_cache_dir"})
    rules = settings.screen.rules_path  # a rule book of the user's own: its content decides, not its path
    rule_book = sha256_bytes(Path(rules).read_bytes()) if rules else ""
    return sha256_bytes(canonical_json({"settings": decisive, "rules": rule_book, "bundle": bundle_digest,
                                        "skill_file": skill_file, "folder": folder_name,
                                        "code": screening_code_version()}).encode())


def load(folder: Path, key: str) -> list[Finding] | None:
    path = folder / f"{key}.json"
    try:
        return _FINDINGS.validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as e:  # a damaged entry is a miss, never a wrong verdict
        log.warning("screen cache entry %s unusable (%s): screening again", path.name, type(e).__name__)
        return None


def save(folder: Path, key: str, findings: list[Finding]) -> None:
    atomic_write_text(folder / f"{key}.json", _FINDINGS.dump_json(findings).decode())
