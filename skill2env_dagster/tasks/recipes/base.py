"""What every offline recipe produces (a Design), and the shell pieces their verifiers share.

A recipe computes its whole world up front from a seeded RNG — fixtures, expected answers, planted defects — so
the verifier's expectations are exact and the oracle is derived from the same facts; the builder then releases the
pieces one creation step at a time, in the frozen order.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Literal, Protocol

from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.plan import Workflow
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.tasks.grounding import Grounding

ImageKind = Literal["minimal", "python"]


@dataclass
class Brief:
    """The facts an instruction must convey; wording.py turns them into 2–3 natural paragraphs."""

    topic: str  # short noun phrase, e.g. "the nightly ingest summary"
    situation: str  # one or two sentences: why this matters, in the skill's vocabulary
    ask: str  # what to do, as a verb phrase without a trailing period ("fix the report script ...")
    rules: list[str]  # sentences stating the precise requirements (joined as prose, never a list)
    deliverable: str  # one sentence naming the output path(s) and format
    example: str = ""  # an illustrative line of output, used by the example-driven tone
    novice_hint: str = ""  # extra orientation for novices


@dataclass
class Rubric:
    must_do: list[str]
    must_avoid: list[str]
    best_practice: list[str]

    def render(self) -> str:
        parts = []
        for title, items in (("Must-do", self.must_do), ("Must-avoid", self.must_avoid),
                             ("Best-practice", self.best_practice)):
            parts.append(f"## {title}\n" + "\n".join(f"- {i}" for i in items[:3]))
        return "\n\n".join(parts) + "\n"


@dataclass
class Design:
    """A fully worked-out task; each field is released by exactly one creation step."""

    recipe: str
    archetype: str
    verifier: str
    image: ImageKind
    env_files: dict[str, str]  # paths relative to environment/ (the Dockerfile is assembled separately)
    docker_lines: list[str]  # Dockerfile lines after FROM + WORKDIR
    brief: Brief
    tests: dict[str, str]  # paths relative to tests/; must include test.sh
    metrics: list[str]
    rubric: Rubric
    solve: str
    wrong: str | None
    grounded_on: list[str] = field(default_factory=list)  # which skill facts were used (for metadata/debug)


@dataclass
class RecipeInput:
    skill: SkillRecord
    workflow: Workflow
    sample: AxisSample
    grounding: Grounding
    seed: int

    def rng(self, salt: str) -> random.Random:
        return random.Random(f"{self.seed}:{salt}")

    @property
    def level(self) -> int:
        """0..3 for easy..complex: recipes add planted difficulty with it."""
        return {"easy": 0, "medium": 1, "hard": 2, "complex": 3}[self.sample.complexity]


class Recipe(Protocol):
    name: str
    archetype: str
    verifier: str
    image: ImageKind

    def design(self, inp: RecipeInput) -> Design: ...


def slug(text: str, fallback: str = "item") -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:32].strip("-")
    return s if s and s[0].isalpha() else f"{fallback}-{s}".strip("-")


def shell_words(words: list[str]) -> str:
    return " ".join(words)


def reward_prelude(metrics: list[str]) -> str:
    """Bash header for a minimal-image verifier: metrics start at 0 and reward.json is written on ANY exit."""
    init = "\n".join(f"m_{m}=0" for m in metrics)
    fmt = ", ".join(f'\\"{m}\\": %s' for m in metrics)
    args = " ".join(f'"$m_{m}"' for m in metrics)
    return f"""#!/bin/bash
# Verifier: computes {len(metrics)} named metrics in [0,1] from the final state; fractional credit is computed.
mkdir -p /logs/verifier
{init}
write_reward() {{ printf "{{{fmt}}}\\n" {args} > /logs/verifier/reward.json; }}
trap write_reward EXIT
ratio() {{ awk -v n="$1" -v d="$2" 'BEGIN {{ if (d <= 0) print 0; else printf "%.6f", n / d }}'; }}
"""


def python_reward_prelude(metrics: list[str]) -> str:
    """test.sh for python-image verifiers: run the checker, and fall back to all-zero if it crashes."""
    zeros = ", ".join(f'\\"{m}\\": 0' for m in metrics)
    return f"""#!/bin/bash
# Verifier: /tests/check.py computes {len(metrics)} named metrics in [0,1]; zeros if it cannot run.
mkdir -p /logs/verifier
if ! python3 /tests/check.py > /logs/verifier/check-stdout.txt 2>&1; then
  printf "{{{zeros}}}\\n" > /logs/verifier/reward.json
fi
cat /logs/verifier/check-stdout.txt
"""


PY_CHECK_HEAD = '''import json
import pathlib

REWARD = pathlib.Path("/logs/verifier/reward.json")


def emit(metrics):
    """Write the metrics, clamped to [0, 1]."""
    REWARD.parent.mkdir(parents=True, exist_ok=True)
    REWARD.write_text(json.dumps({k: max(0.0, min(1.0, float(v))) for k, v in metrics.items()}))
    print(json.dumps(metrics))
'''
