"""The skill's own text as the task shapes quote it: a rule's line with its continuation lines, and the heading
it sits under."""

from __future__ import annotations

import re

from skill2env_dagster.knowledge.source import Doc, read_docs
from skill2env_dagster.models.skill import SkillRecord

MAX_LINES = 10
_NEW_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s|^\s*#|^\s*\|?\s*$")


class SkillText:
    """The skill's documents by path (read once per task)."""

    def __init__(self, skill: SkillRecord) -> None:
        self.docs: dict[str, Doc] = {d.path: d for d in read_docs(skill, specs=True)}
        self.name = skill.name or "the skill"

    def lines(self, file: str) -> list[str]:
        doc = self.docs.get(file)
        return doc.lines if doc else []

    def block(self, file: str, line: int, max_lines: int = MAX_LINES) -> list[str]:
        """The line and its continuation (until a blank line, a new list item or a heading)."""
        lines = self.lines(file)
        if not 1 <= line <= len(lines):
            return []
        out = [lines[line - 1]]
        for nxt in lines[line:line - 1 + max_lines]:
            if _NEW_ITEM.match(nxt):
                break
            out.append(nxt)
        return out

    def heading_above(self, file: str, line: int) -> str:
        for text in reversed(self.lines(file)[: line - 1]):
            if re.match(r"^#{1,6}\s+\S", text):
                return text.lstrip("#").strip()
        return ""
