"""Is every rubric bullet about this task? Each bullet must be tied to something in play in the task's blueprint:
one of its rules (the predicates the skill's rules were compiled into), one of its graded metrics, or one of its
deliverables. A bullet tied to none came from elsewhere in the skill ("Top products: rank by net units" on a
register-repair task) and would have the judge score the agent on a rule the task never put in play.

A bullet is tied when its recorded source (task.toml `rubric_sources`) is a rule's own line (any of its lines,
when it is written over several: `blueprint_rule_lines`) or a metric of the task, or when its text carries the
rule: a token the rule is about, or most of the rule statement's content words (so a model-written rubric, whose
sources say "llm", is checked by what it says). The same facts are read from a `TaskBlueprint` (generation time)
or from the blueprint summary in task.toml `[metadata]` (rollout time).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skill2env_dagster.gates.rubric import rubric_bullets
from skill2env_dagster.models.blueprint import TaskBlueprint

MIN_SHARED = 3  # content words a bullet must share with a rule statement …
MIN_COVERAGE = 0.5  # … covering at least this share of the statement's content words
_STOP = frozenset({
    "the", "a", "an", "and", "or", "of", "to", "in", "for", "on", "is", "are", "be", "with", "it", "its", "that",
    "this", "these", "those", "not", "do", "does", "don't", "never", "always", "use", "must", "should", "you",
    "your", "when", "if", "as", "at", "by", "from", "into", "than", "then", "there", "their", "they", "them", "any",
    "all", "each", "every", "one", "more", "most", "other", "same", "such", "only", "just", "also", "but", "so",
    "can", "may", "might", "will", "would", "could", "about", "which", "what", "who", "where", "how", "per", "via",
    "etc", "here", "make", "made", "keep", "kept"
})
_RULE_LINE = re.compile(r"^(R\d{1,2}) [\w-]+: (.*) \(([^()]+:\d+)\)$", re.S)


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9][a-z0-9_.()-]*[a-z0-9)]|[a-z0-9]", text.lower())
                     if len(w) >= 3 and w not in _STOP)


@dataclass(frozen=True)
class RuleInPlay:
    id: str
    statement: str
    source: str  # "SKILL.md:12"
    tokens: tuple[str, ...] = ()  # literal tokens the rule is about (forbid/require/replace_token)


@dataclass(frozen=True)
class RulesInPlay:
    """What a task puts in play: its rules, its graded metrics, its deliverables."""

    rules: tuple[RuleInPlay, ...]
    metrics: tuple[str, ...]
    deliverables: tuple[str, ...] = ()

    @classmethod
    def from_blueprint(cls, bp: TaskBlueprint) -> RulesInPlay:
        rules = tuple(RuleInPlay(p.id, p.statement, src, p.tokens()) for p in bp.predicates
                      for src in [p.source.label, *p.lines()])
        return cls(rules, tuple(c.metric for c in bp.acceptance), tuple(bp.deliverables))

    @classmethod
    def from_metadata(cls, meta: Mapping[str, Any]) -> RulesInPlay | None:
        """From task.toml [metadata] (`TaskBlueprint.summary()`); None when the task records no blueprint."""
        lines = meta.get("blueprint_rules")
        if not isinstance(lines, list) or not lines:
            return None
        tokens: dict[str, list[str]] = {}
        for item in meta.get("blueprint_rule_tokens") or []:
            rid, _, token = str(item).partition(": ")
            tokens.setdefault(rid, []).append(token)
        more: dict[str, list[str]] = {}  # a rule's other lines (one limit per category, a quoted paragraph)
        for item in meta.get("blueprint_rule_lines") or []:
            rid, _, src = str(item).partition(" ")
            more.setdefault(rid, []).append(src)
        rules = []
        for line in lines:
            m = _RULE_LINE.match(str(line))
            if m:
                found = tuple(t for t in (*tokens.get(m.group(1), []), *_backticked(m.group(2))) if t)
                rules += [RuleInPlay(m.group(1), m.group(2), src, found)
                          for src in [m.group(3), *more.get(m.group(1), [])]]
        return cls(tuple(rules), tuple(str(x) for x in meta.get("blueprint_metrics") or []),
                   tuple(str(x) for x in meta.get("blueprint_deliverables") or []))


def _names(text: str, token: str) -> bool:
    """`token` as a whole token of `text` ("void" is not in "Avoid")."""
    return re.search(rf"(?<![\w]){re.escape(token)}(?![\w])", text) is not None


def _backticked(text: str) -> tuple[str, ...]:
    return tuple(t for t in re.findall(r"`([^`]{2,})`", text))


@dataclass(frozen=True)
class BulletTie:
    """One rubric bullet and what in the blueprint it is tied to (`tied_to` empty: off-task)."""

    id: str  # must_do.1, must_avoid.2, best_practice.1 (the judge's ids)
    section: str  # must-do, must-avoid, best-practice
    text: str
    source: str
    tied_to: str  # "R1", "metric:correct", "deliverable:/app/out.csv" or ""
    how: str  # "source", "token", "statement", "deliverable" or why not

    @property
    def off_task(self) -> bool:
        return not self.tied_to


def _by_text(text: str, section: str, play: RulesInPlay) -> tuple[str, str]:
    words = content_words(text)
    for r in play.rules:
        if any(_names(text, t) for t in r.tokens):
            return r.id, "token"
    for r in play.rules:
        stated = content_words(r.statement)
        shared = stated & words
        if stated and len(shared) >= min(MIN_SHARED, len(stated)) and len(shared) >= MIN_COVERAGE * len(stated):
            return r.id, "statement"
    if section == "must-do":
        for d in play.deliverables:
            if d and (d in text or d.rsplit("/", 1)[-1] in text):
                return f"deliverable:{d}", "deliverable"
    return "", "names no rule, metric or deliverable in play"


def tie(section: str, text: str, source: str, play: RulesInPlay) -> tuple[str, str]:
    """(what the bullet is tied to, how) — ("", why not) for an off-task bullet."""
    if source.startswith("metric:") and source[len("metric:"):] in play.metrics:
        return source, "source"
    rule = next((r for r in play.rules if r.source == source), None)
    if rule is not None:
        return rule.id, "source"
    return _by_text(text, section, play)


def rubric_ties(rubric: str, sources: Mapping[str, str], play: RulesInPlay) -> list[BulletTie]:
    """Every bullet of `rubric` with its tie; `sources` are task.toml's `rubric_sources` ("must-do-1" -> label)."""
    out = []
    for section, items in rubric_bullets(rubric).items():
        for i, text in enumerate(items, 1):
            source = str(sources.get(f"{section}-{i}", ""))
            tied, how = tie(section, text, source, play)
            out.append(BulletTie(f"{section.replace('-', '_')}.{i}", section, text, source, tied, how))
    return out


def off_task(ties: Sequence[BulletTie]) -> list[BulletTie]:
    return [t for t in ties if t.off_task]
