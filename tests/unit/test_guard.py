"""The guard at the top of every frozen tests/test.sh (gates/reap.py): every generator's task gets it at the
freeze, exactly once, and it is never counted as the task's own text. Its effect in a container is tested in
tests/docker/test_guard_docker.py."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from skill2env_dagster.gates.reap import GUARD, GUARD_BEGIN, add_guard, interpreter, is_guarded, strip_guard
from skill2env_dagster.gates.static_checks import _secret_lines
from skill2env_dagster.gates.tamper_kit import tool_names
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import AgentTable, TaskToml, VerifierTable
from skill2env_dagster.tasks.builder import CreationOrderError, TaskBuilder
from tests.support.example_tasks import build_example_tasks

SCRIPT = "#!/bin/bash\nset -euo pipefail\npython3 /tests/check.py\n"
CONFIG = TaskToml(agent=AgentTable(timeout_sec=60), verifier=VerifierTable(timeout_sec=60))


def test_the_guard_goes_right_after_the_shebang_once_and_strips_back():
    text = add_guard(SCRIPT)
    assert text.startswith("#!/bin/bash\n" + GUARD_BEGIN) and text.endswith(SCRIPT.split("\n", 1)[1])
    assert is_guarded(text) and add_guard(text) == text and strip_guard(text) == SCRIPT
    assert not is_guarded(SCRIPT) and strip_guard(SCRIPT) == SCRIPT


@pytest.mark.parametrize("shebang", ["#!/bin/sh", "#!/bin/bash", "#!/usr/bin/env bash", "#!/bin/bash -e",
                                     "#!/usr/bin/dash"])
def test_shell_test_scripts_take_the_guard_and_still_parse(shebang, tmp_path):
    assert interpreter(f"{shebang}\n") in ("sh", "bash", "dash")
    p = tmp_path / "test.sh"
    p.write_text(add_guard(f"{shebang}\necho ok\n"))
    for sh in ("bash", "dash"):
        if shutil.which(sh):
            assert subprocess.run([sh, "-n", str(p)], capture_output=True).returncode == 0, sh


@pytest.mark.parametrize("first", ["#!/usr/bin/env python3", "#!/usr/bin/python3", "echo no shebang"])
def test_a_test_sh_that_is_not_shell_is_refused_at_the_freeze(first, tmp_path):
    b = TaskBuilder(tmp_path / "t")
    b.environment({"Dockerfile": "FROM x\n"})
    b.instruction("Do it.\n")
    b.tests({"test.sh": f"{first}\nprint(1)\n"})
    b.rubric("## Must-do\n- a\n")
    with pytest.raises(CreationOrderError, match="must be a shell script"):
        b.freeze(CONFIG)


def test_the_guard_uses_no_program_and_no_line_of_it_counts_as_the_tasks(tmp_path):
    b = TaskBuilder(tmp_path / "t")
    b.environment({"Dockerfile": "FROM x\n", "notes.txt": GUARD})  # the world may even quote it
    b.instruction("Do it.\n")
    b.tests({"test.sh": SCRIPT})
    b.rubric("## Must-do\n- a\n")
    b.freeze(CONFIG)
    task = TaskDir(b.dir.root)
    assert is_guarded(task.test_script.read_text())
    assert tool_names(task.tests_dir) == ["bash", "python3"]  # the guard's kill/read are builtins, not tools
    assert not any(origin == "tests/test.sh" and line.decode() in GUARD for line, origin in _secret_lines(task).items())


def test_every_task_the_example_skills_produce_has_the_guard(examples_dir, tmp_path):
    built = build_example_tasks(examples_dir, tmp_path)
    assert len(built) >= 4, "the example skills should realise several offline tasks"
    for root, gen, ctx in built:
        text = TaskDir(root).test_script.read_text()
        assert is_guarded(text) and text.count(GUARD_BEGIN) == 1, root.name
        assert strip_guard(text) == gen.tests(ctx)[0]["test.sh"], root.name  # the generator's own script, intact
