"""Rules become checkable predicates: the general mechanism that makes an offline task skill-specific.

Only what the text allows is compiled: a numeric limit on a measurable quantity, a forbidden / required /
replaced token, a naming or format convention, the order of a numbered procedure, the items of a checklist, a
reference table, the headings of an output template, a table of documented defaults. Each candidate keeps the
skill's own sentence and line, and a score that prefers crisp, prescriptive rules from SKILL.md itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skill2env_dagster.knowledge.procedures import performed
from skill2env_dagster.knowledge.rules import modality
from skill2env_dagster.knowledge.source import Doc
from skill2env_dagster.models.blueprint import Predicate, PredicateKind
from skill2env_dagster.models.knowledge import LookupTable, Procedure, SkillKnowledge, SourceRef, Threshold
from skill2env_dagster.tasks.predicates.service import service_predicate
from skill2env_dagster.tasks.worlds.cases import classify_column

Family = str  # entries | procedure | checklist | table | template | defaults | service
TEXT_UNITS = {"characters", "words", "sentences", "items"}
NUMBER_UNITS = {"percent", "seconds", "ms", "minutes", "hours", "days", "weeks", "months", "kb", "mb", "retries",
                "attempts", "times", "requests", "calls", "lines", "pages", "slides", "columns", "rows", "steps",
                "files", "px", "pt", "tokens", "digits", "levels"}
CONVENTIONS = {"kebab_case", "snake_case", "camel_case", "pascal_case", "upper_snake", "iso_date", "semver",
               "conventional_commit", "hex_color"}
_ORDERED_TITLE = re.compile(r"\b(workflow|procedure|process|steps?|phases?|stages?|lifecycle|order|sequence|flow|"
                            r"pipeline|how to|instructions|runbook|playbook|setup|checklist|protocol|approach|"
                            r"method|quick ?start|getting started|usage)\b", re.I)
_UNORDERED_TITLE = re.compile(r"\b(tips?|best practices?|principles?|notes?|pitfalls?|mistakes?|guidelines?|rules?|"
                              r"considerations?|ideas?|examples?|features?|capabilities|benefits)\b", re.I)
_GENERIC_SUBJECT = {"it", "this", "that", "there", "they", "you", "we", "now", "s", "issue", "example", "e.g", "use",
                    "value", "values", "total", "number", "result", "results", "data", "time", "more", "less",
                    "the", "a", "an", "each", "every", "all", "any", "your", "our", "its", "their", "of", "for", "to",
                    "in", "on", "with", "and", "or", "is", "are", "be", "should", "must"}
_PRESCRIPTIVE = re.compile(r"\b(keep|limit|max(?:imum)?|min(?:imum)?|at most|at least|no more than|no longer than|"
                           r"must|should|never|always|within|cap|require[sd]?|target|aim for|ensure|only)\b", re.I)

_NARRATIVE = re.compile(r"\b(saw|were|was|had|did|detected|achieved|reported|grew|increased|decreased|dropped)\b",
                        re.I)


@dataclass(frozen=True)
class Candidate:
    """A predicate the skill's text supports, before the blueprint numbers the ones it puts in play."""

    family: Family
    predicate: Predicate
    score: float

    @property
    def kind(self) -> PredicateKind:
        return self.predicate.kind


def _title(text: str) -> str:
    """A section title as a name: numbering ('5.', 'Step 2:', 'Phase 1 -') and markup removed."""
    t = re.sub(r"^\W*(?:(?:step|phase|part|stage)\s*)?\d+(?:\.\d+)*\s*[.):\-–—]?\s*", "", text.strip(), flags=re.I)
    return re.sub(r"[*_`#]", "", t).strip() or text.strip()


def _pred(kind: PredicateKind, subject: str, statement: str, source: SourceRef, params: dict[str, Any],
          exception: str = "") -> Predicate:
    if kind in ("order", "coverage", "lookup", "sections"):
        subject = _title(subject)
    return Predicate(id="R0", kind=kind, subject=subject.strip()[:80], statement=" ".join(statement.split())[:400],
                     params=params, exception=exception, source=source)


