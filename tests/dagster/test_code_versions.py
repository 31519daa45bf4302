"""Code versions are derived from declared scopes: editing a module, a data file or a prompt marks exactly the
assets whose output it decides stale — checked with Dagster's own stale-status resolver on a copy of the package."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from skill2env_dagster.artifacts import ALL_SCOPED, CRAWL_JOB, PIPELINE_JOB, SKILLS_PARTITION
from skill2env_dagster.definitions import build_defs
from skill2env_dagster.llm.prompts import PACKAGE_PROMPTS
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.versions import PACKAGE_ROOT, code_version, domain_modules, module_closure

REPO = Path(__file__).resolve().parents[2]
SKILL = "examples__pirate-persona"  # screened out: every per-skill asset materialises (as skipped) without Docker
pytestmark = pytest.mark.filterwarnings("ignore::dagster.PreviewWarning")  # map_asset_specs: used in tests only
ONLINE = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "temperature": 0.2, "max_tokens": 4096,
          "structured_mode": "auto"}


def test_every_domain_module_data_file_and_prompt_belongs_to_a_scope():
    covered = set().union(*(module_closure(a.scope.modules + a.scope.model_modules) for a in ALL_SCOPED if a.scope))
    assert sorted(domain_modules() - covered) == []
    data = {d for a in ALL_SCOPED if a.scope for d in a.scope.data}
    assert sorted(p.name for p in (PACKAGE_ROOT / "data").iterdir() if p.is_file()) == sorted(data)
    prompts = {p for a in ALL_SCOPED if a.scope for p in a.scope.prompts}
    used = {p.name for p in PACKAGE_PROMPTS.glob("*.j2") if not p.name.startswith("_")}
    assert sorted(used - prompts) == []


def _versions(root: Path, fingerprint: dict | None = None) -> dict[str, str]:
    return {a.name: code_version(a.scope, root=root, fingerprint=fingerprint) for a in ALL_SCOPED if a.scope}


def _changed(edit: str, old: str, new: str, tmp_path: Path, fingerprint: dict | None = None) -> set[str]:
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = _versions(copy, fingerprint)
    path = copy / edit
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    after = _versions(copy, fingerprint)
    return {k for k in before if before[k] != after[k]}


def test_comments_and_docstrings_change_no_version(tmp_path):
    assert _changed("planning/offline.py", '"""', '"""Reworded. ', tmp_path) == set()
    assert _changed("gates/runner.py", "import logging", "import logging  # a comment", tmp_path / "b") == set()


def test_prompts_count_only_with_a_model(tmp_path):
    assert _changed("prompts/plan_workflows.j2", "{%", "Be concise.\n{%", tmp_path) == set()
    assert _changed("prompts/plan_workflows.j2", "{%", "Be concise.\n{%", tmp_path / "b", ONLINE) == {
        "workflow_plans"}


@pytest.fixture(scope="module")
def materialised(tmp_path_factory):
    """A persistent instance where the crawl and every per-skill asset of one partition were materialised."""
    tmp = tmp_path_factory.mktemp("versions")
    sources = tmp / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: examples, kind: dir, path: {REPO / 'examples/skillhub'}}}\n"
                       f"settings:\n  cache_dir: {tmp / 'git-cache'}\n")
    resources = {"artifacts": ArtifactStoreResource(root=str(tmp / "artifacts")),
                 "skillhub": SkillHubResource(sources_file=str(sources)), "llm": LLMResource()}
    defs = build_defs(resources)
    instance = dg.DagsterInstance.ephemeral()
    assert defs.resolve_job_def(CRAWL_JOB).execute_in_process(instance=instance).success
    assert SKILL in instance.get_dynamic_partitions(SKILLS_PARTITION)
    assert defs.resolve_job_def(PIPELINE_JOB).execute_in_process(instance=instance, partition_key=SKILL).success
    return defs, instance


def _stale_after(edit: str, old: str, new: str, tmp_path: Path, materialised) -> set[str]:
    """Per-skill assets Dagster reports stale once the code location is rebuilt from the edited package."""
    defs, instance = materialised
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / edit
    path.write_text(path.read_text().replace(old, new, 1))
    versions = _versions(copy)
    edited = defs.map_asset_specs(
        func=lambda s: s.replace_attributes(code_version=versions.get(s.key.path[-1], s.code_version)))
    graph = edited.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    per_skill = [k for k in graph.materializable_asset_keys if graph.get(k).partitions_def is not None]
    return {k.path[-1] for k in per_skill if resolver.get_status(k, SKILL) == StaleStatus.STALE}


@pytest.mark.dagster
def test_nothing_is_stale_without_an_edit(tmp_path, materialised):
    assert _stale_after("planning/offline.py", "", "", tmp_path, materialised) == set()


@pytest.mark.dagster
def test_editing_the_offline_planner_stales_workflow_plans_only(tmp_path, materialised):
    stale = _stale_after("planning/offline.py", "MAX_WORKFLOWS = 8", "MAX_WORKFLOWS = 7", tmp_path, materialised)
    assert stale == {"workflow_plans"}


@pytest.mark.dagster
def test_editing_the_rule_book_stales_the_snapshot(tmp_path, materialised):
    stale = _stale_after("data/screening_rules.yaml", "\n", "\n# a new rule is coming\n", tmp_path, materialised)
    assert stale == {"skillhub_snapshot"}


@pytest.mark.dagster
def test_editing_a_gate_rule_stales_the_gates(tmp_path, materialised):
    stale = _stale_after("gates/static_checks.py", "LEAK_MIN_LINE = 40", "LEAK_MIN_LINE = 30", tmp_path,
                         materialised)
    assert stale == {"gate_reports", "task_bundles"}  # the creation-time gate decides what is retained
