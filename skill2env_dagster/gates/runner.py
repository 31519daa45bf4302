"""Gate a task: static checks, build, then the runtime stages, each in hardened sandboxes (sandbox.py).

Runtime stages, in order: the Oracle (must score 1 on every metric), the no-op (must score 0), solution/wrong.sh
(below 1 somewhere), mutation testing of the verifier on the Oracle's final state with the skill-blind baseline
battery in its batch (robustness.py, blind.py: below 0.5 on every metric), the
creator-authored cheats (each at most the shortcut threshold) and the tamper kit (tamper_kit.py). Runs that start
from the image (no-op, wrong.sh, cheats, forge attacks) share one container reset to the image between them;
wrong.sh and the cheats run there in one exec when the batch can be trusted (script_batch.py). A wrong.sh or cheat
caught tampering scored 0 (the tamper rule), and its check is judged on its work verified again without the tamper
(untampered.py): a tamper neither fails a task nor hides a verifier that accepts the script's answer. A tampering
Oracle fails as before: a reference solution that tampers is a bug.

The verdict is `retained` only when no check failed or errored; a failed check makes it `rejected` with that
check's reason; a check that could not run (engine down, registry down, a crash) makes it `infra_failed` — never
a pass. A gate during which the engine stopped or restarted is `infra_failed` (docker_unavailable) even when a check
failed: a witness container of ours runs beside the trials, and an engine restart stops it as it stops the trials,
whose deaths would otherwise read as the task's doing. A check that does not apply is `skipped` and says why (e.g.
mutation testing turned off, no output visible to the engine).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import docker
import docker.errors

from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.answer_key import run_probe, work_roots
from skill2env_dagster.gates.changes import Change
from skill2env_dagster.gates.container import ExecResult
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.mutants import mean
from skill2env_dagster.gates.outputs import plan_outputs
from skill2env_dagster.gates.reward import all_full, all_zero
from skill2env_dagster.gates.robustness import MutationInputs, collect_outputs, mutation_stage, service_units
from skill2env_dagster.gates.sandbox import (
    WIPE,
    ImageReader,
    Sandbox,
    TrialStatus,
    VerifyOutcome,
    image_policy,
    remove_image,
)
from skill2env_dagster.gates.script_batch import WORK_FIND, WORK_START, run_scripts
from skill2env_dagster.gates.services import ServiceSpec, load_services
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.gates.static_checks import run_static_checks
from skill2env_dagster.gates.tamper import TamperPolicy
from skill2env_dagster.gates.tamper_kit import kit_check, run_forge, run_plants, run_site_hooks
from skill2env_dagster.gates.untampered import Replay, replay
from skill2env_dagster.models.gate import (
    AttemptKind,
    CheckResult,
    CheckVerdict,
    GateReport,
    GateVerdict,
    ShortcutAttempt,
)
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, CONTAINER_TESTS, TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InfraError, InputError, ReasonCode, Skill2EnvError

log = logging.getLogger(__name__)
ENGINE_CHECK = "engine"  # the check recorded when the gate's witness container did not survive it


def _check(name: str, ok: bool, reason: ReasonCode, evidence: str, seconds: float) -> CheckResult:
    verdict = CheckVerdict.PASS if ok else CheckVerdict.FAIL
    return CheckResult(name=name, verdict=verdict, reason=None if ok else reason, evidence=evidence[:4000],
                       seconds=round(seconds, 4))


def _error(name: str, reason: ReasonCode, evidence: str, seconds: float = 0.0) -> CheckResult:
    return CheckResult(name=name, verdict=CheckVerdict.ERROR, reason=reason, evidence=evidence[:4000],
                       seconds=round(seconds, 4))


def _skipped(name: str, why: str) -> CheckResult:
    return CheckResult(name=name, verdict=CheckVerdict.SKIPPED, evidence=why)


def _timeouts(config: TaskToml, settings: GateSettings) -> tuple[float, float]:
    cap = settings.timeout_cap_sec or float("inf")
    return min(config.agent.timeout_sec, cap), min(config.verifier.timeout_sec, cap)


def _raise_if_cancelled() -> None:
    if ctr.CANCEL.is_set():
        raise InfraError(ReasonCode.CANCELLED, "gates cancelled")


# --- judging one trial -------------------------------------------------------------------------------------------


def _judge(name: str, o: VerifyOutcome, rule: Callable[[dict[str, float]], bool], fail: ReasonCode,
           timeout_reason: ReasonCode, timeouts: tuple[float, float]) -> CheckResult:
    """The common shape of the Oracle, no-op and wrong.sh checks: a rule on the metrics, or why there are none."""
    if o.status is TrialStatus.SOLUTION_TIMEOUT:
        return _check(name, False, timeout_reason, f"the solution ran past {timeouts[0]}s", o.seconds)
    if o.status is TrialStatus.VERIFIER_TIMEOUT:
        return _check(name, False, ReasonCode.VERIFIER_TIMEOUT, f"test.sh ran past {timeouts[1]}s", o.seconds)
    if o.status is TrialStatus.REWARD_UNUSABLE and o.reward.reason is not None:
        return _check(name, False, o.reward.reason, o.reward.problem, o.seconds)
    if o.status is not TrialStatus.OK:
        return _check(name, False, fail, o.describe(), o.seconds)
    return _check(name, rule(o.metrics), fail, f"metrics {o.metrics}", o.seconds)


def _image_clean(preexisting: list[str]) -> CheckResult:
    leaked = sorted({p for p in preexisting if p in (CONTAINER_TESTS, CONTAINER_SOLUTION)})
    return _check("image_clean", not leaked, ReasonCode.IMAGE_LEAKS_GRADING,
                  f"image already contains {leaked}" if leaked else "no /tests or /solution in the image", 0.0)


# --- the stages ------------------------------------------------------------------------------------------------


@dataclass
class _Gate:
    """One task's runtime gates; `open_box(image)` gives a fresh sandbox with the task's policy."""

    client: docker.DockerClient
    task: TaskDir
    config: TaskToml
    settings: GateSettings
    report: GateReport
    image: str = ""
    policy: TamperPolicy | None = None
    services: list[ServiceSpec] = field(default_factory=list)  # the task's stand-in services, on its image
    checks: list[CheckResult] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)
    reuse: bool = True  # runs from the image share the no-op's container while its resets verify
    cheats_check: CheckResult = field(default_factory=lambda: _skipped("cheats", "not reached"))
    kit_check: CheckResult = field(default_factory=lambda: _skipped("tamper_kit", "not reached"))
    oracle_state: str = ""  # the committed image of the Oracle's final state (mutation testing's snapshot)
    oracle: VerifyOutcome | None = None  # the Oracle's trial (its changes tell a script batch what to reset)
    batched: dict[str, VerifyOutcome] = field(default_factory=dict)  # wrong.sh and cheats run in one exec
    batch_note: str = ""
    forge: ShortcutAttempt | None = None  # the tamper kit's forge attack, run right after the no-op
    forge_seconds: float = 0.0
    replays: dict[str, Replay] = field(default_factory=dict)  # wrong.sh or cheats caught tampering (untampered.py)

    def open_box(self, image: str) -> Sandbox:
        _raise_if_cancelled()
        return Sandbox(self.client, image, self.settings, self.config, self.task.tests_dir, self.policy, self.services)

    @property
    def timeouts(self) -> tuple[float, float]:
        return _timeouts(self.config, self.settings)

    def solve(self, script: str) -> VerifyOutcome:
        """A fresh sandbox: run solution/<script> like Harbor's Oracle, then the verify step."""
        with self.open_box(self.image) as sb:
            res, work = self._run_script(sb, script)
            if res.timed_out:
                return VerifyOutcome(TrialStatus.SOLUTION_TIMEOUT, seconds=res.seconds)
            _raise_if_cancelled()
            return replace(self._verify(sb, script), work=work)

    def _run_script(self, sb: Sandbox, script: str) -> tuple[ExecResult, tuple[str, ...] | None]:
        """wrong.sh or a cheat from the image's state, and its work (script_batch.WORK_FIND), as the batch does."""
        sb.trial.sh(WORK_START, 10)
        res = sb.run_solution(self.task.solution_dir, script, self.timeouts[0])
        if res.timed_out or res.died:
            return res, None
        return res, tuple(sb.trial.sh(WORK_FIND, 60).output.decode(errors="replace").split())

    def _verify(self, sb: Sandbox, script: str) -> VerifyOutcome:
        """The verify step after wrong.sh or a cheat; a run caught tampering (reward 0) has its work verified
        again without the tamper, in a fresh container, while `sb` still holds it (untampered.py)."""
        outcome = sb.verify()
        if outcome.status is TrialStatus.TAMPER_DETECTED:
            _raise_if_cancelled()
            self.replays[script] = replay(sb, outcome, partial(self.open_box, self.image))
        return outcome

    def run(self) -> None:
        start = time.perf_counter()
        try:
            self.image, built = build_image(self.client, self.task.environment_dir, self.settings.build_network,
                                            self.config.environment.build_timeout_sec)
        except InputError as e:
            self.checks.append(_check("build", False, e.reason, str(e), time.perf_counter() - start))
            return
        self.report.image = self.image
        self.checks.append(_check("build", True, ReasonCode.BUILD_FAILED,
                                  f"{self.image} ({'built' if built else 'cached'})", time.perf_counter() - start))
        self.policy = image_policy(self.client, self.image, self.config)
        self.services = load_services(self.task.environment_dir, self.image)
        try:
            with ctr.Witness(self.client, self.image, self.settings) as witness:
                try:
                    self._stages()
                finally:
                    if not witness.intact():
                        self.checks.append(_error(
                            ENGINE_CHECK, ReasonCode.DOCKER_UNAVAILABLE, "the engine stopped or restarted during the "
                            "gate (its witness container was stopped): what died or failed since is no verdict"))
        finally:
            for snap in self.snapshots:
                remove_image(self.client, snap)

    def _stages(self) -> None:
        mutants, baselines = self._oracle()
        oracle_ok = all(c.verdict is CheckVerdict.PASS for c in self.checks if c.name == "oracle")
        self._pristine(oracle_ok)
        self.checks.append(mutants or _skipped("mutants", "the Oracle did not pass"))
        self.checks.append(baselines or _skipped("blind_baselines", "the Oracle did not pass"))
        self.checks.append(self.cheats_check)
        self.checks.append(self.kit_check)
        self.checks.append(self._answer_key(oracle_ok))

    def _oracle(self) -> tuple[CheckResult | None, CheckResult | None]:
        """The Oracle, then (in the same container) mutation testing and the skill-blind baselines; returns the
        `mutants` and `blind_baselines` checks."""
        mutation = baselines = None
        with self.open_box(self.image) as sb:
            self.checks.append(_image_clean(sb.preexisting))
            res = sb.run_solution(self.task.solution_dir, "solve.sh", self.timeouts[0])
            inputs = None
            if res.timed_out:
                oracle = VerifyOutcome(TrialStatus.SOLUTION_TIMEOUT, seconds=res.seconds)
            else:
                _raise_if_cancelled()
                inputs = self._capture(sb) if self.settings.mutation_testing else None
                oracle = sb.verify()
            self.oracle, self.report.oracle = oracle, oracle.metrics
            check = _judge("oracle", oracle, all_full, ReasonCode.ORACLE_FAILED, ReasonCode.ORACLE_TIMEOUT,
                           self.timeouts)
            self.checks.append(check)
            if not self.settings.mutation_testing:
                self.report.mutation_testing = "off"
                return (_skipped("mutants", "mutation testing turned off"),
                        _skipped("blind_baselines", "mutation testing turned off (the battery runs in its batch)"))
            if check.ok and inputs is not None:
                _raise_if_cancelled()
                inputs.units += service_units(sb.collected)
                inputs.oracle, inputs.oracle_seconds = oracle.metrics, oracle.seconds
                stage = mutation_stage(sb, self.open_box, inputs, self.settings)
                mutation, self.report.mutants, self.report.mutation_testing = stage.mutants, stage.attempts, stage.note
                baselines, self.report.baselines = stage.baselines, stage.baseline_attempts
            else:
                self.report.mutation_testing = "skipped: the Oracle did not pass"
        return mutation, baselines

    def _capture(self, sb: Sandbox) -> MutationInputs | None:
        """After the Oracle's solve: commit its state and read its outputs, before its verifier runs."""
        settled = sb.settle()
        if settled.status is not TrialStatus.OK:
            return None
        snapshot = sb.commit()
        self.snapshots.append(snapshot)
        self.oracle_state = snapshot
        plan = plan_outputs(list(settled.changes), sb.policy, self.settings.max_output_files)
        units, notes, sources = collect_outputs(sb, plan, self.settings)
        return MutationInputs(units, notes, snapshot, {}, 0.0, sources)

    def _pristine(self, oracle_ok: bool) -> None:
        """Every run that starts from the image, in one container reset to the image between runs (a fresh
        container when a reset cannot be verified): the no-op, the tamper kit's forge attacks (a verifier run
        on an unsolved state, which must stay at the no-op's 0), wrong.sh, the cheats and, last because they
        break the container, the kit's plants. A cheat or wrong.sh that passes is confirmed in a fresh container
        before it counts."""
        with self.open_box(self.image) as sb, ImageReader(self.client, self.image, self.settings) as image:
            nop = sb.verify()
            self.report.nop = nop.metrics
            nop_check = _judge("nop", nop, all_zero, ReasonCode.NOP_FAILED, ReasonCode.NOP_FAILED, self.timeouts)
            self.checks.append(nop_check)
            baseline_ok = oracle_ok and nop_check.ok
            forged = self._forge(sb, image, baseline_ok)
            self._batch(sb, image, baseline_ok, forged)
            if self.settings.run_wrong and self.task.wrong_script.is_file():
                wrong = self._from_image(sb, image, "wrong.sh", lambda o: o.status is TrialStatus.OK
                                         and all_full(o.metrics))
                self.report.wrong = wrong.metrics
                judge = partial(_judge, "wrong_solution", rule=lambda m: not all_full(m),
                                fail=ReasonCode.WRONG_SOLUTION_PASSED, timeout_reason=ReasonCode.WRONG_SOLUTION_TIMEOUT,
                                timeouts=self.timeouts)
                self.checks.append(_untampered("wrong.sh", wrong, self.replays.get("wrong.sh"), judge))
            self.cheats_check = self._cheats(sb, image, baseline_ok)
            self.kit_check = self._kit(sb, baseline_ok)

    def _forge(self, sb: Sandbox, image: ImageReader, baseline_ok: bool) -> tuple[Change, ...]:
        """The kit's forge attack from the image's state, right after the no-op: when the engine shows the no-op
        left the disk as the image has it, only the tmpfs mounts are wiped, in the attack's own exec (what a
        reset would do, without its round trips); else after a verified reset, else in a fresh container.
        Returns what the attack changed in `sb`, which the script batch then resets too."""
        if not (self.settings.tamper_kit and baseline_ok):
            return ()
        _raise_if_cancelled()
        start = time.perf_counter()
        changes: tuple[Change, ...] = ()
        if self.reuse and sb.untouched():
            self.forge, changes = run_forge(sb, self.task.tests_dir, WIPE)
        elif self.reuse and sb.reset(image):
            self.forge, changes = run_forge(sb, self.task.tests_dir)
        else:
            with self.open_box(self.image) as fresh:
                self.forge, _ = run_forge(fresh, self.task.tests_dir)
        self.forge_seconds = time.perf_counter() - start
        return changes

    def _batch(self, sb: Sandbox, image: ImageReader, baseline_ok: bool, forged: tuple[Change, ...]) -> None:
        """wrong.sh and the cheats in one exec (script_batch.py), when the Oracle and no-op passed, the container
        resets and the task has no stand-in service; their outcomes then stand in for one run each. The batch
        resets what the forge attack changed as well as the Oracle's paths."""
        scripts = [self._rel(s) for s in self.task.cheat_scripts() if self.settings.run_cheats]
        if self.settings.run_wrong and self.task.wrong_script.is_file():
            scripts.insert(0, self.task.wrong_script.name)
        if not baseline_ok or len(scripts) < 2 or self.services or not self.reuse or self.oracle is None:
            return
        _raise_if_cancelled()
        self.batched, self.batch_note = run_scripts(sb, image, self.task.solution_dir, scripts, self.oracle,
                                                    self.timeouts, forged)

    def _rel(self, script: Path) -> str:
        """A solution script's name as the batch and the report know it (relative to solution/)."""
        return script.relative_to(self.task.solution_dir).as_posix()

    def _from_image(self, sb: Sandbox, image: ImageReader, script: str,
                    suspicious: Callable[[VerifyOutcome], bool]) -> VerifyOutcome:
        """solution/<script> from the image's state: its batched outcome, else in `sb` after a verified reset,
        else in a fresh sandbox. A suspicious outcome (it looks like a pass) is confirmed in a fresh sandbox."""
        _raise_if_cancelled()
        if script in self.batched:
            outcome = self.batched[script]
            return self.solve(script) if suspicious(outcome) else outcome
        if not (self.reuse and sb.reset(image)):
            self.reuse = False
            return self.solve(script)
        res, work = self._run_script(sb, script)
        if res.timed_out:
            self.reuse = False  # the watchdog killed the container
            return VerifyOutcome(TrialStatus.SOLUTION_TIMEOUT, seconds=res.seconds)
        outcome = replace(self._verify(sb, script), work=work)
        return self.solve(script) if suspicious(outcome) else outcome

    def _cheats(self, sb: Sandbox, image: ImageReader, baseline_ok: bool) -> CheckResult:
        scripts = self.task.cheat_scripts()
        if not self.settings.run_cheats:
            return _skipped("cheats", "cheats turned off")
        if not scripts:
            return _skipped("cheats", "no solution/cheats/*.sh")
        if not baseline_ok:
            return _skipped("cheats", "the Oracle or no-op gate failed first")
        start = time.perf_counter()
        threshold = self.settings.shortcut_threshold
        for script in scripts:
            rel = self._rel(script)
            outcome = self._from_image(sb, image, rel, partial(_passes, name=rel, threshold=threshold))
            self.report.cheats.append(_cheat(rel, outcome, threshold, self.replays.get(rel)))
        where = "in the no-op's container, reset between runs" if self.reuse else "in fresh containers"
        where = self.batch_note if self.batched else where + (f"; {self.batch_note}" if self.batch_note else "")
        batched = sum(o.seconds for rel, o in self.batched.items() if rel != self.task.wrong_script.name)
        return CheckResult.over("cheats", self.report.cheats, time.perf_counter() - start + batched,
                                passed=f"{len(scripts)} cheats ({where}), each at most {threshold}",
                                detail=lambda a: a.evidence)

    def _kit(self, sb: Sandbox, baseline_ok: bool) -> CheckResult:
        if not self.settings.tamper_kit:
            return _skipped("tamper_kit", "tamper kit turned off")
        if not baseline_ok:
            return _skipped("tamper_kit", "the Oracle or no-op gate failed first")
        _raise_if_cancelled()
        start = time.perf_counter()
        with self.open_box(self.image) as fresh:
            hooks = run_site_hooks(fresh)
        plants = run_plants(sb, self.task.tests_dir)
        self.report.tamper = [*([self.forge] if self.forge else []), hooks, *plants]
        return kit_check(self.report.tamper, time.perf_counter() - start + self.forge_seconds)

    def _answer_key(self, oracle_ok: bool) -> CheckResult:
        """answer_key.py: the verifier on the Oracle's final state with a probe in every program the solver could
        have written; a probe that read /tests or /solution rejects (answer_key_readable)."""
        if not self.settings.answer_key_probe:
            return _skipped("answer_key", "answer-key probe turned off")
        if not oracle_ok or self.oracle is None:
            return _skipped("answer_key", "the Oracle did not pass")
        _raise_if_cancelled()
        start = time.perf_counter()
        roots = work_roots(self.policy.workdir if self.policy else None, self.oracle.changes, self.policy
                           or TamperPolicy())
        with self.open_box(self.oracle_state or self.image) as sb:
            if not self.oracle_state:  # no snapshot (mutation testing off): the Oracle again, in this container
                res = sb.run_solution(self.task.solution_dir, "solve.sh", self.timeouts[0])
                if res.timed_out:
                    return _skipped("answer_key", f"the Oracle ran past {self.timeouts[0]}s this time")
            attempt = run_probe(sb, roots)
        self.report.tamper.append(attempt)
        if attempt.verdict is CheckVerdict.SKIPPED:
            return _skipped("answer_key", attempt.evidence)
        return CheckResult.over("answer_key", [attempt], time.perf_counter() - start,
                                reason=ReasonCode.ANSWER_KEY_READABLE, passed=attempt.evidence,
                                detail=lambda a: a.evidence)