def _home(ref: SourceRef, skill_file: str) -> float:
    """Rules written in SKILL.md itself outrank those in reference files."""
    return 1.0 if ref.file == skill_file else 0.6


def _subject(words: str) -> str:
    kept = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]*", words.lower()) if w not in _GENERIC_SUBJECT]
    return " ".join(kept[-3:])


def _limits(k: SkillKnowledge, skill_file: str) -> list[Candidate]:
    out = []
    for t in k.thresholds:
        if t.unit not in TEXT_UNITS | NUMBER_UNITS or t.value <= 0 or t.value > 100_000:
            continue
        subject = _subject(t.subject)
        if len(subject) < 3 or not (modality(t.text) or _PRESCRIPTIVE.search(t.text)):
            continue
        if not modality(t.text) and _NARRATIVE.search(t.text):
            continue  # a reported outcome ('saw a 40% increase within 90 days'), not a limit anyone must keep
        if t.unit == "percent" and t.value > 100:
            continue
        out.append(Candidate("entries", _pred(
            "limit", subject, t.text, t.ref,
            {"unit": t.unit, "comparator": t.comparator, "value": t.value, "numeric": t.unit not in TEXT_UNITS},
            exception=t.scope), 2.0 * _home(t.ref, skill_file) + (0.5 if t.scope else 0) + _crisp(t)))
    return out


def _crisp(t: Threshold) -> float:
    """Short rule sentences ("Keep subject lines under 50 characters") beat long descriptive ones."""
    return max(0.0, 1.0 - len(t.text.split()) / 40)


def _clean_token(token: str, k: SkillKnowledge) -> bool:
    if not 2 <= len(token) <= 40 or len(token.split()) > 4 or not re.search(r"[A-Za-z]", token):
        return False
    if any(a.path.endswith(token) or token.endswith(a.path) for a in k.artifacts):
        return False  # the skill's own files are not tokens a world can contain
    return not re.search(r"[<>{}\[\]]|\.md$|^/|^\.", token)


_TOKEN_KIND: dict[str, PredicateKind] = {"forbid": "forbid_token", "require": "require_token",
                                         "replace": "replace_token"}


def _tokens(k: SkillKnowledge, skill_file: str) -> list[Candidate]:
    out = []
    for t in k.token_rules:
        if not _clean_token(t.token, k) or (t.polarity == "replace" and not _clean_token(t.replacement, k)):
            continue
        kind = _TOKEN_KIND[t.polarity]
        params = {"token": t.token, **({"replacement": t.replacement} if t.replacement else {})}
        out.append(Candidate("entries", _pred(kind, "code", t.text, t.ref, params, t.exception),
                             (2.2 if kind == "replace_token" else 1.6) * _home(t.ref, skill_file)))
    return out


def _formats(k: SkillKnowledge, skill_file: str) -> list[Candidate]:
    out = []
    for c in k.conventions:
        if c.kind not in CONVENTIONS:
            continue
        subject = _subject(c.subject) or "name"
        out.append(Candidate("entries", _pred("format", subject, c.text, c.ref, {"convention": c.kind}),
                             2.0 * _home(c.ref, skill_file)))
    return out


_DANGLING = {"with", "and", "or", "of", "to", "for", "the", "a", "an", "in", "on", "by", "from", "into", "as", "at",
             "via", "using", "per", "that", "if", "when"}


def _label(text: str) -> str:
    """A procedure step's short label: its first clause (at most eight words, no dangling preposition)."""
    first = re.split(r"[:;—–(]| - |\. ", text, maxsplit=1)[0]
    words = first.split()[:8]
    while len(words) > 1 and words[-1].lower().strip(".,") in _DANGLING:
        words.pop()
    if len(words) < 2:
        words = text.split()[:8]
        while len(words) > 1 and words[-1].lower().strip(".,:") in _DANGLING:
            words.pop()
    return " ".join(words).strip(" .,:;")


def is_ordered(p: Procedure) -> bool:
    return p.kind == "step_headings" or (bool(_ORDERED_TITLE.search(p.title)) and not _UNORDERED_TITLE.search(p.title))


