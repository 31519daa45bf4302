"""The rollout assets in-process with a model (the loopback fake) and real containers: rollouts, judgements, the
SFT dataset and the difficulty report; then editing the constitution stales exactly the judged partitions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from skill2env_dagster.artifacts import DIFFICULTY, JUDGE, ROLLOUTS, SFT, SKILLS_PARTITION, TASKS
from skill2env_dagster.assets import rollouts as rollout_assets
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.models.task import Axes, TaskBundle, TaskBundleSet
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.rollouts import RolloutsResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.rollouts.settings import judge_fingerprint, solver_fingerprint
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.versions import PACKAGE_ROOT, code_version
from tests.docker.conftest import FIXTURES
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_agent import responder

pytestmark = [pytest.mark.docker, pytest.mark.dagster, pytest.mark.timeout(600),
              pytest.mark.filterwarnings("ignore::dagster.PreviewWarning")]
KEY, TASK = "examples__count", "examples__count--count-v0"
SETTINGS = """solvers:
  - {name: solve, model: solve, attempts: 2}
  - {name: half, model: half, attempts: 1}
limits: {max_turns: 6, command_timeout_sec: 20}
judge: {model: judge, max_attempts: 2}
"""


def _store_with_a_retained_task(root: Path) -> ArtifactStore:
    store = ArtifactStore(root)
    dest = store.dir(TASKS, KEY) / TASK
    shutil.copytree(FIXTURES / "good_minimal", dest)
    pin_dockerfile(dest)
    bundle = TaskBundle(task_name=TASK, skill_id=KEY, workflow="count", variant=0, recipe="fixture",
                        axes=Axes(archetype="data_query", primary_verifier_pattern="exact_state", complexity="easy",
                                  persona="data_analyst", tone="imperative_brief", expertise="practitioner"),
                        image="minimal", status="retained", path=str(dest))
    store.save(TASKS, KEY, TaskBundleSet(skill_id=KEY, bundle_digest="d", skill_md_path="/x/SKILL.md",
                                         generator="offline", prompt_version="v", bundles=[bundle]))
    return store


def _versions(resources: dict, prompts: Path | None = None) -> dict[str, str]:
    """The code versions the assets carry when the model settings of `resources` are in the environment."""
    settings, model = resources["rollouts"].settings(), resources["llm"].to_config()
    judge = resources["rollouts"].judge_default(model)
    return {ROLLOUTS.name: code_version(ROLLOUTS.scope, prompts_folder=prompts,
                                        fingerprint=solver_fingerprint(settings, model)),
            JUDGE.name: code_version(JUDGE.scope, prompts_folder=prompts,
                                     fingerprint=judge_fingerprint(settings, judge))}


def _with_versions(versions: dict[str, str], resources: dict | None = None) -> dg.Definitions:
    jobs = [dg.define_asset_job("per_skill", selection=[ROLLOUTS.name, JUDGE.name]),
            dg.define_asset_job("corpus", selection=[SFT.name, DIFFICULTY.name])]
    defs = dg.Definitions(assets=[*rollout_assets.ROLLOUT_SKILL_ASSETS, *rollout_assets.ROLLOUT_CORPUS_ASSETS],
                          jobs=jobs, resources=resources)
    return defs.map_asset_specs(
        func=lambda s: s.replace_attributes(code_version=versions.get(s.key.path[-1], s.code_version)))


def test_rollout_assets_materialise_and_the_constitution_stales_the_judged_partitions(docker_client, tmp_path):
    store = _store_with_a_retained_task(tmp_path / "artifacts")
    (tmp_path / "rollouts.yaml").write_text(SETTINGS)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, [KEY])
    with FakeOpenAI(responder()) as srv:
        resources = {"artifacts": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                     "llm": LLMResource(base_url=srv.base_url, model="solve", cache_dir="", max_retries=1),
                     "docker": DockerResource(), "rollouts": RolloutsResource(settings_file=str(tmp_path /
                                                                                               "rollouts.yaml"))}
        defs = _with_versions(_versions(resources), resources)
        assert defs.resolve_job_def("per_skill").execute_in_process(partition_key=KEY, instance=instance).success
        assert defs.resolve_job_def("corpus").execute_in_process(instance=instance).success
    skill_keys = [dg.AssetKey(a.name) for a in (ROLLOUTS, JUDGE)]

    rollouts, scores = store.load(ROLLOUTS, KEY), store.load(JUDGE, KEY)
    assert [t.calibration.label for t in rollouts.tasks] == ["too_easy"]  # (1 + 1 + 0.5) / 3 > 0.7
    assert len(rollouts.rollouts()) == 5 and all(r.scored for r in rollouts.rollouts())
    assert {v.rollout_id: v.score for v in scores.verdicts}[f"{TASK}--noop--0"] == -3
    sft = store.load(SFT, "corpus")
    rows = [json.loads(x) for x in Path(sft.path).read_text().splitlines()]
    assert [r["rollout_id"] for r in rows] == [f"{TASK}--solve--0"] and sft.excluded_by_reason() == {
        "duplicate": 1, "below_threshold": 1}
    report = store.load(DIFFICULTY, "corpus")
    assert report.labels == {"too_easy": 1} and Path(report.plot).is_file()
    event = instance.get_latest_materialization_event(dg.AssetKey(DIFFICULTY.name))
    meta = event.asset_materialization.metadata
    assert "data:image/png;base64," in meta["histogram"].value
    assert meta["bins"].value == {"0.8-0.9": {"too_easy": 1}} and meta["judge_agreement"].value["compared"] == 3

    prompts = tmp_path / "prompts"
    shutil.copytree(PACKAGE_ROOT / "prompts", prompts)
    (prompts / "judge_constitution.j2").write_text((prompts / "judge_constitution.j2").read_text()
                                                   + "5. A new rule.\n")
    edited = _with_versions(_versions(resources, prompts), resources).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, edited, LoadingContextForTest(instance))
    stale = {k.path[-1] for k in skill_keys if resolver.get_status(k, KEY) == StaleStatus.STALE}
    assert stale == {JUDGE.name}
