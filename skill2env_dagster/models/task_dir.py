"""`TaskDir`: the one place that knows the file names of a Harbor task folder (after Harbor's `TaskPaths`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# In-container locations the Harbor reward protocol uses.
CONTAINER_SOLUTION = "/solution"
CONTAINER_TESTS = "/tests"
CONTAINER_VERIFIER_LOGS = "/logs/verifier"
CONTAINER_REWARD_JSON = "/logs/verifier/reward.json"
CONTAINER_REWARD_TXT = "/logs/verifier/reward.txt"


@dataclass(frozen=True)
class TaskDir:
    """Paths inside one task folder; nobody else joins "tests/test.sh" by hand."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def instruction(self) -> Path:
        return self.root / "instruction.md"

    @property
    def config(self) -> Path:
        return self.root / "task.toml"

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def dockerfile(self) -> Path:
        return self.environment_dir / "Dockerfile"

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def test_script(self) -> Path:
        return self.tests_dir / "test.sh"

    @property
    def rubric(self) -> Path:
        return self.tests_dir / "rubric.md"

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def solve_script(self) -> Path:
        return self.solution_dir / "solve.sh"

    @property
    def wrong_script(self) -> Path:
        """Optional deliberately wrong solution: it must finish and score below 1 on some metric."""
        return self.solution_dir / "wrong.sh"

    @property
    def cheats_dir(self) -> Path:
        """Creator-authored shortcut solutions (`solution/cheats/*.sh`); each must score at most the threshold."""
        return self.solution_dir / "cheats"

    def cheat_scripts(self) -> list[Path]:
        """The cheats, sorted by name; none when the folder is absent."""
        if not self.cheats_dir.is_dir():
            return []
        return sorted(p for p in self.cheats_dir.glob("*.sh") if p.is_file() and not p.is_symlink())

    def required_files(self) -> list[Path]:
        """Regular files every task must have."""
        return [
            self.instruction,
            self.config,
            self.dockerfile,
            self.test_script,
            self.rubric,
            self.solve_script,
        ]

    def frozen_paths(self) -> list[Path]:
        """What the freeze hash covers: the world and the grading, not the solution or task.toml."""
        return [self.environment_dir, self.instruction, self.tests_dir]

    @property
    def name(self) -> str:
        return self.root.name
