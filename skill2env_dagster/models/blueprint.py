"""The task blueprint (seed 003): the author-side contract every artifact of one task is derived from.

A blueprint pins the objective, the challenges (the sampled difficulty patterns, instantiated), the environment
facts, the information boundary (what the instruction states versus what the solver must discover in the world),
the acceptance criteria (each a named metric of the verifier) and the complexity as countable steps. It also holds
the checkable predicates the skill's rules were compiled into, each with the skill line it came from, and records
how the realised axes relate to the sampled ones.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.knowledge import SourceRef

SCHEMA_VERSION = 1

PredicateKind = Literal["limit", "forbid_token", "require_token", "replace_token", "format", "order", "coverage",
                        "lookup", "sections", "default", "service", "deadline", "measure", "command", "sqltype", "flag"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Predicate(_Model):
    """A rule of the skill turned into something a program can check; `params` depend on the kind:

    limit {unit, comparator, value, numeric}; forbid/require_token {token}; replace_token {token, replacement};
    format {convention}; order/coverage {steps, optional}; lookup {columns, key, value, rows}; sections {headings,
    fields}; default {pairs}; service {collection, fields}.
    """

    id: str = Field(pattern=r"^R\d{1,2}$")
    kind: PredicateKind
    subject: str = Field(description="What the rule applies to, in the skill's words.")
    statement: str = Field(description="The rule as the skill states it.")
    params: dict[str, Any] = Field(default_factory=dict)
    exception: str = Field(default="", description="The skill's own exception clause, when it states one.")
    source: SourceRef


    def lines(self) -> list[str]:
        """Every skill line the rule is written on besides its source (`params["sources"]`: a rule quoted over a
        paragraph, or one limit per category on lines of their own), as file:line labels."""
        extra = self.params.get("sources") or []
        return [str(s) for s in extra if str(s) != self.source.label]

    def tokens(self) -> tuple[str, ...]:
        """What the rule names that a rubric bullet may name to be about it: its token and replacement, and the
        `terms` of what it decides (a flag's label words)."""
        named = [self.params.get(k) for k in ("token", "replacement")] + list(self.params.get("terms") or [])
        return tuple(str(t) for t in named if isinstance(t, str) and t)


class Challenge(_Model):
    """One difficulty pattern as it is instantiated in this task."""

    pattern: str
    dimension: str
    effect: str = Field(description="The world mechanism that realises it (split_sources, distractor, …).")
    instantiation: str = Field(description="What it is in this task's world, in one sentence.")
    tested_by: list[str] = Field(default_factory=list, description="Metrics that see whether it was handled.")


class Criterion(_Model):
    metric: str
    checks: str = Field(description="What the metric measures, in one sentence.")
    predicates: list[str] = Field(default_factory=list, description="Predicate ids the metric depends on.")


class InformationBoundary(_Model):
    stated: list[str] = Field(default_factory=list, description="What the instruction says outright.")
    discover: list[str] = Field(default_factory=list, description="What the solver must find or infer in the world.")


class Complexity(_Model):
    """Complexity as steps a solver cannot skip: each level adds some."""

    level: Literal["easy", "medium", "hard", "complex"]
    files_to_read: int = Field(ge=1)
    rules_in_play: int = Field(ge=1)
    dependent_steps: int = Field(ge=1, description="Stages whose input is an earlier stage's output, plus one.")
    items: int = Field(ge=1, description="Records, runs, cases or documents the solver must handle.")

    @property
    def required_steps(self) -> int:
        return self.files_to_read + self.rules_in_play + self.dependent_steps


class AxisRealisation(_Model):
    """Sampled versus realised archetype/verifier and difficulty pattern, and why they differ when they do."""

    sampled_archetype: str
    sampled_verifier: str
    sampled_pattern: str
    fallback_reason: str = Field(default="", description="Empty when the sampled combination was realised.")
    pattern_fallback_reason: str = ""


class TaskBlueprint(_Model):
    schema_version: int = SCHEMA_VERSION
    task_name: str
    skill_id: str
    workflow: str
    objective: str
    shape: str = Field(description="The shape (world + verifier family) that realises the blueprint.")
    archetype: str
    primary_verifier_pattern: str
    capability_dimension: str
    axes: AxisRealisation
    predicates: list[Predicate] = Field(min_length=1)
    challenges: list[Challenge] = Field(default_factory=list)
    environment_facts: list[str] = Field(default_factory=list)
    boundary: InformationBoundary = Field(default_factory=InformationBoundary)
    acceptance: list[Criterion] = Field(default_factory=list)
    complexity: Complexity
    docs: list[str] = Field(default_factory=list, description="Container paths of the skill excerpts shipped.")
    deliverables: list[str] = Field(default_factory=list, description="Container paths the solver must produce.")
    naive_failure: str = Field(default="", description="How a solver who ignores the skill's method gets it wrong "
                               "(stated by the model-backed creator).")

    def summary(self) -> dict[str, Any]:
        """The flat summary task.toml [metadata] carries (TOML-friendly: strings, ints, lists of strings)."""
        return {
            "blueprint_objective": self.objective[:300],
            "blueprint_shape": self.shape,
            "blueprint_patterns": [c.pattern for c in self.challenges],
            "blueprint_effects": [c.effect for c in self.challenges],
            "blueprint_rules": [f"{p.id} {p.kind}: {p.statement[:120]} ({p.source.label})" for p in self.predicates],
            "blueprint_sources": [p.source.label for p in self.predicates],
            "blueprint_rule_lines": [f"{p.id} {src}" for p in self.predicates for src in p.lines()],
            "blueprint_metrics": [c.metric for c in self.acceptance],
            "blueprint_deliverables": list(self.deliverables),
            "blueprint_rule_tokens": [f"{p.id}: {t}" for p in self.predicates for t in p.tokens()],
            "blueprint_required_steps": self.complexity.required_steps,
            "blueprint_files_to_read": self.complexity.files_to_read,
            "blueprint_dependent_steps": self.complexity.dependent_steps,
            "blueprint_fallback_reason": self.axes.fallback_reason,
            "blueprint_pattern_fallback_reason": self.axes.pattern_fallback_reason,
        }
