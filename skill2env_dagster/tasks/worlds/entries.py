"""The entry world: records whose fields are governed by the skill's entry-level predicates (limits, tokens,
formats), with planted breaches, boundary values, near misses, the skill's own exceptions and, when a difficulty
pattern asks for it, records out of scope, malformed records and facts split across files.

Everything is decided here, once, from a seeded RNG; the expected findings come from `entry_rules` (our
reference implementation), never from a solution script.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.tasks.predicates.entry_rules import violation
from skill2env_dagster.tasks.predicates.entry_values import Role, Words, value_for

RESERVED = {"id", "context", "status", "team", "file", "line", "rule", "evidence"}
OUT_OF_SCOPE = ("retired", "draft")
MAX_TRIES = 40


def field_name(p: Predicate, taken: set[str]) -> str:
    """A column name from the rule's subject: `subject_lines`, `response_hours`, `code`, `name`."""
    if p.kind in ("forbid_token", "require_token", "replace_token"):
        base = "code"
    else:
        words = re.findall(r"[a-z][a-z0-9]*", p.subject.lower())[-3:] or ["value"]
        base = "_".join(words)
        if p.kind == "limit" and p.params.get("numeric") and not base.endswith(p.params["unit"]):
            base = f"{base}_{p.params['unit']}"
    base = base[:32].strip("_") or "value"
    if base in RESERVED:
        base = f"{base}_value"
    name, i = base, 2
    while name in taken and p.kind not in ("forbid_token", "require_token", "replace_token"):
        name, i = f"{base}_{i}", i + 1
    return name


def exempt_phrase(exception: str) -> str:
    """'except merge commits' -> 'merge commits'; '' when the clause names nothing usable as a context."""
    phrase = re.sub(r"^(except(?: for| when| if| in)?|unless|other than|apart from|excluding|with the exception of)\s+",
                    "", exception.strip(), flags=re.I)
    phrase = re.sub(r"[^A-Za-z0-9 _-]", "", phrase).strip().lower()
    return phrase if 3 <= len(phrase) <= 48 and len(phrase.split()) <= 6 else ""


@dataclass
class Entry:
    id: str
    values: dict[str, str]  # field -> value
    roles: dict[str, Role]  # predicate id -> role of its field's value
    context: str = ""  # an exception context (exempts the predicates whose exception it names)
    status: str = "active"  # out-of-scope statuses only when the precondition pattern is in play
    team: str = ""  # the file group the entry is rendered into
    malformed: bool = False  # a record a solver must report as invalid instead of judging


@dataclass
class EntryWorld:
    preds: list[Predicate]
    fields: dict[str, str]  # predicate id -> field
    exempt: dict[str, str]  # predicate id -> exempting context phrase
    entries: list[Entry]
    scoped: bool  # statuses other than active exist and are out of scope
    teams: list[str] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(self.fields[p.id] for p in self.preds))

    def in_scope(self, e: Entry) -> bool:
        return not self.scoped or e.status == "active"

    def findings(self) -> list[tuple[str, str, str]]:
        """(entry id, rule id, evidence) for every breach of an in-scope, well-formed entry; exemptions apply."""
        out = []
        for e in self.entries:
            if e.malformed or not self.in_scope(e):
                continue
            for p in self.preds:
                if self.exempt.get(p.id) and e.context == self.exempt[p.id]:
                    continue
                ev = violation(p, e.values[self.fields[p.id]])
                if ev is not None:
                    out.append((e.id, p.id, ev))
        return out

    def invalid(self) -> list[str]:
        return [e.id for e in self.entries if e.malformed and self.in_scope(e)]


def _plan_roles(preds: list[Predicate], fields: dict[str, str], n: int, rng: random.Random) -> list[dict[str, Role]]:
    """Per entry, the role of each predicate: every rule gets breaches, a boundary value and a near miss; rules
    sharing a field (token rules on one code line) never share an entry; about a quarter of (entry, rule) pairs
    breach, so listing everything is far from right."""
    plan: list[dict[str, Role]] = [{p.id: "comply" for p in preds} for _ in range(n)]
    busy: dict[str, set[int]] = {}
    for p in preds:
        used = busy.setdefault(fields[p.id], set())
        free = [i for i in range(n) if i not in used]
        slots = rng.sample(free, min(len(free), 5))
        wanted: list[Role] = ["breach", "breach", "boundary", "near_miss", "breach" if n >= 12 else "comply"]
        for i, role in zip(slots, wanted, strict=False):
            plan[i][p.id] = role
            used.add(i)
    return plan


