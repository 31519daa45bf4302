"""A hardened task replaces its origin in the exported dataset and in the run's tasks/ mirror (one task per origin,
with its lineage); a round that did not count (rejected by the gates or the harder check) never does."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.artifacts import GATES, HARDENING, TASKS
from skill2env_dagster.export import export_corpus
from skill2env_dagster.export.funnel import retained_paths
from skill2env_dagster.models.export import ExportManifest
from skill2env_dagster.models.hardening import HardeningRound, HardeningSet, Revision, TaskHardening
from skill2env_dagster.models.rollout import Rollout, RolloutKind, StopReason, TaskCalibration
from skill2env_dagster.models.task import TaskGateReports
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore
from tests.unit.test_export import corpus, gate, task_folder  # noqa: F401 -- `corpus` is a fixture used by name

ORIGIN = "alpha-fix-config-v0"
CAL = TaskCalibration(scored=2, unscored=0, label="too_easy", label_reason="mean r_V 1.000 > 0.7", mean_reward_v=1.0)


def _round(n: int, path: Path, retained: bool, replayed: float | None = 0.4) -> HardeningRound:
    prev = None if replayed is None else Rollout(
        rollout_id="p", task_name="x", kind=RolloutKind.ORACLE, solver="previous_solution", attempt=0,
        stop=StopReason.AGENT_DONE, scored=True, reward_v=replayed, trajectory="p.json")
    rev = Revision(summary=f"complexity round {n}", task_name=f"{ORIGIN}-h{n}", path=str(path), retained=retained,
                   reason=None if retained else ReasonCode.HARDENING_NOT_HARDER, freeze_hash=f"f{n}",
                   metrics=["m"], evidence=f"previous solution on new task: r={replayed}")
    return HardeningRound(round=n, why=CAL.label_reason, before=CAL, revision=rev, previous_solution=prev,
                          after=CAL if retained else None)


def _hardening(root: Path) -> HardeningSet:
    h1 = task_folder(root, "alpha", f"{ORIGIN}-h1", "Repair alpha-config, now with retired entries out of scope.")
    h2 = task_folder(root, "alpha", f"{ORIGIN}-h2", "Still solved by the previous solution.")
    rounds = [_round(1, h1, True), _round(2, h2, False, 0.9)]
    return HardeningSet(skill_id="alpha", max_rounds=2, tasks=[TaskHardening(
        task_name=ORIGIN, rounds=rounds, outcome="not_harder", final_task=f"{ORIGIN}-h1", final_path=str(h1),
        final_label="too_easy")])


def test_the_latest_round_that_counted_replaces_its_origin(corpus, tmp_path: Path) -> None:  # noqa: F811
    inputs, _ = corpus
    inputs.hardening = [_hardening(tmp_path / "hardened")]
    manifest = export_corpus(inputs, tmp_path / "out").manifest
    dataset = tmp_path / "out" / "dataset"
    names = sorted(p.name for p in dataset.iterdir() if p.is_dir())
    assert names == ["alpha-fix-config-v0-h1", "beta-fix-config-v0"]  # one task per origin; round 2 did not count
    assert "retired entries" in (dataset / f"{ORIGIN}-h1" / "instruction.md").read_text()
    entry = next(e for e in ExportManifest.model_validate_json((dataset / "manifest.json").read_text()).tasks
                 if e.hardening is not None)
    assert (entry.task_name, entry.freeze_hash, entry.metrics) == (f"{ORIGIN}-h1", "f1", ["m"])
    assert entry.hardening.origin == ORIGIN and entry.hardening.round == 1
    assert entry.hardening.reason == "mean r_V 1.000 > 0.7" and "r=0.4" in entry.hardening.evidence
    assert manifest.n_tasks == 2


def test_a_round_without_the_harder_check_never_replaces_its_origin(corpus, tmp_path: Path) -> None:  # noqa: F811
    inputs, _ = corpus
    h = _hardening(tmp_path / "hardened")
    h.tasks[0].rounds = [_round(1, Path(h.tasks[0].final_path), True, replayed=None)]  # an artifact from before
    inputs.hardening = [h]
    export_corpus(inputs, tmp_path / "out")
    assert (tmp_path / "out" / "dataset" / ORIGIN).is_dir()


def test_the_run_mirror_takes_the_hardened_version(corpus, tmp_path: Path) -> None:  # noqa: F811
    inputs, _ = corpus
    store = ArtifactStore(tmp_path / "artifacts")
    store.save(TASKS, "alpha", inputs.bundles[0])
    store.save(GATES, "alpha", TaskGateReports(skill_id="alpha", reports={ORIGIN: gate(ORIGIN, True)}))
    assert [Path(p).name for p in retained_paths(store, ["alpha"])] == [ORIGIN]
    store.save(HARDENING, "alpha", _hardening(tmp_path / "hardened"))
    assert [Path(p).name for p in retained_paths(store, ["alpha"])] == [f"{ORIGIN}-h1"]
