"""No rule the creator was not told can reject a task: every reason code the gate, the builder, the pipeline and
the creator harness can reject a candidate with maps to a rule rendered into the creator's system prompt, and the
rules are generated from the gate's own settings (change a setting, the text changes)."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.creator.rules import (
    NOT_VERDICTS,
    disclosed_codes,
    gate_rules,
    rejection_codes,
    render_rules,
)
from skill2env_dagster.creator.session import SYSTEM
from skill2env_dagster.creator.settings import CreatorLimits
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.prompts import render
from skill2env_dagster.reasons import ReasonCode


def system_prompt(settings: GateSettings, limits: CreatorLimits) -> str:
    return render(SYSTEM, order="o", rules=render_rules(settings, limits), min_cheats=2, max_repairs=2,
                  max_candidates=limits.max_candidates, write_chars="1")


def test_every_code_that_can_reject_a_task_is_a_rule_in_the_prompt():
    settings, limits = GateSettings(), CreatorLimits()
    codes = rejection_codes()
    assert {ReasonCode.NOP_FAILED, ReasonCode.SHORTCUT_PASSED, ReasonCode.CONTAMINATED, ReasonCode.CREATOR_LOOP,
            ReasonCode.TAMPER_VULNERABLE, ReasonCode.REWARD_INVALID} <= codes  # read from the code, not a list
    assert not codes & NOT_VERDICTS
    untold = codes - disclosed_codes(settings, limits)
    assert not untold, f"these codes can reject a task but no rule states them: {sorted(untold)}"
    prompt = system_prompt(settings, limits)
    for rule in gate_rules(settings, limits):
        assert rule.render() in prompt
    for code in codes:
        assert f"{code.value}" in prompt


def test_a_new_rejecting_code_in_the_gate_is_found(tmp_path):
    """The scan reads the gate's source: a check that starts rejecting with a new code shows up at once."""
    for rel in ("gates", "tasks", "creator"):
        (tmp_path / rel).mkdir()
    (tmp_path / "tasks" / "builder.py").write_text("")
    (tmp_path / "tasks" / "pipeline.py").write_text("")
    (tmp_path / "gates" / "new_check.py").write_text("reason = ReasonCode.HARDENING_NOT_HARDER\n")
    assert rejection_codes(tmp_path) == {ReasonCode.HARDENING_NOT_HARDER}
    assert ReasonCode.HARDENING_NOT_HARDER not in disclosed_codes(GateSettings(), CreatorLimits())


def test_the_rules_are_the_settings_values():
    base = system_prompt(GateSettings(), CreatorLimits())
    assert "at most 0.5" in base and "1024 MB memory" in base and "40 model turns" in base
    changed = system_prompt(GateSettings(shortcut_threshold=0.3, memory_mb=512, timeout_cap_sec=60,
                                         approved_registries=("registry.example:5000",)),
                            CreatorLimits(max_turns=12, loop_limit=4))
    for text in ("at most 0.3", "512 MB memory", "capped at 60 s", "registry.example:5000", "12 model turns",
                 "failing 4 times"):
        assert text in changed and text not in base


def test_a_stage_turned_off_is_not_stated():
    off = render_rules(GateSettings(mutation_testing=False, run_cheats=False, tamper_kit=False), CreatorLimits())
    assert "Trivial mutants" not in off and "Tamper kit" not in off and "cheats/<name>.sh runs" not in off


def test_the_scan_covers_the_creator_package_but_not_the_rules_module():
    root = Path(__file__).resolve().parents[2] / "skill2env_dagster"
    assert (root / "creator" / "rules.py").is_file()
    assert ReasonCode.CREATOR_BUDGET_EXHAUSTED in rejection_codes(root)  # named by the session, not only the rules


def test_the_battery_rule_names_every_baseline_and_what_it_keeps_of_the_oracles_answer():
    """Seen with a capable model: the rule said "line/file/row counts for numeric answers" without saying that the
    rest of the Oracle's answer is kept, so a metric reading no number passes them."""
    from skill2env_dagster.gates import blind

    text = system_prompt(GateSettings(), CreatorLimits())
    for b in blind.BASELINES:
        assert f"`{b.name}` ({b.description})" in text
    for phrase in ("`count[...]`", "everything else - keys, labels, text - kept exactly as the Oracle wrote it",
                   "`echo_input[n]`", "`grep[w]`", "SQLite", "below 0.5 on EVERY metric", "`reference_solution`"):
        assert phrase in text, phrase
    assert "skill-blind" not in system_prompt(GateSettings(blind_baselines=False), CreatorLimits()).split(
        "## The gate's rules")[1].lower().split("tamper kit")[0]


def test_the_naive_cheats_and_the_grounding_rules_are_stated_when_enforced():
    """Review of run 2: naive scripts half-satisfied F1-style metrics and policy docs restated the skill. The kinds of
    naive solvers, the trial before the freeze and both grounding refusals are stated exactly when the harness
    enforces them (CreatorLimits.strict)."""
    from skill2env_dagster.creator.rules import NAIVE_KINDS

    strict = system_prompt(GateSettings(), CreatorLimits())
    for name, _ in NAIVE_KINDS:
        assert name in strict
    for text in ("The freeze is refused until `check` with `reference_solution` and at least 2 `cheats`",
                 "a number that its cited lines do not", "repeats a line of the skill's documents"):
        assert text in strict
    replay = system_prompt(GateSettings(), CreatorLimits(strict=False))
    for text in ("The freeze is refused until", "a number that its cited lines do not",
                 "repeats a line of the skill's documents"):
        assert text not in replay
