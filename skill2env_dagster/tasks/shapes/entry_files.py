"""How an entry world becomes files (one register per team, an optional registry holding status and context,
a decoy archive, malformed rows, another delimiter), and the solution program that reads them back.

The solution program is written separately from `entry_rules` on purpose: it parses the shipped files, applies the
rules from a spec of their parameters, and writes the answer; the gates' Oracle run then checks that what we
render and what we expect agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from skill2env_dagster.tasks.compose.docs import notes_doc
from skill2env_dagster.tasks.predicates.entry_rules import describe
from skill2env_dagster.tasks.shapes.base import ShapeInput
from skill2env_dagster.tasks.worlds.entries import Entry, EntryWorld, build

DATA_DIR = "/app/register"
REGISTRY = f"{DATA_DIR}/registry.csv"


@dataclass
class EntryLayout:
    """Where the entry world lives in the container and how it is written."""

    files: dict[str, list[Entry]]  # container path -> entries in it
    sep: str
    crlf: bool
    registry: bool  # status/context live in a separate registry file
    columns: list[str]  # data-file header (id first)

    @property
    def paths(self) -> list[str]:
        return [*self.files, *([REGISTRY] if self.registry else [])]


def layout(world: EntryWorld, inp: ShapeInput) -> EntryLayout:
    split = inp.has("split_sources")
    meta = [] if split else (["status"] if world.scoped else []) + (["context"] if world.exempt else [])
    columns = ["id", *meta, *world.columns]
    groups: dict[str, list[Entry]] = {}
    for e in world.entries:
        name = e.team or "entries"
        groups.setdefault(f"{DATA_DIR}/{name}.csv", []).append(e)
    return EntryLayout(files=dict(sorted(groups.items())), sep=";" if inp.has("encoding") else ",",
                       crlf=inp.has("encoding"), registry=split and bool(world.scoped or world.exempt),
                       columns=columns)


def _row(e: Entry, lay: EntryLayout) -> list[str]:
    cells = []
    for col in lay.columns:
        cells.append(e.id if col == "id" else e.status if col == "status" else e.context if col == "context"
                     else e.values[col])
    return cells[:-1] if e.malformed else cells


def render(world: EntryWorld, lay: EntryLayout) -> dict[str, str]:
    """environment/ files (relative paths) for the data and the registry."""
    nl = "\r\n" if lay.crlf else "\n"
    by_id = {e.id: e for e in world.entries}  # the layout groups ids; the values come from this world
    out: dict[str, str] = {}
    for path, entries in lay.files.items():
        lines = [lay.sep.join(lay.columns)] + [lay.sep.join(_row(by_id[e.id], lay)) for e in entries]
        out[path.lstrip("/")] = nl.join(lines) + nl
    if lay.registry:
        head = ["id", *(["status"] if world.scoped else []), *(["context"] if world.exempt else [])]
        rows = [[e.id, *([e.status] if world.scoped else []), *([e.context] if world.exempt else [])]
                for e in sorted(world.entries, key=lambda x: x.id)]
        out[REGISTRY.lstrip("/")] = "\n".join(",".join(r) for r in [head, *rows]) + "\n"
    return out


def spec(world: EntryWorld, lay: EntryLayout) -> dict[str, object]:
    """What the solution program needs: files, delimiter, and each rule's parameters."""
    rules = []
    for p in world.preds:
        rules.append({"id": p.id, "kind": p.kind, "field": world.fields[p.id], "exempt": world.exempt.get(p.id, ""),
                      **{k: v for k, v in p.params.items() if k in ("unit", "comparator", "value", "numeric", "token",
                                                                      "replacement", "convention")}})
    return {"files": list(lay.files), "sep": lay.sep, "registry": REGISTRY if lay.registry else "",
            "scoped": world.scoped, "rules": rules}


