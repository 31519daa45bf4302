"""Assets `solver_rollouts` and `judge_scores` (per skill), `sft_dataset` and `difficulty_report` (corpus-wide).

Thin wrappers over `rollouts/`. With no model endpoint configured they materialise as skipped with `no_model`:
an honest status, never a fake score. Pools: a rollout holds a container for its whole episode and calls the
model one turn at a time, so `solver_rollouts` takes a slot of the `docker` pool (Dagster 1.13 gives an op one
pool: `OpDefinition.pools` is `{pool}`, and a `dagster/concurrency_key` tag that differs from the pool is an
error); its concurrent model callers are therefore bounded by the docker limit. `judge_scores` is pure model
work and takes a slot of the `llm` pool.
"""

# No `from __future__ import annotations`: Dagster resolves the dg.Config parameter type at decoration time.

import base64
import shutil
from collections import Counter
from pathlib import Path

import dagster as dg
from pydantic import Field

from skill2env_dagster.artifacts import (
    AXES,
    CORPUS_KEY,
    DIFFICULTY,
    GATES,
    HARDENING,
    JUDGE,
    PLANS,
    ROLLOUTS,
    SFT,
    SKILLS_PARTITION,
    SNAPSHOT,
    TASKS,
)
from skill2env_dagster.assets.common import asset_code_version, skills_partitions, skipped, usage_metadata
from skill2env_dagster.assets.tasks import task_generator
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.hardening import HardeningSet
from skill2env_dagster.models.judge import JudgeScores
from skill2env_dagster.models.rollout import SolverRollouts
from skill2env_dagster.models.task import TaskGateReports
from skill2env_dagster.reasons import InfraError, ReasonCode, is_retryable
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.rollouts import (
    RolloutsResource,
    env_hardening_fingerprint,
    env_judge_fingerprint,
    env_solver_fingerprint,
)
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.hardening import harden_skill, skill_rebuilder, task_trials
from skill2env_dagster.rollouts.judge import Judge, judge_skill
from skill2env_dagster.rollouts.report import PLOT_FILE, build_report, write_histogram
from skill2env_dagster.rollouts.rolled import RolledTask, rolled_tasks
from skill2env_dagster.rollouts.runner import TaskRef, roll_out_skill
from skill2env_dagster.rollouts.settings import RolloutSettings, judge_endpoint, solver_fingerprint
from skill2env_dagster.rollouts.sft import export_sft
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import OfflineGenerator
from skill2env_dagster.versions import is_online

ROLLOUTS_VERSION = asset_code_version(ROLLOUTS, fingerprint=env_solver_fingerprint())
JUDGE_VERSION = asset_code_version(JUDGE, fingerprint=env_judge_fingerprint())
HARDENING_VERSION = asset_code_version(HARDENING, fingerprint=env_hardening_fingerprint())


def retained_tasks(store: ArtifactStore, key: str) -> list[TaskRef]:
    """The skill's retained tasks that (when re-gated) still pass every gate from their published folder."""
    if not store.exists(TASKS, key):
        return []
    gates = store.load(GATES, key) if store.exists(GATES, key) else TaskGateReports(skill_id=key)
    failing = set(gates.failing())
    return [TaskRef(b.task_name, Path(b.path)) for b in store.load(TASKS, key).retained()
            if b.task_name not in failing and Path(b.path).is_dir()]


def _sandboxes(docker: DockerResource, settings: RolloutSettings) -> DockerSandboxFactory:
    """The sandbox factory on the gates' engine and limits; an engine that does not answer fails the step
    (retryable: infrastructure)."""
    lim = settings.limits
    try:
        return DockerSandboxFactory(docker.settings(), OutputLimits(lim.output_head_bytes, lim.output_tail_bytes,
                                                                    lim.output_cap_bytes))
    except InfraError as e:
        raise dg.Failure(description=str(e), metadata={"reason": e.reason.value},
                         allow_retries=is_retryable(e.reason)) from e


