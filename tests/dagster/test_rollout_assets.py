"""The rollout assets without a model: skipped with `no_model`, no artifact, no fake score; and their code
versions: the solver prompt counts for solver_rollouts, the constitution and judge template for judge_scores,
each only when a model is configured."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import CORPUS_KEY, DIFFICULTY, HARDENING, JUDGE, ROLLOUTS, SFT, SKILLS_PARTITION
from skill2env_dagster.assets import rollouts as rollout_assets
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.rollouts import RolloutsResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.versions import PACKAGE_ROOT, code_version

pytestmark = pytest.mark.dagster
ONLINE = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "temperature": 0.2, "max_tokens": 4096,
          "structured_mode": "auto"}


def _statuses(result: dg.ExecuteInProcessResult) -> dict[str, tuple[str, str]]:
    out = {}
    for m in result.get_asset_materialization_events():
        mat = m.step_materialization_data.materialization
        out[mat.asset_key.path[-1]] = (mat.metadata["status"].value, mat.metadata["reason"].value)
    return out


def test_without_a_model_every_rollout_asset_is_skipped_with_no_model(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SKILLS_PARTITION, ["k"])
    resources = {"artifacts": ArtifactStoreResource(root=str(tmp_path)), "llm": LLMResource(),
                 "docker": DockerResource(), "rollouts": RolloutsResource()}
    per_skill = dg.materialize(rollout_assets.ROLLOUT_SKILL_ASSETS, partition_key="k", instance=instance,
                               resources=resources)
    corpus = dg.materialize(rollout_assets.ROLLOUT_CORPUS_ASSETS, instance=instance, resources=resources)
    statuses = {**_statuses(per_skill), **_statuses(corpus)}
    assert statuses == {a.name: ("skipped", "no_model") for a in (ROLLOUTS, JUDGE, HARDENING, SFT, DIFFICULTY)}
    store = ArtifactStore(tmp_path)
    assert not any(store.exists(a, "k") for a in (ROLLOUTS, JUDGE, HARDENING))
    assert not store.exists(SFT, CORPUS_KEY) and not store.exists(DIFFICULTY, CORPUS_KEY)


def _changed(edit: str, tmp_path: Path, fingerprint: dict | None) -> set[str]:
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def versions() -> dict[str, str]:
        return {a.name: code_version(a.scope, root=copy, fingerprint=fingerprint) for a in (ROLLOUTS, JUDGE)}

    before = versions()
    path = copy / edit
    path.write_text(path.read_text() + "\nOne more sentence.\n")
    after = versions()
    return {k for k in before if before[k] != after[k]}


@pytest.mark.parametrize("edit, online, offline", [
    ("prompts/judge_constitution.j2", {"judge_scores"}, set()),
    ("prompts/judge_rollout.j2", {"judge_scores"}, set()),
    ("prompts/solver_system.j2", {"solver_rollouts"}, set()),
])
def test_prompt_edits_version_exactly_their_asset(tmp_path, edit, online, offline):
    assert _changed(edit, tmp_path / "a", ONLINE) == online
    assert _changed(edit, tmp_path / "b", None) == offline
