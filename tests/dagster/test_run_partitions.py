"""The run's partition logic against a real instance and the real code location (gates stubbed, no Docker):
staleness rounds launch exactly the stale work, and the bulk freshness scan never calls a partition fresh that
Dagster's resolver would run, and plans a cold partition without asking it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import CRAWL, CRAWL_JOB
from skill2env_dagster.assets.freshness import FreshnessScan
from skill2env_dagster.assets.tasks import CREATION_SETTINGS_METADATA
from skill2env_dagster.cli.runner.home import instance_config_text
from skill2env_dagster.cli.runner.partitions import PartitionRunner, pipeline_chain
from skill2env_dagster.definitions import build_defs
from skill2env_dagster.models.freshness import Plan
from skill2env_dagster.models.gate import GateReport, GateVerdict
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.tasks.pipeline import CreationSettings

pytestmark = pytest.mark.dagster
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "skillhub"
KEY = "hub__log-triage-awk"
PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


class PassingDocker(DockerResource):
    """Every gate passes without an engine: this tests which runs are launched, not the gates."""

    def gate(self, task_dir: Path | str) -> GateReport:
        return GateReport(task=str(task_dir), verdict=GateVerdict.RETAINED)

    def gate_many(self, task_dirs: list[Path | str]) -> list[GateReport]:
        return [self.gate(d) for d in task_dirs]


@pytest.fixture
def setup(examples_dir, tmp_path):
    hub = tmp_path / "hub"
    shutil.copytree(examples_dir / "log-triage-awk", hub / "log-triage-awk")
    (tmp_path / "sources.yaml").write_text(f"sources:\n  - {{name: hub, kind: dir, path: {hub}}}\n")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "base-images.json").write_text(json.dumps(PINS))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text(instance_config_text())
    defs = build_defs({"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                       "skillhub": SkillHubResource(sources_file=str(tmp_path / "sources.yaml")),
                       "docker": PassingDocker(state_dir=str(tmp_path / "state"))})
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        yield hub, defs, instance


def _crawl(defs, instance) -> None:
    assert defs.resolve_job_def(CRAWL_JOB).execute_in_process(instance=instance).success


def _plan(defs, instance, settings: CreationSettings, eligible: bool = True) -> Plan | None:
    scan = FreshnessScan(instance, defs.resolve_asset_graph(), pipeline_chain(defs),
                         settings.model_dump(mode="json"), CREATION_SETTINGS_METADATA)
    return scan.plan(KEY, eligible)


def _fresh(defs, instance, settings: CreationSettings) -> bool:
    plan = _plan(defs, instance, settings)
    return plan is not None and not plan.selection


def test_rounds_run_exactly_the_stale_work_and_the_scan_agrees(setup):
    hub, defs, instance = setup
    settings = CreationSettings(max_variants=1)
    runner = PartitionRunner(defs, instance, settings, {})
    _crawl(defs, instance)
    assert not _fresh(defs, instance, settings)

    cold_plan = _plan(defs, instance, settings)  # nothing materialised: planned without the resolver
    assert cold_plan == Plan(tuple(a.path[-1] for a in runner.chain))
    assert _plan(defs, instance, settings, eligible=False) == Plan(("skillhub_snapshot",), tuple(
        a.path[-1] for a in runner.chain[1:]))
    cold = runner.process(KEY, eligible=True, plan=cold_plan)
    assert (cold.status, cold.runs) == ("ran", 1)  # the whole chain in one run, no second question needed
    assert sorted(cold.materialized) == sorted(a.path[-1] for a in runner.chain)
    assert runner.needed(KEY, True) == [] and _fresh(defs, instance, settings)

    _crawl(defs, instance)  # an unchanged hub: nothing new observed
    assert runner.process(KEY, True).status == "up_to_date" and _fresh(defs, instance, settings)

    md = hub / "log-triage-awk" / "SKILL.md"
    md.write_text(md.read_text() + "\nNever rewrite the input log in place.\n")
    _crawl(defs, instance)
    assert _plan(defs, instance, settings) is None  # a newer observation: the resolver decides
    assert [a.path[-1] for a in runner.needed(KEY, True)] == ["skillhub_snapshot"]
    edited = runner.process(KEY, True)
    assert edited.status == "ran" and edited.materialized[0] == "skillhub_snapshot" and edited.runs >= 2
    assert runner.needed(KEY, True) == [] and _fresh(defs, instance, settings)

    more = CreationSettings(max_variants=2)  # run config is no part of Dagster's staleness: recorded, compared
    assert not _fresh(defs, instance, more)
    assert [a.path[-1] for a in PartitionRunner(defs, instance, more, {}).needed(KEY, True)] == ["task_bundles"]


def test_analytics_are_stale_when_missing_or_older_than_a_partition(setup):
    """The run's cheap analytics check (two queries per asset) must see every case the run relies on: never
    materialised, fresh after the analytics job, and stale again when a partition is re-materialised after it
    (the case of a run interrupted between its partitions and its analytics)."""
    from skill2env_dagster.artifacts import ANALYTICS_JOB
    from skill2env_dagster.cli.runner.session import analytics_stale

    hub, defs, instance = setup
    settings = CreationSettings(max_variants=1)
    runner = PartitionRunner(defs, instance, settings, {})
    job = defs.resolve_job_def(ANALYTICS_JOB)
    _crawl(defs, instance)
    assert runner.process(KEY, eligible=True).status == "ran"
    assert analytics_stale(defs, instance, job)
    assert job.execute_in_process(instance=instance).success
    assert not analytics_stale(defs, instance, job)

    md = hub / "log-triage-awk" / "SKILL.md"
    md.write_text(md.read_text() + "\nNever rewrite the input log in place.\n")
    _crawl(defs, instance)
    assert runner.process(KEY, True).status == "ran"
    assert analytics_stale(defs, instance, job)


def test_a_moved_hub_refreshes_the_recorded_paths_and_rebuilds_nothing(setup, tmp_path):
    """Same content at a new path: later stages read the skill's files through the stored record and the old
    folder may be gone, so the crawl points the record at the new folder; nothing turns stale or re-runs."""
    from skill2env_dagster.artifacts import SNAPSHOT
    from skill2env_dagster.store import ArtifactStore

    hub, defs, instance = setup
    runner = PartitionRunner(defs, instance, CreationSettings(max_variants=1), {})
    _crawl(defs, instance)
    assert runner.process(KEY, eligible=True).status == "ran"

    moved = tmp_path / "moved-hub"
    shutil.move(hub, moved)
    (tmp_path / "sources.yaml").write_text(f"sources:\n  - {{name: hub, kind: dir, path: {moved}}}\n")
    _crawl(defs, instance)
    record = ArtifactStore(tmp_path / "artifacts").load(SNAPSHOT, KEY)
    assert record.abs_path.startswith(str(moved))
    assert runner.needed(KEY, True) == [] and runner.process(KEY, True).status == "up_to_date"


OPTIONAL_KEY = ("Setup: export `LOGSHIP_API_KEY` with the API key from your LogShip account; the upload step needs "
                "it.\n\nWithout a key every step above works on the local files: the upload step is optional.")


def _screen_reply(body: dict) -> str:
    """A second opinion that clears the optional upload key, and finds a device in the other skill."""
    user = body["messages"][-1]["content"]
    if "LOGSHIP_API_KEY" in user:
        return json.dumps({"reasons": [], "summary": "the upload is optional", "not_needed": [
            {"code": code, "file": "SKILL.md", "evidence": "Without a key every step above works on the local files",
             "why": "the upload is an optional side step"} for code in ("needs_external_account",
                                                                         "needs_live_service")]})
    line = next(ln for ln in user.splitlines() if ln.startswith("name: "))
    return json.dumps({"not_needed": [], "summary": "reads a device", "reasons": [
        {"code": "needs_hardware", "file": "SKILL.md", "evidence": line, "why": "test: a device"}]})


@pytest.fixture
def opinion_hub(setup, tmp_path, monkeypatch):
    """The example hub plus a second skill, the second opinion on (with clearing) and answered by a loopback model
    that clears log-triage-awk's optional upload key and finds a device in csv-dedupe; the later stages offline."""
    from skill2env_dagster.assets import skillhub as skillhub_assets
    from skill2env_dagster.resources.llm import LLMResource
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.hub import write_sources

    hub, _, instance = setup
    md = hub / "log-triage-awk" / "SKILL.md"
    md.write_text(md.read_text() + f"\n{OPTIONAL_KEY}\n")
    shutil.copytree(EXAMPLES / "csv-dedupe", hub / "csv-dedupe")
    sources = write_sources(tmp_path / "sources-opinion.yaml", [{"name": "hub", "kind": "dir", "path": str(hub)}],
                            tmp_path / "git-cache", screen={"second_opinion": True, "second_opinion_clears": True})
    artifacts = ArtifactStoreResource(root=str(tmp_path / "artifacts-opinion"))
    defs = build_defs({"artifacts": artifacts, "skillhub": SkillHubResource(sources_file=str(sources)),
                       "docker": PassingDocker(state_dir=str(tmp_path / "state"))})
    with FakeOpenAI(_screen_reply) as srv:
        llm = LLMResource(base_url=srv.base_url, model="fake", cache_dir=str(tmp_path / "llm"), max_retries=0)
        monkeypatch.setattr(skillhub_assets, "opinion_endpoint", lambda _llm: llm)
        _crawl(defs, instance)
        yield defs, instance, artifacts.store(), srv


