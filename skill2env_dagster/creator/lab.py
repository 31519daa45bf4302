"""Where the creator's draft runs: a scratch container of the draft's image, and a fresh no-op trial.

Both use the gates' hardened trial (gates.sandbox via rollouts.docker_sandbox): no network, no capabilities but
CAP_SETUID/CAP_SETGID (gates/solver_run.py), process, memory and CPU limits, removed on exit. The workbench is the
agent's scratch machine: built from the draft's environment/ (rebuilt, in a fresh container, whenever environment/
changed), with the draft's tests/ at /tests, its solution/ at /solution (after the freeze) and the skill's folder
at /skill, all re-copied when they change. Whatever the agent runs — its data generators, its draft verifier, the
skill's own scripts — runs there, never on the host. The no-op trial is what the gate's no-op check does: the
verifier on the untouched world.
"""

from __future__ import annotations

import hashlib
import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import docker

from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.images import build_image, environment_digest
from skill2env_dagster.gates.sandbox import remove_image
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.rollouts.docker_sandbox import DockerSandbox, OutputLimits
from skill2env_dagster.rollouts.sandbox import CommandResult, SandboxGoneError, Verification

log = logging.getLogger(__name__)
SKILL_MOUNT = "skill"  # /skill in the workbench
_CAT = 'f=$1; [ -f "$f" ] && [ ! -L "$f" ] || exit 3; [ "$(wc -c < "$f")" -le "$2" ] || exit 4; exec cat -- "$f"'
MAX_FETCH = 8 << 20


@dataclass(frozen=True)
class RunResult:
    result: CommandResult
    note: str = ""  # e.g. "environment/ changed: image rebuilt, fresh container"


class Workbench(Protocol):
    def run(self, command: str, timeout: float) -> RunResult: ...
    def fetch(self, path: str, max_bytes: int) -> bytes: ...
    def close(self) -> None: ...


@runtime_checkable
class Lab(Protocol):
    """Opens workbenches and runs no-op trials; `tasks.creator` tests pass fakes."""

    def workbench(self, task_dir: Path, skill_dir: Path | None) -> Workbench: ...
    def noop(self, task_dir: Path) -> Verification: ...


def _tree_digest(path: Path) -> str:
    return environment_digest(path) if path.is_dir() else ""


class DockerWorkbench:
    """The scratch container (see module docstring); InputError(build_failed) from `run` when the image fails."""

    def __init__(self, client: docker.DockerClient, settings: GateSettings, limits: OutputLimits, task_dir: Path,
                 skill_dir: Path | None) -> None:
        self.client, self.settings, self.limits = client, settings, limits
        self.task, self.skill_dir = TaskDir(task_dir), skill_dir
        self._box: AbstractContextManager[DockerSandbox] | None = None
        self._sb: DockerSandbox | None = None
        self._env = ""
        self._synced: dict[str, str] = {}
        self._built: list[str] = []  # images this workbench built (removed when superseded or closed)

    def _open(self) -> str:
        image, built = build_image(self.client, self.task.environment_dir, self.settings.build_network, 600)
        note = "environment/ changed: image rebuilt, fresh container" if self._sb is not None else ""
        self.close(keep=image)
        if built:
            self._built.append(image)
        sb = DockerSandbox(self.client, self.task.root, self.settings, self.limits)
        self._sb = sb.__enter__()
        self._box = sb
        self._env, self._synced = environment_digest(self.task.environment_dir), {}
        if self.skill_dir is not None and self.skill_dir.is_dir():
            self._sb.upload_dir(self.skill_dir, SKILL_MOUNT)
        return note

    def _sync(self, sb: DockerSandbox) -> None:
        """Copy the draft's tests/ and solution/ in again when they changed (removed first: deletions count)."""
        for folder in ("tests", "solution"):
            src = self.task.root / folder
            digest = _tree_digest(src)
            if self._synced.get(folder) == digest:
                continue
            sb.exec(f"rm -rf /{folder}", 30)
            if src.is_dir():
                sb.upload_dir(src, folder)
            self._synced[folder] = digest

    def run(self, command: str, timeout: float) -> RunResult:
        """The command's result; a container the command (or a verifier it ran) stopped is reported as such and
        replaced by a fresh one at the next command."""
        note = ""
        if self._sb is None or environment_digest(self.task.environment_dir) != self._env:
            note = self._open()
        assert self._sb is not None
        try:
            self._sync(self._sb)
            result = self._sb.exec(command, timeout)
            if result.exit_code is not None or result.timed_out or self._alive(self._sb):
                return RunResult(result, note)
            why = "the command's own wrapper was killed"
        except SandboxGoneError as e:
            why = str(e)
        self.close(keep=self._last_image())
        gone = (f"the workbench container stopped during the command ({why}): something it ran killed the "
                "container's own processes; the next command starts a fresh container")
        return RunResult(CommandResult(None, head=gone.encode()), "; ".join(filter(None, [note, gone])))

    @staticmethod
    def _alive(sb: DockerSandbox) -> bool:
        """Still running a moment after a command whose wrapper died (a container being stopped takes that)."""
        for _ in range(10):
            if not sb.sandbox.trial.alive():
                return False
            time.sleep(0.2)
        return True

    def _last_image(self) -> str | None:
        return self._built[-1] if self._built else None

    def fetch(self, path: str, max_bytes: int) -> bytes:
        """A regular file of the workbench container; ValueError when it is not one or is too large. Read through
        the engine, or (a tmpfs such as /tmp, which the engine's archive does not show) with `cat` inside."""
        if self._sb is None:
            raise ValueError("no workbench container is running: one starts with the next `run` (files made in a "
                             "container that stopped are gone)")
        try:
            tree = self._sb.sandbox.read_tree(path, max_bytes)
        except docker.errors.NotFound:
            tree = {}
        if tree is None:
            raise ValueError(f"{path} is larger than {max_bytes} bytes")
        data = tree.get(path, (None, 0))[0]
        if isinstance(data, bytes):
            return data
        res = self._sb.sandbox.trial.sh(_CAT, 60, args=(path, str(max_bytes)))
        if res.exit_code == 0:
            return res.output
        if res.died or not self._sb.sandbox.trial.alive():
            self.close(keep=self._last_image())
            raise ValueError("the workbench container has stopped (something run in it killed its processes); "
                             "the next `run` starts a fresh one, and files made in the old one are gone")
        why = {3: "no such regular file in the workbench", 4: f"larger than {max_bytes} bytes"}
        raise ValueError(f"{path}: {why.get(res.exit_code or 0, 'could not be read')}")

    def close(self, keep: str | None = None) -> None:
        if self._box is not None:
            try:
                self._box.__exit__(None, None, None)
            finally:
                self._box = self._sb = None
        for image in [i for i in self._built if i != keep]:
            remove_image(self.client, image)
            self._built.remove(image)


class DockerLab:
    """Workbenches and no-op trials on one engine, with the gate's settings."""

    def __init__(self, settings: GateSettings, limits: OutputLimits | None = None,
                 client: docker.DockerClient | None = None) -> None:
        self.settings, self.limits = settings, limits or OutputLimits()
        self.client = client or ctr.client_for(settings)

    def workbench(self, task_dir: Path, skill_dir: Path | None) -> DockerWorkbench:
        return DockerWorkbench(self.client, self.settings, self.limits, task_dir, skill_dir)

    def noop(self, task_dir: Path) -> Verification:
        with DockerSandbox(self.client, task_dir, self.settings, self.limits) as sb:
            return sb.verify()


def short_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]
