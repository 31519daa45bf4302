"""Verifier robustness in real containers: mutation testing, creator-authored cheats and the tamper kit.

Good fixtures (a CSV summary, a JSON map, a script graded on hidden inputs, a produced directory tree) stay
retained; each defect overlay is rejected by the stage and attempt that names its weakness.
"""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID

pytestmark = pytest.mark.docker
# The fixture tasks are generic data chores (a line count, totals per region) that exercise the other stages; the
# skill-blind battery rejects such tasks by design, so it is off here and tested in test_gates_blind.py.
SETTINGS = GateSettings(concurrency=2, run_id=RUN_ID, blind_baselines=False)
# A test whose claim is one stage's turns off the costly stages that cannot bear on it (a whole gate of a fixture
# task: 3.1-3.6 CPU-s here, its Oracle, no-op and static checks alone about 1); the good tasks and the removal of
# committed states run every stage.
_ONLY = {"answer_key_probe": False, "mutation_testing": False, "run_cheats": False, "tamper_kit": False}
SCRIPTS = SETTINGS.model_copy(update={**_ONLY, "run_cheats": True})  # wrong.sh and the cheats
MUTANTS = SETTINGS.model_copy(update={**_ONLY, "mutation_testing": True})  # mutation testing (wrong.sh before it)
TAMPER = SETTINGS.model_copy(update={**_ONLY, "tamper_kit": True})  # the tamper kit
STAGE_SETTINGS = {"mutants": MUTANTS, "cheats": SCRIPTS, "tamper_kit": TAMPER}


def _check(report, name):
    return next(c for c in report.checks if c.name == name)


def _attempt(report, name):
    return next(a for a in report.mutants + report.cheats + report.tamper if a.name == name)


@pytest.mark.parametrize("base", ["good_records", "good_script", "good_tree", "good_python", "good_minimal"])
def test_good_tasks_survive_every_stage(make_task, base):
    report = gate_task(make_task(base=base), SETTINGS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert _check(report, "mutants").verdict is CheckVerdict.PASS
    assert _check(report, "tamper_kit").verdict is CheckVerdict.PASS
    assert report.mutation_testing == "on"
    assert any(a.family == "trivial" and a.verdict is CheckVerdict.PASS for a in report.mutants)
    assert {a.name for a in report.tamper} >= {"forge", "forge:site_hooks", "plant:shadow", "plant:ld_preload",
                                               "plant:tests"}
    hooks = _attempt(report, "forge:site_hooks")  # skipped where the image has no Python
    assert hooks.verdict is (CheckVerdict.PASS if base == "good_python" else CheckVerdict.SKIPPED), hooks


def test_script_output_gets_only_program_mutants_and_its_cheats_run(make_task):
    report = gate_task(make_task(base="good_script"), SETTINGS)
    run = {a.name for a in report.mutants if a.verdict is not CheckVerdict.SKIPPED}
    assert run == {"empty", "junk"}  # code: only mutants that are wrong for any program
    assert [a.name for a in report.cheats] == ["cheats/echo_sample.sh", "cheats/header_only.sh"]
    assert _attempt(report, "cheats/echo_sample.sh").metrics["sample"] == 1.0  # right on the visible sample only
    assert _check(report, "cheats").verdict is CheckVerdict.PASS
    assert "batched in the no-op's container" in _check(report, "cheats").evidence  # one exec for all cheats


def _add_cheat(task, name: str, body: str) -> None:
    path = task / "solution" / "cheats" / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)


def test_batched_scripts_start_from_the_image_and_a_pass_is_rejected(make_task):
    """A cheat that is a right solution is caught; the cheat run after it in the same batch finds none of its
    outputs (the batch puts the Oracle's output paths back to the image's state between runs)."""
    task = make_task(base="good_script", name="batch_reset")
    _add_cheat(task, "a_right.sh", (task / "solution" / "solve.sh").read_text().split("\n", 1)[1])
    _add_cheat(task, "b_nothing.sh", "true\n")
    report = gate_task(task, SCRIPTS)
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, ReasonCode.SHORTCUT_PASSED)
    assert _attempt(report, "cheats/a_right.sh").verdict is CheckVerdict.FAIL
    nothing = _attempt(report, "cheats/b_nothing.sh")
    assert nothing.verdict is CheckVerdict.PASS and nothing.metrics == report.nop, nothing


