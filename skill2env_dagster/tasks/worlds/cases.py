"""The case world: items to be decided by one of the skill's reference tables.

Two readings of a table, chosen by its content:
- classify: a column lists signal words per row (e.g. a taxonomy's "Signal Words"); each case is a short note that
  contains one of them as a whole word, and its answer is that row's key; a note with none is `unknown`;
- lookup: each case names a key (in any letter case, with stray spaces); its answer is the row's value; a key that
  is not in the table — including near misses such as a plural or a longer name — is `unknown`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from skill2env_dagster.models.blueprint import Predicate

UNKNOWN = "unknown"
_SPLIT = re.compile(r"\s*[,;/]\s*")


@dataclass
class Case:
    id: str
    text: str  # the note (classify) or the key as written (lookup)
    answer: str
    kind: str  # plain | noisy | near_miss | none
    status: str = "open"
    row: int = -1  # the table row that decides the case (-1: none, the answer is unknown)


@dataclass
class CaseWorld:
    pred: Predicate
    mode: str  # classify | lookup
    key_col: str
    answer_col: str
    input_col: str
    mapping: dict[str, str]  # signal word or key -> answer
    cases: list[Case]
    scoped: bool

    def in_scope(self, c: Case) -> bool:
        return not self.scoped or c.status == "open"

    def expected(self) -> dict[str, str]:
        return {c.id: c.answer for c in self.cases if self.in_scope(c)}


def _signals(rows: list[list[str]], col: int) -> list[list[str]] | None:
    """Per row, its signal words, when the column holds word lists unique across rows."""
    lists = [[w.strip().strip('"“”').lower() for w in _SPLIT.split(r[col]) if w.strip()] for r in rows]
    multi = sum(len(x) >= 2 for x in lists)
    words = [w for x in lists for w in x]
    if multi < 0.6 * len(rows) or len(set(words)) != len(words):
        return None
    if any(not re.fullmatch(r"[a-z][a-z0-9' -]{1,30}", w) for w in words):
        return None
    return lists


def classify_column(pred: Predicate) -> int | None:
    rows = pred.params["rows"]
    for col in range(len(pred.params["columns"])):
        if col != pred.params["key"] and _signals(rows, col):
            return col
    return None


def _near(key: str, keys: set[str], rng: random.Random) -> str | None:
    for cand in (key + "s", key + " " + rng.choice(["v2", "draft", "old"]), "pre-" + key, key.rstrip("s")):
        if cand.lower() not in keys and cand != key:
            return cand
    return None


def _noisy(key: str, rng: random.Random) -> str:
    variants = [key.upper(), key.lower(), f"  {key}", f"{key} ", key.title()]
    changed = [v for v in variants if v != key]
    return rng.choice(changed) if changed else key


def build(pred: Predicate, n: int, rng: random.Random, words: list[str], *, precondition: bool = False) -> CaseWorld:
    cols, rows = pred.params["columns"], pred.params["rows"]
    key = pred.params["key"]
    sig_col = classify_column(pred)
    fillers = [w for w in words if re.fullmatch(r"[a-z]{3,12}", w)] or ["note", "update", "request", "customer"]
    cases: list[Case] = []
    if sig_col is not None:
        signals = _signals(rows, sig_col) or []
        mapping = {w: r[key] for r, ws in zip(rows, signals, strict=True) for w in ws}
        all_words = set(mapping) | {w for s in mapping for w in s.split()}
        safe_fill = [f for f in fillers if f not in all_words] or ["note"]
        for i in range(n):
            if i % 7 == 6:
                text, answer, kind = " ".join(rng.sample(safe_fill, min(3, len(safe_fill)))), UNKNOWN, "none"
            else:
                row_i = i % len(rows)
                word = rng.choice(signals[row_i])
                text = f"{rng.choice(safe_fill)} {word} {rng.choice(safe_fill)}"
                answer, kind = rows[row_i][key], "plain"
                if i % 5 == 4:
                    text, kind = text.upper(), "noisy"
            cases.append(Case(f"C{i + 1:03d}", text, answer, kind, row=-1 if answer == UNKNOWN else row_i))
        world = CaseWorld(pred, "classify", cols[key], cols[key], cols[sig_col], mapping, cases, precondition)
    else:
        value = pred.params["value"]
        mapping = {r[key].strip().lower(): r[value] for r in rows}
        keys = set(mapping)
        for i in range(n):
            row = rows[i % len(rows)]
            k, answer, kind = row[key], row[value], "plain"
            if i % 6 == 5:
                near = _near(row[key], keys, rng)
                if near:
                    k, answer, kind = near, UNKNOWN, "near_miss"
            elif i % 4 == 3:
                k, kind = _noisy(row[key], rng), "noisy"
            cases.append(Case(f"C{i + 1:03d}", k, answer, kind, row=-1 if answer == UNKNOWN else i % len(rows)))
        world = CaseWorld(pred, "lookup", cols[key], cols[value], cols[key], mapping, cases, precondition)
    if precondition:
        for c in rng.sample(cases, max(1, len(cases) // 6)):
            c.status = "closed"
    rng.shuffle(cases)
    for i, c in enumerate(cases):
        c.id = f"C{i + 1:03d}"
    _require_spread(world)
    return world


def _require_spread(world: CaseWorld) -> None:
    answers = list(world.expected().values())
    top = max(answers.count(a) for a in set(answers))
    if len(set(answers)) < 2 or top > 0.5 * len(answers):
        raise ValueError("cases: one answer dominates (a constant answer would score well)")
    if any(";" in a or "\n" in a for a in answers):
        raise ValueError("cases: answers must be single-line values without separators")
