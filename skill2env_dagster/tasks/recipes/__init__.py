"""Offline recipes, one per archetype/verifier combination, and how a sampled axis combo picks one."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from skill2env_dagster.tasks.recipes.audit import AuditRecipe
from skill2env_dagster.tasks.recipes.base import Design, Recipe, RecipeInput
from skill2env_dagster.tasks.recipes.layout import LayoutRecipe
from skill2env_dagster.tasks.recipes.query import QueryRecipe
from skill2env_dagster.tasks.recipes.repair import RepairRecipe
from skill2env_dagster.tasks.recipes.service import ServiceRecipe
from skill2env_dagster.tasks.recipes.transform import TransformRecipe

RECIPES: dict[str, Recipe] = {r.name: r for r in (
    TransformRecipe(), QueryRecipe(), RepairRecipe(), AuditRecipe(), LayoutRecipe(), ServiceRecipe())}

# Open-vocabulary archetypes mapped onto the recipe that realises them best.
ARCHETYPE_TO_RECIPE: dict[str, str] = {
    "transform_convert": "csv_summary", "edit_preserve": "csv_summary", "optimize_metric": "csv_summary",
    "data_query": "sqlite_questions", "investigate_synthesize": "sqlite_questions", "plan_decide": "sqlite_questions",
    "interactive_qa": "sqlite_questions",
    "repair_debug": "awk_report_fix", "repo_change": "awk_report_fix", "system_build_repair": "awk_report_fix",
    "author_tests": "awk_report_fix",
    "audit_report": "config_policy_audit", "harden_secure": "config_policy_audit",
    "operate_configure": "config_policy_audit",
    "build_to_spec": "docs_tree_to_spec", "author_to_constraints": "docs_tree_to_spec",
    "creative_build": "docs_tree_to_spec",
    "service_runtime": "api_import_stub",
}
# Verifier patterns mapped onto the recipe whose grading is (closest to) that pattern. exact_state is graded by
# several recipes, so it leaves the choice to the archetype.
VERIFIER_TO_RECIPE: dict[str, str] = {
    "regression_suite": "awk_report_fix", "differential_equivalence": "awk_report_fix",
    "evidence_traceability": "config_policy_audit", "adversarial_corpus": "config_policy_audit",
    "protocol_conformance": "api_import_stub", "behavioral_simulation": "api_import_stub",
    "metamorphic_invariants": "csv_summary", "metric_threshold": "csv_summary",
    "rendered_artifact": "docs_tree_to_spec",
}
_DATA_RECIPES = (None, "csv_summary", "sqlite_questions", "api_import_stub")


def supported(recipe: str, needs_service: bool) -> bool:
    """Whether the skill's content can ground the recipe: a stub API only for a skill that documents one (every
    other recipe draws on the skill's tables, headings or vocabulary, which every eligible skill has)."""
    return recipe != "api_import_stub" or needs_service


def recipe_for(archetype: str, verifier: str, needs_service: bool) -> str | None:
    """The recipe a sampled (archetype, verifier) combination realises, or None when the skill cannot support it.

    The verifier pattern decides when it names a supported recipe (it is what the grading is); otherwise the
    archetype does. A skill whose work goes through an HTTP API turns data-shaped archetypes into the
    stub-service task (its API is the world); audit/repair/build archetypes stay what they are.
    """
    by_arch, by_verifier = ARCHETYPE_TO_RECIPE.get(archetype), VERIFIER_TO_RECIPE.get(verifier)
    if needs_service and by_arch in _DATA_RECIPES and by_verifier in _DATA_RECIPES:
        return "api_import_stub"
    for name in (by_verifier, by_arch):
        if name and supported(name, needs_service):
            return name
    return None


def pick_recipe(archetype: str, needs_service: bool, verifier: str = "",
                fallbacks: Sequence[tuple[str, str]] = (), avoid: Collection[str] = ()) -> Recipe:
    """The recipe for a sampled combination; when it was already used for this skill (`avoid`), the first
    fallback combination naming a supported, unused recipe wins, so one skill's variants differ in kind."""
    first = recipe_for(archetype, verifier, needs_service) or "csv_summary"
    if first in avoid:
        for arch, ver in fallbacks:
            alt = recipe_for(arch, ver, needs_service)
            if alt and alt not in avoid:
                return RECIPES[alt]
    return RECIPES[first]


__all__ = ["RECIPES", "Design", "Recipe", "RecipeInput", "pick_recipe", "recipe_for", "supported"]