def test_solution_env_reaches_batched_scripts_and_odd_names_run_one_at_a_time(make_task):
    """[solution].env reaches every script as it does in a run of its own; a name the batch's shell cannot export
    sends the scripts back to one run at a time."""
    task = make_task(base="good_script", name="batch_env")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[solution.env]\n", '[solution.env]\nCHEAT_MODE = "right"\n'))
    _add_cheat(task, "env_right.sh", '[ "$CHEAT_MODE" = right ] || exit 0\n'
               + (task / "solution" / "solve.sh").read_text().split("\n", 1)[1])
    report = gate_task(task, SCRIPTS)
    assert _attempt(report, "cheats/env_right.sh").verdict is CheckVerdict.FAIL  # it saw the variable
    toml.write_text(toml.read_text().replace("CHEAT_MODE", '"CHEAT-MODE"'))
    report = gate_task(task, SCRIPTS)
    assert "not a shell name" in _check(report, "cheats").evidence


def test_a_script_writing_outside_the_outputs_makes_the_batch_run_one_at_a_time(make_task):
    task = make_task(base="good_script", name="batch_stray")
    _add_cheat(task, "stray.sh", "echo x > /root/scratch.txt\nprintf '#!/bin/bash\\n' > /app/bin/region-totals\n")
    report = gate_task(task, SCRIPTS)
    cheats = _check(report, "cheats")
    assert report.verdict is GateVerdict.RETAINED and cheats.verdict is CheckVerdict.PASS, cheats
    assert "a batched run changed A /root/scratch.txt" in cheats.evidence and "reset between runs" in cheats.evidence


def test_a_script_editing_the_batch_stage_makes_the_batch_run_one_at_a_time(make_task):
    """The stage is writable by the scripts it runs: a cheat that swaps the staged test.sh for one that never
    rewards, and a later one that puts it back before the closing control run, would hide every pass in between
    (here a right solution). The stage's digest, checked before each verifier, stops the batch at the first
    change and the scripts run one at a time, where the right solution is caught."""
    task = make_task(base="good_script", name="batch_stage")
    stage = "/.s2e-scripts/tests"
    _add_cheat(task, "a_stage.sh", f"cp {stage}/test.sh /.s2e-scripts/keep\n"
               f"printf '#!/bin/sh\\nexit 0\\n' > {stage}/test.sh\n")
    _add_cheat(task, "c_restore.sh", f"[ -f /.s2e-scripts/keep ] && mv /.s2e-scripts/keep {stage}/test.sh\ntrue\n")
    report = gate_task(task, SCRIPTS)
    cheats = _check(report, "cheats")
    assert report.verdict is GateVerdict.RETAINED and cheats.verdict is CheckVerdict.PASS, cheats
    assert "the batch's stage changed (seen before the verifier of cheats/a_stage.sh)" in cheats.evidence, cheats
    assert "reset between runs" in cheats.evidence
    _add_cheat(task, "b_right.sh", (task / "solution" / "solve.sh").read_text().split("\n", 1)[1])
    report = gate_task(task, SCRIPTS)
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, ReasonCode.SHORTCUT_PASSED)
    assert _attempt(report, "cheats/b_right.sh").verdict is CheckVerdict.FAIL


def test_tree_output_loses_reward_when_a_file_is_deleted(make_task):
    report = gate_task(make_task(base="good_tree"), MUTANTS)
    deleted = _attempt(report, "delete_file:/app/by_region")
    assert deleted.verdict is CheckVerdict.PASS and deleted.metrics["files"] < 1.0


@pytest.mark.parametrize(
    ("overlay", "base", "reason", "check", "attempt"),
    [
        ("blind_values", "good_records", ReasonCode.VERIFIER_INSENSITIVE, "mutants",
         "perturb_numbers:/app/region_totals.csv"),
        ("superset_ok", "good_records", ReasonCode.SHORTCUT_PASSED, "mutants", "superset"),
        ("header_credit", "good_records", ReasonCode.SHORTCUT_PASSED, "mutants", "header_only"),
        ("cheat_passes", "good_script", ReasonCode.SHORTCUT_PASSED, "cheats", "cheats/echo_sample.sh"),
        ("waiver_shadow", "good_minimal", ReasonCode.TAMPER_VULNERABLE, "tamper_kit", "plant:shadow"),
        ("waiver_ld_conf", "good_minimal", ReasonCode.TAMPER_VULNERABLE, "tamper_kit", "plant:ld_conf"),
        ("waiver_pth", "good_python", ReasonCode.TAMPER_VULNERABLE, "tamper_kit", "plant:pth"),
        ("cwd_import", "good_python", ReasonCode.TAMPER_VULNERABLE, "tamper_kit", "forge"),
        ("site_hooks", "good_python", ReasonCode.TAMPER_VULNERABLE, "tamper_kit", "forge:site_hooks"),
    ],
)
def test_weak_verifier_is_rejected_by_the_stage_that_sees_it(make_task, overlay, base, reason, check, attempt):
    report = gate_task(make_task(overlay, base=base), STAGE_SETTINGS[check])
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, reason), report.model_dump_json(indent=1)
    assert _check(report, check).verdict is CheckVerdict.FAIL
    assert attempt in _check(report, check).evidence
    failed = _attempt(report, attempt)
    assert (failed.verdict, failed.reason) == (CheckVerdict.FAIL, reason)


