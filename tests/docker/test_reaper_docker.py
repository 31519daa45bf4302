"""The reaper (gates/reap.py) ends at a checked fixed point: every process but the kept ones is dead. Its outcome must
not depend on how fast someone else collects the dead (issue 27: under load, the zombie of the episode's shell
server waited for the engine's shim past the old fixed count of 400 passes, and a benign episode ended
`reap_failed`), and a process it cannot stop is a recorded failure with its name, never a silent pass."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.container import Trial, hardened
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.sandbox import Sandbox, TrialStatus
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from tests.docker.conftest import RUN_ID

pytestmark = pytest.mark.docker
SETTINGS = GateSettings(run_id=RUN_ID)


@pytest.fixture(scope="module")
def world(docker_client, tmp_path_factory):
    """(client, image, config, tests dir) of good_python (python3 is in its image)."""
    import shutil

    from skill2env_dagster.gates.dockerfile import pin_dockerfile
    from tests.docker.conftest import FIXTURES

    dest = tmp_path_factory.mktemp("reaper") / "good_python"
    shutil.copytree(FIXTURES / "good_python", dest)
    pin_dockerfile(dest)
    task = TaskDir(dest)
    image, _ = build_image(docker_client, task.environment_dir)
    return docker_client, image, TaskToml.from_toml(task.config.read_text()), task.tests_dir


def _sandbox(world) -> Sandbox:
    client, image, config, tests = world
    return Sandbox(client, image, SETTINGS, config, tests)


def _live_pids(trial: Trial) -> list[str]:
    """Every process of the container that is alive (not a zombie), but init, the keeper and the asking shell."""
    res = trial.sh('for d in /proc/[0-9]*; do p=${d#/proc/}; case " 1 $KEEPER $$ " in *" $p "*) continue;; esac; '
                   'read -r l < $d/stat 2>/dev/null || continue; set -- ${l##*) }; [ "$1" = Z ] || echo $p; done', 30)
    return res.output.decode().split()


def test_a_dead_child_its_kept_parent_never_collects_does_not_fail_the_reap(world, monkeypatch):
    """The keeper here has a child that exits and is never collected (its parent `sleep` never waits): a zombie
    whose collector the reaper cannot hurry, like an exec's zombie waiting for the engine's shim. The old reaper
    counted it as left for all of its 400 passes and reported `not reaped` every time (deterministically, at any
    load); dead is dead: the reap succeeds."""
    def keeper_with_a_zombie(self, image, labels, **kw):
        kw["entrypoint"] = ["/bin/sh", "-c", "/bin/sh -c 'exit 0' & exec sleep infinity"]
        return hardened(self.client, self.settings, image, labels, **kw)

    monkeypatch.setattr(Trial, "_hardened", keeper_with_a_zombie)
    with _sandbox(world) as sb:
        sb.exec("echo 7 > /app/answer.txt; (sh -c 'exit 0' &); sleep 300 > /dev/null 2>&1 &", timeout=30)
        res = sb.trial.reap()
        assert b"reaped" in res.output, res
        assert _live_pids(sb.trial) == []
        zombies = sb.trial.sh('for d in /proc/[0-9]*; do read -r l < $d/stat; set -- ${l##*) }; '
                              '[ "$1" = Z ] && echo "$2"; done', 30).output.decode().split()
        assert zombies == [sb.trial.keeper], "the keeper's uncollected child is the zombie the reap did not wait for"
        assert sb.settle().status is TrialStatus.OK


def test_a_process_the_reaper_cannot_stop_is_reap_failed_with_its_name_and_reward_zero(world):
    """A stand-in for a process stuck in the kernel: started by the harness as another user, the reaper (root
    without CAP_KILL) cannot signal it. The old reaper skipped what it could not kill and printed `reaped`: this
    process would have run beside the verifier. Now it is named in a `reap_failed` trial, and the reward is 0."""
    with _sandbox(world) as sb:
        sb.exec("echo 7 > /app/answer.txt", timeout=30)
        sb.trial.box.exec_run(["sleep", "600"], user="65534", detach=True)
        # A marker, not a delay: the process is there (the detached exec returns before it starts).
        assert sb.trial.sh("i=0; until grep -qs '^sleep$' /proc/[0-9]*/comm; do i=$((i+1)); done; echo up",
                           60).output.strip() == b"up"
        out = sb.verify()
    assert out.status is TrialStatus.REAP_FAILED and out.value == 0.0, out
    assert "still alive:" in out.detail and "(sleep)" in out.detail, out.detail


def test_a_process_whose_main_thread_exited_is_killed_not_taken_for_dead(world):
    """A leader that called pthread_exit shows state Z while its other threads run on (here: one keeps writing a
    file). It must be killed, not skipped as a zombie."""
    beat = ("import ctypes, threading\n"
            "def beat():\n"
            "    i = 0\n"
            "    while True:\n"
            "        i += 1\n"
            "        open('/app/beat', 'w').write(str(i))\n"
            "threading.Thread(target=beat).start()\n"
            "ctypes.CDLL(None).pthread_exit(None)\n")
    with _sandbox(world) as sb:
        started = sb.run(f"python3 -c \"{beat}\" > /dev/null 2>&1 & p=$!; "
                          # marker: the leader is a zombie and the thread has written
                          "until [ -s /app/beat ] && read -r l < /proc/$p/stat && set -- ${l##*) } && [ $1 = Z ]; "
                          "do :; done; ls /proc/$p/task | wc -l", timeout=60)
        assert started.exit_code == 0 and started.output.split() == [b"2"], started
        assert sb.settle().status is TrialStatus.OK
        assert _live_pids(sb.trial) == []
        threads = sb.trial.sh("n=0; for d in /proc/[0-9]*; do for t in $d/task/[0-9]*; do n=$((n+1)); done; done; "
                              "echo $n", 30)
        # init, the keeper, this shell (and no thread of the python process left)
        assert threads.output.split() == [b"3"], threads
