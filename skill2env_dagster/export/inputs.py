"""Everything the export reads, gathered once from the artifact store into plain models."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from skill2env_dagster.artifacts import AXES, CORPUS_KEY, FAILURES, GATES, HARDENING, PLANS, PROBE, SNAPSHOT, TASKS
from skill2env_dagster.export.hardened import with_hardened
from skill2env_dagster.models.axes import AxisSampleSet
from skill2env_dagster.models.export import DecontamReport, HardeningLineage
from skill2env_dagster.models.failure import SkillFailures, StageFailure
from skill2env_dagster.models.hardening import HardeningSet
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.probe import ProbeReport
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.models.task import TaskBundle, TaskBundleSet, TaskGateReports
from skill2env_dagster.store import ArtifactStore

log = logging.getLogger(__name__)
STAGE_ORDER = (SNAPSHOT.name, PLANS.name, AXES.name, TASKS.name, GATES.name)


@dataclass
class CorpusInputs:
    skills: list[SkillRecord] = field(default_factory=list)
    plans: list[WorkflowPlanSet] = field(default_factory=list)
    axes: list[AxisSampleSet] = field(default_factory=list)
    bundles: list[TaskBundleSet] = field(default_factory=list)
    gates: list[TaskGateReports] = field(default_factory=list)
    probe: ProbeReport | None = None
    decontam: DecontamReport | None = None
    failures: list[SkillFailures] = field(default_factory=list)
    hardening: list[HardeningSet] = field(default_factory=list)

    def retained(self) -> list[TaskBundle]:
        """Every retained candidate of every skill, in store order."""
        return [b for s in self.bundles for b in s.retained()]

    def to_export(self) -> tuple[list[TaskBundle], dict[str, HardeningLineage]]:
        """The retained tasks, a hardened origin replaced by its latest round that counted (with its lineage)."""
        return with_hardened(self.retained(), self.hardening)

    def generator_of(self) -> dict[str, str]:
        return {s.skill_id: s.generator for s in self.bundles}

    def stage_failures(self) -> list[tuple[str, StageFailure]]:
        """(skill id, failure) for every stage whose last run failed, earliest stage first per skill."""
        order = {name: i for i, name in enumerate(STAGE_ORDER)}
        return [(f.skill_id, s) for f in self.failures
                for s in sorted(f.stages.values(), key=lambda s: order.get(s.stage, len(order)))]

    def first_failure(self) -> dict[str, StageFailure]:
        """Skill id -> its earliest failed stage (the one that stopped it)."""
        out: dict[str, StageFailure] = {}
        for skill_id, failure in self.stage_failures():
            out.setdefault(skill_id, failure)
        return out


def load_inputs(store: ArtifactStore) -> CorpusInputs:
    """Read every materialised artifact; a missing stage is an empty list, a corrupt file a StoreError."""
    probe = store.load(PROBE, CORPUS_KEY) if store.exists(PROBE, CORPUS_KEY) else None
    inputs = CorpusInputs(
        skills=list(store.load_all(SNAPSHOT).values()),
        plans=list(store.load_all(PLANS).values()),
        axes=list(store.load_all(AXES).values()),
        bundles=list(store.load_all(TASKS).values()),
        gates=list(store.load_all(GATES).values()),
        probe=probe,
        failures=list(store.load_all(FAILURES).values()),
        hardening=list(store.load_all(HARDENING).values()),
    )
    log.info("export inputs skills=%d plans=%d bundles=%d gates=%d probe=%s", len(inputs.skills), len(inputs.plans),
             len(inputs.bundles), len(inputs.gates), probe is not None)
    return inputs


def instruction_of(bundle: TaskBundle) -> str:
    """The published instruction.md, falling back to the preview the bundle record keeps."""
    path = Path(bundle.path) / "instruction.md"
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return bundle.instruction_preview
