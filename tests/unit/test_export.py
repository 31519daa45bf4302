"""Export: dataset of retained, non-contaminated tasks; typed parquet tables; DuckDB views; stats and plots."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from skill2env_dagster.artifacts import CORPUS_KEY, PROBE, SNAPSHOT, TASKS
from skill2env_dagster.export import CorpusInputs, corpus_stats, export_corpus, load_inputs
from skill2env_dagster.export.tables import SCHEMAS, build_tables
from skill2env_dagster.models.axes import AxisSample, AxisSampleSet
from skill2env_dagster.models.export import DecontamConfig, ExportManifest
from skill2env_dagster.models.failure import SkillFailures, StageFailure
from skill2env_dagster.models.gate import CheckResult, CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.models.plan import AxisCombo, Criteria, MetaPlan, Usage, Workflow, WorkflowPlanSet
from skill2env_dagster.models.skill import SecondOpinion, SkillRecord, SkillStatus
from skill2env_dagster.models.task import Axes, TaskBundle, TaskBundleSet, TaskGateReports
from skill2env_dagster.probe import load_tasks, probe_retrieval
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore

BENCH_TEXT = " ".join(f"bench{i}" for i in range(50))
AXES = Axes(archetype="repair_debug", primary_verifier_pattern="exact_state", complexity="medium",
            persona="data_engineer", tone="imperative_brief", expertise="practitioner")


def skill(sid: str, domain: str, status: SkillStatus = SkillStatus.ELIGIBLE, reasons=()) -> SkillRecord:
    return SkillRecord(skill_id=sid, source="hub", source_kind="dir", source_uri="/hub", rel_path=sid,
                       abs_path=f"/hub/{sid}", skill_file="SKILL.md", name=sid, description=f"{sid} skill",
                       domain=domain, body=f"Use {sid} tools carefully: {sid}-config and {sid}.yaml files.",
                       bundle_digest="0" * 64, status=status, reasons=list(reasons))


def plan_set(sid: str) -> WorkflowPlanSet:
    wf = Workflow(rank=1, name="fix-config", summary="fix it",
                  criteria=Criteria(verifiable=5, well_specified=4, solvable_in_hours=4, hard_for_good_reason=3,
                                    realistic=4, outcome_graded=5, rationale="r"),
                  meta_plan=MetaPlan(scenario="s", initial_world="w", difficulty_source="d", solution_sketch="x",
                                     verifier_strategy="v"),
                  axis_pool=[AxisCombo(archetype="repair_debug", primary_verifier_pattern="exact_state",
                                       persona="data_engineer")])
    return WorkflowPlanSet(skill_id=sid, bundle_digest="0" * 64, generator="llm", model="m", prompt_version="p1",
                           workflows=[wf],
                           usage=Usage(calls=1, prompt_tokens=1000, completion_tokens=500, cost_usd=0.5))


def axis_set(sid: str) -> AxisSampleSet:
    sample = AxisSample(variant=0, workflow="fix-config", archetype="repair_debug",
                        primary_verifier_pattern="exact_state", complexity="medium", persona="data_engineer",
                        tone="imperative_brief", expertise="practitioner", capability_dimension="planning",
                        difficulty_pattern="split-facts", from_pool=True, seed=2**64 - 1)
    return AxisSampleSet(skill_id=sid, bundle_digest="0" * 64, global_seed=1, samples=[sample])


def task_folder(root: Path, sid: str, name: str, instruction: str) -> Path:
    d = root / sid / name
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text(instruction)
    (d / "tests" / "rubric.md").write_text(f"## Must-do\n- keep {sid}-config valid\n")
    (d / "task.toml").write_text(f'[metadata]\nsource_skill = "{sid}"\ngenerator = "offline"\n')
    return d


def bundle(sid: str, name: str, path: Path | None, status: str = "retained", reasons=()) -> TaskBundle:
    return TaskBundle(task_name=name, skill_id=sid, workflow="fix-config", variant=0, axes=AXES, recipe="r",
                      image="minimal", status=status, reasons=list(reasons), path=str(path or "/nowhere"),
                      metrics=["a", "b"])


def gate(name: str, passed: bool) -> GateReport:
    checks = [CheckResult(name="static", verdict=CheckVerdict.PASS),
              CheckResult(name="oracle", verdict=CheckVerdict.PASS if passed else CheckVerdict.FAIL,
                          reason=None if passed else ReasonCode.ORACLE_FAILED)]
    return GateReport(task=name, verdict=GateVerdict.RETAINED if passed else GateVerdict.REJECTED,
                      reason=None if passed else ReasonCode.ORACLE_FAILED, checks=checks)


@pytest.fixture()
def corpus(tmp_path: Path) -> tuple[CorpusInputs, Path]:
    tasks = tmp_path / "published"
    clean = task_folder(tasks, "alpha", "alpha-fix-config-v0", "Repair the alpha-config so alpha starts again.")
    dirty = task_folder(tasks, "beta", "beta-fix-config-v0", "Please do this: " + BENCH_TEXT)
    skills = [skill("alpha", "devops"), skill("beta", "data"),
              skill("gamma", "health", SkillStatus.SCREENED_OUT, [ReasonCode.NEEDS_HARDWARE])]
    bundles = [
        TaskBundleSet(skill_id="alpha", bundle_digest="0" * 64, skill_md_path="/hub/alpha/SKILL.md",
                      generator="offline", prompt_version="p1",
                      bundles=[bundle("alpha", "alpha-fix-config-v0", clean),
                               bundle("alpha", "alpha-fix-config-v1", None, "rejected", [ReasonCode.NOP_FAILED])],
                      usage=Usage(calls=2, prompt_tokens=2000, completion_tokens=1000, cost_usd=1.0)),
        TaskBundleSet(skill_id="beta", bundle_digest="0" * 64, skill_md_path="/hub/beta/SKILL.md",
                      generator="offline", prompt_version="p1", bundles=[bundle("beta", "beta-fix-config-v0", dirty)]),
    ]
    gates = [TaskGateReports(skill_id="alpha", reports={"alpha-fix-config-v0": gate("alpha-fix-config-v0", True)}),
             TaskGateReports(skill_id="beta", reports={"beta-fix-config-v0": gate("beta-fix-config-v0", False)})]
    probe = probe_retrieval(skills[:2], load_tasks(tasks)[0])
    inputs = CorpusInputs(skills=skills, plans=[plan_set("alpha"), plan_set("beta")],
                          axes=[axis_set("alpha"), axis_set("beta")], bundles=bundles, gates=gates, probe=probe)
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "q.txt").write_text(BENCH_TEXT)
    return inputs, bench


def test_dataset_keeps_retained_and_drops_contaminated(corpus, tmp_path: Path) -> None:
    inputs, bench = corpus
    result = export_corpus(inputs, tmp_path / "out", DecontamConfig(benchmark_paths=[str(bench)]))
    dataset = tmp_path / "out" / "dataset"
    assert sorted(p.name for p in dataset.iterdir()) == ["alpha-fix-config-v0", "manifest.json"]
    assert (dataset / "alpha-fix-config-v0" / "tests" / "rubric.md").is_file()
    manifest = ExportManifest.model_validate_json((dataset / "manifest.json").read_text())
    assert manifest.n_tasks == 1 and manifest.decontamination_checked
    assert [(e.task_name, e.reason) for e in manifest.excluded] == [("beta-fix-config-v0", ReasonCode.CONTAMINATED)]
    assert result.decontam is not None and result.decontam.flagged == ["beta-fix-config-v0"]
    assert json.loads((tmp_path / "out" / "decontamination.json").read_text())["flagged"] == ["beta-fix-config-v0"]


def test_without_benchmarks_the_manifest_says_unchecked(corpus, tmp_path: Path) -> None:
    inputs, _ = corpus
    result = export_corpus(inputs, tmp_path / "out")
    assert result.manifest.n_tasks == 2 and not result.manifest.decontamination_checked
    assert not (tmp_path / "out" / "decontamination.json").exists()


def test_missing_published_folder_is_excluded_with_a_reason(corpus, tmp_path: Path) -> None:
    inputs, _ = corpus
    inputs.bundles[0].bundles.append(bundle("alpha", "alpha-ghost-v0", tmp_path / "gone"))
    manifest = export_corpus(inputs, tmp_path / "out").manifest
    assert [e.task_name for e in manifest.excluded] == ["alpha-ghost-v0"]
    assert manifest.excluded[0].reason == ReasonCode.INTERNAL_ERROR


def test_parquet_tables_and_duckdb_views(corpus, tmp_path: Path) -> None:
    inputs, bench = corpus
    result = export_corpus(inputs, tmp_path / "out", DecontamConfig(benchmark_paths=[str(bench)]))
    tables = tmp_path / "out" / "tables"
    assert {p.stem for p in tables.glob("*.parquet")} == set(SCHEMAS)
    assert pq.read_table(tables / "tasks.parquet").num_rows == 3
    assert pq.read_table(tables / "gates.parquet").num_rows == 4
    assert result.tables["probe"] == 2
    con = duckdb.connect(str(tmp_path / "out" / "corpus.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT task_name FROM retained_tasks").fetchall() == [("alpha-fix-config-v0",)]
        mix = dict(con.execute("SELECT domain, retained_tasks FROM domain_mix").fetchall())
        assert mix == {"devops": 1, "data": 0, "health": 0}
        rates = dict(con.execute("SELECT check_name, pass_rate FROM gate_pass_rates").fetchall())
        assert rates == {"static": 1.0, "oracle": 0.5}
        assert con.execute("SELECT reason, skills FROM skill_reasons").fetchall() == [("needs_hardware", 1)]
        cost = con.execute("SELECT cost_usd, retained_tasks, cost_usd_per_task FROM cost_per_retained_task").fetchone()
        assert cost == (2.0, 1, 2.0)
        axes = con.execute("SELECT axis, value, tasks FROM axis_coverage WHERE axis = 'tone'").fetchall()
        assert axes == [("tone", "imperative_brief", 1)]
        assert con.execute("SELECT count(*) FROM probe_by_domain").fetchone() == (2,)
    finally:
        con.close()


def test_stats_funnel_cost_and_plots(corpus, tmp_path: Path) -> None:
    inputs, bench = corpus
    result = export_corpus(inputs, tmp_path / "out", DecontamConfig(benchmark_paths=[str(bench)]))
    s = result.stats
    assert s.funnel == {"crawled": 3, "screened_out": 1, "eligible": 2, "planned": 2, "task_candidates": 3,
                        "retained": 2, "gates_passed": 1, "contaminated": 1, "exported": 1}
    assert s.skill_reasons == {"needs_hardware": 1} and s.task_reasons == {"nop_failed": 1}
    assert s.domain_mix["devops"] == {"eligible_skills": 1, "retained_tasks": 1}
    assert s.axis_coverage["persona"] == {"data_engineer": 2}
    assert s.gate_pass_rates["oracle"].pass_rate == 0.5 and s.gate_pass_rates["overall"].pass_rate == 0.5
    assert s.cost.cost_usd == 2.0 and s.cost.cost_usd_per_retained_task == 1.0
    assert s.cost.tokens_per_retained_task == (1500 * 2 + 3000) / 2
    assert s.probe["n_skills"] == 2
    assert set(result.plots) == {"funnel", "domain_mix", "axis_coverage", "gate_pass_rates", "skill_reasons"}
    for path in result.plots.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_empty_corpus_exports_typed_empty_tables(tmp_path: Path) -> None:
    result = export_corpus(CorpusInputs(), tmp_path / "out")
    assert result.manifest.n_tasks == 0 and all(n == 0 for n in result.tables.values())
    assert pq.read_table(tmp_path / "out" / "tables" / "tasks.parquet").schema == SCHEMAS["tasks"]
    stats = corpus_stats(build_tables(CorpusInputs()), exported=0)
    assert stats.cost.cost_usd_per_retained_task is None and stats.funnel["crawled"] == 0 and stats.probe == {}


def test_reexport_replaces_previous_export(corpus, tmp_path: Path) -> None:
    inputs, bench = corpus
    export_corpus(inputs, tmp_path / "out")
    assert (tmp_path / "out" / "dataset" / "beta-fix-config-v0").is_dir()
    export_corpus(inputs, tmp_path / "out", DecontamConfig(benchmark_paths=[str(bench)]))
    assert not (tmp_path / "out" / "dataset" / "beta-fix-config-v0").exists()
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_load_inputs_reads_the_artifact_store(corpus, tmp_path: Path) -> None:
    inputs, _ = corpus
    store = ArtifactStore(tmp_path / "artifacts")
    for s in inputs.skills:
        store.save(SNAPSHOT, s.skill_id, s)
    for b in inputs.bundles:
        store.save(TASKS, b.skill_id, b)
    store.save(PROBE, CORPUS_KEY, inputs.probe)
    loaded = load_inputs(store)
    assert [s.skill_id for s in loaded.skills] == ["alpha", "beta", "gamma"]
    assert len(loaded.retained()) == 2 and loaded.probe == inputs.probe and loaded.plans == []
    assert build_tables(loaded)["plans"].num_rows == 0


def _failed(sid: str, stage: str, reason: ReasonCode, usage: Usage) -> SkillFailures:
    return SkillFailures(skill_id=sid, stages={stage: StageFailure(
        stage=stage, reason=reason, message=f"{stage} failed: check S2E_LLM_API_KEY", generator="llm", model="m",
        usage=usage, failed_at="2026-01-01T00:00:00+00:00")})


def test_failed_stages_and_their_usage_are_in_the_tables_stats_and_duckdb(corpus, tmp_path: Path) -> None:
    """A skill that failed at a stage shows that stage and reason; its spent tokens count; an unpriced call makes
    the cost unknown everywhere (NULL in parquet and DuckDB, None in the stats), never a partial sum or $0."""
    inputs, _ = corpus
    inputs.skills.append(skill("delta", "devops"))
    inputs.failures = [_failed("delta", "workflow_plans", ReasonCode.LLM_MISCONFIGURED,
                               Usage(failed_calls=1)),
                       _failed("beta", "task_bundles", ReasonCode.LLM_UNAVAILABLE,
                               Usage(calls=1, failed_calls=4, prompt_tokens=700, completion_tokens=30, cost_usd=None))]
    result = export_corpus(inputs, tmp_path / "out")
    skills = {r["skill_id"]: r for r in pq.read_table(tmp_path / "out" / "tables" / "skills.parquet").to_pylist()}
    assert (skills["delta"]["failed_stage"], skills["delta"]["failure_reason"]) == ("workflow_plans",
                                                                                    "llm_misconfigured")
    assert "S2E_LLM_API_KEY" in skills["delta"]["failure_message"] and skills["alpha"]["failed_stage"] is None
    usage = pq.read_table(tmp_path / "out" / "tables" / "usage.parquet").to_pylist()
    failed = [r for r in usage if r["status"] == "failed"]
    assert {(r["skill_id"], r["stage"], r["failed_calls"]) for r in failed} == {
        ("delta", "workflow_plans", 1), ("beta", "task_bundles", 4)}
    s = result.stats
    assert s.stage_failures == {"task_bundles": {"llm_unavailable": 1}, "workflow_plans": {"llm_misconfigured": 1}}
    assert s.failure_examples["llm_misconfigured"] == "workflow_plans failed: check S2E_LLM_API_KEY"
    assert s.generators == {"llm": 3, "offline": 2}  # llm plans (alpha, beta, delta failed), offline tasks
    assert s.cost.cost_usd is None and s.cost.cost_usd_per_retained_task is None
    assert s.cost.prompt_tokens == 1000 * 2 + 2000 + 700 and s.cost.failed_calls == 5
    con = duckdb.connect(str(tmp_path / "out" / "corpus.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT cost_usd, cost_usd_per_task FROM cost_per_retained_task").fetchone() == (None,
                                                                                                           None)
    finally:
        con.close()


def test_the_screening_second_opinion_counts_in_model_usage_but_is_no_generator(corpus, tmp_path: Path) -> None:
    """The opinion's tokens are a skillhub_snapshot row of the usage table, so the run's llm_usage counts them; the
    row names no generator, so the screened skill is not counted as handled by one."""
    inputs, _ = corpus
    gamma = inputs.skills[2]
    gamma.second_opinion = SecondOpinion(model="m", prompt_version="v", cached=False,
                                         usage=Usage(calls=1, prompt_tokens=300, completion_tokens=40, cost_usd=0.1))
    result = export_corpus(inputs, tmp_path / "out")
    usage = pq.read_table(tmp_path / "out" / "tables" / "usage.parquet").to_pylist()
    row = next(r for r in usage if r["stage"] == "skillhub_snapshot")
    assert (row["skill_id"], row["generator"], row["prompt_tokens"]) == ("gamma", None, 300)
    assert result.stats.cost.prompt_tokens == 1000 * 2 + 2000 + 300 and result.stats.cost.calls == 2 + 2 + 1
    assert result.stats.generators == {"llm": 2, "offline": 2}  # the plans and the tasks of alpha and beta
