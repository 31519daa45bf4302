"""Retrieval-probe and decontamination reports: does a task still point at its own skill, and is it a benchmark copy?"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1

# The three query texts of the reference probe, then the lexical controls that separate vocabulary from method.
BASE_MODES: tuple[str, ...] = ("instruction_rubric", "rubric_only", "instruction_only")
ALL_MODES: tuple[str, ...] = (
    *BASE_MODES,
    *(f"bm25_{m}" for m in BASE_MODES),
    *(f"masked_{m}" for m in BASE_MODES),
)


class ProbeConfig(BaseModel):
    """Knobs of one probe run, recorded in the report so a figure can always be traced to its settings."""

    model_config = ConfigDict(extra="forbid")

    modes: list[str] = Field(default_factory=lambda: list(ALL_MODES), description="Modes to score, from ALL_MODES.")
    mask_top_k: int = Field(default=25, ge=0, description="Most distinctive TF-IDF terms of a skill masked per query.")
    bm25_k1: float = Field(default=1.5, gt=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    worst_n: int = Field(default=20, ge=0, description="How many worst-ranked tasks the report lists.")
    batch_size: int = Field(default=1024, ge=1, description="Queries scored per dense block (memory bound).")
    workers: int = Field(default=2, ge=1, description="Threads scoring blocks in parallel (memory: workers x block).")


class RankMetrics(BaseModel):
    """Rates are fractions in [0, 1]; ties with the true skill count against it (pessimistic rank)."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=0, description="Tasks scored.")
    top1: float = Field(ge=0, le=1)
    top10: float = Field(ge=0, le=1)
    mrr: float = Field(ge=0, le=1)


class ModeResult(RankMetrics):
    model_config = ConfigDict(extra="forbid")

    empty_queries: int = Field(default=0, ge=0, description="Tasks whose query had no indexed term (ranked last).")
    by_domain: dict[str, RankMetrics] = Field(default_factory=dict, description="Keyed by the source skill's domain.")
    by_generator: dict[str, RankMetrics] = Field(default_factory=dict, description="offline | llm | unknown.")


class ProbeTaskResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(description="Task folder relative to the tasks root (POSIX).")
    task_name: str | None = Field(default=None, description="[task].name from task.toml, when present.")
    source_skill: str | None = None
    generator: str = "unknown"
    domain: str | None = Field(default=None, description="Domain of the source skill.")
    status: Literal["scored", "unmatched", "invalid"]
    reason: ReasonCode | None = None
    detail: str | None = Field(default=None, description="Human-readable cause for unmatched/invalid tasks.")
    ranks: dict[str, int] = Field(default_factory=dict, description="Mode -> 1-based rank of the own skill.")


class SkillProbeScore(BaseModel):
    """How well one skill's tasks retrieve it (primary mode and its masked control)."""

    model_config = ConfigDict(extra="forbid")

    skill_id: str
    domain: str
    n_tasks: int = Field(ge=0)
    top1: float | None = Field(default=None, description="None when the skill has no scored task.")
    mrr: float | None = None
    masked_top1: float | None = Field(default=None, description="Same, with the skill's distinctive terms masked.")


class ProbeReport(BaseModel):
    """The `retrieval_probe` artifact and the JSON the `skill2env probe` command writes."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    n_skills: int = Field(ge=0, description="Candidate skills (eligible skills of the crawl).")
    chance: float = Field(ge=0, le=1, description="Top-1 chance rate 1/N.")
    chance_top10: float = Field(ge=0, le=1, description="Top-10 chance rate min(10, N)/N.")
    n_tasks: int = Field(ge=0)
    n_scored: int = Field(ge=0)
    n_unmatched: int = Field(ge=0, description="Tasks whose source_skill is not among the candidates.")
    n_invalid: int = Field(ge=0, description="Task folders whose task.toml could not be used.")
    primary_mode: str = "instruction_rubric"
    modes: dict[str, ModeResult]
    masking_drop: dict[str, float] = Field(
        default_factory=dict, description="Top-1 of a TF-IDF mode minus top-1 of its masked control."
    )
    worst_tasks: list[ProbeTaskResult] = Field(default_factory=list)
    per_task: list[ProbeTaskResult] = Field(default_factory=list)
    per_skill: list[SkillProbeScore] = Field(default_factory=list)
    config: ProbeConfig = Field(default_factory=ProbeConfig)
    seconds: float = Field(default=0.0, ge=0, description="Wall-clock time of the scoring.")
