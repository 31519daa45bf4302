"""One episode: a policy acts in a fresh sandbox of one task under the agent limits, then the verifier runs.

Limits, in the order they bite: the per-command timeout (the call is killed, the agent is told), the number of
turns, the episode's token budget and wall time (checked between turns; the episode ends, the verifier still
runs), and the task's own `[agent] timeout_sec`, a hard kill by a watchdog of every process the agent started
(the files stay), after which the verifier runs as Harbor does. A model failure, a dead container
or an unusable reward file ends the episode unscored, with its reason; nothing here raises for those.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.gates.reward import all_full
from skill2env_dagster.hashing import sha256_bytes
from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.prompts import render
from skill2env_dagster.llm.tools import ChatMessage, ToolTurn
from skill2env_dagster.models.plan import Usage, total_usage
from skill2env_dagster.models.rollout import Rollout, StopReason
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode, Skill2EnvError
from skill2env_dagster.rollouts.policy import Policy
from skill2env_dagster.rollouts.sandbox import Sandbox, SandboxFactory, SandboxGoneError, Verification
from skill2env_dagster.rollouts.settings import AgentLimits
from skill2env_dagster.rollouts.tools import run_tool, tool_specs
from skill2env_dagster.rollouts.trajectory import TrajectoryRecorder, now_iso
from skill2env_dagster.rollouts.workspace import FILES_HEADING, LISTING_CHARS

log = logging.getLogger(__name__)

SYSTEM_PROMPT = "solver_system.j2"
# Normal ends: the verifier runs and the reward counts.
SCORABLE = {StopReason.AGENT_DONE, StopReason.MAX_TURNS, StopReason.MAX_TOKENS, StopReason.MAX_WALL_TIME,
            StopReason.AGENT_TIMEOUT}


@dataclass(frozen=True)
class EpisodeSpec:
    task_name: str
    task_dir: Path
    rollout_id: str
    attempt: int
    limits: AgentLimits
    timeout_cap_sec: float | None = None  # upper bound on the task's own agent timeout
    digest_chars: int = 30_000  # budget of the workspace view the judge reads


class Watchdog:
    """Calls `kill` once when `seconds` have passed, unless cancelled first."""

    def __init__(self, seconds: float, kill: Callable[[], None]) -> None:
        self.fired = threading.Event()
        self._kill = kill
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired.set()
        self._kill()

    def cancel(self) -> None:
        self._timer.cancel()


@dataclass
class _Run:
    """Everything the episode accumulates."""

    stop: StopReason | None = None
    started: bool = False  # the policy is in the sandbox
    reason: ReasonCode | None = None
    evidence: str = ""
    turns: list[ToolTurn] = field(default_factory=list)
    tool_calls: int = 0
    tool_seconds: float = 0.0
    agent_seconds: float = 0.0  # the agent loop alone (no set-up, no verifier)
    verification: Verification | None = None
    digest: str = ""

    def tokens(self) -> int:
        return sum(t.usage.prompt_tokens + t.usage.completion_tokens for t in self.turns)


class Episode:
    """Runs one spec with one policy; `run()` returns the Rollout and writes the ATIF trajectory."""

    def __init__(self, spec: EpisodeSpec, policy: Policy, open_sandbox: SandboxFactory, out_dir: Path) -> None:
        self.spec, self.policy, self.open_sandbox, self.out_dir = spec, policy, open_sandbox, out_dir
        self.task = TaskDir(spec.task_dir)
        self.tools = tool_specs(spec.limits.file_write_tool)
        self.recorder = TrajectoryRecorder(spec.rollout_id, policy.model, self.tools)
        self.messages: list[ChatMessage] = []
        self.state = _Run()

    def run(self) -> Rollout:
        start = time.perf_counter()
        try:
            config = TaskToml.from_toml(self.task.config.read_text(encoding="utf-8"))
            instruction = self.task.instruction.read_text(encoding="utf-8")
        except (OSError, ValueError, ValidationError) as e:
            self.state.reason, self.state.evidence = ReasonCode.TASK_METADATA_INVALID, str(e)[:500]
            return self._finish(start)
        self._open(config, instruction)
        s = self.state
        try:
            self._in_sandbox(config)
        except SandboxGoneError as e:  # while reviving or verifying
            s.reason, s.evidence = ReasonCode.CONTAINER_DIED, str(e)[:500]
            s.stop = s.stop or StopReason.CONTAINER_DIED
        except Skill2EnvError as e:
            s.reason, s.evidence = e.reason, str(e)[:500]
            s.stop = s.stop or (StopReason.INFRA_FAILED if s.started else StopReason.SETUP_FAILED)
        return self._finish(start)

    # -- phases ---------------------------------------------------------------------------------
    def _open(self, config: TaskToml, instruction: str) -> None:
        lim = self.spec.limits
        system = render(SYSTEM_PROMPT, workdir=config.environment.workdir or "/", file_write=lim.file_write_tool,
                        max_turns=lim.max_turns).strip()
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": instruction}]
        self.recorder.message("system", system)
        self.recorder.message("user", instruction)

    def _hard_timeout(self, config: TaskToml) -> float:
        cap = self.spec.timeout_cap_sec or float("inf")
        return min(config.agent.timeout_sec, cap)

    def _in_sandbox(self, config: TaskToml) -> None:
        s = self.state
        with self.open_sandbox(self.task.root) as sandbox:
            self.policy.prepare(sandbox, self.task)
            s.started = True
            hard = self._hard_timeout(config)
            dog = Watchdog(hard, sandbox.kill)
            begin = time.perf_counter()
            try:
                s.stop, s.reason, s.evidence = self._loop(sandbox, dog)
            except SandboxGoneError as e:
                s.stop, s.reason, s.evidence = StopReason.CONTAINER_DIED, ReasonCode.CONTAINER_DIED, str(e)
            finally:
                dog.cancel()
                s.agent_seconds = time.perf_counter() - begin
            if dog.fired.is_set():
                s.stop, s.reason, s.evidence = StopReason.AGENT_TIMEOUT, None, f"task agent timeout {hard:g}s"
                sandbox.revive()
            if s.stop in SCORABLE:
                s.digest = sandbox.workspace_digest(self.spec.digest_chars)
                s.verification = sandbox.verify()

    def _loop(self, sandbox: Sandbox, dog: Watchdog) -> tuple[StopReason, ReasonCode | None, str]:
        lim, s = self.spec.limits, self.state
        begin = time.perf_counter()
        for _ in range(lim.max_turns):
            if dog.fired.is_set():
                return StopReason.AGENT_TIMEOUT, None, ""
            if time.perf_counter() - begin > lim.max_wall_sec:
                return StopReason.MAX_WALL_TIME, None, f"agent phase ran past {lim.max_wall_sec:g}s"
            started = now_iso()
            try:
                turn = self.policy.act(self.messages, self.tools)
            except LLMError as e:
                return StopReason.MODEL_FAILED, e.reason, str(e)[:500]
            s.turns.append(turn)
            if not turn.calls:
                self.recorder.agent_turn(turn, [], started)
                return StopReason.AGENT_DONE, None, ""
            self._act(sandbox, turn, started, dog)
            if s.tokens() >= lim.max_total_tokens:
                return StopReason.MAX_TOKENS, None, f"{s.tokens()} tokens used"
        return StopReason.MAX_TURNS, None, f"{lim.max_turns} turns used"

    def _act(self, sandbox: Sandbox, turn: ToolTurn, started: str, dog: Watchdog) -> None:
        """Run the turn's calls in order; the turn is recorded even when the sandbox goes away mid-way.

        A call's timeout is not shortened near the deadline: the watchdog's hard kill is the deadline."""
        lim, s = self.spec.limits, self.state
        self.messages.append(turn.as_message())
        done = []
        try:
            for call in turn.calls:
                if dog.fired.is_set():
                    break
                outcome = run_tool(sandbox, call, timeout=lim.command_timeout_sec, cap=lim.output_cap_bytes,
                                   file_write=lim.file_write_tool)
                done.append((call, outcome))
                s.tool_calls += 1
                s.tool_seconds += outcome.seconds
                self.messages.append({"role": "tool", "tool_call_id": call.call_id, "content": outcome.text})
        finally:
            self.recorder.agent_turn(turn, done, started)

    # -- the record -----------------------------------------------------------------------------
    def _finish(self, start: float) -> Rollout:
        s, p = self.state, self.policy
        stop, v = s.stop or StopReason.SETUP_FAILED, s.verification
        scored = stop in SCORABLE and v is not None and (v.reason is None or v.zero)
        reason, evidence = (v.reason, v.evidence) if stop in SCORABLE and v is not None else (s.reason, s.evidence)
        metrics = v.metrics if scored and v else {}
        reward_v = round(sum(metrics.values()) / len(metrics), 6) if metrics else (0.0 if scored else None)
        usage = total_usage(t.usage for t in s.turns) if s.turns else Usage()
        outcome = {"task": self.spec.task_name, "kind": p.kind.value, "solver": p.solver, "attempt": self.spec.attempt,
                   "stop": stop.value, "reason": reason.value if reason else None, "metrics": metrics,
                   "reward_v": reward_v}
        if not any(st.source == "user" for st in self.recorder.steps):
            self.recorder.message("user", "(the task could not be read)")
        text = self.recorder.finish(outcome).to_json()
        name = f"{self.spec.rollout_id}.json"
        atomic_write_text(self.out_dir / name, text + "\n")
        workspace = f"{self.spec.rollout_id}.workspace.txt" if s.digest else ""
        if workspace:
            atomic_write_text(self.out_dir / workspace, s.digest)
        log.info("rollout id=%s stop=%s reason=%s reward_v=%s", self.spec.rollout_id, stop.value,
                 reason.value if reason else None, reward_v)
        return Rollout(
            rollout_id=self.spec.rollout_id, task_name=self.spec.task_name, kind=p.kind, solver=p.solver, model=p.model,
            attempt=self.spec.attempt, stop=stop,
            reason=reason if scored else (reason or ReasonCode.INTERNAL_ERROR),
            evidence=evidence[:1000], scored=scored, metrics=metrics, reward_v=reward_v,
            passed=scored and all_full(metrics), turns=len(s.turns), tool_calls=s.tool_calls, usage=usage,
            seconds=round(time.perf_counter() - start, 4), agent_seconds=round(s.agent_seconds, 4),
            model_seconds=round(sum(t.seconds for t in s.turns), 4), tool_seconds=round(s.tool_seconds, 4),
            workspace_digest=listing(s.digest), workspace=workspace, trajectory=name,
            trajectory_digest=sha256_bytes(text.encode()),
        )


def listing(view: str, limit: int = LISTING_CHARS) -> str:
    """The start of a workspace view (its listing of changed paths) for the rollout record."""
    head = view.split(FILES_HEADING, 1)[0]
    return head if len(head) <= limit else head[: limit - 20] + "\n[... more paths ...]"


def run_episode(spec: EpisodeSpec, policy: Policy, open_sandbox: SandboxFactory, out_dir: Path) -> Rollout:
    """One episode end to end (see module docstring)."""
    return Episode(spec, policy, open_sandbox, out_dir).run()