def test_a_verdict_the_second_opinion_changes_is_processed_in_the_same_call(opinion_hub):
    """issue 28: the run schedules a partition by the crawl's verdict; the snapshot's second opinion may change it.
    A skill it clears is planned, and one it screens out has its downstream skipped, in the same call - from the
    freshness scan's cold plan too. The second time nothing runs and the model is not asked again."""
    from skill2env_dagster.artifacts import PLANS, SNAPSHOT
    from skill2env_dagster.skillhub.snapshot import latest_snapshot_dir, load_record

    defs, instance, store, srv = opinion_hub
    settings = CreationSettings(max_variants=1)
    runner = PartitionRunner(defs, instance, settings, {})
    crawled = {k: load_record(latest_snapshot_dir(store.dir(CRAWL)), k) for k in (KEY, "hub__csv-dedupe")}
    assert not crawled[KEY].is_eligible and crawled["hub__csv-dedupe"].is_eligible  # the rules' verdicts

    cleared = runner.process(KEY, False, _plan(defs, instance, settings, eligible=False))
    out = runner.process("hub__csv-dedupe", True)
    assert srv.count == 2
    assert (cleared.status, cleared.verdict_changed, cleared.eligible) == ("ran", True, True)
    assert "workflow_plans" in cleared.materialized and store.exists(PLANS, KEY)
    assert store.load(SNAPSHOT, KEY).second_opinion.cleared
    assert (out.status, out.verdict_changed, out.eligible) == ("ran", True, False)
    assert not store.exists(PLANS, "hub__csv-dedupe")
    assert runner.process(KEY, True).status == "up_to_date"
    assert runner.process("hub__csv-dedupe", False).status == "up_to_date"
    _crawl(defs, instance)  # an unchanged hub: no second-opinion call
    assert runner.process(KEY, True).status == "up_to_date" and srv.count == 2


def test_a_pipeline_run_of_a_partition_plans_what_its_snapshot_cleared(opinion_hub):
    """What a sensor's or a backfill's run does: the pipeline job on one partition makes the snapshot, and the
    later stages read its verdict, so a skill cleared at snapshot time is planned in that run."""
    from skill2env_dagster.artifacts import PIPELINE_JOB, PLANS

    defs, instance, store, _ = opinion_hub
    result = defs.resolve_job_def(PIPELINE_JOB).execute_in_process(partition_key=KEY, instance=instance,
                                                                   run_config={"ops": {"task_bundles": {"config": {
                                                                       "max_variants": 1}}}})
    assert result.success and store.exists(PLANS, KEY)
