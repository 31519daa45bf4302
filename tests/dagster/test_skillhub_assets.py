"""SkillHub assets in-process: partitions kept in step, observations as lineage root, only changed skills stale,
and the change sensor requesting exactly the new/changed partitions."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from skill2env_dagster.artifacts import SNAPSHOT
from skill2env_dagster.assets.skillhub import raw_skill_md, skillhub_crawl, skillhub_snapshot
from skill2env_dagster.definitions import build_defs
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from tests.support.hub import make_hub, write_skill, write_sources

pytestmark = pytest.mark.dagster


@pytest.fixture
def setup(tmp_path):
    hub = make_hub(tmp_path / "hub")
    sources = write_sources(tmp_path / "sources.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}],
                            tmp_path / "cache")
    resources = {
        "artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
        "skillhub": SkillHubResource(sources_file=str(sources)),
        "llm": LLMResource(cache_dir=""),  # offline: no second opinion
    }
    return hub, resources, dg.DagsterInstance.ephemeral()


def _crawl(resources, instance):
    res = dg.materialize([skillhub_crawl], instance=instance, resources=resources)
    assert res.success
    return res


def _snapshot(resources, instance, key):
    res = dg.materialize([raw_skill_md, skillhub_snapshot], selection=[skillhub_snapshot], partition_key=key,
                         instance=instance, resources=resources)
    assert res.success
    return res


def _stale(instance, resources, key):
    defs = build_defs(resources)
    graph = defs.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    return resolver.get_status(dg.AssetKey("skillhub_snapshot"), key)


def test_crawl_adds_partitions_and_observes_raw_skill_md(setup):
    _hub, resources, instance = setup
    _crawl(resources, instance)
    keys = sorted(instance.get_dynamic_partitions("skills"))
    assert keys == ["t__csv-cleaner", "t__log-counter", "t__unit-converter"]
    obs = instance.fetch_observations(dg.AssetKey("raw_skill_md"), limit=10).records
    assert len(obs) == 3
    meta = obs[0].asset_observation.metadata
    assert "skill_md" in meta and "source_commit" in meta


def test_only_changed_skill_becomes_stale_and_removed_skill_loses_partition(setup):
    hub, resources, instance = setup
    _crawl(resources, instance)
    for key in instance.get_dynamic_partitions("skills"):
        _snapshot(resources, instance, key)
    assert {_stale(instance, resources, k) for k in instance.get_dynamic_partitions("skills")} == {StaleStatus.FRESH}
    _crawl(resources, instance)  # unchanged re-crawl: nothing stale
    assert {_stale(instance, resources, k) for k in instance.get_dynamic_partitions("skills")} == {StaleStatus.FRESH}
    write_skill(hub, "log-counter", body="Count status codes differently now, with `cut -d' ' -f9`.")
    import shutil

    shutil.rmtree(hub / "unit-converter")
    _crawl(resources, instance)
    keys = set(instance.get_dynamic_partitions("skills"))
    assert keys == {"t__csv-cleaner", "t__log-counter"}
    assert _stale(instance, resources, "t__log-counter") == StaleStatus.STALE
    assert _stale(instance, resources, "t__csv-cleaner") == StaleStatus.FRESH


def test_snapshot_writes_record_and_metadata(setup, tmp_path):
    _hub, resources, instance = setup
    _crawl(resources, instance)
    res = _snapshot(resources, instance, "t__csv-cleaner")
    mat = res.asset_materializations_for_node("skillhub_snapshot")[0]
    assert mat.metadata["status"].value == "eligible"
    assert str(mat.metadata["skill_md"].value).endswith("csv-cleaner/SKILL.md")
    store = resources["artifacts"].store()
    assert store.load(SNAPSHOT, "t__csv-cleaner").name == "csv-cleaner"


def _tick(sensor, defs, instance, resources, cursor=None):
    return sensor(dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor, definitions=defs))


def _run_batches(defs, instance, requests):
    """Execute the sensor's snapshot batch requests as the daemon would (their tags carry the range)."""
    job = defs.resolve_job_def("skill_snapshot_refresh")
    for r in requests:
        assert r.job_name == "skill_snapshot_refresh"
        assert job.execute_in_process(instance=instance, tags=r.tags).success


