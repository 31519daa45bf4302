"""Freeze hash: one digest over what an agent sees and what grades it (environment/, instruction.md, tests/).

The task creator records it in task.toml `[metadata] freeze_hash` once the task is final; any later edit of
the world or the grading (by a repair loop, a person, a bad merge) then shows up as `grading_modified`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from skill2env_dagster.models.task_dir import TaskDir


def _entries(task: TaskDir) -> list[tuple[str, str, bytes]]:
    """(relative path, kind, content) for every covered entry; symlinks hash their target text, never follow."""
    out: list[tuple[str, str, bytes]] = []
    for top in task.frozen_paths():
        paths = [top] if not top.is_dir() or top.is_symlink() else [top, *sorted(top.rglob("*"))]
        for p in paths:
            rel = p.relative_to(task.root).as_posix()
            if p.is_symlink():
                out.append((rel, "link", os.readlink(p).encode()))
            elif p.is_file():
                mode = "x" if os.access(p, os.X_OK) else "f"
                out.append((rel, mode, p.read_bytes()))
            elif p.is_dir():
                out.append((rel, "d", b""))
            else:
                out.append((rel, "missing", b""))
    return out


def compute_freeze_hash(task_dir: Path | str) -> str:
    """`sha256:<hex>` over sorted (path, kind, content) of environment/, instruction.md and tests/."""
    h = hashlib.sha256()
    for rel, kind, data in _entries(TaskDir(Path(task_dir))):
        h.update(f"{rel}\0{kind}\0{len(data)}\0".encode())
        h.update(data)
    return "sha256:" + h.hexdigest()
