"""Helpers for the screening tests: read a skill folder the way the crawl hands it to screen_skill."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.models.skill import Finding
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.parse import parse_skill_md
from skill2env_dagster.skillhub.screen.engine import ScreenSettings, screen_skill

SKILL_FILES = ("SKILL.md", "skill.md", "Skill.md")
SCREEN_CODES = frozenset({
    "needs_external_account", "needs_live_service", "needs_hardware", "os_or_gui_specific", "persona_only",
    "no_actionable_content", "licence_not_allowed", "licence_unknown", "malicious", "harmful", "standin_possible",
})


def read_skill(folder: Path) -> tuple[dict[str, str], dict, str]:
    """Text files of one skill (nested skills excluded), its parsed frontmatter and body."""
    nested = {p.parent for p in folder.rglob("*") if p.name in SKILL_FILES and p.parent != folder}
    texts: dict[str, str] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not any(n in p.parents for n in nested):
            try:
                texts[p.relative_to(folder).as_posix()] = p.read_text(encoding="utf-8-sig")
            except UnicodeDecodeError:
                continue
    skill_file = next((n for n in SKILL_FILES if n in texts), "SKILL.md")
    parsed = parse_skill_md(texts.get(skill_file, ""), folder.name)
    return texts, parsed.frontmatter, parsed.body


def screen_text(skill_md: str, extra: dict[str, str] | None = None, frontmatter: dict | None = None,
                settings: ScreenSettings | None = None) -> list[Finding]:
    """Screen a one-file (or few-file) skill given as text; the body is SKILL.md after its frontmatter."""
    texts = {"SKILL.md": skill_md, **(extra or {})}
    body = skill_md.split("\n---\n", 1)[1] if skill_md.startswith("---\n") and "\n---\n" in skill_md else skill_md
    fm = {"name": "t", "description": "d", "license": "MIT"} if frontmatter is None else frontmatter
    return screen_skill(texts, fm, body, settings or ScreenSettings())


def codes(findings: list[Finding]) -> set[str]:
    return {f.code.value for f in findings}


def rules(findings: list[Finding], code: ReasonCode | None = None) -> set[str]:
    return {f.rule for f in findings if code is None or f.code == code}
