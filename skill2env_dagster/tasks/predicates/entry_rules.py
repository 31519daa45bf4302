"""Our reference implementation of the entry-level predicates (limits, tokens, formats): what the expected answers
of a task are computed with at creation time. The solution scripts re-derive answers from the world's files with
their own code, so the Oracle gate cross-checks the two.

Semantics (the instruction and the shipped notes state the ones a solver could read two ways):
- a limit compares a measure of the field (characters, words, sentences, `; `-separated items, or the number
  itself) with the limit using the rule's own comparator — "under 50" is < 50, "at most 50" is ≤ 50;
- a token matches only as a whole token: not preceded or followed by a letter, digit, `_` or `-`;
- a format is a full match of the convention's pattern (dates must also be real calendar dates).
"""

from __future__ import annotations

import datetime as dt
import re

from skill2env_dagster.models.blueprint import Predicate

COMPARATORS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}
FORMATS: dict[str, str] = {
    "kebab_case": r"[a-z0-9]+(?:-[a-z0-9]+)*",
    "snake_case": r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*",
    "camel_case": r"[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+",
    "pascal_case": r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*",
    "upper_snake": r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*",
    "iso_date": r"\d{4}-\d{2}-\d{2}",
    "semver": r"(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?",
    "conventional_commit": r"(?:feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)"
                           r"(?:\([a-z0-9-]+\))?!?: \S.*",
    "hex_color": r"#[0-9a-fA-F]{6}",
}
FORMAT_NAMES = {"kebab_case": "kebab-case", "snake_case": "snake_case", "camel_case": "camelCase",
                "pascal_case": "PascalCase", "upper_snake": "UPPER_SNAKE_CASE",
                "iso_date": "ISO 8601 date (YYYY-MM-DD)", "semver": "semantic version (MAJOR.MINOR.PATCH)",
                "conventional_commit": "Conventional Commits header", "hex_color": "#RRGGBB hex colour"}
FIXABLE_FORMATS = {"kebab_case", "snake_case", "camel_case", "pascal_case", "upper_snake", "iso_date", "semver"}
TEXT_UNITS = {"characters", "words", "sentences", "items"}


def token_pattern(token: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(token)}(?![\w-])")


def measure(unit: str, value: str) -> float:
    """The quantity a limit is about."""
    if unit == "characters":
        return len(value)
    if unit == "words":
        return len(value.split())
    if unit == "sentences":
        return len(re.findall(r"[.!?](?:\s|$)", value))
    if unit == "items":
        return len([v for v in value.split(";") if v.strip()])
    return float(value)


def holds(comparator: str, measured: float, limit: float) -> bool:
    return {"lt": measured < limit, "le": measured <= limit, "gt": measured > limit, "ge": measured >= limit,
            "eq": measured == limit}[comparator]


def _valid_date(value: str) -> bool:
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def conforms(convention: str, value: str) -> bool:
    if not re.fullmatch(FORMATS[convention], value):
        return False
    return convention != "iso_date" or _valid_date(value)


def violation(p: Predicate, value: str) -> str | None:
    """The evidence of a breach (the measured number, the token, the offending value), or None when it holds."""
    k = p.params
    if p.kind == "limit":
        m = measure(k["unit"], value)
        return None if holds(k["comparator"], m, k["value"]) else number(m)
    if p.kind in ("forbid_token", "replace_token"):
        return k["token"] if token_pattern(k["token"]).search(value) else None
    if p.kind == "require_token":
        return None if token_pattern(k["token"]).search(value) else k["token"]
    if p.kind == "format":
        return None if conforms(k["convention"], value) else value
    raise ValueError(f"{p.kind} is not an entry-level predicate")


def number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def fix(p: Predicate, value: str) -> str:
    """The one correct repair of a breaching value (replacements and fixable formats only)."""
    k = p.params
    if p.kind == "replace_token":
        return token_pattern(k["token"]).sub(k["replacement"], value)
    if p.kind == "format" and k["convention"] in FIXABLE_FORMATS:
        return convert(k["convention"], value)
    raise ValueError(f"{p.kind} has no deterministic repair")


def words_of(name: str) -> list[str]:
    """The words of an identifier in any case style (camel humps, separators, spaces)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[\s_\-./]+", spaced) if w]


_MONTHS = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"])}


def _date(value: str) -> str:
    v = value.strip()
    numeric = (re.fullmatch(r"(\d{4})[/.](\d{1,2})[/.](\d{1,2})", v) or re.fullmatch(r"(\d{4})(\d{2})(\d{2})", v)
               or re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", v))
    if numeric:
        y, mo, d = numeric.groups()
    elif m := re.fullmatch(r"(\d{1,2}) ([A-Za-z]{3})[a-z]* (\d{4})", v):
        d, mon, y = m.groups()
        mo = str(_MONTHS[mon.lower()])
    elif m := re.fullmatch(r"([A-Za-z]{3})[a-z]* (\d{1,2}), (\d{4})", v):
        mon, d, y = m.groups()
        mo = str(_MONTHS[mon.lower()])
    else:
        return v
    return f"{int(y):04d}-{int(mo):02d}-{int(d):02d}"


def _semver(value: str) -> str:
    v = value.strip().lstrip("vV")
    parts = v.split("-", 1)
    nums = [str(int(x)) for x in parts[0].split(".") if x.isdigit()][:3]
    nums += ["0"] * (3 - len(nums))
    return ".".join(nums) + (f"-{parts[1]}" if len(parts) > 1 else "")


def convert(convention: str, value: str) -> str:
    w = words_of(value)
    if convention == "kebab_case":
        return "-".join(w)
    if convention == "snake_case":
        return "_".join(w)
    if convention == "upper_snake":
        return "_".join(w).upper()
    if convention == "camel_case":
        return w[0] + "".join(x.capitalize() for x in w[1:])
    if convention == "pascal_case":
        return "".join(x.capitalize() for x in w)
    if convention == "iso_date":
        return _date(value)
    if convention == "semver":
        return _semver(value)
    raise ValueError(convention)


def describe(p: Predicate) -> str:
    """The predicate in one precise sentence (for blueprints and rubric bullets, never for the instruction)."""
    k = p.params
    if p.kind == "limit":
        return f"{p.subject}: {k['unit']} {COMPARATORS.get(k['comparator'], k['comparator'])} {number(k['value'])}"
    if p.kind == "forbid_token":
        return f"no `{k['token']}`"
    if p.kind == "require_token":
        return f"must contain `{k['token']}`"
    if p.kind == "replace_token":
        return f"`{k['token']}` must become `{k['replacement']}`"
    if p.kind == "format":
        return f"{p.subject} in {FORMAT_NAMES[k['convention']]}"
    return p.statement
