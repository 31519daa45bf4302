"""Rubric bullets name only what the task puts in play: each bullet is checked against the task's blueprint (its
rules, metrics and deliverables), from the blueprint itself or from task.toml's summary of it; and every task the
offline generator makes from the bundled example skills passes that check."""

from __future__ import annotations

import pytest
import yaml

from skill2env_dagster.gates.rubric_ties import RulesInPlay, off_task, rubric_ties
from skill2env_dagster.models.blueprint import TaskBlueprint
from skill2env_dagster.tasks.blueprints import NoShapeError
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.pipeline import task_name
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}

# The register-repair task of the issue: one rule in play (a token), three metrics.
BLUEPRINT = TaskBlueprint.model_validate({
    "task_name": "t", "skill_id": "s", "workflow": "w", "objective": "repair the register", "shape": "entry_fix",
    "archetype": "repair_debug", "primary_verifier_pattern": "exact_state", "capability_dimension": "skill_usage",
    "axes": {"sampled_archetype": "repair_debug", "sampled_verifier": "exact_state", "sampled_pattern": "p"},
    "predicates": [{"id": "R1", "kind": "replace_token", "subject": "status",
                    "statement": "Net revenue counts paid and refunded orders; cancelled orders contribute nothing.",
                    "params": {"token": "cancelled", "replacement": "void"},
                    "source": {"file": "SKILL.md", "line": 20, "quote": "Net revenue"}}],
    "acceptance": [{"metric": "fixed_rows", "checks": "every breaching row repaired"},
                   {"metric": "untouched_rows", "checks": "other rows byte-identical"}],
    "complexity": {"level": "easy", "files_to_read": 1, "rules_in_play": 1, "dependent_steps": 1, "items": 3},
    "deliverables": ["/app/register/orders.csv"]})

RUBRIC = """## Must-do
- Repair exactly the breaching values
- Write the repaired rows back to orders.csv
- Keep the summary tidy

## Must-avoid
- Avoid this: Region NULL is reported as UNASSIGNED, never dropped.
- Counting `cancelled` orders in net revenue

## Best-practice
- Top products: rank by net units (qty) in the month, ties by name ascending.
- Remember that net revenue counts paid and refunded orders only
"""
SOURCES = {"must-do-1": "metric:fixed_rows", "must-do-2": "llm", "must-do-3": "metric:hidden_wording",
           "must-avoid-1": "SKILL.md:23", "must-avoid-2": "llm", "best-practice-1": "SKILL.md:27",
           "best-practice-2": "llm"}


def test_each_bullet_is_tied_to_a_rule_metric_or_deliverable_in_play():
    ties = {t.id: t for t in rubric_ties(RUBRIC, SOURCES, RulesInPlay.from_blueprint(BLUEPRINT))}
    assert (ties["must_do.1"].tied_to, ties["must_do.1"].how) == ("metric:fixed_rows", "source")
    assert (ties["must_do.2"].tied_to, ties["must_do.2"].how) == ("deliverable:/app/register/orders.csv",
                                                                  "deliverable")
    assert (ties["must_avoid.2"].tied_to, ties["must_avoid.2"].how) == ("R1", "token")
    assert (ties["best_practice.2"].tied_to, ties["best_practice.2"].how) == ("R1", "statement")
    # Off-task: rules from elsewhere in the skill, and a source naming a metric this task does not grade.
    assert [t.id for t in off_task(list(ties.values()))] == ["must_do.3", "must_avoid.1", "best_practice.1"]


def test_task_toml_summary_gives_the_same_verdicts():
    meta = BLUEPRINT.summary()
    play = RulesInPlay.from_metadata(meta)
    assert play is not None and [r.source for r in play.rules] == ["SKILL.md:20"]
    assert play.metrics == ("fixed_rows", "untouched_rows") and play.deliverables == ("/app/register/orders.csv",)
    by_meta = [(t.id, bool(t.tied_to)) for t in rubric_ties(RUBRIC, SOURCES, play)]
    by_blueprint = [(t.id, bool(t.tied_to)) for t in rubric_ties(RUBRIC, SOURCES,
                                                                 RulesInPlay.from_blueprint(BLUEPRINT))]
    assert by_meta == by_blueprint
    assert RulesInPlay.from_metadata({"difficulty": "easy"}) is None  # a task without a blueprint


@pytest.fixture(scope="module")
def example_tasks(examples_dir):
    """Every task the offline generator plans for the bundled example skills: (name, rubric, sources, blueprint)."""
    out = []
    for folder in sorted(p for p in examples_dir.iterdir() if (p / "SKILL.md").is_file()):
        try:
            skill = skill_from_dir(folder)
        except (ValueError, KeyError, yaml.YAMLError):
            continue  # a deliberately malformed example (front matter): the crawl's lenient parser handles it

        plans, axes = plans_and_axes(skill)
        gen = OfflineGenerator()
        for s in axes.samples:
            wf = next(w for w in plans.workflows if w.name == s.workflow)
            ctx = make_context(skill, wf, s, PINS, task_name(skill, s), focus=wf.focus)
            try:
                bp = gen.blueprint(ctx)
            except NoShapeError:
                continue
            out.append((ctx.task_name, gen.rubric(ctx), gen.metadata(ctx)["rubric_sources"], bp))
    return out


def test_every_generated_rubric_bullet_names_a_rule_in_play(example_tasks):
    # The offline generator builds tasks only where a rule decides them (issue 25): four example skills today.
    assert len({name.split("--")[0] for name, *_ in example_tasks}) >= 4 and len(example_tasks) >= 12
    stray = [(name, t.id, t.source, t.text) for name, rubric, sources, bp in example_tasks
             for t in off_task(rubric_ties(rubric, sources, RulesInPlay.from_blueprint(bp)))]
    assert stray == []
