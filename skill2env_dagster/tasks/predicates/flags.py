"""Entries a bookkeeping skill flags for review: labelled conditions on ledger entries ("**Suspicious duplicates** —
same amount, same vendor, within 3 days", "**Missing receipts** — QB entries above $75 with no attachment",
"**Uncategorized transactions** — QB entries with no category").

Three condition forms are read, each exactly: a field left empty, an amount above a bound with a field left empty,
and two entries equal in two fields dated within N days of each other. A group needs two flags at least (one
condition alone is one filter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skill2env_dagster.knowledge.source import Doc, blocks, plain
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SourceRef

SECTION = re.compile(r"\b(flag|suspicious|exception|review|anomal)", re.I)
LABELLED = re.compile(r"^\s*\*\*(?P<label>[^*]{3,60})\*\*\s*(?:—|–|-|:)\s*(?P<cond>.+)$", re.S)
MISSING = re.compile(r"\bwith no (?P<field>[a-z]+)\b", re.I)
ABOVE = re.compile(r"\babove \$(?P<n>\d[\d,]*(?:\.\d+)?) with no (?P<field>[a-z]+)\b", re.I)
SAME = re.compile(r"\bsame (?P<a>[a-z]+),\s*same (?P<b>[a-z]+),?\s*within (?P<n>\d{1,2}) days?\b", re.I)
MIN_FLAGS = 2


@dataclass(frozen=True)
class Flag:
    label: str
    kind: str  # missing | above_missing | same_within
    fields: tuple[str, ...]
    value: float
    sentence: str
    ref: SourceRef


def _flag(label: str, cond: str, sentence: str, ref: SourceRef) -> Flag | None:
    if m := SAME.search(cond):
        return Flag(label, "same_within", (m.group("a").lower(), m.group("b").lower()), float(m.group("n")),
                    sentence, ref)
    if m := ABOVE.search(cond):
        return Flag(label, "above_missing", (m.group("field").lower(),), float(m.group("n").replace(",", "")),
                    sentence, ref)
    if m := MISSING.search(cond):
        return Flag(label, "missing", (m.group("field").lower(),), 0.0, sentence, ref)
    return None


def compile_flags(docs: list[Doc]) -> list[Flag]:
    """The labelled flags of the first section that states at least MIN_FLAGS of them, in the skill's order."""
    for doc in docs:
        by_section: dict[str, list[Flag]] = {}
        for b in blocks(doc):
            if b.kind != "item" or not SECTION.search(b.section):
                continue
            m = LABELLED.match(b.text)
            if not m:
                continue
            f = _flag(plain(m.group("label")).strip(), plain(m.group("cond")), " ".join(plain(b.text).split()),
                      doc.ref(b.line))
            if f:
                by_section.setdefault(b.section, []).append(f)
        for flags in by_section.values():
            if len({f.label for f in flags}) >= MIN_FLAGS:
                return flags
    return []


def predicate(flags: list[Flag]) -> Predicate:
    first = flags[0]
    params = {"flags": [{"label": f.label, "kind": f.kind, "fields": list(f.fields), "value": f.value,
                         "sentence": f.sentence, "line": f.ref.line} for f in flags],
              "sources": [f.ref.label for f in flags],
              # What the flags are about, by name: the skill's warnings that name one bear on the task wherever
              # they are written ("Never delete duplicates without explicit confirmation").
              "terms": sorted({w for f in flags for w in re.findall(r"[A-Za-z]{5,}", f.label)}
                              | {w.lower() for f in flags for w in re.findall(r"[A-Za-z]{5,}", f.label)})}
    statement = "; ".join(f.sentence for f in flags)
    return Predicate(id="R0", kind="flag", subject="ledger entries", statement=statement[:400], params=params,
                     source=first.ref)
