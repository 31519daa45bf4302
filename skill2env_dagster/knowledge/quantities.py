"""Numeric limits ("under 50 characters", "at most 3 retries", "between 10 and 20 words") and documented defaults
("Option | Default" tables, "defaults to 8080", "(default: 30)")."""

from __future__ import annotations

import re

from skill2env_dagster.knowledge.rules import exception_clause
from skill2env_dagster.knowledge.source import Block, plain, sentences
from skill2env_dagster.models.knowledge import Comparator, Default, Threshold

# Spoken unit -> normalised unit (what a predicate can measure).
UNITS = {
    "character": "characters", "characters": "characters", "chars": "characters", "char": "characters",
    "word": "words", "words": "words", "line": "lines", "lines": "lines", "sentence": "sentences",
    "sentences": "sentences", "paragraph": "paragraphs", "paragraphs": "paragraphs", "bullet": "items",
    "bullets": "items", "item": "items", "items": "items", "point": "items", "points": "items", "entries": "items",
    "tags": "items", "keywords": "items", "options": "items", "questions": "items", "examples": "items",
    "%": "percent", "percent": "percent", "pct": "percent",
    "second": "seconds", "seconds": "seconds", "secs": "seconds", "sec": "seconds", "s": "seconds", "ms": "ms",
    "milliseconds": "ms", "minute": "minutes", "minutes": "minutes", "mins": "minutes", "min": "minutes",
    "hour": "hours", "hours": "hours", "hrs": "hours", "hr": "hours", "h": "hours", "day": "days", "days": "days",
    "week": "weeks", "weeks": "weeks", "month": "months", "months": "months", "year": "years", "years": "years",
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "bytes": "bytes", "tokens": "tokens", "token": "tokens",
    "retries": "retries", "retry": "retries", "attempts": "attempts", "attempt": "attempts", "times": "times",
    "columns": "columns", "rows": "rows", "steps": "steps", "files": "files", "pages": "pages", "slides": "slides",
    "requests": "requests", "calls": "calls", "users": "users", "px": "px", "pt": "pt", "fps": "fps",
    "x": "times", "dpi": "dpi", "ratio": "ratio", "levels": "levels", "digits": "digits", "decimal": "decimals",
    "decimals": "decimals", "emojis": "items", "hashtags": "items", "links": "items", "sections": "sections",
}
_NUM = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_UNIT = r"\s*(%|[A-Za-z]+)"
_CMP: list[tuple[Comparator, str]] = [
    ("le", r"(?:at most|no more than|not more than|up to|maximum(?: of)?|max\.?|a maximum of|≤|<=|not exceed(?:ing)?|"
           r"no longer than|no larger than|limit(?:ed)? to|cap(?:ped)? at)"),
    ("lt", r"(?:under|less than|fewer than|below|shorter than|<|smaller than|lower than)"),
    ("ge", r"(?:at least|no less than|no fewer than|minimum(?: of)?|min\.?|a minimum of|≥|>=|not less than)"),
    ("gt", r"(?:more than|over|above|greater than|exceed(?:s|ing)?|longer than|>|larger than|higher than)"),
    ("le", r"(?:within)"),
]
Pattern = tuple[Comparator, re.Pattern[str]]
_RX: list[Pattern] = [(c, re.compile(rf"(?<![\w-]){p}\s+{_NUM}{_UNIT}", re.I)) for c, p in _CMP]
_SUFFIX: list[Pattern] = [("le", re.compile(rf"{_NUM}{_UNIT}\s+or (?:fewer|less|under)\b", re.I)),
           ("ge", re.compile(rf"{_NUM}{_UNIT}\s+or (?:more|greater|above|longer)\b", re.I)),
           ("ge", re.compile(rf"(?<![\w.]){_NUM}\+\s*([A-Za-z]+)", re.I))]
