"""Values that comply with, breach, sit on the boundary of, or nearly match an entry-level predicate.

A world needs more than random breaches: boundary values ("exactly 50 characters" under "under 50") and near
misses (`StatevectorSampler` when `Sampler` is forbidden, `--force-with-lease` when `--force` is) are where the
skill's exact wording decides the answer and a naive keyword or off-by-one approach fails. Every generated value
is checked against `entry_rules` before it is used, so a role never lies.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Literal

from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.tasks.predicates.entry_rules import convert, violation

Role = Literal["comply", "breach", "boundary", "near_miss"]
MAX_TEXT = 1400  # longest text a limit may force into one field
_PAD = ["alpha", "bravo", "delta", "kilo", "lima", "oscar", "sierra", "tango", "victor"]


class Words:
    """A seeded source of the skill's own words (falling back to neutral ones for tiny skills)."""

    def __init__(self, vocabulary: list[str], rng: random.Random) -> None:
        pool = [w for w in vocabulary if re.fullmatch(r"[a-z][a-z]{2,11}", w)]
        self.pool = pool + [w for w in _PAD if w not in pool] if len(pool) < 12 else pool
        self.rng = rng

    def pick(self, n: int = 1) -> list[str]:
        return [self.rng.choice(self.pool) for _ in range(n)]

    def distinct(self, n: int) -> list[str]:
        return self.rng.sample(self.pool, min(n, len(self.pool)))

    def of_length(self, n: int) -> str | None:
        fits = [w for w in self.pool if len(w) == n]
        return self.rng.choice(fits) if fits else None


def text_chars(n: int, words: Words) -> str:
    """A phrase of exactly n characters (n ≥ 1) made of the skill's words (digits pad the last gap)."""
    out: list[str] = []
    while True:
        used = len(" ".join(out))
        left = n - used - (1 if out else 0)
        if left <= 0:
            break
        if left <= 12:
            w = words.of_length(left) or ("v" + str(2 * 10 ** (left - 2)) if 2 <= left <= 6 else
                                          "2" if left == 1 else None)
            if w:
                out.append(w)
                break
        out.append(words.rng.choice([w for w in words.pool if len(w) <= max(3, left - 4)] or ["x"]))
    text = " ".join(out)[:n]
    return text if len(text) == n and not text.endswith(" ") else (text.rstrip() + "x" * n)[:n]


def text_words(n: int, words: Words) -> str:
    return " ".join(words.pick(max(1, n)))


def text_sentences(n: int, words: Words) -> str:
    return " ".join(" ".join(words.pick(words.rng.randint(3, 6))).capitalize() + "." for _ in range(max(1, n)))


def text_items(n: int, words: Words) -> str:
    return "; ".join(words.distinct(max(1, n)) if n <= len(words.pool) else words.pick(n))


_TEXT: dict[str, Callable[[int, Words], str]] = {"characters": text_chars, "words": text_words,
                                                 "sentences": text_sentences, "items": text_items}


def _limit_measure(p: Predicate, role: Role, rng: random.Random) -> float:
    """boundary = the limit itself; near_miss = one step inside it; breach/comply = further out/in."""
    c, lim = p.params["comparator"], float(p.params["value"])
    upper = c in ("lt", "le")
    step = 1.0 if lim >= 4 or lim.is_integer() else 0.1
    if role == "boundary":
        return lim
    if role == "near_miss":
        return lim - step if upper else lim + step
    k = rng.randint(1, max(1, int(max(step, round(lim * 0.4)) / step))) * step
    if role == "breach":
        return lim + k if upper else max(0.0, lim - k)
    return max(step, lim - k) if upper else lim + k


def limit_value(p: Predicate, role: Role, words: Words) -> str | None:
    unit, numeric = p.params["unit"], p.params.get("numeric", False)
    m = _limit_measure(p, role, words.rng)
    if numeric:
        if unit == "percent":
            m = min(m, 100.0)
        return str(int(m)) if float(m).is_integer() else f"{m:.1f}"
    n = round(m)
    if n < 1 or n > MAX_TEXT:
        return None
    return _TEXT[unit](n, words)


def _near_token(token: str, words: Words) -> str | None:
    """A longer name that contains the token but is not it (a whole-token match must not fire)."""
    if re.match(r"[A-Za-z0-9]", token[-1]):
        return token + ("_" + words.pick()[0] if token[-1].islower() else words.pick()[0].capitalize())
    if re.match(r"[A-Za-z]", token[0]):
        return words.pick()[0].capitalize() + token if token[0].isupper() else words.pick()[0] + "_" + token
    return None


def code_line(core: str, words: Words) -> str:
    """A code-ish line around `core` (a token or a neutral name), shaped by what the core looks like."""
    a, b = words.pick(2)
    if core.startswith("-"):
        return f"{a} {core} {b}.txt"
    if ":" in core or "=" in core:
        return f"{core}  # {a} {b}"
    if core.endswith(")"):
        return f"{a}_{b} = {core}"
    if re.fullmatch(r"[\w.]+", core):
        return f"{a}_{b} = {core}({words.pick()[0]})"
    return f"{a} {core} {b}"


