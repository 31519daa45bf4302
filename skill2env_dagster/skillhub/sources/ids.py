"""Stable skill ids: the Dagster partition key of a skill, unchanged when its content changes."""

from __future__ import annotations

import hashlib
import re

MAX_ID = 180
_BAD = re.compile(r"[^a-z0-9._-]+")


def skill_id(source: str, rel_path: str) -> str:
    """`<source>__<path parts joined by __>`, lower-case, [a-z0-9._-] only; long ids end in a short hash."""
    parts = [source] + ([] if rel_path in (".", "") else rel_path.split("/"))
    cleaned = [(_BAD.sub("-", p.lower()).strip("-") or "x") for p in parts]
    sid = "__".join(cleaned).lstrip(".-_") or "skill"
    if len(sid) > MAX_ID:
        sid = f"{sid[: MAX_ID - 13]}-{_short_hash(source, rel_path)}"
    return sid


def _short_hash(source: str, rel_path: str) -> str:
    return hashlib.sha256(f"{source}\0{rel_path}".encode()).hexdigest()[:12]


def unique_ids(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Ids for (source, rel_path) pairs; two paths that clean to the same id both get a path-hash suffix."""
    first = {p: skill_id(*p) for p in pairs}
    counts: dict[str, int] = {}
    for sid in first.values():
        counts[sid] = counts.get(sid, 0) + 1
    return {p: (sid if counts[sid] == 1 else f"{sid[: MAX_ID - 13]}-{_short_hash(*p)}") for p, sid in first.items()}
