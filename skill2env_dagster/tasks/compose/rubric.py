"""tests/rubric.md: Must-do mirrors the verifier's metrics; Must-avoid carries what the skill itself warns against
or forbids on the lines of the rules in play; Best-practice its advice on those lines (compose/polarity.py), each
sentence in its own polarity. A shape adds bullets derived from the rules in play (the rule's own line as source)
where the skill says nothing more there. Every bullet keeps where it came from (`rubric_sources` in task.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.tasks.compose import polarity

MAX_BULLETS = 3
MAX_CHARS = 260


@dataclass
class Bullet:
    text: str
    source: str  # "SKILL.md:12", "references/x.md:40" or "metric:<name>"


@dataclass
class RubricSpec:
    must_do: list[Bullet] = field(default_factory=list)
    must_avoid: list[Bullet] = field(default_factory=list)
    best_practice: list[Bullet] = field(default_factory=list)

    def render(self) -> tuple[str, dict[str, str]]:
        parts, sources = [], {}
        for title, items in (("Must-do", self.must_do), ("Must-avoid", self.must_avoid),
                             ("Best-practice", self.best_practice)):
            kept = items[:MAX_BULLETS]
            parts.append(f"## {title}\n" + "\n".join(f"- {_clip(b.text)}" for b in kept))
            for i, b in enumerate(kept, 1):
                sources[f"{title.lower()}-{i}"] = b.source
        return "\n\n".join(parts) + "\n", sources


def _clip(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= MAX_CHARS else t[: MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"


def rule_bullet(p: Predicate, how: str) -> Bullet:
    """Best practice: the skill's rule in its own words, then how it applies here."""
    return Bullet(f"Apply the skill's rule “{_clip(p.statement)[:160]}” {how}.", p.source.label)


def complete(spec: RubricSpec, k: SkillKnowledge, preds: list[Predicate]) -> RubricSpec:
    """Must-avoid: the skill's own warnings and prohibitions, written on the lines of the rules in play or naming
    what those rules decide (their predicates' `terms`); Best-practice: its advice on those lines. The shape's
    bullets derived from the rules fill a section only where the skill itself says nothing there (the rubric needs
    one bullet per section): a generator-made "Holding a ticket to another priority's limit" is no warning of the
    skill's."""
    sources = {label for p in preds for label in (p.source.label, *p.lines())}
    said = {" ".join(p.statement.lower().split()) for p in preds}
    warned = [Bullet(s.text, s.ref.label) for s in polarity.warnings(k, sources, said, MAX_BULLETS)]
    terms = [t for p in preds for t in p.params.get("terms", [])]
    named = [s for s in polarity.naming(k, terms, said) if polarity.is_warning(s)] if terms else []
    warned = _merge(warned, [Bullet(s.text, s.ref.label) for s in named])
    advised = [Bullet(s.text, s.ref.label) for s in polarity.advice(k, sources, said, MAX_BULLETS)]
    avoid = warned or spec.must_avoid
    practice = advised or spec.best_practice
    return RubricSpec(spec.must_do, avoid[:MAX_BULLETS], practice[:MAX_BULLETS])


def _merge(first: list[Bullet], then: list[Bullet]) -> list[Bullet]:
    seen: set[str] = set()
    out = []
    for b in first + then:
        key = " ".join(b.text.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(b)
    return out