_RANGE = re.compile(rf"\bbetween\s+{_NUM}\s*(?:%|[A-Za-z]+)?\s+and\s+{_NUM}{_UNIT}", re.I)
_VERBS = re.compile(r"\b(must|should|shall|needs? to|has to|have to|is|are|be|being|stay|stays|keep|keeps|kept|"
                    r"remain|limit|limited|at|of|to|in|with|has|have|contain|contains|take|takes|use|uses|run|"
                    r"runs|respond|responds|resolve|reply)\b", re.I)
_STOP = {"the", "a", "an", "your", "each", "every", "all", "any", "this", "that", "its", "their", "our", "it", "and",
         "or", "for", "if", "when", "so", "then", "try", "aim", "target", "ideally", "typically", "usually"}


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _subject(text: str, pos: int) -> str:
    """The thing measured: the last few content words before the limit, skipping verbs such as 'should be'."""
    head = text[:pos]
    parts = _VERBS.split(head)
    for chunk in reversed(parts[::2]):
        words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]*", chunk) if w.lower() not in _STOP]
        if words:
            return " ".join(words[-3:])
    return ""


def thresholds_in(block: Block) -> list[Threshold]:
    out: list[Threshold] = []
    if block.kind not in ("paragraph", "item"):
        return out
    for raw in sentences(block.text):
        text = plain(raw)
        if len(text) > 400:
            continue
        seen: set[tuple[int, int]] = set()
        found: list[tuple[Comparator, float, str, int, int]] = []
        for m in _RANGE.finditer(text):
            unit = UNITS.get(m.group(3).lower())
            if unit:
                found.append(("ge", _num(m.group(1)), unit, m.start(), m.end()))
                found.append(("le", _num(m.group(2)), unit, m.start(), m.end()))
                seen.add((m.start(), m.end()))
        for cmp, rx in _RX + _SUFFIX:
            for m in rx.finditer(text):
                if any(a <= m.start() < b for a, b in seen):
                    continue
                unit = UNITS.get(m.group(2).lower())
                if unit:
                    found.append((cmp, _num(m.group(1)), unit, m.start(), m.end()))
                    seen.add((m.start(), m.end()))
        for cmp, value, unit, start, _end in found:
            out.append(Threshold(subject=_subject(text, start), unit=unit, comparator=cmp, value=value,
                                 text=text, scope=exception_clause(text), section=block.section,
                                 ref=block.doc.ref(block.line_of(text))))
    return out


_DEFAULT_PROSE = [
    re.compile(r"`([^`]{1,40})`[^.`]{0,40}?\bdefaults? (?:to|is|are|of)\s+`?([^`.,;)\s]{1,40})`?", re.I),
    re.compile(r"`([^`]{1,40})`\s*\((?:default|defaults to)[:=]?\s*`?([^`),;]{1,40})`?\)", re.I),
    re.compile(r"\b([A-Za-z][\w -]{1,30}?)\s+defaults? to\s+`?([^`.,;)]{1,40})`?", re.I),
]


def defaults_in(block: Block) -> list[Default]:
    out: list[Default] = []
    if block.kind == "table" and len(block.rows) >= 3:
        header = [h.lower() for h in block.rows[0]]
        col = next((i for i, h in enumerate(header) if re.search(r"\bdefault", h)), None)
        if col is not None and col > 0:
            for row, line in zip(block.rows[1:], block.row_lines[1:], strict=False):
                if len(row) > col and row[0] and row[col] and row[col] not in ("-", "—", "n/a", "none", ""):
                    out.append(Default(key=row[0][:60], value=row[col][:60], text=" | ".join(row)[:300],
                                       origin="table", ref=block.doc.ref(line)))
        return out
    if block.kind not in ("paragraph", "item"):
        return out
    for raw in sentences(block.text):
        for rx in _DEFAULT_PROSE:
            m = rx.search(raw)
            if m:
                key, value = plain(m.group(1)).strip(), plain(m.group(2)).strip()
                if key and value and key.lower() not in ("it", "this", "that", "which", "the value"):
                    out.append(Default(key=key[:60], value=value[:60], text=plain(raw)[:300], origin="prose",
                                       ref=block.doc.ref(block.line_of(plain(raw)))))
                break
    return out

