"""The episode's limits and stop reasons, on an in-memory sandbox (no Docker): what each limit does, and that
every failure is a recorded status with a valid ATIF trajectory."""

from __future__ import annotations

import json
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.tools import RequestedCall, ToolTurn
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.models.rollout import RolloutKind, StopReason
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.episode import EpisodeSpec, run_episode
from skill2env_dagster.rollouts.sandbox import CommandResult, SandboxGoneError, Verification
from skill2env_dagster.rollouts.settings import AgentLimits
from skill2env_dagster.rollouts.tools import WRITE_FILE, render_output, run_tool, tool_specs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "good_minimal"


class MemorySandbox:
    """Records commands; `sleep N` sleeps (so the watchdog can bite); `die` makes the sandbox vanish."""

    def __init__(self, verification: Verification | None = None) -> None:
        self.commands: list[str] = []
        self.writes: list[tuple[str, bytes, str | None]] = []
        self.killed = self.revived = self.verified = False
        self._kill = threading.Event()
        self.verification = verification or Verification(metrics={"format": 1.0, "correct": 0.0})

    def exec(self, command: str, timeout: float) -> CommandResult:
        self.commands.append(command)
        if self.killed and not self.revived:
            raise SandboxGoneError("killed")
        if command == "die":
            raise SandboxGoneError("gone")
        if command.startswith("sleep "):  # ends early only when the sandbox is killed
            self._kill.wait(float(command.split()[1]))
            return CommandResult(None)
        return CommandResult(0, head=f"ran {command}".encode(), total_bytes=5)

    def write_file(self, path: str, content: bytes, mode: str | None = None) -> CommandResult:
        self.writes.append((path, content, mode))
        return CommandResult(0, head=f"wrote (mode {mode or '0644'})".encode())

    def upload_dir(self, src: Path, dest: str) -> None:
        pass

    def workspace_digest(self, limit: int) -> str:
        return "added: /app/answer.txt"

    def kill(self) -> None:
        self.killed = True
        self._kill.set()

    def revive(self) -> None:
        self.revived = True

    def verify(self) -> Verification:
        self.verified = True
        return self.verification


class Script:
    kind, solver, model = RolloutKind.SOLVER, "script", "m"

    def __init__(self, turns: list[list[str]] | None = None, *, forever: str = "",
                 fail: LLMError | None = None, tokens: int = 10) -> None:
        self.turns, self.forever, self.fail, self.tokens = list(turns or []), forever, fail, tokens

    def prepare(self, sandbox, task) -> None:
        pass

    def act(self, messages, tools) -> ToolTurn:
        if self.fail:
            raise self.fail
        usage = Usage(calls=1, prompt_tokens=self.tokens, completion_tokens=1)
        if self.forever:
            calls = [(f"c{len(messages)}", json.dumps({"command": self.forever}))]
        elif self.turns:
            calls = [(f"c{len(messages)}-{i}", _cmd(c)) for i, c in enumerate(self.turns.pop(0))]
        else:
            return ToolTurn(content="done", usage=usage)
        return ToolTurn(content="", usage=usage, calls=[RequestedCall(call_id=c, name="bash", arguments=a)
                                                        for c, a in calls])


@pytest.fixture
def task(tmp_path) -> Path:
    dest = tmp_path / "task"
    shutil.copytree(FIXTURE, dest)
    return dest


def _run(task: Path, policy, sandbox: MemorySandbox, tmp_path: Path, cap: float | None = None, **limits):
    @contextmanager
    def opener(_):
        yield sandbox

    spec = EpisodeSpec("task", task, "task--script--0", 0, AgentLimits(**limits), timeout_cap_sec=cap)
    rollout = run_episode(spec, policy, opener, tmp_path)
    traj = AtifTrajectory.model_validate_json((tmp_path / rollout.trajectory).read_text())
    return rollout, traj


def _cmd(c: str) -> str:
    return json.dumps({"command": c})


def test_a_normal_episode_is_scored(task, tmp_path):
    sb = MemorySandbox()
    r, traj = _run(task, Script([["ls", "cat x"]]), sb, tmp_path)
    assert (r.stop, r.scored, r.reward_v, r.passed) == (StopReason.AGENT_DONE, True, 0.5, False)
    assert sb.commands == ["ls", "cat x"] and r.tool_calls == 2 and r.turns == 2
    assert r.workspace_digest == "added: /app/answer.txt"
    assert [s.source for s in traj.steps] == ["system", "user", "agent", "agent"]
    assert traj.steps[0].message.startswith("You are an autonomous engineer") and "/app" in traj.steps[0].message


