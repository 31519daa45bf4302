"""Hardening revisions are real on the offline shapes (on the host, no Docker): one round — the next level plus
the pattern the rebuilder picks (an effect planting cases the first world did not have) — keeps the shape, its own
Oracle passes and its no-op fails, and the first version's reference solution (a policy that learned it) scores at
most the too_easy threshold on it. The shapes' reference solutions handle only the patterns their world has."""

from __future__ import annotations

import pytest

from skill2env_dagster.catalogue import load_patterns
from skill2env_dagster.rollouts.hardening import hardening_patterns, revise_sample
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.shapes import SHAPES
from tests.unit.task_helpers import plans_and_axes, skill_from_dir
from tests.unit.task_localrun import build_world, mean, three_trials, trial

PINS = {"python": "p@sha256:" + "0" * 64, "minimal": "m@sha256:" + "0" * 64}
# The shapes whose hardening changes what a solution must read (a record's category moved to a file of its own):
# a complete reference solution of the first version cannot bite on a world that only holds more of the same.
BITING = [("log-triage-awk", "deadline_audit")]


def _plan(skill, plans, sample, name, shape=None):
    wf = next(w for w in plans.workflows if w.name == sample.workflow)
    return OfflineGenerator().plan(make_context(skill, wf, sample, PINS, name, focus=wf.focus, shape=shape))


@pytest.mark.parametrize(("skill_name", "shape"), BITING)
def test_one_round_defeats_the_previous_solution(examples_dir, tmp_path, skill_name, shape):
    skill = skill_from_dir(examples_dir / skill_name)
    plans, axes = plans_and_axes(skill, [shape], "easy")
    # A first version whose sampled pattern plants nothing new (boundary cases are in every world of the shape).
    boundary = sorted(load_patterns().with_effect("boundary"), key=lambda p: p.id)[0]
    axes = axes.model_copy(update={"samples": [axes.samples[0].model_copy(update={
        "difficulty_pattern": boundary.id, "capability_dimension": boundary.dimension})]})
    first = _plan(skill, plans, axes.samples[0], "t")
    effects = {c.effect for c in first.blueprint.challenges}
    realisable = next(s for s in SHAPES if s.name == first.design.shape).effects
    revised, _ = revise_sample(axes.samples[0], hardening_patterns(axes.samples[0], load_patterns(), realisable,
                                                                   effects))
    added = load_patterns().by_id(revised.added_patterns[0])
    assert added is not None and added.effect not in effects
    hard = _plan(skill, plans, revised, "t-h1", first.design.shape)
    assert hard.design.shape == first.design.shape and added.effect in {c.effect for c in hard.blueprint.challenges}
    oracle, nop, _ = three_trials(hard.design, tmp_path / "new")
    assert all(v == 1 for v in oracle.values()) and all(v == 0 for v in nop.values()), (oracle, nop)
    previous = trial(hard.design, build_world(hard.design, tmp_path / "old"), tmp_path / "old", first.design.solve)
    assert mean(previous) <= 0.7, previous
