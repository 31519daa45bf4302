"""How a trial reads a script exec's answer (no engine: a scripted `sh`). An answer without the line the script
prints before anything else was lost by the engine (docker-py#2042: exit 0, no output) or never produced - never the
task's doing (good tasks were rejected with `reward_missing` that way): it is read again where a read-only script
can print it (the reward file), else infrastructure. A program that kills the script's shell leaves that line, so
it stays the task's."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.container import RAN, ExecResult, Trial
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.reasons import InfraError, ReasonCode


def _trial(answer: bytes, alive: bool = True, exit_code: int | None = 0, rereads: tuple[bytes, ...] = ()) -> Trial:
    """A trial whose first exec answers `answer` (with `exit_code`) and whose later ones answer `rereads`."""
    replies = iter([ExecResult(exit_code, False, 0.1, answer)] + [ExecResult(0, False, 0.1, r) for r in rereads])
    trial = object.__new__(Trial)
    trial.settings = GateSettings()
    trial.sh = lambda *a, **k: next(replies)  # type: ignore[method-assign]
    trial.alive = lambda: alive  # type: ignore[method-assign]
    return trial


def test_a_script_that_ran_gives_its_programs_exit_code_and_what_followed():
    res = _trial(f"{RAN}\n3\nreward 1\n".encode()).run_script(["/tests/test.sh"], "/logs/x", 10)
    assert (res.exit_code, res.output, res.died) == (3, b"reward 1\n", False)


def test_a_shell_killed_by_the_program_is_the_tasks_doing():
    res = _trial(f"{RAN}\n".encode(), exit_code=137).run_script(["/tests/test.sh"], "/logs/x", 10)
    assert (res.exit_code, res.output, res.died) == (None, b"", False)


@pytest.mark.parametrize("exit_code", [0, None, 137])
def test_a_verifier_answer_that_never_came_is_the_engines_failure(exit_code):
    with pytest.raises(InfraError) as e:
        _trial(b"", exit_code=exit_code, rereads=(b"",) * 3).run_script(["/tests/test.sh"], "/logs/x", 10,
                                                                         reread="print the reward")
    assert e.value.reason is ReasonCode.DOCKER_UNAVAILABLE


def test_without_a_reread_a_lost_answer_is_a_missing_exit_code():
    res = _trial(b"").run_script(["/solution/solve.sh"], "/logs/x", 10)
    assert (res.exit_code, res.output, res.died) == (None, b"", False)


def test_an_exec_into_a_container_that_has_stopped_is_container_died():
    res = _trial(b"", alive=False, exit_code=137).run_script(["/tests/test.sh"], "/logs/x", 10, reread="r")
    assert res.died


def test_an_answer_lost_after_the_script_ended_is_read_again():
    """Exit 0 is the script's own last word: it ran to its end, the engine lost what it printed; the reward
    file is still there and is printed again (the first re-read comes back cut too here)."""
    trial = _trial(b"", rereads=(b"", f"/logs/verifier/reward.txt\n1{RAN}\n".encode()))
    res = trial.run_script(["/tests/test.sh"], "/logs/x", 10, reread="print the reward")
    assert (res.exit_code, res.output, res.died) == (None, b"/logs/verifier/reward.txt\n1", False)


def test_a_lost_answer_that_cannot_be_read_again_is_the_engines_failure():
    trial = _trial(b"", rereads=(b"", b"", b""))
    with pytest.raises(InfraError):
        trial.run_script(["/tests/test.sh"], "/logs/x", 10, reread="print the reward")


def test_a_killed_script_is_not_read_again():
    trial = _trial(b"", exit_code=137, rereads=(f"x{RAN}\n".encode(),))
    with pytest.raises(InfraError):
        trial.run_script(["/tests/test.sh"], "/logs/x", 10, reread="print the reward")
