"""Limits on a measurable part of the documents a skill governs, and what a document past a length must contain.

Profile `skill_folder`: a skill about writing skills states limits on the parts of a skill folder - the `name`
(characters, allowed characters), the `description` (characters), SKILL.md or its body (lines) - and that a reference
file longer than N lines starts with a table of contents. Each rule keeps the part its sentence names ("SKILL.md
body" is the body, "SKILL.md" the whole file) and its comparator ("under 500" excludes 500, "max 1024" includes
it). A group needs at least two rules: one length alone is answered by counting, not by the skill; nor is a group
of only whole-file line counts and the contents-list rule (a blind reviewer solved one with `wc -l` and
`grep Contents`). And two of its rules must govern the front matter (the name, the description): a skill whose
folder rules are line counts of a method about something else (skill-creator's "under 500 lines", its contents
list) gave a length lint a blind reviewer called not about the skill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skill2env_dagster.knowledge.source import Doc, plain, sentences
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SourceRef

_UNDER = r"(?:under|below|fewer than|less than|<)"
_MAX = r"(?:max(?:imum)?|at most|no more than|up to|≤|<=)"
# (part, unit, regex); the number is group "n", the comparator word group "cmp" (or "after" for "N … maximum").
PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("name", "characters", re.compile(r"\bname\b[^.\n]{0,60}?(?P<cmp>" + _UNDER + "|" + _MAX + r")\s*(?P<n>\d{2,3})"
                                      r"\s*char", re.I)),
    ("name", "characters", re.compile(r"`?name`?[^.\n]{0,60}?\((?P<n>\d{2,3})\s*char\w*\s*(?P<after>max\w*)\)",
                                      re.I)),
    ("description", "characters", re.compile(r"\bdescription\b[^.\n]{0,60}?(?P<cmp>" + _UNDER + "|" + _MAX +
                                             r")\s*(?P<n>\d{3,4})\s*char", re.I)),
    ("description", "characters", re.compile(r"`?description`?[^.\n]{0,80}?\((?P<n>\d{3,4})\s*char\w*\s*"
                                             r"(?P<after>max\w*)\)", re.I)),
    ("body", "lines", re.compile(r"SKILL\.md\s+body[^.\n]{0,40}?(?P<cmp>" + _UNDER + "|" + _MAX +
                                 r")\s*(?P<n>\d{3,4})\s*lines", re.I)),
    ("file", "lines", re.compile(r"SKILL\.md\b(?!\s+body)[^.\n]{0,12}?(?P<cmp>" + _UNDER + "|" + _MAX +
                                 r")\s*(?P<n>\d{3,4})\s*lines", re.I)),
)
TOC = re.compile(r"files?\s*(?:longer than|over|more than|\(\s*>\s*)\s*(?P<n>\d{2,4})\s*lines\)?,?\s*include a "
                 r"table of contents", re.I)
SOFT = re.compile(r"\b(ideal(?:ly)?|if possible|roughly|about|around|approximately|aim for|~)", re.I)
CHARSET = re.compile(r"\b(?P<lower>lowercase )?letters, (?:digits|numbers),? and hyphens(?: only)?", re.I)
NAME_PATTERN = re.compile(r"`?name`?\s+(?:must\s+)?match(?:es)?\s+`(?P<re>\^[^`]{2,80}\$)`", re.I)
WC_ONLY = {"file", "toc"}  # parts a line count and a grep measure without reading the skill's rules
FRONT_MATTER = {"name", "name_charset", "name_pattern", "description"}
_SKILL_TOPIC = re.compile(r"SKILL\.md|frontmatter|skill folder", re.I)


@dataclass(frozen=True)
class Measure:
    """One rule on a part of a skill folder."""

    part: str  # name | name_charset | name_pattern | description | body | file | toc
    unit: str  # characters | lines | charset
    comparator: str  # lt | le | charset | toc
    value: int
    sentence: str
    ref: SourceRef
    lowercase: bool = False  # name_charset: lowercase letters only
    pattern: str = ""  # name_pattern: the regular expression the name must match, as the skill writes it


def _comparator(m: re.Match[str]) -> str:
    if m.groupdict().get("after"):
        return "le"
    return "lt" if re.fullmatch(_UNDER, m.group("cmp"), re.I) else "le"


def _sentence(line: str, at: int = 0) -> str:
    """The sentence of `line` that holds position `at` (where the rule matched), as plain text."""
    text = " ".join(plain(line).split()).lstrip("-*0123456789. ").strip()
    text = re.sub(r"^\[[ xX]?\]\s*", "", text)  # a checklist item's box: "[ ] YAML frontmatter with …"
    parts = sentences(text) or [text]
    anchor = plain(line[at:at + 30]).strip()[:12]
    return next((p for p in parts if anchor and anchor in p), parts[0])


def compile_measures(docs: list[Doc]) -> tuple[list[Measure], str]:
    """Every skill-folder rule the documents state (the first statement of each part wins), and why they make no
    task ('' when they do: the caller keeps the rules only then)."""
    if not any(_SKILL_TOPIC.search(" ".join(d.lines)) for d in docs[:1]):
        return [], ""
    found: dict[str, Measure] = {}
    for doc in docs:
        for n, line in doc.unfenced():
            for part, unit, pattern in PATTERNS:
                m = pattern.search(line)
                soft = m is not None and SOFT.search(line[m.start():m.end() + 12])
                if m and not soft and part not in found and 10 <= int(m.group("n")) <= 5000:
                    found[part] = Measure(part, unit, _comparator(m), int(m.group("n")),
                                          _sentence(line, m.start()), doc.ref(n))
            if (m := TOC.search(line)) and "toc" not in found:
                found["toc"] = Measure("toc", "lines", "toc", int(m.group("n")), _sentence(line, m.start()),
                                       doc.ref(n))
            if (m := NAME_PATTERN.search(line)) and "name_pattern" not in found and _compiles(m.group("re")):
                found["name_pattern"] = Measure("name_pattern", "pattern", "pattern", 0, _sentence(line, m.start()),
                                                doc.ref(n), pattern=m.group("re"))
            if (m := CHARSET.search(line)) and re.search(r"\bnames?\b", line, re.I) and "name_charset" not in found:
                found["name_charset"] = Measure("name_charset", "charset", "charset", 0,
                                                _sentence(line, m.start()), doc.ref(n), bool(m.group("lower")))
    if "body" in found:
        found.pop("file", None)  # the body rule is the precise one; "SKILL.md under N lines" restates it
    return list(found.values()), _refusal(found)


def _refusal(found: dict[str, Measure]) -> str:
    """Why the rules found make no task ('' when they do): too few, or too little about the skill's metadata."""
    if not found:
        return ""
    where = ", ".join(sorted({m.ref.label for m in found.values()}))
    if len(found) < 2:
        return f"{where}: one skill-folder limit alone is answered by counting, not by the skill"
    if set(found) <= WC_ONLY:
        return (f"{where}: whole-file line counts and a contents heading only: `wc -l` and `grep Contents` answer "
                "them")
    if len(set(found) & FRONT_MATTER) < 2:
        return (f"{where}: mostly line counts ({', '.join(sorted(found))}) of a skill whose method is more than "
                "them: a length lint, not about the skill (blind review 2); a skill-folder task needs two rules on "
                "the front matter (the name's length, characters or pattern, the description's length)")
    return ""


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def predicate(measures: list[Measure]) -> Predicate:
    first = min(measures, key=lambda m: (m.ref.file != "SKILL.md", m.ref.file, m.ref.line))
    params = {"profile": "skill_folder",
              "rules": [{"part": m.part, "unit": m.unit, "comparator": m.comparator, "value": m.value,
                         "sentence": m.sentence, "file": m.ref.file, "line": m.ref.line, "lowercase": m.lowercase,
                         "pattern": m.pattern}
                        for m in measures],
              "sources": [m.ref.label for m in measures]}
    statement = "; ".join(m.sentence for m in measures)
    return Predicate(id="R0", kind="measure", subject="skill folders", statement=statement[:400], params=params,
                     source=first.ref)
