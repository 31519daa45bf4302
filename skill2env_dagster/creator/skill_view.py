"""What the creator sees of a skill: every text file, each line verbatim with its number, and how it cites them.

Lines are numbered as an editor numbers them and shown verbatim (knowledge.lines). Code blocks, tables, scripts
and data files are lines like any other, so every one of them can be cited (`path:line` or `path:first-last`).
The first message shows SKILL.md, then the other
text files, up to a character budget; past it a file shows its first lines and says how to read the rest
(`read_skill`). Files are read read-only, capped and never through a symlink (knowledge.source.read_skill_file);
nothing of the skill is executed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from skill2env_dagster.knowledge.lines import numbered, split_lines
from skill2env_dagster.knowledge.source import read_skill_file
from skill2env_dagster.models.knowledge import SourceRef
from skill2env_dagster.models.skill import SkillRecord

READ_LINES = 400  # lines `read_skill` returns at most per call
MIN_SHOWN_LINES = 12  # a file past the budget still shows its first lines
_CITATION = re.compile(r"^\s*(?P<path>[^:\s][^:]*?):(?P<first>\d+)(?:\s*-\s*(?P<last>\d+))?\s*$")
_DATA_EXTS = {".csv", ".tsv", ".json", ".jsonl", ".yaml", ".yml", ".toml", ".xml", ".sql", ".txt"}


def is_licence(path: str) -> bool:
    return PurePosixPath(path).name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))


@dataclass(frozen=True)
class SkillFile:
    path: str
    lines: list[str] | None  # None: not readable as text (binary, refused, too large)
    size: int


def _order(path: str, skill_file: str) -> tuple[int, str]:
    """SKILL.md, then documents, then data and templates, then scripts and the rest; by path within a group."""
    if path == skill_file:
        return 0, path
    if is_licence(path):
        return 4, path
    suffix = PurePosixPath(path).suffix.lower()
    group = 1 if suffix in (".md", ".markdown", ".rst") else 2 if suffix in _DATA_EXTS else 3
    return group, path


class SkillView:
    """The numbered text files of one skill (read once), the first message's listing and citation checks."""

    def __init__(self, skill: SkillRecord) -> None:
        self.skill = skill
        entries = sorted((f for f in skill.files if f.kind != "symlink"),
                         key=lambda f: _order(f.rel_path, skill.skill_file))
        if not any(f.rel_path == skill.skill_file for f in entries):
            body = f"---\nname: {skill.name or ''}\n---\n{skill.body}"  # a record without a folder (tests)
            self.files = [SkillFile(skill.skill_file, split_lines(body), len(body))]
        else:
            self.files = []
        for f in entries:
            text = read_skill_file(skill, f.rel_path) if f.kind == "text" and f.refused is None else None
            self.files.append(SkillFile(f.rel_path, split_lines(text) if text is not None else None, f.size))
        self.by_path = {f.path: f for f in self.files}

    def listing(self, budget: int) -> str:
        """Every file: text files numbered until `budget` characters are used, then their first lines only."""
        parts: list[str] = []
        used = 0
        for f in self.files:
            if f.lines is None:
                parts.append(f"=== {f.path} ({f.size} bytes, not text: not shown)")
                continue
            if is_licence(f.path):
                parts.append(f"=== {f.path} ({len(f.lines)} lines: the licence, not shown; read_skill reads it)")
                continue
            body = numbered(f.lines)
            if used + len(body) <= budget or f.path == self.skill.skill_file:
                parts.append(f"=== {f.path} ({len(f.lines)} lines)\n{body}")
                used += len(body)
                continue
            head = f.lines[:MIN_SHOWN_LINES]
            shown = numbered(head)
            used += len(shown)
            parts.append(f"=== {f.path} ({len(f.lines)} lines; lines 1-{len(head)} shown, read the rest with "
                         f"read_skill)\n{shown}")
        return "\n".join(parts)

    def read(self, path: str, first: int = 1, last: int | None = None) -> str:
        """Lines first..last (at most READ_LINES) of one file, numbered; a ValueError says what is wrong."""
        f = self.by_path.get(path.removeprefix("./"))
        if f is None:
            raise ValueError(f"no file {path!r} in the skill (files: {', '.join(sorted(self.by_path))[:600]})")
        if f.lines is None:
            raise ValueError(f"{path} is not a text file")
        if not f.lines:
            return f"{path} is empty"
        first = max(1, first)
        last = min(len(f.lines), last if last is not None else first + READ_LINES - 1, first + READ_LINES - 1)
        if first > len(f.lines):
            raise ValueError(f"{path} has {len(f.lines)} lines")
        more = f" (lines {first}-{last} of {len(f.lines)})" if (first, last) != (1, len(f.lines)) else ""
        return f"=== {path}{more}\n{numbered(f.lines[first - 1:last], first)}"

    def _span(self, citation: str) -> tuple[str, list[str], int, int]:
        m = _CITATION.match(citation)
        if not m:
            raise ValueError(f"citation {citation!r} is not path:line or path:first-last")
        path, first = m["path"].strip().removeprefix("./"), int(m["first"])
        last = int(m["last"]) if m["last"] else first
        f = self.by_path.get(path)
        if f is None or f.lines is None:
            raise ValueError(f"citation {citation!r}: no text file {path!r} in the skill")
        if not 1 <= first <= last <= len(f.lines):
            raise ValueError(f"citation {citation!r}: {path} has lines 1-{len(f.lines)}")
        return path, f.lines, first, last

    def cite(self, citation: str) -> SourceRef:
        """`path:line` or `path:first-last` of any text file; ValueError naming what does not exist."""
        path, lines, first, last = self._span(citation)
        line = next((n for n in range(first, last + 1) if lines[n - 1].strip()), first)
        return SourceRef(file=path, line=line, quote=lines[line - 1].strip()[:200])

    def cited_text(self, citation: str) -> str:
        """The cited lines themselves (a valid citation, see `cite`)."""
        _, lines, first, last = self._span(citation)
        return "\n".join(lines[first - 1:last])

    def texts(self) -> dict[str, list[str]]:
        """Every readable text file's lines, by path (licences left out)."""
        return {f.path: f.lines for f in self.files if f.lines is not None and not is_licence(f.path)}
