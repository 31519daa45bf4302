"""Who acts in an episode: a model over an OpenAI-compatible endpoint, or one of the two fixed references.

The references make the judge's scale visible on every task: the Oracle (the task's own solution/solve.sh run
step by step, as an agent's commands) should be judged near the top, the no-op (no action at all) near the
bottom. They go through the same harness, container and verifier as the solvers, so their trajectories are
comparable.
"""

from __future__ import annotations

import base64
import json
import logging
import posixpath
import re
import shlex
from pathlib import Path
from typing import Any, Protocol

from skill2env_dagster.llm.tools import ChatMessage, RequestedCall, ToolChat, ToolTurn
from skill2env_dagster.models.rollout import PREVIOUS_SOLUTION, RolloutKind
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.rollouts.inspection import Probe, existing_probe, inspection_steps, probed_paths
from skill2env_dagster.rollouts.sandbox import Sandbox
from skill2env_dagster.rollouts.script_steps import agent_steps, split_commands
from skill2env_dagster.rollouts.tools import BASH

log = logging.getLogger(__name__)


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
    """The task's reference solution as an agent's work: a look at the working directory and the inputs the task
    names (`rollouts.inspection`), the commands of `solution/solve.sh` run step by step, one bash call each
    (`rollouts.script_steps`), a look at what it produced, then a short final answer. With `solution_dir`
    (hardening's check) another version's solution runs instead: the previous round's, on the rebuilt task.

    Nothing of the answer key is in sight: the solution folder is not uploaded, its cheats and naive `wrong.sh` are
    never used, and a helper file `solve.sh` needs is written by the agent's own steps to a scratch folder that
    replaces `/solution` in the commands. A script the splitter does not understand, or one that finds its helpers
    through `$0`/`BASH_SOURCE`, is written to that folder and run whole, as one step."""

    kind = RolloutKind.ORACLE
    model = ""

    def __init__(self, solution_dir: Path | None = None) -> None:
        self._turns = 0
        self.solution_dir = solution_dir
        self.solver = "oracle" if solution_dir is None else PREVIOUS_SOLUTION
        self.steps: list[str] = []
        self.probed = False  # whether the read-only probe answered (else each input is read blind, in one call)

    def prepare(self, sandbox: Sandbox, task: TaskDir) -> None:
        config = TaskToml.from_toml(task.config.read_text(encoding="utf-8"))
        work = reference_steps(self.solution_dir or task.solution_dir, config.solution.env)
        delivered = config.metadata.get("blueprint_deliverables")
        instruction, workdir = task.instruction.read_text(encoding="utf-8"), config.environment.workdir or "/"
        deliverables = [str(d) for d in delivered] if isinstance(delivered, list) else []
        paths, found = probed_paths(instruction, workdir, deliverables), None
        if paths:  # which of them exist before the work, and their sizes: a read-only probe, not in the episode
            probe = sandbox.exec(existing_probe(paths), 30)
            if probe.exit_code == 0:
                found = Probe.parse(probe.head.decode("utf-8", "replace"), complete=not probe.tail)
            else:
                log.warning("Oracle probe failed (exit %s) on %s: inputs read without sizes", probe.exit_code,
                            task.root)
        self.probed = found is not None
        before, after = inspection_steps(instruction, workdir, deliverables, found)
        self.steps = [*before, *work, *after]

    def act(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> ToolTurn:
        i, self._turns = self._turns, self._turns + 1
        if i >= len(self.steps):
            return ToolTurn(content="Done.", model="oracle")
        return ToolTurn(model="oracle", calls=[
            RequestedCall(call_id=f"call_{i + 1}", name=BASH, arguments=json.dumps({"command": self.steps[i]}))])


def reference_steps(solution: Path, env: dict[str, str] | None = None) -> list[str]:
    """The bash calls that run `solution/solve.sh` as an agent would (see OraclePolicy)."""
    script = (solution / "solve.sh").read_text(encoding="utf-8", errors="replace")
    helpers = sorted(p for p in solution.rglob("*") if p.is_file() and _helper(p.relative_to(solution)))
    prelude = [f"export {k}={shlex.quote(v)}" for k, v in sorted((env or {}).items())]
    commands = None if re.search(r"\$0\b|\$\{0\}|BASH_SOURCE", script) else split_commands(script)
    writes = [_write_step(p.relative_to(solution).as_posix(), p.read_bytes()) for p in helpers]
    if commands is None:
        writes.append(_write_step("solve.sh", script.encode()))
        return [*writes, "\n".join([*prelude, f"bash {SCRATCH}/solve.sh"])]
    return [*writes, *(_unsolution(step) for step in agent_steps(commands, prelude))]


SCRATCH = "/tmp/work"


def _helper(rel: Path) -> bool:
    """A file solve.sh may use: not solve.sh itself, not a cheat, not the naive wrong.sh."""
    return rel.as_posix() not in ("solve.sh", "wrong.sh") and rel.parts[0] != "cheats"


def _unsolution(command: str) -> str:
    return re.sub(rf"{re.escape(CONTAINER_SOLUTION)}(?=/|\b)", SCRATCH, command)


def _write_step(rel: str, data: bytes) -> str:
    """An agent writing one file of its own with a here-document (base64 for a binary one)."""
    target = f"{SCRATCH}/{rel}"
    try:
        text, binary = data.decode("utf-8"), b"\0" in data
    except UnicodeDecodeError:
        text, binary = "", True
    if binary:
        text = base64.encodebytes(data).decode()
    tag = "EOF"
    while tag in text:
        tag += "_"
    sink = f"base64 -d > {shlex.quote(target)}" if binary else f"cat > {shlex.quote(target)}"
    body = text if text.endswith("\n") else text + "\n"
    chmod = f" && chmod +x {shlex.quote(target)}" if rel.endswith((".sh", ".py")) else ""
    return f"mkdir -p {shlex.quote(posixpath.dirname(target))} && {sink} <<'{tag}'{chmod}\n{body}{tag}"


class NoopPolicy:
    """Does nothing and stops at once."""

    kind = RolloutKind.NOOP
    solver = "noop"
    model = ""

    def prepare(self, sandbox: Sandbox, task: TaskDir) -> None:
        return None

    def act(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> ToolTurn:
        return ToolTurn(content="", model="noop")
