"""Content digests and the canonical JSON they are computed over: the bottom of the package.

Every content address (a bundle digest, a prompt template's hash, a code version, a cache key) is a SHA-256 of
bytes or of canonical JSON, so two equal values always hash the same wherever they are computed. This module
imports nothing from the package, so the registry, the code versions and the prompt loader can all use it without
depending on one another.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_json(obj: object) -> str:
    """Key-sorted compact JSON: the basis for every content digest we compute over structured data."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest_model(model: BaseModel) -> str:
    return sha256_bytes(canonical_json(model.model_dump(mode="json")).encode())