def _procedures(k: SkillKnowledge, skill_file: str) -> list[Candidate]:
    out = []
    for p in k.procedures:
        labels = [_label(s.text) for s in p.steps]
        if len(set(labels)) != len(labels) or any(len(x) < 3 for x in labels):
            continue
        if not performed(p):
            continue  # numbered topics ('1. Reentrancy 2. Access Control'), not steps anyone performs
        params = {"steps": labels, "optional": [s.optional for s in p.steps],
                  "details": [s.text for s in p.steps], "lines": [s.ref.line for s in p.steps]}
        statement = f"{p.title}: " + "; ".join(f"{i + 1}. {x}" for i, x in enumerate(labels))
        ordered = is_ordered(p)
        out.append(Candidate("procedure" if ordered else "checklist",
                             _pred("order" if ordered else "coverage", p.title, statement, p.ref, params),
                             (2.0 if ordered else 1.2) * _home(p.ref, skill_file) + 0.1 * min(len(labels), 7)))
    for c in k.checklists:
        labels = [_label(i.text) for i in c.items][:10]
        if len(set(labels)) == len(labels) >= 3:
            out.append(Candidate("checklist", _pred(
                "coverage", c.title, f"{c.title}: " + "; ".join(labels), c.ref,
                {"steps": labels, "optional": [False] * len(labels), "details": [i.text for i in c.items][:10],
                 "lines": [i.ref.line for i in c.items][:10]}), 1.5 * _home(c.ref, skill_file)))
    return out


# A value column that describes its key rather than deciding something about it: looking a key up in it is a
# trivial lookup (the answer is the noun's gloss), not the skill's method.
_DESCRIPTIVE_COLUMN = re.compile(r"^(?:descriptions?|definitions?|purpose|meaning|explanation|notes?|details?|"
                                 r"examples?|use ?cases?|use for|best for|when to use|what it does|what it tells.*|"
                                 r"resources?|reference( file)?|links?|urls?|sources?|how|reality|hypothesis|"
                                 r"comments?|summary|info(?:rmation)?)$", re.I)


_GLOSS = re.compile(r"^(?:descriptions?|definitions?|purpose|meaning|explanation|notes?|details?|examples?|"
                    r"comments?|summary)$", re.I)


def _named_by_key(keys: list[str], values: list[str]) -> bool:
    """The answer is spelled out in the key itself for most rows ('kanban.md' → 'Kanban'): nothing to decide."""
    hits = sum(bool(v.split()) and v.split()[0].lower().strip("`*") in k.lower()
               for k, v in zip(keys, values, strict=True))
    return 2 * hits > len(keys)


