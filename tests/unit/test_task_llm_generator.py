"""The model-backed generator against the loopback fake OpenAI server: one call per step in the frozen order, the
candidate written by the real builder and frozen, skill text fenced, usage summed; unsafe or schema-violating
replies fail with llm_schema_violation and write nothing outside the step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from skill2env_dagster.artifacts import STAGING
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.static_checks import run_static_checks
from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.prompts import PACKAGE_PROMPTS
from skill2env_dagster.models import gate as gate_model
from skill2env_dagster.models.gate import CheckResult, CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import make_context
from skill2env_dagster.tasks.llm_blueprint import skill_files
from skill2env_dagster.tasks.llm_generator import LLMGenerator, task_prompts_version
from skill2env_dagster.tasks.llm_replies import EnvironmentReply, SolutionReply, VerifierReply
from skill2env_dagster.tasks.pipeline import (
    CreationSettings,
    build_candidate,
    create_tasks_for_skill,
    repairable,
    task_name,
)
from tests.support.fake_openai import FakeOpenAI, schema_violation
from tests.unit.task_helpers import plans_and_axes, skill_from_dir, vague_skill
from tests.unit.task_llm_support import BLUEPRINT, CHEATS, REPLIES, StepResponder

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}
STEP_ORDER = ["BlueprintReply", "EnvironmentReply", "InstructionReply", "VerifierReply", "RubricReply",
              "SolutionReply", "CheatsReply"]


@pytest.fixture
def skill_plans(examples_dir):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    return skill, plans, axes.model_copy(update={"samples": axes.samples[:1]})


def _gen(srv: FakeOpenAI) -> LLMGenerator:
    client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake-model", cache_dir=""))
    return LLMGenerator(client, "fake-model", task_prompts_version({"model": "fake-model"}))


def _passing_report() -> GateReport:
    return GateReport(task="t", verdict=GateVerdict.RETAINED)


def _ctx(skill, plans, axes):
    s = axes.samples[0]
    wf = next(w for w in plans.workflows if w.name == s.workflow)
    return make_context(skill, wf, s, PINS, task_name(skill, s))


def test_complete_task_through_builder_and_freeze(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    responder = StepResponder()
    with FakeOpenAI(responder) as srv:
        gen = _gen(srv)
        builder = TaskBuilder(tmp_path / "task")
        env, metrics = build_candidate(builder, _ctx(skill, plans, axes), gen)
        bodies = [r.body for r in srv.requests]
    assert responder.calls == STEP_ORDER
    assert [r.step for r in builder.records] == ["environment", "instruction", "tests", "rubric", "freeze", "solution",
                                                 "cheats"]
    root = builder.dir.root
    assert (root / "environment" / "Dockerfile").read_text().startswith(f"FROM {PINS['minimal']}\nWORKDIR /app\n")
    assert (root / "environment" / "app" / "data" / "readings.csv").is_file()
    assert (root / "solution" / "wrong.sh").is_file() and metrics == ["file_present", "rows_correct"]
    config = TaskToml.from_toml((root / "task.toml").read_text())
    assert config.metadata["generator"] == "llm" and config.metadata["model"] == "fake-model"
    assert config.metadata["freeze_hash"] == compute_freeze_hash(root) == builder.freeze_hash
    assert config.metadata["archetype"] == axes.samples[0].archetype and env.recipe == "llm"
    assert all(c.verdict is CheckVerdict.PASS for c in run_static_checks(root, ("127.0.0.1:5000",))), \
        [c for c in run_static_checks(root, ("127.0.0.1:5000",)) if c.verdict is not CheckVerdict.PASS]
    first_user = next(m["content"] for m in bodies[1]["messages"] if m["role"] == "user")
    system = "\n".join(m["content"] for m in bodies[1]["messages"] if m["role"] == "system")
    assert "<<<UNTRUSTED skill_md id=" in system and skill.body.strip()[:60] in system
    assert "environment" in first_user
    later = "\n".join(m["content"] for m in bodies[3]["messages"])
    assert "<<<UNTRUSTED draft_instruction id=" in later  # earlier drafts are fenced too
    usage = gen.total_usage()
    assert usage.calls == 7 and usage.prompt_tokens > 0 and usage.completion_tokens > 0


def test_repair_call_carries_the_gate_evidence(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    with FakeOpenAI(StepResponder()) as srv:
        gen = _gen(srv)
        ctx = _ctx(skill, plans, axes)
        builder = TaskBuilder(tmp_path / "task")
        build_candidate(builder, ctx, gen)
        gen.solution(ctx, "oracle: oracle_failed metrics {'rows_correct': 0.0}")
        last = "\n".join(m["content"] for m in srv.requests[-1].body["messages"])
    assert "<<<UNTRUSTED gate_evidence id=" in last and "rows_correct" in last
    assert "<<<UNTRUSTED previous_solution id=" in last


@pytest.mark.parametrize("bad", [
    {"files": {"../escape.txt": "x"}},
    {"files": {"/etc/passwd": "x"}},
    {"files": {"tests/test.sh": "x"}},
    {"files": {"Dockerfile": "FROM evil"}},
    {"files": {}, "dockerfile_lines": ["FROM ubuntu"]},
])
def test_environment_reply_rejects_unsafe_paths_and_lines(bad):
    data = {"image": "minimal", "dockerfile_lines": ["COPY app/ /app/"], "files": {}} | bad
    with pytest.raises(ValidationError):
        EnvironmentReply.model_validate(data)


def test_step_replies_need_their_entry_files_and_label_metrics():
    with pytest.raises(ValidationError):
        VerifierReply.model_validate({"files": {"check.py": "x"}, "metrics": ["a_metric", "b_metric"]})
    with pytest.raises(ValidationError):
        VerifierReply.model_validate({"files": {"test.sh": "x"}, "metrics": ["Bad Name", "ok"]})
    with pytest.raises(ValidationError):
        SolutionReply.model_validate({"files": {"wrong.sh": "x"}})
    with pytest.raises(ValidationError):
        SolutionReply.model_validate({"files": {"solve.sh": "x", "../../tests/test.sh": "x"}})


def test_unsafe_reply_fails_its_candidate_only_and_writes_nothing_outside(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    bad = dict(REPLIES, EnvironmentReply={"image": "minimal", "dockerfile_lines": [],
                                          "files": {"../../outside.txt": "pwned"}})

    def no_gate(_path):
        raise AssertionError("a failed creator step must never reach the gates")

    store = ArtifactStore(tmp_path / "store")
    with FakeOpenAI(StepResponder(bad)) as srv:
        gen = _gen(srv)
        result, reports = create_tasks_for_skill(store, skill, plans, axes, gen, no_gate, PINS)
    (b,) = result.bundles
    assert b.status == "rejected" and b.reasons == [ReasonCode.LLM_SCHEMA_VIOLATION] and not reports
    assert "outside" in b.evidence[0] and not list(tmp_path.rglob("outside.txt"))
    assert result.usage == gen.total_usage() and result.usage.calls == 3  # blueprint, the reply and its repair
    assert not any(store.dir(STAGING).rglob("*.*"))


def test_a_failed_candidate_never_stops_its_siblings(skill_plans, tmp_path):
    """The first candidate's model calls keep failing the schema; the second is built and reaches the gates."""
    skill, plans, _ = skill_plans
    _, axes = plans_and_axes(skill)
    axes = axes.model_copy(update={"samples": axes.samples[:2]})
    gated = []
    with FakeOpenAI(StepResponder()) as srv:
        srv.enqueue(schema_violation(), schema_violation())
        result, _ = create_tasks_for_skill(ArtifactStore(tmp_path / "store"), skill, plans, axes, _gen(srv),
                                           lambda p: gated.append(p) or _passing_report(), PINS)
    first, second = result.bundles
    assert first.status == "rejected" and first.reasons == [ReasonCode.LLM_SCHEMA_VIOLATION]
    assert "BlueprintReply" in first.evidence[0] and first.blueprint is None  # a malformed blueprint, recorded
    assert second.status == "retained" and len(gated) == 1


