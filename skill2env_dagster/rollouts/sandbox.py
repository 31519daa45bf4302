"""What the agent harness needs from a task's sandbox, as a small protocol.

The harness runs commands, writes files, reads a digest of what changed, and finally asks for the verified
reward. It never touches Docker itself: `rollouts.docker_sandbox` adapts the gates' hardened container to this
protocol, and tests may pass any object that has these methods.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from skill2env_dagster.reasons import ReasonCode


class SandboxGoneError(Exception):
    """The sandbox stopped answering: its container was killed (deadline) or died."""


@dataclass(frozen=True)
class CommandResult:
    """One command's outcome; output is split into head and tail so a flood never reaches the harness whole."""

    exit_code: int | None
    head: bytes = b""
    tail: bytes = b""
    total_bytes: int = 0
    capped: bool = False  # the command wrote more than the cap; the rest was discarded unread
    timed_out: bool = False
    seconds: float = 0.0


@dataclass(frozen=True)
class Verification:
    """The verifier's metrics, or the reason there are none (then `metrics` is empty). `zero` marks a reward of 0
    by rule for what the agent did (a tampered toolchain, processes that could not be stopped): a genuine outcome,
    scored, unlike a reward that is missing for reasons nobody can pin on the agent."""

    metrics: dict[str, float] = field(default_factory=dict)
    reason: ReasonCode | None = None
    evidence: str = ""
    zero: bool = False
    seconds: float = 0.0


class Sandbox(Protocol):
    """A fresh, hardened copy of one task's world (see module docstring)."""

    def exec(self, command: str, timeout: float) -> CommandResult:
        """Run a shell command in the task's working directory; raises SandboxGoneError."""
        ...

    def write_file(self, path: str, content: bytes, mode: str | None = None) -> CommandResult:
        """Create or replace a file (relative paths are under the working directory) and set its octal `mode`
        when given (else a new file is 0644, an existing one keeps its mode); the result text names the mode the
        file has. Raises SandboxGoneError."""
        ...

    def upload_dir(self, src: Path, dest: str) -> None:
        """Copy a host folder to /<dest> (used to give the Oracle reference its solution)."""
        ...

    def workspace_digest(self, limit: int) -> str:
        """At most `limit` characters: which paths the episode added, changed or deleted, and their heads."""
        ...

    def kill(self) -> None:
        """Hard stop: every process in the sandbox dies at once (the task's agent timeout)."""
        ...

    def revive(self) -> None:
        """After kill(): bring the sandbox back with its filesystem, so that the verifier can still run."""
        ...

    def verify(self) -> Verification:
        """Stop what the agent left running, run the task's verifier, read the reward."""
        ...


class SandboxFactory(Protocol):
    """Opens a fresh sandbox for a task folder and removes it on exit, whatever happened."""

    def __call__(self, task_dir: Path) -> AbstractContextManager[Sandbox]: ...
