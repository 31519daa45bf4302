"""FROM parsing (multi-stage, --platform, aliases), policy problems, COPY rules, offline pinning, rubric shape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skill2env_dagster.gates.dockerfile import copy_problems, external_bases, from_lines, from_problems, pin_dockerfile
from skill2env_dagster.gates.rubric import rubric_problems
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InputError, ReasonCode

D = "sha256:" + "cd" * 32
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


def test_multi_stage_with_platform_and_aliases():
    text = (
        f"FROM --platform=linux/amd64 127.0.0.1:5000/s2e-python@{D} AS build\n"
        "RUN echo hi\n"
        "FROM build AS test\n"
        "FROM scratch\n"
        f"FROM 127.0.0.1:5000/s2e-minimal@{D}\n"
        "COPY --from=build /out /out\n"
    )
    froms = from_lines(text)
    assert [f.alias for f in froms] == ["build", "test", None, None]
    assert froms[0].flags == ("--platform=linux/amd64",)
    expected = [f"127.0.0.1:5000/s2e-python@{D}", f"127.0.0.1:5000/s2e-minimal@{D}"]
    assert [f.image for f in external_bases(froms)] == expected
    assert from_problems(text) == []
    assert copy_problems(text) == []


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("FROM 127.0.0.1:5000/s2e-minimal:bookworm\n", "not pinned"),
        (f"FROM debian@{D}\n", "not approved"),
        ("ARG X=1\nFROM 127.0.0.1:5000/s2e-${X}\n", "variable"),
        ("FROM scratch\n", "no external base"),
        ("RUN true\n", "no FROM"),
        (f"FROM 127.0.0.1:5000/a@{D} AS\n", "cannot parse"),
    ],
)
def test_from_policy_problems(text, needle):
    problems = from_problems(text)
    assert any(needle in p for p in problems), problems


@pytest.mark.parametrize(
    "line",
    ["COPY ../x /x", "COPY /etc/passwd /x", "ADD https://127.0.0.1/f /f", 'COPY ["solution/solve.sh", "/s"]',
     "COPY --chown=1:1 instruction.md /i", "ADD task.toml /t", "COPY \\\n  rubric.md /r"],
)
def test_copy_problems(line):
    assert copy_problems(f"FROM 127.0.0.1:5000/a@{D}\n{line}\n")


def test_pin_dockerfile_records_pins_and_refreshes_a_matching_freeze_hash(tmp_path):
    from skill2env_dagster.gates.freeze import compute_freeze_hash

    task = tmp_path / "t"
    shutil.copytree(FIXTURES / "good_minimal", task)
    df = task / "environment" / "Dockerfile"
    df.write_text(df.read_text().replace(":bookworm", f"@{D}"))  # already pinned: no registry needed
    config = TaskToml.from_toml((task / "task.toml").read_text())
    (task / "task.toml").write_text(config.with_metadata(freeze_hash=compute_freeze_hash(task)).to_toml())
    pins = pin_dockerfile(task)
    assert pins == {f"127.0.0.1:5000/s2e-minimal@{D}": D}
    meta = TaskToml.from_toml((task / "task.toml").read_text()).metadata
    assert meta["base_image_pins"] == pins and meta["freeze_hash"] == compute_freeze_hash(task)


def test_repinning_keeps_the_first_reference_and_drops_stale_pins(tmp_path):
    """`skill2env gate --pin` on a third-party task: the record matches the FROM lines exactly afterwards."""
    from skill2env_dagster.cli.gate import _pin
    from skill2env_dagster.gates.settings import GateSettings

    task = tmp_path / "t"
    shutil.copytree(FIXTURES / "good_minimal", task)
    df = task / "environment" / "Dockerfile"
    df.write_text(df.read_text().replace(":bookworm", f"@{D}"))
    stale = "sha256:" + "ee" * 32
    config = TaskToml.from_toml((task / "task.toml").read_text())
    pins = {"127.0.0.1:5000/s2e-minimal:bookworm": D, "127.0.0.1:5000/old:1": stale}
    (task / "task.toml").write_text(config.with_metadata(base_image_pins=pins).to_toml())
    _pin([task], GateSettings())
    meta = TaskToml.from_toml((task / "task.toml").read_text()).metadata
    assert meta["base_image_pins"] == {"127.0.0.1:5000/s2e-minimal:bookworm": D}


def test_pin_dockerfile_refuses_unapproved(tmp_path):
    task = tmp_path / "t"
    shutil.copytree(FIXTURES / "good_minimal", task)
    (task / "environment" / "Dockerfile").write_text("FROM python:3.11\n")
    with pytest.raises(InputError) as err:
        pin_dockerfile(task)
    assert err.value.reason is ReasonCode.BASE_IMAGE_POLICY


def test_rubric_shape():
    good = "# Must do\n- a\n\n## Must-avoid\n- b\n  continued\n### Best-practice:\n- c\n- d\n"
    assert rubric_problems(good) == []
    assert rubric_problems(good + "## Must-avoid\n- e\n")  # repeated
    assert rubric_problems("## Must-do\n- a\n## Must-avoid\n- b\n")  # missing section
    assert rubric_problems("## Must-do\n## Must-avoid\n- b\n## Best-practice\n- c\n")  # empty section
    assert rubric_problems("- stray\n## Must-do\n- a\n## Must-avoid\n- b\n## Best-practice\n- c\n")