def test_change_sensor_requests_snapshot_batches_then_only_skills_with_work(setup):
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    hub, resources, instance = setup
    defs = build_defs(resources)
    sensor = defs.get_sensor_def("skillhub_change_sensor")
    _crawl(resources, instance)
    first = _tick(sensor, defs, instance, resources)
    assert [(r.tags[ASSET_PARTITION_RANGE_START_TAG], r.tags[ASSET_PARTITION_RANGE_END_TAG])
            for r in first.run_requests] == [("t__csv-cleaner", "t__unit-converter")]  # all three: one run
    _run_batches(defs, instance, first.run_requests)
    second = _tick(sensor, defs, instance, resources, first.cursor)
    assert sorted(r.partition_key for r in second.run_requests) == ["t__csv-cleaner", "t__log-counter",
                                                                     "t__unit-converter"]
    assert {r.job_name for r in second.run_requests} == {"skill_pipeline"}
    selected = {a.path[-1] for a in second.run_requests[0].asset_selection}
    assert "skillhub_snapshot" not in selected and "gate_reports" in selected  # the snapshot is done already
    assert isinstance(_tick(sensor, defs, instance, resources, second.cursor), dg.SkipReason)

    write_skill(hub, "log-counter", body="A changed body that counts 4xx codes per hour with awk.")
    write_skill(hub, "new-skill", body="Rename image files by EXIF date: read `DateTimeOriginal`, format it as "
                "`YYYY-MM-DD_HHMMSS.jpg`, keep a dry-run mode that prints `old -> new`, and on a name collision "
                "append `-1`, `-2`. Run `exiftool -d %Y%m%d photo.jpg` to check one file first.")
    (hub / "pirate").mkdir()
    (hub / "pirate" / "SKILL.md").write_text("no description and nothing")
    _crawl(resources, instance)
    third = _tick(sensor, defs, instance, resources, second.cursor)
    assert [(r.tags[ASSET_PARTITION_RANGE_START_TAG], r.tags[ASSET_PARTITION_RANGE_END_TAG])
            for r in third.run_requests] == [("t__log-counter", "t__log-counter"), ("t__new-skill", "t__pirate")]
    _run_batches(defs, instance, third.run_requests)
    fourth = _tick(sensor, defs, instance, resources, third.cursor)
    got = sorted(r.partition_key for r in fourth.run_requests)  # the pipeline runs above were never executed
    assert got == ["t__csv-cleaner", "t__new-skill", "t__unit-converter"]  # the pirate is invalid, and the edit
    assert store_status(resources, "t__log-counter") == "screened_out"  # left log-counter nothing to act on


def store_status(resources, key):
    return resources["artifacts"].store().load(SNAPSHOT, key).status.value


def test_change_sensor_launches_nothing_on_work_already_done(setup):
    """Opening the UI on a hub that was processed elsewhere (here: snapshots of skills that need nothing else)
    starts with no cursor; Dagster's records say everything is done, so nothing is requested."""
    hub, resources, instance = setup
    for name in ("csv-cleaner", "log-counter", "unit-converter"):
        (hub / name / "SKILL.md").write_text("no frontmatter at all")  # invalid: needs its snapshot only
    defs = build_defs(resources)
    sensor = defs.get_sensor_def("skillhub_change_sensor")
    _crawl(resources, instance)
    _run_batches(defs, instance, _tick(sensor, defs, instance, resources).run_requests)
    fresh_start = _tick(sensor, defs, instance, resources)  # no cursor, as a new daemon would start
    assert fresh_start.run_requests == [] and "up to date" in fresh_start.skip_reason.skip_message
    _crawl(resources, instance)  # the nightly crawl of an unchanged hub: the same snapshot, nothing to do
    assert isinstance(_tick(sensor, defs, instance, resources, fresh_start.cursor), dg.SkipReason)


def test_schedule_runs_crawl_nightly(setup):
    _, resources, _ = setup
    schedule = build_defs(resources).get_schedule_def("nightly_skillhub_crawl")
    assert schedule.cron_schedule == "0 2 * * *" and schedule.execution_timezone == "UTC"
    assert schedule.job_name == "skillhub_crawl_job"


def test_definitions_load(setup):
    _, resources, _ = setup
    dg.Definitions.validate_loadable(build_defs(resources))


