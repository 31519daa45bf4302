"""The skill's own sentences for a rubric, each in its own polarity and only where it bears on the rules in play.

Must-avoid takes only what the skill warns against or forbids ("Never…", "Don't…", "Avoid…", a pitfall that names
a mistake); Best-practice takes only its advice ("Use…", "Keep…", "should…"). A sentence is in play when it is
written on a rule's own lines (the paragraph or row the task quotes), so it ties to that rule
(`gates.rubric_ties`); advice about anything else never reaches the rubric, and nothing is rewritten into the other
polarity ("Avoid this: Pooling…").
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from skill2env_dagster.models.knowledge import SkillKnowledge, SourceRef

_WARNING_START = re.compile(r"^\W*(?:don'?t|do not|never|avoid|no\s|not\s|stop\s|beware|watch out|must not|should "
                            r"not|cannot|can't|won't)\b", re.I)
_WARNING_WORDS = re.compile(r"\b(?:mistake|anti-?pattern|pitfall|wrong|incorrect|bad practice|trap|gotcha|never|"
                            r"must not|do not|don'?t)\b", re.I)
_ADVICE_START = re.compile(r"^\W*(?:use|keep|prefer|always|add|include|check|verify|define|write|set|make|run|"
                           r"apply|document|record|confirm|start|follow|list|name|split|put|give|state|respond|"
                           r"review|ensure|treat|count|measure|compare|track|update|escalate|notify|flag|mark)\b",
                           re.I)
_ADVICE_WORDS = re.compile(r"\b(?:should|must|always|prefer|recommended|best practice|make sure|ensure)\b", re.I)
_STOP = {"the", "a", "an", "and", "or", "of", "to", "in", "for", "on", "is", "are", "be", "with", "it", "that",
         "this", "not", "do", "don't", "never", "always", "use", "must", "should", "you", "your", "when", "if", "at",
         "by", "as", "from", "within", "than", "more", "less", "each", "every", "all", "any"}


@dataclass(frozen=True)
class Sentence:
    text: str
    ref: SourceRef
    section: str
    modality: str = ""  # the rule's (must, must_not, should, should_not, prefer); "pitfall" for a named mistake


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9_-]{2,}", text.lower()) if w not in _STOP}


def is_warning(s: Sentence) -> bool:
    """Forbids (a must-not rule, a sentence that opens with a prohibition) or names a mistake (a pitfall that says
    so); a description that merely contains "don't" is not a warning."""
    if _ADVICE_START.search(s.text):
        return False
    if _WARNING_START.search(s.text) or s.modality in ("must_not", "should_not"):
        return True
    return s.modality == "pitfall" and bool(_WARNING_WORDS.search(s.text))


def is_advice(s: Sentence) -> bool:
    """Says what to do: a must/should/prefer rule or an imperative, that forbids nothing."""
    if is_warning(s) or _WARNING_WORDS.search(s.text):
        return False
    return s.modality in ("must", "should", "prefer") or bool(_ADVICE_START.search(s.text)
                                                            or _ADVICE_WORDS.search(s.text))


def readable(text: str) -> bool:
    """A sentence a rubric can carry: not a label, a fragment or a lead-in."""
    t = " ".join(text.split())
    return (6 <= len(t.split()) <= 45 and bool(re.match(r"[A-Z0-9`\"“(*]", t)) and not t.endswith(":")
            and not re.match(r"[A-Za-z ]+:\s*$", t) and "[" not in t and "http" not in t)


def _sentences(k: SkillKnowledge) -> list[Sentence]:
    out = [Sentence(r.text, r.ref, r.section, r.modality) for r in k.rules]
    out += [Sentence(p.text, p.ref, p.section, "pitfall") for p in k.pitfalls if p.kind == "pitfall"]
    seen: set[str] = set()
    uniq = []
    for s in out:
        key = " ".join(s.text.lower().split())
        if key not in seen:
            seen.add(key)
            uniq.append(s)
    return uniq


def on_lines(k: SkillKnowledge, sources: set[str], exclude: Collection[str] = ()) -> list[Sentence]:
    """The skill's sentences written on the rules' own lines (the paragraphs and rows a task quotes as its rules),
    other than the rules themselves (`exclude`: their statements; a sentence inside one is the rule), in the order
    of the skill."""
    said = " | ".join(exclude)
    out = [s for s in _sentences(k) if s.ref.label in sources and readable(s.text)
           and " ".join(s.text.lower().split()) not in said]
    return sorted(out, key=lambda s: (s.ref.file, s.ref.line))


def warnings(k: SkillKnowledge, sources: set[str], exclude: Collection[str] = (),
             limit: int = 2) -> list[Sentence]:
    return [s for s in on_lines(k, sources, exclude) if is_warning(s)][:limit]


def advice(k: SkillKnowledge, sources: set[str], exclude: Collection[str] = (), limit: int = 2) -> list[Sentence]:
    return [s for s in on_lines(k, sources, exclude) if is_advice(s)][:limit]


def naming(k: SkillKnowledge, terms: Collection[str], exclude: Collection[str] = ()) -> list[Sentence]:
    """The skill's sentences anywhere in it that name one of `terms` (a flag's label, a forbidden type) as a whole
    word: a warning about the thing a rule decides bears on the task even when it is written in another section
    ("Never delete duplicates without explicit confirmation" for the `Suspicious duplicates` flag)."""
    said = " | ".join(exclude)
    pats = [re.compile(r"\b" + re.escape(t.lower()) + r"\b") for t in terms if len(t) >= 4]
    out = [s for s in _sentences(k) if readable(s.text) and " ".join(s.text.lower().split()) not in said
           and any(p.search(s.text.lower()) for p in pats)]
    return sorted(out, key=lambda s: (s.ref.file, s.ref.line))
