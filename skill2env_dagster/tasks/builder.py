"""TaskBuilder: writes one task folder in the frozen creation order and refuses anything else.

environment → instruction → tests → rubric → freeze → solution → cheats. Each step may run once (the solution step
again, for repairs); after the freeze nothing under environment/, instruction.md or tests/ can be written, and
every solution rewrite re-checks the freeze hash, so a repair can never change what the agent sees or how it is
graded. Cheats (`solution/cheats/*.sh`, shortcut solutions the gates must see fail) are written after the solution
and survive its repairs. The freeze also puts the harness's guard at the top of tests/test.sh (gates/reap.py) and
its helper for running solver code, tests/run_as_solver (gates/solver_run.py; written with the tests too).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from skill2env_dagster.atomic import atomic_write_bytes
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.reap import add_guard
from skill2env_dagster.gates.solver_run import write_helper
from skill2env_dagster.models.task import CREATION_ORDER, CreationStep, StepRecord
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode, Skill2EnvError

MAX_FILE_BYTES = 8 * 1024 * 1024
CHEATS = "solution/cheats"  # where the gates look for creator-authored cheats
MAX_TASK_BYTES = 64 * 1024 * 1024  # below the gate's 128 MiB so a candidate never reaches it


class CreationOrderError(Skill2EnvError):
    """A creator step ran out of order, twice, or tried to touch a frozen part of the task."""


class TaskBuilder:
    """Owns one staging folder; every write goes through the step methods below."""

    def __init__(self, root: Path) -> None:
        self.dir = TaskDir(Path(root))
        self.dir.root.mkdir(parents=True, exist_ok=True)
        self.done: list[CreationStep] = []
        self.records: list[StepRecord] = []
        self.freeze_hash: str | None = None
        self._bytes = 0

    # --- order ---------------------------------------------------------------------------------------------
    def _begin(self, step: CreationStep) -> None:
        if step == "solution" and "freeze" in self.done:
            return
        if step == "cheats" and "solution" in self.done and "cheats" not in self.done:
            return
        expected = CREATION_ORDER[len(self.done)] if len(self.done) < len(CREATION_ORDER) else None
        if step != expected:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED,
                                     f"step {step!r} out of order (done: {self.done}, next: {expected!r})")

    def _end(self, step: CreationStep, files: list[str], note: str = "") -> None:
        attempt = 1 + sum(r.step == step for r in self.records)
        if step not in self.done:
            self.done.append(step)
        self.records.append(StepRecord(step=step, attempt=attempt, files=files, note=note))

    # --- writing -------------------------------------------------------------------------------------------
    def _write(self, rel: str, data: str | bytes, allowed: str, executable: bool = False) -> str:
        path = PurePosixPath(rel)
        if path.is_absolute() or ".." in path.parts or not rel:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, f"unsafe path {rel!r}")
        if not (rel == allowed or path.parts[0] == allowed.rstrip("/")):
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, f"{rel!r} is outside {allowed!r}")
        if self.freeze_hash is not None and allowed != "solution/":
            raise CreationOrderError(ReasonCode.GRADING_MODIFIED, f"{rel!r} is frozen")
        blob = data.encode() if isinstance(data, str) else data
        self._bytes += len(blob)
        if len(blob) > MAX_FILE_BYTES or self._bytes > MAX_TASK_BYTES:
            raise CreationOrderError(ReasonCode.TASK_TOO_LARGE, f"{rel!r} takes the task over its size limit")
        target = self.dir.root / rel
        self._check_no_clash(path, target)
        atomic_write_bytes(target, blob)
        os.chmod(target, 0o755 if executable or blob.startswith(b"#!") else 0o644)
        return rel

    def _check_no_clash(self, path: PurePosixPath, target: Path) -> None:
        """A path is a file or a folder, not both: `a` and `a/b` in one candidate (seen from a model's random tool
        calls) is the creator's contract broken, refused with the reason, not an OSError that crashes the candidate."""
        file_above = next((p for p in path.parents if p.parts and (self.dir.root / p).is_file()), None)
        if file_above is not None or target.is_dir():
            what = f"{file_above.as_posix()!r} is a file" if file_above is not None else "it is a folder"
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED,
                                     f"{path.as_posix()!r} cannot be written: {what} (a path is a file or a folder)")

    def environment(self, files: Mapping[str, str | bytes]) -> None:
        """environment/: the Dockerfile plus fixtures and stand-ins (paths relative to environment/)."""
        self._begin("environment")
        if "Dockerfile" not in files:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, "environment has no Dockerfile")
        self._end("environment", [self._write(f"environment/{k}", v, "environment/") for k, v in files.items()])

    def instruction(self, text: str) -> None:
        self._begin("instruction")
        self._end("instruction", [self._write("instruction.md", text, "instruction.md")])

    def tests(self, files: Mapping[str, str | bytes]) -> None:
        self._begin("tests")
        if "test.sh" not in files:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, "tests have no test.sh")
        self._end("tests", [self._write(f"tests/{k}", v, "tests/") for k, v in files.items()])
        self.add_solver_helper()

    def rubric(self, text: str) -> None:
        self._begin("rubric")
        self._end("rubric", [self._write("tests/rubric.md", text, "tests/")])

    def freeze(self, config: TaskToml) -> str:
        """Put the guard at the top of tests/test.sh (gates/reap.py: it kills whatever the agent left running, so
        that under Harbor too only the verifier writes the reward), then hash environment/, instruction.md and
        tests/ and write task.toml with the hash recorded. Every generator's task passes here."""
        self._begin("freeze")
        self._guard_test_script()
        self.add_solver_helper()
        self.freeze_hash = compute_freeze_hash(self.dir.root)
        text = config.with_metadata(freeze_hash=self.freeze_hash).to_toml()
        atomic_write_bytes(self.dir.config, text.encode())
        self._end("freeze", ["task.toml"], note=self.freeze_hash)
        return self.freeze_hash

    def add_solver_helper(self) -> None:
        """tests/run_as_solver (gates/solver_run.py): how a verifier runs solver code without exposing the key."""
        try:
            write_helper(self.dir.tests_dir)
        except (OSError, ValueError) as e:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, f"tests/: {e}") from e

    def _guard_test_script(self) -> None:
        script = self.dir.test_script
        try:
            text = add_guard(script.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, f"tests/test.sh: {e}") from e
        atomic_write_bytes(script, text.encode())
        os.chmod(script, 0o755)

    def solution(self, files: Mapping[str, str | bytes], evidence: str = "") -> None:
        """solution/ (solve.sh, optional wrong.sh); a rewrite replaces the folder and re-checks the freeze."""
        self._begin("solution")
        if self.freeze_hash is None:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, "solution before freeze")
        if "solve.sh" not in files:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, "solution has no solve.sh")
        for old in self.dir.solution_dir.glob("*") if self.dir.solution_dir.is_dir() else []:
            if old.name != "cheats":  # a repair replaces the solution, never the cheats
                shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        written = [self._write(f"solution/{k}", v, "solution/", executable=k.endswith(".sh")) for k, v in files.items()]
        self.check_frozen()
        self._end("solution", written, note=evidence[:2000])

    def cheats(self, files: Mapping[str, str]) -> None:
        """solution/cheats/<name>.sh: shortcut solutions written after the solution (names are plain file names)."""
        self._begin("cheats")
        bad = [k for k in files if "/" in k or not k.endswith(".sh")]
        if bad:
            raise CreationOrderError(ReasonCode.CREATOR_CONTRACT_FAILED, f"cheat names must be NAME.sh: {bad}")
        written = [self._write(f"{CHEATS}/{k}", v, "solution/", executable=True) for k, v in files.items()]
        self.check_frozen()
        self._end("cheats", written)

    def check_frozen(self) -> None:
        """Raise grading_modified when the world or grading changed since the freeze."""
        if self.freeze_hash is None or compute_freeze_hash(self.dir.root) != self.freeze_hash:
            raise CreationOrderError(ReasonCode.GRADING_MODIFIED, "environment/, instruction.md or tests/ changed "
                                     "after the freeze")

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.dir.root.rglob("*") if p.is_file())