def decision_values(header: str, values: list[str]) -> bool:
    """A column whose cells are short decided values (a level, an owner, a period, a model, a threshold) rather
    than prose glosses, links or file paths. A definition list ('**term**: text') has no header to go by, so its
    values must also repeat or carry numbers."""
    if _DESCRIPTIVE_COLUMN.match(header.strip()) and header.strip().lower() != "definition":
        return False
    sizes = sorted(len(v.split()) for v in values)
    if sizes[-1] > 6 or sizes[len(sizes) // 2] > 4 or any(re.search(r"://|\.md\b|^\S+/\S+$", v) for v in values):
        return False
    if header.strip().lower() == "definition":
        return len(set(values)) < len(values) or 2 * sum(bool(re.search(r"\d", v)) for v in values) >= len(values)
    return True


def _table_columns(t: LookupTable) -> tuple[int, int] | None:
    """(key column, value column): a key column with unique short values and a value column that is not, holding
    decided values (`decision_values`), else the first such pair a signal-word reading can use."""
    n = len(t.rows)
    fallback = None
    for key in range(len(t.columns)):
        keys = [r[key] for r in t.rows]
        if len(set(keys)) != n or max(len(x) for x in keys) > 40 or _GLOSS.match(t.columns[key].strip()) \
                or any(re.search(r"://|^\S+/\S+$|\.\w{1,4}$", x.strip("`")) for x in keys):
            continue  # a gloss or a file name is not a case anyone decides
        for value in range(len(t.columns)):
            vals = [r[value] for r in t.rows]
            if value != key and len(set(vals)) >= 2 and max(len(v) for v in vals) <= 60:
                if decision_values(t.columns[value], vals) and not _named_by_key(keys, vals):
                    return key, value
                fallback = fallback or (key, value)
    return fallback


def _tables(k: SkillKnowledge, skill_file: str) -> list[Candidate]:
    out = []
    for t in k.tables:
        cols = _table_columns(t)
        if len(t.rows) < 3 or cols is None:
            continue
        key, value = cols
        params = {"columns": t.columns, "key": key, "value": value, "rows": t.rows, "lines": t.row_lines}
        if not decision_values(t.columns[value], [r[value] for r in t.rows]) and classify_column(
                _pred("lookup", t.title, "", t.ref, params)) is None:
            continue  # a glossary: looking a term up is not the skill's method (no signal words to classify by)
        statement = f"{t.title}: {t.columns[key]} → {t.columns[value]}"
        out.append(Candidate("table", _pred("lookup", t.title, statement, t.ref, params),
                             1.6 * _home(t.ref, skill_file) + 0.05 * min(len(t.rows), 10)))
    return out


_GENERIC_TITLE = re.compile(r"^(output( format)?|format|template|structure|example|usage|report|document|"
                            r"output — .*|output - .*|.*template)$", re.I)


def _template_name(title: str, headings: list[str]) -> str:
    """A template's name: its section title, or its first heading when the title only says 'Output'."""
    if not _GENERIC_TITLE.match(_title(title)):
        return title
    first = re.split(r"[:\[(—–-]", headings[0])[0].strip() if headings else ""
    return first or title


def _templates(k: SkillKnowledge, skill_file: str) -> list[Candidate]:
    out = []
    for t in k.templates:
        heads = [h for h in t.headings if not re.fullmatch(r"\[.*\]|.*\{.*\}.*", h)]
        if len(heads) >= 3 and len(set(heads)) == len(heads):
            out.append(Candidate("template", _pred(
                "sections", _template_name(t.title, t.headings), f"{t.title}: " + " / ".join(heads), t.ref,
                {"headings": heads[:10], "fields": t.fields[:8]}), 1.8 * _home(t.ref, skill_file)))
    return out


def _defaults(k: SkillKnowledge, skill_file: str) -> list[Candidate]:
    groups: dict[tuple[str, int], list] = {}
    for d in k.defaults:
        if d.origin == "table" and re.fullmatch(r"[A-Za-z0-9_.:-]{2,40}", d.key.strip("`")) \
                and re.fullmatch(r"[^|]{1,30}", d.value) and d.value.lower() not in ("required", "none"):
            groups.setdefault((d.ref.file, d.ref.line // 40), []).append(d)
    out = []
    for ds in groups.values():
        if len(ds) >= 3:
            pairs = [[d.key.strip("`"), d.value.strip("`")] for d in ds][:12]
            out.append(Candidate("defaults", _pred(
                "default", "settings", "; ".join(f"{a} defaults to {b}" for a, b in pairs), ds[0].ref,
                {"pairs": pairs, "lines": [d.ref.line for d in ds][:12]}), 2.0 * _home(ds[0].ref, skill_file)))
    return out


def compile_candidates(k: SkillKnowledge, skill_file: str = "SKILL.md",
                       docs: Sequence[Doc] = ()) -> list[Candidate]:
    """Every predicate the skill's text supports, best first (deterministic order). `docs` (the skill's documents)
    are needed only for a documented local API, whose contract spans lines no knowledge item keeps."""
    service = service_predicate(list(docs))
    found = ([Candidate("service", service, 3.0)] if service else []) + (
        _limits(k, skill_file) + _tokens(k, skill_file) + _formats(k, skill_file) + _procedures(k, skill_file)
        + _tables(k, skill_file) + _templates(k, skill_file) + _defaults(k, skill_file))
    return sorted(found, key=lambda c: (-c.score, c.predicate.source.file, c.predicate.source.line, c.kind))


def families(cands: list[Candidate]) -> dict[Family, list[Candidate]]:
    out: dict[Family, list[Candidate]] = {}
    for c in cands:
        out.setdefault(c.family, []).append(c)
    return out
