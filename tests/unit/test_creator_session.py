"""The creator agent's harness without Docker (a scripted model, an in-memory lab and gate): the frozen order is
enforced by refusals the model sees, the freeze makes the grading read-only, budgets are recorded, and every kind
of bad model behaviour ends the candidate with a recorded reason, never an exception."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skill2env_dagster.catalogue import load_patterns
from skill2env_dagster.creator import CreatorAgent, CreatorLimits
from skill2env_dagster.creator.agent import candidate_patterns
from skill2env_dagster.gates.reap import is_guarded, strip_guard
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.tools import RequestedCall
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.gate import AttemptKind, CheckVerdict, GateVerdict, ShortcutAttempt
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import make_context
from skill2env_dagster.tasks.pipeline import CreationSettings, create_task, create_tasks_for_skill, task_name
from tests.unit.creator_support import (
    BLUEPRINT,
    ORACLE_FAILED,
    PINS,
    RETAINED,
    SHORTCUT,
    SOLVE,
    TASK,
    TRIAL,
    FakeGate,
    FakeLab,
    ScriptedChat,
    build_and_freeze,
    solved,
    trial_cheat_attempts,
    writes,
)
from tests.unit.task_helpers import plans_and_axes, skill_from_dir


@pytest.fixture
def ctx(examples_dir):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    s = axes.samples[0]
    wf = next(w for w in plans.workflows if w.name == s.workflow)
    return make_context(skill, wf, s, PINS, task_name(skill, s))


def author(ctx, tmp_path, turns, *, lab=None, gate=None, limits=None, repairs=2):
    chat = turns if isinstance(turns, ScriptedChat) else ScriptedChat(turns)
    lab = lab or FakeLab()
    agent = CreatorAgent(chat, "scripted", "pv", lab, GateSettings(), limits or CreatorLimits(max_candidates=1))
    bundle, report = create_task(ArtifactStore(tmp_path / "store"), ctx, agent, gate or FakeGate(),
                                 CreationSettings(max_repairs=repairs))
    return bundle, report, chat, lab


def tool_results(bundle, candidate: int = -1) -> list[str]:
    """Every tool result the model was shown, in order (from the candidate's ATIF trajectory)."""
    t = AtifTrajectory.model_validate_json(Path(bundle.creator[candidate].trajectory).read_text())
    return [r.content for s in t.steps if s.observation for r in s.observation.results]


def pattern(ctx) -> str:
    return candidate_patterns(ctx)[0].id


def test_the_whole_loop_refuses_out_of_order_writes_and_edits_after_the_freeze(ctx, tmp_path):
    turns = [[("write_file", {"path": "tests/test.sh", "content": "#!/bin/bash\n"}),  # before the instruction
              ("write_file", {"path": "solution/solve.sh", "content": SOLVE})],  # before the freeze
             *build_and_freeze(pattern(ctx)),
             [("write_file", {"path": "tests/test.sh", "content": "#!/bin/bash\necho 1\n"}),  # frozen
              ("write_file", {"path": "instruction.md", "content": "changed"}), *solved(), ("submit", {})]]
    b, r, _, lab = author(ctx, tmp_path, turns)
    assert b.status == "retained" and r is not None and r.verdict is GateVerdict.RETAINED, (b.reasons, b.evidence)
    (run,) = b.creator
    assert run.stop == "submitted" and run.frozen and run.turns == 4 and run.refusals == {"order": 2, "frozen": 2}
    results = tool_results(b)
    assert results[0].startswith("refused: write instruction.md before tests/test.sh")
    assert results[1].startswith("refused: solution/solve.sh comes after the freeze")
    assert any(t.startswith("frozen (sha256:") for t in results)
    assert sum(t.startswith("refused: tests/test.sh is frozen") for t in results) == 1
    task = Path(b.path)
    frozen = (task / "tests/test.sh").read_text()
    assert is_guarded(frozen) and strip_guard(frozen) == TASK["tests/test.sh"]  # the refused edit changed nothing
    assert (task / "instruction.md").read_text() == TASK["instruction.md"]
    assert b.metrics == ["endpoints_correct", "list_exact"] and b.blueprint is not None
    assert b.blueprint.predicates[0].source.label == "SKILL.md:22" and b.freeze_hash.startswith("sha256:")
    assert lab.noops == 2  # the trial check and the freeze ran the no-op
    trajectory = AtifTrajectory.model_validate_json(Path(run.trajectory).read_text())
    assert trajectory.extra["status"] == "retained" and trajectory.final_metrics.total_prompt_tokens == 4000


def test_the_freeze_is_refused_until_the_draft_is_ready(ctx, tmp_path):
    lab = FakeLab(nop={"endpoints_correct": 0.5, "list_exact": 0.0})
    turns = [[("freeze", {})], *build_and_freeze(pattern(ctx))]
    b, _, _, _ = author(ctx, tmp_path, turns, lab=lab, limits=CreatorLimits(max_turns=3, max_candidates=1))
    results = tool_results(b)
    assert results[0].startswith("refused: set_blueprint before the freeze")
    assert "FAIL: every metric must be 0 (nop_failed)" in results[-2]  # the trial check: not run
    assert "trial gate with your reference_solution: not run" in results[-2]
    assert results[-1].startswith("refused: no retained trial of the draft as it is now")
    assert b.status == "rejected" and b.reasons == [ReasonCode.CREATOR_BUDGET_EXHAUSTED]
    assert "not frozen" in b.evidence[0] and not b.creator[0].frozen


def test_a_model_that_never_freezes_runs_out_of_turns(ctx, tmp_path):
    turns = [writes({"environment/Dockerfile": TASK["environment/Dockerfile"]})] * 5
    b, _, _, _ = author(ctx, tmp_path, turns, limits=CreatorLimits(max_turns=5, max_candidates=1))
    (run,) = b.creator
    assert (b.status, b.reasons, run.stop, run.turns) == ("rejected", [ReasonCode.CREATOR_BUDGET_EXHAUSTED],
                                                          "max_turns", 5)
    assert "5 turns used" in b.evidence[0] and "not frozen" in b.evidence[0]


def test_editing_the_tests_after_the_freeze_again_and_again_is_a_loop(ctx, tmp_path):
    edit = [("write_file", {"path": "tests/test.sh", "content": "#!/bin/bash\necho forged\n"})]
    b, _, _, _ = author(ctx, tmp_path, [*build_and_freeze(pattern(ctx)), edit, edit, edit, edit])
    assert b.status == "rejected" and b.reasons == [ReasonCode.CREATOR_LOOP] and b.creator[0].stop == "loop"
    assert b.creator[0].refusals == {"frozen": 3}
    results = tool_results(b)
    assert "one more identical failure ends this candidate" in results[-2] and "ended: this exact call" in results[-1]


def test_the_same_failing_command_ends_the_candidate_but_a_change_between_resets_the_count(ctx, tmp_path):
    fail = [("run", {"command": "false  # the same failing command"})]
    change = writes({"environment/Dockerfile": TASK["environment/Dockerfile"]})
    b, _, _, lab = author(ctx, tmp_path, [fail, fail, change, fail, fail, fail, fail])
    assert b.reasons == [ReasonCode.CREATOR_LOOP] and b.creator[0].turns == 6  # 2 fails, a change, then 3
    assert len(lab.benches[0].commands) == 5


def test_the_token_budget_is_checked_between_turns(ctx, tmp_path):
    chat = ScriptedChat(build_and_freeze(pattern(ctx)) * 3, tokens_per_turn=60_000)
    b, _, _, _ = author(ctx, tmp_path, chat, limits=CreatorLimits(max_total_tokens=100_000, max_candidates=1))
    run = b.creator[0]
    assert (run.stop, b.reasons, run.turns) == ("max_tokens", [ReasonCode.CREATOR_BUDGET_EXHAUSTED], 2)
    assert run.usage.prompt_tokens == 120_000


def test_the_wall_time_budget(ctx, tmp_path):
    b, _, _, _ = author(ctx, tmp_path, build_and_freeze(pattern(ctx)),
                        limits=CreatorLimits(max_wall_sec=1e-9, max_candidates=1))
    assert b.creator[0].stop == "max_wall_time" and b.reasons == [ReasonCode.CREATOR_BUDGET_EXHAUSTED]


def test_garbage_calls_are_shown_back_and_silence_gets_reminders_then_ends(ctx, tmp_path):
    turns = [RequestedCall(call_id="x", name="write_file", arguments='{"path": "environment/Dockerfile"'),
             RequestedCall(call_id="y", name="rm_rf", arguments="{}"),
             [("write_file", {"path": "environment/Dockerfile"})],
             [("write_file", {"path": "../escape", "content": "x"})],
             "I think I am finished.", "Really finished.", "Stop."]
    b, _, chat, _ = author(ctx, tmp_path, turns)
    results = tool_results(b)
    assert results[0].startswith("error: arguments are not valid JSON") and "unknown tool 'rm_rf'" in results[1]
    assert "missing ['content']" in results[2] and "not a safe relative path" in results[3]
    reminders = [m["content"] for m in chat.seen[-1] if m["role"] == "user"][1:]
    assert len(reminders) == 2 and "No tool was called" in reminders[0]
    assert b.status == "rejected" and b.reasons == [ReasonCode.CREATOR_INCOMPLETE]
    assert b.creator[0].stop == "incomplete" and b.creator[0].turns == 7


def test_a_model_that_times_out_is_an_error_not_a_verdict(ctx, tmp_path):
    boom = LLMError(ReasonCode.LLM_UNAVAILABLE, "no answer within 60s")
    b, _, _, _ = author(ctx, tmp_path, [build_and_freeze(pattern(ctx))[0], boom])
    assert b.status == "error" and b.reasons == [ReasonCode.LLM_UNAVAILABLE] and b.creator[0].stop == "model_failed"


def test_out_of_budget_with_a_frozen_solved_task_the_gate_decides(ctx, tmp_path):
    turns = [*build_and_freeze(pattern(ctx)), solved()]
    gate = FakeGate(RETAINED)
    b, _, _, _ = author(ctx, tmp_path, turns, gate=gate, limits=CreatorLimits(max_turns=3, max_candidates=1))
    assert b.status == "retained" and b.creator[0].stop == "max_turns" and gate.calls == 1


def test_a_solution_bug_is_repaired_in_the_same_conversation(ctx, tmp_path):
    turns = [*build_and_freeze(pattern(ctx)), [*solved(), ("submit", {})],
             [("write_file", {"path": "solution/solve.sh", "content": SOLVE + "# fixed\n"}), ("submit", {})]]
    gate = FakeGate(ORACLE_FAILED, RETAINED)
    b, _, _, _ = author(ctx, tmp_path, turns, gate=gate)
    assert b.status == "retained" and b.repair_attempts == 1 and gate.calls == 2
    assert "A solution bug: fix solution/ only" in tool_results(b)[-3]
    assert (Path(b.path) / "solution/solve.sh").read_text().endswith("# fixed\n")


def test_submit_needs_the_freeze_the_solution_and_two_cheats(ctx, tmp_path):
    turns = [[("submit", {})], *build_and_freeze(pattern(ctx)),
             [("write_file", {"path": "solution/solve.sh", "content": SOLVE}), ("submit", {})], [*solved(),
                                                                                                  ("submit", {})]]
    b, _, _, _ = author(ctx, tmp_path, turns)
    results = tool_results(b)
    assert results[0].startswith("refused: nothing to submit before the freeze")
    assert any(t.startswith("refused: 0 cheat(s)") for t in results) and b.status == "retained"


def test_a_frozen_candidate_the_gate_rejects_is_replaced_by_one_shown_the_evidence(ctx, tmp_path):
    done = [*build_and_freeze(pattern(ctx)), [*solved(), ("submit", {})]]
    chat = ScriptedChat(done + done)
    gate = FakeGate(SHORTCUT, RETAINED)
    b, _, _, _ = author(ctx, tmp_path, chat, gate=gate, limits=CreatorLimits(max_candidates=2))
    assert b.status == "retained" and [r.status for r in b.creator] == ["rejected", "retained"]
    first = b.creator[0]
    assert first.reasons == [ReasonCode.SHORTCUT_PASSED] and first.path.endswith("--c1")
    assert "/rejected/" in first.path and json.loads((Path(first.path) / "rejection.json").read_text())["reasons"]
    brief = chat.seen[3][1]["content"]  # the second candidate's brief
    assert "A previous candidate for this workflow was frozen and then rejected" in brief
    assert "FAIL mutants (shortcut_passed)" in brief and "--- tests/test.sh" in brief


def test_the_replacement_sees_every_file_of_the_rejected_tests_and_the_cheat_that_passed(ctx, tmp_path):
    """Seen with a capable model: the weakness sat in tests/grade.py, which the replacement's brief left out."""
    grade = "import json\n# WEAK: any row with the right header earns full marks\n"
    blueprint = {**BLUEPRINT, "challenges": [{**BLUEPRINT["challenges"][0], "pattern": pattern(ctx)}]}
    first = [[("set_blueprint", blueprint), *writes({**TASK, "tests/grade.py": grade,
                                                     "tests/expected.json": "[1]"})],
             [TRIAL, ("freeze", {})], [*solved(), ("submit", {})]]
    caught = ShortcutAttempt(kind=AttemptKind.CHEAT, name="cheats/all.sh", family="cheat", verdict=CheckVerdict.FAIL,
                             reason=ReasonCode.SHORTCUT_PASSED, metrics={"list_exact": 0.6}, mean=0.6)
    rejected = SHORTCUT.model_copy(update={"cheats": [caught]})
    chat = ScriptedChat([*first, *build_and_freeze(pattern(ctx)), [*solved(), ("submit", {})]])
    b, _, _, _ = author(ctx, tmp_path, chat, gate=FakeGate(rejected, RETAINED), limits=CreatorLimits(max_candidates=2))
    assert [r.status for r in b.creator] == ["rejected", "retained"]
    brief = chat.seen[3][1]["content"]
    order = [brief.index(f"--- {f}") for f in ("instruction.md", "tests/test.sh", "tests/grade.py",
                                                  "tests/expected.json", "tests/rubric.md",
                                                  "solution/cheats/all.sh")]
    assert order == sorted(order) and "WEAK: any row" in brief
    assert "--- solution/cheats/empty.sh" not in brief  # only the cheat the gate caught


def test_the_difficulty_pattern_list_is_the_same_in_every_conversation(ctx, examples_dir, tmp_path):
    """The tools offer the whole catalogue in one order whatever the variant samples (a model answering many
    conversations had patterns it used in another refused); the brief still names the sampled one."""
    other = next(p.id for p in load_patterns().patterns
                 if p.id not in {q.id for q in candidate_patterns(ctx)})
    blueprint = {**BLUEPRINT, "challenges": [{**BLUEPRINT["challenges"][0], "pattern": other}]}
    chat = ScriptedChat([[("set_blueprint", blueprint)], "Thinking."])
    b, _, _, _ = author(ctx, tmp_path, chat, limits=CreatorLimits(max_candidates=1, nudges=0, max_turns=2))
    assert tool_results(b)[0].startswith("blueprint set:") and "is not instantiated" in tool_results(b)[0]
    enum = next(t for t in chat.tools if t["function"]["name"] == "set_blueprint")["function"]["parameters"][
        "properties"]["challenges"]["items"]["properties"]["pattern"]["enum"]
    assert enum == sorted(p.id for p in load_patterns().patterns)
    assert f"- {pattern(ctx)} (" in chat.seen[0][1]["content"]


def test_before_the_freeze_a_draft_reference_runs_the_whole_gate_on_a_throw_away_copy(ctx, tmp_path):
    """Seen with a capable model: the skill-blind baselines (which need the Oracle's answer) first showed up as the
    rejection after the freeze. Now `check` takes a draft solve.sh (and the model's naive cheats) before it and runs
    the whole gate; the freeze needs such a trial, with the cheats, to have retained the draft as it is."""
    seen: list[tuple[Path, str, bool, list[str]]] = []

    def gate(task_dir: Path):
        solve = task_dir / "solution" / "solve.sh"
        cheats = sorted(p.name for p in (task_dir / "solution" / "cheats").glob("*.sh"))
        seen.append((task_dir, solve.read_text(), os.access(solve, os.X_OK), cheats))
        return SHORTCUT if len(seen) == 1 else RETAINED.model_copy(update={"cheats": trial_cheat_attempts(task_dir)})

    blueprint = {**BLUEPRINT, "challenges": [{**BLUEPRINT["challenges"][0], "pattern": pattern(ctx)}]}
    turns = [[("set_blueprint", blueprint), *writes(TASK), ("check", {"reference_solution": SOLVE})],
             [("freeze", {})],
             [("check", {"reference_solution": SOLVE, "cheats": {"all": "#!/bin/bash\ntrue\n"}}), ("freeze", {})],
             [TRIAL, ("freeze", {}), ("check", {"reference_solution": SOLVE})], [*solved(), ("submit", {})]]
    b, _, _, _ = author(ctx, tmp_path, turns, gate=gate)
    results = tool_results(b)[len(TASK) + 1:]
    trial = results[0]
    assert "no-op (test.sh on the untouched environment)" in trial and "the whole gate on a throw-away copy" in trial
    assert "FAIL mutants (shortcut_passed)" in trial and "fix the draft and try again before the freeze" in trial
    assert seen[0][1:] == (SOLVE, True, []) and not seen[0][0].exists()  # the copy is gone
    assert results[1].startswith("refused: no retained trial of the draft as it is now")
    assert "the freeze needs a retained trial with at least 2 cheats that do work (1 did" in results[2]  # one
    assert results[3].startswith("refused: no retained trial")
    assert "this draft may be frozen now" in results[4] and seen[2][3] == ["all.sh", "empty.sh"]
    assert results[5].startswith("frozen (sha256:")
    assert results[6].startswith("refused: reference_solution and cheats are for trials before the freeze")
    # no-op + trial, freeze refused, no-op + trial, freeze refused, no-op + trial, the freeze's no-op, final gate
    assert b.status == "retained" and b.creator[0].gate_runs == 8
    plain = [[("set_blueprint", blueprint), *writes(TASK), ("check", {})]]
    b2, _, _, _ = author(ctx, tmp_path / "2", plain, limits=CreatorLimits(max_candidates=1, max_turns=2, nudges=0))
    assert "pass a draft solve.sh as `reference_solution`, and your cheats as `cheats`" in tool_results(b2)[-1]


def test_cheats_that_do_no_work_do_not_count_toward_the_freeze(ctx, tmp_path):
    """An empty or no-op cheat tests nothing: a trial whose cheats left no non-empty file changed on disk (the
    gate's `work`) is retained but does not open the freeze, and the result names the idle cheats."""
    idle = ("check", {"reference_solution": SOLVE, "cheats": {"nothing": "#!/bin/bash\n# no work\ntrue\n",
                                                              "empty": "#!/bin/bash\n# no work\n: > /tmp/x\n"}})
    turns = [[*build_and_freeze(pattern(ctx))[0][0:1], *writes(TASK), idle, ("freeze", {})]]
    b, _, _, _ = author(ctx, tmp_path, turns, limits=CreatorLimits(max_candidates=1, max_turns=2, nudges=0))
    results = tool_results(b)
    assert "the freeze needs a retained trial with at least 2 cheats that do work (0 did; these did no work" \
        in results[-2] and "cheats/empty.sh, cheats/nothing.sh" in results[-2]
    assert results[-1].startswith("refused: no retained trial") and not b.creator[0].frozen


def test_a_naive_cheat_half_satisfying_a_metric_in_the_trial_keeps_the_draft_open(ctx, tmp_path):
    """The trial judges the model's cheats metric by metric, as the final gate does: a condition-dropping cheat at
    0.6 on one metric (mean 0.3) fails the trial, so the freeze stays refused and tests/ can still be fixed."""
    half = ShortcutAttempt(kind=AttemptKind.CHEAT, name="cheats/all.sh", family="cheat", verdict=CheckVerdict.PASS,
                           metrics={"endpoints_correct": 0.6, "list_exact": 0.0}, mean=0.3)
    gate = FakeGate(trial=RETAINED.model_copy(update={"cheats": [half]}))
    b, _, _, _ = author(ctx, tmp_path, build_and_freeze(pattern(ctx)), gate=gate,
                        limits=CreatorLimits(max_candidates=1, max_turns=2))
    results = tool_results(b)
    assert "FAIL cheats_per_metric (shortcut_passed): cheats/all.sh: endpoints_correct=0.6" in results[-2]
    assert results[-1].startswith("refused: no retained trial") and not b.creator[0].frozen


def test_a_world_that_quotes_the_skill_is_not_frozen(ctx, tmp_path):
    """Blind review: environments with a policy doc quoting the skill (reading it is enough). A line of the skill's
    documents of 40+ characters repeated in the world (markup and case aside) refuses the freeze, naming it."""
    skill_line = next(ln for ln in (Path(ctx.skill.abs_path) / "SKILL.md").read_text().splitlines()
                      if len(ln.strip()) > 60 and not ln.startswith(("---", "name:", "description:")))
    policy = {"environment/app/POLICY.md": f"# Team policy\n\n> **{skill_line.strip().upper()}**\n"}
    turns = [[*build_and_freeze(pattern(ctx))[0][0:1], *writes({**TASK, **policy})], [TRIAL, ("freeze", {})],
             [("delete_file", {"path": "environment/app/POLICY.md"}), TRIAL, ("freeze", {})]]
    b, _, _, _ = author(ctx, tmp_path, turns, limits=CreatorLimits(max_candidates=1, max_turns=3))
    results = tool_results(b)
    refusal = next(r for r in results if r.startswith("refused: the world hands over the skill"))
    assert "environment/app/POLICY.md repeats SKILL.md:" in refusal
    # Seen with a capable model: the freeze refused a world whose trial had been retained. `check` shows it now.
    trial = next(r for r in results if "FAIL the world hands over the skill" in r)
    assert "trial gate with your reference_solution: not run" in trial
    assert b.creator[0].frozen


def test_a_blueprint_rule_with_an_invented_number_is_refused(ctx, tmp_path):
    """A deciding rule is the skill's own: a number its cited lines do not state (an invented threshold) refuses
    set_blueprint, naming it."""
    invented = {**BLUEPRINT, "challenges": [{**BLUEPRINT["challenges"][0], "pattern": pattern(ctx)}],
                "rules": [{"source": "SKILL.md:22-23", "kind": "format",
                           "statement": "Group 5xx by path; an endpoint with 17 or more errors is critical."}]}
    b, _, _, _ = author(ctx, tmp_path, [[("set_blueprint", invented)]],
                        limits=CreatorLimits(max_candidates=1, max_turns=2, nudges=0))
    result = tool_results(b)[0]
    assert result.startswith("refused: blueprint not set: rule 1: the number(s) 17 are not in SKILL.md:22-23")


@pytest.mark.parametrize(("metrics", "status"), [({"endpoints_correct": 0.65, "list_exact": 0.0}, "rejected"),
                                                 ({"endpoints_correct": 0.49, "list_exact": 0.4}, "retained")])
def test_the_models_own_cheats_are_judged_metric_by_metric(ctx, tmp_path, metrics, status):
    """Blind review: a creator's cheat earned 0.65 on one metric with a mean of 0.20, which the gate's mean rule
    accepts. The harness judges the model's cheats like the skill-blind baselines: one metric at 0.5 rejects."""
    cheat = ShortcutAttempt(kind=AttemptKind.CHEAT, name="cheats/all.sh", family="cheat", verdict=CheckVerdict.PASS,
                            metrics=metrics, mean=sum(metrics.values()) / 2)
    gate = FakeGate(RETAINED.model_copy(update={"cheats": [cheat]}))
    b, _, _, _ = author(ctx, tmp_path, [*build_and_freeze(pattern(ctx)), [*solved(), ("submit", {})]], gate=gate)
    assert b.status == status
    if status == "rejected":
        assert b.reasons == [ReasonCode.SHORTCUT_PASSED] and "cheats_per_metric" in b.evidence[0]
        assert "FAIL cheats_per_metric (shortcut_passed): cheats/all.sh: endpoints_correct=0.65" in tool_results(b)[-1]


def test_no_candidate_failure_stops_its_siblings(examples_dir, tmp_path):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    axes = axes.model_copy(update={"samples": axes.samples[:3]})
    chat = ScriptedChat([RuntimeError("a bug somewhere"), "Never mind.", "Never mind."])
    agent = CreatorAgent(chat, "scripted", "pv", FakeLab(), GateSettings(), CreatorLimits(max_candidates=1, nudges=0))
    result, _ = create_tasks_for_skill(ArtifactStore(tmp_path / "store"), skill, plans, axes, agent, FakeGate(),
                                       PINS, CreationSettings(max_variants=3))
    assert [b.status for b in result.bundles] == ["error", "rejected", "rejected"]
    first = result.bundles[0]
    assert first.reasons == [ReasonCode.INTERNAL_ERROR] and "RuntimeError: a bug somewhere" in first.evidence[0]
    assert Path(first.creator[0].trajectory).is_file()  # the crashed session's record is kept
    assert all(b.reasons == [ReasonCode.CREATOR_INCOMPLETE] for b in result.bundles[1:])


def test_reading_the_skill_keeping_workbench_output_and_deleting_a_file(ctx, tmp_path):
    turns = [[("read_skill", {"path": "SKILL.md", "first_line": 22, "last_line": 23}),
              ("read_skill", {"path": "nope.md"}),
              *writes({"environment/Dockerfile": TASK["environment/Dockerfile"], "environment/tmp.txt": "x"}),
              ("keep_file", {"container_path": "/app/generated.csv", "path": "environment/app/data.csv"}),
              ("keep_file", {"container_path": "/etc/shadow", "path": "environment/app/x"}),
              ("delete_file", {"path": "environment/tmp.txt"}),
              ("delete_file", {"path": "environment/tmp.txt"})], "Done?", "Done."]
    b, _, _, _ = author(ctx, tmp_path, turns, limits=CreatorLimits(max_turns=2, max_candidates=1, nudges=0))
    results = tool_results(b)
    assert "22| 2. **Top failing endpoints**" in results[0] and "(lines 22-23 of" in results[0]
    assert results[1].startswith("refused: no file 'nope.md' in the skill")
    assert results[4] == "wrote 8 bytes to environment/app/data.csv"
    assert results[5].startswith("refused: /etc/shadow: no such file")
    assert results[6] == "deleted environment/tmp.txt" and results[7].startswith("refused: environment/tmp.txt is not")
    assert b.creator[0].stop == "incomplete"  # never frozen: nothing was published as retained


def test_a_hardening_round_asks_for_its_added_patterns(ctx, tmp_path):
    """task_hardening rebuilds through the creator: the patterns a round adds are offered and required."""
    base = candidate_patterns(ctx)
    added = next(p.id for p in load_patterns().patterns if p.dimension != ctx.sample.capability_dimension)
    hard = make_context(ctx.skill, ctx.workflow, ctx.sample.model_copy(update={"added_patterns": [added]}), PINS,
                        ctx.task_name + "-h1")
    offered = [p.id for p in candidate_patterns(hard)]
    assert offered[:2] == [base[0].id, added] and len(offered) == len(base) + 1
    chat = ScriptedChat(["Thinking."])
    author(hard, tmp_path, chat, limits=CreatorLimits(max_candidates=1, nudges=0))
    brief = chat.seen[0][1]["content"]
    assert "This is a hardening round" in brief and f"{added}, so that each plants cases" in brief


@pytest.mark.parametrize(("check", "evidence", "fixable"), [
    ("bash_syntax", "solution/solve.sh: line 3: syntax error near unexpected token `fi'", True),
    ("bash_syntax", "tests/test.sh: line 3: syntax error", False),
    ("bash_syntax", "solution/solve.sh: line 3: x; solution/cheats/a.sh: line 1: y", False),
    # seen with a capable model: solve.sh repeated a line of the world's build script (the world is frozen)
    ("no_leak", "environment/build/make_runs.py contains a line of solution/solve.sh: b'PLOTS = [...'", True),
    ("no_leak", "instruction.md contains a line of tests/expected.csv: b'a,b,c'", False),
])
def test_what_a_solution_only_repair_can_fix(check, evidence, fixable):
    from skill2env_dagster.models.gate import CheckResult, CheckVerdict, GateReport
    from skill2env_dagster.tasks.pipeline import repairable

    report = GateReport(task="t", verdict=GateVerdict.REJECTED, reason=ReasonCode.CONTAMINATED, checks=[
        CheckResult(name=check, verdict=CheckVerdict.FAIL, reason=ReasonCode.CONTAMINATED, evidence=evidence)])
    assert (repairable(report) is not None) is fixable
