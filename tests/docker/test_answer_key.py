"""The `answer_key` stage (gates/answer_key.py) and the helper that fixes what it finds (gates/solver_run.py).

`good_script` grades the solver's script on hidden cases. Its old verifier (the overlay `answer_key_readable`)
ran the script as root with /tests readable, so a script that looks its input up among /tests/cases/*.csv and
prints the matching .out scored 0.67: the gate without this stage retained that task (blind review of creator
run 3 found the same hole in task 09). The stage plants a probe into the solver's programs and rejects the task;
the fixed verifier runs the script through /tests/run_as_solver and passes, and the key reader scores 0 there.
"""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID

pytestmark = pytest.mark.docker
SETTINGS = GateSettings(concurrency=2, run_id=RUN_ID, blind_baselines=False)
KEY_READER = """#!/bin/bash
# Shortcut: the script finds its input among the hidden cases and prints the expected output next to it.
cat > /app/bin/region-totals <<'SH'
#!/bin/bash
for f in /tests/cases/*.csv; do cmp -s "$f" "$1" && cat "${f%.csv}.out"; done
exit 0
SH
chmod +x /app/bin/region-totals
"""


def _check(report, name):
    return next(c for c in report.checks if c.name == name)


def _add_key_reader(task) -> None:
    path = task / "solution" / "cheats" / "read_key.sh"
    path.write_text(KEY_READER)
    path.chmod(0o755)


def test_a_verifier_running_solver_code_that_can_read_the_key_is_rejected(make_task):
    report = gate_task(make_task("answer_key_readable", base="good_script"), SETTINGS)
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, ReasonCode.ANSWER_KEY_READABLE), \
        report.model_dump_json(indent=1)
    check = _check(report, "answer_key")
    assert check.verdict is CheckVerdict.FAIL
    assert "/app/bin/region-totals read /tests/" in check.evidence, check.evidence
    assert [c.name for c in report.checks if c.verdict is CheckVerdict.FAIL] == ["answer_key"]
    (probe,) = [a for a in report.tamper if a.name == "answer_key"]
    assert probe.reason is ReasonCode.ANSWER_KEY_READABLE


def test_the_gate_without_the_stage_retained_it_and_the_key_reader_beats_that_verifier(make_task):
    """What the stage closes: without it the task is retained, and a program that reads the key earns > 0.5."""
    off = SETTINGS.model_copy(update={"answer_key_probe": False})
    assert gate_task(make_task("answer_key_readable", base="good_script", name="old-gate"), off).verdict \
        is GateVerdict.RETAINED
    task = make_task("answer_key_readable", base="good_script", name="old-gate-key-reader")
    _add_key_reader(task)
    report = gate_task(task, off)
    (cheat,) = [a for a in report.cheats if a.name == "cheats/read_key.sh"]
    assert cheat.metrics["hidden"] == 1.0 and cheat.verdict is CheckVerdict.FAIL, cheat


def test_a_verifier_using_run_as_solver_passes_and_the_key_reader_scores_0(make_task):
    task = make_task(base="good_script", name="helper")
    _add_key_reader(task)
    report = gate_task(task, SETTINGS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    check = _check(report, "answer_key")
    assert check.verdict is CheckVerdict.PASS and "no probe read /tests or /solution" in check.evidence, check
    assert "/app/bin/region-totals" in check.evidence
    (cheat,) = [a for a in report.cheats if a.name == "cheats/read_key.sh"]
    assert cheat.metrics == {"sample": 0.0, "hidden": 0.0, "header_only": 0.0}, cheat
    assert report.oracle == {"sample": 1.0, "hidden": 1.0, "header_only": 1.0}


def test_a_task_whose_verifier_runs_no_solver_program_skips_the_probe_or_passes(make_task):
    report = gate_task(make_task(base="good_python", name="no-program"), SETTINGS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert _check(report, "answer_key").verdict in (CheckVerdict.SKIPPED, CheckVerdict.PASS)
