"""Requirements a skill states in its frontmatter: environment variables, MCP servers, binaries and operating
systems it needs.

Hubs put them in different places: `requires: {env: [...], mcp: [...]}` at the top level, `requires: [bash]`, or
inside a metadata block (`metadata: {"openclaw": {"requires": {"env": ["X_API_KEY"], "bins": ["gh"]}}}`, sometimes
as a JSON string, sometimes with `primaryEnv`/`requiredEnv` keys). The walker below reads any of those shapes; the
rule book decides which key names mean which kind and what an item of each kind is evidence for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from skill2env_dagster.models.skill import Finding
from skill2env_dagster.skillhub.screen.rules import CompiledBook
from skill2env_dagster.skillhub.screen.scoring import Signal

MAX_DEPTH = 8
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")  # hubs name variables in upper case; prose values are not names


@dataclass(frozen=True)
class Requirement:
    kind: str  # env | mcp | bins | os
    item: str
    path: str  # dotted frontmatter path, for the evidence text


def stated_requirements(frontmatter: dict[str, Any], book: CompiledBook) -> list[Requirement]:
    """Every (kind, item) the frontmatter states as required, in document order, optional subtrees skipped."""
    out: list[Requirement] = []
    seen: set[tuple[str, str]] = set()
    for req in _walk(frontmatter, "", None, book, 0):
        if (req.kind, req.item) not in seen:
            seen.add((req.kind, req.item))
            out.append(req)
    return out


def _walk(node: Any, path: str, kind: str | None, book: CompiledBook, depth: int) -> Iterator[Requirement]:
    if depth > MAX_DEPTH:
        return
    if isinstance(node, str) and node.lstrip().startswith("{"):
        node = _json(node)
    if isinstance(node, dict):
        for key, value in node.items():
            k = str(key)
            if book.optional_key.search(k):
                continue
            sub_kind = _kind_of(k, book) or kind
            if book.requires_key.search(k) and isinstance(value, list):
                sub_kind = book.book.requirements.lists_as
            yield from _walk(value, f"{path}.{k}" if path else k, sub_kind, book, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, path, kind, book, depth + 1)
    elif kind is not None and isinstance(node, str) and node.strip():
        for item in node.replace(",", " ").split() if kind != "mcp" else [node.strip()]:
            if kind != "env" or _ENV_NAME.match(item):
                yield Requirement(kind, item.strip(), path)


def _kind_of(key: str, book: CompiledBook) -> str | None:
    return next((kind for kind, rx in book.requirement_kinds.items() if rx.search(key)), None)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def requirement_signals(requirements: list[Requirement], skill_md: str, skill_file: str,
                        book: CompiledBook) -> list[Signal]:
    """One signal per requirement rule per matching item, with the frontmatter line that states it."""
    signals: list[Signal] = []
    for rule, name, unless_any in book.requirement_rules:
        if unless_any is not None and any(r.kind == rule.kind and unless_any.search(r.item) for r in requirements):
            continue
        for req in requirements:
            if req.kind == rule.kind and name.search(req.item):
                text = f"{req.path}: {req.item}"
                finding = Finding(code=rule.code, rule=rule.id, file=skill_file, line=frontmatter_line(skill_md,
                                  req.item), text=text[:200])
                signals.append(Signal(rule.id, rule.weight, 1.0, finding))
    return signals


def frontmatter_line(skill_md: str, needle: str) -> int:
    """1-based line of the first frontmatter line containing `needle` (0 when it is not found there)."""
    lines = skill_md.split("\n")
    if not lines or lines[0].strip() != "---":
        return 0
    for n, line in enumerate(lines[1:], 2):
        if line.strip() == "---":
            return 0
        if needle in line:
            return n
    return 0
