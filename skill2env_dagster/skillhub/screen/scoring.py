"""From evidence to verdicts: every signal (a line rule hit, a frontmatter requirement, a vocabulary match, a lure
shape) carries its rule's weight and the weight of the file it was found in; a code is reported when the summed
weights of its distinct rules reach the code's threshold (rule book `scoring`).

One place for the arithmetic, so a new kind of signal only has to say what it found and how strong it is.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from skill2env_dagster.models.skill import Finding
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen.rules import CompiledBook


@dataclass(frozen=True)
class Signal:
    """One piece of evidence: `rule_id` counts once per skill with `weight` x the strongest `file_weight`."""

    rule_id: str
    weight: float
    file_weight: float
    finding: Finding


def file_weight(path: str, skill_file: str, code: ReasonCode, book: CompiledBook) -> float:
    """SKILL.md weighs 1.0; code files `other_files`; other supporting files `doc_files` when the code sets it."""
    if path == skill_file:
        return 1.0
    spec = book.book.scoring[code]
    if spec.doc_files is not None and not book.code_files.search(path):
        return spec.doc_files
    return spec.other_files


def score(signals: list[Signal], book: CompiledBook) -> list[Finding]:
    """Findings of the codes whose score reaches the threshold, in signal order.

    Per code: main = sum over rules of weight x strongest file weight where that is 1.0 (SKILL.md) or where one rule
    alone reaches the threshold (conclusive evidence, e.g. exfiltration code in a script); other evidence found only
    outside SKILL.md adds at most `other_files_cap`; counter-evidence (negative weight) lowers the score and is never
    reported.
    """
    by_rule: dict[str, list[Signal]] = defaultdict(list)
    for s in signals:
        by_rule[s.rule_id].append(s)
    main: dict[ReasonCode, float] = defaultdict(float)
    other: dict[ReasonCode, float] = defaultdict(float)
    against: dict[ReasonCode, float] = defaultdict(float)
    for items in by_rule.values():
        code, weight = items[0].finding.code, items[0].weight
        strongest = max(s.file_weight for s in items)
        conclusive = weight * strongest + 1e-9 >= book.book.scoring[code].threshold
        if weight < 0:
            against[code] += weight * strongest
        else:
            (main if strongest >= 1.0 or conclusive else other)[code] += weight * strongest
    reached: set[ReasonCode] = set()
    for code in set(main) | set(other):
        spec = book.book.scoring[code]
        extra = other[code] if spec.other_files_cap is None else min(other[code], spec.other_files_cap)
        if main[code] + extra + against[code] + 1e-9 >= spec.threshold:
            reached.add(code)
    found = [s.finding for s in signals if s.weight > 0 and s.finding.code in reached]
    return found + _implied(found, reached, book)


def _implied(found: list[Finding], reached: set[ReasonCode], book: CompiledBook) -> list[Finding]:
    """A finding per code implied by a reached one (rule book `scoring.<code>.implies`), on the first evidence
    line of the implying code: a credential of a third-party account is only of use against that party's service.
    """
    out: list[Finding] = []
    for code in sorted(reached, key=lambda c: c.value):
        first = next(f for f in found if f.code == code)
        for implied in book.book.scoring[code].implies:
            if implied not in reached and all(f.code != implied for f in out):
                out.append(first.model_copy(update={"code": implied, "rule": f"{first.rule}@{implied.value}"}))
    return out
