"""What a worker is given for one partition and what it sends back (free of Dagster, so the command line starts
fast)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.export.funnel import FailedPartition
from skill2env_dagster.models.freshness import Plan

Work = tuple[str, bool, Plan | None]  # (partition key, eligible?, the freshness scan's plan if it has one)


class PartitionOutcome(BaseModel):
    """What happened to one partition in this run (sent back from a worker process, hence a model)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    status: Literal["up_to_date", "ran", "failed", "interrupted"]
    runs: int = 0
    materialized: list[str] = Field(default_factory=list)
    failure: FailedPartition | None = None
    seconds: float = 0.0
    seconds_by_stage: dict[str, float] = Field(default_factory=dict)
    eligible: bool | None = Field(default=None, description="The final verdict, when this run made the snapshot.")
    verdict_changed: bool = Field(default=False, description="The snapshot's verdict differed from the one the run "
                                  "was scheduled by (the second opinion cleared or screened out the skill): the "
                                  "rest of the chain ran by the snapshot's verdict, in the same run.")
