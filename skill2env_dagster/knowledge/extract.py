"""`extract_knowledge`: one pass over a skill's documents, deterministic, offline, never executing anything."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from skill2env_dagster.knowledge.examples import artifacts_of, examples_in
from skill2env_dagster.knowledge.procedures import checklists_in, procedures_in, templates_in
from skill2env_dagster.knowledge.quantities import defaults_in, thresholds_in
from skill2env_dagster.knowledge.rules import conventions_in, pitfalls_in, rules_in, token_rules
from skill2env_dagster.knowledge.source import Block, blocks, plain, read_docs
from skill2env_dagster.knowledge.tables import tables_in
from skill2env_dagster.models.knowledge import Section, SkillKnowledge
from skill2env_dagster.models.skill import SkillRecord

# Bump when the extractor's output changes for the same skill bytes (the asset reuses a stored result otherwise).
EXTRACTOR_VERSION = "knowledge-2"
LIMITS = {"rules": 120, "thresholds": 40, "defaults": 60, "pitfalls": 60, "examples": 60, "conventions": 20,
          "token_rules": 40, "tables": 20, "procedures": 16, "checklists": 10, "templates": 10, "sections": 80}
T = TypeVar("T")


def _unique(items: Iterable[T], key: Callable[[T], Hashable], limit: int = 10_000) -> list[T]:
    seen: set[Hashable] = set()
    out: list[T] = []
    for it in items:
        k = key(it)
        if k not in seen:
            seen.add(k)
            out.append(it)
    return out[:limit]


def extract_knowledge(skill: SkillRecord) -> SkillKnowledge:
    """Everything the skill teaches that a task can be built on, with the line each item comes from."""
    docs = read_docs(skill)
    all_blocks: list[Block] = []
    per_doc: list[list[Block]] = []
    for d in docs:
        bs = blocks(d)
        per_doc.append(bs)
        all_blocks += bs
    ruled = [pair for b in all_blocks for pair in rules_in(b)]
    rules = _unique([r for r, _ in ruled], key=lambda r: r.text.lower(), limit=LIMITS["rules"])
    tokens = [t for r, raw in ruled for t in token_rules(r, raw)]
    return SkillKnowledge(
        skill_id=skill.skill_id, bundle_digest=skill.bundle_digest, extractor_version=EXTRACTOR_VERSION,
        files_read=[d.path for d in docs],
        sections=_unique([Section(title=plain(b.text)[:120], level=b.level, ref=b.ref()) for b in all_blocks
                          if b.kind == "heading" and plain(b.text)], key=lambda s: (s.title, s.ref.file),
                         limit=LIMITS["sections"]),
        rules=rules,
        procedures=_unique([p for bs in per_doc for p in procedures_in(bs)],
                           key=lambda p: tuple(s.text for s in p.steps), limit=LIMITS["procedures"]),
        checklists=_unique([c for bs in per_doc for c in checklists_in(bs)], key=lambda c: c.ref,
                           limit=LIMITS["checklists"]),
        thresholds=_unique([t for b in all_blocks for t in thresholds_in(b)],
                           key=lambda t: (t.subject, t.unit, t.comparator, t.value), limit=LIMITS["thresholds"]),
        defaults=_unique([d for b in all_blocks for d in defaults_in(b)], key=lambda d: d.key.lower(),
                         limit=LIMITS["defaults"]),
        pitfalls=_unique([p for b in all_blocks for p in pitfalls_in(b)], key=lambda p: p.text.lower(),
                         limit=LIMITS["pitfalls"]),
        examples=_unique([e for b in all_blocks for e in examples_in(b)], key=lambda e: (e.kind, e.text),
                         limit=LIMITS["examples"]),
        artifacts=artifacts_of(skill),
        tables=_unique([t for bs in per_doc for t in tables_in(bs)], key=lambda t: (t.ref.file, t.ref.line),
                       limit=LIMITS["tables"]),
        conventions=_unique([c for b in all_blocks for c in conventions_in(b)], key=lambda c: (c.kind, c.subject),
                            limit=LIMITS["conventions"]),
        token_rules=_unique(tokens, key=lambda t: (t.polarity, t.token), limit=LIMITS["token_rules"]),
        templates=_unique([t for bs in per_doc for t in templates_in(bs)], key=lambda t: tuple(t.headings),
                          limit=LIMITS["templates"]),
    )


def cached_knowledge(stored: SkillKnowledge | None, skill: SkillRecord) -> SkillKnowledge:
    """The stored extraction when it was made from the same bundle by the same extractor, else a fresh one."""
    if stored is not None and stored.bundle_digest == skill.bundle_digest \
            and stored.extractor_version == EXTRACTOR_VERSION and stored.skill_id == skill.skill_id:
        return stored
    return extract_knowledge(skill)
