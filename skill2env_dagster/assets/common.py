"""What every asset module shares: the skills partitioning, derived code versions, the skipped result, usage
metadata, and stage-failure records."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any, Literal

import dagster as dg

from skill2env_dagster.artifacts import FAILURES, SKILLS_PARTITION, Artifact, Folder
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.models.failure import SkillFailures, StageFailure
from skill2env_dagster.models.gate import CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import InfraError, ReasonCode, Skill2EnvError, is_retryable
from skill2env_dagster.resources.llm import env_fingerprint
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.versions import code_version

# The one partitioning scheme: a dynamic partition per crawled skill (key = SkillRecord.skill_id).
skills_partitions = dg.DynamicPartitionsDefinition(name=SKILLS_PARTITION)
# The steps that run gates retry in place when the infrastructure failed (the engine restarted mid-gate, the
# registry was down): Dagster re-runs the step after 10, 20, 40 s. A Failure raised with allow_retries=False (a
# genuine verdict, a bad input) is never retried; see infra_failures().
INFRA_RETRY = dg.RetryPolicy(max_retries=3, delay=10, backoff=dg.Backoff.EXPONENTIAL)


def asset_code_version(artifact: Artifact[Any] | Folder, prompts_folder: Path | str | None = None,
                       fingerprint: Mapping[str, object] | None = None) -> str:
    """The artifact's code version from its declared scope and the model settings in the environment (or the
    given fingerprint, for assets whose model settings are their own, e.g. the solvers and the judge)."""
    if artifact.scope is None:
        raise ValueError(f"{artifact.name} declares no code scope")
    return code_version(artifact.scope, prompts_folder=prompts_folder,
                        fingerprint=env_fingerprint() if fingerprint is None else fingerprint)


def skipped(store: ArtifactStore, artifact: Artifact[Any], key: str, reason: ReasonCode,
            log: dg.DagsterLogManager | None = None, **extra: Any) -> dg.MaterializeResult:
    """A skill this stage does not apply to: no artifact file (a stale one is removed), an honest status."""
    store.delete(artifact, key)
    clear_failure(store, artifact, key)
    if log is not None:
        log.info(f"{artifact.name} skill={key} status=skipped reason={reason.value}")
    return dg.MaterializeResult(data_version=dg.DataVersion(f"skipped:{reason.value}"),
                                metadata={"status": "skipped", "reason": reason.value}, **extra)


def usage_metadata(u: Usage) -> dict[str, Any]:
    """Model calls, tokens and cost as asset metadata; an unpriced cost is the text "unknown", never 0."""
    cost: Any = "unknown" if u.cost_usd is None else dg.MetadataValue.float(u.cost_usd)
    return {"llm_calls": u.calls, "failed_calls": u.failed_calls, "cache_hits": u.cache_hits,
            "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "cost_usd": cost}


@contextmanager
def stage_run(store: ArtifactStore, artifact: Artifact[Any], key: str, generator: Literal["offline", "llm"],
              model: str | None) -> Iterator[None]:
    """Wrap a stage's model-backed work: an LLMError is recorded (why, and the usage it spent) and raised as the
    asset's Failure; when the block completes, an earlier failure record of this stage is history."""
    try:
        yield
    except LLMError as e:
        raise stage_failed(store, artifact, key, e, generator, model) from e
    clear_failure(store, artifact, key)


def stage_failed(store: ArtifactStore, artifact: Artifact[Any], key: str, err: Skill2EnvError,
                 generator: Literal["offline", "llm"], model: str | None) -> dg.Failure:
    """Record why this skill's stage failed (for the exports and the funnel) and the Failure the asset raises:
    its description and metadata name the reason, run retries only for infrastructure codes."""
    usage = getattr(err, "usage", None) or Usage()
    record = store.load(FAILURES, key) if store.exists(FAILURES, key) else SkillFailures(skill_id=key)
    record.stages[artifact.name] = StageFailure(
        stage=artifact.name, reason=err.reason, message=str(err)[:2000], generator=generator, model=model,
        usage=usage, failed_at=datetime.now(UTC).isoformat(timespec="seconds"))
    store.save(FAILURES, key, record)
    return dg.Failure(description=f"{artifact.name} for {key} failed: {err}",
                      metadata={"reason": err.reason.value, "stage": artifact.name, **usage_metadata(usage)},
                      allow_retries=is_retryable(err.reason))


def clear_failure(store: ArtifactStore, artifact: Artifact[Any], key: str) -> None:
    """The stage succeeded (or no longer applies): its failure record is history."""
    if not store.exists(FAILURES, key):
        return
    record = store.load(FAILURES, key)
    if record.stages.pop(artifact.name, None) is None:
        return
    if record.stages:
        store.save(FAILURES, key, record)
    else:
        store.delete(FAILURES, key)


EVENT_BATCH = 200  # asset events per storage write when batching is on
BATCH_ENV = "DAGSTER_EVENT_BATCH_SIZE"  # Dagster's own switch for batched event writes (0 or unset: off)


def log_asset_events(context: dg.AssetExecutionContext,
                     events: Iterable[dg.AssetMaterialization | dg.AssetObservation]) -> int:
    """Log many asset events (a crawl's observations, a snapshot batch's materializations) as `log_event` would,
    but marked as batches, so that with DAGSTER_EVENT_BATCH_SIZE set (`skill2env run` sets it) the storage writes
    each batch in one statement instead of a round trip per event: 27,5xx observations took 22 min one by one on
    Postgres at load 10. Without the variable Dagster writes them one by one, as before. Returns the count."""
    from dagster._core.events import DagsterEvent, DagsterEventBatchMetadata, generate_event_batch_id

    op_context = context.op_execution_context
    step = op_context._step_execution_context
    source, count = iter(events), 0
    while chunk := list(islice(source, EVENT_BATCH)):  # logged as produced, a batch at a time
        batch_id = generate_event_batch_id()
        count += len(chunk)
        for i, event in enumerate(chunk):
            meta = DagsterEventBatchMetadata(batch_id, i == len(chunk) - 1)
            if isinstance(event, dg.AssetMaterialization):
                logged = DagsterEvent.asset_materialization(step, event, meta)
            else:
                logged = DagsterEvent.asset_observation(step, event, meta)
            op_context._events.append(logged)
    return count


def infra_failures(store: ArtifactStore, artifact: Artifact[Any], key: str, reports: Iterable[GateReport],
                   generator: Literal["offline", "llm"], model: str | None) -> None:
    """Raise the step's retryable Failure when a gate could not give a verdict because the infrastructure failed
    (infra_failed with a retryable reason, e.g. docker_unavailable): such a task is neither rejected nor recorded
    as done, the step runs again (INFRA_RETRY) and, once retries are spent, the skill's stage is left failed with
    the reason, for the next run to redo."""
    infra = [r for r in reports if r.verdict is GateVerdict.INFRA_FAILED and r.reason and is_retryable(r.reason)]
    if not infra:
        return
    first = infra[0]
    err = InfraError(first.reason or ReasonCode.DOCKER_UNAVAILABLE,
                     f"{len(infra)} gate(s) could not run ({first.task}: "
                     f"{'; '.join(c.evidence for c in first.checks if c.verdict is CheckVerdict.ERROR)[:500]})")
    raise stage_failed(store, artifact, key, err, generator, model)
