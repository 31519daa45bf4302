"""An exported task's verifier is safe without our harness's reaper: a real offline example task, its container
started like Harbor's (`sleep infinity`, with and without an init), a reward re-forger left running by the "agent"
(setsid + double fork, deaf to TERM/HUP/INT, its script's path hidden in base64), then `bash /tests/test.sh` by
`docker exec` as Harbor runs it, nothing reaped in between. The forger must then be gone and the reward the
verifier's own (0 on every metric: nobody did the task). The control runs the same test.sh without the guard: the
forger lives on and, two rewrites later (its own counter, not a delay), the reward is forged: it shows the forger
works, so the guarded run's 0 is the guard's doing."""

from __future__ import annotations

import json
import time

import pytest

from skill2env_dagster.gates.container import LABEL, tar_dir
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.reap import is_guarded, strip_guard
from skill2env_dagster.models.task_dir import TaskDir
from tests.docker.conftest import RUN_ID
from tests.support.example_tasks import build_example_tasks, real_pins

pytestmark = pytest.mark.docker

# The "agent's" parting gift: a loop that rewrites the reward every 0.2 s, started so that no kill by name, by
# session or by TERM reaches it: its path is decoded at run time, it is double-forked into its own session and
# ignores TERM, HUP and INT. It counts its rewrites in /tmp/.beat: the test waits for that marker, not for a delay.
FORGER = r"""set -e
mkdir -p /logs/verifier
p=$(printf %s L3Zhci90bXAvLmNhY2hlLXdhcm0uc2g= | base64 -d)
cat > "$p" <<'EOS'
trap '' TERM HUP INT
i=0
while :; do printf '%s' "$FORGED" > /logs/verifier/reward.json; i=$((i+1)); echo $i > /tmp/.beat; sleep 0.2; done
EOS
( setsid sh -c "( trap '' TERM HUP INT; FORGED='$1' exec sh $p ) &" & )
until [ -s /tmp/.beat ]; do sleep 0.05; done
"""


@pytest.fixture(scope="module")
def task(docker_client, examples_dir, tmp_path_factory):
    (root, gen, ctx), = build_example_tasks(examples_dir, tmp_path_factory.mktemp("tasks"), real_pins(), limit=1)
    image, _ = build_image(docker_client, TaskDir(root).environment_dir)
    return TaskDir(root), image, gen.tests(ctx)[1]


def _harbor_verify(client, image: str, tests: bytes, metrics: list[str], init: bool) -> tuple[dict, bool]:
    """(the reward once final, whether the forger outlived the verifier)."""
    box = client.containers.run(image, ["sleep", "infinity"], entrypoint=[], detach=True, network_mode="none",
                                init=init, labels={LABEL: RUN_ID}, working_dir="/app")
    try:
        forged = json.dumps(dict.fromkeys(metrics, 1.0))
        code, out = box.exec_run(["sh", "-c", FORGER, "forger", forged])
        assert code == 0, out
        assert box.put_archive("/", tests)
        code, out = box.exec_run(["bash", "-c", "mkdir -p /logs/verifier; bash /tests/test.sh "
                                  "> /logs/verifier/test-stdout.txt 2>&1"])
        lives = _forger_running(box)
        if lives:  # it outlived the verifier: wait until it has rewritten the reward after it
            _wait_beats(box, 2)
        box.reload()
        assert box.status == "running", "the guard must not stop the container"
        code, out = box.exec_run(["cat", "/logs/verifier/reward.json"])
        assert code == 0, out
        return json.loads(out), lives
    finally:
        box.remove(force=True, v=True)


def _forger_running(box) -> bool:
    """A process still runs the forger's script (a dead one cannot forge: the reward read now is final)."""
    return bool(box.exec_run(["sh", "-c", "grep -ls 'cache-war[m]' /proc/[0-9]*/cmdline"])[1].strip())


def _beats(box) -> int:
    out = box.exec_run(["cat", "/tmp/.beat"])[1].strip()
    return int(out) if out.isdigit() else 0


def _wait_beats(box, n: int, limit: float = 120.0) -> None:
    """Until the forger has finished `n` more rewrites (the first may have begun before the verifier wrote)."""
    start, deadline = _beats(box), time.monotonic() + limit
    while _beats(box) < start + n:
        assert time.monotonic() < deadline, "the forger stopped counting"
        time.sleep(0.05)


@pytest.mark.parametrize("init", [False, True], ids=["pid1-sleep", "docker-init"])
def test_a_lingering_forger_cannot_rewrite_the_reward_after_the_guarded_verifier(task, docker_client, init,
                                                                                tmp_path):
    td, image, metrics = task
    guarded = td.test_script.read_text()
    assert is_guarded(guarded) and metrics
    reward, lives = _harbor_verify(docker_client, image, tar_dir(td.tests_dir, "tests"), metrics, init)
    assert not lives
    assert set(reward) == set(metrics) and all(v == 0 for v in reward.values()), reward

    # Control: the same tests without the guard are forged (the forger works; the guard is what stops it).
    plain = tmp_path / "tests"
    plain.mkdir()
    for f in td.tests_dir.iterdir():
        (plain / f.name).write_bytes(f.read_bytes())
    (plain / "test.sh").write_text(strip_guard(guarded))
    forged, lives = _harbor_verify(docker_client, image, tar_dir(plain, "tests"), metrics, init)
    assert lives and forged == dict.fromkeys(metrics, 1.0), forged