def test_endpoint_down_for_every_candidate_fails_the_skill_with_usage(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", model="fake-model", cache_dir="", max_retries=1,
                    backoff_base=0.0)
    gen = LLMGenerator(LLMClient(cfg, sleep=lambda s: None), "fake-model", "pv")
    store = ArtifactStore(tmp_path / "store")
    with pytest.raises(LLMError) as err:
        create_tasks_for_skill(store, skill, plans, axes, gen, lambda p: None, PINS)
    assert err.value.reason is ReasonCode.LLM_UNAVAILABLE and "127.0.0.1:9" in str(err.value)
    assert err.value.usage is not None and err.value.usage.failed_calls == 2
    assert not any(store.dir(STAGING).rglob("*.*"))


def test_editing_a_task_prompt_changes_the_version(tmp_path):
    folder = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS, folder)
    before = task_prompts_version({"model": "m"}, folder)
    assert before == task_prompts_version({"model": "m"}, folder)
    (folder / "task_rubric.j2").write_text((folder / "task_rubric.j2").read_text() + "\nBe brief.\n")
    after_rubric = task_prompts_version({"model": "m"}, folder)
    (folder / "_task_context.j2").write_text((folder / "_task_context.j2").read_text() + "\nOffline only.\n")
    after_context = task_prompts_version({"model": "m"}, folder)
    (folder / "task_blueprint.j2").write_text((folder / "task_blueprint.j2").read_text() + "\nFewer rules.\n")
    after_blueprint = task_prompts_version({"model": "m"}, folder)
    (folder / "task_cheats.j2").write_text((folder / "task_cheats.j2").read_text() + "\nMore cheats.\n")
    assert len({before, after_rubric, after_context, after_blueprint,
                task_prompts_version({"model": "m"}, folder)}) == 5
    assert task_prompts_version({"model": "other"}, folder) != task_prompts_version({"model": "m"}, folder)


