"""Gate a task: static checks, then build, Oracle (must score 1), no-op (must score 0) and wrong.sh (below 1).

Each runtime trial gets its own fresh hardened container (see container.py). The verdict is `retained` only
when every check passed; a failed check makes it `rejected` with that check's reason; a check that could not
run (engine down, registry down, a crash) makes it `infra_failed` — never a pass.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.reward import Reward, all_full, all_zero, parse_reward
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.gates.static_checks import run_static_checks
from skill2env_dagster.models.gate import CheckResult, CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, CONTAINER_TESTS, TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InfraError, InputError, ReasonCode, Skill2EnvError

log = logging.getLogger(__name__)
_CANCEL = threading.Event()


@dataclass
class TrialOutcome:
    """What one container run produced: metrics, or the reason there are none."""

    reward: Reward
    seconds: float
    timed_out: str | None = None  # "solution" or "verifier"
    preexisting: tuple[str, ...] = ()


def _check(name: str, ok: bool, reason: ReasonCode, evidence: str, seconds: float) -> CheckResult:
    verdict = CheckVerdict.PASS if ok else CheckVerdict.FAIL
    return CheckResult(name=name, verdict=verdict, reason=None if ok else reason, evidence=evidence,
                       seconds=round(seconds, 4))


def _error(name: str, reason: ReasonCode, evidence: str, seconds: float = 0.0) -> CheckResult:
    return CheckResult(name=name, verdict=CheckVerdict.ERROR, reason=reason, evidence=evidence[:4000],
                       seconds=round(seconds, 4))


def _timeouts(config: TaskToml, settings: GateSettings) -> tuple[float, float]:
    cap = settings.timeout_cap_sec or float("inf")
    return min(config.agent.timeout_sec, cap), min(config.verifier.timeout_sec, cap)


def _reward_from(output: bytes) -> Reward:
    """The verifier exec prints `<path>\n<bytes>` of the reward file it found, or nothing."""
    if not output:
        return parse_reward(None, None)
    path, _, data = output.partition(b"\n")
    return parse_reward(Path(path.decode(errors="replace")).name, data)


def run_trial(
    client: docker.DockerClient, image: str, task: TaskDir, config: TaskToml, settings: GateSettings,
    script: Path | None,
) -> TrialOutcome:
    """One fresh container: optionally copy solution/ and run `script`, then run the verifier and read the reward."""
    _raise_if_cancelled()
    agent_timeout, verifier_timeout = _timeouts(config, settings)
    start = time.perf_counter()
    with ctr.Trial(client, image, settings, config.environment.workdir) as trial:
        pre = tuple(trial.preexisting)
        if script is not None:
            trial.put_dir(task.solution_dir, CONTAINER_SOLUTION.strip("/"))
            res = trial.run_script(f"{CONTAINER_SOLUTION}/{script.name}", "/logs/agent/solve.log", agent_timeout)
            if res.timed_out:
                return TrialOutcome(Reward(), time.perf_counter() - start, "solution", pre)
        _raise_if_cancelled()
        trial.put_dir(task.tests_dir, CONTAINER_TESTS.strip("/"))
        res = trial.run_verifier(verifier_timeout)
        if res.timed_out:
            return TrialOutcome(Reward(), time.perf_counter() - start, "verifier", pre)
        _raise_if_cancelled()
    return TrialOutcome(_reward_from(res.output), time.perf_counter() - start, None, pre)


def _raise_if_cancelled() -> None:
    if _CANCEL.is_set():
        raise InfraError(ReasonCode.CANCELLED, "gates cancelled")


def _judge_oracle(o: TrialOutcome, timeouts: tuple[float, float]) -> CheckResult:
    if o.timed_out == "solution":
        return _check("oracle", False, ReasonCode.ORACLE_TIMEOUT, f"solve.sh ran past {timeouts[0]}s", o.seconds)
    if o.timed_out == "verifier":
        return _check("oracle", False, ReasonCode.VERIFIER_TIMEOUT, f"test.sh ran past {timeouts[1]}s", o.seconds)
    if not o.reward.ok:
        return _check("oracle", False, o.reward.reason, o.reward.problem, o.seconds)  # type: ignore[arg-type]
    m = o.reward.metrics
    return _check("oracle", all_full(m), ReasonCode.ORACLE_FAILED, f"metrics {m}", o.seconds)


def _judge_nop(o: TrialOutcome, timeouts: tuple[float, float]) -> CheckResult:
    if o.timed_out:
        return _check("nop", False, ReasonCode.VERIFIER_TIMEOUT, f"test.sh ran past {timeouts[1]}s", o.seconds)
    if not o.reward.ok:
        return _check("nop", False, o.reward.reason, o.reward.problem, o.seconds)  # type: ignore[arg-type]
    m = o.reward.metrics
    return _check("nop", all_zero(m), ReasonCode.NOP_FAILED, f"metrics {m}", o.seconds)


def _judge_wrong(o: TrialOutcome, timeouts: tuple[float, float]) -> CheckResult:
    if o.timed_out == "solution":
        return _check("wrong_solution", False, ReasonCode.WRONG_SOLUTION_TIMEOUT,
                      f"wrong.sh ran past {timeouts[0]}s", o.seconds)
    if o.timed_out == "verifier":
        return _check("wrong_solution", False, ReasonCode.VERIFIER_TIMEOUT, f"test.sh ran past {timeouts[1]}s",
                      o.seconds)
    if not o.reward.ok:
        return _check("wrong_solution", False, o.reward.reason, o.reward.problem, o.seconds)  # type: ignore[arg-type]
    m = o.reward.metrics
    return _check("wrong_solution", not all_full(m), ReasonCode.WRONG_SOLUTION_PASSED, f"metrics {m}", o.seconds)


def _image_clean(outcomes: list[TrialOutcome]) -> CheckResult:
    leaked = sorted({p for o in outcomes for p in o.preexisting if p in (CONTAINER_TESTS, CONTAINER_SOLUTION)})
    return _check("image_clean", not leaked, ReasonCode.IMAGE_LEAKS_GRADING,
                  f"image already contains {leaked}" if leaked else "no /tests or /solution in the image", 0.0)


def _runtime_checks(
    client: docker.DockerClient, task: TaskDir, config: TaskToml, settings: GateSettings, report: GateReport
) -> list[CheckResult]:
    start = time.perf_counter()
    try:
        image, built = build_image(client, task.environment_dir, settings.build_network,
                                   config.environment.build_timeout_sec)
    except InputError as e:
        return [_check("build", False, e.reason, str(e), time.perf_counter() - start)]
    report.image = image
    checks = [_check("build", True, ReasonCode.BUILD_FAILED, f"{image} ({'built' if built else 'cached'})",
                     time.perf_counter() - start)]
    timeouts = _timeouts(config, settings)
    oracle = run_trial(client, image, task, config, settings, task.solve_script)
    nop = run_trial(client, image, task, config, settings, None)
    report.oracle, report.nop = oracle.reward.metrics, nop.reward.metrics
    checks += [_image_clean([oracle, nop]), _judge_oracle(oracle, timeouts), _judge_nop(nop, timeouts)]
    if settings.run_wrong and task.wrong_script.is_file():
        wrong = run_trial(client, image, task, config, settings, task.wrong_script)
        report.wrong = wrong.reward.metrics
        checks.append(_judge_wrong(wrong, timeouts))
    return checks


def _finish(report: GateReport, start: float) -> GateReport:
    fails = [c for c in report.checks if c.verdict is CheckVerdict.FAIL]
    errors = [c for c in report.checks if c.verdict is CheckVerdict.ERROR]
    if fails:
        report.verdict, report.reason = GateVerdict.REJECTED, fails[0].reason
    elif errors:
        report.verdict, report.reason = GateVerdict.INFRA_FAILED, errors[0].reason or ReasonCode.INTERNAL_ERROR
    else:
        report.verdict, report.reason = GateVerdict.RETAINED, None
    report.seconds = round(time.perf_counter() - start, 4)
    log.info("gate task=%s verdict=%s reason=%s", report.task, report.verdict, report.reason)
    return report


def gate_task(task_dir: Path | str, settings: GateSettings | None = None,
              client: docker.DockerClient | None = None) -> GateReport:
    """Every gate on one task folder; never raises for a bad task or a broken engine (KeyboardInterrupt aside)."""
    settings = settings or GateSettings()
    start = time.perf_counter()
    task = TaskDir(Path(task_dir))
    report = GateReport(task=str(task_dir), verdict=GateVerdict.INFRA_FAILED)
    report.checks = run_static_checks(task.root, settings.approved_registries)
    if any(c.verdict is not CheckVerdict.PASS for c in report.checks):
        return _finish(report, start)
    t0 = time.perf_counter()
    try:
        config = TaskToml.from_toml(task.config.read_text(encoding="utf-8"))
        report.checks += _runtime_checks(client or ctr.client_for(settings), task, config, settings, report)
    except Skill2EnvError as e:
        report.checks.append(_error("runtime", e.reason, str(e), time.perf_counter() - t0))
    except (docker.errors.DockerException, OSError) as e:
        report.checks.append(_error("runtime", ReasonCode.DOCKER_UNAVAILABLE, f"{type(e).__name__}: {e}"))
    except Exception as e:  # noqa: BLE001 - a bug must not lose the other tasks' reports
        log.exception("gate crashed on %s", task_dir)
        report.checks.append(_error("runtime", ReasonCode.INTERNAL_ERROR, f"{type(e).__name__}: {e}"))
    return _finish(report, start)


def run_gates(task_dirs: list[Path | str], settings: GateSettings | None = None) -> list[GateReport]:
    """Gate many tasks in parallel (settings.concurrency at a time), reports in input order.

    Ctrl-C kills every live trial container, waits for their removal, and re-raises.
    """
    settings = settings or GateSettings()
    try:
        client = ctr.client_for(settings)
    except InfraError:
        # Static checks still run; each report records the missing engine as could-not-check.
        return [gate_task(d, settings) for d in task_dirs]
    _CANCEL.clear()
    pool = ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="gate")
    futures = [pool.submit(gate_task, d, settings, client) for d in task_dirs]
    try:
        # Wait in short slices: a plain result() would hold off Ctrl-C until the slowest gate finished.
        while not all(f.done() for f in futures):
            wait(futures, timeout=0.2)
        return [f.result() for f in futures]
    except KeyboardInterrupt:
        _CANCEL.set()
        for f in futures:
            f.cancel()
        ctr.kill_all_live(client)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