def _passes(o: VerifyOutcome, name: str, threshold: float) -> bool:
    return _cheat(name, o, threshold).verdict is CheckVerdict.FAIL


def _untampered(script: str, o: VerifyOutcome, rp: Replay | None, judge: Callable[[VerifyOutcome], CheckResult]
                ) -> CheckResult:
    """A script's check: `judge` on its outcome; for a run caught tampering, which scored 0 by the tamper rule,
    `judge` on its work verified again without the tamper (untampered.py), with both in the evidence. Work that
    could not be verified again fails with `tamper_detected`: its 0 shows nothing about the verifier."""
    if o.status is not TrialStatus.TAMPER_DETECTED or rp is None:
        return judge(o)
    scored = f"{script} scored 0 by the tamper rule ({o.describe()})"
    if rp.outcome is None:
        return _check(judge(o).name, False, ReasonCode.TAMPER_DETECTED, f"{scored}; {rp.describe()}", o.seconds)
    again = judge(rp.outcome)
    return again.model_copy(update={"evidence": f"{scored}; {rp.describe()}: {again.evidence}"[:4000],
                                    "seconds": round(o.seconds + again.seconds, 4)})


def _cheat(name: str, o: VerifyOutcome, threshold: float, rp: Replay | None = None) -> ShortcutAttempt:
    """A cheat's attempt: its own score (0 for any run that is not `ok`), judged on its mean, or, for a run caught
    tampering, on the mean of its work verified again without the tamper (see _untampered)."""
    score = mean(o.metrics)
    failed = o.status is TrialStatus.OK and score > threshold + 1e-9
    note = (f"mean {score:.3f} {'>' if failed else '<='} threshold {threshold}" if o.status is TrialStatus.OK
            else f"reward 0 ({o.describe()})")
    reason = ReasonCode.SHORTCUT_PASSED if failed else None
    if o.status is TrialStatus.TAMPER_DETECTED and rp is not None:
        again = mean(rp.outcome.metrics) if rp.outcome is not None else 0.0
        failed = rp.outcome is None or (rp.outcome.status is TrialStatus.OK and again > threshold + 1e-9)
        reason = (ReasonCode.TAMPER_DETECTED if rp.outcome is None else ReasonCode.SHORTCUT_PASSED) if failed else None
        verdict = "" if rp.outcome is None else (f": mean {again:.3f} {'>' if failed else '<='} threshold "
                                                 f"{threshold}" if rp.outcome.status is TrialStatus.OK
                                                 else f": reward 0 ({rp.outcome.describe()})")
        note = f"reward 0 by the tamper rule ({o.describe()}); {rp.describe()}{verdict}"
    return ShortcutAttempt(kind=AttemptKind.CHEAT, name=name, family="cheat",
                           verdict=CheckVerdict.FAIL if failed else CheckVerdict.PASS,
                           reason=reason, status=o.status.value,
                           metrics=o.metrics, mean=round(score, 6), evidence=note[:2000], seconds=round(o.seconds, 4),
                           work=None if o.work is None else list(o.work))


