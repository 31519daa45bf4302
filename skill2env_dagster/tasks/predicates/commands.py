"""Commands a skill blocks: a section about what is blocked, forbidden or never run, listing command patterns as
code spans ("- `git push` (all variants including `--force`)", "- `git clean -f` / `git clean -fd`").

Each pattern is a program, a subcommand and the exact words that must come with it; a command line is blocked when
one of its simple commands (split at `&&`, `||`, `;` and `|`) has that program, that subcommand as its first word
after the program that is not an option, and every other word of the pattern among its words. A group needs three
patterns of one program at least: fewer is a lookup, not a guard to audit sessions against.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass

from skill2env_dagster.knowledge.source import Doc, blocks
from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SourceRef

HEADING = re.compile(r"\b(block(?:ed|s)?|forbidden|dangerous|destructive|never run|not allowed|denied|deny|"
                     r"prohibited)\b", re.I)
MIN_PATTERNS = 3


@dataclass(frozen=True)
class Pattern:
    text: str  # as the skill writes it: "git clean -fd"
    words: tuple[str, ...]  # program, subcommand, then the words that must come with it
    ref: SourceRef


def _pattern(span: str) -> tuple[str, ...] | None:
    try:
        words = tuple(shlex.split(span))
    except ValueError:
        return None
    if len(words) < 2 or not re.fullmatch(r"[a-z][\w.-]*", words[0]) or words[1].startswith("-"):
        return None
    return words


# A script the skill links to ("[scripts/x.sh](scripts/x.sh)") or names as a path in a code span.
SCRIPT_LINK = re.compile(r"\]\(\s*((?:\./)?[\w./-]+\.(?:sh|py|js|ts|bash))\s*\)"
                         r"|`((?:\./)?(?:scripts|hooks|bin)/[\w.-]+)`")


def missing_guard(docs: list[Doc], files: Collection[str]) -> str:
    """Why a skill's blocked list makes no task when the guard that applies it is a script the skill links to but
    does not ship: what is blocked is then decided by that script's matching, and a reading of ours would be graded
    instead (a blind reviewer: "the skill defines its guard as its bundled hook script", absent from the folder)."""
    have = {f.lstrip("./") for f in files}
    for doc in docs:
        for n, line in doc.unfenced():
            for m in SCRIPT_LINK.finditer(line):
                path = (m.group(1) or m.group(2)).lstrip("./")
                if path not in have:
                    return (f"{doc.ref(n).label}: the skill's guard is its script {path}, which the folder does not "
                            "ship: what it blocks is decided by that script's matching, not by a rule the task could "
                            "state")
    return ""


def compile_commands(docs: list[Doc]) -> list[Pattern]:
    """The blocked command patterns of the first section that lists at least MIN_PATTERNS of one program."""
    for doc in docs:
        found: dict[str, list[Pattern]] = {}
        for b in blocks(doc):
            if b.kind != "item" or not HEADING.search(b.section):
                continue
            lead = re.match(r"\s*((?:`[^`]+`\s*(?:/|,|or)?\s*)+)", b.text)
            if not lead:
                continue
            for span in re.findall(r"`([^`]+)`", lead.group(1)):
                words = _pattern(span)
                if words:
                    found.setdefault(b.section, []).append(Pattern(span.strip(), words, doc.ref(b.line)))
        for patterns in found.values():
            programs = {p.words[0] for p in patterns}
            if len(patterns) >= MIN_PATTERNS and len(programs) == 1:
                return patterns
    return []


def predicate(patterns: list[Pattern], section: str = "") -> Predicate:
    first = patterns[0]
    params = {"program": first.words[0], "section": section,
              "patterns": [{"text": p.text, "words": list(p.words), "line": p.ref.line, "file": p.ref.file}
                           for p in patterns],
              "sources": sorted({p.ref.label for p in patterns})}
    statement = "Blocked: " + "; ".join(p.text for p in patterns)
    return Predicate(id="R0", kind="command", subject=f"{first.words[0]} commands", statement=statement[:400],
                     params=params, source=first.ref)


def matches(words: list[str], pattern: list[str]) -> bool:
    """One simple command (its words) against one pattern (the reading the task states)."""
    if not words or words[0] != pattern[0]:
        return False
    sub = next((w for w in words[1:] if not w.startswith("-")), None)
    return sub == pattern[1] and all(w in words[1:] for w in pattern[2:])


def simple_commands(line: str) -> list[list[str]]:
    """A command line's simple commands, as words (shell quoting respected)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
    lexer.whitespace_split = True
    out: list[list[str]] = [[]]
    for tok in lexer:
        if tok in ("&&", "||", ";", "|", "&"):
            out.append([])
        else:
            out[-1].append(tok)
    return [c for c in out if c]
