"""The trial API solver rollouts will drive: agent misbehaviour gives a recorded status and reward 0, never an
exception; leftovers never reach the verifier; the verifier's environment is fixed."""

from __future__ import annotations

import shutil

import pytest

from skill2env_dagster.gates.changes import ChangeKind, engine_changes
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.sandbox import Sandbox, TrialStatus
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.gates.tamper import TamperPolicy
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from tests.docker.conftest import RUN_ID

pytestmark = pytest.mark.docker
SETTINGS = GateSettings(run_id=RUN_ID)


@pytest.fixture
def world(make_task, docker_client, tmp_path):
    """(client, image, config, tests dir) for good_minimal, with a verifier written per test."""
    task = TaskDir(make_task(name="sandbox"))
    image, _ = build_image(docker_client, task.environment_dir)
    config = TaskToml.from_toml(task.config.read_text())
    tests = tmp_path / "tests"
    shutil.copytree(task.tests_dir, tests)
    return docker_client, image, config, tests


def _box(world, test_sh: str | None = None, **config_updates) -> Sandbox:
    client, image, config, tests = world
    if test_sh is not None:
        (tests / "test.sh").write_text("#!/bin/bash\n" + test_sh)
    if config_updates:
        config = config.model_copy(update=config_updates)
    return Sandbox(client, image, SETTINGS, config, tests)


def test_an_agent_solves_and_verify_scores_it(world):
    with _box(world) as sb:
        sb.exec("wc -l < /app/data.txt | tr -d ' ' > /app/answer.txt", timeout=30)
        out = sb.verify()
    assert out.status is TrialStatus.OK and out.metrics == {"format": 1.0, "correct": 1.0} and out.value == 1.0


def test_killing_the_keeper_is_container_died_with_reward_zero(world):
    with _box(world) as sb:
        sb.exec("echo 7 > /app/answer.txt; kill -9 $(cut -d' ' -f1 /proc/1/task/1/children)", timeout=30)
        out = sb.verify()
    assert out.status is TrialStatus.CONTAINER_DIED and out.value == 0.0


def test_detached_daemons_do_not_outlive_the_agent_phase(world):
    """A double-forked, setsid'd, signal-deaf daemon keeps touching a file; the verifier finds no process left
    running it (the agent waits for its first beat, a marker, not a delay)."""
    beat = "trap '' TERM HUP INT; i=0; while :; do i=$((i+1)); echo $i > /app/beat; sleep 0.02; done"
    agent = (f"echo 7 > /app/answer.txt; (setsid sh -c \"{beat}\" >/dev/null 2>&1 < /dev/null &) ; "
             "until [ -s /app/beat ]; do sleep 0.01; done")
    test_sh = ('if grep -qs "/app/bea[t]" /proc/[0-9]*/cmdline; then echo 0; else echo 1; fi '
               '> /logs/verifier/reward.txt\n')
    with _box(world, test_sh) as sb:
        sb.exec(agent, timeout=30)
        out = sb.verify()
    assert out.metrics == {"reward": 1.0}, out


def test_a_fork_bomb_left_behind_is_a_status_not_a_crash(world):
    with _box(world, "echo 1 > /logs/verifier/reward.txt\n") as sb:
        sb.exec("(bomb() { bomb | bomb & }; bomb) >/dev/null 2>&1 & sleep 1", timeout=30)
        out = sb.verify()
    assert out.status in (TrialStatus.OK, TrialStatus.REAP_FAILED, TrialStatus.CONTAINER_DIED), out
    assert out.status is not TrialStatus.OK or out.value == 1.0


def test_a_planted_start_up_hook_is_tamper_detected(world):
    with _box(world) as sb:
        sb.exec("mkdir -p /root/.local/lib/python3.11/site-packages && echo 'import os' > "
                "/root/.local/lib/python3.11/site-packages/usercustomize.py; echo 7 > /app/answer.txt", timeout=30)
        out = sb.verify()
    assert out.status is TrialStatus.TAMPER_DETECTED and out.value == 0.0
    assert any("usercustomize.py" in t for t in out.tamper)


