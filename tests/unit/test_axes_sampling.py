"""Axis catalogues and seeded sampling: reproducible, stratified, fallbacks recorded, coverage table."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from skill2env_dagster.catalogue import CAPABILITIES, load_axes, load_patterns
from skill2env_dagster.models.plan import AxisCombo, WorkflowPlanSet
from skill2env_dagster.planning import coverage_table, derive_seed, plan_offline, sample_axes
from skill2env_dagster.planning.axes import AXES, stratified_levels
from tests.unit.test_planning_offline import CSV_SKILL, make_record


@pytest.fixture()
def plans(tmp_path) -> WorkflowPlanSet:
    d = tmp_path / "invoice-check"
    (d / "assets").mkdir(parents=True)
    (d / "SKILL.md").write_text(CSV_SKILL)
    (d / "assets" / "invoices.csv").write_text("invoice_id,amount\n1,2\n")
    return plan_offline(make_record(d), prompt_version="v")


def test_pattern_pool_covers_five_dimensions():
    pool = load_patterns()
    assert len(pool.patterns) >= 30
    counts = Counter(p.dimension for p in pool.patterns)
    assert set(counts) == set(CAPABILITIES) and min(counts.values()) >= 5
    cat = load_axes()
    assert sum(c.weight for c in cat.complexity.values()) == 10 and cat.tone["first_person_ask"] == 5


def test_same_inputs_same_sample(plans):
    a = sample_axes(plans, global_seed=7, variants_per_workflow=2)
    b = sample_axes(plans, global_seed=7, variants_per_workflow=2)
    assert a == b
    c = sample_axes(plans, global_seed=8, variants_per_workflow=2)
    assert [s.seed for s in a.samples] != [s.seed for s in c.samples]
    assert a.samples[1].seed == derive_seed(plans.bundle_digest, 1, 7)


def test_complexity_is_stratified(plans):
    s = sample_axes(plans, global_seed=1, variants_per_workflow=2)
    n = len(s.samples)
    counts = Counter(x.complexity for x in s.samples)
    weights = {k: v.weight for k, v in load_axes().complexity.items()}
    for level, w in weights.items():
        assert abs(counts[level] - n * w / 10) < 1  # largest-remainder: within one of the exact share


def test_stratified_levels_exact_for_ten():
    levels = stratified_levels(10, {"easy": 2, "medium": 3, "hard": 3, "complex": 2}, random.Random(0))
    assert Counter(levels) == {"easy": 2, "medium": 3, "hard": 3, "complex": 2}


def test_primary_from_pool_and_fallbacks_recorded(plans):
    s = sample_axes(plans, global_seed=0)
    for sample, wf in zip(s.samples, plans.workflows, strict=False):
        combo = AxisCombo(archetype=sample.archetype, primary_verifier_pattern=sample.primary_verifier_pattern,
                          persona=sample.persona)
        assert sample.from_pool and combo in wf.axis_pool
        assert len(sample.fallbacks) == len(wf.axis_pool) - 1 and combo not in sample.fallbacks
        pattern = next(p for p in load_patterns().patterns if p.id == sample.difficulty_pattern)
        assert pattern.dimension == sample.capability_dimension


def test_unknown_verifier_in_pool_falls_back_to_catalogue(plans):
    bad = AxisCombo(archetype="odd_archetype", primary_verifier_pattern="vibes", persona="wizard")
    wf = plans.workflows[0].model_copy(update={"axis_pool": [bad]})
    s = sample_axes(plans.model_copy(update={"workflows": [wf]}), global_seed=0)
    sample = s.samples[0]
    assert not sample.from_pool and sample.fallbacks == [bad]
    assert sample.primary_verifier_pattern in load_axes().primary_verifier_pattern
    assert sample.archetype == "odd_archetype"  # open vocabulary kept


def test_coverage_table_counts_and_shows_gaps(plans):
    sets = [sample_axes(plans, global_seed=g) for g in range(3)]
    table = coverage_table(sets)
    assert set(table) == set(AXES)
    total = sum(len(s.samples) for s in sets)
    for axis in AXES:
        assert sum(table[axis].values()) == total
    assert set(load_axes().persona) <= set(table["persona"])  # zero rows listed
    assert len(table["difficulty_pattern"]) >= 30
