"""Record an episode as an ATIF trajectory, step by step, as it happens.

ATIF carries the messages, tool calls, observations, per-step token metrics and timestamps. What it has no field
for goes into the step's `extra` (its extension point): model latency, and per tool call the exit code, whether
it timed out, how much output was omitted, its duration and, for a malformed call, the raw arguments and why it
was not executed. The episode's outcome (stop reason, verifier metrics) goes into the root `extra`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from skill2env_dagster.llm.tools import RequestedCall, ToolTurn
from skill2env_dagster.models.atif import (
    AtifAgent,
    AtifStep,
    AtifTrajectory,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    ToolCall,
)
from skill2env_dagster.rollouts.tools import ToolOutcome

AGENT_NAME = "skill2env-terminal-agent"
AGENT_VERSION = "1"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _tool_call(call: RequestedCall, outcome: ToolOutcome) -> ToolCall:
    return ToolCall(tool_call_id=call.call_id, function_name=call.name, arguments=outcome.arguments)


def _tool_extra(call: RequestedCall, o: ToolOutcome) -> dict[str, Any]:
    extra: dict[str, Any] = {"call_id": call.call_id, "exit_code": o.exit_code, "timed_out": o.timed_out,
                             "omitted_bytes": o.omitted_bytes, "capped": o.capped, "seconds": round(o.seconds, 4)}
    if o.malformed:
        extra |= {"malformed": o.malformed, "raw_arguments": call.arguments[:2000]}
    return extra


class TrajectoryRecorder:
    """Appends ATIF steps; `finish()` validates the whole trajectory (a bad one is a bug, raised at once)."""

    def __init__(self, session_id: str, model: str, tools: list[dict[str, Any]]) -> None:
        self.session_id = session_id
        self.agent = AtifAgent(name=AGENT_NAME, version=AGENT_VERSION, model_name=model or None,
                               tool_definitions=tools)
        self.steps: list[AtifStep] = []

    def _next_id(self) -> int:
        return len(self.steps) + 1

    def message(self, source: Literal["system", "user"], text: str) -> None:
        self.steps.append(AtifStep(step_id=self._next_id(), timestamp=now_iso(), source=source, message=text))

    def agent_turn(self, turn: ToolTurn, done: list[tuple[RequestedCall, ToolOutcome]], started: str) -> None:
        """One model turn and the results of the calls that ran (all of them, unless the sandbox went away)."""
        u = turn.usage
        metrics = Metrics(prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
                          cost_usd=u.cost_usd, extra={"finish_reason": turn.finish_reason} if turn.finish_reason
                          else None)
        calls = [_tool_call(c, o) for c, o in done]
        # Calls requested but never run (the episode ended first) still belong to the record.
        ran = {c.call_id for c, _ in done}
        calls += [ToolCall(tool_call_id=c.call_id, function_name=c.name, arguments=_safe_args(c.arguments))
                  for c in turn.calls if c.call_id not in ran]
        results = [ObservationResult(source_call_id=c.call_id, content=o.text) for c, o in done]
        self.steps.append(AtifStep(
            step_id=self._next_id(), timestamp=started, source="agent", model_name=turn.model or None,
            message=turn.content, reasoning_content=turn.reasoning, tool_calls=calls or None,
            observation=Observation(results=results) if results else None, metrics=metrics,
            extra={"model_seconds": round(turn.seconds, 4), "tools": [_tool_extra(c, o) for c, o in done],
                   "not_run": sorted(c.call_id for c in turn.calls if c.call_id not in ran)},
        ))

    def finish(self, outcome: dict[str, Any]) -> AtifTrajectory:
        agent_steps = [s for s in self.steps if s.metrics is not None]
        m = [s.metrics for s in agent_steps if s.metrics is not None]
        final = FinalMetrics(total_prompt_tokens=sum(x.prompt_tokens or 0 for x in m),
                             total_completion_tokens=sum(x.completion_tokens or 0 for x in m),
                             total_cost_usd=round(sum(x.cost_usd or 0.0 for x in m), 8),
                             total_steps=len(self.steps))
        return AtifTrajectory(session_id=self.session_id, agent=self.agent, steps=self.steps, final_metrics=final,
                              extra=outcome)


def _safe_args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