def test_the_verifier_environment_is_fixed(world):
    test_sh = ('ok=1; [ -z "$LD_PRELOAD" ] || ok=0; [ -z "$BASH_ENV" ] || ok=0; [ -z "$PYTHONPATH" ] || ok=0\n'
               '[ "$PYTHONNOUSERSITE" = 1 ] || ok=0; [ "$FROM_TASK" = yes ] || ok=0\n'
               'echo $ok > /logs/verifier/reward.txt\n')
    client, image, config, tests = world
    config = config.model_copy(update={"verifier": config.verifier.model_copy(update={"env": {"FROM_TASK": "yes"}})})
    (tests / "test.sh").write_text("#!/bin/bash\n" + test_sh)
    with Sandbox(client, image, SETTINGS, config, tests) as sb:
        sb.exec("export LD_PRELOAD=/x.so BASH_ENV=/app/e PYTHONPATH=/app; echo 'echo pwned' > /app/e", timeout=30,
                env={"PYTHONPATH": "/app"})
        out = sb.verify()
    assert out.metrics == {"reward": 1.0}, out


def test_a_timed_out_command_is_stopped_and_the_sandbox_lives_on(world):
    with _box(world) as sb:
        res = sb.exec("echo 7 > /app/answer.txt; sleep 100", timeout=1)
        assert res.timed_out
        assert sb.exec("true", timeout=10).exit_code == 0
        out = sb.verify()
    assert out.status is TrialStatus.OK and out.value == 1.0


def test_both_engine_views_report_the_same_changes(world):
    """Including a toolchain folder made anew (`rm -rf d; mkdir d`: an opaque overlay folder): what it hides is
    deleted, in both views, and tamper evidence."""
    with _box(world) as sb:
        sb.exec("echo 7 > /app/answer.txt; mkdir -p /app/out/sub; echo x > /app/out/sub/f; rm /app/data.txt; "
                "echo y >> /etc/hostname.bak; touch /usr/local/bin/tool; "
                "rm -rf /usr/share/base-files && mkdir /usr/share/base-files && touch /usr/share/base-files/motd",
                timeout=30)
        sb.settle()
        fast = engine_changes(sb.trial.box, use_upper_dir=True)
        slow = engine_changes(sb.trial.box, use_upper_dir=False)
    assert [(c.path, c.kind) for c in fast] == [(c.path, c.kind) for c in slow]
    assert ("/app/data.txt", ChangeKind.DELETED) in [(c.path, c.kind) for c in fast]
    evidence = TamperPolicy().evidence(fast)
    assert {"A /usr/local/bin/tool (under /usr)", "D /usr/share/base-files/profile (under /usr)"} <= set(evidence)


def test_tests_leave_with_the_verifier_so_a_later_turn_cannot_read_them(world):
    with _box(world) as sb:
        sb.exec("echo 6 > /app/answer.txt", timeout=30)
        assert sb.verify().metrics == {"format": 1.0, "correct": 0.0}
        res = sb.run("ls /tests 2>/dev/null | wc -l; echo 7 > /app/answer.txt", timeout=30)
        assert res.output.strip() == b"0"
        out = sb.verify()
    assert out.status is TrialStatus.OK and out.value == 1.0


def test_reset_brings_the_image_back(world):
    from skill2env_dagster.gates.sandbox import ImageReader

    client, image, _, _ = world
    with _box(world) as sb, ImageReader(client, image, SETTINGS) as reader:
        original = sb.run("cat /app/data.txt", timeout=30).output
        sb.exec("echo junk >> /app/data.txt; rm /app/data.txt; echo back > /app/data.txt; chmod 600 /app/data.txt; "
                "mkdir -p /app/new/deep && echo x > /app/new/deep/f; echo t > /tmp/t; rm -rf /etc/apt; "
                "echo 7 > /app/answer.txt", timeout=30)
        assert sb.verify().metrics == {"format": 1.0, "correct": 1.0}
        assert sb.reset(reader)
        state = sb.run("cat /app/data.txt; stat -c %a /app/data.txt; ls /app /tmp; ls -d /etc/apt", 30).output
        assert state.startswith(original) and b"644" in state and b"new" not in state and b"answer" not in state
        assert b"/etc/apt" in state
        out = sb.verify()  # a clean start: nothing that looks solved
        assert out.status is TrialStatus.OK and out.metrics == {"format": 0.0, "correct": 0.0}
        # A run that touched the toolchain cannot be reset (a restored copy would hide the next run's tampering).
        sb.exec("rm -rf /usr/share/doc", timeout=30)
        assert sb.verify().status is TrialStatus.TAMPER_DETECTED
        assert not sb.reset(reader)
