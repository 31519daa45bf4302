"""Reading Harbor task folders into the few texts and labels the probe, decontamination and export need.

The probe reads task folders as files (not through the task stage's models) so that it can score any Harbor
dataset, including one produced elsewhere; a folder it cannot use becomes a recorded `invalid` result.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill2env_dagster.models.probe import ProbeTaskResult
from skill2env_dagster.reasons import ReasonCode

INSTRUCTION = "instruction.md"
RUBRIC = "tests/rubric.md"
TASK_TOML = "task.toml"


@dataclass(frozen=True)
class ProbeTask:
    """One task as the probe sees it: its query texts and the skill it should retrieve."""

    task_id: str
    source_skill: str
    instruction: str
    rubric: str
    generator: str = "unknown"
    name: str | None = None
    path: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def find_task_dirs(root: Path) -> list[Path]:
    """Every folder under root (or root itself) holding a task.toml, sorted for reproducible output."""
    if (root / TASK_TOML).is_file():
        return [root]
    return sorted(p.parent for p in root.rglob(TASK_TOML) if p.is_file())


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _invalid(task_id: str, detail: str) -> ProbeTaskResult:
    return ProbeTaskResult(
        task_id=task_id, status="invalid", reason=ReasonCode.TASK_METADATA_INVALID, detail=detail
    )


def read_task(task_dir: Path, task_id: str) -> ProbeTask | ProbeTaskResult:
    """Parse one folder; a broken task.toml or a missing source_skill is a recorded result, not an exception."""
    try:
        doc = tomllib.loads((task_dir / TASK_TOML).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        return _invalid(task_id, f"task.toml unreadable: {e}")
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("source_skill"), str) or not meta["source_skill"]:
        return _invalid(task_id, "task.toml has no [metadata].source_skill string")
    task_table = doc.get("task")
    if not isinstance(task_table, dict):
        task_table = {}
    try:
        instruction = _read_text(task_dir / INSTRUCTION)
        rubric = _read_text(task_dir / RUBRIC)
    except OSError as e:
        return _invalid(task_id, f"task text unreadable: {e}")
    if not instruction.strip() and not rubric.strip():
        return _invalid(task_id, "task has neither instruction.md nor tests/rubric.md text")
    return ProbeTask(
        task_id=task_id,
        source_skill=meta["source_skill"],
        instruction=instruction,
        rubric=rubric,
        generator=str(meta.get("generator") or "unknown"),
        name=task_table.get("name") if isinstance(task_table.get("name"), str) else None,
        path=str(task_dir),
        metadata=meta,
    )


def load_tasks(root: Path) -> tuple[list[ProbeTask], list[ProbeTaskResult]]:
    """All usable tasks under root, plus an `invalid` result for every folder that could not be used."""
    def task_id(task_dir: Path) -> str:
        rel = task_dir.relative_to(root).as_posix()
        return rel if rel != "." else task_dir.name

    return read_tasks((d, task_id(d)) for d in find_task_dirs(root))


def read_tasks(found: Iterable[tuple[Path, str]]) -> tuple[list[ProbeTask], list[ProbeTaskResult]]:
    """Read each (task folder, task id): the usable tasks, and an `invalid` result for each one that is not."""
    tasks: list[ProbeTask] = []
    invalid: list[ProbeTaskResult] = []
    for task_dir, task_id in found:
        got = read_task(task_dir, task_id)
        if isinstance(got, ProbeTask):
            tasks.append(got)
        else:
            invalid.append(got)
    return tasks, invalid
