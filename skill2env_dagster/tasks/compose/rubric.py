"""tests/rubric.md from the skill's own rules: Must-do mirrors the verifier's metrics, Must-avoid carries the
skill's pitfalls and exclusions that bear on this task, Best-practice restates the skill's method for this
scenario. Every bullet keeps where it came from (`rubric_sources` in task.toml)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skill2env_dagster.knowledge.rules import modality
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import Pitfall, Rule, SkillKnowledge

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


def _sentence(text: str) -> bool:
    """A bullet must read as a sentence: not a fragment ('component behavior.'), a label ('Impact: CRITICAL …') or
    a lead-in that ends in a colon ('Use this skill when you need to:')."""
    t = " ".join(text.split())
    return (len(t.split()) >= 4 and bool(re.match(r"[A-Z0-9`\"“(*]", t)) and not t.endswith(":")
            and not re.match(r"[A-Za-z]+:\s+[A-Z]{3,}\b", t) and not re.match(r"e\.g\.|examples?\b", t, re.I))


def relevant_pitfalls(k: SkillKnowledge, preds: list[Predicate], limit: int = MAX_BULLETS) -> list[Pitfall]:
    """The skill's pitfalls and exclusions that share most words with the rules in play (SKILL.md first)."""
    topic = set().union(*(_words(p.statement + " " + p.subject) for p in preds)) if preds else set()
    files = {p.source.file for p in preds}
    # An exclusion is a warning only when it forbids ("… to avoid losing rare cells" is advice, not a pitfall).
    warnings = [x for x in k.pitfalls if (x.kind == "pitfall" or modality(x.text) == "must_not") and _sentence(x.text)]
    scored = sorted(warnings, key=lambda x: (-len(_words(x.text) & topic) - (0.5 if x.ref.file in files else 0),
                                             x.kind != "exclusion", x.ref.file, x.ref.line))
    return [x for x in scored if _words(x.text) & topic][:limit]


def _avoid(text: str) -> str:
    """A warning as a Must-avoid bullet: kept as written when it already says what not to do."""
    return text if re.match(r"(?:don'?t|do not|never|avoid|no |not )", text, re.I) else f"Avoid this: {text}"


def pitfall_bullets(k: SkillKnowledge, preds: list[Predicate], limit: int = 2) -> list[Bullet]:
    """The skill's own warnings: those that bear on the rules in play first, then the ones its main file states,
    then its own prohibitions ('never …', 'do not …') nearest the rules in play."""
    chosen = relevant_pitfalls(k, preds, limit)
    home = preds[0].source.file if preds else ""
    extra = [x for x in k.pitfalls if x.kind == "pitfall" and x not in chosen and x.ref.file == home
             and _sentence(x.text)]
    out = [Bullet(_avoid(x.text), x.ref.label) for x in (chosen + extra)[:limit]]
    return out + prohibitions(k, preds, limit - len(out), {b.text for b in out})


def nearest_rules(rules: list[Rule], preds: list[Predicate], limit: int) -> list[Rule]:
    """The rules written next to the ones in play (same file within 40 lines first), then by shared words."""
    if limit <= 0 or not preds:
        return []
    lines = {p.source.file: p.source.line for p in preds}
    topic = set().union(*(_words(p.statement + " " + p.subject) for p in preds))

    def rank(r: Rule) -> tuple[float, str, int]:
        near = r.ref.file in lines and abs(r.ref.line - lines[r.ref.file]) <= 40
        return (-(3.0 * near + len(_words(r.text) & topic) + (r.ref.file in lines)), r.ref.file, r.ref.line)

    return sorted(rules, key=rank)[:limit]


def _unsaid(k: SkillKnowledge, preds: list[Predicate]) -> list[Rule]:
    """The skill's sentence-like rules other than those in play."""
    said = {" ".join(p.statement.split()).lower() for p in preds}
    return [r for r in k.rules if r.text.lower() not in said and _sentence(r.text)]


def prohibitions(k: SkillKnowledge, preds: list[Predicate], limit: int, taken: set[str]) -> list[Bullet]:
    """The skill's must-not / should-not rules nearest the rules in play, as Must-avoid bullets."""
    rules = [r for r in _unsaid(k, preds) if r.modality in ("must_not", "should_not") and _avoid(r.text) not in taken]
    return [Bullet(_avoid(r.text), r.ref.label) for r in nearest_rules(rules, preds, limit)]


def section_guidance(k: SkillKnowledge, preds: list[Predicate], limit: int = 2) -> list[Bullet]:
    """Best practice in the skill's own words: the rules written next to the ones in play (same file and section
    first, then by shared words), restated as the method to follow here. Prohibitions are Must-avoid bullets."""
    candidates = [r for r in _unsaid(k, preds) if len(r.text.split()) >= 5
                  and r.modality not in ("must_not", "should_not")
                  and not re.search(r"\.md\b|\bsee\b|https?://", r.text, re.I)]
    return [Bullet(f"As the {r.section or 'general'} guidance says: {r.text}", r.ref.label)
            for r in nearest_rules(candidates, preds, limit)]


def rule_bullet(p: Predicate, how: str) -> Bullet:
    """Best practice: the skill's rule in its own words, then how it applies here."""
    return Bullet(f"Apply the rule \"{_clip(p.statement)[:160]}\" {how}", p.source.label)


def exception_bullet(p: Predicate, phrase: str) -> Bullet:
    return Bullet(f"Applying {p.id} to records in the context \"{phrase}\", which the rule's own exception "
                  f"(\"{p.exception}\") leaves out", p.source.label)


def complete(spec: RubricSpec, k: SkillKnowledge, preds: list[Predicate]) -> RubricSpec:
    """Top up Best-practice with the skill's neighbouring guidance and Must-avoid with its own warnings, so
    every section carries the skill's method, not only the shape's generic lines."""
    seen = {b.text for b in spec.must_avoid}
    avoid = spec.must_avoid + [b for b in pitfall_bullets(k, preds, MAX_BULLETS) if b.text not in seen]
    practice = spec.best_practice + section_guidance(k, preds, MAX_BULLETS - len(spec.best_practice))
    return RubricSpec(spec.must_do, avoid[:MAX_BULLETS], practice[:MAX_BULLETS])
