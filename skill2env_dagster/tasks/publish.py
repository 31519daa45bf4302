"""Where finished candidates go: retained ones under task_bundles/<skill>/<task>/, rejected ones under
rejected/<skill>/<task>/ with a rejection.json naming the reason codes and the gate evidence. Both moves are one
rename (atomic.atomic_replace_dir), so a crash never leaves a half-published task."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from skill2env_dagster.artifacts import REJECTED, STAGING, TASKS
from skill2env_dagster.atomic import atomic_replace_dir, atomic_write_text
from skill2env_dagster.models.gate import GateReport
from skill2env_dagster.store import ArtifactStore, check_key

REJECTION_FILE = "rejection.json"


def staging_dir(store: ArtifactStore, skill_id: str, task_name: str) -> Path:
    path = store.dir(STAGING, skill_id) / check_key(task_name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def published_dir(store: ArtifactStore, skill_id: str, task_name: str, retained: bool) -> Path:
    return store.dir(TASKS if retained else REJECTED, skill_id) / check_key(task_name)


def publish(store: ArtifactStore, staging: Path, skill_id: str, task_name: str, retained: bool,
            reasons: list[str], evidence: list[str], report: GateReport | None) -> Path:
    """Move the staged folder to its final area, clearing any stale copy from the other area."""
    final = published_dir(store, skill_id, task_name, retained)
    other = published_dir(store, skill_id, task_name, not retained)
    if not retained:
        payload = {"task": task_name, "reasons": reasons, "evidence": evidence,
                   "gate_report": report.model_dump(mode="json") if report else None}
        atomic_write_text(staging.parent / f"{task_name}.{REJECTION_FILE}", json.dumps(payload, indent=2) + "\n")
    atomic_replace_dir(staging, final)
    if not retained:
        (staging.parent / f"{task_name}.{REJECTION_FILE}").replace(final / REJECTION_FILE)
    shutil.rmtree(other, ignore_errors=True)
    return final
