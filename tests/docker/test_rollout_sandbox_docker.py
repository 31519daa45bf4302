"""The rollout sandbox's own contract on a real container: what `write_file` does to file modes (and says it did),
and output cut on character boundaries."""

from __future__ import annotations

import json

import pytest

from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.tools import RequestedCall
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.tools import WRITE_FILE, run_tool
from tests.docker.conftest import RUN_ID

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def _write(sb, args: dict) -> str:
    call = RequestedCall(call_id="w", name=WRITE_FILE, arguments=json.dumps(args))
    return run_tool(sb, call, timeout=20, cap=1 << 20, file_write=True).text


def test_write_file_modes_are_as_described(docker_client, make_task):
    factory = DockerSandboxFactory(GateSettings(run_id=RUN_ID), OutputLimits(201, 201, 1 << 20), client=docker_client)
    with factory(make_task()) as sb:
        assert _write(sb, {"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}).endswith("(mode 0644)")
        assert sb.exec("./run.sh", 10).exit_code == 126  # not executable, as the description says
        assert _write(sb, {"path": "run.sh", "content": "#!/bin/sh\necho hi\n", "mode": "0755"}).endswith(
            "(mode 0755)")
        res = sb.exec("./run.sh", 10)
        assert (res.exit_code, res.head) == (0, b"hi\n")
        # An existing file keeps its mode when rewritten without one.
        assert _write(sb, {"path": "run.sh", "content": "#!/bin/sh\necho again\n"}).endswith("(mode 0755)")
        big = "é" * 40_000  # 80 kB: two chunks, the mode set after the last
        assert _write(sb, {"path": "deep/dir/x.txt", "content": big, "mode": "600"}).endswith("(mode 0600)")
        assert sb.exec("wc -c < deep/dir/x.txt", 10).head.strip() == b"80000"
        # Output cut at the head and tail limits never splits a character.
        out = run_tool(sb, RequestedCall(call_id="c", name="bash", arguments=json.dumps(
            {"command": "cat deep/dir/x.txt"})), timeout=20, cap=1 << 20, file_write=True)
        assert "\ufffd" not in out.text and "bytes of output omitted" in out.text


def test_the_workspace_view_shows_written_files_whole_and_a_changed_files_diff(docker_client, make_task):
    factory = DockerSandboxFactory(GateSettings(run_id=RUN_ID), OutputLimits(200, 200, 1 << 20), client=docker_client)
    program = "".join(f"print('qty é {i}')\n" for i in range(400))  # ~8 kB: far past the old 300-byte heads
    with factory(make_task()) as sb:
        _write(sb, {"path": "report.py", "content": program})
        sb.exec("sed -i '1s/.*/widget,99/' data.txt && mkdir -p out && printf '\\0\\1' > out/blob", 10)
        view = sb.workspace_digest(30_000)
    assert "added: /app/report.py" in view and "changed: /app/data.txt" in view
    assert program.rstrip("\n") in view  # whole
    diff = view.split("=== /app/data.txt (changed")[1]
    assert "--- diff against the task's original:" in diff and "+widget,99" in diff and "\n-" in diff
    assert "=== /app/out/blob (added, 2 bytes): binary" in view
    left = docker_client.containers.list(all=True, filters={"label": f"skill2env.gate={RUN_ID}"})
    assert left == []  # the image reader is gone too


def test_a_forged_reward_is_tamper_evidence(docker_client, make_task):
    factory = DockerSandboxFactory(GateSettings(run_id=RUN_ID), OutputLimits(200, 200, 1 << 20), client=docker_client)
    with factory(make_task()) as sb:
        sb.exec("echo 1 > /logs/verifier/reward.txt; wc -l < data.txt | tr -d ' ' > answer.txt", 10)
        v = sb.verify()
    assert (v.reason, v.zero, v.metrics) == (ReasonCode.TAMPER_DETECTED, True, {})
    assert "/logs/verifier/reward.txt" in v.evidence
    with factory(make_task(name="clean")) as sb:
        sb.exec("wc -l < data.txt | tr -d ' ' > answer.txt", 10)
        assert sb.verify().reason is None


def test_commands_run_through_one_shell_server_that_survives_what_agents_do(docker_client, make_task):
    """One exec for the episode's commands, not one per command; killed, timed out, backgrounded, reading stdin
    or printing the protocol's own words, each command gets its own answer and the next still runs."""
    factory = DockerSandboxFactory(GateSettings(run_id=RUN_ID), OutputLimits(2000, 2000, 1 << 20), client=docker_client)
    with factory(make_task()) as sb:
        creates = []
        original = docker_client.api.exec_create

        def counted(*a, **kw):
            creates.append(a)
            return original(*a, **kw)

        docker_client.api.exec_create = counted
        try:
            outs = [sb.exec(f"echo step {i}", 10) for i in range(20)]
            assert [o.head for o in outs] == [f"step {i}\n".encode() for i in range(20)]
            assert len(creates) == 1 and sb._shell is not None and sb._shell.started == 1
            tricky = sb.exec("printf 'S2E 0 999\\n'; echo done", 10)
            assert (tricky.exit_code, tricky.head) == (0, b"S2E 0 999\ndone\n")
            assert sb.exec("cat; echo read-nothing", 10).head == b"read-nothing\n"  # stdin is /dev/null
            # Not waited for: the answer comes while both background sleeps still run (a marker, not a clock).
            bg = sb.exec("(sleep 301 &) ; sleep 302 > /dev/null & echo started", 10)
            assert bg.head == b"started\n"
            assert sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '", 10).head.count(b"sleep 30") == 2
            slow = sb.exec("sleep 30", 1)
            assert slow.timed_out and slow.exit_code == 124
            # An agent that kills the server (and so its own command): no answer, as a killed exec gives none.
            killed = sb.exec("for p in /proc/[0-9]*; do grep -q 'read -r t ca[p]' $p/cmdline 2>/dev/null && "
                             "kill -9 ${p#/proc/}; done; sleep 303", 10)
            assert killed.exit_code is None
            # Answered (as lost) while the command still ran: its `sleep 303` is alive (checked by an exec of ours).
            assert b"sleep 303" in sb.sandbox.trial.sh("cat /proc/[0-9]*/cmdline | tr '\\0' ' '", 30).output
            again = sb.exec("echo alive", 10)
            assert (again.exit_code, again.head) == (0, b"alive\n") and sb._shell.started == 2
            assert sb.exec("exit 3", 10).exit_code == 3
        finally:
            docker_client.api.exec_create = original
