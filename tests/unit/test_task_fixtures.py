"""Every recipe's generated data exercises the rule its wrong.sh ignores: on the host, the oracle scores 1, the
no-op 0, and wrong.sh below 1 — for each complexity level and for several skills and seeds (the sqlite-sales-report
demo once shipped a CSV with no void row, so the wrong solution matched the right answer)."""

from __future__ import annotations

import random

import pytest

from skill2env_dagster.tasks.grounding import ground
from skill2env_dagster.tasks.recipes import RECIPES, RecipeInput
from skill2env_dagster.tasks.recipes.fixtures import make_records
from skill2env_dagster.tasks.recipes.service import ServiceRecipe
from skill2env_dagster.tasks.recipes.transform import _messy
from tests.unit.task_helpers import plans_and_axes, skill_from_dir
from tests.unit.task_localrun import three_trials

SKILLS = ["sqlite-sales-report", "log-triage-awk", "csv-dedupe", "nginx-config-audit", "inventory-api-client"]
LEVELS = ["easy", "medium", "hard", "complex"]
# The demo's seed for sqlite-sales-report v1: with the old fixtures its CSV had no void row at all.
DEMO_SEED = 66077844083384
HOST_RECIPES = ["csv_summary", "sqlite_questions", "awk_report_fix", "config_policy_audit", "docs_tree_to_spec"]


def _inputs(examples_dir, skill_name: str, complexity: str, seeds: list[int]) -> list[RecipeInput]:
    skill = skill_from_dir(examples_dir / skill_name)
    plans, axes = plans_and_axes(skill)
    sample = axes.samples[0].model_copy(update={"complexity": complexity})
    wf = next(w for w in plans.workflows if w.name == sample.workflow)
    g = ground(skill)
    return [RecipeInput(skill, wf, sample, g, seed) for seed in seeds]


@pytest.mark.parametrize("recipe", HOST_RECIPES)
@pytest.mark.parametrize("complexity", LEVELS)
def test_oracle_full_nop_zero_wrong_below_one(examples_dir, tmp_path, recipe, complexity):
    seeds = [DEMO_SEED] + random.Random(f"{recipe}:{complexity}").sample(range(10**9), 1)
    skill = SKILLS[(HOST_RECIPES.index(recipe) + LEVELS.index(complexity)) % len(SKILLS)]
    for i, inp in enumerate(_inputs(examples_dir, skill, complexity, seeds)):
        design = RECIPES[recipe].design(inp)
        oracle, nop, wrong = three_trials(design, tmp_path / str(i))
        assert oracle and all(v == 1 for v in oracle.values()), (skill, inp.seed, oracle)
        assert nop and all(v == 0 for v in nop.values()), (skill, inp.seed, nop)
        assert wrong and not all(v == 1 for v in wrong.values()), (skill, inp.seed, wrong)


def test_records_always_hold_void_and_ok_rows(examples_dir):
    for inp in _inputs(examples_dir, "sqlite-sales-report", "easy", [DEMO_SEED, *range(300)]):
        statuses = {r[4] for r in make_records(inp, 10, "transform").rows}
        assert statuses == {"ok", "void"}, inp.seed


@pytest.mark.parametrize("complexity", LEVELS)
def test_transform_rules_each_hit_an_ok_row(examples_dir, complexity):
    level = LEVELS.index(complexity)
    for inp in _inputs(examples_dir, "log-triage-awk", complexity, list(range(150))):
        rec = make_records(inp, 10 + 4 * level, "transform")
        lines = _messy(rec, level, inp)
        ok_ids = {r[0] for r in rec.rows if r[4] == "ok"}
        untidy = [ln for ln in lines if ln[0] in ok_ids and ln[1] != ln[1].strip().lower()]
        repeated = len(lines) - len({ln[0] for ln in lines})
        assert bool(untidy) == (level >= 1), inp.seed
        assert bool(repeated) == (level >= 2), inp.seed


@pytest.mark.parametrize("complexity", LEVELS)
def test_service_import_exercises_archive_duplicate_and_trim_rules(examples_dir, complexity):
    level = LEVELS.index(complexity)
    for skill in ("inventory-api-client", "csv-dedupe"):
        for inp in _inputs(examples_dir, skill, complexity, list(range(40))):
            d = ServiceRecipe().design(inp)
            rows = d.env_files["app/inbox/import.csv"].splitlines()[1:]
            statuses = [r.rsplit(",", 1)[1].strip() for r in rows]
            assert "archived" in statuses and "new" in statuses, (skill, inp.seed)
            padded = [r for r, s in zip(rows, statuses) if s == "new" and any(c != c.strip() for c in r.split(","))]
            assert bool(padded) == (level >= 1), (skill, inp.seed)