@pytest.mark.parametrize("limits, policy, stop", [
    ({"max_turns": 3}, Script(forever="ls"), StopReason.MAX_TURNS),
    ({"max_total_tokens": 1000}, Script(forever="ls", tokens=600), StopReason.MAX_TOKENS),
    ({"max_wall_sec": 0.05}, Script(forever="sleep 0.1"), StopReason.MAX_WALL_TIME),
])
def test_budgets_end_the_episode_and_the_verifier_still_runs(task, tmp_path, limits, policy, stop):
    sb = MemorySandbox()
    r, _ = _run(task, policy, sb, tmp_path, **limits)
    assert r.stop is stop and r.scored and sb.verified


def test_the_task_timeout_is_a_hard_kill_then_the_verifier_runs(task, tmp_path):
    sb = MemorySandbox()
    r, traj = _run(task, Script([["sleep 3600"]]), sb, tmp_path, cap=0.3)  # returns only once the sandbox is killed
    assert (r.stop, r.scored) == (StopReason.AGENT_TIMEOUT, True)
    assert sb.killed and sb.revived and sb.verified
    assert traj.extra["stop"] == "agent_timeout"


def test_failures_are_unscored_statuses_with_reasons(task, tmp_path):
    r, traj = _run(task, Script(fail=LLMError(ReasonCode.LLM_RATE_LIMITED, "429")), MemorySandbox(), tmp_path)
    assert (r.stop, r.reason, r.scored, r.reward_v) == (StopReason.MODEL_FAILED, ReasonCode.LLM_RATE_LIMITED,
                                                        False, None)
    sb = MemorySandbox()
    r, traj = _run(task, Script([["die", "ls"]]), sb, tmp_path)
    assert (r.stop, r.reason, r.scored) == (StopReason.CONTAINER_DIED, ReasonCode.CONTAINER_DIED, False)
    assert not sb.verified
    agent = traj.steps[2]
    assert [c.tool_call_id for c in agent.tool_calls] == ["c2-0", "c2-1"] and agent.observation is None
    assert agent.extra["not_run"] == ["c2-0", "c2-1"]
    bad = MemorySandbox(Verification(reason=ReasonCode.REWARD_MISSING, evidence="no reward file"))
    r, _ = _run(task, Script(), bad, tmp_path)
    assert (r.stop, r.reason, r.scored, r.evidence) == (StopReason.AGENT_DONE, ReasonCode.REWARD_MISSING, False,
                                                        "no reward file")


def test_a_zero_by_rule_is_scored_with_its_reason(task, tmp_path):
    """A tampered toolchain (or processes that could not be stopped) is the agent's doing: r_V 0, in the mean."""
    tampered = MemorySandbox(Verification(reason=ReasonCode.TAMPER_DETECTED, evidence="usercustomize.py", zero=True))
    r, traj = _run(task, Script([["echo 7 > /app/answer.txt"]]), tampered, tmp_path)
    assert (r.stop, r.scored, r.reward_v, r.passed, r.metrics) == (StopReason.AGENT_DONE, True, 0.0, False, {})
    assert (r.reason, r.evidence) == (ReasonCode.TAMPER_DETECTED, "usercustomize.py")
    assert traj.extra["reward_v"] == 0.0


def test_a_task_that_cannot_be_read_is_a_setup_failure(task, tmp_path):
    (task / "task.toml").write_text("[agent]\n")
    r, _ = _run(task, Script(), MemorySandbox(), tmp_path)
    assert (r.stop, r.reason) == (StopReason.SETUP_FAILED, ReasonCode.TASK_METADATA_INVALID)


def test_malformed_calls_are_shown_to_the_model_not_run():
    sb = MemorySandbox()
    for args, name, problem in [("{oops", "bash", "not valid JSON"), ('["ls"]', "bash", "JSON object"),
                                ('{"cmd": "ls"}', "bash", "missing string argument"),
                                ('{"path": "a", "content": "b"}', "write_file", "unknown tool"),
                                ("{}", "python", "unknown tool")]:
        out = run_tool(sb, RequestedCall(call_id="x", name=name, arguments=args), timeout=5, cap=100,
                       file_write=False)
        assert problem in out.malformed and out.text.startswith("error:") and "not executed" in out.text
    assert sb.commands == []


def test_output_keeps_head_and_tail_and_marks_the_gap():
    res = CommandResult(0, head=b"H" * 10, tail=b"T" * 10, total_bytes=1000, capped=True)
    text, omitted = render_output(res, cap=1000)
    assert omitted == 980 and text.startswith("H" * 10) and "[... 980 bytes of output omitted ...]" in text
    assert text.rstrip().endswith("the rest was discarded]") and "T" * 10 in text
    assert render_output(CommandResult(0, head=b"short", total_bytes=5), cap=1000) == ("short", 0)


