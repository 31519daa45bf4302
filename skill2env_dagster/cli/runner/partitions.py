"""One skill partition through the real code location: ask Dagster which of its assets are stale or missing, run
exactly those in one run, ask again, until nothing is left.

Why rounds: Dagster does not propagate staleness down a chain of partitioned assets. A refreshed snapshot makes
`workflow_plans` stale only once it has a new data version, and only if it has one — an edit that changes no
plan stops there, with nothing downstream re-run. So each round materialises what is stale *now* (at most one
round per stage), and an unchanged partition costs one status query and no run at all.

Why not a private cache: staleness is Dagster's own (code versions from `versions.py`, data versions from the
assets), the same answer the UI and `skill2env ops stale` give, so a run and a backfill from the UI agree.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView  # no public stale-status API in 1.13
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.definitions.temporal_context import TemporalContext
from dagster._core.events import DagsterEventType
from dagster._time import get_current_datetime

from skill2env_dagster.artifacts import PIPELINE_JOB, SNAPSHOT, TASKS
from skill2env_dagster.assets.freshness import job_chain
from skill2env_dagster.assets.skillhub import ELIGIBLE_METADATA
from skill2env_dagster.assets.tasks import CREATION_SETTINGS_METADATA
from skill2env_dagster.cli.runner.interrupts import NEVER, SigintLatch
from skill2env_dagster.cli.runner.outcome import PartitionOutcome, Plan
from skill2env_dagster.export.funnel import FailedPartition
from skill2env_dagster.tasks.pipeline import CreationSettings

INTERRUPTED = "DagsterExecutionInterruptedError"
RUN_TAG = "skill2env/run"  # tag on every run a `skill2env run` launches: its session id


def pipeline_chain(defs: dg.Definitions) -> list[dg.AssetKey]:
    """The per-skill assets of the pipeline job, upstream first."""
    return job_chain(defs.resolve_job_def(PIPELINE_JOB), defs.resolve_asset_graph())


class PartitionRunner:
    """Runs partitions of the pipeline job against one instance; one per process."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance, settings: CreationSettings,
                 tags: Mapping[str, str], latch: SigintLatch = NEVER) -> None:
        self.instance, self.settings, self.tags, self.latch = instance, settings, dict(tags), latch
        self.job = defs.resolve_job_def(PIPELINE_JOB)
        self.graph = defs.resolve_asset_graph()
        self.chain = pipeline_chain(defs)

    def _resolver(self) -> CachingStaleStatusResolver:
        return stale_resolver(self.instance, self.graph)

    def _settings_changed(self, key: str) -> bool:
        """Run config is not part of Dagster's staleness: a different --max-variants must still re-create tasks."""
        found = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(TASKS.name), asset_partitions=[key]), limit=1).records
        mat = found[0].asset_materialization if found else None
        value = mat.metadata.get(CREATION_SETTINGS_METADATA) if mat else None
        if value is None:
            return False  # skipped (not eligible) or made before settings were recorded: nothing to compare
        return value.value != self.settings.model_dump(mode="json")

    def needed(self, key: str, eligible: bool) -> list[dg.AssetKey]:
        """Stale assets, plus missing ones for an eligible skill (an ineligible one only needs its snapshot)."""
        resolver, out = self._resolver(), []
        for asset in self.chain:
            if self._needs(asset.path[-1], resolver.get_status(asset, key), key, eligible):
                out.append(asset)
        return out

    def _needs(self, name: str, status: StaleStatus, key: str, eligible: bool) -> bool:
        if status is StaleStatus.STALE:
            return True
        if status is StaleStatus.MISSING:
            return eligible or name == SNAPSHOT.name
        return eligible and name == TASKS.name and self._settings_changed(key)

    def run_config(self, selection: list[dg.AssetKey]) -> dict[str, Any]:
        if dg.AssetKey(TASKS.name) not in selection:
            return {}
        return {"ops": {TASKS.name: {"config": self.settings.model_dump(mode="json")}}}

    def process(self, key: str, eligible: bool, plan: Plan | None = None) -> PartitionOutcome:
        """Rounds of (stale? → run those) for one partition; a failed run ends it with the failure recorded. A
        plan from the freshness scan stands in for the first question (and, when nothing else can have turned
        stale, for the last). A Ctrl-C ends it as interrupted, even one Dagster let the run finish after.

        `eligible` is the verdict the partition was scheduled by; the snapshot's own verdict (the second opinion may
        clear a skill or screen it out) replaces it as soon as a run makes the snapshot, so a cleared skill is
        planned, and a newly screened-out one has its downstream skipped, in this same call."""
        start = time.monotonic()
        out = PartitionOutcome(key=key, status="up_to_date")
        for _ in range(len(self.chain) + 1):
            if self.latch.fired():
                out.status = "interrupted"
                break
            selection = self.needed(key, eligible) if plan is None else [dg.AssetKey(n) for n in plan.selection]
            if not selection:
                break
            whole = selection == self.chain
            result = self.job.execute_in_process(
                partition_key=key, instance=self.instance, run_config=self.run_config(selection),
                asset_selection=None if whole else selection, tags={**self.tags, "skill2env/skill": key},
                raise_on_error=False)
            out.runs += 1
            _account(out, result)
            if result.success and self.latch.fired():
                out.status = "interrupted"
                break
            if not result.success:
                out.failure = failure_of(key, result)
                out.status = "interrupted" if out.failure.reason == INTERRUPTED else "failed"
                break
            out.status = "ran"
            verdict = snapshot_verdict(result)
            if verdict is not None:
                out.eligible = verdict
            if verdict is not None and verdict != eligible:  # cleared or screened out at snapshot time
                eligible, out.verdict_changed, plan = verdict, True, None
                continue
            if self._settled(selection, plan):
                break
            plan = None
        out.seconds = round(time.monotonic() - start, 3)
        return out

    def _settled(self, selection: list[dg.AssetKey], plan: Plan | None) -> bool:
        """Nothing can be stale after a run in which every asset below the first one run was itself run after
        its parents, or is missing and not needed (the plan knows which)."""
        quiet = {dg.AssetKey(n) for n in plan.quiet} if plan is not None else set()
        below = self.chain[self.chain.index(selection[0]):]
        return all(a in selection or a in quiet for a in below)


