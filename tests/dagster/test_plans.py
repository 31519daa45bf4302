"""workflow_plans / axis_samples in-process: offline and LLM generators, skips, partition-isolated failures,
cache hits without HTTP, and staleness after a prompt template edit."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from skill2env_dagster.artifacts import AXES, FAILURES, PLANS, SKILLS_PARTITION, SNAPSHOT
from skill2env_dagster.assets.plans import build_plan_assets
from skill2env_dagster.llm.prompts import PACKAGE_PROMPTS
from skill2env_dagster.planning.axes import MIN_SAMPLES
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore
from tests.support.fake_openai import FakeOpenAI, server_error
from tests.unit.test_planning_llm import canned_plan
from tests.unit.test_planning_offline import CSV_SKILL, TRANSFORM_SKILL, make_record

pytestmark = pytest.mark.dagster
KEYS = ["t__invoice-check", "t__changelog-writer", "t__screened"]


@pytest.fixture()
def env(tmp_path):
    store = ArtifactStore(tmp_path / "artifacts")
    for key, text in zip(KEYS, [CSV_SKILL, TRANSFORM_SKILL, TRANSFORM_SKILL], strict=False):
        folder = tmp_path / "skills" / key
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(text)
        status = "screened_out" if key == "t__screened" else "eligible"
        store.save(SNAPSHOT, key, make_record(folder, skill_id=key, status=status))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, KEYS)
    return store, instance, ArtifactStoreResource(root=str(tmp_path / "artifacts"))


def _run(assets, key, instance, artifacts, llm):
    return dg.materialize(assets, partition_key=key, instance=instance, raise_on_error=False,
                          resources={"artifacts": artifacts, "llm": llm})


def _meta(result, asset):
    mats = result.asset_materializations_for_node(asset)
    return {k: v.value for k, v in mats[0].metadata.items()} if mats else None


def test_offline_plans_and_axes(env):
    store, instance, artifacts = env
    assets = build_plan_assets()
    res = _run(assets, KEYS[0], instance, artifacts, LLMResource())
    assert res.success
    meta = _meta(res, "workflow_plans")
    assert meta["generator"] == "offline" and meta["llm_calls"] == 0 and meta["cost_usd"] == 0
    plans = store.load(PLANS, KEYS[0])
    samples = store.load(AXES, KEYS[0])
    assert plans.generator == "offline" and {s.workflow for s in samples.samples} == {w.name for w in plans.workflows}
    assert len(samples.samples) >= MIN_SAMPLES  # a plan with one workflow still gives several candidates
    again = _run(assets, KEYS[0], instance, artifacts, LLMResource())
    assert store.load(AXES, KEYS[0]) == samples  # reproducible across runs
    assert _meta(again, "workflow_plans")["workflow_names"] == meta["workflow_names"]


def test_ineligible_skill_is_skipped_not_failed(env):
    store, instance, artifacts = env
    res = _run(build_plan_assets(), KEYS[2], instance, artifacts, LLMResource())
    assert res.success
    assert _meta(res, "workflow_plans") == {"status": "skipped", "reason": "not_eligible"}
    assert _meta(res, "axis_samples")["status"] == "skipped"
    assert not store.exists(PLANS, KEYS[2]) and not store.exists(AXES, KEYS[2])


def test_llm_failure_fails_only_its_partition_and_cache_avoids_http(env, tmp_path):
    store, instance, artifacts = env
    assets = build_plan_assets()
    with FakeOpenAI(canned_plan) as srv:
        llm = LLMResource(base_url=srv.base_url, model="m", api_key="sk-secret-x", max_retries=1, timeout=5,
                          cache_dir=str(tmp_path / "cache"), input_usd_per_mtok=3.0, output_usd_per_mtok=0.0)
        srv.enqueue(server_error(), server_error())
        bad = _run(assets, KEYS[0], instance, artifacts, llm)
        assert not bad.success and not store.exists(PLANS, KEYS[0])
        failure = next(e for e in bad.all_events if e.event_type_value == "STEP_FAILURE")
        assert "llm_unavailable" in str(failure.event_specific_data.error.message)
        record = store.load(FAILURES, KEYS[0]).stages["workflow_plans"]  # what the export and the funnel read
        assert record.reason is ReasonCode.LLM_UNAVAILABLE and record.usage.failed_calls == 2
        assert srv.base_url in record.message and record.generator == "llm"
        good = _run(assets, KEYS[1], instance, artifacts, llm)
        assert good.success
        meta = _meta(good, "workflow_plans")
        assert meta["generator"] == "llm" and meta["llm_calls"] == 1 and meta["cost_usd"] > 0
        before = srv.count
        cached = _run(assets, KEYS[1], instance, artifacts, llm)
        assert cached.success and srv.count == before  # cache hit: no HTTP call
        cmeta = _meta(cached, "workflow_plans")
        assert cmeta["cache_hits"] == 1 and cmeta["prompt_tokens"] == 0 and cmeta["cost_usd"] == 0
        dv = [r.asset_materializations_for_node("workflow_plans")[0].tags["dagster/data_version"]
              for r in (good, cached)]
        assert dv[0] == dv[1]
        assert _run(assets, KEYS[0], instance, artifacts, llm).success
        assert not store.exists(FAILURES, KEYS[0])  # the stage succeeded: its failure record is history
    for f in (tmp_path / "artifacts").rglob("*.json"):
        assert "sk-secret-x" not in f.read_text()


def _status(instance, assets, key, asset):
    resources = {"artifacts": ArtifactStoreResource(), "llm": LLMResource()}
    graph = dg.Definitions(assets=assets, resources=resources).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    return resolver.get_status(dg.AssetKey(asset), key)


def test_template_edit_marks_plans_stale(env, tmp_path, monkeypatch):
    """With a model configured the template decides the plans; offline it is never rendered (and stales nothing,
    see test_code_versions.py)."""
    _store, instance, artifacts = env
    monkeypatch.setenv("S2E_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("S2E_LLM_MODEL", "m")
    folder = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS, folder)
    assets = build_plan_assets(folder)
    for key in KEYS[:2]:
        assert _run(assets, key, instance, artifacts, LLMResource()).success
    assert _status(instance, assets, KEYS[0], "workflow_plans") == StaleStatus.FRESH
    unchanged = build_plan_assets(folder)
    assert _status(instance, unchanged, KEYS[0], "workflow_plans") == StaleStatus.FRESH
    (folder / "plan_workflows.j2").write_text((folder / "plan_workflows.j2").read_text() + "\nBe concise.\n")
    edited = build_plan_assets(folder)
    assert edited[0].code_versions_by_key != assets[0].code_versions_by_key
    for key in KEYS[:2]:
        assert _status(instance, edited, key, "workflow_plans") == StaleStatus.STALE
    assert edited[1].code_versions_by_key == assets[1].code_versions_by_key  # axis sampler code unchanged