def token_value(p: Predicate, role: Role, words: Words) -> str | None:
    tok = p.params["token"]
    neutral = f"{words.pick()[0]}_{words.pick()[0]}"
    if p.kind in ("forbid_token", "replace_token"):
        if role in ("breach", "boundary"):
            return code_line(tok, words)
        if role == "near_miss":
            near = _near_token(tok, words)
            return code_line(near, words) if near else None
        good = p.params.get("replacement") or neutral
        return code_line(good if words.rng.random() < 0.5 else neutral, words)
    # require_token
    if role in ("comply", "boundary"):
        return code_line(tok, words)
    if role == "near_miss":
        near = _near_token(tok, words)
        return code_line(near, words) if near else None
    return code_line(neutral, words)


_DAMAGE = {
    "kebab_case": ["snake_case", "pascal_case", "camel_case", "spaced", "upper"],
    "snake_case": ["kebab_case", "camel_case", "pascal_case", "spaced", "upper"],
    "camel_case": ["snake_case", "kebab_case", "pascal_case", "spaced"],
    "pascal_case": ["snake_case", "kebab_case", "camel_case", "spaced"],
    "upper_snake": ["snake_case", "kebab_case", "pascal_case", "spaced"],
}
_MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December"]


def _styled(style: str, parts: list[str]) -> str:
    if style == "spaced":
        return " ".join(parts)
    if style == "upper":
        return "-".join(parts).upper()
    return convert(style, "_".join(parts))


def format_value(p: Predicate, role: Role, words: Words) -> str | None:
    conv, rng = p.params["convention"], words.rng
    if conv in _DAMAGE:
        parts = words.distinct(rng.randint(2, 3))
        if role == "near_miss":
            parts = [*parts[:-1], parts[-1] + str(rng.randint(2, 9))]  # digits are allowed inside a name
            return convert(conv, "_".join(parts))
        if role == "breach":
            return _styled(rng.choice(_DAMAGE[conv]), parts)
        return convert(conv, "_".join(parts))
    if conv == "iso_date":
        y, m, d = rng.randint(2019, 2026), rng.randint(1, 12), rng.randint(1, 28)
        if role == "near_miss":
            return f"{rng.choice([2021, 2022, 2023, 2025])}-02-29"  # looks right, is not a calendar date
        if role == "boundary":
            return f"{rng.choice([2020, 2024])}-02-29"  # a real leap day
        if role == "breach":
            return rng.choice([f"{y}/{m:02d}/{d:02d}", f"{y}{m:02d}{d:02d}", f"{d} {_MONTH_NAMES[m - 1]} {y}",
                               f"{_MONTH_NAMES[m - 1][:3]} {d}, {y}", f"{y}-{m}-{d}" if m < 10 or d < 10 else
                               f"{y}.{m:02d}.{d:02d}"])
        return f"{y}-{m:02d}-{d:02d}"
    if conv == "semver":
        a, b, c = rng.randint(0, 4), rng.randint(0, 20), rng.randint(0, 30)
        if role == "near_miss":
            return f"{a + 1}.{b}.{c}-rc.{rng.randint(1, 4)}"
        if role == "breach":
            return rng.choice([f"v{a}.{b}.{c}", f"{a}.{b}", f"{a}.{b}.{c}.{rng.randint(1, 9)}", f"0{a + 1}.{b}.{c}"])
        return f"{a}.{b}.{c}"
    if conv == "conventional_commit":
        kind = rng.choice(["feat", "fix", "docs", "perf", "refactor", "chore"])
        scope, subj = words.pick()[0], " ".join(words.pick(rng.randint(2, 5)))
        if role == "near_miss":
            return f"{kind}!: {subj}"
        if role == "breach":
            return rng.choice([f"{kind.capitalize()}: {subj}", f"{kind}({scope}) {subj}", f"{kind}:{subj}",
                               f"{kind}ure({scope}): {subj}" if kind == "feat" else f"update({scope}): {subj}"])
        return f"{kind}({scope}): {subj}"
    if conv == "hex_color":
        hx = "".join(rng.choice("0123456789abcdef") for _ in range(6))
        if role == "near_miss":
            return "#" + hx.upper()
        if role == "breach":
            return rng.choice([hx, "#" + hx[:5], "#" + hx[:5] + "g", f"rgb({rng.randint(0, 255)}, 0, 0)"])
        return "#" + hx
    return None


def expected_breach(p: Predicate, role: Role) -> bool:
    """Whether a value of this role breaches the predicate: the contract value_for checks every value against."""
    if role in ("comply", "breach"):
        return role == "breach"
    if p.kind == "limit":
        return role == "boundary" and p.params["comparator"] in ("lt", "gt")
    if p.kind in ("forbid_token", "replace_token"):
        return role == "boundary"
    if p.kind == "require_token":
        return role == "near_miss"
    return role == "near_miss" and p.params["convention"] == "iso_date"


def value_for(p: Predicate, role: Role, words: Words) -> str | None:
    """A value of the wanted role, checked against the reference predicate (None when none can be made)."""
    if p.kind == "limit":
        v = limit_value(p, role, words)
    elif p.kind in ("forbid_token", "require_token", "replace_token"):
        v = token_value(p, role, words)
    elif p.kind == "format":
        v = format_value(p, role, words)
    else:
        raise ValueError(p.kind)
    if v is None or "\n" in v or "," in v or "\t" in v:
        return None
    return v if (violation(p, v) is not None) == expected_breach(p, role) else None
