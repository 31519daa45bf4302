"""A script caught tampering scores 0; its work is then verified again without the tamper.

The tamper rule (tamper.py) gives a run that changed the verifier's toolchain reward 0, and that is what a
`wrong.sh` or a cheat that tampers scored: its check counts it like any run that scored 0, never as
`wrong_solution_passed` or `shortcut_passed`. But a 0 earned by tampering says nothing about the verifier: a cheat
whose cheap output would pass, plus a shadowed `cmp`, would hide a weak verifier behind its own tamper. So the
script's check is judged on its work *without* the tamper: every file it added or changed outside the toolchain
(read through the engine, never by a tool of the tampered container), and every deletion there, is replayed into
a fresh container of the image, whose toolchain is the image's by construction, and the verifier runs there as it
does for any trial (with the files the task's stand-in services recorded during the script's run). A tamper thus
neither fails a task nor lets one pass.

Not carried: what the tmpfs mounts hold (/tmp, /dev/shm: the engine cannot see them, as for mutation testing) and
/solution (our upload). Work too large to carry (over MAX_CARRY_BYTES) cannot be verified again: the check then
fails with `tamper_detected`, since a score nobody could check must not pass a task.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import docker.errors

from skill2env_dagster.gates.changes import Change, ChangeKind, is_under, parent_of, top_level
from skill2env_dagster.gates.sandbox import Sandbox, TrialStatus, VerifyOutcome
from skill2env_dagster.gates.tamper import TamperPolicy
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION

MAX_CARRY_BYTES = 64 << 20  # as much as mutation testing reads of the Oracle's outputs


@dataclass(frozen=True)
class Replay:
    """The verifier on a tampering run's work without its tamper (None when it could not be replayed)."""

    outcome: VerifyOutcome | None
    carried: int = 0  # files carried into the fresh container
    deleted: int = 0  # paths deleted there, as the run deleted them
    why_not: str = ""

    def describe(self) -> str:
        """How the work was verified again (the caller adds what that scored), or why it could not be."""
        if self.outcome is None:
            return f"its work could not be verified again without the tamper ({self.why_not})"
        return (f"its work verified again without the tamper (files carried: {self.carried}, deletions replayed: "
                f"{self.deleted}, in a fresh container of the image)")


@dataclass(frozen=True)
class Carried:
    tar: bytes  # rooted at /
    files: int
    deleted: tuple[str, ...]


def _keep(policy: TamperPolicy, path: str) -> bool:
    """Work to carry: not tamper evidence, not our own upload."""
    return policy.rule(path) is None and not is_under(path, CONTAINER_SOLUTION)


def _archive(sb: Sandbox, path: str, budget: int) -> bytes | None:
    """`path` as the engine's tar (rooted at its name); b"" when it is gone, None when over `budget` bytes."""
    try:
        stream, _ = sb.trial.box.get_archive(path)
    except docker.errors.NotFound:
        return b""
    chunks, size = [], 0
    for chunk in stream:
        size += len(chunk)
        if size > budget:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def carry(sb: Sandbox, changes: Sequence[Change]) -> Carried | str:
    """What the run changed outside the toolchain, read through the engine: a tar of what it added or modified
    (tamper evidence below a carried folder left out), and what it deleted. A string says why not."""
    kept = [c for c in changes if _keep(sb.policy, c.path)]
    deleted = tuple(top_level([c.path for c in kept if c.kind is ChangeKind.DELETED]))
    buf = io.BytesIO()
    files = budget = 0
    with tarfile.open(fileobj=buf, mode="w") as out:
        for path in top_level([c.path for c in kept if c.kind is not ChangeKind.DELETED]):
            archive = _archive(sb, path, MAX_CARRY_BYTES - budget)
            if archive is None:
                return f"more than {MAX_CARRY_BYTES >> 20} MiB changed outside the toolchain"
            budget += len(archive)
            if not archive:
                continue
            with tarfile.open(fileobj=io.BytesIO(archive)) as src:
                for info in src:
                    full = f"{parent_of(path).rstrip('/')}/{info.name}"
                    if not _keep(sb.policy, full):
                        continue
                    data = src.extractfile(info) if info.isfile() else None
                    info.name = full.lstrip("/")
                    out.addfile(info, data)
                    files += info.isfile()
    return Carried(buf.getvalue(), files, deleted)


def replay(sb: Sandbox, outcome: VerifyOutcome, open_box: Callable[[], Sandbox]) -> Replay:
    """`outcome` is a `tamper_detected` run in `sb` (still open, its processes reaped): verify its work again in a
    fresh sandbox from `open_box`, without the changes that were tamper evidence."""
    assert outcome.status is TrialStatus.TAMPER_DETECTED
    carried = carry(sb, outcome.changes)
    if isinstance(carried, str):
        return Replay(None, why_not=carried)
    collected = sb.trial.collect()  # what the services recorded of the run, read from the services themselves
    with open_box() as box:
        box.load(carried.tar, carried.deleted)
        return Replay(box.verify(collected), carried.files, len(carried.deleted))
