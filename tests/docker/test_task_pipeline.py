"""Task creation end to end on the real engine, with every gate stage on (mutation testing, cheats, tamper kit):
every shape an example skill supports passes the gates, a freeze violation is caught by the gates, and the repair
loop fixes a broken first solution without touching grading."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import OfflineGenerator
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

pytestmark = pytest.mark.docker
# Every stage, mutation testing included: the shapes' verifiers are precision-aware (issue 10, generator side).
# Every stage, the skill-blind battery included.
SETTINGS = GateSettings(mutation_testing=True)


def _gate(path):
    return gate_task(path, SETTINGS)


# The shapes each example skill realises from its own rules: per-severity acknowledgement limits (log-triage-awk),
# one limit from a named start event (invoice-reconciliation), a linter's rules on skill folders (skill-linter) and
# a documented local API kept by a stub service (inventory-api-client).
SHAPES_BY_SKILL = {
    "log-triage-awk": ["deadline_audit"],
    "invoice-reconciliation": ["deadline_audit"],
    "skill-linter": ["skill_folder_audit"],
    "inventory-api-client": ["service_sync"],
}


@pytest.fixture(scope="module")
def created(docker_client, examples_dir, tmp_path_factory):
    """One candidate per shape the skill supports."""
    store = ArtifactStore(tmp_path_factory.mktemp("store"))
    out = {}
    for name, shapes in SHAPES_BY_SKILL.items():
        skill = skill_from_dir(examples_dir / name)
        plans, axes = plans_and_axes(skill, shapes)
        out[name] = create_tasks_for_skill(store, skill, plans, axes, OfflineGenerator(), _gate, load_base_images(),
                                          CreationSettings(max_variants=len(shapes)))
    return store, out


def test_every_shape_passes_every_gate_stage(created):
    _, out = created
    combos = set()
    for name, (result, reports) in out.items():
        assert [b.status for b in result.bundles] == ["retained"] * len(SHAPES_BY_SKILL[name]), (
            name, [(b.task_name, b.reasons, b.evidence) for b in result.bundles])
        combos |= {(b.axes.archetype, b.axes.primary_verifier_pattern) for b in result.retained()}
        for b in result.bundles:
            r = reports[b.task_name]
            assert all(v == 1.0 for v in r.oracle.values()) and all(v == 0.0 for v in r.nop.values())
            assert r.wrong is not None and not all(v == 1.0 for v in r.wrong.values())
            assert r.mutants and r.cheats, b.task_name  # the stages ran, not only passed
            blind = next(c for c in r.checks if c.name == "blind_baselines")
            assert blind.verdict.value == "pass" and r.baselines, (b.task_name, blind)
            assert all(v < 0.5 for a in r.baselines for v in a.metrics.values())
    assert len(combos) >= 3, combos


# Forgeries of what the stand-in service records (issue 10 §3): its state, its journal (one the stub's replay
# accepts), the journal where the verifier reads it, the stub killed and replaced by the agent's own.
FORGERIES = {"forge_state.sh", "forge_journal.sh", "forge_collected_journal.sh", "replace_stub.sh"}


def test_service_forgeries_score_zero(created, docker_client):
    _, out = created
    result, reports = out["inventory-api-client"]
    (b,) = result.bundles
    r = reports[b.task_name]
    cheats = {c.name.removeprefix("cheats/"): c for c in r.cheats}
    assert set(cheats) >= FORGERIES
    for name in FORGERIES:
        assert cheats[name].mean == 0.0, (name, cheats[name].evidence)
    assert "tamper_detected" in cheats["forge_collected_journal.sh"].evidence  # /tests is the verifier's
    mutants = next(c for c in r.checks if c.name == "mutants")
    assert "/tests/services/api/journal.jsonl" in mutants.evidence  # the service's record is mutation-tested too
    assert not docker_client.containers.list(all=True, filters={"label": f"skill2env.gate={SETTINGS.run_id}"})


def test_metadata_and_regate_from_published_folder(created):
    _, out = created
    result, _ = out["log-triage-awk"]
    b = result.retained()[0]
    meta = TaskToml.from_toml((__import__("pathlib").Path(b.path) / "task.toml").read_text()).metadata
    for key in ("source_skill", "source", "source_commit", "source_bundle_digest", "workflow", "archetype",
                "primary_verifier_pattern", "complexity", "persona", "tone", "expertise", "freeze_hash",
                "generator", "model", "prompt_version", "base_image_pins", "workflow_sources", "blueprint_sources"):
        assert key in meta, key
    assert meta["source_skill"] == result.skill_id
    assert _gate(b.path).verdict is GateVerdict.RETAINED


def test_freeze_violation_is_caught(created):
    _, out = created
    result, _ = out["log-triage-awk"]
    b = result.retained()[0]
    test_sh = __import__("pathlib").Path(b.path) / "tests" / "test.sh"
    original = test_sh.read_text()
    try:
        test_sh.write_text(original + "\n# edited\n")
        report = _gate(b.path)
        assert report.verdict is GateVerdict.REJECTED
        assert report.reason is ReasonCode.GRADING_MODIFIED
    finally:
        test_sh.write_text(original)


class BrokenFirst(OfflineGenerator):
    """Writes a solution that does nothing first; the repair (with the gate's evidence) gets the real one."""

    def __init__(self) -> None:
        super().__init__()
        self.evidence: list[str] = []

    def solution(self, ctx, evidence):
        self.evidence.append(evidence)
        if len(self.evidence) == 1:
            return {"solve.sh": "#!/bin/bash\necho 'first draft: forgot the work'\n"}
        return super().solution(ctx, evidence)


def test_repair_loop_fixes_solution_only(docker_client, examples_dir, tmp_path):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill, ["deadline_audit"])
    axes = axes.model_copy(update={"samples": axes.samples[:1]})
    gen = BrokenFirst()
    result, _reports = create_tasks_for_skill(ArtifactStore(tmp_path), skill, plans, axes, gen, _gate,
                                             load_base_images(), CreationSettings(max_repairs=2))
    b = result.bundles[0]
    assert b.status == "retained", b.evidence
    assert b.repair_attempts == 1
    assert "oracle" in gen.evidence[1] and "oracle_failed" in gen.evidence[1]
    freeze_notes = [s.note for s in b.steps if s.step == "freeze"]
    assert freeze_notes == [b.freeze_hash]
    assert [s.step for s in b.steps].count("solution") == 2


def test_repair_budget_exhausted_is_rejected_with_evidence(docker_client, examples_dir, tmp_path):
    class AlwaysBroken(OfflineGenerator):
        def solution(self, ctx, evidence):
            return {"solve.sh": "#!/bin/bash\ntrue\n"}

    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill, ["deadline_audit"])
    axes = axes.model_copy(update={"samples": axes.samples[:1]})
    store = ArtifactStore(tmp_path)
    result, _ = create_tasks_for_skill(store, skill, plans, axes, AlwaysBroken(), _gate, load_base_images(),
                                       CreationSettings(max_repairs=1))
    b = result.bundles[0]
    assert b.status == "rejected" and b.reasons == [ReasonCode.ORACLE_FAILED]
    assert "/rejected/" in b.path and (__import__("pathlib").Path(b.path) / "rejection.json").is_file()
