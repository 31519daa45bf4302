"""The shipped instance configs load in Dagster itself and say what docs/operations.md promises."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.instance.config import dagster_instance_config

pytestmark = pytest.mark.dagster

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "deploy" / "dagster.yaml"
SCALE_OUT = REPO / "deploy" / "scale-out" / "dagster.yaml"


@pytest.fixture
def local_instance(tmp_path: Path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(LOCAL, home / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        yield instance


def test_local_retries_only_infrastructure_failures(local_instance: dg.DagsterInstance) -> None:
    assert local_instance.run_retries_enabled
    assert local_instance.run_retries_max_retries == 2
    # A failed asset step is never re-run by the run-retry machinery: verdicts are values, not failures.
    assert local_instance.run_retries_retry_on_asset_or_op_failure is False
    assert local_instance.run_monitoring_enabled


def test_local_pools_bound_llm_and_docker(local_instance: dg.DagsterInstance) -> None:
    pools = local_instance.get_concurrency_config().pool_config
    assert pools.default_pool_limit == 2
    assert str(pools.pool_granularity.value).lower() == "op"


def test_local_python_logs_reach_the_event_log(local_instance: dg.DagsterInstance) -> None:
    """A progress line logged by our package (not via context.log) must show up in the run's event log."""

    @dg.asset
    def progress_probe() -> None:
        logging.getLogger("skill2env_dagster.ops_probe").info("skill demo-skill: built 3 tasks")

    result = dg.materialize([progress_probe], instance=local_instance)
    assert result.success
    messages = [e.message for e in local_instance.all_logs(result.run_id)]
    assert any("skill demo-skill: built 3 tasks" in (m or "") for m in messages)


def test_scale_out_config_validates_against_dagster_schema(tmp_path: Path) -> None:
    shutil.copy(SCALE_OUT, tmp_path / "dagster.yaml")
    config, _custom_class = dagster_instance_config(str(tmp_path))
    assert config["storage"]["postgres"]["postgres_url"] == {"env": "S2E_PG_URL"}
    launcher = config["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_docker", "DockerRunLauncher")
    assert launcher["config"]["image"] == {"env": "S2E_RUN_IMAGE"}
    assert launcher["config"]["container_kwargs"]["network_mode"] == "host"
    assert config["run_retries"]["retry_on_asset_or_op_failure"] is False


def test_scale_out_forwards_what_run_containers_need() -> None:
    env_vars = yaml.safe_load(SCALE_OUT.read_text())["run_launcher"]["config"]["env_vars"]
    for name in ("S2E_PG_URL", "DAGSTER_HOME", "S2E_ARTIFACTS_DIR", "S2E_SOURCES"):
        assert name in env_vars
