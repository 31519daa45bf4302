"""retrieval_probe -> corpus_export -> corpus_stats materialised in-process over a seeded artifact store."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from skill2env_dagster.artifacts import AXES, CORPUS_KEY, GATES, PLANS, PROBE, SNAPSHOT, STATS, TASKS
from skill2env_dagster.assets.export import corpus_export, corpus_stats
from skill2env_dagster.assets.probe import retrieval_probe
from skill2env_dagster.export import CorpusInputs
from skill2env_dagster.resources.store import ArtifactStoreResource
from skill2env_dagster.store import ArtifactStore
from tests.unit.test_export import corpus  # noqa: F401  (fixture)

pytestmark = pytest.mark.dagster


def seed(store: ArtifactStore, inputs: CorpusInputs) -> None:
    for s in inputs.skills:
        store.save(SNAPSHOT, s.skill_id, s)
    for p in inputs.plans:
        store.save(PLANS, p.skill_id, p)
    for a in inputs.axes:
        store.save(AXES, a.skill_id, a)
    for b in inputs.bundles:
        store.save(TASKS, b.skill_id, b)
    for g in inputs.gates:
        store.save(GATES, g.skill_id, g)


def test_probe_export_and_stats_assets(corpus, tmp_path: Path) -> None:  # noqa: F811
    inputs, bench = corpus
    store = ArtifactStore(tmp_path / "artifacts")
    seed(store, inputs)
    instance = dg.DagsterInstance.ephemeral()
    run_config = {"ops": {"corpus_export": {"config": {"benchmark_paths": [str(bench)],
                                                       "out_dir": str(tmp_path / "export")}}}}
    result = dg.materialize([retrieval_probe, corpus_export, corpus_stats], instance=instance,
                            resources={"artifacts": ArtifactStoreResource(root=str(store.root))},
                            run_config=run_config)
    assert result.success
    report = store.load(PROBE, CORPUS_KEY)
    assert report.n_skills == 2 and report.n_scored == 2
    assert [s.skill_id for s in report.per_skill] == ["alpha", "beta"]
    assert (tmp_path / "export" / "dataset" / "alpha-fix-config-v0" / "task.toml").is_file()
    stats = store.load(STATS, CORPUS_KEY)
    assert stats.funnel["exported"] == 1 and stats.funnel["contaminated"] == 1
    md = result.asset_materializations_for_node("corpus_stats")[0].metadata
    assert "data:image/png;base64," in md["plots"].value
    probe_md = result.asset_materializations_for_node("retrieval_probe")[0].metadata
    assert probe_md["n_skills"].value == 2 and "| alpha |" in probe_md["per_skill"].value


def test_probe_asset_skips_without_eligible_skills(tmp_path: Path) -> None:
    result = dg.materialize([retrieval_probe], instance=dg.DagsterInstance.ephemeral(),
                            resources={"artifacts": ArtifactStoreResource(root=str(tmp_path / "a"))})
    assert result.success
    assert result.asset_materializations_for_node("retrieval_probe")[0].metadata["status"].value == "skipped"
