"""Agent-harness overhead per step (model latency excluded) and the rollouts per minute the docker pool sustains.

Usage: .venv/bin/python benchmarks/bench_rollouts.py [--steps 40] [--rollouts 12] [--concurrency 2]
Needs the engine, registry and base images (scripts/docker-up.sh; skill2env base-images). Prints figures only.

1. Overhead: one episode whose policy answers instantly (in process, no HTTP) with `--steps` bash calls of
   `true`; per step = (agent phase - model time) / steps: the docker exec round trip, output capture and
   truncation, the tool message and the ATIF step. The bare `docker exec` round trip is printed beside it.
   Target: <= 0.1 s per step.
2. Throughput: `--rollouts` full rollouts (fresh hardened container, 3 tool calls that solve the task, verifier,
   container removal) run `--concurrency` at a time, as one `solver_rollouts` partition runs them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from skill2env_dagster.gates.container import client_for
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.tools import RequestedCall, ToolTurn
from skill2env_dagster.models.rollout import RolloutKind
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.episode import EpisodeSpec, run_episode
from skill2env_dagster.rollouts.runner import Job, TaskRef, run_jobs
from skill2env_dagster.rollouts.settings import AgentLimits

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tasks" / "good_minimal"
SOLVE = ["cat /app/data.txt", "wc -l < /app/data.txt | tr -d ' ' > /app/answer.txt", "cat /app/answer.txt"]


class Instant:
    """A policy with no model: the listed commands, one per turn, then stop."""

    kind, solver, model = RolloutKind.SOLVER, "bench", "none"

    def __init__(self, commands: list[str]) -> None:
        self.commands = list(commands)

    def prepare(self, sandbox: object, task: TaskDir) -> None:
        return None

    def act(self, messages: list, tools: list) -> ToolTurn:
        if not self.commands:
            return ToolTurn(content="done")
        command = self.commands.pop(0)
        return ToolTurn(calls=[RequestedCall(call_id=f"c{len(self.commands)}", name="bash",
                                             arguments=json.dumps({"command": command}))])


def _task(root: Path) -> Path:
    dest = root / "task"
    shutil.copytree(FIXTURE, dest)
    pin_dockerfile(dest)
    return dest


def bare_exec(factory: DockerSandboxFactory, task: Path, n: int) -> float:
    with factory(task) as sandbox:
        cid = sandbox.container_id
        start = time.perf_counter()
        for _ in range(n):
            exec_id = factory.client.api.exec_create(cid, ["true"])["Id"]
            factory.client.api.exec_start(exec_id)
        return (time.perf_counter() - start) / n


def overhead(factory: DockerSandboxFactory, task: Path, steps: int, out: Path) -> tuple[float, float]:
    limits = AgentLimits(max_turns=steps + 1)
    r = run_episode(EpisodeSpec("task", task, "overhead", 0, limits), Instant(["true"] * steps), factory, out)
    assert r.tool_calls == steps, r
    return (r.agent_seconds - r.model_seconds) / steps, r.tool_seconds / steps


def throughput(factory: DockerSandboxFactory, task: Path, n: int, concurrency: int, out: Path) -> tuple[float, list]:
    ref = TaskRef("task", task)
    jobs = [Job(ref, EpisodeSpec("task", task, f"r{i}", i, AgentLimits()), lambda: Instant(SOLVE),
                RolloutKind.SOLVER, "bench", "none") for i in range(n)]
    start = time.perf_counter()
    rollouts = run_jobs(jobs, factory, out, concurrency)
    wall = time.perf_counter() - start
    assert all(r.passed for r in rollouts), [(r.rollout_id, r.stop, r.reason) for r in rollouts]
    return wall, rollouts


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--rollouts", type=int, default=12)
    p.add_argument("--concurrency", type=int, default=2)
    args = p.parse_args()
    settings = GateSettings(run_id="bench-rollouts")
    client_for(settings)
    factory = DockerSandboxFactory(settings, OutputLimits())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        task = _task(root)
        run_episode(EpisodeSpec("task", task, "warm", 0, AgentLimits()), Instant(["true"]), factory, root)  # build
        bare = bare_exec(factory, task, args.steps)
        per_step, tool_part = overhead(factory, task, args.steps, root / "overhead")
        print(f"harness overhead per agent step (model excluded): {per_step * 1000:.1f} ms "
              f"(of which the tool call {tool_part * 1000:.1f} ms; bare docker exec round trip {bare * 1000:.1f} ms; "
              f"target <= 100 ms) over {args.steps} steps")
        wall, rollouts = throughput(factory, task, args.rollouts, args.concurrency, root / "throughput")
        per = [r.seconds for r in rollouts]
        print(f"rollouts per minute at concurrency {args.concurrency}: {len(rollouts) / wall * 60:.1f} "
              f"({len(rollouts)} rollouts of 3 tool calls + verifier in {wall:.1f} s; per rollout median "
              f"{statistics.median(per):.2f} s, max {max(per):.2f} s)")


if __name__ == "__main__":
    main()
