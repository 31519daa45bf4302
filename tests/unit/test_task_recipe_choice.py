"""The offline recipe follows the sampled archetype and verifier pattern, across all six recipes, and a skill's
later variants take a fallback combination instead of repeating a recipe."""

from __future__ import annotations

from skill2env_dagster.planning.catalogue import load_axes
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.pipeline import task_name
from skill2env_dagster.tasks.recipes import RECIPES, pick_recipe, recipe_for
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


def test_every_recipe_is_reachable_and_only_an_api_less_service_combo_is_unsupported():
    cat = load_axes()
    reached = {recipe_for(a, v, api) for a in cat.archetype for v in cat.primary_verifier_pattern
               for api in (True, False)}
    assert reached - {None} == set(RECIPES)
    unsupported = {(a, v) for a in cat.archetype for v in cat.primary_verifier_pattern if not recipe_for(a, v, False)}
    assert unsupported and {a for a, _ in unsupported} == {"service_runtime"}
    assert pick_recipe("service_runtime", False, "exact_state").name in RECIPES


def test_verifier_pattern_decides_when_it_names_a_recipe():
    assert recipe_for("investigate_synthesize", "evidence_traceability", False) == "config_policy_audit"
    assert recipe_for("data_query", "exact_state", False) == "sqlite_questions"
    assert recipe_for("build_to_spec", "exact_state", False) == "docs_tree_to_spec"
    assert recipe_for("creative_build", "rendered_artifact", False) == "docs_tree_to_spec"
    assert recipe_for("transform_convert", "metamorphic_invariants", False) == "csv_summary"
    assert recipe_for("repo_change", "differential_equivalence", False) == "awk_report_fix"


def test_stub_service_only_for_a_skill_that_documents_an_api():
    assert recipe_for("service_runtime", "protocol_conformance", False) is None
    assert recipe_for("data_query", "exact_state", True) == "api_import_stub"
    assert recipe_for("audit_report", "evidence_traceability", True) == "config_policy_audit"


def test_used_recipe_gives_way_to_a_fallback_combo():
    first = pick_recipe("data_query", False, "exact_state")
    assert first.name == "sqlite_questions"
    alt = pick_recipe("data_query", False, "exact_state", [("audit_report", "evidence_traceability")],
                      avoid={"sqlite_questions"})
    assert alt.name == "config_policy_audit"
    same = pick_recipe("data_query", False, "exact_state", [("plan_decide", "exact_state")],
                       avoid={"sqlite_questions"})
    assert same.name == "sqlite_questions"  # no unused alternative: keep the sampled recipe


def test_generator_records_sampled_axes_and_varies_a_skills_recipes(examples_dir):
    skill = skill_from_dir(examples_dir / "nginx-config-audit")
    plans, axes = plans_and_axes(skill)
    wf = {w.name: w for w in plans.workflows}
    gen = OfflineGenerator()
    recipes = []
    for s in axes.samples[:4]:
        d = gen.design(make_context(skill, wf[s.workflow], s, PINS, task_name(skill, s)))
        recipes.append(d.recipe)
        expected = recipe_for(s.archetype, s.primary_verifier_pattern, False)
        fallback_recipes = {recipe_for(c.archetype, c.primary_verifier_pattern, False) for c in s.fallbacks}
        assert d.recipe == expected or d.recipe in fallback_recipes
    assert len(set(recipes)) >= 3, recipes