# The solution's own reading of the world; `findings()` returns (id, rule, evidence) and the invalid ids.
SOLVER = r'''
import csv, datetime, json, pathlib, re

SPEC = json.loads(__SPEC__)
FORMATS = {
    "kebab_case": r"[a-z0-9]+(?:-[a-z0-9]+)*", "snake_case": r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*",
    "camel_case": r"[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+", "pascal_case": r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*",
    "upper_snake": r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*", "iso_date": r"\d{4}-\d{2}-\d{2}",
    "semver": r"(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?",
    "conventional_commit": r"(?:feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)"
                           r"(?:\([a-z0-9-]+\))?!?: \S.*",
    "hex_color": r"#[0-9a-fA-F]{6}",
}


def rows(path):
    text = pathlib.Path(path).read_text().replace("\r\n", "\n")
    return list(csv.reader(text.splitlines(), delimiter=SPEC["sep"]))


def size(unit, value):
    if unit == "characters":
        return len(value)
    if unit == "words":
        return len(value.split())
    if unit == "sentences":
        return len(re.findall(r"[.!?](?:\s|$)", value))
    if unit == "items":
        return len([x for x in value.split(";") if x.strip()])
    return float(value)


def whole(token, text):
    return re.search(r"(?<![\w-])" + re.escape(token) + r"(?![\w-])", text) is not None


def show(x):
    return str(int(x)) if float(x) == int(x) else format(x, "g")


def breach(rule, value):
    kind = rule["kind"]
    if kind == "limit":
        n, lim, c = size(rule["unit"], value), rule["value"], rule["comparator"]
        ok = {"lt": n < lim, "le": n <= lim, "gt": n > lim, "ge": n >= lim}[c]
        return None if ok else show(n)
    if kind in ("forbid_token", "replace_token"):
        return rule["token"] if whole(rule["token"], value) else None
    if kind == "require_token":
        return None if whole(rule["token"], value) else rule["token"]
    ok = re.fullmatch(FORMATS[rule["convention"]], value) is not None
    if ok and rule["convention"] == "iso_date":
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            ok = False
    return None if ok else value


def records():
    meta = {}
    if SPEC["registry"]:
        reg = list(csv.reader(pathlib.Path(SPEC["registry"]).read_text().splitlines()))
        for r in reg[1:]:
            meta[r[0]] = dict(zip(reg[0], r))
    for path in SPEC["files"]:
        table = rows(path)
        head = table[0]
        for r in table[1:]:
            if not r:
                continue
            rec = dict(zip(head, r))
            rec.update(meta.get(r[0], {}))
            ok = len(r) == len(head)
            for rule in SPEC["rules"]:
                if ok and rule["kind"] == "limit" and rule.get("numeric"):
                    try:
                        float(rec[rule["field"]])
                    except ValueError:
                        ok = False
            yield rec, ok


def findings():
    found, invalid = [], []
    for rec, ok in records():
        if SPEC["scoped"] and rec.get("status", "active") != "active":
            continue
        if not ok:
            invalid.append(rec["id"])
            continue
        for rule in SPEC["rules"]:
            if rule["exempt"] and rec.get("context", "") == rule["exempt"]:
                continue
            ev = breach(rule, rec[rule["field"]])
            if ev is not None:
                found.append((rec["id"], rule["id"], ev))
    return sorted(found), sorted(invalid)
'''


def solver_source(world: EntryWorld, lay: EntryLayout) -> str:
    return SOLVER.replace("__SPEC__", repr(json.dumps(spec(world, lay))))


NAIVE = r'''
# The naive reading: substring matches, no exceptions, no scope, every limit off by one at its boundary, and
# formats checked by eye (any case, optional prefixes, no calendar check).
LOOSE = {"kebab_case": r"[a-z0-9-]+", "snake_case": r"[a-z0-9_]+", "camel_case": r"[A-Za-z0-9]+",
         "pascal_case": r"[A-Za-z0-9]+", "upper_snake": r"[A-Z0-9_]+", "iso_date": r"\d{4}-\d{1,2}-\d{1,2}",
         "semver": r"v?\d+\.\d+(\.\d+)*(-\S+)?", "conventional_commit": r"\w+(\([^)]*\))?!?:\s*\S.*",
         "hex_color": r"#?[0-9a-fA-F]{3,6}"}


def whole(token, text):
    return token in text


_strict = breach


def breach(rule, value):
    if rule["kind"] == "format":
        return None if re.fullmatch(LOOSE[rule["convention"]], value) else value
    if rule["kind"] == "limit":
        rule = dict(rule, comparator={"lt": "le", "le": "lt", "gt": "ge", "ge": "gt"}[rule["comparator"]])
    return _strict(rule, value)


for r in SPEC["rules"]:
    r["exempt"] = ""
SPEC["scoped"] = False
'''


NOTES = "/app/docs/review-notes.md"
STALE_NOTES = "/app/docs/review-notes-2019.md"


def make_world(inp: ShapeInput, n: int | None = None, teams: int | None = None) -> EntryWorld:
    """The entry world for this input: more records and more files with each level."""
    level = inp.level
    return build(inp.preds, n or 10 + 4 * level, inp.rng("entries"), inp.vocabulary,
                 teams=teams or (1, 2, 2, 3)[level], precondition=inp.has("precondition"),
                 corrupted=inp.has("corrupted"))


def scope_intro(world: EntryWorld) -> str:
    return ("These rules apply to active records only; retired and draft records are kept for history and are "
            "not reviewed." if world.scoped else "")


