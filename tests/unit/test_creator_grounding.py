"""The mechanical half of "about this skill" (creator/grounding.py): a blueprint rule's numbers are the skill's,
and the world the solver sees does not repeat the skill's document lines."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.creator.grounding import QUOTE_MIN_CHARS, numbers, quoted_skill_lines, unsourced_numbers


def test_numbers_are_thresholds_not_identifiers_or_citations():
    assert numbers("SEV2 within 15 min; q02, T-4107 and P3; 1,000 and 0.50; 31-60 days; $10,000") == {
        "15", "1000", "0.5", "31", "60", "10000"}
    assert unsourced_numbers("Item age > 60 days (SKILL.md:159-160): follow up", "| Item age | > 60 days |") == []
    # Seen in a recorded run: a "house rule" threshold the skill never states (the reviewer's spec-coding task).
    assert unsourced_numbers("A gap needs volume >= 1000 and difficulty <= 40", "Keyword gaps: terms the "
                             "competitor ranks for that the user does not") == ["40", "1000"]


def test_a_world_repeating_a_skill_line_is_found_with_markup_case_and_spacing_aside(tmp_path: Path):
    skill = {"SKILL.md": ["# Severity", "| SEV2 | Major feature degraded, many users affected | Within 15 min |",
                          "Short line."],
             "scripts/run.py": ["print('a line of a script that is long enough to count as a quote')"]}
    (tmp_path / "environment" / "docs").mkdir(parents=True)
    (tmp_path / "instruction.md").write_text("Please review last month's pages.\n")
    policy = tmp_path / "environment" / "docs" / "policy.md"
    policy.write_text("Our policy:\n- **SEV2** -  major feature DEGRADED; many users affected: within 15 min\n")
    (tmp_path / "environment" / "tool.py").write_text(skill["scripts/run.py"][0] + "\n")  # a script: not a document
    assert quoted_skill_lines(tmp_path, skill) == [
        "environment/docs/policy.md repeats SKILL.md:2 ('sev2 major feature degraded many users affected within 15 "
        "min')"]
    policy.write_text("SEV2 pages: acknowledged late in 3 of 11 incidents.\n")
    assert quoted_skill_lines(tmp_path, skill) == []
    assert len("short line") < QUOTE_MIN_CHARS
