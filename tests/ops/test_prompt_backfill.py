"""Backfill after a prompt change, against a real `dagster dev` whose model endpoint is the loopback fake (prompts
decide the output only when a model is configured): edit a template in a copy of the prompts folder, reload the
code location, see through GraphQL (`staleStatusByPartition`) that exactly the partitions of the assets
rendering it are STALE, run `skill2env ops backfill-stale` as docs/operations.md tells users, and check those
partitions were refreshed while the crawl and the snapshots were not re-run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.cli.ops import StalePartition, stale_partitions
from skill2env_dagster.definitions import build_defs
from skill2env_dagster.llm.prompts import PACKAGE_PROMPTS
from skill2env_dagster.planning.llm_planner import PLAN_TEMPLATE
from tests.ops.conftest import REPO
from tests.ops.dagster_dev import DagsterDev, make_home
from tests.support.fake_openai import FakeOpenAI
from tests.support.hub import make_hub, write_sources
from tests.support.scripted_creator import creator_reply
from tests.unit.task_llm_support import StepResponder, schema_name
from tests.unit.test_planning_llm import canned_plan

pytestmark = pytest.mark.dagster

PROMPT_ASSETS = ("workflow_plans",)  # the assets whose code_version hashes PLAN_TEMPLATE
UNTOUCHED = ("skillhub_snapshot",)


def _counts(home: Path, assets: tuple[str, ...]) -> dict[tuple[str, str], int]:
    """Materialisations per (asset, partition), read from the instance the server writes to."""
    counts: dict[tuple[str, str], int] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for asset in assets:
            for rec in instance.fetch_materializations(dg.AssetKey(asset), limit=1000).records:
                key = (asset, rec.partition_key or "")
                counts[key] = counts.get(key, 0) + 1
    return counts


def _downstream_of(assets: tuple[str, ...]) -> tuple[str, ...]:
    """Assets below the prompt's assets in this code location's graph (they grow as the pipeline grows)."""
    graph = build_defs().resolve_asset_graph()
    below = dg.AssetSelection.assets(*assets).downstream().resolve(graph)
    return tuple(sorted(k.to_user_string() for k in below if k.to_user_string() not in assets))


def _crawl_count(home: Path) -> int:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return len(instance.fetch_materializations(dg.AssetKey("skillhub_crawl"), limit=100).records)


def _model(body: dict) -> str | dict:
    """A model that has no objection as the screen's second opinion, answers the planner with a canned plan and
    the creator agent with a scripted task."""
    if body.get("tools"):
        return creator_reply(body)
    if schema_name(body) == "OpinionReply":
        return json.dumps({"reasons": [], "not_needed": [], "summary": "no blocking reason"})
    return canned_plan(body) if schema_name(body) == "PlanReply" else _STEPS(body)


_STEPS = StepResponder()


@pytest.fixture
def server(tmp_path: Path):
    hub = make_hub(tmp_path / "hub")
    sources = write_sources(tmp_path / "sources.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}],
                            tmp_path / "cache")
    prompts = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS, prompts)
    with FakeOpenAI(_model) as fake:
        env = {"S2E_SOURCES": str(sources), "S2E_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
               "S2E_PROMPTS_DIR": str(prompts), "S2E_LLM_BASE_URL": fake.base_url, "S2E_LLM_MODEL": "fake-model",
               "S2E_LLM_CACHE_DIR": str(tmp_path / "llm-cache")}
        dev = DagsterDev(make_home(tmp_path / "dagster_home"), env, tmp_path / "dagster-dev.log").start()
        dev.stop_automation()  # only the runs this test launches may materialise anything
        try:
            yield dev, prompts
        finally:
            dev.stop()


def test_prompt_edit_stales_exactly_dependents_and_backfill_refreshes_them(server) -> None:
    dev, prompts = server
    assert dev.wait_run(dev.launch_job("skillhub_crawl_job")) == "SUCCESS", dev.log_tail()
    # One skill gets its whole per-skill chain; the other two stay at their crawl, so their partitions are
    # MISSING, not STALE, and must not be in the backfill. (One skill keeps this test within its time budget.)
    skills = ["t__csv-cleaner"]
    for run_id in [dev.launch_job("skill_pipeline", partition=skill) for skill in skills]:
        assert dev.wait_run(run_id, timeout=170) == "SUCCESS", dev.log_tail()
    assert stale_partitions(dev.url) == []  # everything fresh after the first materialisation
    downstream = _downstream_of(PROMPT_ASSETS)
    before = _counts(dev.home, PROMPT_ASSETS + downstream + UNTOUCHED)
    crawls = _crawl_count(dev.home)

    template = prompts / PLAN_TEMPLATE
    template.write_text(template.read_text() + "\nPrefer workflows whose result a script can check exactly.\n")
    assert stale_partitions(dev.url) == []  # not before the code location is reloaded

    env = {**os.environ, "S2E_DAGSTER_URL": dev.url}
    dry = subprocess.run([str(REPO / ".venv" / "bin" / "skill2env"), "ops", "backfill-stale", "--reload",
                          "--dry-run"], env=env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    stale = {StalePartition(**s) for s in json.loads(dry.stdout)["stale"]}
    assert stale == {StalePartition(a, k) for a in PROMPT_ASSETS for k in skills}

    run = subprocess.run([str(REPO / ".venv" / "bin" / "skill2env"), "ops", "backfill-stale", "--wait",
                          "--timeout", "170"], env=env, capture_output=True, text=True, timeout=200)
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{dev.log_tail()}"
    out = json.loads(run.stdout)
    assert out["status"] in ("COMPLETED", "COMPLETED_SUCCESS")
    assert {StalePartition(**s) for s in out["stale"]} == stale

    # The backfill re-ran exactly the stale partitions: plans once more; snapshots, crawl and the assets below
    # the plans not at all (those now report STALE themselves: `--rounds N` follows the chain).
    after = _counts(dev.home, PROMPT_ASSETS + downstream + UNTOUCHED)
    for asset, key in before:
        assert after[(asset, key)] == before[(asset, key)] + (asset in PROMPT_ASSETS), (asset, key, before, after)
    assert _crawl_count(dev.home) == crawls
    remaining = stale_partitions(dev.url)
    assert not {s for s in remaining if s.asset in PROMPT_ASSETS + UNTOUCHED}
    assert {s.asset for s in remaining} <= set(downstream)
