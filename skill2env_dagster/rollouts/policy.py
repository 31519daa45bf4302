"""Who acts in an episode: a model over an OpenAI-compatible endpoint, or one of the two fixed references.

The references make the judge's scale visible on every task: the Oracle (the task's own solution/solve.sh run as
one tool call) should be judged near the top, the no-op (no action at all) near the bottom. They go through the
same harness, container and verifier as the solvers, so their trajectories are comparable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from skill2env_dagster.llm.tools import ChatMessage, RequestedCall, ToolChat, ToolTurn
from skill2env_dagster.models.rollout import RolloutKind
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, TaskDir
from skill2env_dagster.rollouts.sandbox import Sandbox
from skill2env_dagster.rollouts.tools import BASH

ORACLE_CALL_ID = "call_oracle_solve"
PREVIOUS_SOLUTION = "previous_solution"


class Policy(Protocol):
    kind: RolloutKind
    solver: str  # the solver configuration's name, or the reference's kind
    model: str

    def prepare(self, sandbox: Sandbox, task: TaskDir) -> None:
        """Anything the policy needs in the sandbox before the first turn."""
        ...

    def act(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> ToolTurn:
        """The next turn; a turn without tool calls ends the episode. Raises LLMError for a model failure."""
        ...


class ModelPolicy:
    """A solver configuration: one model at one temperature."""

    kind = RolloutKind.SOLVER

    def __init__(self, solver: str, chat: ToolChat, temperature: float, max_tokens: int) -> None:
        self.solver, self.chat = solver, chat
        self.model = chat.config.model
        self.temperature, self.max_tokens = temperature, max_tokens

    def prepare(self, sandbox: Sandbox, task: TaskDir) -> None:
        return None

    def act(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> ToolTurn:
        return self.chat.turn(messages, tools, temperature=self.temperature, max_tokens=self.max_tokens,
                              purpose=f"solver:{self.solver}")


class OraclePolicy:
    """Runs solution/solve.sh as one bash call, then stops. With `solution_dir` (hardening's check) it runs another
    version's solution instead: the previous round's, on the rebuilt task."""

    kind = RolloutKind.ORACLE
    model = ""

    def __init__(self, solution_dir: Path | None = None) -> None:
        self._turns = 0
        self.solution_dir = solution_dir
        self.solver = "oracle" if solution_dir is None else PREVIOUS_SOLUTION

    def prepare(self, sandbox: Sandbox, task: TaskDir) -> None:
        sandbox.upload_dir(self.solution_dir or task.solution_dir, CONTAINER_SOLUTION)

    def act(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> ToolTurn:
        self._turns += 1
        if self._turns > 1:
            return ToolTurn(content="The reference solution has run.", model="oracle")
        command = f"bash {CONTAINER_SOLUTION}/solve.sh"
        return ToolTurn(content="Running the reference solution.", model="oracle", calls=[
            RequestedCall(call_id=ORACLE_CALL_ID, name=BASH, arguments=json.dumps({"command": command}))])


class NoopPolicy:
    """Does nothing and stops at once."""

    kind = RolloutKind.NOOP
    solver = "noop"
    model = ""

    def prepare(self, sandbox: Sandbox, task: TaskDir) -> None:
        return None

    def act(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> ToolTurn:
        return ToolTurn(content="", model="noop")
