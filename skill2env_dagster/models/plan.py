"""Workflow plans: up to eight ranked, checkable workflows per skill, grounded in the skill's own files."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skill2env_dagster.models.labels import Label
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1


class Criteria(BaseModel):
    """Scores 1–5 against the planner's six criteria; the rank comes from their sum."""

    model_config = ConfigDict(extra="forbid")

    verifiable: int = Field(ge=1, le=5)
    well_specified: int = Field(ge=1, le=5)
    solvable_in_hours: int = Field(ge=1, le=5)
    hard_for_good_reason: int = Field(ge=1, le=5)
    realistic: int = Field(ge=1, le=5)
    outcome_graded: int = Field(ge=1, le=5)
    rationale: str = Field(description="One or two sentences naming the insight that makes it hard.")

    def total(self) -> int:
        return (
            self.verifiable
            + self.well_specified
            + self.solvable_in_hours
            + self.hard_for_good_reason
            + self.realistic
            + self.outcome_graded
        )


class MetaPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: str
    initial_world: str
    planted_defects: list[str] = Field(default_factory=list)
    difficulty_source: str
    solution_sketch: str
    verifier_strategy: str
    risks: list[str] = Field(default_factory=list)


class AssetSource(BaseModel):
    """A file of the skill (path relative to the skill) or an external source pinned to a revision."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["skill_file", "external"]
    path: str | None = None
    url: str | None = None
    revision: str | None = Field(default=None, description="External sources: the commit or tag. Skill files: left "
                                 "empty by the planner; we pin them to the skill's bundle digest.")


class AssetRecommendation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    purpose: str
    kind: str = Field(description="fixture_data | config | script | document | database | service_stub | ...")
    sources: list[AssetSource] = Field(default_factory=list)
    composition: str = Field(description="How the sources are combined into the task's world.")
    fallback: str = Field(description="What to synthesise when the sources are unusable.")


class AxisCombo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    archetype: Label
    primary_verifier_pattern: Label
    persona: Label


class WorkflowFocus(BaseModel):
    """What part of the skill's method a workflow exercises (set by the offline planner from SkillKnowledge)."""

    model_config = ConfigDict(extra="forbid")

    family: str = Field(description="entries | procedure | checklist | table | template | defaults | service")
    source: str = Field(description="file:line of the rule, procedure, table or template it is built on.")


class Workflow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: int = Field(ge=1, le=8)
    name: Label = Field(description="Label-shaped workflow id, unique within the skill.")
    summary: str
    criteria: Criteria
    meta_plan: MetaPlan
    assets: list[AssetRecommendation] = Field(default_factory=list)
    axis_pool: list[AxisCombo] = Field(min_length=1, max_length=4)
    focus: WorkflowFocus | None = None


class Usage(BaseModel):
    """Model calls and what they cost. `cost_usd` is None when tokens were spent at a price nobody configured:
    shown as "unknown", never as a made-up $0 (it is 0 only when nothing was spent or the price is set to 0)."""

    model_config = ConfigDict(extra="forbid")

    calls: int = Field(default=0, ge=0, description="HTTP requests answered with a completion (tokens spent).")
    failed_calls: int = Field(default=0, ge=0, description="HTTP requests that failed: error status, timeout, "
                              "reset, undecodable body.")
    cache_hits: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=0.0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else round(self.cost_usd + other.cost_usd, 8)
        return Usage(calls=self.calls + other.calls, failed_calls=self.failed_calls + other.failed_calls,
                     cache_hits=self.cache_hits + other.cache_hits,
                     prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens, cost_usd=cost)

    def report(self) -> dict[str, object]:
        """For people and JSON summaries: every count, and the cost in USD or the word "unknown" (never 0)."""
        return {**self.model_dump(), "cost_usd": "unknown" if self.cost_usd is None else self.cost_usd}


def total_usage(usages: Iterable[Usage]) -> Usage:
    return sum(usages, Usage())


class WorkflowPlanSet(BaseModel):
    """The `workflow_plans` artifact of one skill."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    bundle_digest: str
    generator: Literal["offline", "llm"]
    model: str | None = None
    prompt_version: str
    workflows: list[Workflow] = Field(max_length=8, description="Empty only with a skipped_reason (offline: no "
                                      "rule of the skill decides a task).")
    usage: Usage = Field(default_factory=Usage)
    skipped_reason: ReasonCode | None = Field(default=None, description="Why there is no workflow "
                                              "(no_checkable_rule).")
    refusals: list[str] = Field(default_factory=list, description="Rules of the skill no task is built on, each "
                                "with its line and why (the offline planner's; at most a dozen).")

    @model_validator(mode="after")
    def _workflows_or_reason(self) -> WorkflowPlanSet:
        if not self.workflows and self.skipped_reason is None:
            raise ValueError("a plan without workflows must say why (skipped_reason)")
        return self
