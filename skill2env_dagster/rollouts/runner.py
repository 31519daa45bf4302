"""All rollouts of one skill: per retained task, the two references (Oracle, no-op) and k attempts of every
solver configuration, `concurrency` at a time; then each task's calibration.

Every episode is isolated: whatever one raises becomes that rollout's recorded status (`internal_error` for a
bug), never a lost partition. Trajectories are written into a staging folder that replaces the skill's rollout
folder in one rename, so a crash leaves the previous set intact.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from skill2env_dagster.atomic import atomic_replace_dir
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.tools import ToolChat
from skill2env_dagster.models.plan import total_usage
from skill2env_dagster.models.rollout import (
    PREVIOUS_SOLUTION,
    Rollout,
    RolloutKind,
    SolverRollouts,
    StopReason,
    TaskCalibration,
    TaskRollouts,
)
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.calibration import calibrate
from skill2env_dagster.rollouts.episode import EpisodeSpec, run_episode
from skill2env_dagster.rollouts.policy import ModelPolicy, NoopPolicy, OraclePolicy, Policy
from skill2env_dagster.rollouts.sandbox import SandboxFactory
from skill2env_dagster.rollouts.settings import AgentLimits, RolloutSettings, solver_endpoint

log = logging.getLogger(__name__)
MAX_ID = 180
ChatFactory = Callable[[LLMConfig], ToolChat]


@dataclass(frozen=True)
class TaskRef:
    name: str
    path: Path


@dataclass(frozen=True)
class Job:
    task: TaskRef
    spec: EpisodeSpec
    make_policy: Callable[[], Policy]
    kind: RolloutKind
    solver: str
    model: str


def rollout_id(task: str, solver: str, attempt: int) -> str:
    """File-name safe and unique per skill; long task names keep a hash of the full id."""
    full = f"{task}--{solver}--{attempt}"
    if len(full) <= MAX_ID:
        return full
    return f"{full[: MAX_ID - 13]}-{hashlib.sha256(full.encode()).hexdigest()[:12]}"


REFERENCE_TURNS = 500


def reference_limits(settings: RolloutSettings) -> AgentLimits:
    """The Oracle runs solve.sh's commands, one call each, as many as it has: it gets the task's whole agent time
    (the hard kill), not one command's or the solvers' turn and wall-time budgets."""
    return settings.limits.model_copy(update={"command_timeout_sec": 1e9, "max_turns": REFERENCE_TURNS,
                                              "max_wall_sec": 1e9})


def plan_jobs(tasks: Sequence[TaskRef], settings: RolloutSettings, default: LLMConfig,
              chat_factory: ChatFactory = ToolChat, timeout_cap_sec: float | None = None) -> list[Job]:
    """References first (they need no model), then every solver's k attempts, task by task."""
    lim, ref_limits = settings.limits, reference_limits(settings)
    chats = {s.name: chat_factory(solver_endpoint(s, default)) for s in settings.solvers}
    jobs: list[Job] = []
    for t in tasks:
        for maker, kind in ((OraclePolicy, RolloutKind.ORACLE), (NoopPolicy, RolloutKind.NOOP)):
            spec = EpisodeSpec(t.name, t.path, rollout_id(t.name, kind.value, 0), 0, ref_limits, timeout_cap_sec,
                               settings.judge.diff_chars)
            jobs.append(Job(t, spec, maker, kind, kind.value, ""))
        for s in settings.solvers:
            chat = chats[s.name]
            for k in range(s.attempts):
                spec = EpisodeSpec(t.name, t.path, rollout_id(t.name, s.name, k), k, lim, timeout_cap_sec,
                                   settings.judge.diff_chars)
                jobs.append(Job(t, spec, _model_policy(s.name, chat, s.temperature, s.max_tokens),
                                RolloutKind.SOLVER, s.name, chat.config.model))
    return jobs


def _model_policy(name: str, chat: ToolChat, temperature: float, max_tokens: int) -> Callable[[], Policy]:
    return lambda: ModelPolicy(name, chat, temperature, max_tokens)


