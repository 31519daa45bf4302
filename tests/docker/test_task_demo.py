"""The demo through Dagster on two example skills: funnel printed, retained tasks exported, and every exported
folder passes the gates again on its own."""

from __future__ import annotations

import json

import pytest

from skill2env_dagster.cli import main
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.models.gate import GateVerdict

pytestmark = pytest.mark.docker


def test_demo_exports_tasks_that_pass_gates(docker_client, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    out = tmp_path / "demo"
    code = main(["demo", "--out", str(out), "--skip-docker-up", "--max-variants", "2",
                 "--only", "examples__log-triage-awk", "examples__inventory-api-client", "examples__pirate-persona"])
    text = capsys.readouterr().out
    funnel = json.loads(text[text.index('{\n  "generator"'):])
    assert code == 0 and funnel["generator"].startswith("offline") and funnel["generators"] == {"offline": 2}
    assert funnel["llm_usage"]["calls"] == 0 and funnel["llm_usage"]["cost_usd"] == 0.0
    # The funnel counts the whole crawl (all example skills), while --only restricts what is planned and built.
    assert funnel["skills_crawled"] >= 20 and funnel["screened_out_by_reason"]["persona_only"] >= 1
    assert funnel["planned"] == 2 and funnel["created"] == 4
    exported = sorted((out / "tasks").iterdir())
    assert len(exported) == funnel["retained"] == len(funnel["exported"]) >= 3
    for task in exported:
        assert gate_task(task).verdict is GateVerdict.RETAINED, task
    assert (out / "dagster_home").is_dir()
