"""The skill's method in the task text: section titles, terms and tools reach the instruction and the rubric,
rule/pitfall sections come first, and nothing longer than a short phrase is copied from SKILL.md."""

from __future__ import annotations

import random
import re

import pytest

from skill2env_dagster.gates.rubric import rubric_problems
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.grounding import ground
from skill2env_dagster.tasks.method import best_practice, extract, instruction_context
from skill2env_dagster.tasks.pipeline import task_name
from tests.unit.task_helpers import ARCHETYPES, plans_and_axes, skill_from_dir

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


@pytest.fixture(scope="module")
def skill(examples_dir):
    return skill_from_dir(examples_dir / "log-triage-awk")


def test_extract_prefers_rule_sections_and_drops_generic_ones(skill):
    m = extract(skill, ground(skill))
    assert set(m.sections[:2]) == {"Triage procedure", "Pitfalls"}  # method-bearing titles first
    assert "Pitfalls" in [t for t, _ in m.rule_sections]
    assert "awk" in m.terms and "jsonl" in m.file_types
    assert all(t == t.lower() for t in m.terms)


def test_tidy_titles_drop_numbering():
    from skill2env_dagster.tasks.method import _tidy_heading
    assert _tidy_heading("Step 2: **Validate** the `schema`") == "Validate the schema"
    assert _tidy_heading("Workflow 1: Fine-tuning") == "Workflow Fine-tuning"


def test_empty_skill_gives_no_context_and_keeps_recipe_bullets(skill):
    bare = skill.model_copy(update={"body": "", "description": "", "name": "x"})
    g = ground(bare)
    g.commands = []
    m = extract(bare, g)
    assert instruction_context(m, random.Random(0)) == ""
    assert best_practice(m, random.Random(0), ["a", "b", "c", "d"]) == ["a", "b", "c"]


def _contexts(skill):
    plans, axes = plans_and_axes(skill, ARCHETYPES)
    wf = {w.name: w for w in plans.workflows}
    return [make_context(skill, wf[s.workflow], s, PINS, task_name(skill, s)) for s in axes.samples]


def test_instruction_and_rubric_carry_the_method(skill):
    gen = OfflineGenerator()
    for c in _contexts(skill):
        text, rubric = gen.instruction(c).lower(), gen.rubric(c)
        assert "triage procedure" in text or "pitfalls" in text, text
        assert rubric_problems(rubric) == []
        practice = rubric.split("## Best-practice", 1)[1].lower()
        assert "pitfalls" in practice or "triage procedure" in practice, rubric


def test_no_long_verbatim_copy_of_skill_md(skill):
    """No 8-word run of SKILL.md prose reappears in the instruction or the rubric."""
    words = re.findall(r"[a-z0-9]+", skill.body.lower())
    grams = {" ".join(words[i:i + 8]) for i in range(len(words) - 7)}
    gen = OfflineGenerator()
    for c in _contexts(skill):
        for text in (gen.instruction(c), gen.rubric(c)):
            tw = re.findall(r"[a-z0-9]+", text.lower())
            assert not any(" ".join(tw[i:i + 8]) in grams for i in range(len(tw) - 7)), text


def test_tools_come_from_commands_not_prose_in_code_blocks(skill):
    body = "## Steps\n\n```\nnot a command, just prose\n```\n\n```bash\n$ jq '.items' data.json\nsudo ffmpeg -i a.mp4\n```\n"
    s = skill.model_copy(update={"body": body})
    assert extract(s, ground(s)).tools == ["jq", "ffmpeg"]