def test_git_source_two_commits_new_data_versions_only_for_changed(tmp_path):
    import subprocess

    from tests.support.hub import commit_all, init_repo

    work = tmp_path / "work"
    init_repo(work)
    make_hub(work)
    c1 = commit_all(work, "one")
    bare = tmp_path / "hub.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    sources = write_sources(tmp_path / "sources.yaml", [{"name": "g", "kind": "git", "url": str(bare), "ref": "main"}],
                            tmp_path / "cache")
    resources = {"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                 "skillhub": SkillHubResource(sources_file=str(sources)), "llm": LLMResource(cache_dir="")}
    instance = dg.DagsterInstance.ephemeral()

    def versions() -> dict[str, tuple[str, str]]:
        out = {}
        for rec in instance.fetch_observations(dg.AssetKey("raw_skill_md"), limit=100).records:
            obs = rec.asset_observation
            out.setdefault(obs.partition, (obs.tags["dagster/data_version"], obs.metadata["source_commit"].value))
        return out

    _crawl(resources, instance)
    first = versions()
    assert {commit for _, commit in first.values()} == {c1}
    (work / "csv-cleaner" / "SKILL.md").write_text((work / "csv-cleaner" / "SKILL.md").read_text() + "\nAlso trim.\n")
    c2 = commit_all(work, "two")
    subprocess.run(["git", "push", "-q", str(bare), "main"], cwd=work, check=True)
    _crawl(resources, instance)
    second = versions()
    assert {commit for _, commit in second.values()} == {c2}
    changed = sorted(k for k in first if first[k][0] != second[k][0])
    assert changed == ["g__csv-cleaner"]


def test_recrawl_observes_only_changed_skills(setup):
    hub, resources, instance = setup
    first = _crawl(resources, instance).asset_materializations_for_node("skillhub_crawl")[0]
    assert first.metadata["raw_skill_md_observed"].value == 3
    again = _crawl(resources, instance).asset_materializations_for_node("skillhub_crawl")[0]
    assert again.metadata["raw_skill_md_observed"].value == 0
    write_skill(hub, "log-counter", body="Count 5xx responses per upstream with `awk '$9 >= 500'` and sort them.")
    third = _crawl(resources, instance).asset_materializations_for_node("skillhub_crawl")[0]
    assert third.metadata["raw_skill_md_observed"].value == 1
    fresh = dg.DagsterInstance.ephemeral()  # a new instance has seen nothing: it observes every skill
    assert _crawl(resources, fresh).asset_materializations_for_node("skillhub_crawl")[0].metadata[
        "raw_skill_md_observed"].value == 3


def _with_opinion(hub, resources, tmp_path, llm: LLMResource) -> dict:
    """The resources with a model endpoint and the sources' `settings.screen.second_opinion` switched on."""
    sources = write_sources(tmp_path / "sources-opinion.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}],
                            tmp_path / "cache", screen={"second_opinion": True})
    return {**resources, "llm": llm, "skillhub": SkillHubResource(sources_file=str(sources))}


def test_an_endpoint_alone_asks_for_a_second_opinion_and_the_setting_turns_it_off(setup, tmp_path):
    """On by default whenever a model is configured (issue 28's measurement); `second_opinion: false` in the
    sources' settings keeps the screen's own verdict and asks nothing."""
    from tests.support.fake_openai import FakeOpenAI

    hub, resources, instance = setup
    _crawl(resources, instance)
    reply = json.dumps({"summary": "fine", "reasons": [], "not_needed": []})
    with FakeOpenAI(lambda body: reply) as srv:
        llm = LLMResource(base_url=srv.base_url, model="fake", cache_dir="", max_retries=0)
        res = _snapshot({**resources, "llm": llm}, instance, "t__csv-cleaner")
        assert srv.count == 1
        off = write_sources(tmp_path / "sources-off.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}],
                            tmp_path / "cache", screen={"second_opinion": False})
        res_off = _snapshot({**resources, "llm": llm, "skillhub": SkillHubResource(sources_file=str(off))}, instance,
                            "t__csv-cleaner")
        assert srv.count == 1
    assert res.asset_materializations_for_node("skillhub_snapshot")[0].metadata["second_opinion"].value.startswith(
        "fake (called)")
    meta_off = res_off.asset_materializations_for_node("skillhub_snapshot")[0].metadata
    assert meta_off["second_opinion"].value.startswith("none")


def test_snapshot_records_the_models_second_opinion_and_shows_disagreements(setup, tmp_path):
    """With an endpoint configured and the opinion on, the snapshot asks the model once per skill (cached by bundle
    digest): a verified reason blocks the skill, and the disagreement with the rules is in the materialisation
    metadata."""
    from tests.support.fake_openai import FakeOpenAI

    hub, resources, instance = setup
    quote = "Normalise CSV files: trim whitespace in every cell"
    answer = json.dumps({"summary": "needs a live feed", "not_needed": [], "reasons": [
        {"code": "needs_live_service", "file": "SKILL.md", "evidence": quote, "why": "test"}]})
    _crawl(resources, instance)
    with FakeOpenAI(lambda body: answer) as srv:
        llm = LLMResource(base_url=srv.base_url, model="fake", cache_dir=str(tmp_path / "llm"), max_retries=0)
        with_model = _with_opinion(hub, resources, tmp_path, llm)
        res = _snapshot(with_model, instance, "t__csv-cleaner")
        _snapshot(with_model, instance, "t__csv-cleaner")
        assert srv.count == 1  # the second run is answered from the second-opinion cache
    meta = res.asset_materializations_for_node("skillhub_snapshot")[0].metadata
    assert meta["status"].value == "screened_out"
    assert "needs_live_service | model_only" in meta["second_opinion_disagreements"].value
    assert meta["second_opinion_added"].value == ["needs_live_service"]
    assert meta["second_opinion_cleared"].value == []
    assert meta["llm_calls"].value == 1 and meta["prompt_tokens"].value > 0  # what the opinion cost is shown
    store = resources["artifacts"].store()
    rec = store.load(SNAPSHOT, "t__csv-cleaner")
    assert rec.second_opinion is not None and rec.second_opinion.reasons[0].evidence == quote


def test_a_failed_second_opinion_leaves_the_rules_verdict_with_its_reason(setup, tmp_path):
    """A model that fails (here: a server error) does not fail the partition: the rules' verdict is saved, the
    failure's reason is on the opinion and in the metadata, and the next snapshot batch asks again (a failure is
    not cached, and the freshness scan does not call that snapshot fresh)."""
    from skill2env_dagster.artifacts import FAILURES
    from tests.support.fake_openai import FakeOpenAI, server_error

    hub, resources, instance = setup
    _crawl(resources, instance)
    store = resources["artifacts"].store()
    with FakeOpenAI(lambda body: json.dumps({"summary": "fine", "reasons": [], "not_needed": []})) as srv:
        llm = LLMResource(base_url=srv.base_url, model="fake", cache_dir=str(tmp_path / "llm"), max_retries=0)
        with_model = _with_opinion(hub, resources, tmp_path, llm)
        srv.enqueue(server_error())
        res = _snapshot(with_model, instance, "t__csv-cleaner")
        meta = res.asset_materializations_for_node("skillhub_snapshot")[0].metadata
        assert meta["status"].value == "eligible" and meta["second_opinion_failure"].value == "llm_unavailable"
        assert meta["failed_calls"].value >= 1
        record = store.load(SNAPSHOT, "t__csv-cleaner")
        assert record.second_opinion is not None and record.second_opinion.status == "failed"
        assert not store.exists(FAILURES, "t__csv-cleaner")
        assert _scan_needs_snapshot(with_model, instance, "t__csv-cleaner")  # the next snapshot batch asks again
        _snapshot(with_model, instance, "t__csv-cleaner")
        assert srv.count == 2
    assert store.load(SNAPSHOT, "t__csv-cleaner").second_opinion.status == "answered"
    assert not _scan_needs_snapshot(with_model, instance, "t__csv-cleaner")


def _scan_needs_snapshot(resources, instance, key) -> bool:
    from skill2env_dagster.assets.freshness import FreshnessScan

    snapshot = dg.AssetKey("skillhub_snapshot")
    scan = FreshnessScan(instance, build_defs(resources).resolve_asset_graph(), [snapshot], None, "")
    return scan.needs(snapshot, key)


def test_a_batch_run_records_each_partitions_own_provenance(setup):
    """Many partitions in one snapshot run (the backfill policy's batch): one materialization per partition with
    its own data version and raw_skill_md input, so per-skill staleness holds exactly as with one run each."""
    from dagster._core.definitions.data_version import DATA_VERSION_TAG, get_input_data_version_tag
    from dagster._core.events import DagsterEventType
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from skill2env_dagster.skillhub.snapshot import record_fingerprint

    hub, resources, instance = setup
    _crawl(resources, instance)
    keys = instance.get_dynamic_partitions("skills")
    job = build_defs(resources).resolve_job_def("skill_snapshot_refresh")
    res = job.execute_in_process(instance=instance, tags={ASSET_PARTITION_RANGE_START_TAG: keys[0],
                                                          ASSET_PARTITION_RANGE_END_TAG: keys[-1]})
    assert res.success
    mats = [e.event_specific_data.materialization for e in res.all_events
            if e.event_type is DagsterEventType.ASSET_MATERIALIZATION]
    assert sorted(m.partition for m in mats) == sorted(keys)  # exactly one each, none from the output
    store = resources["artifacts"].store()
    raw = {r.partition_key: r.asset_observation.tags["dagster/data_version"]
           for r in instance.fetch_observations(dg.AssetKey("raw_skill_md"), limit=10).records}
    for m in mats:
        assert m.tags[DATA_VERSION_TAG] == record_fingerprint(store.load(SNAPSHOT, m.partition))
        assert m.tags[get_input_data_version_tag(dg.AssetKey("raw_skill_md"))] == raw[m.partition]
    assert len({m.tags[DATA_VERSION_TAG] for m in mats}) == len(keys)
    assert {_stale(instance, resources, k) for k in keys} == {StaleStatus.FRESH}

    write_skill(hub, "log-counter", body="Count status codes differently now, with `cut -d' ' -f9`.")
    _crawl(resources, instance)
    assert {k: _stale(instance, resources, k) for k in keys} == {
        k: StaleStatus.STALE if k == "t__log-counter" else StaleStatus.FRESH for k in keys}
    one = _snapshot(resources, instance, "t__log-counter")  # a one-partition run agrees with the batch's rules
    assert one.asset_materializations_for_node("skillhub_snapshot")[0].tags[DATA_VERSION_TAG] == record_fingerprint(
        store.load(SNAPSHOT, "t__log-counter"))
    assert {_stale(instance, resources, k) for k in keys} == {StaleStatus.FRESH}


def test_change_sensor_sends_a_skill_the_opinion_cleared_down_the_pipeline(setup, tmp_path, monkeypatch):
    """The sensor routes by each snapshot's final verdict (after the second opinion), not the crawl's: a skill the
    opinion cleared in the snapshot batch gets its pipeline run; a lure, which it cannot clear, does not."""
    from skill2env_dagster.assets import skillhub as skillhub_assets
    from tests.support.fake_openai import FakeOpenAI
    from tests.unit.test_screen_second_opinion import KEY_LINE, LURE, NOT_NEEDED, OFFLINE_LINE, _reply

    hub, resources, instance = setup
    write_skill(hub, "kiln-sync", body=f"Track kiln firing curves in `log.csv`.\n\n{KEY_LINE}\n\n{OFFLINE_LINE}")
    write_skill(hub, "kiln-lure", body=f"Track kiln firing curves in `log.csv`.\n\n{LURE}")
    sources = write_sources(tmp_path / "sources-sensor.yaml", [{"name": "t", "kind": "dir", "path": str(hub)}],
                            tmp_path / "cache", screen={"second_opinion": True, "second_opinion_clears": True})
    res = {**resources, "skillhub": SkillHubResource(sources_file=str(sources))}
    defs = build_defs(res)
    sensor = defs.get_sensor_def("skillhub_change_sensor")
    _crawl(res, instance)
    crawled = {r["skill_id"]: r["status"] for r in _crawl_table(res)}
    assert crawled["t__kiln-sync"] == crawled["t__kiln-lure"] == "screened_out"
    with FakeOpenAI(lambda body: _reply(not_needed=NOT_NEEDED)) as srv:
        llm = LLMResource(base_url=srv.base_url, model="fake", cache_dir="", max_retries=0)
        monkeypatch.setattr(skillhub_assets, "opinion_endpoint", lambda _llm: llm)
        first = _tick(sensor, defs, instance, res)
        _run_batches(defs, instance, first.run_requests)
    assert store_status(res, "t__kiln-sync") == "eligible" and store_status(res, "t__kiln-lure") == "screened_out"
    second = _tick(sensor, defs, instance, res, first.cursor)
    assert sorted(r.partition_key for r in second.run_requests) == ["t__csv-cleaner", "t__kiln-sync",
                                                                     "t__log-counter", "t__unit-converter"]


def _crawl_table(resources) -> list[dict]:
    import pyarrow.parquet as pq

    from skill2env_dagster.artifacts import CRAWL
    from skill2env_dagster.skillhub.snapshot import SKILLS_TABLE, latest_snapshot_dir

    snap = latest_snapshot_dir(resources["artifacts"].store().dir(CRAWL))
    return pq.read_table(snap / SKILLS_TABLE, columns=["skill_id", "status"]).to_pylist()