def _finish(report: GateReport, start: float) -> GateReport:
    """rejected on a failed check, unless the engine failed during the gate: a container the engine stopped looks
    like one the task killed, so then nothing that failed is a verdict (infra_failed, retried upstream)."""
    fails = [c for c in report.checks if c.verdict is CheckVerdict.FAIL]
    errors = [c for c in report.checks if c.verdict is CheckVerdict.ERROR]
    engine = [c for c in errors if c.reason is ReasonCode.DOCKER_UNAVAILABLE]
    if engine:
        report.verdict, report.reason = GateVerdict.INFRA_FAILED, ReasonCode.DOCKER_UNAVAILABLE
    elif fails:
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
    if not settings.mutation_testing:
        report.mutation_testing = "off"
    report.checks = run_static_checks(task.root, settings.approved_registries)
    if any(c.verdict not in (CheckVerdict.PASS, CheckVerdict.SKIPPED) for c in report.checks):
        return _finish(report, start)
    t0 = time.perf_counter()
    gate: _Gate | None = None
    error: CheckResult | None = None
    try:
        config = TaskToml.from_toml(task.config.read_text(encoding="utf-8"))
        gate = _Gate(client or ctr.client_for(settings), task, config, settings, report)
        gate.run()
    except Skill2EnvError as e:
        error = _error("runtime", e.reason, str(e), time.perf_counter() - t0)
    except (docker.errors.DockerException, OSError) as e:
        error = _error("runtime", ReasonCode.DOCKER_UNAVAILABLE, f"{type(e).__name__}: {e}")
    except Exception as e:
        log.exception("gate crashed on %s", task_dir)
        error = _error("runtime", ReasonCode.INTERNAL_ERROR, f"{type(e).__name__}: {e}")
    report.checks += (gate.checks if gate else []) + ([error] if error else [])
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
    ctr.CANCEL.clear()
    pool = ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="gate")
    futures = [pool.submit(gate_task, d, settings, client) for d in task_dirs]
    try:
        # Wait in short slices: a plain result() would hold off Ctrl-C until the slowest gate finished.
        while not all(f.done() for f in futures):
            wait(futures, timeout=0.2)
        return [f.result() for f in futures]
    except KeyboardInterrupt:
        for f in futures:
            f.cancel()
        ctr.kill_all_live(client)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
