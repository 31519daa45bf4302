"""The run's `tasks/` folder: a mirror of the retained, gate-verified tasks, each a complete Harbor task folder.

Each folder is swapped in with one rename (never half-copied), unchanged folders are left alone (a warm re-run
copies nothing), and folders of tasks no longer retained are removed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from skill2env_dagster.atomic import atomic_replace_dir
from skill2env_dagster.gates.reuse import task_digest


def mirror_tasks(paths: list[str], dest: Path) -> list[str]:
    """Copy each published task folder to dest/<name>/ unless an identical copy is there; returns the names."""
    dest.mkdir(parents=True, exist_ok=True)
    keep = {Path(p).name for p in paths}
    for old in dest.iterdir():
        if old.is_dir() and old.name not in keep:
            shutil.rmtree(old)
    for p in paths:
        src, final = Path(p), dest / Path(p).name
        if final.is_dir() and task_digest(final) == task_digest(src):
            continue
        staging = dest / f".{src.name}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(src, staging, symlinks=True)
        atomic_replace_dir(staging, final)
    return sorted(keep)
