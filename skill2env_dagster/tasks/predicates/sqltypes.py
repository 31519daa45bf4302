"""SQL column types a skill forbids, each with the type to use instead ("DO NOT use `timestamp` (without time
zone); DO use `timestamptz` instead", "Avoid `money`; use `numeric`").

A type is recognised only when it is a SQL type (a known type name, with `(n)`-style parameters allowed), so prose
tokens never become rules; `(n)` in the skill's spelling stands for any length, and "or any other precision
specification" after a parameterised type widens it to every precision. A group needs three forbidden types: the
answer is then decided by the list, with its spelling rules, not by one grep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skill2env_dagster.knowledge.source import Doc, plain
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SourceRef

# SQL type names (standard and PostgreSQL); a forbidden or replacement type must be one of these.
TYPE_NAMES = frozenset([
    "bigint", "int8", "integer", "int", "int4", "smallint", "int2", "tinyint", "mediumint", "serial", "serial4",
    "bigserial", "serial8", "smallserial", "real", "float", "float4", "float8", "double", "numeric", "decimal",
    "number", "money", "smallmoney", "text", "varchar", "varchar2", "nvarchar", "char", "nchar", "character",
    "bpchar", "clob", "blob", "timestamp", "timestamptz", "datetime", "datetime2", "date", "time", "timetz",
    "interval", "boolean", "bool", "bit", "bytea", "uuid", "json", "jsonb", "xml", "inet", "cidr", "macaddr",
    "citext", "tsvector", "point",
])
RULE = re.compile(r"(?:do not|don't|never|avoid)\s+use\s+(?P<bad>(?:`[^`]+`(?:\s*(?:,|or|and|/)\s*)?)+)(?P<qual>[^;.]*)"
                  r"[;.]?\s*(?:do\s+)?use\s+`(?P<good>[^`]+)`", re.I)
MIN_TYPES = 3


@dataclass(frozen=True)
class Forbidden:
    spelling: str  # as the skill writes it: "varchar(n)", "timestamptz(0)"
    name: str  # the type name: varchar, timestamptz
    parameterised: str  # "" (the type, with or without parameters) | "any" (only with parameters) | "0" (those)
    instead: str
    sentence: str
    ref: SourceRef


def type_name(spelling: str) -> str:
    return re.split(r"[\s(]", spelling.strip().lower(), maxsplit=1)[0]


def _forbidden(spelling: str, qualifier: str, instead: str, sentence: str, ref: SourceRef) -> Forbidden | None:
    name = type_name(spelling)
    if name not in TYPE_NAMES or type_name(instead) not in TYPE_NAMES | {"generated"}:
        return None
    m = re.search(r"\(([^)]*)\)", spelling)
    if m is None:
        params = ""
    elif m.group(1).strip().lower() in ("n", "p", "n,m", "p,s") or re.search(r"any other", qualifier, re.I):
        params = "any"
    else:
        params = m.group(1).strip()
    return Forbidden(spelling.strip(), name, params, instead.strip(), sentence, ref)


def compile_types(docs: list[Doc]) -> list[Forbidden]:
    """Every forbidden SQL type with its replacement, from the first document that names three."""
    for doc in docs:
        found: dict[str, Forbidden] = {}
        for n, line in doc.unfenced():
            m = RULE.search(line)
            if not m:
                continue
            sentence = " ".join(plain(line).split()).lstrip("-* ").strip()
            for spelling in re.findall(r"`([^`]+)`", m.group("bad")):
                f = _forbidden(spelling, m.group("qual"), m.group("good"), sentence, doc.ref(n))
                if f and f.spelling.lower() not in found:
                    found[f.spelling.lower()] = f
        if len({f.name for f in found.values()}) >= MIN_TYPES:
            return list(found.values())
    return []


def predicate(types: list[Forbidden]) -> Predicate:
    first = types[0]
    params = {"types": [{"spelling": t.spelling, "name": t.name, "parameterised": t.parameterised,
                         "instead": t.instead, "sentence": t.sentence, "line": t.ref.line} for t in types],
              "sources": sorted({t.ref.label for t in types})}
    statement = "Forbidden column types: " + "; ".join(f"{t.spelling} (use {t.instead})" for t in types)
    return Predicate(id="R0", kind="sqltype", subject="column types", statement=statement[:400], params=params,
                     source=first.ref)


def declared(type_text: str, types: list[dict[str, object]]) -> dict[str, object] | None:
    """The forbidden type a column's declared type is, under the skill's spelling rules (None: allowed)."""
    text = " ".join(type_text.lower().split())
    name = type_name(text)
    params = re.search(r"\(([^)]*)\)", text)
    for t in types:
        if t["name"] != name:
            continue
        if t["parameterised"] == "" and not re.search(r"\bwith time zone\b", text):
            return t  # the type itself, with or without parameters ("timestamp(3)" is still without time zone)
        if t["parameterised"] == "any" and params is not None:
            return t  # only a parameterised spelling ("varchar(n)", "timestamptz(0) or any other precision")
        if params is not None and str(t["parameterised"]).replace(" ", "") == params.group(1).replace(" ", ""):
            return t
    return None
