"""How the end of the agent phase reads a reaper that was cut short (no engine: a scripted trial).

The reaper always ends with `reaped` or `still alive: …`; an answer with neither means its shell was killed. When
the agent had killed the keeper, the container is going down while the engine still says it runs: that is
`container_died`, decided by the container's stop (waited for), never by how fast the engine noticed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from skill2env_dagster.gates.container import ExecResult
from skill2env_dagster.gates.sandbox import Sandbox, TrialStatus, unfinished


@dataclass
class ScriptedTrial:
    answer: bytes
    stops: bool  # whether the container goes down once the reaper was cut short
    waited: list[float] = field(default_factory=list)

    def alive(self) -> bool:
        return True  # the engine has not noticed yet

    def reap(self) -> ExecResult:
        return ExecResult(137, False, 0.1, self.answer)

    def stops_within(self, seconds: float) -> bool:
        self.waited.append(seconds)
        return self.stops

    def kill(self) -> None:
        pass


def _settle(trial: ScriptedTrial) -> TrialStatus:
    box = object.__new__(Sandbox)
    box.trial, box.dirty, box._settled = trial, True, None  # type: ignore[assignment]
    return box.settle().status


def test_a_reaper_cut_short_in_a_dying_container_is_container_died():
    trial = ScriptedTrial(b"", stops=True)
    assert _settle(trial) is TrialStatus.CONTAINER_DIED and len(trial.waited) == 1


def test_a_reaper_cut_short_in_a_container_that_stays_up_is_reap_failed():
    assert _settle(ScriptedTrial(b"", stops=False)) is TrialStatus.REAP_FAILED


@pytest.mark.parametrize("answer", [b"still alive: 3 processes", b"Killed\nstill alive: fork bomb"])
def test_a_reaper_that_reports_survivors_is_reap_failed_without_waiting(answer):
    trial = ScriptedTrial(answer, stops=True)
    assert _settle(trial) is TrialStatus.REAP_FAILED and trial.waited == []


def test_only_an_answer_without_the_last_line_is_unfinished():
    assert unfinished(ExecResult(None, False, 0.0, b""))
    assert not unfinished(ExecResult(0, False, 0.0, b"reaped\n"))
    assert not unfinished(ExecResult(0, True, 60.0, b""))  # a timeout is its own verdict