def _safe_run(job: Job, open_sandbox: SandboxFactory, out_dir: Path) -> Rollout:
    try:
        return run_episode(job.spec, job.make_policy(), open_sandbox, out_dir)
    except Exception as e:  # one broken episode (a bug) must not lose the others
        log.exception("rollout %s crashed", job.spec.rollout_id)
        return Rollout(rollout_id=job.spec.rollout_id, task_name=job.task.name, kind=job.kind, solver=job.solver,
                       model=job.model, attempt=job.spec.attempt, stop=StopReason.INFRA_FAILED,
                       reason=ReasonCode.INTERNAL_ERROR, evidence=f"{type(e).__name__}: {e}"[:1000], scored=False,
                       trajectory="")


def run_jobs(jobs: Sequence[Job], open_sandbox: SandboxFactory, out_dir: Path, concurrency: int) -> list[Rollout]:
    """Every job, `concurrency` at a time, results in job order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if concurrency <= 1:
        return [_safe_run(j, open_sandbox, out_dir) for j in jobs]
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="rollout") as pool:
        return list(pool.map(lambda j: _safe_run(j, open_sandbox, out_dir), jobs))


def roll_out_task(task: TaskRef, settings: RolloutSettings, default: LLMConfig, open_sandbox: SandboxFactory,
                  folder: Path, *, chat_factory: ChatFactory = ToolChat,
                  timeout_cap_sec: float | None = None) -> tuple[list[Rollout], TaskCalibration]:
    """One task's rollouts (references included) and its calibration; trajectories go to `folder`."""
    jobs = plan_jobs([task], settings, default, chat_factory, timeout_cap_sec)
    rollouts = run_jobs(jobs, open_sandbox, folder, settings.concurrency)
    return rollouts, calibrate(rollouts, settings.too_easy_above)


def replay_solution(previous: TaskRef, task: TaskRef, settings: RolloutSettings, open_sandbox: SandboxFactory,
                    folder: Path, *, timeout_cap_sec: float | None = None) -> Rollout:
    """`previous`'s solution/solve.sh run as one call on `task` (hardening's check that a rebuild is harder)."""
    spec = EpisodeSpec(task.name, task.path, rollout_id(task.name, PREVIOUS_SOLUTION, 0), 0,
                       reference_limits(settings), timeout_cap_sec, settings.judge.diff_chars)
    solution = TaskDir(previous.path).solution_dir
    job = Job(task, spec, lambda: OraclePolicy(solution), RolloutKind.ORACLE, PREVIOUS_SOLUTION, "")
    return _safe_run(job, open_sandbox, folder)


def roll_out_skill(skill_id: str, tasks: Sequence[TaskRef], settings: RolloutSettings, default: LLMConfig,
                   open_sandbox: SandboxFactory, folder: Path, *, chat_factory: ChatFactory = ToolChat,
                   timeout_cap_sec: float | None = None) -> SolverRollouts:
    """The `solver_rollouts` artifact of one skill; trajectories end up in `folder` (replaced as a whole)."""
    start = time.perf_counter()
    jobs = plan_jobs(tasks, settings, default, chat_factory, timeout_cap_sec)
    staging = folder.with_name(f".{folder.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    rollouts = run_jobs(jobs, open_sandbox, staging, settings.concurrency)
    atomic_replace_dir(staging, folder)
    by_task: dict[str, list[Rollout]] = {t.name: [] for t in tasks}
    for r in rollouts:
        by_task[r.task_name].append(r)
    result = SolverRollouts(
        skill_id=skill_id, solvers=[s.name for s in settings.solvers],
        models={s.name: solver_endpoint(s, default).model for s in settings.solvers},
        tasks=[TaskRollouts(task_name=t.name, path=str(t.path), rollouts=by_task[t.name],
                            calibration=calibrate(by_task[t.name], settings.too_easy_above)) for t in tasks],
        usage=total_usage(r.usage for r in rollouts), seconds=round(time.perf_counter() - start, 4))
    log.info("rollouts skill=%s tasks=%d rollouts=%d labels=%s", skill_id, len(tasks), len(rollouts),
             [t.calibration.label for t in result.tasks])
    return result
