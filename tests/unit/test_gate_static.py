"""Static checks: the good fixtures pass every check; each mutation breaks exactly the check it targets."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.static_checks import run_static_checks
from skill2env_dagster.models.gate import CheckVerdict
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
DIGEST = "sha256:" + "ab" * 32


def _pin_offline(task: Path) -> None:
    """What pin_dockerfile does, with a made-up digest (unit tests have no registry)."""
    df = task / "environment" / "Dockerfile"
    lines = df.read_text().splitlines(keepends=True)
    ref = lines[0].split()[1]
    lines[0] = f"FROM {ref.rsplit(':', 1)[0]}@{DIGEST}\n"
    df.write_text("".join(lines))
    config = TaskToml.from_toml((task / "task.toml").read_text())
    (task / "task.toml").write_text(config.with_metadata(base_image_pins={ref: DIGEST}).to_toml())


@pytest.fixture
def good(tmp_path) -> Path:
    task = tmp_path / "task"
    shutil.copytree(FIXTURES / "good_minimal", task)
    _pin_offline(task)
    return task


def _verdicts(task: Path) -> dict[str, CheckVerdict]:
    return {c.name: c.verdict for c in run_static_checks(task)}


def _append(rel: str, text: str) -> Callable[[Path], None]:
    return lambda t: (t / rel).write_text((t / rel).read_text() + text)


def _set_metadata(**kw) -> Callable[[Path], None]:
    def mutate(t: Path) -> None:
        config = TaskToml.from_toml((t / "task.toml").read_text())
        (t / "task.toml").write_text(config.with_metadata(**kw).to_toml())

    return mutate


def _replace(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def mutate(t: Path) -> None:
        text = (t / rel).read_text()
        assert old in text
        (t / rel).write_text(text.replace(old, new))

    return mutate


@pytest.mark.parametrize("name", ["good_minimal", "good_python"])
def test_good_fixtures_pass_every_static_check(tmp_path, name):
    task = tmp_path / name
    shutil.copytree(FIXTURES / name, task)
    _pin_offline(task)
    results = run_static_checks(task)
    assert all(c.verdict is CheckVerdict.PASS for c in results), [c for c in results if not c.ok]


DEFECTS: dict[str, tuple[str, ReasonCode, Callable[[Path], None]]] = {
    "missing_file": ("layout", ReasonCode.STATIC_VALIDATION_FAILED, lambda t: (t / "tests" / "test.sh").unlink()),
    "root_rubric": ("layout", ReasonCode.STATIC_VALIDATION_FAILED, lambda t: (t / "rubric.md").write_text("x")),
    "shipped_reward": ("layout", ReasonCode.STATIC_VALIDATION_FAILED,
                       lambda t: (t / "environment" / "reward.txt").write_text("1")),
    "symlink_escape": ("symlinks", ReasonCode.STATIC_VALIDATION_FAILED,
                       lambda t: os.symlink("../solution/solve.sh", t / "environment" / "peek.sh")),
    "bash_syntax": ("bash_syntax", ReasonCode.STATIC_VALIDATION_FAILED, _append("solution/solve.sh", "if then\n")),
    "no_shebang": ("bash_syntax", ReasonCode.STATIC_VALIDATION_FAILED,
                   _replace("tests/test.sh", "#!/bin/bash\n", "")),
    "toml_unknown_key": ("task_toml", ReasonCode.STATIC_VALIDATION_FAILED,
                         _replace("task.toml", "[verifier]", "[verifer]")),
    "unpinned_base": ("dockerfile_from", ReasonCode.BASE_IMAGE_POLICY,
                      _replace("environment/Dockerfile", f"@{DIGEST}", ":bookworm")),
    "unapproved_registry": ("dockerfile_from", ReasonCode.BASE_IMAGE_POLICY,
                            _replace("environment/Dockerfile", "127.0.0.1:5000/s2e-minimal",
                                     "docker.io/library/debian")),
    "variable_in_from": ("dockerfile_from", ReasonCode.BASE_IMAGE_POLICY,
                         lambda t: (t / "environment" / "Dockerfile").write_text("ARG B\nFROM $B\n")),
    "pin_not_recorded": ("dockerfile_from", ReasonCode.BASE_IMAGE_POLICY, _set_metadata(base_image_pins={})),
    "pin_stale": ("dockerfile_from", ReasonCode.BASE_IMAGE_POLICY,
                  _set_metadata(base_image_pins={"a": DIGEST, "b": "sha256:" + "cd" * 32})),
    "cheat_without_shebang": ("bash_syntax", ReasonCode.STATIC_VALIDATION_FAILED,
                              lambda t: _touch_text(t / "solution" / "cheats" / "c.sh", "echo 1\n")),
    "copy_outside": ("dockerfile_copy", ReasonCode.STATIC_VALIDATION_FAILED,
                     _append("environment/Dockerfile", "COPY ../tests/test.sh /x\n")),
    "copy_tests": ("dockerfile_copy", ReasonCode.STATIC_VALIDATION_FAILED,
                   _append("environment/Dockerfile", "COPY tests /tests\n")),
    "add_url": ("dockerfile_copy", ReasonCode.STATIC_VALIDATION_FAILED,
                _append("environment/Dockerfile", "ADD http://127.0.0.1/x /x\n")),
    "leak_into_env": ("no_leak", ReasonCode.CONTAMINATED,
                      lambda t: shutil.copy(t / "tests" / "test.sh", t / "environment" / "notes.txt")),
    "leak_into_instruction": ("no_leak", ReasonCode.CONTAMINATED,
                              _append("instruction.md", "\nwc -l < /app/data.txt | tr -d ' ' > /app/answer.txt\n")),
    "too_large": ("size_limits", ReasonCode.TASK_TOO_LARGE,
                  lambda t: os.truncate(_touch(t / "environment" / "big.bin"), 101 * 1024 * 1024)),
    "rubric_extra_section": ("rubric", ReasonCode.STATIC_VALIDATION_FAILED,
                             _append("tests/rubric.md", "\n## Notes\n- x\n")),
    "rubric_four_bullets": ("rubric", ReasonCode.STATIC_VALIDATION_FAILED,
                            _append("tests/rubric.md", "- b\n- c\n- d\n")),
    "grading_modified": ("freeze_hash", ReasonCode.GRADING_MODIFIED,
                         lambda t: (_set_metadata(freeze_hash=compute_freeze_hash(t))(t),
                                    _append("tests/test.sh", "# edited after freezing\n")(t))),
    "workflow_not_exercised": ("workflow_exercised", ReasonCode.WORKFLOW_MISMATCH, _set_metadata(
        workflow="sub-skill-routing", workflow_sources=["SKILL.md:40"], blueprint_sources=["SKILL.md:112"])),
    "source_reference": ("no_source_reference", ReasonCode.CONTAMINATED,
                         lambda t: (_set_metadata(source_skill="skills/acme/inventory-counter")(t),
                                    _append("instruction.md", "See skills/acme/inventory-counter.\n")(t))),
}


@pytest.mark.parametrize(("planned", "graded"), [(["SKILL.md:40"], ["SKILL.md:12", "SKILL.md:40"]),
                                                 (["SKILL.md"], ["SKILL.md:12"])])
def test_a_task_grading_its_workflows_rule_passes(good, planned, graded):
    """The workflow's line among the graded rules' lines, or (a model's plan names files) a line of its file."""
    _set_metadata(workflow="w", workflow_sources=planned, blueprint_sources=graded)(good)
    assert _verdicts(good)["workflow_exercised"] is CheckVerdict.PASS


def _touch_text(p: Path, text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _touch(p: Path) -> Path:
    p.touch()
    return p


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_defect_fails_exactly_its_check(good, defect):
    check, reason, mutate = DEFECTS[defect]
    mutate(good)
    results = {c.name: c for c in run_static_checks(good)}
    assert results[check].verdict is CheckVerdict.FAIL, results[check]
    assert results[check].reason is reason
    assert results[check].evidence
    others = {n: c.verdict for n, c in results.items() if n != check and c.verdict is not CheckVerdict.PASS}
    # A missing file may leave dependent checks unable to run (error) — never passing silently, never failing.
    assert all(v is CheckVerdict.ERROR for v in others.values()), others


def test_freeze_hash_that_matches_passes(good):
    _set_metadata(freeze_hash=compute_freeze_hash(good))(good)
    assert _verdicts(good)["freeze_hash"] is CheckVerdict.PASS


def test_freeze_hash_ignores_solution_and_task_toml(good):
    before = compute_freeze_hash(good)
    (good / "solution" / "solve.sh").write_text("#!/bin/bash\necho 7 > /app/answer.txt\n")
    _set_metadata(note="x")(good)
    assert compute_freeze_hash(good) == before
    (good / "environment" / "data.txt").write_text("changed\n")
    assert compute_freeze_hash(good) != before


def test_missing_dockerfile_is_not_a_pass(good):
    (good / "environment" / "Dockerfile").unlink()
    results = {c.name: c for c in run_static_checks(good)}
    assert results["layout"].verdict is CheckVerdict.FAIL
    assert results["dockerfile_from"].verdict is CheckVerdict.ERROR
    assert results["dockerfile_copy"].verdict is CheckVerdict.ERROR


def test_not_a_folder(tmp_path):
    [result] = run_static_checks(tmp_path / "nope")
    assert result.verdict is CheckVerdict.FAIL


def test_third_party_task_without_recorded_pins_passes_with_a_warning(good):
    config = TaskToml.from_toml((good / "task.toml").read_text())
    meta = {k: v for k, v in config.metadata.items() if k != "base_image_pins"}
    (good / "task.toml").write_text(config.model_copy(update={"metadata": meta}).to_toml())
    result = next(c for c in run_static_checks(good) if c.name == "dockerfile_from")
    assert result.verdict is CheckVerdict.PASS
    assert "warning" in result.evidence and "--pin" in result.evidence


def test_cheats_may_echo_what_the_agent_sees(good):
    """A cheat that prints the shipped data is the point of a cheat, not a leak; a solve.sh line still is."""
    cheats = good / "solution" / "cheats"
    cheats.mkdir()
    data = (good / "environment" / "data.txt").read_text()
    (cheats / "echo_data.sh").write_text("#!/bin/bash\ncat > /app/answer.txt <<'EOF'\n" + data * 3 + "EOF\n")
    (good / "environment" / "notes.txt").write_text("widget,3 gadget,5 sprocket,2 gizmo,9 doohickey,1 thing\n")
    (cheats / "long.sh").write_text("#!/bin/bash\necho 'widget,3 gadget,5 sprocket,2 gizmo,9 doohickey,1 thing'\n")
    verdicts = _verdicts(good)
    assert verdicts["no_leak"] is CheckVerdict.PASS and verdicts["bash_syntax"] is CheckVerdict.PASS


def test_a_bare_skill_id_is_a_word_a_task_may_use_but_a_namespaced_id_and_the_digest_are_not(good):
    """A skill folder named after its job ("reconciliation") must not ban that word from its own tasks; the
    namespaced id a hub gives it and its bundle digest still leak the task's origin."""
    digest = "0f1e2d" * 10 + "0f1e"
    _set_metadata(source_skill="reconciliation", source_bundle_digest=digest)(good)
    _append("instruction.md", "\nThe reconciliation policy is in the usual place.\n")(good)
    by_name = {r.name: r for r in run_static_checks(good)}
    assert by_name["no_source_reference"].verdict is CheckVerdict.PASS
    for leak in ("corpus__finance/reconciliation", digest):
        _set_metadata(source_skill="corpus__finance/reconciliation")(good)
        _append("instruction.md", f"\n{leak}\n")(good)
        check = {r.name: r for r in run_static_checks(good)}["no_source_reference"]
        assert check.verdict is CheckVerdict.FAIL and leak in check.evidence
