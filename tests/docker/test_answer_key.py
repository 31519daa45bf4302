"""The `answer_key` stage (gates/answer_key.py) and the helper that fixes what it finds (gates/solver_run.py).

`good_script` grades the solver's script on hidden cases. Its old verifier (the overlay `answer_key_readable`)
ran the script as root with /tests readable, so a script that looks its input up among /tests/cases/*.csv and
prints the matching .out scored 0.67: the gate without this stage retained that task (blind review of creator
run 3 found the same hole in task 09). The stage plants a probe into the solver's programs and rejects the task;
the fixed verifier runs the script through /tests/run_as_solver and passes, and the key reader scores 0 there.
"""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import CheckVerdict, GateVerdict
from skill2env_dagster.reasons import ReasonCode
from tests.docker.conftest import RUN_ID

pytestmark = pytest.mark.docker
SETTINGS = GateSettings(concurrency=2, run_id=RUN_ID, blind_baselines=False)
KEY_READER = """#!/bin/bash
# Shortcut: the script finds its input among the hidden cases and prints the expected output next to it.
cat > /app/bin/region-totals <<'SH'
#!/bin/bash
for f in /tests/cases/*.csv; do cmp -s "$f" "$1" && cat "${f%.csv}.out"; done
exit 0
SH
chmod +x /app/bin/region-totals
"""


def _check(report, name):
    return next(c for c in report.checks if c.name == name)


def _add_key_reader(task) -> None:
    path = task / "solution" / "cheats" / "read_key.sh"
    path.write_text(KEY_READER)
    path.chmod(0o755)


def test_a_verifier_running_solver_code_that_can_read_the_key_is_rejected(make_task):
    report = gate_task(make_task("answer_key_readable", base="good_script"), SETTINGS)
    assert (report.verdict, report.reason) == (GateVerdict.REJECTED, ReasonCode.ANSWER_KEY_READABLE), \
        report.model_dump_json(indent=1)
    check = _check(report, "answer_key")
    assert check.verdict is CheckVerdict.FAIL
    assert "/app/bin/region-totals read /tests/" in check.evidence, check.evidence
    assert [c.name for c in report.checks if c.verdict is CheckVerdict.FAIL] == ["answer_key"]
    (probe,) = [a for a in report.tamper if a.name == "answer_key"]
    assert probe.reason is ReasonCode.ANSWER_KEY_READABLE


def test_the_gate_without_the_stage_retained_it_and_the_key_reader_beats_that_verifier(make_task):
    """What the stage closes: without it the task is retained, and a program that reads the key earns > 0.5."""
    off = SETTINGS.model_copy(update={"answer_key_probe": False})
    old = gate_task(make_task("answer_key_readable", base="good_script", name="old-gate"), off)
    assert old.verdict is GateVerdict.RETAINED, [(c.name, c.reason, c.evidence) for c in old.checks
                                                 if c.verdict is not CheckVerdict.PASS]
    task = make_task("answer_key_readable", base="good_script", name="old-gate-key-reader")
    _add_key_reader(task)
    report = gate_task(task, off)
    (cheat,) = [a for a in report.cheats if a.name == "cheats/read_key.sh"]
    assert cheat.metrics["hidden"] == 1.0 and cheat.verdict is CheckVerdict.FAIL, cheat


