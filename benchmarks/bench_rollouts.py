"""Agent-harness overhead per step (model latency excluded) and the rollouts per minute the docker pool sustains.

Usage: .venv/bin/python benchmarks/bench_rollouts.py [--steps 40] [--rollouts 12] [--concurrency 2]
Needs the engine, registry and base images (scripts/docker-up.sh; skill2env base-images). Prints figures only.

1. Overhead: episodes whose policy answers instantly (in process, no HTTP): `--steps` bash calls of `true`; the
   same number of calls printing 20 kB (head/tail cut); and `write_file` calls of 4 kB with a mode. Per step =
   the step's wall time (from one step's start to the next's) minus the model's time: the docker exec round
   trips, output capture and truncation, the tool message and the ATIF step. Printed per kind: median, p95 and
   max per step, the docker execs per step (counted), the harness process's own CPU time per step (what load
   changes least), and the load average beside them; the bare `docker exec` round trip for comparison. Per
   episode, apart: container start, the workspace view and the verifier.
   Target: <= 0.1 s per step.
2. Throughput: `--rollouts` full rollouts (fresh hardened container, 3 tool calls that solve the task, verifier,
   container removal) run `--concurrency` at a time, as one `solver_rollouts` partition runs them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from skill2env_dagster.gates.container import client_for
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.tools import RequestedCall, ToolTurn
from skill2env_dagster.models.atif import AtifStep, AtifTrajectory
from skill2env_dagster.models.rollout import RolloutKind
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.episode import EpisodeSpec, run_episode
from skill2env_dagster.rollouts.runner import Job, TaskRef, run_jobs
from skill2env_dagster.rollouts.settings import AgentLimits

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tasks" / "good_minimal"
SOLVE = [("bash", {"command": c}) for c in ("cat /app/data.txt", "wc -l < /app/data.txt | tr -d ' ' > /app/answer.txt",
                                              "cat /app/answer.txt")]


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


class Calls:
    """An instant policy with prepared tool calls, one per turn."""

    kind, solver, model = RolloutKind.SOLVER, "bench", "none"

    def __init__(self, calls: list[tuple[str, dict]]) -> None:
        self.calls = list(calls)

    def prepare(self, sandbox: object, task: TaskDir) -> None:
        return None

    def act(self, messages: list, tools: list) -> ToolTurn:
        if not self.calls:
            return ToolTurn(content="done")
        name, args = self.calls.pop(0)
        return ToolTurn(calls=[RequestedCall(call_id=f"c{len(self.calls)}", name=name, arguments=json.dumps(args))])


STEP_KINDS = {
    "bash true": ("bash", {"command": "true"}),
    "bash 20 kB output": ("bash", {"command": "head -c 20000 /dev/zero | tr '\\0' 'x'"}),
    "write_file 4 kB mode 0755": ("write_file", {"path": "bench.sh", "content": "echo é\n" * 500, "mode": "0755"}),
}


def _model_seconds(step: AtifStep) -> float:
    return float((step.extra or {}).get("model_seconds", 0.0))


def _tool_seconds(step: AtifStep) -> float:
    return sum(float(t.get("seconds", 0.0)) for t in (step.extra or {}).get("tools", []))


def _ts(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def overhead(factory: DockerSandboxFactory, task: Path, steps: int, out: Path, kind: str) -> dict[str, float]:
    """One episode of `steps` calls of one kind: per-step harness time (step wall time minus model time)."""
    name, args = STEP_KINDS[kind]
    execs = _count_execs(factory)
    before = execs[0]
    spec = EpisodeSpec("task", task, f"overhead-{kind.split()[0]}-{len(kind)}", 0, AgentLimits(max_turns=steps + 1))
    cpu = time.process_time()
    r = run_episode(spec, Calls([(name, args)] * steps), factory, out)
    cpu = time.process_time() - cpu
    assert r.tool_calls == steps and r.scored, r
    traj = AtifTrajectory.model_validate_json((out / r.trajectory).read_text())
    agent = [st for st in traj.steps if st.source == "agent"]
    pairs = list(itertools.pairwise(agent))
    per = sorted(_ts(b.timestamp or "") - _ts(a.timestamp or "") - _model_seconds(a) for a, b in pairs)
    own = sorted(_ts(b.timestamp or "") - _ts(a.timestamp or "") - _model_seconds(a) - _tool_seconds(a)
                 for a, b in pairs)
    return {"steps": steps, "median": statistics.median(per), "p95": per[int(0.95 * (len(per) - 1))],
            "max": per[-1], "mean": (r.agent_seconds - r.model_seconds) / steps,
            "own_median": statistics.median(own),
            "own_mean": (r.agent_seconds - r.model_seconds - r.tool_seconds) / steps,
            "execs_per_step": (execs[0] - before) / steps, "cpu_per_step": cpu / steps,
            "episode_fixed": r.seconds - r.agent_seconds}


def _count_execs(factory: DockerSandboxFactory) -> list[int]:
    """Counts the docker execs the harness makes (wraps the API client once)."""
    api = factory.client.api
    if not hasattr(api, "_bench_count"):
        api._bench_count = [0]
        create = api.exec_create

        def counted(*a: object, **kw: object) -> object:
            api._bench_count[0] += 1
            return create(*a, **kw)

        api.exec_create = counted
    return api._bench_count


def throughput(factory: DockerSandboxFactory, task: Path, n: int, concurrency: int, out: Path) -> tuple[float, list]:
    ref = TaskRef("task", task)
    jobs = [Job(ref, EpisodeSpec("task", task, f"r{i}", i, AgentLimits()), lambda: Calls(SOLVE),
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
        warm = Calls([STEP_KINDS["bash true"]])
        run_episode(EpisodeSpec("task", task, "warm", 0, AgentLimits()), warm, factory, root)  # builds the image
        bare = bare_exec(factory, task, args.steps)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs); "
              f"bare docker exec round trip {bare * 1000:.1f} ms")
        for kind in STEP_KINDS:
            f = overhead(factory, task, args.steps, root / "overhead", kind)
            ms = {k: f"{f[k] * 1000:.1f} ms" for k in ("median", "p95", "max", "mean")}
            print(f"harness overhead per step, {kind}: median {ms['median']}, p95 {ms['p95']}, max {ms['max']}, "
                  f"mean {ms['mean']} over {f['steps']} steps; {f['execs_per_step']:.1f} docker execs per step; "
                  f"harness CPU {f['cpu_per_step'] * 1000:.1f} ms per step (episode included); of a step, the "
                  f"harness alone (less the tool call's own round trip) median {f['own_median'] * 1000:.1f} ms, "
                  f"mean {f['own_mean'] * 1000:.1f} ms; "
                  f"per episode apart (container, workspace view, verifier) {f['episode_fixed']:.2f} s; "
                  "target <= 100 ms per step")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        wall, rollouts = throughput(factory, task, args.rollouts, args.concurrency, root / "throughput")
        per = [r.seconds for r in rollouts]
        print(f"rollouts per minute at concurrency {args.concurrency}: {len(rollouts) / wall * 60:.1f} "
              f"({len(rollouts)} rollouts of 3 tool calls + verifier in {wall:.1f} s; per rollout median "
              f"{statistics.median(per):.2f} s, max {max(per):.2f} s)")


if __name__ == "__main__":
    main()
