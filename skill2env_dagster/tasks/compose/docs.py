"""The skill's own text, shipped inside the environment as documentation: the excerpt of each rule in play,
quoted verbatim from the line it was extracted from (with its continuation lines), so the solver reads and
applies the skill's method itself. The instruction points to it; nothing it points to is missing."""

from __future__ import annotations

import re

from skill2env_dagster.knowledge.source import Doc, read_docs
from skill2env_dagster.models.blueprint import Predicate
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

    def span(self, file: str, first: int, last: int) -> list[str]:
        return self.lines(file)[first - 1:last]

    def heading_above(self, file: str, line: int) -> str:
        for text in reversed(self.lines(file)[: line - 1]):
            if re.match(r"^#{1,6}\s+\S", text):
                return text.lstrip("#").strip()
        return ""


def excerpt(text: SkillText, p: Predicate) -> list[str]:
    """The verbatim lines a predicate rests on."""
    ref = p.source
    lines = p.params.get("lines")
    if p.kind in ("order", "coverage") and lines:
        return [ln for n in lines for ln in text.block(ref.file, n, 4)]
    if p.kind in ("lookup", "default") and lines:
        first = min([ref.line, *lines])
        return text.span(ref.file, first, max(lines))
    if p.kind == "sections":
        lines_ = text.lines(ref.file)
        start = ref.line - 1
        while start > 0 and not lines_[start - 1].lstrip().startswith("```"):
            start -= 1
        end = ref.line
        while end < len(lines_) and not lines_[end].lstrip().startswith("```"):
            end += 1
        return lines_[start:end][:60]
    return text.block(ref.file, ref.line)


def notes_doc(title: str, text: SkillText, preds: list[Predicate], intro: str = "") -> str:
    """One Markdown file: each rule in play under its id, quoted from the playbook with its section."""
    out = [f"# {title}", "", intro or f"Quoted from our {text.name} playbook. The rule ids (R1, R2, …) are ours; "
           "the wording under each id is the playbook's own.", ""]
    for p in preds:
        section = text.heading_above(p.source.file, p.source.line)
        out += [f"## {p.id}" + (f" ({section})" if section else ""), ""]
        out += excerpt(text, p)
        out.append("")
    return "\n".join(out).rstrip() + "\n"
