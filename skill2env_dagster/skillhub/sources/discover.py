"""Find every skill folder under a source root, nested ones included, and tell fixtures from real sub-skills."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SKILL_FILE_PREFERENCE = ("SKILL.md", "skill.md", "Skill.md")
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"})
# A SKILL.md below one of these folders of another skill is that skill's test data, not a skill of the hub.
FIXTURE_SEGMENTS = frozenset(
    {"tests", "test", "__tests__", "fixtures", "__fixtures__", "testdata", "test_data", "test-data"}
)


@dataclass(frozen=True)
class FoundSkill:
    folder: Path
    rel_path: str  # POSIX, relative to the source root; "." for the root itself
    skill_file: str
    parent_rel_path: str | None  # nearest enclosing skill folder
    is_fixture: bool
    skill_file_link: str | None = None  # the link text when SKILL.md itself is a symlink (policy: crawl.py)


def _skill_file_in(names: list[str]) -> str | None:
    for preferred in SKILL_FILE_PREFERENCE:
        if preferred in names:
            return preferred
    return next((n for n in sorted(names) if n.lower() == "skill.md"), None)


def _walk_skill_dirs(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        skill_file = _skill_file_in(filenames)
        if skill_file:
            rel = os.path.relpath(dirpath, root)
            found[PurePosixPath(*Path(rel).parts).as_posix() if rel != "." else "."] = skill_file
    return found


def _nearest_parent(rel: str, skill_dirs: set[str]) -> str | None:
    if rel == ".":
        return None
    path = PurePosixPath(rel)
    for ancestor in list(path.parents)[:-1]:
        if ancestor.as_posix() in skill_dirs:
            return ancestor.as_posix()
    return "." if "." in skill_dirs else None


def discover_skills(root: Path) -> list[FoundSkill]:
    """All folders holding a SKILL.md (any case), sorted by path. A SKILL.md that is itself a symlink is found too
    (hubs share one skill between agent folders that way); `skill_file_link` carries the link so the crawl can apply
    its in-repository policy instead of the skill silently going missing."""
    skill_dirs = _walk_skill_dirs(root)
    keys = set(skill_dirs)
    out: list[FoundSkill] = []
    for rel in sorted(skill_dirs):
        parent = _nearest_parent(rel, keys)
        inner = PurePosixPath(rel).relative_to(parent).parts if parent not in (None, ".") else PurePosixPath(rel).parts
        is_fixture = parent is not None and any(p.lower() in FIXTURE_SEGMENTS for p in inner[:-1])
        folder = root / rel if rel != "." else root
        link = folder / skill_dirs[rel]
        out.append(
            FoundSkill(
                folder=folder,
                rel_path=rel,
                skill_file=skill_dirs[rel],
                parent_rel_path=parent,
                is_fixture=is_fixture,
                skill_file_link=os.readlink(link) if link.is_symlink() else None,
            )
        )
    return out
