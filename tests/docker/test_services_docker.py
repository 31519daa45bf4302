"""Stand-in services (environment/docker-compose.yaml) on the real engine: the service runs beside the trial out of
the agent's reach, the verifier grades what the service recorded, forgeries score 0, and no container is left
behind on any path (a pass, a service that never gets healthy, Ctrl-C)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID

pytestmark = pytest.mark.docker


def _leftovers(client, run_id: str) -> list[str]:
    return [c.name for c in client.containers.list(all=True, filters={"label": f"skill2env.gate={run_id}"})]


def test_service_task_is_retained_and_forgeries_score_zero(make_task, docker_client):
    run_id = f"{RUN_ID}-svc"
    report = gate_task(make_task(base="good_service"), GateSettings(run_id=run_id))
    assert report.verdict is GateVerdict.RETAINED, [(c.name, c.evidence) for c in report.checks if not c.ok]
    assert report.oracle == {"recorded": 1.0, "exact": 1.0} and report.nop == {"recorded": 0.0, "exact": 0.0}
    cheats = {c.name: c for c in report.cheats}
    assert set(cheats) == {"cheats/forge_journal.sh", "cheats/replace_service.sh"}
    for c in cheats.values():
        assert c.verdict is CheckVerdict.PASS and c.mean == 0.0, (c.name, c.evidence)
    mutants = next(c for c in report.checks if c.name == "mutants")
    assert "/tests/services/ledger/journal.jsonl" in mutants.evidence  # the service's record is mutation-tested
    assert _leftovers(docker_client, run_id) == []


def test_unhealthy_service_fails_the_trial_and_leaves_nothing(make_task, docker_client):
    run_id = f"{RUN_ID}-svc-bad"
    report = gate_task(make_task("service_unhealthy", base="good_service"),
                       GateSettings(run_id=run_id, service_start_sec=2.0))
    assert report.verdict is GateVerdict.INFRA_FAILED and report.reason is ReasonCode.SERVICE_FAILED
    assert "ledger" in next(c for c in report.checks if c.name == "runtime").evidence
    assert _leftovers(docker_client, run_id) == []


def test_ctrl_c_removes_the_services_too(make_task, docker_client):
    task = make_task(base="good_service", name="svc_hanging")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\nwhile :; do :; done\n")
    run_id = f"{RUN_ID}-svc-ctrlc"
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from skill2env_dagster.gates.runner import run_gates\n"
        "from skill2env_dagster.gates.settings import GateSettings\n"
        f"run_gates([sys.argv[1]], GateSettings(run_id={run_id!r}))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(task)], stderr=subprocess.PIPE, text=True)
    service = {"label": [f"skill2env.gate={run_id}", "skill2env.service=ledger"]}
    deadline = time.monotonic() + 60
    while not docker_client.containers.list(filters=service) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert docker_client.containers.list(filters=service), "the service never started"
    time.sleep(1.0)
    proc.send_signal(2)
    _, err = proc.communicate(timeout=60)
    assert "KeyboardInterrupt" in err
    assert _leftovers(docker_client, run_id) == []
