"""Real gates in real containers: good tasks retained, one-defect tasks rejected with the right reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from skill2env_dagster.gates.runner import gate_task, run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID, interrupt_gates

pytestmark = pytest.mark.docker
# The fixture tasks are generic data chores (a line count, totals per region) that exercise the other stages; the
# skill-blind battery rejects such tasks by design, so it is off here and tested in test_gates_blind.py.
SETTINGS = GateSettings(concurrency=2, run_id=RUN_ID, blind_baselines=False)
# The Oracle, the no-op and wrong.sh only: for claims about those runs, the build and containment (the later stages
# are tested in test_gates_robustness.py; they would double a gate's cost here).
CORE = SETTINGS.model_copy(update={"answer_key_probe": False, "mutation_testing": False, "run_cheats": False,
                                   "tamper_kit": False})


def _check(report, name):
    return next(c for c in report.checks if c.name == name)


@pytest.mark.parametrize("base", ["good_minimal", "good_python"])
def test_good_task_is_retained(make_task, base):
    report = gate_task(make_task(base=base), SETTINGS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert report.reason is None
    assert all(v == 1.0 for v in report.oracle.values()) and len(report.oracle) == 2
    assert all(v == 0.0 for v in report.nop.values()) and len(report.nop) == 2
    # Every check passes; only the cheats stage (these fixtures ship no solution/cheats/), the battery (off for
    # these chores, see SETTINGS) and the answer-key probe (their solver writes data, no program) are skipped.
    assert {c.name: c.verdict for c in report.checks if c.verdict is not CheckVerdict.PASS} == {
        "cheats": CheckVerdict.SKIPPED, "blind_baselines": CheckVerdict.SKIPPED, "answer_key": CheckVerdict.SKIPPED}


def test_wrong_solution_scores_below_one(make_task):
    report = gate_task(make_task(), CORE)
    assert report.wrong == {"format": 1.0, "correct": 0.0}
    assert _check(report, "wrong_solution").verdict is CheckVerdict.PASS


@pytest.mark.parametrize(
    ("overlay", "reason", "check"),
    [
        ("oracle_partial", ReasonCode.ORACLE_FAILED, "oracle"),
        ("nop_partial", ReasonCode.NOP_FAILED, "nop"),
        ("checks_nothing", ReasonCode.NOP_FAILED, "nop"),
        ("reward_out_of_range", ReasonCode.REWARD_INVALID, "oracle"),
        ("too_many_metrics", ReasonCode.REWARD_INVALID, "oracle"),
        ("reward_missing", ReasonCode.REWARD_MISSING, "oracle"),
        ("reward_empty", ReasonCode.REWARD_EMPTY, "oracle"),
        ("wrong_passes", ReasonCode.WRONG_SOLUTION_PASSED, "wrong_solution"),
        ("prewritten_reward", ReasonCode.ORACLE_FAILED, "oracle"),
    ],
)
def test_one_defect_is_rejected_with_its_reason(make_task, overlay, reason, check):
    report = gate_task(make_task(overlay), SETTINGS)
    assert report.verdict is GateVerdict.REJECTED
    assert report.reason is reason, report.model_dump_json(indent=1)
    assert _check(report, check).verdict is CheckVerdict.FAIL


def test_unchanged_environment_is_not_rebuilt(make_task):
    first = gate_task(make_task(name="a"), CORE)
    second = gate_task(make_task(name="b"), CORE)
    assert first.image == second.image
    assert "cached" in _check(second, "build").evidence


def test_build_failure_is_rejected(make_task):
    task = make_task(name="badbuild")
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN exit 3\n")
    report = gate_task(task, SETTINGS)
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, ReasonCode.BUILD_FAILED)


def test_no_engine_is_infra_failed_not_pass(make_task):
    report = gate_task(make_task(), GateSettings(docker_url="tcp://127.0.0.1:9", run_id=RUN_ID))
    assert report.verdict is GateVerdict.INFRA_FAILED
    assert report.reason is ReasonCode.DOCKER_UNAVAILABLE
    assert _check(report, "runtime").verdict is CheckVerdict.ERROR


@pytest.mark.parametrize(
    ("overlay", "reason"),
    [
        ("hanging", ReasonCode.ORACLE_TIMEOUT),
        ("fork_bomb", ReasonCode.ORACLE_TIMEOUT),
        ("disk_fill", ReasonCode.ORACLE_TIMEOUT),
        ("network", ReasonCode.ORACLE_FAILED),  # the network attempt fails, so the solution writes 0
        ("output_flood", None),  # the capped log stops `yes`; the task then solves and is retained
    ],
)
def test_hostile_solution_is_contained(make_task, docker_client, overlay, reason):
    task = make_task(overlay)
    report = gate_task(task, CORE)
    assert report.reason is reason, report.model_dump_json(indent=1)
    oracle = _check(report, "oracle")
    # Containment, not speed: without an enforced timeout a hanging solution would run until pytest's own
    # limit; the generous slack keeps a loaded machine from failing the test.
    assert oracle.seconds < 4.0 + 60.0, f"oracle verdict took {oracle.seconds:.1f}s (timeout 4 s)"
    # The host is unaffected: the engine still answers and a good task still gates normally.
    assert docker_client.ping()


def test_hostile_tasks_in_parallel_do_not_disturb_a_good_one(make_task):
    tasks = [make_task("fork_bomb"), make_task("output_flood"), make_task(name="good")]
    reports = run_gates(tasks, GateSettings(concurrency=3, run_id=RUN_ID, blind_baselines=False))
    assert [r.reason for r in reports] == [ReasonCode.ORACLE_TIMEOUT, None, None], \
        "\n".join(r.model_dump_json(indent=1) for r in reports if r.reason is not ReasonCode.ORACLE_TIMEOUT)
    assert reports[2].verdict is GateVerdict.RETAINED


def test_cli_contract(make_task, tmp_path):
    good, bad = make_task(base="good_rule", name="good"), make_task("checks_nothing")
    out = tmp_path / "reports.json"
    cmd = [sys.executable, "-c", "from skill2env_dagster.cli import main; raise SystemExit(main())",
           "gate", str(good), str(bad), "--json", str(out), "--concurrency", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    data = json.loads(out.read_text())
    assert [d["verdict"] for d in data] == ["retained", "rejected"]
    assert data[1]["reason"] == "nop_failed"
    assert set(data[0]) >= {"task", "verdict", "reason", "checks", "oracle", "nop", "mutants", "cheats", "tamper",
                            "mutation_testing"}
    assert data[0]["mutation_testing"] == "on" and data[0]["mutants"] and data[0]["tamper"]
    assert all(set(m) >= {"name", "verdict", "metrics", "mean"} for m in data[0]["mutants"] + data[0]["tamper"])
    quick = subprocess.run([*cmd[:4], str(good), "--no-mutants", "--json", str(out)], capture_output=True,
                           text=True, timeout=120)
    assert quick.returncode == 0, quick.stderr
    assert json.loads(out.read_text())[0]["mutation_testing"] == "off"


def test_ctrl_c_removes_every_container(make_task, docker_client):
    task = make_task("hanging")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 4.0", "timeout_sec = 120.0"))
    run_id = f"{RUN_ID}-ctrlc"
    label = {"label": f"skill2env.gate={run_id}"}
    err = interrupt_gates(docker_client, task, run_id, 2, label)
    assert "KeyboardInterrupt" in err
    assert not docker_client.containers.list(all=True, filters=label)
