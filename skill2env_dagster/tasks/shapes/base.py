"""What a shape is given (ShapeInput) and what it produces (Design): one task's world, instruction slots,
verifier, rubric, solution, wrong solution and cheats, all derived from the blueprint's decisions.

A shape is a world + verifier family that realises one archetype/verifier combination from one family of the
skill's predicates (entries, procedures, tables, templates, defaults, a documented service). The blueprint
builder chooses the shape, the predicates in play and the difficulty effects; the shape instantiates them.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.blueprint import Challenge, Complexity, Criterion, InformationBoundary, Predicate
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.plan import Workflow
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.tasks.compose.docs import SkillText
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.rubric import RubricSpec
from skill2env_dagster.tasks.verify.checkpy import CheckScript, test_sh

LEVELS = ("easy", "medium", "hard", "complex")


class ShapeError(ValueError):
    """The shape cannot realise this blueprint with this skill's predicates (the builder tries another)."""


@dataclass
class ShapeInput:
    skill: SkillRecord
    knowledge: SkillKnowledge
    workflow: Workflow
    sample: AxisSample
    preds: list[Predicate]
    effects: list[str]
    seed: int
    vocabulary: list[str]
    text: SkillText

    def rng(self, salt: str) -> random.Random:
        return random.Random(f"{self.seed}:{salt}")

    @property
    def level(self) -> int:
        return LEVELS.index(self.sample.complexity)

    def has(self, effect: str) -> bool:
        return effect in self.effects

    @property
    def topic(self) -> str:
        """A short noun for the skill's subject, from its name ('csv dedupe', 'ticket triage')."""
        name = re.sub(r"[^a-z0-9]+", " ", (self.skill.name or self.skill.skill_id).lower()).strip()
        return " ".join(name.split()[:3]) or "team"

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.topic).strip("-") or "team"


@dataclass
class Design:
    """A fully worked-out task; each part is released by exactly one creation step."""

    shape: str
    archetype: str
    verifier: str
    objective: str
    env_files: dict[str, str | bytes]  # relative to environment/ ("app/..." lands in /app/...)
    docker_lines: list[str]
    slots: Slots
    check: CheckScript
    expected: dict[str, Any]
    rubric: RubricSpec
    solve: str
    wrong: str | None
    cheats: dict[str, str]
    complexity: Complexity
    challenges: list[Challenge]
    facts: list[str] = field(default_factory=list)
    boundary: InformationBoundary = field(default_factory=InformationBoundary)
    docs: list[str] = field(default_factory=list)
    deliverables: list[str] = field(default_factory=list)
    hidden_tests: dict[str, str] = field(default_factory=dict)  # extra files under tests/ (hidden inputs)
    image: str = "python"
    extra_dirs: list[str] = field(default_factory=list)  # container folders the Dockerfile creates
    # Every rule and convention the verifier grades, as the instruction must state it word for word (the skill's
    # quoted sentences, the boundary, unit and scope conventions, the output layout); checked when the instruction
    # is written (tasks/generator.py) and by the tests.
    stated: list[str] = field(default_factory=list)

    def tests(self) -> dict[str, str]:
        return {"test.sh": test_sh(self.check.names), "check.py": self.check.render(),
                "expected.json": json.dumps(self.expected, indent=1, sort_keys=True) + "\n", **self.hidden_tests}

    def criteria(self) -> list[Criterion]:
        return [Criterion(metric=m.name, checks=m.checks, predicates=m.predicates) for m in self.check.metrics]


class Shape(Protocol):
    name: str
    archetype: str
    verifier: str
    family: str
    kinds: frozenset[str]  # predicate kinds it can build a world from
    effects: frozenset[str]  # difficulty effects it can realise

    def design(self, inp: ShapeInput) -> Design: ...


def rules_for_level(level: int, available: int) -> int:
    """How many of the skill's predicates a task puts in play: more with each level, as far as the skill has them."""
    return max(1, min(available, (1, 2, 3, 4)[level]))


def solver_script(program: str) -> str:
    """solve.sh: a Python program run with the image's interpreter (the program reads the world itself)."""
    return "#!/bin/bash\nset -euo pipefail\npython3 - <<'SOLVER_EOF'\n" + program.strip("\n") + "\nSOLVER_EOF\n"
