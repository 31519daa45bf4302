"""How a trial reads a script exec's answer (no engine: a scripted `sh`). An answer without the line the script
prints before anything else means the engine never ran it - an engine that has just restarted can answer an exec
with nothing - which is infrastructure, never the task's verdict (a retry gate once rejected a good task with
`reward_missing` that way); a program that kills the script's shell leaves that line, so it stays the task's."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.container import RAN, ExecResult, Trial
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.reasons import InfraError, ReasonCode


def _trial(answer: bytes, alive: bool = True, exit_code: int | None = 0) -> Trial:
    trial = object.__new__(Trial)
    trial.settings = GateSettings()
    trial.sh = lambda *a, **k: ExecResult(exit_code, False, 0.1, answer)  # type: ignore[method-assign]
    trial.alive = lambda: alive  # type: ignore[method-assign]
    return trial


def test_a_script_that_ran_gives_its_programs_exit_code_and_what_followed():
    res = _trial(f"{RAN}\n3\nreward 1\n".encode()).run_script(["/tests/test.sh"], "/logs/x", 10)
    assert (res.exit_code, res.output, res.died) == (3, b"reward 1\n", False)


def test_a_shell_killed_by_the_program_is_the_tasks_doing():
    res = _trial(f"{RAN}\n".encode(), exit_code=137).run_script(["/tests/test.sh"], "/logs/x", 10)
    assert (res.exit_code, res.output, res.died) == (None, b"", False)


@pytest.mark.parametrize("exit_code", [0, None, 137])
def test_an_exec_that_never_ran_the_script_is_the_engines_failure(exit_code):
    with pytest.raises(InfraError) as e:
        _trial(b"", exit_code=exit_code).run_script(["/tests/test.sh"], "/logs/x", 10)
    assert e.value.reason is ReasonCode.DOCKER_UNAVAILABLE


def test_an_exec_into_a_container_that_has_stopped_is_container_died():
    res = _trial(b"", alive=False).run_script(["/tests/test.sh"], "/logs/x", 10)
    assert res.died
