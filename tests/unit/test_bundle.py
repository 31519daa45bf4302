"""Content addressing, text/binary classification, symlink policy and size limits of a skill bundle."""

import os

from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.sources.bundle import read_bundle

LIMITS = dict(max_file_bytes=1000, max_skill_bytes=5000, max_files=50)


def _skill(tmp_path):
    d = tmp_path / "s"
    (d / "references").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nbody\n")
    (d / "references" / "a.md").write_text("ref")
    (d / "data.bin").write_bytes(b"\x00\x01\x02binary")
    return d


def test_digest_is_stable_and_changes_with_content(tmp_path):
    d = _skill(tmp_path)
    b1, b2 = read_bundle(d, **LIMITS), read_bundle(d, **LIMITS)
    assert b1.digest == b2.digest and len(b1.digest) == 64
    kinds = {f.rel_path: f.kind for f in b1.files}
    assert kinds == {"SKILL.md": "text", "references/a.md": "text", "data.bin": "binary"}
    (d / "references" / "a.md").write_text("changed")
    assert read_bundle(d, **LIMITS).digest != b1.digest


def test_renaming_a_file_changes_the_digest(tmp_path):
    d = _skill(tmp_path)
    before = read_bundle(d, **LIMITS).digest
    os.rename(d / "references" / "a.md", d / "references" / "b.md")
    assert read_bundle(d, **LIMITS).digest != before


def test_symlink_inside_recorded_escaping_refused(tmp_path):
    d = _skill(tmp_path)
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink("references/a.md", d / "inside.md")
    os.symlink("../secret.txt", d / "outside.md")
    b = read_bundle(d, **LIMITS)
    by = {f.rel_path: f for f in b.files}
    assert by["inside.md"].kind == "symlink" and by["inside.md"].refused is None
    assert by["outside.md"].refused == ReasonCode.SYMLINK_ESCAPE
    assert (ReasonCode.SYMLINK_ESCAPE, "outside.md -> ../secret.txt") in b.problems
    assert "top secret" not in "".join(b.texts.values())


def test_size_limits_are_recorded_not_raised(tmp_path):
    d = _skill(tmp_path)
    (d / "big.txt").write_text("x" * 2000)
    b = read_bundle(d, **LIMITS)
    assert any(c == ReasonCode.FILE_TOO_LARGE for c, _ in b.problems)
    assert "big.txt" not in b.texts
    for i in range(6):
        (d / f"f{i}.txt").write_text("y" * 900)
    b = read_bundle(d, **LIMITS)
    assert any(c == ReasonCode.SKILL_TOO_LARGE for c, _ in b.problems)
    b = read_bundle(d, max_file_bytes=1000, max_skill_bytes=10**6, max_files=3)
    assert any(c == ReasonCode.TOO_MANY_FILES for c, _ in b.problems)


def test_excluded_subskill_not_in_parent_bundle(tmp_path):
    d = _skill(tmp_path)
    sub = d / "sub"
    sub.mkdir()
    (sub / "SKILL.md").write_text("x")
    with_sub = read_bundle(d, **LIMITS)
    without = read_bundle(d, **LIMITS, exclude={sub.resolve()})
    assert "sub/SKILL.md" in {f.rel_path for f in with_sub.files}
    assert "sub/SKILL.md" not in {f.rel_path for f in without.files}


def test_non_utf8_file_names_are_escaped_not_fatal(tmp_path):
    d = _skill(tmp_path)
    (d / "references" / os.fsdecode(b"\xff\xfe.txt")).write_text("x")
    b = read_bundle(d, **LIMITS)
    names = {f.rel_path for f in b.files}
    assert "references/\\xff\\xfe.txt" in names
    for f in b.files:
        f.model_dump_json()
