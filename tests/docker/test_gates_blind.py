"""The skill-blind baseline battery as a gate stage (gates/blind.py, run in the mutation batch): a task a rule
decides survives it; a generic data chore is rejected with its own reason, naming the baseline that passed."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID

pytestmark = pytest.mark.docker


# The battery runs in the mutation batch; the stages after it (cheats, tamper kit, answer-key probe) cannot bear on
# these claims and are tested in test_gates_robustness.py and test_answer_key.py.
SETTINGS = GateSettings(concurrency=2, run_id=RUN_ID, run_cheats=False, tamper_kit=False, answer_key_probe=False)


def _check(report, name):
    return next(c for c in report.checks if c.name == name)


def test_a_rule_decided_task_survives_every_baseline(make_task):
    report = gate_task(make_task(base="good_rule"), SETTINGS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert _check(report, "blind_baselines").verdict is CheckVerdict.PASS
    names = {a.name for a in report.baselines}
    assert {"list_everything", "table_parser", "first_column", "longest_half"} <= names
    assert all(max(a.metrics.values(), default=0) < 0.5 for a in report.baselines)


@pytest.mark.parametrize(("base", "baseline"), [("good_minimal", "count[lines of /app/data.txt]"),
                                                ("good_records", "list_everything")])
def test_a_generic_chore_is_rejected_by_the_battery(make_task, base, baseline):
    report = gate_task(make_task(base=base), SETTINGS)
    assert report.verdict is GateVerdict.REJECTED
    assert report.reason is ReasonCode.SKILL_BLIND_BASELINE_PASSED
    check = _check(report, "blind_baselines")
    assert check.verdict is CheckVerdict.FAIL and baseline in check.evidence
    assert _check(report, "oracle").ok and _check(report, "nop").ok  # only the battery objects


def test_the_battery_can_be_turned_off_and_the_report_says_so(make_task):
    report = gate_task(make_task(base="good_minimal"), SETTINGS.model_copy(update={"blind_baselines": False}))
    assert report.verdict is GateVerdict.RETAINED
    assert _check(report, "blind_baselines").verdict is CheckVerdict.SKIPPED
