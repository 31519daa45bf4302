"""The skill's method in its own terms: the section titles, named tools, file types and distinctive words a
task's instruction and rubric should speak in.

Offline recipes build generic worlds (CSV logs, config files, a docs tree); without this, the instruction reads
the same for every skill and the retrieval probe cannot trace it back. We only quote short phrases (a section
title, single terms), never sentences of SKILL.md, and we never mention anything from tests/ or solution/.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field

from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.tasks.grounding import _NOISE, Grounding

_FENCE = re.compile(r"```.*?```", re.S)
_FRONTMATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_HEADING = re.compile(r"^(#{2,3})\s+(.+?)\s*#*\s*$", re.M)
_TERM = re.compile(r"[A-Za-z][A-Za-z0-9_+.-]{2,23}")
_MARKED = re.compile(r"\*\*([^*\n]{2,40})\*\*|`([^`\n]{2,40})`")
_EXT = re.compile(r"(?<![\w/])\.([a-z][a-z0-9]{1,5})\b")
_GENERIC_HEADING = re.compile(
    r"^(overview|introduction|summary|contents|table of contents|when to use.*|when not to use.*|usage|examples?|"
    r"installation|install|setup|set ?up|prerequisites|requirements|getting started|quick ?start|references?|"
    r"resources|see also|related.*|further reading|license|notes?|faq|support|credits|changelog|version.*|"
    r"additional resources|next steps|output format|purpose|description|about|expected .*|sample .*)$")
_RULEY = re.compile(r"\b(best practices?|pitfalls?|rules?|guidelines?|checklist|mistakes?|gotchas?|tips|"
                    r"principles?|validat\w*|verif\w*|troubleshoot\w*|errors?|safety|security|conventions?|"
                    r"standards?|quality|workflow|process|procedures?|steps?|method\w*|approach|strateg\w*|patterns?)\b", re.I)
# Words that carry no skill identity even when a skill repeats them (the probe's stop words already drop the rest).
_PLAIN = _NOISE | {
    "data", "output", "input", "result", "results", "value", "values", "code", "text", "line", "lines", "first",
    "step", "steps", "following", "based", "different", "specific", "including", "include", "provide", "provides",
    "support", "supports", "available", "common", "important", "required", "optional", "create", "check", "ensure",
    "want", "good", "best", "note", "notes", "work", "works", "working", "time", "section", "sections",
    "guide", "default", "custom", "simple", "multiple", "single", "main", "new", "type", "types", "list", "return",
    "returns", "number", "format", "version", "run", "running", "set", "get", "add", "instead", "without", "within",
    "across", "key", "keys", "task", "tasks", "request", "user", "files", "path", "paths", "directory", "folder",
    "help", "helps", "allows", "able", "usage", "usually", "typically", "example", "sample", "level", "high", "low",
    "large", "small", "full", "quick", "start", "end", "need", "needed", "uses", "via", "see", "etc", "e.g", "i.e",
}


@dataclass
class Method:
    """What the task may say about how the skill works."""

    sections: list[str]  # tidy section titles, method-bearing ones first
    rule_sections: list[tuple[str, list[str]]]  # (title, its distinctive terms) for rule/pitfall/process sections
    terms: list[str]  # the skill's distinctive terms, strongest first
    tools: list[str] = field(default_factory=list)
    file_types: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.terms or self.sections)


def _prose(text: str) -> str:
    """SKILL.md without front matter and code blocks: the part written for a reader."""
    return _FENCE.sub(" ", _FRONTMATTER.sub("", text))


def _tidy_heading(title: str) -> str:
    t = re.sub(r"[*_`#:]+|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", title)
    t = re.sub(r"^\W*(step\s*)?\d+[.):]?\s*", "", t.strip(), flags=re.I)
    t = re.sub(r"[^\w\s/&+.-]", "", t)
    t = re.sub(r"\b(workflow|step|phase|part|option|example)\s+\d+\b", r"\1", t, flags=re.I).strip(" .-")
    return " ".join(t.split()[:6])


def _split_sections(body: str) -> list[tuple[str, str]]:
    """(tidy title, prose) for each level-2/3 heading of SKILL.md; a section runs to the next heading of the same
    or a higher level, so a "Best practices" heading made only of sub-headings still has its content."""
    text = _FRONTMATTER.sub("", body)
    marks = list(_HEADING.finditer(text))
    out = []
    for i, m in enumerate(marks):
        level = len(m.group(1))
        end = next((n.start() for n in marks[i + 1:] if len(n.group(1)) <= level), len(text))
        title = _tidy_heading(m.group(2))
        if title and not _GENERIC_HEADING.match(title.lower()):
            out.append((title, _FENCE.sub(" ", text[m.end():end])))
    return out


def _norm(word: str) -> str:
    return word.strip(".-+").lower()


def _usable(word: str) -> bool:
    return len(word) >= 3 and word not in _PLAIN and bool(re.fullmatch(r"[a-z][a-z0-9_+.-]*[a-z0-9]", word))


def _term_counts(skill: SkillRecord) -> Counter[str]:
    """Words weighted by how strongly the skill marks them: name and description, bold/code spans and headings
    count more than running text, so tools and named concepts outrank everyday words."""
    counts: Counter[str] = Counter()
    prose = _prose(skill.body)

    def add(text: str, weight: int) -> None:
        for w in _TERM.findall(text):
            lw = _norm(w)
            if _usable(lw):
                counts[lw] += weight

    add(prose, 1)
    add(skill.description or "", 4)
    add((skill.name or "").replace("-", " "), 4)
    for m in _MARKED.finditer(prose):
        add(m.group(1) or m.group(2), 2)
    for m in _HEADING.finditer(prose):
        add(m.group(2), 2)
    return counts


def _tools(g: Grounding) -> list[str]:
    """Program names from the skill's documented commands (what its method runs)."""
    skip = {"cd", "echo", "export", "ls", "cat", "mkdir", "sudo", "rm", "cp", "mv", "source", "set", "if", "then",
            "fi", "for", "do", "done", "else", "while", "exit", "return", "true", "false", "chmod", "touch", "env"}
    out: list[str] = []
    for cmd in g.commands:
        words = [w for w in cmd.split() if not w.startswith(("-", "$", "#")) and "=" not in w]
        name = next((w for w in words if w not in skip), "")
        name = name.rsplit("/", 1)[-1]
        # Prose lines in unlabelled code blocks look like commands too; their first word is an English one.
        if re.fullmatch(r"[a-z][a-z0-9_.-]{1,20}", name) and name not in _PLAIN and name not in out:
            out.append(name)
    return out[:6]