def _offline(settings: RolloutSettings, llm: LLMResource) -> bool:
    return not is_online(solver_fingerprint(settings, llm.to_config()))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _rollout_table(result: SolverRollouts) -> str:
    rows = [f"| {t.task_name} | {t.calibration.label} | {_pct(t.calibration.pass_rate)} | "
            f"{_pct(t.calibration.mean_reward_v)} | {t.calibration.scored}/{t.calibration.unscored} | "
            f"{t.calibration.oracle_passed} |" for t in result.tasks]
    return ("| task | label | pass rate | mean r_V | scored/unscored | oracle passed |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows))


@dg.asset(
    name=ROLLOUTS.name, partitions_def=skills_partitions, deps=[TASKS.name, GATES.name], group_name="rollouts",
    pool="docker", kinds={"docker", "openai"}, code_version=ROLLOUTS_VERSION,
)
def solver_rollouts(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource, docker: DockerResource,
                    llm: LLMResource, rollouts: RolloutsResource) -> dg.MaterializeResult:
    """k rollouts of every solver configuration (plus the Oracle and no-op references) on each retained task,
    in fresh hardened containers; ATIF trajectories; pass rate, mean reward and a difficulty label per task."""
    key, store = context.partition_key, artifacts.store()
    settings = rollouts.settings()
    folder = store.dir(ROLLOUTS, key)
    if _offline(settings, llm) or not (tasks := retained_tasks(store, key)):
        shutil.rmtree(folder, ignore_errors=True)
        reason = ReasonCode.NO_MODEL if _offline(settings, llm) else ReasonCode.NO_RETAINED_TASKS
        return skipped(store, ROLLOUTS, key, reason, context.log)
    result = roll_out_skill(key, tasks, settings, llm.to_config(), _sandboxes(docker, settings), folder,
                            timeout_cap_sec=docker.settings().timeout_cap_sec)
    digest = store.save(ROLLOUTS, key, result)
    rs = result.rollouts()
    context.log.info(f"solver_rollouts skill={key} tasks={len(tasks)} rollouts={len(rs)}")
    return dg.MaterializeResult(data_version=dg.DataVersion(digest[:24]), metadata={
        "tasks": dg.MetadataValue.md(_rollout_table(result)),
        "labels": dg.MetadataValue.json(dict(Counter(t.calibration.label for t in result.tasks))),
        "rollouts": len(rs), "scored": sum(r.scored for r in rs),
        "stops": dg.MetadataValue.json(dict(Counter(r.stop.value for r in rs))),
        "unscored_by_reason": dg.MetadataValue.json(dict(Counter(r.reason.value for r in rs if r.reason))),
        "solvers": dg.MetadataValue.json(result.models), "trajectories": dg.MetadataValue.path(str(folder)),
        "seconds": dg.MetadataValue.float(result.seconds),
        **usage_metadata(result.usage),
    })


def _judge(settings: RolloutSettings, rollouts: RolloutsResource, llm: LLMResource) -> Judge | None:
    """The judge on its endpoint; None when no judge model is configured."""
    endpoint = judge_endpoint(settings.judge, rollouts.judge_default(llm.to_config()))
    return None if endpoint.offline else Judge(LLMClient(endpoint), settings.judge, settings.reward)


def _judge_table(scores: JudgeScores) -> str:
    rows = [f"| {t.task_name} | {t.oracle_score} | {t.noop_score} | {t.calibration} | {_pct(t.solver_mean_score)} | "
            f"{_pct(t.mean_reward)} | {t.judge_failed} | {t.shortcuts} | {sum(t.hacking.values())} | "
            f"{len(t.off_task_bullets)} |" for t in scores.tasks]
    head = ("| task | oracle | no-op | judge scale | solver mean | mean r | judge_failed | shortcuts | hacking | "
            "off-task bullets |\n" + "|---" * 10 + "|\n")
    return head + "\n".join(rows)


@dg.asset(
    name=JUDGE.name, partitions_def=skills_partitions, deps=[ROLLOUTS.name], group_name="rollouts", pool="llm",
    kinds={"openai"}, code_version=JUDGE_VERSION,
)
def judge_scores(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource, llm: LLMResource,
                 rollouts: RolloutsResource) -> dg.MaterializeResult:
    """The rubric judge's verdict on every scored rollout (the references included), the combined reward under
    the configured form, the judge's scale per task, and the shortcuts (full test reward, judged -5)."""
    key, store = context.partition_key, artifacts.store()
    settings = rollouts.settings()
    judge = _judge(settings, rollouts, llm)
    if judge is None or _offline(settings, llm):
        return skipped(store, JUDGE, key, ReasonCode.NO_MODEL, context.log)
    if not store.exists(ROLLOUTS, key):
        return skipped(store, JUDGE, key, ReasonCode.NO_RETAINED_TASKS, context.log)
    result = judge_skill(store.load(ROLLOUTS, key), store.dir(ROLLOUTS, key), judge, JUDGE_VERSION)
    digest = store.save(JUDGE, key, result)
    content = sha256_bytes(canonical_json(result.model_dump(mode="json", exclude={"usage"})).encode())
    context.log.info(f"judge_scores skill={key} judged={len(result.verdicts)} shortcuts={len(result.shortcuts)}")
    return dg.MaterializeResult(data_version=dg.DataVersion(content[:24]), metadata={
        "tasks": dg.MetadataValue.md(_judge_table(result)), "judge_model": result.judge_model,
        "reward_form": dg.MetadataValue.json(result.reward_form.model_dump()),
        "judged": sum(v.status == "judged" for v in result.verdicts),
        "judge_failed": sum(v.status == "judge_failed" for v in result.verdicts),
        "shortcuts": dg.MetadataValue.json([s.model_dump() for s in result.shortcuts]),
        "judge_calibration": dg.MetadataValue.json({t.task_name: t.calibration_reason for t in result.tasks}),
        "hacking": dg.MetadataValue.json(dict(Counter(v.hacking for v in result.verdicts if v.hacking))),
        "artifact_digest": digest[:24],
        **usage_metadata(result.usage),
    })


def _hardening_table(result: HardeningSet) -> str:
    rows = []
    for t in result.tasks:
        for r in t.rounds:
            after = f"{r.after.label} ({_pct(r.after.mean_reward_v)})" if r.after else "-"
            gate = "retained" if r.revision.retained else f"rejected: {r.revision.reason}"
            prev = r.previous_solution
            replayed = f"r={_pct(prev.reward_v)}" if prev is not None and prev.scored else "-"
            rows.append(f"| {t.task_name} | {r.round} | {r.why} | {r.revision.summary} | {gate} | {replayed} | "
                        f"{r.before.label} ({_pct(r.before.mean_reward_v)}) | {after} |")
    head = ("| task | round | why | revision | verdict | previous solution on new task | before | after |\n"
            + "|---" * 8 + "|\n")
    return head + "\n".join(rows) if rows else "no too_easy task"


@dg.asset(
    name=HARDENING.name, partitions_def=skills_partitions, deps=[ROLLOUTS.name, JUDGE.name], group_name="rollouts",
    pool="docker", kinds={"docker", "openai"}, code_version=HARDENING_VERSION,
)
def task_hardening(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource, docker: DockerResource,
                   llm: LLMResource, rollouts: RolloutsResource) -> dg.MaterializeResult:
    """Each too_easy task revised (next complexity level, one more difficulty pattern), rebuilt through the frozen
    creator order and the gates, and rolled out again, up to R rounds; every round shown with its figures."""
    key, store = context.partition_key, artifacts.store()
    settings = rollouts.settings()
    if _offline(settings, llm):
        return skipped(store, HARDENING, key, ReasonCode.NO_MODEL, context.log)
    if not (store.exists(ROLLOUTS, key) and store.exists(TASKS, key)):
        return skipped(store, HARDENING, key, ReasonCode.NO_RETAINED_TASKS, context.log)
    if not all(store.exists(a, key) for a in (SNAPSHOT, PLANS, AXES)):
        return skipped(store, HARDENING, key, ReasonCode.NOT_ELIGIBLE, context.log)
    bundles = store.load(TASKS, key)
    # The generator that created the tasks rebuilds them: offline tasks get the next level offline.
    gen = OfflineGenerator() if bundles.generator == "offline" else task_generator(llm, docker)
    rebuilder = skill_rebuilder(store, store.load(SNAPSHOT, key), store.load(PLANS, key), store.load(AXES, key),
                                bundles, gen, docker.gate, docker.base_images())
    trials = task_trials(settings, llm.to_config(), _sandboxes(docker, settings), store.dir(HARDENING, key),
                         docker.settings().timeout_cap_sec, _judge(settings, rollouts, llm))
    result = harden_skill(store.load(ROLLOUTS, key), rebuilder, trials, settings.hardening_rounds)
    digest = store.save(HARDENING, key, result)
    context.log.info(f"task_hardening skill={key} hardened={len(result.tasks)}")
    return dg.MaterializeResult(data_version=dg.DataVersion(digest[:24]), metadata={
        "rounds": dg.MetadataValue.md(_hardening_table(result)),
        "outcomes": dg.MetadataValue.json(dict(Counter(t.outcome for t in result.tasks))),
        "not_needed": dg.MetadataValue.json(result.not_needed), "max_rounds": result.max_rounds,
        "seconds": dg.MetadataValue.float(result.seconds),
    })


def _current(context: dg.AssetExecutionContext, store: ArtifactStore) -> list[RolledTask]:
    """Every rolled-out task of the skills that are partitions now (a removed skill's files are ignored), each with
    its judgement, the hardened rebuilds included."""
    keys = set(context.instance.get_dynamic_partitions(SKILLS_PARTITION))
    rollouts = {k: store.load(ROLLOUTS, k) for k in store.keys(ROLLOUTS) if k in keys}
    scores = {k: store.load(JUDGE, k) for k in store.keys(JUDGE) if k in rollouts}
    hardening = {k: store.load(HARDENING, k) for k in store.keys(HARDENING) if k in rollouts}
    return rolled_tasks(rollouts, scores, {k: store.dir(ROLLOUTS, k) for k in rollouts}, hardening,
                        {k: store.dir(HARDENING, k) for k in hardening})


class SftConfig(dg.Config):
    min_reward: float | None = Field(default=None, description="Keep r above this; default: the rollout settings'.")
    benchmark_paths: list[str] = Field(default_factory=list, description="Harbor task folders / text files.")
    jaccard_threshold: float = 0.8
    containment_threshold: float = 0.5


@dg.asset(name=SFT.name, deps=[JUDGE.name, ROLLOUTS.name], group_name="rollouts", kinds={"json"},
          code_version=asset_code_version(SFT))
def sft_dataset(context: dg.AssetExecutionContext, config: SftConfig, artifacts: ArtifactStoreResource,
                llm: LLMResource, rollouts: RolloutsResource) -> dg.MaterializeResult:
    """Judged solver trajectories with r above the threshold as OpenAI chat JSONL (tool calls included),
    deduplicated per task and decontaminated against the configured benchmarks."""
    store, settings = artifacts.store(), rollouts.settings()
    if _offline(settings, llm):
        return skipped(store, SFT, CORPUS_KEY, ReasonCode.NO_MODEL, context.log)
    cfg = DecontamConfig(benchmark_paths=config.benchmark_paths, jaccard_threshold=config.jaccard_threshold,
                         containment_threshold=config.containment_threshold)
    min_reward = settings.sft_min_reward if config.min_reward is None else config.min_reward
    manifest = export_sft(_current(context, store), store.dir(SFT), min_reward, cfg)
    store.save(SFT, CORPUS_KEY, manifest)
    return dg.MaterializeResult(data_version=dg.DataVersion(manifest.digest[:24]), metadata={
        "rows": manifest.rows, "tasks": manifest.tasks, "skills": manifest.skills, "candidates": manifest.candidates,
        "min_reward": dg.MetadataValue.float(min_reward),
        "excluded_by_reason": dg.MetadataValue.json(manifest.excluded_by_reason()),
        "decontamination_checked": manifest.decontamination_checked,
        "path": dg.MetadataValue.path(manifest.path),
    })


@dg.asset(name=DIFFICULTY.name, deps=[ROLLOUTS.name, JUDGE.name, HARDENING.name], group_name="rollouts",
          kinds={"python", "matplotlib"}, code_version=asset_code_version(DIFFICULTY))
def difficulty_report(context: dg.AssetExecutionContext, artifacts: ArtifactStoreResource, llm: LLMResource,
                      rollouts: RolloutsResource) -> dg.MaterializeResult:
    """Difficulty labels of every calibrated task, the judge's scale (Oracle and no-op beside the solvers), the
    likely verifier holes, hardening rounds per task, and a histogram of mean r_V by label."""
    store, settings = artifacts.store(), rollouts.settings()
    if _offline(settings, llm):
        return skipped(store, DIFFICULTY, CORPUS_KEY, ReasonCode.NO_MODEL, context.log)
    report = build_report(_current(context, store), settings.too_easy_above)
    plot = write_histogram(report, store.dir(DIFFICULTY) / PLOT_FILE)
    report.plot = str(plot)
    digest = store.save(DIFFICULTY, CORPUS_KEY, report)
    png = base64.b64encode(plot.read_bytes()).decode()
    return dg.MaterializeResult(data_version=dg.DataVersion(digest[:24]), metadata={
        "tasks": len(report.tasks), "labels": dg.MetadataValue.json(report.labels),
        "judge_scale": dg.MetadataValue.json(report.judge_scale.model_dump()),
        "judge_agreement": dg.MetadataValue.json({"agreement": report.judge_scale.agreement,
                                                   "compared": report.judge_scale.compared}),
        "judge_warnings": dg.MetadataValue.json(report.judge_scale.warnings),
        "hacking": dg.MetadataValue.json(report.judge_scale.hacking),
        "hardened_tasks": sum(bool(t.hardened_from) for t in report.tasks),
        "bins": dg.MetadataValue.json({f"{b.lo:.1f}-{b.hi:.1f}": b.by_label for b in report.bins if b.by_label}),
        "shortcuts": len(report.shortcuts),
        "histogram": dg.MetadataValue.md(f"![difficulty](data:image/png;base64,{png})"),
        "plot": dg.MetadataValue.path(str(plot)),
    })


ROLLOUT_SKILL_ASSETS = [solver_rollouts, judge_scores, task_hardening]
ROLLOUT_CORPUS_ASSETS = [sft_dataset, difficulty_report]
