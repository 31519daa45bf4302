"""A Docker engine restart mid-gate is an infrastructure failure (infra_failed, docker_unavailable), never a
rejected task; the gate run again afterwards retains the task. The engine is a private dockerd of the test's own
(tests/support/engine.py), never the machine's shared one; the trigger is the engine's own event stream (the
Oracle's solve.sh starting), not a delay."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.runner import ENGINE_CHECK, gate_task
from skill2env_dagster.gates.sandbox import Sandbox
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID
from tests.support.engine import EngineUnavailableError, PrivateEngine, RestartOnExec

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def engine(docker_client):
    """A private engine (short root under /tmp: unix socket paths are limited to 108 bytes), removed at the end."""
    eng = PrivateEngine(Path(tempfile.mkdtemp(prefix="s2e-eng-", dir="/tmp")))
    try:
        eng.start()
    except EngineUnavailableError as e:
        if os.environ.get("S2E_REQUIRE_DOCKER") == "1":
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))
    try:
        yield eng
    finally:
        eng.remove()


def _settings(engine: PrivateEngine) -> GateSettings:
    return GateSettings(docker_url=engine.url, run_id=RUN_ID, blind_baselines=False, concurrency=1)


def _left(engine: PrivateEngine) -> list:
    return engine.client().containers.list(all=True, filters={"label": f"{ctr.LABEL}={RUN_ID}"})


def _slow_oracle(task: Path, seconds: float) -> None:
    """The Oracle sleeps before its work, so the restart lands while its exec is in flight."""
    solve = task / "solution" / "solve.sh"
    body = solve.read_text().replace("set -euo pipefail\n", f"set -euo pipefail\nsleep {seconds}\n", 1)
    solve.write_text(body)


def test_engine_restart_mid_oracle_is_infra_failed_then_retained(engine, make_task):
    task = make_task()
    _slow_oracle(task, 2)
    settings = _settings(engine)
    with RestartOnExec(engine, "solve.sh") as trigger:
        report = gate_task(task, settings)
    assert trigger.restarts == 1, trigger.error
    assert (report.verdict, report.reason) == (GateVerdict.INFRA_FAILED, ReasonCode.DOCKER_UNAVAILABLE), \
        report.model_dump_json(indent=1)
    assert not [c for c in report.checks if c.verdict is CheckVerdict.FAIL and c.name != "oracle"]
    for box in _left(engine):  # the engine stopped them; a retry would start from fresh containers anyway
        box.remove(force=True)
    # The retry, as the step's RetryPolicy makes it: infra_failed again while the engine settles, never rejected.
    for _ in range(3):
        again = gate_task(task, settings)
        assert again.verdict is not GateVerdict.REJECTED, again.model_dump_json(indent=1)
        if again.verdict is GateVerdict.RETAINED:
            break
        assert again.reason is ReasonCode.DOCKER_UNAVAILABLE, again.model_dump_json(indent=1)
    assert again.verdict is GateVerdict.RETAINED, again.model_dump_json(indent=1)
    assert not _left(engine)


def test_engine_restart_between_calls_is_infra_failed(engine, make_task, monkeypatch):
    """The other timing: the engine restarts after the Oracle's solve.sh and answers again by the verify step, so
    the Oracle's container merely looks dead (409 'is not running') and every later stage runs fine on the restarted
    engine. Without the witness that read as oracle_failed: a rejected task."""
    real_verify = Sandbox.verify
    restarts = []

    def verify_after_a_restart(self, *args, **kwargs):
        if not restarts:
            engine.restart()
            restarts.append(1)
        return real_verify(self, *args, **kwargs)

    monkeypatch.setattr(Sandbox, "verify", verify_after_a_restart)
    report = gate_task(make_task(), _settings(engine))
    assert restarts
    assert next(c for c in report.checks if c.name == "oracle").verdict is CheckVerdict.FAIL  # "died": the engine's
    assert (report.verdict, report.reason) == (GateVerdict.INFRA_FAILED, ReasonCode.DOCKER_UNAVAILABLE), \
        report.model_dump_json(indent=1)
    assert next(c for c in report.checks if c.name == ENGINE_CHECK).verdict is CheckVerdict.ERROR
    for box in _left(engine):
        box.remove(force=True)


def test_witness_sees_a_restart_between_calls(engine):
    client = engine.client()
    image = load_base_images()["minimal"]
    client.images.pull(image)
    settings = _settings(engine)
    with ctr.Witness(client, image, settings) as witness:
        assert witness.intact()
        engine.restart()
        assert not witness.intact()
    assert not _left(engine)


def test_a_task_that_kills_its_own_container_is_still_rejected(engine, make_task):
    """The witness only clears the engine: an Oracle that kills its container's keeper is rejected as before."""
    task = make_task()
    solve = task / "solution" / "solve.sh"
    solve.write_text("#!/bin/bash\nkill -9 $(cat /proc/1/task/1/children)\nsleep 5\n")
    report = gate_task(task, _settings(engine))
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, ReasonCode.ORACLE_FAILED), \
        report.model_dump_json(indent=1)
    assert not _left(engine)


def test_run_retries_the_step_the_engine_restarted_under(engine, examples_dir, tmp_path):
    """`skill2env run` on a skill, its gates on the private engine, which restarts while the first Oracle runs: the
    gate is infra_failed, task_bundles fails with docker_unavailable and Dagster retries the step in place
    (INFRA_RETRY); the run completes with the task retained, and no task anywhere is rejected for the engine."""
    import dagster as dg

    from skill2env_dagster.artifacts import TASKS
    from skill2env_dagster.cli.runner.home import RunHome
    from skill2env_dagster.store import ArtifactStore
    from tests.docker.test_run import _assert_exported, _run

    hub = tmp_path / "hub"
    shutil.copytree(examples_dir / "log-triage-awk", hub / "log-triage-awk")
    out = tmp_path / "out"
    with RestartOnExec(engine, "solve.sh") as trigger:
        funnel = _run(str(hub), out, DOCKER_HOST=engine.url)
    assert trigger.restarts == 1, trigger.error
    _assert_exported(funnel, out)
    bundles = ArtifactStore(out / "artifacts").load(TASKS, "hub__log-triage-awk").bundles
    assert all(b.status == "retained" or ReasonCode.DOCKER_UNAVAILABLE not in b.reasons for b in bundles)
    assert not [b for b in bundles if b.status == "error"]
    with dg.DagsterInstance.from_config(str(RunHome(out.resolve()).dagster_home)) as instance:
        steps = [rec.event_log_entry.step_key for run in instance.get_runs()
                 for rec in instance.get_records_for_run(
                     run_id=run.run_id, of_type=dg.DagsterEventType.STEP_UP_FOR_RETRY).records]
    assert steps == ["task_bundles"], steps
