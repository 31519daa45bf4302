"""Discovery of skill folders (nested, fixtures, case variants) and stable skill ids."""

from skill2env_dagster.skillhub.sources.discover import discover_skills
from skill2env_dagster.skillhub.sources.ids import skill_id, unique_ids


def _mk(p, name="SKILL.md"):
    p.mkdir(parents=True, exist_ok=True)
    (p / name).write_text("---\nname: x\ndescription: y\n---\n")


def test_nested_fixture_and_case_variants(tmp_path):
    _mk(tmp_path / "a")
    _mk(tmp_path / "a" / "sub")
    _mk(tmp_path / "a" / "tests" / "fixtures" / "bad")
    _mk(tmp_path / "b", "skill.md")
    _mk(tmp_path / "c", "Skill.md")
    _mk(tmp_path / ".hidden" / "d")
    _mk(tmp_path / "node_modules" / "e")
    found = {f.rel_path: f for f in discover_skills(tmp_path)}
    assert set(found) == {"a", "a/sub", "a/tests/fixtures/bad", "b", "c", ".hidden/d"}
    assert found["a/sub"].parent_rel_path == "a" and not found["a/sub"].is_fixture
    assert found["a/tests/fixtures/bad"].is_fixture
    assert found["b"].skill_file == "skill.md" and found["c"].skill_file == "Skill.md"


def test_root_itself_can_be_a_skill(tmp_path):
    _mk(tmp_path)
    _mk(tmp_path / "child")
    found = {f.rel_path: f for f in discover_skills(tmp_path)}
    assert found["."].parent_rel_path is None and found["child"].parent_rel_path == "."


def test_skill_ids_are_stable_sanitised_and_unique():
    assert skill_id("hub", "Tools/My Skill") == "hub__tools__my-skill"
    assert skill_id("hub", ".") == "hub"
    assert len(skill_id("hub", "x" * 400)) <= 180
    ids = unique_ids([("hub", "A/b"), ("hub", "a/b"), ("hub", "c")])
    assert len(set(ids.values())) == 3 and ids[("hub", "c")] == "hub__c"
