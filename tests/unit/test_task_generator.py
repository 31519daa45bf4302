"""Offline generator: deterministic, grounded in the skill, varied in wording, valid rubric and bash."""

from __future__ import annotations

import subprocess

import pytest

from skill2env_dagster.gates.rubric import rubric_problems
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.grounding import ground
from skill2env_dagster.tasks.pipeline import task_name
from tests.unit.task_helpers import ARCHETYPES, plans_and_axes, skill_from_dir

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


@pytest.fixture(scope="module")
def contexts(examples_dir):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill, ARCHETYPES)
    wf = {w.name: w for w in plans.workflows}
    return [make_context(skill, wf[s.workflow], s, PINS, task_name(skill, s)) for s in axes.samples]


def test_six_distinct_archetype_verifier_combos(contexts):
    gen = OfflineGenerator()
    combos = {(gen.environment(c).archetype, gen.environment(c).verifier) for c in contexts}
    assert len(combos) >= 5


def test_deterministic(contexts):
    a, b = OfflineGenerator(), OfflineGenerator()
    for c in contexts:
        assert a.environment(c).files == b.environment(c).files
        assert a.instruction(c) == b.instruction(c)
        assert a.tests(c) == b.tests(c)


def test_instruction_is_prose_of_two_or_three_paragraphs(contexts):
    gen = OfflineGenerator()
    for c in contexts:
        text = gen.instruction(c)
        paras = [p for p in text.split("\n\n") if p.strip()]
        assert 2 <= len(paras) <= 3, text
        assert not any(line.lstrip().startswith(("- ", "1.", "* ")) for line in text.splitlines()), text


def test_grounded_in_skill_vocabulary(contexts):
    gen = OfflineGenerator()
    vocab = set(ground(contexts[0].skill).vocabulary[:40])
    for c in contexts:
        d = gen.design(c)
        world = " ".join(d.env_files.values()) + gen.instruction(c)
        assert sum(w in world for w in vocab) >= 3, d.recipe


def test_tone_changes_wording(contexts):
    gen = OfflineGenerator()
    c = contexts[0]
    texts = set()
    for tone in ("first_person_ask", "imperative_brief", "ticket_snippet", "example_driven"):
        c2 = type(c)(**{**c.__dict__, "sample": c.sample.model_copy(update={"tone": tone})})
        texts.add(gen.instruction(c2))
    assert len(texts) == 4


def test_rubric_shape_and_bash_syntax(contexts, tmp_path):
    gen = OfflineGenerator()
    for c in contexts:
        assert rubric_problems(gen.rubric(c)) == []
        scripts = {**gen.solution(c, ""), "test.sh": gen.tests(c)[0]["test.sh"]}
        for name, text in scripts.items():
            p = tmp_path / name
            p.write_text(text)
            assert subprocess.run(["bash", "-n", str(p)]).returncode == 0, (c.task_name, name)


def test_metrics_count(contexts):
    gen = OfflineGenerator()
    for c in contexts:
        assert 2 <= len(gen.tests(c)[1]) <= 6


def test_api_skill_gets_the_stub(examples_dir):
    skill = skill_from_dir(examples_dir / "inventory-api-client")
    plans, axes = plans_and_axes(skill, ["data_query"])
    ctx = make_context(skill, plans.workflows[0], axes.samples[0], PINS, "t")
    env = OfflineGenerator().environment(ctx)
    assert env.recipe == "api_import_stub"
    assert "/api/v1/reservations" in env.files["stub/contract.json"]
