"""The creator order is enforced by code, and the freeze cannot be undone."""

from __future__ import annotations

import pytest

from skill2env_dagster.models.task_toml import AgentTable, TaskToml, VerifierTable
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.tasks.builder import CreationOrderError, TaskBuilder

CONFIG = TaskToml(agent=AgentTable(timeout_sec=60), verifier=VerifierTable(timeout_sec=60))


def _through_rubric(b: TaskBuilder) -> None:
    b.environment({"Dockerfile": "FROM x\n", "app/data.csv": "a,b\n"})
    b.instruction("Do the thing.\n")
    b.tests({"test.sh": "#!/bin/bash\necho\n"})
    b.rubric("## Must-do\n- a\n")


def test_steps_out_of_order_are_refused(tmp_path):
    b = TaskBuilder(tmp_path / "t")
    with pytest.raises(CreationOrderError) as e:
        b.instruction("too early")
    assert e.value.reason is ReasonCode.CREATOR_CONTRACT_FAILED
    b.environment({"Dockerfile": "FROM x\n"})
    with pytest.raises(CreationOrderError):
        b.environment({"Dockerfile": "FROM y\n"})
    with pytest.raises(CreationOrderError):
        b.tests({"test.sh": "#!/bin/bash\n"})


def test_solution_before_freeze_is_refused(tmp_path):
    b = TaskBuilder(tmp_path / "t")
    _through_rubric(b)
    with pytest.raises(CreationOrderError):
        b.solution({"solve.sh": "#!/bin/bash\n"})


def test_freeze_records_hash_and_blocks_frozen_writes(tmp_path):
    b = TaskBuilder(tmp_path / "t")
    _through_rubric(b)
    h = b.freeze(CONFIG)
    assert TaskToml.from_toml(b.dir.config.read_text()).metadata["freeze_hash"] == h
    b.solution({"solve.sh": "#!/bin/bash\ntrue\n"})
    with pytest.raises(CreationOrderError) as e:
        b._write("tests/test.sh", "#!/bin/bash\n", "tests/")
    assert e.value.reason is ReasonCode.GRADING_MODIFIED
    assert [r.step for r in b.records] == ["environment", "instruction", "tests", "rubric", "freeze", "solution"]


def test_freeze_violation_on_disk_is_caught_at_repair(tmp_path):
    b = TaskBuilder(tmp_path / "t")
    _through_rubric(b)
    b.freeze(CONFIG)
    b.solution({"solve.sh": "#!/bin/bash\ntrue\n"})
    (b.dir.tests_dir / "test.sh").write_text("#!/bin/bash\necho tampered\n")  # someone edits grading after freeze
    with pytest.raises(CreationOrderError) as e:
        b.solution({"solve.sh": "#!/bin/bash\nfalse\n"})
    assert e.value.reason is ReasonCode.GRADING_MODIFIED


def test_paths_outside_the_step_are_refused(tmp_path):
    b = TaskBuilder(tmp_path / "t")
    with pytest.raises(CreationOrderError):
        b.environment({"Dockerfile": "FROM x\n", "../escape": "x"})


@pytest.mark.parametrize("files", [{"a": "x", "a/b": "y"}, {"a/b": "y", "a": "x"}],
                         ids=["file-then-below", "below-then-file"])
def test_a_path_that_is_both_a_file_and_a_folder_is_refused_with_its_reason(tmp_path, files):
    """Seen from a constrained decoder's random tool calls: environment/a and environment/a/b in one candidate
    crashed it with NotADirectoryError (internal_error) instead of a refusal the creator is told about."""
    b = TaskBuilder(tmp_path / "t")
    with pytest.raises(CreationOrderError) as e:
        b.environment({"Dockerfile": "FROM x\n", **files})
    assert e.value.reason is ReasonCode.CREATOR_CONTRACT_FAILED and "a file or a folder" in str(e.value)


def test_the_creators_draft_tells_the_model_why_such_a_write_is_refused(tmp_path):
    from skill2env_dagster.creator.draft import Draft, RefusalError

    d = Draft(tmp_path / "d", CONFIG)
    d.write("environment/Dockerfile", "FROM x\n")
    d.write("environment/a", "x")
    d.write("environment/c/d", "y")
    for rel in ("environment/a/b", "environment/c"):
        with pytest.raises(RefusalError, match=r"^refused: .*a path is a file or a folder"):
            d.write(rel, "z")
    assert d.files("environment/") == ["environment/Dockerfile", "environment/a", "environment/c/d"]
