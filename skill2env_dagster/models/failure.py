"""Stage failures: a per-skill stage whose last run failed, kept so the exports and the funnel can say why.

The asset still fails its run with the reason (so Dagster shows it and run retries apply to infrastructure
codes); this record is what outlives the run. It is removed when the stage next succeeds or is skipped.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1


class StageFailure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str = Field(description="The artifact whose materialisation failed, e.g. workflow_plans.")
    reason: ReasonCode
    message: str = Field(description="What failed and what to change (never contains the key).")
    generator: Literal["offline", "llm"]
    model: str | None = None
    usage: Usage = Field(default_factory=Usage, description="What the failed attempt spent.")
    failed_at: str = Field(description="UTC ISO timestamp.")


class SkillFailures(BaseModel):
    """The `stage_failures` record of one skill: its failed stages, by stage name."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    stages: dict[str, StageFailure] = Field(default_factory=dict)
