"""A skill's rules compiled into predicates a task can be decided by - only where a rule, with its conditions, can
be honoured exactly in an artifact of the kind the skill works on.

Families: `deadlines` (per-category time limits on records: deadlines.py), `measures` (limits on the parts of a
skill folder, and what a file past a length must contain: measures.py), `commands` (the commands a skill's guard
blocks, audited in agent transcripts: commands.py), `sqltypes` (column types a skill forbids, with the type to use
instead, audited in SQL migrations: sqltypes.py), `flags` (a bookkeeping skill's labelled review flags, raised on a
ledger export: flags.py), `service` (a local HTTP API the skill documents: service.py). Everything else the skill
states is refused with a reason (`Refusal`): a skill left with nothing gets `no_checkable_rule`, and the refusals say
why.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from skill2env_dagster.knowledge.source import Doc
from skill2env_dagster.models.blueprint import Predicate, PredicateKind
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.tasks.predicates import commands, deadlines, flags, measures, sqltypes
from skill2env_dagster.tasks.predicates.service import service_predicate

Family = str  # deadlines | measures | commands | sqltypes | flags | service
MAX_REFUSALS = 12


@dataclass(frozen=True)
class Candidate:
    """A predicate the skill's text supports, before the blueprint numbers the ones it puts in play."""

    family: Family
    predicate: Predicate
    score: float

    @property
    def kind(self) -> PredicateKind:
        return self.predicate.kind


@dataclass(frozen=True)
class Compiled:
    candidates: list[Candidate]
    refusals: list[str]  # "SKILL.md:76: a single limit with no condition: …", at most MAX_REFUSALS


def _home(file: str, skill_file: str) -> float:
    """Rules written in SKILL.md itself outrank those in reference files."""
    return 1.0 if file == skill_file else 0.8


def compile_skill(k: SkillKnowledge, skill_file: str, docs: Sequence[Doc], skill_name: str = "",
                  files: Collection[str] | None = None) -> Compiled:
    """Every predicate the skill's documents support, best first (deterministic order), and why other rules were
    left out. `docs` are the skill's documents (knowledge.source.read_docs); `files`, the paths of every file of the
    folder (a guard's script the skill links to must be one of them), unchecked when None."""
    found: list[Candidate] = []
    refusals: list[str] = []
    service = service_predicate(list(docs))
    if service:
        found.append(Candidate("service", service, 3.0))
    groups, refused = deadlines.compile_deadlines([d for d in docs if d.path.endswith((".md", ".markdown", ".txt"))],
                                                  skill_name or k.skill_id)
    for g in groups:
        found.append(Candidate("deadlines", deadlines.predicate(g),
                               2.0 * _home(g.file, skill_file) + 0.1 * len(g.deadlines)))
    refusals += [f"{r.ref.label}: {r.why}" for r in refused]
    md = [d for d in docs if d.path.endswith((".md", ".markdown"))]
    blocked = commands.compile_commands(md)
    unshipped = commands.missing_guard(md, files) if blocked and files is not None else ""
    if blocked and not unshipped:
        found.append(Candidate("commands", commands.predicate(blocked), 2.0 + 0.1 * len(blocked)))
    elif unshipped:
        refusals.append(unshipped)
    types = sqltypes.compile_types([d for d in docs if d.path.endswith((".md", ".markdown"))])
    if types:
        found.append(Candidate("sqltypes", sqltypes.predicate(types), 2.0 + 0.1 * len(types)))
    raised = flags.compile_flags([d for d in docs if d.path.endswith((".md", ".markdown"))])
    if raised:
        found.append(Candidate("flags", flags.predicate(raised), 2.0 + 0.1 * len(raised)))
    folder_rules, why = measures.compile_measures(list(docs))
    if folder_rules and not why:
        found.append(Candidate("measures", measures.predicate(folder_rules), 2.0 + 0.1 * len(folder_rules)))
    elif why:
        refusals.append(why)
    found.sort(key=lambda c: (-c.score, c.predicate.source.file, c.predicate.source.line, c.kind))
    if not found and not refusals:
        refusals.append(_nothing(k))
    return Compiled(found, refusals[:MAX_REFUSALS])


def _nothing(k: SkillKnowledge) -> str:
    """Why a skill with no refused candidate still has no task: what it states, none of it a rule a task is
    decided by here."""
    counts = {name: n for name, n in k.counts().items() if n and name not in ("artifacts", "examples")}
    if not counts:
        return "it states no rule, limit, procedure or table at all"
    stated = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in counts.items())
    return (f"it states {stated}, but no per-category deadline with a number, no skill-folder limit, no list of "
            "blocked commands, no forbidden column type with its replacement, no labelled review flag and no "
            "documented local API: nothing whose conditions decide a checkable "
            "answer")


def compile_candidates(k: SkillKnowledge, skill_file: str = "SKILL.md", docs: Sequence[Doc] = (),
                       skill_name: str = "", files: Collection[str] | None = None) -> list[Candidate]:
    return compile_skill(k, skill_file, docs, skill_name, files).candidates


def families(cands: list[Candidate]) -> dict[Family, list[Candidate]]:
    out: dict[Family, list[Candidate]] = {}
    for c in cands:
        out.setdefault(c.family, []).append(c)
    return out
