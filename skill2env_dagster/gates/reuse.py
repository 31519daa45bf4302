"""Gate once: a task's creation-time gate report stands for its published folder while nothing it was computed
from has changed — the folder's content (every file, mode and link) and the gate code and settings.

The creator gates every candidate (that decides retention and drives the solution repairs); `gate_reports` then
answers for the published folder. Gating an identical folder with identical code again could only repeat the
same verdict at the cost of a build and three containers, so it reuses the report and says so. Any edit to the
folder (a person, a bad merge, a later repair) or to the gates makes it gate again.
"""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.gates.images import environment_digest
from skill2env_dagster.models.gate import GateReport, GateVerdict
from skill2env_dagster.models.task import CreationGate


def task_digest(task_dir: Path | str) -> str:
    """The content digest of a whole task folder (the same walk that keys the image cache, over every file)."""
    return environment_digest(Path(task_dir))


def record_creation_gate(report: GateReport, task_dir: Path | str, gate_version: str) -> CreationGate:
    """What a candidate keeps from its final creation-time gate (call it on the folder exactly as gated)."""
    return CreationGate(content_digest=task_digest(task_dir), gate_version=gate_version, report=report)


def reusable_report(creation: CreationGate | None, task_dir: Path | str, gate_version: str) -> GateReport | None:
    """The creation-time report when it still stands for `task_dir`: it retained the task, the gate version is
    the current one (an empty version is never trusted) and the folder's content is unchanged; else None."""
    if creation is None or not gate_version or creation.gate_version != gate_version:
        return None
    if creation.report.verdict is not GateVerdict.RETAINED or not Path(task_dir).is_dir():
        return None
    return creation.report if task_digest(task_dir) == creation.content_digest else None