def test_a_verifier_using_run_as_solver_passes_and_the_key_reader_scores_0(make_task):
    task = make_task(base="good_script", name="helper")
    _add_key_reader(task)
    report = gate_task(task, SETTINGS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    check = _check(report, "answer_key")
    assert check.verdict is CheckVerdict.PASS and "no probe read /tests or /solution" in check.evidence, check
    assert "/app/bin/region-totals" in check.evidence
    (cheat,) = [a for a in report.cheats if a.name == "cheats/read_key.sh"]
    assert cheat.metrics == {"sample": 0.0, "hidden": 0.0, "header_only": 0.0}, cheat
    assert report.oracle == {"sample": 1.0, "hidden": 1.0, "header_only": 1.0}


def test_a_task_whose_verifier_runs_no_solver_program_skips_the_probe_or_passes(make_task):
    report = gate_task(make_task(base="good_python", name="no-program"), SETTINGS)
    assert report.verdict is GateVerdict.RETAINED, report.model_dump_json(indent=1)
    assert _check(report, "answer_key").verdict in (CheckVerdict.SKIPPED, CheckVerdict.PASS)


@pytest.fixture(scope="module")
def script_world(docker_client, tmp_path_factory):
    """(client, image, config, tests dir) of good_script (minimal image) with the helper in its tests/."""
    import shutil

    from skill2env_dagster.gates.dockerfile import pin_dockerfile
    from skill2env_dagster.gates.images import build_image
    from skill2env_dagster.gates.solver_run import write_helper
    from skill2env_dagster.models.task_dir import TaskDir
    from skill2env_dagster.models.task_toml import TaskToml
    from tests.docker.conftest import FIXTURES

    dest = tmp_path_factory.mktemp("helper") / "good_script"
    shutil.copytree(FIXTURES / "good_script", dest)
    write_helper(dest / "tests")
    pin_dockerfile(dest)
    task = TaskDir(dest)
    image, _ = build_image(docker_client, task.environment_dir)
    return docker_client, image, TaskToml.from_toml(task.config.read_text()), task.tests_dir


def _helper_run(world, command: str) -> str:
    """`command` as a verifier would run it (root, /tests in place), in a fresh hardened trial."""
    from skill2env_dagster.gates.sandbox import Sandbox

    client, image, config, tests = world
    with Sandbox(client, image, SETTINGS, config, tests) as sb:
        sb.trial.put_tar(sb.tests_tar())
        return sb.trial.sh(command, 60).output.decode(errors="replace")


# Whether /proc entry $d is a process of the solver's uid that can still run: not a zombie, not exiting (PF_EXITING in
# its flags) and no SIGKILL pending - the helper's kill is queued when it returns, the process may not have run since.
_LIVE_SOLVER_PROCESS = (
    "{ s=$(cat $d/status 2>/dev/null) && echo \"$s\" | grep -q '^Uid:.*65534' "
    "&& ! echo \"$s\" | grep -q '^State:.*[ZX]' "
    "&& p=$(echo \"$s\" | sed -n 's/^ShdPnd:[[:space:]]*//p') && q=$(echo \"$s\" | sed -n 's/^SigPnd:[[:space:]]*//p') "
    "&& f=$(sed 's/.*) //' $d/stat | cut -d' ' -f7) "
    "&& [ $(( (0x$p | 0x$q) & 0x100 )) -eq 0 ] && [ $((f & 4)) -eq 0 ]; }")


def test_the_helper_runs_as_another_uid_that_cannot_read_the_grading_and_leaves_nothing_running(script_world):
    out = _helper_run(script_world, (
        "w=$(mktemp -d); /tests/run_as_solver -w $w -- /bin/sh -c 'id -u; cat /tests/test.sh >/dev/null 2>&1 && "
        "echo READ; touch $0/out && echo WROTE; (sleep 300 &) ; exit 7' $w; echo rc=$?; "
        f"for d in /proc/[0-9]*; do {_LIVE_SOLVER_PROCESS} && echo LEFT; done; head -c 5 /tests/test.sh"))
    assert out.split() == ["65534", "WROTE", "rc=7", "#!/bi"], out  # root still reads /tests afterwards


def test_the_helper_refuses_to_run_without_the_capability_to_drop_privileges(script_world, monkeypatch):
    from skill2env_dagster.gates import container

    monkeypatch.setattr(container, "KEPT_CAPS", ())
    out = _helper_run(script_world, "/tests/run_as_solver -- /bin/sh -c 'echo RAN'; echo rc=$?")
    assert "RAN" not in out and "rc=126" in out and "cannot become uid 65534" in out, out