def stale_resolver(instance: dg.DagsterInstance, graph: Any) -> CachingStaleStatusResolver:
    """Dagster's staleness answers as of now; it caches, so make a new one after runs have changed the events."""
    view = AssetGraphView(temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
                          instance=instance, asset_graph=graph)
    return CachingStaleStatusResolver(instance, graph, view)


def interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """The run failed because Ctrl-C reached it (Dagster turns the signal into an error inside the step)."""
    return not result.success and failure_of("", result).reason == INTERRUPTED


def snapshot_verdict(result: dg.ExecuteInProcessResult) -> bool | None:
    """Eligible or not, as the snapshot this run made says (None when the run did not make one)."""
    for event in result.all_events:
        mat = event.step_materialization_data.materialization \
            if event.event_type is DagsterEventType.ASSET_MATERIALIZATION else None
        if mat is not None and mat.asset_key.path[-1] == SNAPSHOT.name:
            value = mat.metadata.get(ELIGIBLE_METADATA)
            return bool(value.value) if value is not None else None
    return None


def _account(out: PartitionOutcome, result: dg.ExecuteInProcessResult) -> None:
    for event in result.all_events:
        if event.event_type is DagsterEventType.ASSET_MATERIALIZATION and event.asset_key is not None:
            out.materialized.append(event.asset_key.path[-1])
        elif event.event_type is DagsterEventType.STEP_SUCCESS and event.step_key:
            seconds = event.step_success_data.duration_ms / 1000
            out.seconds_by_stage[event.step_key] = round(out.seconds_by_stage.get(event.step_key, 0.0) + seconds, 3)


def failure_of(key: str, result: dg.ExecuteInProcessResult) -> FailedPartition:
    """The first failed step with its reason code (our Failures carry one as metadata), else the run's error."""
    for event in result.all_events:
        if event.event_type is DagsterEventType.STEP_FAILURE:
            data = event.step_failure_data
            meta = data.user_failure_data.metadata if data.user_failure_data else {}
            reason = meta.get("reason")
            error = data.error
            cause = error.cause if error and error.cls_name == "DagsterExecutionStepExecutionError" else None
            shown = cause or error
            return FailedPartition(
                partition=key, stage=event.step_key or "run",
                reason=str(reason.value) if reason is not None else ((shown.cls_name if shown else None) or "unknown"),
                message=(shown.message.strip().splitlines() or [""])[0][:500] if shown else "")
    failure = next((e for e in result.all_events if e.event_type is DagsterEventType.RUN_FAILURE), None)
    message = failure.message if failure and failure.message else "run failed"
    return FailedPartition(partition=key, stage="run", reason="run_failed", message=message[:500])
