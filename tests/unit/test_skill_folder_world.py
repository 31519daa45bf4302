"""The skill-folder world (tasks/worlds/skill_folders.py) planted with every kind of rule a skill-authoring skill
states: what the reference reading measures in each rendered folder is what was planted, on both sides of each
bound, and the look-alikes (folded descriptions, long front matter, long files with a contents list) are there."""

from __future__ import annotations

import random
import re

import pytest

from skill2env_dagster.tasks.worlds import skill_folders as sf

PATTERN = r"[a-z0-9]+(-[a-z0-9]+)*"
RULES = [
    {"part": "name", "value": 40, "comparator": "le"},
    {"part": "description", "value": 200, "comparator": "lt"},
    {"part": "body", "value": 300, "comparator": "le"},
    {"part": "name_charset", "lowercase": True},
    {"part": "name_pattern", "pattern": PATTERN},
    {"part": "toc", "value": 100},
]
IDS = {f"R{i}": r for i, r in enumerate(RULES, 1)}
PROSE = ["Read the folder before you change it.", "Keep each step short.", "Check the result against the rules."]


@pytest.fixture(params=range(3), ids=lambda s: f"seed{s}")
def world(request):
    rng = random.Random(request.param)
    folders = sf.plant(RULES, 12, rng)
    return folders, {f.name: sf.render(f, PROSE, rng) for f in folders}


def _planted(folders, kind: str):
    return [f for f in folders if any(p.endswith(f":{kind}") for p in f.planted)]


def test_every_case_of_every_rule_is_planted(world):
    folders, _ = world
    kinds = {p for f in folders for p in f.planted}
    assert {"name:at_value", "description:folded_ok", "body:long_front", "name_charset:underscore",
            "name_pattern:double_hyphen", "name_pattern:trailing_hyphen", "toc:long_with_toc",
            "toc:at_limit_no_toc", "toc:past_limit_no_toc", "toc:very_long_with_toc"} <= kinds
    conditions = sf.conditions(folders, IDS)
    assert "R2: the description's value, not its YAML lines" in conditions
    assert "R6: a contents list" in conditions and all(p.startswith(tuple(f.name for f in folders))
                                                      for paths in conditions.values() for p in paths)


def test_the_reading_measures_what_was_planted(world):
    folders, files = world
    for f in folders:
        got = sf.measure(files[f.name])
        assert got["name"] == f.name and got["body"] == f.body_lines, f.planted
    for f in _planted(folders, "folded_ok"):  # the YAML lines are longer than the value, which is compliant
        assert sf.measure(files[f.name])["desc_len"] < 200 and ">-" in files[f.name]["SKILL.md"]
    for f in _planted(folders, "long_front"):  # the body is compliant; the whole file is past the limit
        m = sf.measure(files[f.name])
        assert m["body"] <= 300 < m["file"]


def test_names_break_exactly_the_character_and_pattern_rules_planted(world):
    folders, _ = world
    for f in [f for kind in ("underscore", "double_hyphen", "trailing_hyphen") for f in _planted(folders, kind)]:
        assert re.fullmatch(PATTERN, f.name) is None, f.name
    for f in _planted(folders, "digits_ok"):
        assert re.fullmatch(PATTERN, f.name), f.name
    for f in _planted(folders, "uppercase"):
        assert f.name != f.name.lower()


def test_reference_files_have_their_planted_length_and_contents_list(world):
    folders, files = world
    for f in folders:
        for ref, size, toc in f.refs:
            text = files[f.name][f"references/{ref}"]
            assert len(text.split("\n")) - 1 == size and sf.has_toc(text) is toc
    assert any(size == 100 and not toc for f in folders for _, size, toc in f.refs)  # exactly at the limit
    assert any(size > 100 and toc for f in folders for _, size, toc in f.refs)


def test_no_two_folders_share_a_path():
    """Seed 2 planted a "name-2" variant next to the 17th folder, also "name-2": one overwrote the other."""
    for seed in range(40):
        names = [f.name for f in sf.plant(RULES, 12, random.Random(seed))]
        assert len(names) == len(set(names)), (seed, sorted(names))
