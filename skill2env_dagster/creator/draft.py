"""The creator agent's draft task folder: file-level writes in the frozen order, enforced here, not by the prompt.

Areas, in order: environment/ → instruction.md → tests/ → tests/rubric.md → freeze → solution/ → solution/cheats/.
An area opens once the one before it exists (environment/Dockerfile, instruction.md, tests/test.sh,
tests/rubric.md); until the freeze any open area may be revised, since the agent's own checks find problems in
them. The freeze (TaskBuilder.freeze: hash recorded in task.toml) closes environment/, instruction.md and tests/
for good: a later write there is refused, and so is a solution before the freeze or a cheat before solve.sh.
A refusal is a `RefusalError` whose text the model sees; the draft records every refusal and every write.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path, PurePosixPath

from skill2env_dagster.atomic import atomic_write_bytes
from skill2env_dagster.gates.reap import SHELLS, interpreter
from skill2env_dagster.models.task import CREATION_ORDER, CreationStep, StepRecord
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import Skill2EnvError
from skill2env_dagster.tasks.builder import TaskBuilder

_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,99}$|^\.[A-Za-z0-9_][A-Za-z0-9._+-]{0,98}$")
PREREQUISITE = {"instruction": "environment/Dockerfile", "tests": "instruction.md", "rubric": "tests/test.sh",
                "cheats": "solution/solve.sh"}
ORDER_TEXT = "environment/ → instruction.md → tests/ → tests/rubric.md → freeze → solution/ → solution/cheats/"
PRE_FREEZE = ("environment", "instruction", "tests", "rubric")


class RefusalError(Exception):
    """A write the harness refuses; the message is shown to the model as the tool's result."""


def area_of(rel: str) -> CreationStep:
    """Which area of the task a path (relative to the task folder) belongs to; RefusalError for anything else."""
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or any(not _SEGMENT.match(p) for p in path.parts) or len(path.parts) > 16:
        raise RefusalError(f"refused: {rel!r} is not a safe relative path (parts of letters, digits, . _ + -; "
                           "no '..', no leading '/', no spaces)")
    top = path.parts[0]
    if rel == "instruction.md":
        return "instruction"
    if rel == "tests/rubric.md":
        return "rubric"
    if top == "environment" and len(path.parts) > 1:
        return "environment"
    if top == "tests" and len(path.parts) > 1:
        return "tests"
    if top == "solution" and len(path.parts) > 1:
        if path.parts[1] == "cheats":
            if len(path.parts) != 3 or not path.name.endswith(".sh"):
                raise RefusalError(f"refused: cheats are solution/cheats/<name>.sh files, not {rel!r}")
            return "cheats"
        return "solution"
    if rel == "task.toml":
        raise RefusalError("refused: task.toml is written by the harness (at the freeze)")
    raise RefusalError(f"refused: {rel!r} is outside the task's areas (environment/..., instruction.md, tests/..., "
                  "solution/...)")


class Draft(TaskBuilder):
    """One candidate's folder; `write`/`delete` are the only ways the agent changes it."""

    def __init__(self, root: Path, provisional: TaskToml) -> None:
        super().__init__(root)
        self.refusals: Counter[str] = Counter()  # kind of refusal -> times
        self.revision = 0  # bumped on every successful change (the loop detector's "the draft changed")
        atomic_write_bytes(self.dir.config, provisional.to_toml().encode())

    @property
    def frozen(self) -> bool:
        return self.freeze_hash is not None

    def exists(self, rel: str) -> bool:
        return (self.dir.root / rel).is_file()

    def phase(self) -> str:
        """The next thing to do, for the model's status line."""
        if self.frozen:
            return "solution/cheats/submit" if self.exists("solution/solve.sh") else "solution"
        missing = self.missing_before_freeze()
        return f"write {missing[0]}" if missing else "freeze"

    def missing_before_freeze(self) -> list[str]:
        want = ["environment/Dockerfile", "instruction.md", "tests/test.sh", "tests/rubric.md"]
        return [w for w in want if not self.exists(w)]

    def _open(self, area: CreationStep, rel: str) -> None:
        """Refuse a write to `area` that breaks the order or touches a frozen part."""
        if self.frozen and area in PRE_FREEZE:
            self.refusals["frozen"] += 1
            raise RefusalError(f"refused: {rel} is frozen (hash {self.freeze_hash}); after the freeze only solution/ "
                          "(and then solution/cheats/) may change")
        if area in ("solution", "cheats") and not self.frozen:
            self.refusals["order"] += 1
            raise RefusalError(f"refused: {rel} comes after the freeze (order: {ORDER_TEXT}); call freeze first")
        need = PREREQUISITE.get(area)
        if need and not self.exists(need):
            self.refusals["order"] += 1
            raise RefusalError(f"refused: write {need} before {rel} (order: {ORDER_TEXT})")

    def write(self, rel: str, data: str | bytes) -> str:
        area = area_of(rel)
        self._open(area, rel)
        blob = data.encode() if isinstance(data, str) else data
        target = self.dir.root / rel
        self._bytes = self.size_bytes() - (target.stat().st_size if target.is_file() else 0)
        try:
            written = self._write(rel, blob, f"{rel.split('/')[0]}/" if "/" in rel else rel)
        except Skill2EnvError as e:  # size or path limits of the builder
            raise RefusalError(f"refused: {e}") from e
        if self.frozen:
            self.check_frozen()
        elif area == "tests":
            self.add_solver_helper()  # there for the drafts' own runs and trials; the freeze writes it again
        self._record(area, written)
        return f"wrote {len(blob)} bytes to {rel}"

    def delete(self, rel: str) -> str:
        area = area_of(rel)
        self._open(area, rel)
        target = self.dir.root / rel
        if not target.is_file() or target.is_symlink():
            raise RefusalError(f"refused: {rel} is not a file of the draft")
        target.unlink()
        self._record(area, rel, "deleted")
        return f"deleted {rel}"

    def _record(self, area: CreationStep, rel: str, note: str = "") -> None:
        self.revision += 1
        attempt = 1 + sum(r.step == area for r in self.records)
        self.records.append(StepRecord(step=area, attempt=attempt, files=[rel], note=note))

    def freeze_with(self, config: TaskToml) -> str:
        """Close the grading: the harness calls this once its own checks passed."""
        missing = self.missing_before_freeze()
        if self.frozen or missing:
            raise RefusalError("refused: already frozen" if self.frozen
                               else f"refused: missing {missing} before freeze")
        if interpreter(self.dir.test_script.read_text(encoding="utf-8", errors="replace")) not in SHELLS:
            raise RefusalError("refused: tests/test.sh must be a shell script (#!/bin/bash or #!/bin/sh): the "
                               "harness puts its guard against leftover processes at its top at the freeze")
        self.done = list(CREATION_ORDER[:4])
        digest = self.freeze(config)
        self.revision += 1
        return digest

    def files(self, area_prefix: str = "") -> list[str]:
        """Relative paths of the draft's files (task.toml excluded), optionally under one prefix."""
        root = self.dir.root
        out = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        return [p for p in out if p != "task.toml" and p.startswith(area_prefix)]
