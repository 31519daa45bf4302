"""Every SKILL.md gets a row: a SKILL.md that is a symlink is followed inside the source and refused outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skill2env_dagster.models.skill import SkillStatus
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig, SourceSpec
from skill2env_dagster.skillhub.crawl import crawl, crawl_paths
from tests.support.hub import commit_all, init_repo, write_skill


def _layout(root: Path, outside: Path) -> None:
    """A hub sharing one skill between agent folders, plus a link out of the hub and a dangling link."""
    write_skill(root / "shared", "csv-cleaner")
    for agent in ("claude", "codex"):
        (root / agent / "csv-cleaner").mkdir(parents=True)
        os.symlink("../../shared/csv-cleaner/SKILL.md", root / agent / "csv-cleaner" / "SKILL.md")
    (root / "claude" / "csv-cleaner" / "notes.md").write_text("Agent-specific notes.\n")
    write_skill(outside, "log-counter")
    (root / "escape").mkdir()
    os.symlink(os.path.relpath(outside / "log-counter" / "SKILL.md", root / "escape"), root / "escape" / "SKILL.md")
    (root / "dangling").mkdir()
    os.symlink("../shared/nothing-here/SKILL.md", root / "dangling" / "SKILL.md")


def _rows(records) -> dict[str, object]:
    return {r.rel_path: r for r in records}


def _check(rows: dict) -> None:
    linked = rows["claude/csv-cleaner"]
    assert linked.name == "csv-cleaner" and "Normalise CSV files" in linked.body
    assert ReasonCode.SYMLINK_ESCAPE not in linked.reasons
    entry = next(f for f in linked.files if f.rel_path == "SKILL.md")
    assert entry.kind == "text" and entry.symlink_target == "../../shared/csv-cleaner/SKILL.md"
    assert linked.status in (SkillStatus.ELIGIBLE, SkillStatus.DUPLICATE)
    # the copies share the target's text, so exactly one of the three stays canonical
    shared = [rows[k] for k in ("shared/csv-cleaner", "claude/csv-cleaner", "codex/csv-cleaner")]
    assert sum(r.status == SkillStatus.ELIGIBLE for r in shared) == 1

    escape = rows["escape"]
    assert escape.status == SkillStatus.SCREENED_OUT and escape.reasons == [ReasonCode.SYMLINK_ESCAPE]
    evidence = next(f for f in escape.findings if f.code == ReasonCode.SYMLINK_ESCAPE)
    assert evidence.file == "SKILL.md" and "log-counter/SKILL.md" in evidence.text and "outside" in evidence.text

    dangling = rows["dangling"]
    assert dangling.status == SkillStatus.INVALID and ReasonCode.UNREADABLE in dangling.reasons
    assert any("nothing-here" in f.text for f in dangling.findings)


def test_symlinked_skill_md_in_a_folder_source(tmp_path):
    hub = tmp_path / "hub"
    _layout(hub, tmp_path / "elsewhere")
    rows = _rows(crawl_paths([hub]).records)
    assert set(rows) == {"shared/csv-cleaner", "claude/csv-cleaner", "codex/csv-cleaner", "escape", "dangling"}
    _check(rows)


def test_symlinked_skill_md_in_a_git_source(tmp_path):
    work = tmp_path / "work"
    init_repo(work)
    _layout(work, work.parent / "elsewhere")
    commit_all(work, "skills shared through symlinks")
    config = SourcesConfig(sources=[SourceSpec(name="hub", kind="git", url=str(work))],
                           settings=CrawlSettings(cache_dir=str(tmp_path / "cache")))
    rows = _rows(crawl(config).records)
    _check(rows)


def test_changing_the_target_changes_the_linked_skills_digest(tmp_path):
    hub = tmp_path / "hub"
    _layout(hub, tmp_path / "elsewhere")
    before = _rows(crawl_paths([hub]).records)["codex/csv-cleaner"].bundle_digest
    target = hub / "shared" / "csv-cleaner" / "SKILL.md"
    target.write_text(target.read_text() + "\nAlso report the number of dropped rows.\n")
    after = _rows(crawl_paths([hub]).records)["codex/csv-cleaner"].bundle_digest
    assert before != after


@pytest.mark.parametrize("link", ["/etc/hostname", "../../../../../../etc/hostname"])
def test_absolute_or_deep_escape_is_never_read(tmp_path, link):
    hub = tmp_path / "hub"
    (hub / "sneaky").mkdir(parents=True)
    os.symlink(link, hub / "sneaky" / "SKILL.md")
    rec = crawl_paths([hub]).records[0]
    assert rec.status == SkillStatus.SCREENED_OUT and rec.reasons == [ReasonCode.SYMLINK_ESCAPE]
    assert rec.body == "" and all(f.kind != "text" for f in rec.files)
