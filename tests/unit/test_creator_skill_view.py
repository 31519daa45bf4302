"""What the creator sees of a skill: every text file, every line verbatim with the number an editor gives it, code
blocks, tables and scripts citable; checked on the whole shared corpus (a line is never garbled)."""

from __future__ import annotations

import re

import pytest

from skill2env_dagster.creator.skill_view import SkillView
from skill2env_dagster.knowledge.lines import LINE_CHARS, numbered, numbered_within, split_lines
from skill2env_dagster.knowledge.source import read_skill_file
from skill2env_dagster.skillhub.crawl import crawl_paths
from tests.unit.task_helpers import skill_from_dir

_ROW = re.compile(r"^ *(\d+)\| (.*)$")


def parse_listing(text: str) -> dict[str, dict[int, str]]:
    """{file: {line number: shown text}} from a numbered listing."""
    files: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for row in text.split("\n"):
        if row.startswith("=== "):
            current = files.setdefault(row[4:].split(" (", 1)[0], {})
        elif current is not None and (m := _ROW.match(row)):
            current[int(m.group(1))] = m.group(2)
    return files


def test_lines_are_numbered_as_an_editor_numbers_them():
    assert split_lines("a\r\nb\r\n") == ["a", "b"]
    assert split_lines("a\x0cb\nc") == ["a\x0cb", "c"]  # a form feed is not a line break for sed or an editor
    assert split_lines("a\u2028b\n") == ["a\u2028b"]
    assert split_lines("") == [] and split_lines("\n") == [""]
    long = "x" * (LINE_CHARS + 5)
    assert numbered(["a", long], 9) == f" 9| a\n10| {'x' * LINE_CHARS} [… 5 more characters on this line]"
    assert numbered_within(["aaaa", "bbbb", "cccc"], 16) == "1| aaaa\n2| bbbb\n[… lines 3-3 not shown]"


def test_code_blocks_tables_and_scripts_are_citable(examples_dir):
    view = SkillView(skill_from_dir(examples_dir / "log-triage-awk"))
    assert view.cite("SKILL.md:23").quote.startswith("`awk '$9 ~ /^5/")  # inside a list item's code
    script = view.cite("scripts/percentile.sh:1-3")
    assert script.file == "scripts/percentile.sh" and script.line >= 1
    assert view.cite("assets/access.log:5").quote.startswith("10.0.0.1")
    for bad in ("SKILL.md:0", "SKILL.md:9999", "nope.md:1", "SKILL.md", "SKILL.md:5-2"):
        with pytest.raises(ValueError):
            view.cite(bad)
    assert "1| ---" in view.read("SKILL.md", 1, 3) and "(lines 1-3 of" in view.read("SKILL.md", 1, 3)


def test_the_listing_budget_keeps_skill_md_whole_and_names_every_file(examples_dir):
    view = SkillView(skill_from_dir(examples_dir / "log-triage-awk"))
    small = view.listing(10)
    assert "=== SKILL.md (" in small and "=== scripts/percentile.sh" in small and "read_skill" in small
    shown = parse_listing(small)
    assert len(shown["SKILL.md"]) == len(view.by_path["SKILL.md"].lines or [])


@pytest.mark.corpus
def test_no_line_of_the_shared_corpus_is_garbled(corpus_dir):
    """Every text file of every corpus skill: each line shown is the file's line (or its marked start)."""
    folders = sorted({p.parent for p in corpus_dir.rglob("SKILL.md")})
    records = [r for r in crawl_paths(folders).records if r.skill_file]
    assert len(records) >= 100
    lines = files = 0
    for skill in records:
        view = SkillView(skill)
        listing = parse_listing(view.listing(10**9))
        for f in view.files:
            if f.lines is None or f.path not in listing or "licence" in f.path.lower():
                continue
            raw = read_skill_file(skill, f.path)
            assert raw is not None
            want = raw.split("\n")
            want = [w[:-1] if w.endswith("\r") else w for w in (want[:-1] if raw.endswith("\n") else want)]
            shown = listing[f.path]
            if len(shown) < len(f.lines):
                continue  # a licence summarised (checked through read_skill below)
            assert sorted(shown) == list(range(1, len(want) + 1)), (skill.skill_id, f.path)
            for n, text in shown.items():
                line = want[n - 1]
                assert text == line or (len(line) > LINE_CHARS and text.startswith(line[:LINE_CHARS])
                                        and text.endswith("more characters on this line]")), (f.path, n)
            files += 1
            lines += len(want)
    assert files >= 200 and lines >= 20_000
