"""The rollouts' look at /logs/verifier after the agent phase (no engine: a scripted trial). The engine now and then
hands back an exec's output empty (docker-py#2042): the listing only reads, so it is asked again, and an answer
that never comes whole is the engine's failure - never "nothing forged" (a forger once went unreported that way)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from skill2env_dagster.gates.container import RAN, ExecResult, Trial
from skill2env_dagster.gates.sandbox import TrialStatus
from skill2env_dagster.reasons import InfraError, ReasonCode
from skill2env_dagster.rollouts.docker_sandbox import DockerSandbox


def _sandbox(answers: list[bytes]) -> DockerSandbox:
    replies = iter(answers)
    trial = SimpleNamespace(alive=lambda: True, sh=lambda *a, **k: ExecResult(0, False, 0.01, next(replies)))
    trial.read_whole = lambda script, timeout: Trial.read_whole(trial, script, timeout)  # type: ignore[arg-type]
    box = object.__new__(DockerSandbox)
    box._sb = SimpleNamespace(trial=trial, settle=lambda: SimpleNamespace(status=TrialStatus.OK))  # type: ignore
    return box


def test_a_listing_that_came_back_empty_is_asked_again():
    box = _sandbox([b"", f"/logs/verifier/reward.json\n{RAN}\n".encode()])
    assert box.forged_reward() == "/logs/verifier/reward.json"


def test_an_empty_folder_is_nothing_forged():
    assert _sandbox([f"{RAN}\n".encode()]).forged_reward() == ""


def test_a_listing_that_never_comes_whole_is_the_engines_failure():
    with pytest.raises(InfraError) as e:
        _sandbox([b"", b"", b"/logs/verifier/rew"]).forged_reward()
    assert e.value.reason is ReasonCode.DOCKER_UNAVAILABLE