# --- the blueprint and the cheats (issues 10 and 11) ------------------------------------------------------------


def _create(skill, plans, axes, tmp_path, responder, gate=None, max_repairs=2):
    with FakeOpenAI(responder) as srv:
        gen = _gen(srv)
        result, _ = create_tasks_for_skill(ArtifactStore(tmp_path / "store"), skill, plans, axes, gen,
                                           gate or (lambda p: _passing_report()), PINS,
                                           CreationSettings(max_repairs=max_repairs))
        bodies = [r.body for r in srv.requests]
    return result.bundles[0], bodies


def test_blueprint_is_asked_first_stored_and_shown_in_task_toml(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    responder = StepResponder()
    b, bodies = _create(skill, plans, axes, tmp_path, responder)
    assert b.status == "retained" and responder.calls == STEP_ORDER
    bp = b.blueprint
    assert bp is not None and bp.shape == "llm" and [c.metric for c in bp.acceptance] == b.metrics
    (rule,) = bp.predicates
    knowledge = extract_knowledge(skill)
    assert rule.id == "R1" and rule.source in knowledge.refs()  # a real, verbatim line of the skill
    assert bp.axes.sampled_archetype == b.axes.archetype and not bp.axes.fallback_reason
    assert bp.challenges[0].pattern == axes.samples[0].difficulty_pattern and not bp.axes.pattern_fallback_reason
    assert bp.complexity.rules_in_play == 1 and bp.complexity.level == axes.samples[0].complexity
    meta = TaskToml.from_toml((Path(b.path) / "task.toml").read_text()).metadata
    assert meta["blueprint_objective"] == bp.objective and meta["blueprint_metrics"] == b.metrics
    assert meta["blueprint_shape"] == "llm" and meta["blueprint_rules"][0].startswith("R1 format: ")
    blueprint_prompt = "\n".join(m["content"] for m in bodies[0]["messages"])
    assert "<<<UNTRUSTED skill_lines id=" in blueprint_prompt and rule.source.label in blueprint_prompt
    assert axes.samples[0].difficulty_pattern in blueprint_prompt
    for body in bodies[1:]:  # every later step derives from the blueprint
        assert "<<<UNTRUSTED blueprint id=" in "\n".join(m["content"] for m in body["messages"])


def test_cheats_are_asked_after_the_solution_and_written_where_the_gates_look(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    with FakeOpenAI(StepResponder()) as srv:
        builder = TaskBuilder(tmp_path / "task")
        build_candidate(builder, _ctx(skill, plans, axes), _gen(srv))
        cheats_prompt = "\n".join(m["content"] for m in srv.requests[-1].body["messages"])
    scripts = TaskDir(builder.dir.root).cheat_scripts()
    assert [p.name for p in scripts] == sorted(f"{n}.sh" for n in CHEATS)
    assert all(p.stat().st_mode & 0o111 for p in scripts)
    assert builder.records[-1].step == "cheats" and builder.records[-2].step == "solution"
    assert "<<<UNTRUSTED frozen_tests id=" in cheats_prompt and "echo the shipped sample" in cheats_prompt
    assert all(c.verdict is CheckVerdict.PASS for c in run_static_checks(builder.dir.root, ("127.0.0.1:5000",)))


@pytest.mark.parametrize("bad", [
    {"cheats": {"only_one": "#!/bin/bash\ntrue\n"}},
    {"cheats": {"broken": "#!/bin/bash\nif then fi\n", "fine": "#!/bin/bash\ntrue\n"}},
    {"cheats": {"../../escape": "#!/bin/bash\ntrue\n", "fine": "#!/bin/bash\ntrue\n"}},
    {"cheats": {"no_shebang": "true\n", "fine": "#!/bin/bash\ntrue\n"}},
])
def test_a_malformed_cheats_reply_is_repaired_then_recorded(skill_plans, tmp_path, bad):
    skill, plans, axes = skill_plans
    responder = StepResponder(dict(REPLIES, CheatsReply=bad))
    b, _ = _create(skill, plans, axes, tmp_path, responder)
    assert b.status == "rejected" and b.reasons == [ReasonCode.LLM_SCHEMA_VIOLATION], b.evidence
    assert "CheatsReply" in b.evidence[0] and responder.calls.count("CheatsReply") == 2  # asked again once
    assert b.blueprint is not None and not list(tmp_path.rglob("escape*"))


def test_a_blueprint_citing_no_skill_line_is_refused(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    bad = dict(REPLIES, BlueprintReply={**BLUEPRINT, "rules": [{**BLUEPRINT["rules"][0], "source": "SKILL.md:999"}]})
    responder = StepResponder(bad)
    b, _ = _create(skill, plans, axes, tmp_path, responder)
    assert b.status == "rejected" and b.reasons == [ReasonCode.LLM_SCHEMA_VIOLATION]
    assert "BlueprintReply" in b.evidence[0] and responder.calls == ["BlueprintReply"] * 2


def test_tests_that_grade_other_metrics_than_the_blueprint_break_the_contract(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    other = {**BLUEPRINT, "acceptance": [{"metric": "totals_exact", "checks": "x", "rules": []},
                                         {"metric": "file_present", "checks": "y", "rules": []}]}
    responder = StepResponder(dict(REPLIES, BlueprintReply=other))
    b, _ = _create(skill, plans, axes, tmp_path, responder)
    assert b.status == "rejected" and b.reasons == [ReasonCode.CREATOR_CONTRACT_FAILED]
    assert "totals_exact" in b.evidence[0] and "RubricReply" not in responder.calls


def test_a_skill_without_extracted_lines_gets_no_checkable_rule(tmp_path, examples_dir):
    skill = vague_skill(tmp_path)
    # The offline planner gives a vague skill no workflow at all; the model's path is given one to try.
    plans, axes = plans_and_axes(skill_from_dir(examples_dir / "log-triage-awk"))
    plans = plans.model_copy(update={"skill_id": skill.skill_id, "bundle_digest": skill.bundle_digest})
    responder = StepResponder()
    b, _ = _create(skill, plans, axes.model_copy(update={"samples": axes.samples[:1]}), tmp_path, responder)
    assert b.status == "rejected" and b.reasons == [ReasonCode.NO_CHECKABLE_RULE] and responder.calls == []


def _report(**checks: CheckVerdict) -> GateReport:
    fails = [CheckResult(name=n, verdict=v, reason=ReasonCode.SHORTCUT_PASSED if n == "cheats" else
                         ReasonCode.ORACLE_FAILED if v is CheckVerdict.FAIL else None, evidence=f"{n} evidence")
             for n, v in checks.items()]
    failed = [c for c in fails if c.verdict is CheckVerdict.FAIL]
    cheat = gate_model.ShortcutAttempt(kind=gate_model.AttemptKind.CHEAT, name="cheats/hard_coded_answer.sh",
                                       family="cheat", verdict=checks.get("cheats", CheckVerdict.PASS),
                                       metrics={"rows_correct": 1.0}, mean=1.0)
    return GateReport(task="t", verdict=GateVerdict.REJECTED if failed else GateVerdict.RETAINED,
                      reason=failed[0].reason if failed else None, checks=fails,
                      oracle={"file_present": 1.0, "rows_correct": 0.25}, nop={"file_present": 0.0,
                                                                              "rows_correct": 0.0},
                      cheats=[cheat], mutation_testing="skipped: the Oracle did not pass")


def test_a_passing_cheat_rejects_and_is_never_repaired(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    responder = StepResponder()
    b, _ = _create(skill, plans, axes, tmp_path, responder, gate=lambda p: _report(oracle=CheckVerdict.PASS,
                                                                                 cheats=CheckVerdict.FAIL))
    assert b.status == "rejected" and b.reasons == [ReasonCode.SHORTCUT_PASSED] and b.repair_attempts == 0
    assert responder.calls.count("SolutionReply") == 1 and [r.step for r in b.steps].count("tests") == 1


def test_the_repair_call_carries_per_metric_rewards_and_shortcut_results(skill_plans, tmp_path):
    skill, plans, axes = skill_plans
    responder = StepResponder()
    reports = iter([_report(oracle=CheckVerdict.FAIL), _passing_report()])
    b, bodies = _create(skill, plans, axes, tmp_path, responder, gate=lambda p: next(reports))
    assert b.status == "retained" and b.repair_attempts == 1
    repair = "\n".join(m["content"] for m in bodies[-1]["messages"])
    assert responder.calls[-1] == "SolutionReply" and "<<<UNTRUSTED gate_evidence id=" in repair
    for part in ("failing check oracle (oracle_failed)", "Oracle (solve.sh) per-metric rewards: "
                 "{'file_present': 1.0, 'rows_correct': 0.25}", "no-op (untouched environment) per-metric rewards",
                 "cheats: 1 run", "cheats/hard_coded_answer.sh", "mutation testing: skipped"):
        assert part in repair, part


def test_a_solve_sh_syntax_error_is_repairable_but_a_test_sh_one_is_not():
    def syntax(evidence: str) -> GateReport:
        return GateReport(task="t", verdict=GateVerdict.REJECTED, reason=ReasonCode.STATIC_VALIDATION_FAILED,
                          checks=[CheckResult(name="bash_syntax", verdict=CheckVerdict.FAIL,
                                              reason=ReasonCode.STATIC_VALIDATION_FAILED, evidence=evidence)])
    fixable = syntax("solution/solve.sh: line 3: syntax error near unexpected token `fi'")
    assert "failing check bash_syntax" in (repairable(fixable) or "")
    assert repairable(syntax("tests/test.sh: line 3: syntax error")) is None
    assert repairable(syntax("solution/solve.sh: line 3: x; solution/cheats/a.sh: line 1: y")) is None


def test_the_skill_files_quoted_are_bounded(tmp_path):
    folder = tmp_path / "big"
    (folder / "data").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: big\ndescription: Big files.\n---\n# Big\n\nYou must sum rows.\n")
    (folder / "data" / "rows.csv").write_text("a,b\n" + "1,2\n" * 2000)
    for i in range(45):
        (folder / "data" / f"f{i:02d}.md").write_text("x\n")
    skill = skill_from_dir(folder)
    text = skill_files(skill, extract_knowledge(skill))
    assert "--- data/rows.csv (data) (first 3000 of 8004 characters)" in text
    assert text.count("\n--- data/f") < 45 and "more files, not shown" in text
    assert "You must sum rows" not in text  # SKILL.md is quoted on its own (bounded by BODY_LIMIT)


def test_a_hardening_round_requires_its_added_patterns_in_the_blueprint(skill_plans, tmp_path):
    """Model-written tasks take part in hardening: the patterns earlier rounds added are required in the blueprint
    prompt (offered in the reply's enum), and a blueprint that leaves one out says so in its axes."""
    from skill2env_dagster.catalogue import load_patterns

    skill, plans, axes = skill_plans
    sample = axes.samples[0]
    added = next(p.id for p in load_patterns().patterns if p.dimension != sample.capability_dimension)
    hardened = axes.model_copy(update={"samples": [sample.model_copy(update={"added_patterns": [added]})]})
    b, bodies = _create(skill, plans, hardened, tmp_path, StepResponder())
    prompt = "\n".join(m["content"] for m in bodies[0]["messages"])
    assert "This is a hardening round" in prompt and added in prompt
    assert b.blueprint is not None and f"required by hardening but not instantiated: {added}" in \
        b.blueprint.axes.pattern_fallback_reason
    _, bodies2 = _create(skill, plans, axes, tmp_path / "plain", StepResponder())
    assert "This is a hardening round" not in "\n".join(m["content"] for m in bodies2[0]["messages"])
