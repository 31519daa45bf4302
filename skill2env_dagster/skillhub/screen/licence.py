"""Which licence a skill declares: its frontmatter `license` field, else the text of a LICENSE file in its folder.

Values seen in the wild are free text ("MIT License", "Apache 2.0", "Complete terms in LICENSE.txt",
"BSD-3-Clause license", "Unknown"), so the value is normalised through the alias table of the rule book and,
when it points at a file or says nothing usable, the licence file's text is matched against known signatures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skill2env_dagster.skillhub.screen.rules import CompiledBook

_EXPR_SPLIT = re.compile(r"\s+(OR|AND)\s+|\s*/\s*", re.IGNORECASE)
_POINTS_TO_FILE = re.compile(r"(?i)\b(LICEN[CS]E|COPYING)(\.\w+)?\b|\bsee\b|\bterms\b")
_KEY_LINE = re.compile(r"(?im)^\s*licen[cs]e\s*:")


@dataclass(frozen=True)
class LicenceInfo:
    """The resolved licence: SPDX-like ids (empty when unknown), where it was read, and the raw value."""

    ids: tuple[str, ...]
    any_of: bool
    file: str
    line: int
    raw: str


def resolve_licence(texts: dict[str, str], frontmatter: dict, skill_file: str, book: CompiledBook) -> LicenceInfo:
    """Resolve the declared licence; unknown licences come back with no ids."""
    raw = frontmatter.get("license", frontmatter.get("licence"))
    raw_text = "" if raw is None else str(raw).strip()
    line = _key_line(texts.get(skill_file, ""))
    if raw_text:
        ids, any_of = _from_value(raw_text, book)
        if ids:
            return LicenceInfo(ids, any_of, skill_file, line, raw_text)
        if not _POINTS_TO_FILE.search(raw_text):
            found = _from_files(texts, book)
            return found if found.ids else LicenceInfo((), False, skill_file, line, raw_text)
    found = _from_files(texts, book)
    if found.ids or not raw_text:
        return found
    return LicenceInfo((), False, skill_file, line, raw_text)


def is_allowed(info: LicenceInfo, allow: list[str]) -> bool:
    """OR-expressions need one allowed id, AND-expressions need all of them."""
    allowed = {a.lower() for a in allow}
    hits = [i.lower() in allowed for i in info.ids]
    return any(hits) if info.any_of else all(hits)


def _key_line(skill_md: str) -> int:
    m = _KEY_LINE.search(skill_md)
    return skill_md.count("\n", 0, m.start()) + 1 if m else 0


def _from_value(value: str, book: CompiledBook) -> tuple[tuple[str, ...], bool]:
    parts = [p for p in _EXPR_SPLIT.split(value.strip("()")) if p and p.upper() not in ("OR", "AND")]
    any_of = bool(re.search(r"(?i)\s+OR\s+|/", value))
    ids = tuple(x for x in (_alias(p, book) for p in parts) if x)
    return (ids, any_of) if len(ids) == len(parts) else ((), False)


def _alias(value: str, book: CompiledBook) -> str | None:
    key = " ".join(value.lower().split())
    if key in book.licence_aliases:
        return book.licence_aliases[key]
    stripped = " ".join(book.licence_strip.sub(" ", key).replace(",", " ").split())
    return book.licence_aliases.get(stripped) or book.licence_aliases.get(stripped.replace(" ", "-"))


def _from_files(texts: dict[str, str], book: CompiledBook) -> LicenceInfo:
    for path in sorted(texts):
        if "/" in path or not book.licence_files.match(path):
            continue
        head = texts[path][:3000]
        for spdx, rx in book.licence_signatures:
            if rx.search(head):
                return LicenceInfo((spdx,), False, path, 1, head.strip().split("\n", 1)[0][:200])
    return LicenceInfo((), False, "", 0, "")
