"""Scripts caught tampering: what is carried to the replay, and how their checks are judged (pure, no Docker)."""

from __future__ import annotations

import io
import tarfile
from functools import partial
from types import SimpleNamespace

import pytest

from skill2env_dagster.gates import untampered
from skill2env_dagster.gates.changes import Change, ChangeKind
from skill2env_dagster.gates.reward import Reward, all_full
from skill2env_dagster.gates.runner import _cheat, _judge, _untampered
from skill2env_dagster.gates.sandbox import TrialStatus, VerifyOutcome
from skill2env_dagster.gates.tamper import TamperPolicy
from skill2env_dagster.gates.untampered import Replay, carry
from skill2env_dagster.models.gate import CheckVerdict
from skill2env_dagster.reasons import ReasonCode

A, C, D = ChangeKind.ADDED, ChangeKind.MODIFIED, ChangeKind.DELETED
POLICY = TamperPolicy(path_dirs=("/usr/local/bin", "/usr/bin", "/bin"), workdir="/app")
SHADOW = ("A /usr/local/bin/cmp (under /usr)",)


def _tar(entries: dict[str, bytes | None]) -> bytes:
    """A tar like the engine's get_archive: names relative to the parent of the path asked for (None: a folder)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _sandbox(archives: dict[str, bytes]) -> SimpleNamespace:
    asked: list[str] = []

    def get_archive(path: str):
        asked.append(path)
        return iter([archives[path]]), {}

    return SimpleNamespace(policy=POLICY, asked=asked, trial=SimpleNamespace(box=SimpleNamespace(
        get_archive=get_archive)))


def test_the_work_is_carried_without_the_tamper_and_without_our_upload():
    changes = [Change("/app/out", A), Change("/app/out/report.csv", A), Change("/app/out/sitecustomize.py", A),
               Change("/app/data.txt", D), Change("/usr/local/bin/cmp", A), Change("/solution/wrong.sh", A),
               Change("/etc/motd", C)]
    sb = _sandbox({"/app/out": _tar({"out": None, "out/report.csv": b"a,1\n", "out/sitecustomize.py": b"x"}),
                   "/etc/motd": _tar({"motd": b"hi\n"})})
    carried = carry(sb, changes)
    assert not isinstance(carried, str)
    assert sb.asked == ["/app/out", "/etc/motd"]  # never the toolchain, never /solution
    with tarfile.open(fileobj=io.BytesIO(carried.tar)) as tar:
        assert tar.getnames() == ["app/out", "app/out/report.csv", "etc/motd"]  # the start-up hook left out
    assert (carried.files, carried.deleted) == (2, ("/app/data.txt",))


def test_work_over_the_limit_cannot_be_carried(monkeypatch):
    monkeypatch.setattr(untampered, "MAX_CARRY_BYTES", 4096)
    sb = _sandbox({"/app/big.bin": _tar({"big.bin": b"x" * 8192})})
    assert "more than" in carry(sb, [Change("/app/big.bin", A)])


def _outcome(status: TrialStatus, metrics: dict[str, float] | None = None) -> VerifyOutcome:
    reward = Reward(metrics=metrics) if metrics is not None else Reward()
    if status is TrialStatus.REWARD_UNUSABLE:
        reward = Reward(reason=ReasonCode.REWARD_MISSING, problem="no reward file")
    return VerifyOutcome(status, reward, SHADOW if status is TrialStatus.TAMPER_DETECTED else ())


TAMPERED = _outcome(TrialStatus.TAMPER_DETECTED)
WRONG = partial(_judge, "wrong_solution", rule=lambda m: not all_full(m), fail=ReasonCode.WRONG_SOLUTION_PASSED,
                timeout_reason=ReasonCode.WRONG_SOLUTION_TIMEOUT, timeouts=(60.0, 30.0))


@pytest.mark.parametrize(("replayed", "verdict", "reason"), [
    (Replay(_outcome(TrialStatus.OK, {"format": 1.0, "correct": 0.0}), 1), CheckVerdict.PASS, None),
    (Replay(_outcome(TrialStatus.OK, {"format": 1.0, "correct": 1.0}), 1), CheckVerdict.FAIL,
     ReasonCode.WRONG_SOLUTION_PASSED),  # the tamper hid an answer the verifier accepts
    (Replay(None, why_not="more than 64 MiB changed"), CheckVerdict.FAIL, ReasonCode.TAMPER_DETECTED),
])
def test_a_tampering_wrong_sh_is_judged_on_its_work_without_the_tamper(replayed, verdict, reason):
    check = _untampered("wrong.sh", TAMPERED, replayed, WRONG)
    assert (check.name, check.verdict, check.reason) == ("wrong_solution", verdict, reason)
    assert check.evidence.startswith("wrong.sh scored 0 by the tamper rule (tamper_detected: A /usr/local/bin/cmp")
    assert replayed.describe() in check.evidence


def test_wrong_sh_without_a_tamper_is_judged_as_before():
    right = _outcome(TrialStatus.OK, {"format": 1.0, "correct": 1.0})
    assert _untampered("wrong.sh", right, None, WRONG).reason is ReasonCode.WRONG_SOLUTION_PASSED
    assert _untampered("wrong.sh", _outcome(TrialStatus.OK, {"format": 1.0, "correct": 0.0}), None, WRONG).ok


@pytest.mark.parametrize(("replayed", "verdict", "reason", "tail"), [
    (Replay(_outcome(TrialStatus.OK, {"a": 0.0, "b": 0.5}), 2), CheckVerdict.PASS, None,
     ": mean 0.250 <= threshold 0.5"),
    (Replay(_outcome(TrialStatus.OK, {"a": 1.0, "b": 0.5}), 2), CheckVerdict.FAIL, ReasonCode.SHORTCUT_PASSED,
     ": mean 0.750 > threshold 0.5"),
    (Replay(_outcome(TrialStatus.REWARD_UNUSABLE), 2), CheckVerdict.PASS, None,
     ": reward 0 (reward_missing: no reward file)"),
    (Replay(None, why_not="more than 64 MiB changed"), CheckVerdict.FAIL, ReasonCode.TAMPER_DETECTED,
     "(more than 64 MiB changed)"),
])
def test_a_tampering_cheat_is_judged_on_its_work_without_the_tamper(replayed, verdict, reason, tail):
    attempt = _cheat("cheats/x.sh", TAMPERED, 0.5, replayed)
    assert (attempt.verdict, attempt.reason, attempt.status, attempt.mean) == (verdict, reason, "tamper_detected", 0)
    assert attempt.evidence.startswith("reward 0 by the tamper rule (tamper_detected: A /usr/local/bin/cmp")
    assert attempt.evidence.endswith(tail), attempt.evidence
