"""The model-backed generator against the loopback fake OpenAI server: one call per step in the frozen order, the
candidate written by the real builder and frozen, skill text fenced, usage summed; unsafe or schema-violating
replies fail with llm_schema_violation and write nothing outside the step."""

from __future__ import annotations

import shutil

import pytest
from pydantic import ValidationError

from skill2env_dagster.artifacts import STAGING
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.static_checks import run_static_checks
from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.llm.prompts import PACKAGE_PROMPTS
from skill2env_dagster.models.gate import CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import LLMError, ReasonCode
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import make_context
from skill2env_dagster.tasks.llm_generator import LLMGenerator, task_prompts_version
from skill2env_dagster.tasks.llm_replies import EnvironmentReply, SolutionReply, VerifierReply
from skill2env_dagster.tasks.pipeline import build_candidate, create_tasks_for_skill, task_name
from tests.support.fake_openai import FakeOpenAI, schema_violation
from tests.unit.task_helpers import plans_and_axes, skill_from_dir
from tests.unit.task_llm_support import REPLIES, StepResponder

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}
STEP_ORDER = ["EnvironmentReply", "InstructionReply", "VerifierReply", "RubricReply", "SolutionReply"]


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
    first_user = next(m["content"] for m in bodies[0]["messages"] if m["role"] == "user")
    system = "\n".join(m["content"] for m in bodies[0]["messages"] if m["role"] == "system")
    assert "<<<UNTRUSTED skill_md id=" in system and skill.body.strip()[:60] in system
    assert "environment" in first_user
    later = "\n".join(m["content"] for m in bodies[2]["messages"])
    assert "<<<UNTRUSTED draft_instruction id=" in later  # earlier drafts are fenced too
    usage = gen.total_usage()
    assert usage.calls == 5 and usage.prompt_tokens > 0 and usage.completion_tokens > 0


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
    assert result.usage == gen.total_usage() and result.usage.calls == 2  # the reply and its repair, both spent
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
    assert "EnvironmentReply" in first.evidence[0]
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
    assert len({before, after_rubric, task_prompts_version({"model": "m"}, folder)}) == 3
    assert task_prompts_version({"model": "other"}, folder) != task_prompts_version({"model": "m"}, folder)