def _value(focus: Predicate, role: Role, words: Words, others: list[Predicate]) -> str | None:
    """A value with the focus predicate's role that keeps every other predicate on the field satisfied."""
    for _ in range(MAX_TRIES):
        v = value_for(focus, role, words)
        if v is not None and all(violation(o, v) is None for o in others):
            return v
    return None


def build(preds: list[Predicate], n: int, rng: random.Random, vocabulary: list[str], *, teams: int = 1,
          precondition: bool = False, corrupted: bool = False) -> EntryWorld:
    """The world for the predicates in play; raises ValueError when a predicate cannot be instantiated."""
    words = Words(vocabulary, rng)
    taken: set[str] = set()
    fields: dict[str, str] = {}
    for p in preds:
        fields[p.id] = field_name(p, taken)
        taken.add(fields[p.id])
    on_field: dict[str, list[Predicate]] = {}
    for p in preds:
        on_field.setdefault(fields[p.id], []).append(p)
    exempt = {p.id: ph for p in preds if (ph := exempt_phrase(p.exception))}
    team_names = sorted(words.distinct(teams))[:teams] if teams > 1 else [""]
    plan = _plan_roles(preds, fields, n, rng)
    extra = (2 if precondition else 0) + (2 if corrupted else 0)
    for k in range(extra):  # records that breach but must not be reported (out of scope) or cannot be judged
        roles: dict[str, Role] = {p.id: "comply" for p in preds}
        roles[preds[k % len(preds)].id] = "breach"
        plan.append(roles)
    entries: list[Entry] = []
    for i, roles in enumerate(plan):
        values: dict[str, str] = {}
        for col, group in on_field.items():
            focus = next((p for p in group if roles[p.id] != "comply"), group[0])
            v = _value(focus, roles[focus.id], words, [o for o in group if o is not focus])
            if v is None and roles[focus.id] != "comply":
                roles[focus.id] = "comply"
                v = _value(focus, "comply", words, [o for o in group if o is not focus])
            if v is None:
                raise ValueError(f"cannot instantiate {focus.kind} {focus.params}")
            values[col] = v
        entries.append(Entry(id=f"E{i + 1:03d}", values=values, roles=roles, team=team_names[i % len(team_names)]))
    tail = entries[n:]
    for e in tail[: 2 if precondition else 0]:
        e.status = rng.choice(OUT_OF_SCOPE)
    for e in tail[2 if precondition else 0:]:
        e.malformed = True
    rng.shuffle(entries)
    for i, e in enumerate(entries):
        e.id = f"E{i + 1:03d}"
    _plant_exemptions(entries, preds, exempt, fields, words)
    world = EntryWorld(preds, fields, exempt, entries, precondition, team_names)
    _require_breaches(world)
    return world


def _plant_exemptions(entries: list[Entry], preds: list[Predicate], exempt: dict[str, str], fields: dict[str, str],
                      words: Words) -> None:
    """Entries in the exempting context that breach the rule (must not be reported), and one in that context for
    another rule (still reported), so ignoring the exception and over-applying it both fail."""
    for p in preds:
        phrase = exempt.get(p.id)
        if not phrase:
            continue
        breaching = [e for e in entries if e.roles[p.id] == "breach" and not e.context]
        for e in breaching[:1]:
            e.context = phrase
        shared = [o for o in preds if o is not p and fields[o.id] == fields[p.id]]
        extra = next((e for e in entries if all(e.roles[o.id] == "comply" for o in [p, *shared]) and not e.context),
                     None)
        if extra is not None:
            v = _value(p, "breach", words, shared)
            if v is not None:
                extra.values[fields[p.id]], extra.roles[p.id], extra.context = v, "breach", phrase


def _require_breaches(world: EntryWorld) -> None:
    found = world.findings()
    for p in world.preds:
        if sum(1 for _, rid, _ in found if rid == p.id) < 2:
            raise ValueError(f"{p.id} has fewer than two reportable breaches")
    pairs = sum(1 for e in world.entries if not e.malformed and world.in_scope(e)) * len(world.preds)
    if len(found) > 0.5 * pairs:
        raise ValueError("too many breaches: listing everything would score well")