def _file_types(skill: SkillRecord, g: Grounding) -> list[str]:
    seen: Counter[str] = Counter(m.group(1) for m in _EXT.finditer(_prose(skill.body)))
    for name in g.file_names:
        if "." in name and not name.endswith(".md"):
            seen[name.rsplit(".", 1)[-1].lower()] += 1
    bad = {"com", "org", "io", "net", "html5", "e", "g", "i", "etc", "md", "txt"}
    return [e for e, _ in seen.most_common(8) if e not in bad and e.isalnum()][:4]


def extract(skill: SkillRecord, g: Grounding) -> Method:
    """The skill's method vocabulary; deterministic for a given skill."""
    counts = _term_counts(skill)
    ranked = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    terms = [w for w in ranked if counts[w] >= 2][:30]
    sections = _split_sections(skill.body)
    ruley = [s for s in sections if _RULEY.search(s[0])] + [s for s in sections if not _RULEY.search(s[0])]
    rule_sections: list[tuple[str, list[str]]] = []
    for title, text in ruley:
        if any(title.lower() == t.lower() for t, _ in rule_sections):
            continue
        local = Counter(_norm(w) for w in _TERM.findall(text))
        # A section's own words, the ones the skill stresses elsewhere too first (its named concepts).
        own = [w for w in local if _usable(w) and w not in title.lower()]
        own.sort(key=lambda w: (-min(local[w], 3) - min(counts[w], 6), w))
        if len(own) >= 2:
            rule_sections.append((title, own[:4]))
    titles = [t for t, _ in sorted(sections, key=lambda s: not _RULEY.search(s[0]))]
    return Method(list(dict.fromkeys(titles))[:8], rule_sections[:6], terms, _tools(g), _file_types(skill, g))


def _join(items: list[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def instruction_context(m: Method, rng: random.Random) -> str:
    """One or two sentences placing the request in the skill's method: its procedure sections and its tools and
    file types. A bare list of the skill's frequent terms is deliberately not added: it would lift the lexical
    retrieval probe without carrying any method, and it reads as keyword stuffing in a natural request."""
    if not m:
        return ""
    parts = []
    if m.sections:
        secs = [s.lower() for s in m.sections[:3]]
        parts.append(rng.choice([f"Treat it the way our playbook does, with its {_join(secs)} advice in mind.",
                                 f"Our playbook covers this under {_join(secs)}, and the same reasoning applies here.",
                                 f"Work it the way our runbook sets out in its {_join(secs)} parts."]))
    if m.tools or m.file_types:
        bits = ([f"tools such as {_join(m.tools[:3])}"] if m.tools else []) + \
               ([f"{_join(m.file_types[:3])} files"] if m.file_types else [])
        parts.append(f"Normally this involves {', and '.join(bits)}; here, use what the container provides.")
    return " ".join(parts)


def best_practice(m: Method, rng: random.Random, fallback: list[str]) -> list[str]:
    """Best-practice bullets that restate the skill's rule/pitfall/process sections for this scenario, topped up
    with the recipe's own bullets when the skill has fewer such sections."""
    out = []
    for title, terms in m.rule_sections[:3]:
        lead = rng.choice(["Follow the playbook's", "Apply the", "Carry over the"])
        out.append(f"{lead} {title.lower()} guidance here, paying attention to {_join(terms)}")
    if not out and m.terms:
        out.append(f"Reason in the skill's own terms ({_join(m.terms[:5])}) and check each against the data")
    return (out + fallback)[:3]
