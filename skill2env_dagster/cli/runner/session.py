"""One `skill2env run`: crawl, then every skill partition that has stale or missing work, then the analytics,
then the funnel and the exported tasks — all as Dagster runs of the real code location in the persistent
instance under `--out`, so `dagster dev` on that home shows them afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skill2env_dagster.artifacts import (
    ANALYTICS_JOB,
    CORPUS_KEY,
    CRAWL,
    CRAWL_JOB,
    EXPORT,
    PROBE,
    ROLLOUTS_JOB,
    SKILLS_PARTITION,
    SNAPSHOT,
    SNAPSHOT_JOB,
)
from skill2env_dagster.assets.common import BATCH_ENV, EVENT_BATCH
from skill2env_dagster.assets.freshness import FreshnessScan
from skill2env_dagster.assets.tasks import CREATION_SETTINGS_METADATA
from skill2env_dagster.cli.runner.home import REPO, RunHome, RunnerError
from skill2env_dagster.cli.runner.interrupts import SigintLatch
from skill2env_dagster.cli.runner.location import open_instance, run_defs
from skill2env_dagster.cli.runner.options import RunOptions
from skill2env_dagster.cli.runner.outcome import PartitionOutcome, Work
from skill2env_dagster.cli.runner.partitions import (
    RUN_TAG,
    PartitionRunner,
    failure_of,
    interrupted,
    pipeline_chain,
    stale_resolver,
)
from skill2env_dagster.cli.runner.pool import WorkerInit, WorkerPool
from skill2env_dagster.cli.runner.progress import ProgressView
from skill2env_dagster.cli.runner.sources import combine_sources, write_sources
from skill2env_dagster.cli.runner.tasks_dir import mirror_tasks
from skill2env_dagster.cli.runner.warm import warm_analytics_imports
from skill2env_dagster.export.funnel import (
    FailedPartition,
    Funnel,
    RolloutSummary,
    SkillCounts,
    WorkDone,
    add_model_use,
    add_rollouts,
    crawl_funnel,
    final_records,
    retained_paths,
    skill_counts,
    skill_verdict,
)
from skill2env_dagster.export.run import CURRENT_EXPORT
from skill2env_dagster.llm.config import from_env as llm_config
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.skillhub.batches import contiguous_batches
from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig
from skill2env_dagster.skillhub.snapshot import latest_snapshot_dir, load_manifest, load_record
from skill2env_dagster.store import ArtifactStore

log = logging.getLogger(__name__)
LAUNCHED_BY = {"skill2env/launched_by": "skill2env-run"}  # on every run a `skill2env run` launches


def _infra(skip_docker_up: bool) -> None:
    """The engine, the local registry and the digest-pinned base images the gates build FROM (idempotent)."""
    from skill2env_dagster.gates.base_images import ensure_base_images

    if not skip_docker_up:
        done = subprocess.run(["bash", str(REPO / "scripts" / "docker-up.sh")], capture_output=True, text=True)
        if done.returncode != 0:
            raise RunnerError(f"scripts/docker-up.sh failed:\n{done.stderr[-2000:]}")
    ensure_base_images()


def _current_skills(store: ArtifactStore) -> dict[str, SkillRecord]:
    snap = latest_snapshot_dir(store.dir(CRAWL))
    return {p.stem: load_record(snap, p.stem) for p in sorted((snap / "records").glob("*.json"))}


def _unavailable_sources(store: ArtifactStore) -> dict[str, str]:
    manifest = load_manifest(latest_snapshot_dir(store.dir(CRAWL)))
    return {str(s.get("name")): str(s["error"]) for s in manifest.sources if s.get("error")}


@dataclass
class Session:
    """State of one run; `execute()` does it all and returns the funnel."""

    options: RunOptions
    view: ProgressView
    log_file: Path
    verbose: bool = False
    home: RunHome = field(init=False)
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    generator: str = ""
    rollout_failures: list[FailedPartition] = field(default_factory=list)
    latch: SigintLatch = field(default_factory=SigintLatch)
    batched: set[str] = field(default_factory=set)  # partitions whose snapshot a batch run made in this session
    batch_runs: int = 0

    def __post_init__(self) -> None:
        self.home = RunHome(self.options.out.resolve())

    @property
    def tags(self) -> dict[str, str]:
        return {**LAUNCHED_BY, RUN_TAG: self.session_id}

    def _sources(self) -> SourcesConfig:
        """The sources to crawl; unless their settings name one, screening results are cached in the run folder
        (a re-run over an unchanged hub then re-reads the skills but screens none of them again)."""
        o = self.options
        config = o.sources if o.sources is not None else combine_sources(
            o.items, o.sources_files, CrawlSettings(cache_dir=str(self.home.git_cache)))
        if config.settings.screen_cache_dir is None:
            settings = config.settings.model_copy(update={"screen_cache_dir": str(self.home.screen_cache)})
            config = config.model_copy(update={"settings": settings})
        return config

    def execute(self) -> Funnel:
        start = time.monotonic()
        home = self.home
        with home.locked(), self.latch:
            home.prepare()
            write_sources(self._sources(), home.sources_file)
            os.environ.update(home.env())
            os.environ.setdefault(BATCH_ENV, str(EVENT_BATCH))  # a crawl's observations: one write per batch
            self.view.say(f"log: {self.log_file}")
            self.generator = llm_config().describe()  # validated: a bad S2E_LLM_* value stops here, named
            self.view.say(f"generator: {self.generator}")
            if not self.options.snapshots_only:  # snapshots need no engine and no base image
                _infra(self.options.skip_docker_up)

            defs = run_defs(home)
            instance = open_instance()
            recover(instance, home)
            pool = self._pool()
            try:
                if pool is not None:
                    pool.start()  # forked now: the code location is imported and no thread runs yet
                home.mark_phase("crawl")
                self._crawl(defs, instance)
                store = ArtifactStore(home.artifacts)
                skills = _current_skills(store)
                scope = [k for k, _ in self._partitions(instance, skills)]
                home.mark_phase("snapshots")
                self._snapshot_batches(defs, instance, scope)
                # scheduled by the final verdicts: the snapshots just made (second opinion included) decide
                work = self._partitions(instance, final_records(store, skills))
                log.info("partitions in scope: %d (%d eligible by their snapshots; a snapshot made in the "
                         "partition phase may still change it)", len(work), sum(e for _, e in work))
                home.mark_phase("partitions")
                outcomes = self._run_all(defs, instance, store, work, pool)
            finally:
                if pool is not None:
                    pool.close()
            log.info("partitions done: %s; verdict changed at snapshot time: %d cleared, %d screened out",
                     {s: sum(o.status == s for o in outcomes) for s in ("ran", "up_to_date", "failed", "interrupted")},
                     sum(o.verdict_changed and o.eligible is True for o in outcomes),
                     sum(o.verdict_changed and o.eligible is False for o in outcomes))
            done = summarise(outcomes, self.options.workers)
            done.runs += self.batch_runs
            keys = [k for k, _ in work]
            home.mark_phase("rollouts")
            rollouts = self._rollouts(defs, instance, store, keys)
            changed = any(o.status != "up_to_date" for o in outcomes) or rollouts.ran > 0
            home.mark_phase("analytics")
            done.analytics = "up_to_date" if self.options.snapshots_only else self._analytics(defs, instance, changed)
            done.seconds = round(time.monotonic() - start, 2)
            home.mark_phase("export")
            funnel = self._funnel(store, skills, keys, outcomes, done)
            funnel.rollouts = add_rollouts(rollouts, store, keys) if rollouts.reason == "" else rollouts
            self._check_interrupt()
            home.mark_phase("done")
            return funnel

    def _check_interrupt(self, result: Any = None) -> None:
        """Stop with KeyboardInterrupt when a run was interrupted or a Ctrl-C was caught and swallowed anywhere
        (Dagster drops one that lands after a run's last step)."""
        if (result is not None and interrupted(result)) or self.latch.fired():
            raise KeyboardInterrupt

    def _pool(self) -> WorkerPool | None:
        if self.options.workers < 2:
            return None  # one partition at a time: in this process, no worker to start
        init = WorkerInit(out=str(self.home.out), settings=self.options.settings.model_dump(mode="json"),
                          tags=self.tags, log_file=str(self.log_file), verbose=self.verbose)
        return WorkerPool(init, self.options.workers)

    def _run_all(self, defs: Any, instance: Any, store: ArtifactStore, work: list[tuple[str, bool]],
                 pool: WorkerPool | None) -> list[PartitionOutcome]:
        """Every partition's outcome: the provably fresh ones at once, the others from the workers (or in this
        process); on Ctrl-C (or a crash) stop the workers, clean up, and re-raise."""
        scan = FreshnessScan(instance, defs.resolve_asset_graph(), pipeline_chain(defs),
                             self.options.settings.model_dump(mode="json"), CREATION_SETTINGS_METADATA)
        plans = {k: scan.plan(k, eligible) for k, eligible in work}
        fresh = [k for k, _ in work if (p := plans[k]) is not None and not p.selection]
        skip = set(fresh)
        todo: list[Work] = [(k, e, plans[k]) for k, e in work if k not in skip]
        log.info("provably fresh: %d of %d partitions; planned from provenance: %d; to ask Dagster about: %d",
                 len(fresh), len(work), sum(p is not None for _, _, p in todo), sum(p is None for _, _, p in todo))
        if todo:
            warm_analytics_imports()
        try:
            rest = pool.outcomes(todo) if pool is not None else self._in_process(defs, instance, todo)
            return list(self._progress(store, len(work), _fresh_then(fresh, rest, self.batched)))
        except BaseException:
            self.view.say("stopping: letting the runs in flight clean up (gate containers, pool slots)…")
            if pool is not None:
                pool.interrupt()
            recover(instance, self.home, self.session_id)
            raise

    def _snapshot_batches(self, defs: Any, instance: Any, keys: list[str]) -> None:
        """Every snapshot in scope that is missing or not provably fresh, in runs of up to SNAPSHOT_BATCH
        consecutive partitions (the asset records each partition's own provenance): a screened-out, duplicate or
        invalid skill needs nothing else, so it costs a share of one run instead of a run of its own. A batch that
        fails leaves its partitions to the per-partition phase, which then says which one failed and why."""
        import dagster as dg
        from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

        from skill2env_dagster.assets.skillhub import SNAPSHOT_BATCH

        snapshot = dg.AssetKey(SNAPSHOT.name)
        scan = FreshnessScan(instance, defs.resolve_asset_graph(), [snapshot], None, CREATION_SETTINGS_METADATA)
        needed = {k for k in keys if scan.needs(snapshot, k)}
        batches = contiguous_batches(instance.get_dynamic_partitions(SKILLS_PARTITION), needed, SNAPSHOT_BATCH)
        if batches:
            self.view.say(f"snapshots: {len(needed)} skills in {len(batches)} runs…")
        job = defs.resolve_job_def(SNAPSHOT_JOB)
        for batch in batches:
            result = job.execute_in_process(instance=instance, raise_on_error=False, tags={
                **self.tags, ASSET_PARTITION_RANGE_START_TAG: batch.first, ASSET_PARTITION_RANGE_END_TAG: batch.last})
            self.batch_runs += 1
            self._check_interrupt(result)
            if result.success:
                self.batched.update(batch.keys)
            else:
                log.warning("snapshot batch %s..%s failed; its partitions run one by one", batch.first, batch.last)
        log.info("snapshot batches: %d partitions in %d runs", len(needed), len(batches))

    def _crawl(self, defs: Any, instance: Any) -> None:
        self.view.say("crawling the sources…")
        log.info("crawl starts")
        result = defs.resolve_job_def(CRAWL_JOB).execute_in_process(instance=instance, tags=self.tags,
                                                                    raise_on_error=False)
        self._check_interrupt(result)
        if not result.success:
            raise RunnerError(f"the crawl failed; see the log file {self.log_file}")

    def _partitions(self, instance: Any, skills: dict[str, SkillRecord]) -> list[tuple[str, bool]]:
        """(key, eligible) in scope, eligible skills first (the long ones: better packing and a truer ETA).
        `skills` are the final records known now; a snapshot that runs decides anew (PartitionRunner.process)."""
        keys = set(instance.get_dynamic_partitions(SKILLS_PARTITION))
        if self.options.only is not None:
            unknown = sorted(set(self.options.only) - keys)
            if unknown:
                raise RunnerError(f"--only names skills the crawl did not find: {', '.join(unknown)}")
            keys &= set(self.options.only)
        eligible = {k for k in keys if k in skills and skills[k].is_eligible and not self.options.snapshots_only}
        return sorted(((k, k in eligible) for k in keys), key=lambda kv: (not kv[1], kv[0]))

    def _in_process(self, defs: Any, instance: Any, work: list[Work]) -> Generator[PartitionOutcome, None, None]:
        runner = PartitionRunner(defs, instance, self.options.settings, self.tags, self.latch)
        for key, eligible, plan in work:
            yield runner.process(key, eligible, plan)

    def _progress(self, store: ArtifactStore, total: int,
                  source: Generator[PartitionOutcome, None, None]) -> Iterator[PartitionOutcome]:
        self.view.start(total)
        try:
            with contextlib.closing(source):
                for outcome in source:
                    record = store.load(SNAPSHOT, outcome.key) if store.exists(SNAPSHOT, outcome.key) else None
                    self.view.done(outcome, skill_counts(store, outcome.key), skill_verdict(record))
                    if outcome.status == "interrupted":
                        raise KeyboardInterrupt
                    yield outcome
        finally:
            self.view.stop()

    def _rollouts(self, defs: Any, instance: Any, store: ArtifactStore, keys: list[str]) -> RolloutSummary:
        """The skill_rollouts job on every skill with retained tasks whose rollout assets are stale or missing.

        Only on request, and only with a solver model: without one the job would record `no_model` and cost
        nothing, so the run says so instead of launching empty runs. One partition at a time in this process:
        the work is model-bound (k episodes per task) and the `llm`/`docker` pools bound it anyway."""
        from skill2env_dagster.resources.rollouts import env_solver_fingerprint
        from skill2env_dagster.versions import is_online

        if not self.options.rollouts:
            return RolloutSummary(status="skipped", reason="not_requested")
        if not is_online(env_solver_fingerprint()):
            return RolloutSummary(status="skipped", reason="no_model")
        job = defs.resolve_job_def(ROLLOUTS_JOB)
        with_tasks = [k for k in keys if retained_paths(store, [k])]
        resolver = stale_resolver(instance, defs.resolve_asset_graph())  # all asked before any rollout runs
        todo = [k for k in with_tasks if partition_stale(resolver, job, k)]
        summary = RolloutSummary(status="up_to_date", reason="", up_to_date=len(with_tasks) - len(todo))
        if todo:
            self.view.say(f"solver rollouts, judge and hardening on {len(todo)} skills…")
        for key in todo:
            result = job.execute_in_process(partition_key=key, instance=instance, tags=self.tags,
                                            raise_on_error=False)
            self._check_interrupt(result)
            if result.success:
                summary.ran += 1
            else:
                summary.failed += 1
                self.rollout_failures.append(failure_of(key, result))
        if todo:
            summary.status = "failed" if summary.failed else "ran"
        return summary

    def _analytics(self, defs: Any, instance: Any, changed: bool) -> Literal["ran", "up_to_date", "failed"]:
        """Probe, export and stats over the whole corpus, when a partition changed or they are stale/missing."""
        job = defs.resolve_job_def(ANALYTICS_JOB)
        if not changed and not analytics_stale(defs, instance, job):
            log.info("analytics up to date")
            return "up_to_date"
        self.view.say("retrieval probe, export and statistics…")
        result = job.execute_in_process(instance=instance, tags=self.tags, raise_on_error=False)
        self._check_interrupt(result)
        return "ran" if result.success else "failed"

    def _funnel(self, store: ArtifactStore, skills: dict[str, SkillRecord], keys: list[str],
                outcomes: list[PartitionOutcome], done: WorkDone) -> Funnel:
        counts = sum((skill_counts(store, k) for k in skills), SkillCounts())
        funnel = crawl_funnel(final_records(store, skills).values(), counts)
        funnel.sources_unavailable = _unavailable_sources(store)
        funnel.failed_partitions = [o.failure for o in outcomes if o.failure is not None] + self.rollout_failures
        funnel.generator = self.generator
        add_model_use(funnel, store, done.analytics in ("ran", "up_to_date"))
        funnel.work = done
        funnel.retrieval_probe = probe_summary(store)
        funnel.export_dir = str(store.dir(EXPORT) / CURRENT_EXPORT)
        funnel.exported = mirror_tasks(retained_paths(store, keys), self.home.tasks)
        funnel.tasks_dir = str(self.home.tasks)
        funnel.dagster_home = str(self.home.dagster_home)
        funnel.log_file = str(self.log_file)
        return funnel


def _fresh_then(fresh: list[str], rest: Generator[PartitionOutcome, None, None], batched: set[str]
                ) -> Generator[PartitionOutcome, None, None]:
    """Fresh partitions first, then the others: a partition whose snapshot a batch run just made ran (in that
    batch) even when nothing else was left to do - also one the scan could not call fresh (a snapshot whose second
    opinion failed is never provably fresh) that Dagster then found up to date."""
    with contextlib.closing(rest):
        for key in fresh:
            yield _batched(PartitionOutcome(key=key, status="up_to_date"), batched)
        for outcome in rest:
            yield _batched(outcome, batched)


def _batched(outcome: PartitionOutcome, batched: set[str]) -> PartitionOutcome:
    if outcome.status != "up_to_date" or outcome.key not in batched:
        return outcome
    return outcome.model_copy(update={"status": "ran", "materialized": [SNAPSHOT.name, *outcome.materialized]})


def summarise(outcomes: list[PartitionOutcome], workers: int) -> WorkDone:
    by_stage: dict[str, float] = {}
    for o in outcomes:
        for stage, s in o.seconds_by_stage.items():
            by_stage[stage] = round(by_stage.get(stage, 0.0) + s, 3)
    return WorkDone(partitions=len(outcomes), up_to_date=sum(o.status == "up_to_date" for o in outcomes),
                    ran=sum(o.status == "ran" for o in outcomes),
                    ran_partitions=sorted(o.key for o in outcomes if o.status == "ran"),
                    failed=sum(o.status in ("failed", "interrupted") for o in outcomes),
                    runs=sum(o.runs for o in outcomes), assets_materialized=sum(len(o.materialized) for o in outcomes),
                    workers=workers, seconds_by_stage=dict(sorted(by_stage.items())))


def partition_stale(resolver: Any, job: Any, partition: str) -> bool:
    """Any of the job's assets stale or missing for this partition (Dagster's answer)."""
    from dagster._core.definitions.data_version import StaleStatus

    return any(resolver.get_status(k, partition) is not StaleStatus.FRESH
               for k in job.asset_layer.executable_asset_keys)


def analytics_stale(defs: Any, instance: Any, job: Any) -> bool:
    """An analytics asset is missing, on an old code version, or older than a parent's latest materialization.

    Two indexed queries per asset instead of Dagster's stale-status walk, which fetches every upstream partition's
    history (hundreds of queries: most of a warm re-run). Conservative: a parent re-materialized with unchanged
    data still re-runs the analytics, which only costs the probe and the export."""
    graph = defs.resolve_asset_graph()
    latest: dict[Any, Any] = {}

    def newest(key: Any) -> Any:
        if key not in latest:
            records = instance.fetch_materializations(key, limit=1).records
            latest[key] = records[0] if records else None
        return latest[key]

    for key in job.asset_layer.executable_asset_keys:
        own = newest(key)
        if own is None or _code_version_of(own) != graph.get(key).code_version:
            return True
        if any((p := newest(parent)) is not None and p.storage_id > own.storage_id
               for parent in graph.get(key).parent_keys):
            return True
    return False


def _code_version_of(record: Any) -> str | None:
    """The code version a materialization was made with, read as the freshness scan reads it."""
    from dagster._core.definitions.data_version import extract_data_provenance_from_entry

    provenance = extract_data_provenance_from_entry(record.event_log_entry)
    return None if provenance is None else provenance.code_version


def probe_summary(store: ArtifactStore) -> dict[str, object]:
    """Top-1 / top-10 of the main probe modes against chance (full report: the retrieval_probe asset)."""
    if not store.exists(PROBE, CORPUS_KEY):
        return {}
    report = store.load(PROBE, CORPUS_KEY)
    keep = ("instruction_rubric", "rubric_only", "instruction_only", "masked_instruction_rubric")
    return {"n_skills": report.n_skills, "chance": round(report.chance, 4),
            **{m: {"top1": round(report.modes[m].top1, 3), "top10": round(report.modes[m].top10, 3)}
               for m in keep if m in report.modes}}


def recover(instance: Any, home: RunHome, session_id: str | None = None) -> None:
    """Leave nothing behind: runs of ours that still look in flight are marked failed and their `docker`/`llm`
    pool slots freed (also those of this session's failed runs: an interrupted step may keep its slot), and gate
    containers carrying this folder's label are removed. At start-up this cleans up after a run that was killed
    outright (kill -9, a power cut); the folder lock guarantees no other `skill2env run` uses this home, so
    anything of ours in flight is dead."""
    import dagster as dg

    in_flight = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.CANCELING,
                 dg.DagsterRunStatus.NOT_STARTED]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=in_flight, tags=LAUNCHED_BY)):
        instance.report_run_failed(run, "a skill2env run on this folder ended without finishing this run")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        log.warning("recovered run %s left in flight", run.run_id)
    if session_id is not None:
        failed = [dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
        for run in instance.get_runs(filters=dg.RunsFilter(statuses=failed, tags={RUN_TAG: session_id})):
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
    removed = remove_gate_containers(home.gate_label)
    if removed:
        log.warning("removed %d gate containers left behind", removed)


def remove_gate_containers(label: str) -> int:
    """Force-remove every gate container carrying this run folder's label (only ours: the label is per folder)."""
    import docker
    import docker.errors

    from skill2env_dagster.gates.container import LABEL

    try:
        client = docker.from_env()
        found = client.containers.list(all=True, sparse=True, filters={"label": f"{LABEL}={label}"})
    except docker.errors.DockerException as e:
        log.warning("could not list gate containers: %s", e)
        return 0
    for c in found:
        with contextlib.suppress(docker.errors.NotFound):
            c.remove(force=True, v=True)
    return len(found)
