"""Axis samples: the diversification choices for each planned workflow/variant of a skill."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from skill2env_dagster.models.labels import check_label
from skill2env_dagster.models.plan import AxisCombo

SCHEMA_VERSION = 1

Complexity = Literal["easy", "medium", "hard", "complex"]
Tone = Literal["first_person_ask", "imperative_brief", "ticket_snippet", "example_driven"]
Expertise = Literal["novice", "practitioner", "expert"]
Capability = Literal[
    "environment_understanding", "planning", "skill_usage", "long_horizon_consistency", "error_recovery"
]


class AxisSample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant: int = Field(ge=0)
    workflow: str = Field(description="Name of the planned workflow this variant instantiates.")
    archetype: str
    primary_verifier_pattern: str
    complexity: Complexity
    persona: str
    tone: Tone
    expertise: Expertise
    capability_dimension: Capability
    difficulty_pattern: str = Field(description="Id of a pattern from the difficulty-pattern pool.")
    added_patterns: list[str] = Field(default_factory=list, description="Patterns hardening rounds added on top "
                                      "of the sampled one, in round order (each realised when the shape can).")
    from_pool: bool = Field(description="True when the primary combination came from the planner's pool.")
    fallbacks: list[AxisCombo] = Field(default_factory=list)
    seed: int = Field(description="The RNG seed derived from (skill digest, variant, global seed).")

    @field_validator("archetype", "primary_verifier_pattern", "persona", "difficulty_pattern")
    @classmethod
    def _labels(cls, v: str) -> str:
        return check_label(v)


class AxisSampleSet(BaseModel):
    """The `axis_samples` artifact of one skill."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    bundle_digest: str
    global_seed: int
    samples: list[AxisSample] = Field(default_factory=list, description="Empty when the plan has no workflow "
                                      "(no_checkable_rule).")
