"""Offline recipes, one per archetype/verifier combination, and how a sampled axis combo picks one."""

from __future__ import annotations

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


def pick_recipe(archetype: str, needs_service: bool) -> Recipe:
    """The recipe for a sampled archetype; for a skill whose work goes through an HTTP API, data-shaped archetypes
    become the stub-service task (its API is the world), while audit/repair/build archetypes stay as they are."""
    name = ARCHETYPE_TO_RECIPE.get(archetype)
    if needs_service and name in (None, "csv_summary", "sqlite_questions", "api_import_stub"):
        return RECIPES["api_import_stub"]
    return RECIPES[name or "csv_summary"]


__all__ = ["RECIPES", "Design", "Recipe", "RecipeInput", "pick_recipe"]