def test_write_file_says_what_it_does_to_modes_and_takes_one():
    spec = next(t["function"] for t in tool_specs(True) if t["function"]["name"] == WRITE_FILE)
    assert "0644" in spec["description"] and "not executable" in spec["description"]
    assert "mode" in spec["parameters"]["properties"] and spec["parameters"]["required"] == ["path", "content"]
    bash = tool_specs(False)[0]["function"]["description"]
    assert "chmod" in bash
    sb = MemorySandbox()

    def call(args: dict) -> object:
        return run_tool(sb, RequestedCall(call_id="w", name=WRITE_FILE, arguments=json.dumps(args)), timeout=5,
                        cap=100, file_write=True)

    assert call({"path": "a.sh", "content": "echo"}).text == "wrote (mode 0644)"
    assert call({"path": "b.sh", "content": "echo", "mode": "0755"}).text == "wrote (mode 0755)"
    bad = call({"path": "c.sh", "content": "echo", "mode": "rwx"})
    assert "octal" in bad.malformed and bad.text.startswith("error:")
    assert sb.writes == [("a.sh", b"echo", None), ("b.sh", b"echo", "0755")]


def test_cut_output_never_splits_a_character():
    text = "qty é€😀 " * 50
    data = text.encode()
    for cut in range(1, 12):
        res = CommandResult(0, head=data[:100 + cut], tail=data[-(100 + cut):], total_bytes=len(data))
        shown, _ = render_output(res, cap=10_000)
        assert "\ufffd" not in shown and "bytes of output omitted" in shown
    whole = CommandResult(0, head=b"bad \xff byte", total_bytes=10)
    assert render_output(whole, cap=100)[0] == "bad \ufffd byte"  # invalid bytes still show as such


class ProbedSandbox(MemorySandbox):
    """Answers the Oracle's probe (rollouts.inspection.existing_probe): the task's input exists, 3 bytes."""

    def exec(self, command: str, timeout: float) -> CommandResult:
        if command.startswith("for p in "):
            self.commands.append(command)
            return CommandResult(0, head=b"F\t3\t/app/data.txt\n", total_bytes=17)
        return super().exec(command, timeout)


def test_the_oracle_reaches_the_judge_as_an_agents_steps(tmp_path):
    """solve.sh's commands, one bash call each, with no /solution path and no cheat in sight."""
    from skill2env_dagster.rollouts.policy import OraclePolicy

    task = tmp_path / "task"
    shutil.copytree(FIXTURE, task)
    sol = task / "solution"
    (sol / "solve.sh").write_text("#!/bin/bash\nset -euo pipefail\n# count\ncd /app\n"
                                  "python3 /solution/lib/count.py data.txt > answer.txt\ncat answer.txt\n")
    (sol / "lib").mkdir()
    (sol / "lib" / "count.py").write_text("import sys\nprint(sum(1 for _ in open(sys.argv[1])))\n")
    (sol / "cheats").mkdir()
    (sol / "cheats" / "echo_seven.sh").write_text("#!/bin/bash\necho 7 > /app/answer.txt\n")
    sb = ProbedSandbox()
    r, traj = _run(task, OraclePolicy(), sb, tmp_path)
    assert sb.commands[0].startswith("for p in /app/data.txt /app/answer.txt; do if [ -d")  # probe, not in the episode
    steps = sb.commands[1:]
    assert (r.stop, r.scored, r.tool_calls) == (StopReason.AGENT_DONE, True, len(steps))
    # A look around and at the inputs the task names, the work, a look at the result.
    assert steps[0].startswith("cd /app && find . -maxdepth 3") and "/app/data.txt" in steps[1]
    assert steps[2].startswith("mkdir -p /tmp/work/lib && cat > /tmp/work/lib/count.py <<'EOF'")
    assert steps[3:5] == ["set -euo pipefail\ncd /app\npython3 /tmp/work/lib/count.py data.txt > answer.txt",
                          "set -euo pipefail\ncd /app\ncat answer.txt"]
    assert "show /app/data.txt" in steps[1]  # the input the probe found
    assert steps[5].endswith("ls -la /app/answer.txt && show /app/answer.txt 5000")  # the output, looked at after
    text = traj.to_json()
    for hidden in ("/solution", "cheats", "echo_seven", "wrong.sh", "reference solution"):
        assert hidden not in text
    assert [s.message for s in traj.steps if s.source == "agent"][-1] == "Done."


def test_a_script_the_splitter_cannot_read_runs_whole_from_the_agents_own_copy(tmp_path):
    from skill2env_dagster.rollouts.policy import reference_steps

    sol = tmp_path / "solution"
    sol.mkdir()
    (sol / "solve.sh").write_text('#!/bin/bash\ncd "$(dirname "$0")"\nbash helper.sh\n')
    (sol / "helper.sh").write_text("echo 5 > /app/answer.txt\n")
    steps = reference_steps(sol, {"MODE": "fast mode"})
    assert [s.split(" <<")[0] for s in steps[:2]] == ["mkdir -p /tmp/work && cat > /tmp/work/helper.sh",
                                                     "mkdir -p /tmp/work && cat > /tmp/work/solve.sh"]
    assert steps[2] == "export MODE='fast mode'\nbash /tmp/work/solve.sh"
