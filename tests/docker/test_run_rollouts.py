"""`skill2env run --rollouts`: the rollout phase of a run launches skill_rollouts for skills with retained tasks
(against the loopback fake model, in real containers), reports it in the funnel, and does nothing the second time;
without a model or without the flag the funnel says why there are no rollouts instead of a made-up score."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import GATES, ROLLOUTS, SKILLS_PARTITION
from skill2env_dagster.cli.run import _rollouts_line
from skill2env_dagster.cli.runner.options import RunOptions
from skill2env_dagster.cli.runner.session import Session
from skill2env_dagster.definitions import build_defs
from skill2env_dagster.export.funnel import add_rollouts
from skill2env_dagster.models.gate import GateReport, GateVerdict
from skill2env_dagster.models.task import TaskGateReports
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.rollouts import RolloutsResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from tests.docker.test_rollout_assets_docker import KEY, SETTINGS, TASK, _store_with_a_retained_task
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_agent import responder

pytestmark = [pytest.mark.docker, pytest.mark.dagster, pytest.mark.timeout(600),
              pytest.mark.filterwarnings("ignore::dagster.PreviewWarning")]


class _QuietView:
    def say(self, _: str) -> None: ...


def _session(tmp_path: Path, rollouts: bool) -> Session:
    view = _QuietView()  # the phase only calls say()
    return Session(RunOptions(out=tmp_path / "out", rollouts=rollouts), view, tmp_path / "run.log")  # type: ignore[arg-type]


def test_no_flag_or_no_model_says_why(tmp_path, monkeypatch):
    for name in ("S2E_LLM_BASE_URL", "S2E_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    store_root = tmp_path / "artifacts"
    _store_with_a_retained_task(store_root)
    defs, instance = None, None  # neither is touched when the phase is skipped
    assert _session(tmp_path, rollouts=False)._rollouts(defs, instance, None, [KEY]).reason == "not_requested"
    assert _session(tmp_path, rollouts=True)._rollouts(defs, instance, None, [KEY]).reason == "no_model"


def test_rollout_phase_runs_once_and_reports(docker_client, tmp_path, monkeypatch):
    store = _store_with_a_retained_task(tmp_path / "artifacts")
    store.save(GATES, KEY, TaskGateReports(skill_id=KEY, reports={
        TASK: GateReport(task=str(store.dir(GATES) / TASK), verdict=GateVerdict.RETAINED)}))
    (tmp_path / "rollouts.yaml").write_text(SETTINGS)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, [KEY])
    with FakeOpenAI(responder()) as srv:
        monkeypatch.setenv("S2E_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("S2E_LLM_MODEL", "solve")
        monkeypatch.setenv("S2E_ROLLOUTS", str(tmp_path / "rollouts.yaml"))
        defs = build_defs({"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                           "llm": LLMResource(base_url=srv.base_url, model="solve", cache_dir="", max_retries=1),
                           "docker": DockerResource(),
                           "rollouts": RolloutsResource(settings_file=str(tmp_path / "rollouts.yaml"))})
        session = _session(tmp_path, rollouts=True)
        first = session._rollouts(defs, instance, store, [KEY])
        assert (first.status, first.ran, first.failed) == ("ran", 1, 0), session.rollout_failures
        summary = add_rollouts(first, store, [KEY])
        rollouts = store.load(ROLLOUTS, KEY)
        assert summary.tasks == 1 and summary.rollouts == len(rollouts.rollouts()) > 0
        assert sum(summary.labels.values()) == 1 and summary.judged + summary.judge_failed > 0
        assert sum(summary.judge_scale.values()) >= 1 and summary.hacking == 0
        assert "judge scale" in _rollouts_line(summary) and "hacking 0 (reward 0)" in _rollouts_line(summary)
        again = session._rollouts(defs, instance, store, [KEY])
        assert (again.status, again.ran, again.up_to_date) == ("up_to_date", 0, 1)
