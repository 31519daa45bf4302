"""The Harbor dataset folder: retained, non-contaminated task folders side by side, plus manifest.json. A task
hardened by `task_hardening` is exported as its latest round that counted, in place of its origin."""

from __future__ import annotations

import shutil
from pathlib import Path

from skill2env_dagster.models.export import ExcludedTask, ExportManifest, HardeningLineage, ManifestEntry
from skill2env_dagster.models.task import TaskBundle
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import write_model

MANIFEST = "manifest.json"


def _entry(b: TaskBundle, generator: str, lineage: HardeningLineage | None) -> ManifestEntry:
    return ManifestEntry(task_name=b.task_name, skill_id=b.skill_id, workflow=b.workflow, variant=b.variant,
                         generator=generator, axes=b.axes, freeze_hash=b.freeze_hash, metrics=b.metrics,
                         source_path=b.path, hardening=lineage)


def _exclusion(b: TaskBundle, flagged: set[str], taken: set[str]) -> ExcludedTask | None:
    if b.task_name in flagged:
        return ExcludedTask(task_name=b.task_name, skill_id=b.skill_id, reason=ReasonCode.CONTAMINATED,
                            detail="overlaps a configured benchmark (see decontamination report)")
    if b.task_name in taken:
        return ExcludedTask(task_name=b.task_name, skill_id=b.skill_id, reason=ReasonCode.INTERNAL_ERROR,
                            detail="task name already exported for another skill")
    if not (Path(b.path) / "task.toml").is_file():
        return ExcludedTask(task_name=b.task_name, skill_id=b.skill_id, reason=ReasonCode.INTERNAL_ERROR,
                            detail=f"published folder {b.path} is missing or has no task.toml")
    return None


def write_dataset(retained: list[TaskBundle], generators: dict[str, str], flagged: set[str], dest: Path,
                  decontam_checked: bool, benchmark_paths: list[str],
                  lineage: dict[str, HardeningLineage] | None = None) -> ExportManifest:
    """Copy every exportable task into dest/<task_name>/ (dest is the staging folder of the whole export);
    `lineage` names the hardened ones (by exported task name)."""
    dest.mkdir(parents=True, exist_ok=True)
    entries: list[ManifestEntry] = []
    excluded: list[ExcludedTask] = []
    for b in sorted(retained, key=lambda b: (b.skill_id, b.task_name)):
        why = _exclusion(b, flagged, {e.task_name for e in entries})
        if why is not None:
            excluded.append(why)
            continue
        shutil.copytree(b.path, dest / b.task_name, symlinks=True)
        entries.append(_entry(b, generators.get(b.skill_id, "unknown"), (lineage or {}).get(b.task_name)))
    manifest = ExportManifest(n_tasks=len(entries), tasks=entries, excluded=excluded,
                              decontamination_checked=decontam_checked, benchmark_paths=benchmark_paths)
    write_model(dest / MANIFEST, manifest)
    return manifest
