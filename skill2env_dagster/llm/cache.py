"""On-disk response cache: an unchanged prompt costs zero tokens and makes no HTTP call.

Keyed by (base URL, model, messages, parameters, schema). The key material never contains the API key, and the
stored entry holds only the validated reply text and its original token counts.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.hashing import canonical_json, sha256_bytes

log = logging.getLogger(__name__)


class CacheEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    purpose: str
    model: str
    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


def cache_key(base_url: str, model: str, messages: list[dict[str, str]], params: dict[str, object]) -> str:
    material = {"base_url": base_url.rstrip("/"), "model": model, "messages": messages, "params": params}
    return sha256_bytes(canonical_json(material).encode())


class ResponseCache:
    """One JSON file per key under `root/<k[:2]>/<k>.json`; a corrupt entry is a miss, never a crash."""

    def __init__(self, root: Path | str | None) -> None:
        self.root = Path(root) if root else None

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CacheEntry | None:
        if self.root is None:
            return None
        path = self._path(key)
        try:
            return CacheEntry.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValidationError, json.JSONDecodeError, OSError) as e:
            log.warning("llm cache entry unreadable, treating as miss path=%s err=%s", path, type(e).__name__)
            return None

    def put(self, entry: CacheEntry) -> None:
        if self.root is None:
            return
        atomic_write_text(self._path(entry.key), entry.model_dump_json(indent=1) + "\n")
