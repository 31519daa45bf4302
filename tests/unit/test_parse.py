"""Lenient SKILL.md parsing: every real-world breakage gets parsed or a reason, never an exception."""

from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.parse import parse_skill_md

GOOD = "---\nname: csv-tool\ndescription: Clean CSV files.\nlicense: MIT\n---\n# CSV tool\nRun it.\n"


def test_good_skill_has_no_warnings():
    p = parse_skill_md(GOOD, "csv-tool")
    assert (p.status, p.name, p.description, p.license) == ("ok", "csv-tool", "Clean CSV files.", "MIT")
    assert p.warnings == [] and p.errors == []
    assert p.body.startswith("# CSV tool")


def test_bom_crlf_and_indented_closing_fence():
    text = "\ufeff---\r\nname: csv-tool\r\ndescription: Clean CSV files.\r\n  ---\r\nBody\r\n"
    p = parse_skill_md(text, "csv-tool")
    assert p.status == "ok" and p.description == "Clean CSV files." and p.body.strip() == "Body"


def test_no_frontmatter_falls_back_to_h1_and_description_line():
    p = parse_skill_md("# Meeting Notes\n\ndescription: Summarise meeting notes.\n\nSteps...\n", "meeting-notes")
    assert p.status == "fallback" and p.name == "Meeting Notes"
    assert p.description == "Summarise meeting notes."
    assert "no_frontmatter" in p.warnings and p.errors == []


def test_no_frontmatter_and_nothing_usable_is_an_error():
    p = parse_skill_md("", "empty")
    assert p.errors and p.errors[0][0] == ReasonCode.NO_FRONTMATTER


def test_invalid_yaml_is_reported_with_line():
    p = parse_skill_md("---\nname: x\ndescription: Use it: when needed: always\n---\nbody", "x")
    assert p.status == "invalid_yaml"
    assert p.errors[0][0] == ReasonCode.INVALID_YAML and "line" in p.errors[0][1]


def test_frontmatter_not_a_mapping_is_invalid_yaml():
    p = parse_skill_md("---\n- a\n- b\n---\nbody", "x")
    assert p.errors[0][0] == ReasonCode.INVALID_YAML


def test_spec_warnings():
    text = (
        "---\nname: Claude_Helper\ndescription: Uses <tool> tags " + "x" * 1100 + "\n"
        "metadata:\n  nested: {a: 1}\nallowed-tools: [Read, Write]\nversion: 2\n---\nbody\n"
    )
    w = parse_skill_md(text, "claude-helper").warnings
    for code in ("name_invalid_chars", "name_dir_mismatch", "name_reserved_word", "description_over_1024",
                 "description_xml_tags", "metadata_non_string_values", "allowed_tools_list", "unknown_key:version"):
        assert code in w, code


def test_wrong_types_and_alternative_keys():
    p = parse_skill_md("---\nname: 12\nsummary: Does things.\n---\nbody", "12")
    assert p.description == "Does things." and "description_from_summary" in p.warnings
    assert "name_wrong_type" in p.warnings


def test_missing_description_uses_a_body_line_or_errors():
    p = parse_skill_md("---\nname: x\n---\ndescription: Explains things.\n", "x")
    assert p.description == "Explains things." and p.status == "fallback"
    p2 = parse_skill_md("---\nname: x\n---\nFirst paragraph only.\n", "x")
    assert [c for c, _ in p2.errors] == [ReasonCode.MISSING_DESCRIPTION]
    p3 = parse_skill_md("---\nversion: 2\n---\n# Untitled\n\nSome notes.\n", "x")
    assert [c for c, _ in p3.errors] == [ReasonCode.MISSING_DESCRIPTION, ReasonCode.MISSING_NAME]
