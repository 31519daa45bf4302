"""The axis catalogues and the difficulty-pattern pool: data files, validated on load.

Both files live in `skill2env_dagster/data/`; their digest feeds the code_version of `axis_samples`, so editing a
weight or adding a pattern marks the samples stale.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from skill2env_dagster.models.axes import Capability, Complexity, Expertise, Tone
from skill2env_dagster.models.labels import check_label

DATA_DIR = Path(__file__).resolve().parent / "data"
AXES_FILE = "axes.yaml"
PATTERNS_FILE = "difficulty_patterns.yaml"
CAPABILITIES: tuple[Capability, ...] = get_args(Capability)
# The world mechanisms the offline shapes realise difficulty patterns with (see difficulty_patterns.yaml).
Effect = Literal["split_sources", "distractor", "encoding", "dependent", "budget", "ordering", "precondition",
                 "validator", "rule_in_docs", "boundary", "multi_rule", "preserve", "corrupted", "partial_prior",
                 "flaky", "layered"]
EFFECTS: tuple[str, ...] = get_args(Effect)


class ComplexityLevel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weight: float = Field(gt=0)
    turns: str


class AxisCatalogue(BaseModel):
    """axes.yaml: value -> weight per axis, plus domain -> preferred personas."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    archetype: dict[str, float]
    primary_verifier_pattern: dict[str, float]
    complexity: dict[Complexity, ComplexityLevel]
    persona: dict[str, float]
    tone: dict[Tone, float]
    expertise: dict[Expertise, float]
    domain_personas: dict[str, list[str]]

    @model_validator(mode="after")
    def _consistent(self) -> AxisCatalogue:
        for axis in ("archetype", "primary_verifier_pattern", "persona"):
            for value, weight in getattr(self, axis).items():
                check_label(value)
                if weight <= 0:
                    raise ValueError(f"{axis}.{value}: weight must be > 0")
        for domain, personas in self.domain_personas.items():
            unknown = set(personas) - set(self.persona)
            if unknown:
                raise ValueError(f"domain_personas.{domain}: unknown personas {sorted(unknown)}")
        if set(self.complexity) != set(get_args(Complexity)):
            raise ValueError("complexity must list exactly easy, medium, hard, complex")
        return self

    def personas_for(self, domain: str) -> list[str]:
        """Preferred personas for a coarse domain (substring match), else the general list."""
        d = (domain or "general").lower()
        for key, personas in self.domain_personas.items():
            if key in d:
                return personas
        return self.domain_personas.get("general", sorted(self.persona)[:3])


class DifficultyPattern(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    dimension: Capability
    weight: float = Field(gt=0)
    archetypes: list[str] = Field(default_factory=list, description="Suited archetypes; empty = any.")
    recipe: str
    effect: Effect = Field(description="The world mechanism that realises the pattern in an offline task.")

    @field_validator("id")
    @classmethod
    def _label(cls, v: str) -> str:
        return check_label(v)

    def suits(self, archetype: str) -> bool:
        return not self.archetypes or archetype in self.archetypes


class PatternPool(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    patterns: list[DifficultyPattern] = Field(min_length=30)

    @model_validator(mode="after")
    def _unique_and_covering(self) -> PatternPool:
        ids = [p.id for p in self.patterns]
        if len(ids) != len(set(ids)):
            raise ValueError("difficulty pattern ids must be unique")
        missing = set(CAPABILITIES) - {p.dimension for p in self.patterns}
        if missing:
            raise ValueError(f"no patterns for dimensions {sorted(missing)}")
        return self

    def by_dimension(self, dimension: str) -> list[DifficultyPattern]:
        return [p for p in self.patterns if p.dimension == dimension]

    def by_id(self, pattern_id: str) -> DifficultyPattern | None:
        return next((p for p in self.patterns if p.id == pattern_id), None)

    def with_effect(self, effect: str) -> list[DifficultyPattern]:
        return [p for p in self.patterns if p.effect == effect]


def _read_yaml(path: Path) -> object:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=8)
def load_axes(folder: Path = DATA_DIR) -> AxisCatalogue:
    return AxisCatalogue.model_validate(_read_yaml(folder / AXES_FILE))


@functools.lru_cache(maxsize=8)
def load_patterns(folder: Path = DATA_DIR) -> PatternPool:
    pool = PatternPool.model_validate(_read_yaml(folder / PATTERNS_FILE))
    archetypes = set(load_axes(folder).archetype)
    for p in pool.patterns:
        unknown = set(p.archetypes) - archetypes
        if unknown:
            raise ValueError(f"pattern {p.id}: unknown archetypes {sorted(unknown)}")
    return pool
