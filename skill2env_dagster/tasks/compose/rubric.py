"""tests/rubric.md from the skill's own rules: Must-do mirrors the verifier's metrics, Must-avoid carries the
skill's pitfalls and exclusions that bear on this task, Best-practice restates the skill's method for this
scenario. Every bullet keeps where it came from (`rubric_sources` in task.toml)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skill2env_dagster.knowledge.rules import modality
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import Pitfall, SkillKnowledge

MAX_BULLETS = 3
MAX_CHARS = 260
_STOP = {"the", "a", "an", "and", "or", "of", "to", "in", "for", "on", "is", "are", "be", "with", "it", "that",
         "this", "not", "do", "don't", "never", "always", "use", "must", "should", "you", "your", "when", "if"}


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


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9_-]{2,}", text.lower()) if w not in _STOP}


def relevant_pitfalls(k: SkillKnowledge, preds: list[Predicate], limit: int = MAX_BULLETS) -> list[Pitfall]:
    """The skill's pitfalls and exclusions that share most words with the rules in play (SKILL.md first)."""
    topic = set().union(*(_words(p.statement + " " + p.subject) for p in preds)) if preds else set()
    files = {p.source.file for p in preds}
    warnings = [x for x in k.pitfalls if x.kind == "pitfall" or modality(x.text)]
    scored = sorted(warnings, key=lambda x: (-len(_words(x.text) & topic) - (0.5 if x.ref.file in files else 0),
                                             x.kind != "exclusion", x.ref.file, x.ref.line))
    return [x for x in scored if _words(x.text) & topic][:limit]


def pitfall_bullets(k: SkillKnowledge, preds: list[Predicate], limit: int = 2) -> list[Bullet]:
    return [Bullet(f"Avoid what the playbook warns about: {x.text}", x.ref.label)
            for x in relevant_pitfalls(k, preds, limit)]


def rule_bullet(p: Predicate, how: str) -> Bullet:
    """Best practice: the skill's rule in its own words, then how it applies here."""
    return Bullet(f"Apply the playbook's rule \"{_clip(p.statement)[:160]}\" {how}", p.source.label)


def exception_bullet(p: Predicate, phrase: str) -> Bullet:
    return Bullet(f"Applying {p.id} to records in the context \"{phrase}\", which the playbook's own exception "
                  f"(\"{p.exception}\") leaves out", p.source.label)
