"""What keeps a creator's task about its skill: the deciding rules are the skill's own, and the world does not
hand them over.

A blind review found tasks whose answer was decided by rules the task invented (score bands, intent word lists) and
environments with a "policy" document quoting the skill, so that reading the document made the skill unnecessary.
Two parts of that are mechanical and enforced here (stated to the model by creator/rules.py):
- every number in a blueprint rule's statement appears in the skill lines it cites (an invented threshold is
  not the skill's rule);
- no line of the skill's documents of QUOTE_MIN_CHARS or more characters (markup and spacing ignored) appears in
  instruction.md or a text file of environment/.
A paraphrase is not caught; the prompt states the rule and the blind review measures it.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import ahocorasick

from skill2env_dagster.gates.static_checks import LEAK_MIN_LINE
from skill2env_dagster.knowledge.lines import split_lines

QUOTE_MIN_CHARS = LEAK_MIN_LINE  # the no-leak rule's length: a line this long repeated is a copy, not a coincidence
DOC_SUFFIXES = {".md", ".markdown", ".rst", ".txt"}
MAX_SCANNED_BYTES = 4 << 20  # a world's large data file is scanned up to here
_CITED = re.compile(r"[\w./-]+\.\w+:\d+(?:\s*-\s*\d+)?")
# A number, not an identifier's digits (q02, T-4107, P3 are names of things, not thresholds).
_NUMBER = re.compile(r"(?<![A-Za-z_\d.,])(?<![A-Za-z]-)\d+(?:[.,]\d+)*")
_MARKUP = re.compile(r"[*_`>#|\-\u2013\u2014:;,.!?()\[\]\"']+")


def numbers(text: str) -> set[str]:
    """The numbers written in a text (not an identifier's digits), thousands separators, leading zeros and
    trailing zeros of decimals ignored."""
    out = set()
    for n in _NUMBER.findall(text):
        n = n.replace(",", "")
        out.add(n.rstrip("0").rstrip(".") if "." in n else n.lstrip("0") or "0")
    return out


def unsourced_numbers(statement: str, cited: str) -> list[str]:
    """Numbers of a rule's statement that the cited skill lines do not contain (sorted); a citation written in the
    statement (`SKILL.md:64`, `references/x.md:3-9`) is not a number of the rule."""
    own = _CITED.sub(" ", statement)
    return sorted(numbers(own) - numbers(cited), key=lambda n: (len(n), n))


def normal(line: str) -> str:
    """A line without markdown markup, punctuation runs, case and spacing differences."""
    return " ".join(_MARKUP.sub(" ", line).lower().split())


def quotable(files: dict[str, list[str]]) -> dict[str, str]:
    """The skill's document lines long enough to count as a quote: normalised text -> `path:line`."""
    out: dict[str, str] = {}
    for path, lines in files.items():
        if PurePosixPath(path).suffix.lower() not in DOC_SUFFIXES:
            continue
        for n, line in enumerate(lines, 1):
            key = normal(line)
            if len(key) >= QUOTE_MIN_CHARS:
                out.setdefault(key, f"{path}:{n}")
    return out


def _seen_files(task: Path) -> list[Path]:
    env = task / "environment"
    files = [task / "instruction.md"]
    if env.is_dir():
        files += sorted(p for p in env.rglob("*") if p.is_file() and not p.is_symlink())
    return [p for p in files if p.is_file()]


def quoted_skill_lines(task: Path, files: dict[str, list[str]]) -> list[str]:
    """`where repeats path:line 'text'` for each file the solver sees that repeats a skill document line."""
    lines = quotable(files)
    if not lines:
        return []
    automaton = ahocorasick.Automaton()
    for key, where in lines.items():
        automaton.add_word(key, (key, where))
    automaton.make_automaton()
    found = []
    for p in _seen_files(task):
        with p.open("rb") as fh:
            text = fh.read(MAX_SCANNED_BYTES).decode("utf-8", errors="replace")
        seen = "\n".join(normal(ln) for ln in split_lines(text))
        hits = list(dict.fromkeys(hit for _, hit in automaton.iter(seen)))
        found += [f"{p.relative_to(task)} repeats {where} ({key[:70]!r})" for key, where in hits[:3]]
    return found
