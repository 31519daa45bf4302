"""Corpus export: the Harbor dataset manifest and the corpus statistics written next to the tables and plots."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.task import Axes
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1


class HardeningLineage(BaseModel):
    """Where an exported hardened task comes from: it replaces its origin in the dataset."""

    model_config = ConfigDict(extra="forbid")

    origin: str = Field(description="The task as first created (not exported itself).")
    round: int = Field(ge=1, description="The latest hardening round that passed the gates and the harder check.")
    reason: str = Field(description="Why the round ran, e.g. 'mean r_V 1.000 > 0.7'.")
    revision: str = Field(description="What the round changed.")
    evidence: str = Field(default="", description="The harder check, e.g. 'previous solution on new task: r=0.42'.")


class ManifestEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_name: str = Field(description="Folder name inside the dataset.")
    skill_id: str
    workflow: str
    variant: int = Field(ge=0)
    generator: str = Field(description="offline | llm.")
    axes: Axes
    freeze_hash: str = ""
    metrics: list[str] = Field(default_factory=list)
    source_path: str = Field(description="The published task folder it was copied from.")
    hardening: HardeningLineage | None = Field(default=None, description="Set when a hardened round replaces "
                                               "the task first created.")


class ExcludedTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_name: str
    skill_id: str
    reason: ReasonCode
    detail: str = ""


class ExportManifest(BaseModel):
    """`manifest.json` of an exported Harbor dataset: what is in it, what was left out and why."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    n_tasks: int = Field(ge=0)
    tasks: list[ManifestEntry] = Field(default_factory=list)
    excluded: list[ExcludedTask] = Field(default_factory=list)
    decontamination_checked: bool = Field(description="False when no benchmark was configured: not checked != clean.")
    benchmark_paths: list[str] = Field(default_factory=list)


class CountRate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    errored: int = Field(ge=0)
    pass_rate: float | None = Field(default=None, description="passed / (passed + failed + errored); None if none.")


class CostSummary(BaseModel):
    """Model usage of the whole corpus, failed stages included; `cost_usd` None = no price configured ("unknown")."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    failed_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    retained_tasks: int = 0
    cost_usd_per_retained_task: float | None = None
    tokens_per_retained_task: float | None = None


class CorpusStats(BaseModel):
    """The `corpus_stats` artifact: funnel, domain mix, axis coverage, gate pass rates, cost per retained task."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    funnel: dict[str, int] = Field(description="Stage -> count, in pipeline order (crawled ... exported).")
    skill_reasons: dict[str, int] = Field(default_factory=dict, description="Why skills were screened out: reason "
                                          "-> screened-out skills carrying it (a skill may carry several).")
    recorded_reasons: dict[str, int] = Field(default_factory=dict, description="Non-blocking findings -> skills "
                                             "carrying them (recorded, not screened out).")
    task_reasons: dict[str, int] = Field(default_factory=dict, description="Why task candidates were not retained.")
    domain_mix: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Domain -> {eligible_skills, retained_tasks}."
    )
    axis_coverage: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Axis -> value -> retained tasks realised with it."
    )
    gate_pass_rates: dict[str, CountRate] = Field(default_factory=dict, description="Check name (and 'overall').")
    stage_failures: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Stage -> reason -> skills whose last run of that stage failed.")
    failure_examples: dict[str, str] = Field(
        default_factory=dict, description="Reason -> one failure message (a configuration error is shown once, "
        "not once per skill).")
    generators: dict[str, int] = Field(default_factory=dict, description="Generator (offline | llm) -> skills.")
    cost: CostSummary = Field(default_factory=CostSummary)
    probe: dict[str, float] = Field(default_factory=dict, description="Headline probe figures, when a probe ran.")


class DecontamConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark_paths: list[str] = Field(default_factory=list, description="Harbor task folders or plain text files.")
    ngram: int = Field(default=13, ge=1, description="Word n-gram length.")
    jaccard_threshold: float = Field(default=0.8, gt=0, le=1)
    containment_threshold: float = Field(
        default=0.5, gt=0, le=1, description="Shared n-grams / n-grams of the smaller text."
    )


class DecontamMatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    benchmark_id: str = Field(description="Benchmark document: task folder or file, relative to its configured root.")
    shared: int = Field(ge=0, description="Shared distinct n-grams.")
    jaccard: float = Field(ge=0, le=1)
    containment: float = Field(ge=0, le=1)
    flagged: bool
    reason: ReasonCode | None = None


class DecontamReport(BaseModel):
    """Which of our tasks overlap a user-configured benchmark; flagged tasks are left out of the export."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    config: DecontamConfig
    n_tasks: int = Field(ge=0)
    n_benchmark_docs: int = Field(ge=0)
    too_short: list[str] = Field(
        default_factory=list, description="Task or benchmark ids with fewer words than one n-gram (not checkable)."
    )
    flagged: list[str] = Field(default_factory=list, description="Task ids flagged as contaminated.")
    matches: list[DecontamMatch] = Field(
        default_factory=list, description="Best benchmark match per task that shares at least one n-gram."
    )
