"""Which version of a task is exported: the latest hardening round that counted (passed the gates and the harder
check) replaces the task first created, one task per origin, with its lineage."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from skill2env_dagster.models.export import HardeningLineage
from skill2env_dagster.models.hardening import HardeningSet, Revision
from skill2env_dagster.models.task import TaskBundle


def latest_hardened(sets: Iterable[HardeningSet]) -> dict[str, tuple[HardeningLineage, Revision]]:
    """Origin task name -> (lineage, the round's revision), for origins with a round that counted and whose folder
    is still published. A round without the harder check's replay (an older artifact) never counts."""
    out: dict[str, tuple[HardeningLineage, Revision]] = {}
    for hs in sets:
        for t in hs.tasks:
            kept = [r for r in t.rounds if r.revision.retained and r.previous_solution is not None
                    and (Path(r.revision.path) / "task.toml").is_file()]
            if kept:
                r = kept[-1]
                out[t.task_name] = (HardeningLineage(origin=t.task_name, round=r.round, reason=r.why,
                                                     revision=r.revision.summary, evidence=r.revision.evidence[:300]),
                                    r.revision)
    return out


def with_hardened(bundles: list[TaskBundle], sets: Iterable[HardeningSet]
                  ) -> tuple[list[TaskBundle], dict[str, HardeningLineage]]:
    """The bundles with each hardened origin replaced by its latest round; lineage by exported task name."""
    latest = latest_hardened(sets)
    out: list[TaskBundle] = []
    lineage: dict[str, HardeningLineage] = {}
    for b in bundles:
        if b.task_name in latest:
            line, rev = latest[b.task_name]
            b = b.model_copy(update={"task_name": rev.task_name, "path": rev.path, "freeze_hash": rev.freeze_hash,
                                     "metrics": rev.metrics, "instruction_preview": ""})
            lineage[b.task_name] = line
        out.append(b)
    return out, lineage