def test_never_waived_plants_stay_detected_under_a_broad_declaration(make_task):
    task = make_task(base="good_python", name="broad")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]", '[metadata]\ntoolchain_writes = ["/usr/**", "/etc/**", '
                                             '"/root/**"]\n\n[agent]'))
    report = gate_task(task, TAMPER)
    assert report.reason is ReasonCode.TAMPER_VULNERABLE
    for name in ["plant:sitecustomize", "plant:usercustomize", "plant:ld_preload", "plant:tests"]:
        assert _attempt(report, name).verdict is CheckVerdict.PASS, name
    assert _attempt(report, "plant:shadow").verdict is CheckVerdict.FAIL


@pytest.mark.parametrize("weaken", ["clean", "reap"])
def test_the_kit_catches_a_runner_that_does_not_clean_or_reap(make_task, monkeypatch, weaken):
    """The forge attack is what proves the runner's own defences: weaken one, and the kit rejects."""
    from skill2env_dagster.gates import container, sandbox

    if weaken == "clean":
        monkeypatch.setattr(sandbox, "CLEAN", "")
    else:
        monkeypatch.setattr(sandbox, "REAP", "")
        monkeypatch.setattr(container, "REAP", "")
    report = gate_task(make_task("reward_txt_slow", name=f"weak-{weaken}"), TAMPER)
    assert report.reason is ReasonCode.TAMPER_VULNERABLE, report.model_dump_json(indent=1)
    assert _attempt(report, "forge").verdict is CheckVerdict.FAIL


def test_the_same_task_passes_the_forge_attack_with_the_real_runner(make_task):
    report = gate_task(make_task("reward_txt_slow"), TAMPER)
    assert _attempt(report, "forge").verdict is CheckVerdict.PASS, report.model_dump_json(indent=1)


def test_an_oracle_that_installs_a_tool_must_declare_it(make_task):
    undeclared = gate_task(make_task("oracle_installs_tool"), TAMPER)
    assert undeclared.reason is ReasonCode.ORACLE_FAILED
    assert "tamper_detected" in _check(undeclared, "oracle").evidence
    assert "/usr/local/bin/count-records" in _check(undeclared, "oracle").evidence
    declared = gate_task(make_task("oracle_installs_declared"), TAMPER)
    assert declared.verdict is GateVerdict.RETAINED, declared.model_dump_json(indent=1)


def test_outputs_only_on_tmpfs_are_reported_not_mutation_tested(make_task):
    task = make_task(name="tmpfs")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\nwc -l < /app/data.txt | tr -d ' ' > /tmp/answer\n"
                                                "ln -sf /tmp/answer /app/answer.txt\n")
    report = gate_task(task, MUTANTS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert _check(report, "mutants").verdict is CheckVerdict.SKIPPED
    assert report.mutation_testing.startswith("skipped")


def test_mutation_testing_can_be_turned_off_and_the_report_says_so(make_task):
    report = gate_task(make_task(base="good_records"), MUTANTS.model_copy(update={"mutation_testing": False}))
    assert report.verdict is GateVerdict.RETAINED
    assert report.mutation_testing == "off"
    assert _check(report, "mutants").verdict is CheckVerdict.SKIPPED and not report.mutants


def test_committed_states_are_removed(make_task, docker_client):
    gate_task(make_task(base="good_records"), SETTINGS)
    left = docker_client.images.list(filters={"label": f"skill2env.gate={RUN_ID}"})
    assert not left, [i.tags for i in left]


def test_a_deviating_control_reruns_the_mutants_in_fresh_containers(make_task):
    """A verifier whose side effect spoils its next run in the same container: the batch's control deviates,
    so every mutant reruns in a fresh container from the Oracle's committed state (taken before the verifier)."""
    task = make_task(name="side-effect")
    test_sh = task / "tests" / "test.sh"
    test_sh.write_text(test_sh.read_text().replace("answer_file=/app/answer.txt",
                                                   "[ -e /app/.seen ] && answer_file=/nonexistent\n"
                                                   "touch /app/.seen\nanswer_file=${answer_file:-/app/answer.txt}"))
    report = gate_task(task, MUTANTS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert "fresh container" in _check(report, "mutants").evidence
    assert _attempt(report, "perturb_numbers:/app/answer.txt").metrics == {"format": 1.0, "correct": 0.0}


def test_the_mutant_batch_empties_dev_shm_between_runs(make_task):
    """A verifier that leaves a mark in /dev/shm and writes no reward when it finds one: the batch empties
    /dev/shm before every run, so each mutant is graded and the control reproduces the Oracle."""
    task = make_task(name="shm-mark")
    test_sh = task / "tests" / "test.sh"
    prologue = "[ -e /dev/shm/seen ] && exit 0\ntouch /dev/shm/seen\n"
    test_sh.write_text(test_sh.read_text().replace("\n", "\n" + prologue, 1))
    report = gate_task(task, MUTANTS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert "batched in the Oracle's container" in _check(report, "mutants").evidence
    assert _attempt(report, "perturb_numbers:/app/answer.txt").metrics == {"format": 1.0, "correct": 0.0}


# A shadow of the verifier's `tr` that would make any answer count as right (good_minimal's test.sh strips the
# answer with tr): tamper evidence in /usr/local/bin, which comes before /usr/bin on the image's PATH.
SHADOW_TR = "mkdir -p /usr/local/bin\nprintf '#!/bin/sh\\necho 7\\n' > /usr/local/bin/tr\nchmod +x /usr/local/bin/tr\n"


def test_a_wrong_sh_caught_tampering_scores_0_and_the_task_is_retained(make_task):
    """wrong.sh shadows a tool the verifier calls (a held-out task was rejected for that as wrong_solution_passed):
    the tamper rule gives it 0, below 1 as a wrong solution must be; its answer alone, verified again without the
    shadow in a fresh container, scores format 1, correct 0. The report says both, with the tamper evidence."""
    task = make_task(name="wrong_tampers")
    (task / "solution" / "wrong.sh").write_text("#!/bin/bash\necho 6 > /app/answer.txt\n" + SHADOW_TR)
    report = gate_task(task, SCRIPTS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    check = _check(report, "wrong_solution")
    assert check.verdict is CheckVerdict.PASS and check.reason is None
    assert check.evidence == (
        "wrong.sh scored 0 by the tamper rule (tamper_detected: A /usr/local/bin/tr (under /usr)); its work verified "
        "again without the tamper (files carried: 1, deletions replayed: 0, in a fresh container of the image): "
        "metrics {'format': 1.0, 'correct': 0.0}"), check.evidence
    assert report.wrong == {}  # reward 0: no metrics


@pytest.mark.parametrize(("script", "check", "reason"), [
    ("wrong.sh", "wrong_solution", ReasonCode.WRONG_SOLUTION_PASSED),
    ("cheats/right.sh", "cheats", ReasonCode.SHORTCUT_PASSED),
])
def test_a_tamper_cannot_hide_an_answer_the_verifier_accepts(make_task, script, check, reason):
    """The same shadow beside the right answer: its 0 by the tamper rule says nothing about the verifier, and
    the answer alone, verified again without the shadow, passes, so the check fails as it would without the
    tamper. (The cheat runs in the script batch first: its shadow outside the reset paths sends every script
    back to one run at a time, where the tamper is seen.)"""
    task = make_task(name="tamper_hides")
    path = task / "solution" / script
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/bash\necho 7 > /app/answer.txt\n" + SHADOW_TR)
    path.chmod(0o755)
    report = gate_task(task, SCRIPTS)
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, reason), report.model_dump_json(indent=1)
    evidence = _check(report, check).evidence
    assert "by the tamper rule (tamper_detected: A /usr/local/bin/tr" in evidence, evidence
    if script == "wrong.sh":
        assert "metrics {'format': 1.0, 'correct': 1.0}" in evidence
    else:
        attempt = _attempt(report, script)
        assert (attempt.verdict, attempt.status, attempt.mean) == (CheckVerdict.FAIL, "tamper_detected", 0.0)
        assert attempt.evidence.endswith("in a fresh container of the image): mean 1.000 > threshold 0.5")


@pytest.mark.parametrize("batched", [True, False])
def test_a_cheats_work_is_measured_batched_and_one_at_a_time(make_task, monkeypatch, batched):
    """A cheat's work: the non-empty files its run left changed on the container's disk (creator/session.py counts
    only cheats with some toward the freeze). A no-op cheat and one writing only to the tmpfs have none."""
    from skill2env_dagster.gates import runner

    if not batched:
        monkeypatch.setattr(runner, "run_scripts", lambda *a, **k: ({}, "one at a time (test)"))
    task = make_task(base="good_script", name=f"work-{batched}")
    _add_cheat(task, "idle.sh", "true\n")
    _add_cheat(task, "tmp_only.sh", "echo north > /tmp/out.txt\n")
    report = gate_task(task, SCRIPTS)
    assert ("batched in the no-op's container" in _check(report, "cheats").evidence) is batched
    work = {a.name: a.work for a in report.cheats}
    assert work == {"cheats/echo_sample.sh": ["/app/bin/region-totals"], "cheats/header_only.sh":
                    ["/app/bin/region-totals"], "cheats/idle.sh": [], "cheats/tmp_only.sh": []}, work
