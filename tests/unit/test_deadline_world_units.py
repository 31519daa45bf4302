"""Deadline worlds whose limits count business days or calendar months (tasks/worlds/deadlines.py): the unit
arithmetic a naive reading gets wrong, and worlds that plant its traps."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from skill2env_dagster.tasks.worlds.deadlines import CONDITION_OF, Limit, add, build, span_minutes

FRIDAY = datetime(2026, 3, 13, 16, 0, tzinfo=UTC)


@pytest.mark.parametrize(("start", "amount", "unit", "due"), [
    (FRIDAY, 1, "business_days", datetime(2026, 3, 16, 16, 0, tzinfo=UTC)),  # over the weekend to Monday
    (FRIDAY, 5, "business_days", datetime(2026, 3, 20, 16, 0, tzinfo=UTC)),
    (datetime(2026, 3, 14, 9, 0, tzinfo=UTC), 1, "business_days", datetime(2026, 3, 16, 9, 0, tzinfo=UTC)),  # Sat
    (datetime(2026, 1, 31, 12, 0, tzinfo=UTC), 1, "months", datetime(2026, 2, 28, 12, 0, tzinfo=UTC)),  # short
    (datetime(2026, 11, 30, 12, 0, tzinfo=UTC), 3, "months", datetime(2027, 2, 28, 12, 0, tzinfo=UTC)),  # new year
    (datetime(2026, 3, 10, 12, 0, tzinfo=UTC), 12, "months", datetime(2027, 3, 10, 12, 0, tzinfo=UTC)),
    (FRIDAY, 36, "hours", datetime(2026, 3, 15, 4, 0, tzinfo=UTC)),  # fixed units count the weekend
])
def test_add_counts_each_unit_as_the_rule_means_it(start, amount, unit, due):
    assert add(start, amount, unit) == due


def test_an_unknown_unit_is_refused():
    with pytest.raises(ValueError, match="unknown unit fortnights"):
        add(FRIDAY, 1, "fortnights")


def test_a_limits_planting_length_is_its_shortest():
    assert span_minutes(2, "business_days") == 2 * 1440
    assert span_minutes(1, "months") == 28 * 1440
    assert span_minutes(3, "hours") == 180


def test_an_extension_adds_its_own_unit_only_when_granted():
    lim = Limit("change", 2, "business_days", ext_amount=1, ext_unit="months")
    assert lim.due(FRIDAY, False) == datetime(2026, 3, 17, 16, 0, tzinfo=UTC)
    assert lim.due(FRIDAY, True) == datetime(2026, 4, 17, 16, 0, tzinfo=UTC)


@pytest.mark.parametrize("seed", range(6))
def test_worlds_over_business_days_and_months_plant_both_unit_traps(seed):
    limits = {"complaint": Limit("complaint", 5, "business_days"), "audit": Limit("audit", 1, "months"),
              "incident": Limit("incident", 48, "hours")}
    world = build(limits, 18, random.Random(seed), "CASE")  # build() re-checks every record against its stratum
    conditions = world.conditions()
    assert world.records and CONDITION_OF["weekend_trap"] in conditions and CONDITION_OF["month_end_trap"] in conditions
    weekend = [r for r in world.records if r.stratum == "weekend_trap"]
    # counted in calendar days the Friday start is late; in business days it is on time
    assert all(r.start is not None and r.start.weekday() == 4 and not world.late(r) for r in weekend)
    month_end = [r for r in world.records if r.stratum == "month_end_trap"]
    assert all(r.start is not None and r.start.day == 31 and world.late(r) for r in month_end)
    assert set(world.expected()) == {r.id for r in world.records if world.late(r)}
