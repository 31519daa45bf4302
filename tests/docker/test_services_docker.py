"""Stand-in services (environment/docker-compose.yaml) on the real engine: the service runs beside the trial out of
the agent's reach, the verifier grades what the service recorded, forgeries score 0, and no container is left
behind on any path (a pass, a service that never gets healthy, Ctrl-C)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID, interrupt_gates

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


def test_a_hanging_health_check_is_a_failed_service_not_a_hung_gate(make_task, docker_client):
    task = make_task(base="good_service", name="svc_health_hangs")
    compose = task / "environment" / "docker-compose.yaml"
    compose.write_text(compose.read_text().replace('"/usr/local/lib/ledger/ledger.py", "--check"',
                                                   '"-c", "import time; time.sleep(600)"'))
    run_id = f"{RUN_ID}-svc-hang"
    report = gate_task(task, GateSettings(run_id=run_id, service_start_sec=3.0))
    assert (report.verdict, report.reason) == (GateVerdict.INFRA_FAILED, ReasonCode.SERVICE_FAILED)
    # Given up at the start deadline: the check (ten minutes of sleep) was killed with its service. A gate that
    # waited for the check instead would find the service healthy at its end, or hang until the test's limit.
    assert "not healthy after 3.0s" in next(c for c in report.checks if c.name == "runtime").evidence
    assert _leftovers(docker_client, run_id) == []


def test_ctrl_c_removes_the_services_too(make_task, docker_client):
    task = make_task(base="good_service", name="svc_hanging")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\nwhile :; do :; done\n")
    run_id = f"{RUN_ID}-svc-ctrlc"
    service = {"label": [f"skill2env.gate={run_id}", "skill2env.service=ledger"]}
    err = interrupt_gates(docker_client, task, run_id, 1, service)
    assert "KeyboardInterrupt" in err
    assert _leftovers(docker_client, run_id) == []


def test_openapi_only_skill_gets_a_retained_service_task(docker_client, tmp_path):
    """A skill whose API is documented only by the OpenAPI file it ships (a fixture of ours) gets a service_sync
    task that passes every gate stage; its forgeries score 0 and nothing is left behind."""
    from skill2env_dagster.gates.base_images import load_base_images
    from skill2env_dagster.store import ArtifactStore
    from skill2env_dagster.tasks.generator import OfflineGenerator
    from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill
    from tests.unit.task_helpers import plans_and_axes, skill_from_dir

    run_id = f"{RUN_ID}-svc-openapi"
    settings = GateSettings(run_id=run_id)
    skill = skill_from_dir(Path(__file__).resolve().parents[1] / "fixtures" / "skills" / "parcel-intake")
    plans, axes = plans_and_axes(skill, ["service_sync"])
    result, reports = create_tasks_for_skill(ArtifactStore(tmp_path), skill, plans, axes, OfflineGenerator(),
                                             lambda p: gate_task(p, settings), load_base_images(),
                                             CreationSettings(max_variants=1))
    (b,) = result.bundles
    assert b.status == "retained", (b.reasons, b.evidence)
    r = reports[b.task_name]
    assert all(v == 1.0 for v in r.oracle.values()) and all(v == 0.0 for v in r.nop.values())
    forged = [c for c in r.cheats if "forge" in c.name or "replace" in c.name]
    assert len(forged) == 4 and all(c.mean == 0.0 for c in forged), [(c.name, c.evidence) for c in forged]
    assert "http://127.0.0.1:8631/intake/parcels" in (Path(b.path) / "instruction.md").read_text()
    assert _leftovers(docker_client, run_id) == []


def test_rollout_sandbox_runs_the_service_beside_the_agent(make_task, docker_client):
    """Solver rollouts use the same trial: the agent reaches the service on loopback, sees none of its processes,
    cannot take its port, and is graded on what the service recorded; nothing is left behind."""
    from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits

    run_id = f"{RUN_ID}-svc-rollout"
    factory = DockerSandboxFactory(GateSettings(run_id=run_id), OutputLimits(2000, 2000, 1 << 20),
                                   client=docker_client)
    post = ("python3 -c \"import json, urllib.request as u; [u.urlopen(u.Request('http://127.0.0.1:8099/entries', "
            "json.dumps({'amount': n}).encode(), method='POST')) for n in (5, 7)]\"")
    with factory(make_task(base="good_service")) as sb:
        assert sb.exec(post, 30).exit_code == 0
        ps = sb.exec("grep -l '[l]edger[.]py' /proc/[0-9]*/cmdline 2>/dev/null | wc -l", 30)
        assert ps.head.strip() == b"0"  # the service's process is not in the agent's PID namespace
        taken = sb.exec("python3 -I /usr/local/lib/ledger/ledger.py", 30)
        assert b"Address already in use" in taken.head + taken.tail
        sb.exec("printf '5\\n7\\n11\\n' > /var/lib/ledger/journal.jsonl", 30)  # the agent's copy: never read
        v = sb.verify()
    assert v.metrics == {"recorded": 2 / 3, "exact": 0.0}
    assert _leftovers(docker_client, run_id) == []