def notes(inp: ShapeInput, world: EntryWorld) -> str:
    intro = (f"Quoted from our {inp.text.name} playbook. The rule ids (R1, R2, …) are ours; the wording under each "
             "id is the playbook's own. " + scope_intro(world)).strip()
    return notes_doc("Review notes", inp.text, world.preds, intro)


def stale_notes(inp: ShapeInput, world: EntryWorld) -> str:
    """A superseded copy whose numbers and tokens differ: following it gives different answers."""
    lines = ["# Review notes (2019 draft)", "",
             "Superseded by review-notes.md; kept for history only. The limits below are the old ones.", ""]
    for p in world.preds:
        old = p.model_copy(update={"params": _stale_params(p.params)})
        lines += [f"## {p.id}", "", describe(old), ""]
    return "\n".join(lines)


def _stale_params(params: dict[str, object]) -> dict[str, object]:
    out = dict(params)
    value = out.get("value")
    if isinstance(value, (int, float)):
        out["value"] = float(value) + max(1.0, round(float(value) * 0.2))
    if isinstance(out.get("token"), str):
        out["token"] = str(out["token"]) + "_v1"
    return out


def edge_ids(world: EntryWorld) -> list[str]:
    """Records where the wording decides: boundary values, near misses, exempt contexts, out-of-scope records."""
    return sorted(e.id for e in world.entries
                  if e.context or not world.in_scope(e)
                  or any(r in ("boundary", "near_miss") for r in e.roles.values()))



def single_layout(world: EntryWorld, path: str) -> EntryLayout:
    """One comma-separated file with status and context inline (the form a program's input takes)."""
    meta = (["status"] if world.scoped else []) + (["context"] if world.exempt else [])
    return EntryLayout(files={path: list(world.entries)}, sep=",", crlf=False, registry=False,
                       columns=["id", *meta, *world.columns])


def csv_text(world: EntryWorld, path: str = "input.csv") -> str:
    lay = single_layout(world, path)
    return render(world, lay)[path.lstrip("/")]


def variant(inp: ShapeInput, salt: int) -> ShapeInput:
    """The same predicates and effects with another seed: hidden inputs the solver never sees."""
    return ShapeInput(**{**inp.__dict__, "seed": inp.seed * 7919 + salt})


def hidden_worlds(inp: ShapeInput, count: int, columns: list[str]) -> list[EntryWorld]:
    """Worlds for hidden inputs, with the visible world's columns (retried seeds until they match)."""
    out: list[EntryWorld] = []
    salt = 100
    while len(out) < count and salt < 100 + 20 * count:
        salt += 1
        try:
            w = make_world(variant(inp, salt), n=8 + 2 * len(out), teams=1)
        except ValueError:
            continue
        if w.columns == columns:
            out.append(w)
    if len(out) < count:
        raise ValueError("could not make hidden inputs with the same columns")
    return out


STRATA = {
    "boundary_values": "values on or next to a limit, and edge values of a format",
    "near_miss_tokens": "tokens inside longer names, and the exact token",
    "exceptions_respected": "records in a context the playbook's own exception names",
    "scope_respected": "records that are not active",
}


def strata(world: EntryWorld) -> dict[str, list[list[str]]]:
    """Per wording stratum, its (record, rule, "1" if it must be reported else "0") decisions; empty strata are
    left out, so a verifier grades only what this world exercises."""
    found = {(i, r) for i, r, _ in world.findings()}
    out: dict[str, list[list[str]]] = {name: [] for name in STRATA}
    for e in world.entries:
        if e.malformed:
            continue
        for p in world.preds:
            pair = [e.id, p.id, "1" if (e.id, p.id) in found else "0"]
            role = e.roles.get(p.id, "comply")
            if not world.in_scope(e):
                out["scope_respected"].append(pair)
            elif world.exempt.get(p.id) and e.context == world.exempt[p.id]:
                out["exceptions_respected"].append(pair)
            elif role in ("boundary", "near_miss") and p.kind in ("limit", "format"):
                out["boundary_values"].append(pair)
            elif role in ("boundary", "near_miss"):
                out["near_miss_tokens"].append(pair)
    return {k: v for k, v in out.items() if v}


def kind_groups(world: EntryWorld) -> dict[str, list[str]]:
    """Rule ids per kind of rule (limits, tokens, formats), when more than one kind is in play."""
    groups: dict[str, list[str]] = {}
    for p in world.preds:
        group = "limits" if p.kind == "limit" else "formats" if p.kind == "format" else "tokens"
        groups.setdefault(group, []).append(p.id)
    return groups if len(groups) >= 2 else {}
