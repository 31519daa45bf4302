"""Mutation testing of the verifier: run it on guaranteed-wrong variants of the Oracle's final state.

After the Oracle's own verifier run, its container carries on as the mutant workbench: every output is staged
once (the Oracle's version and each mutant's changed files) and one exec runs all mutants in turn. Before each:
leftover processes are reaped, every output is restored from the Oracle's copy and the mutant's changes applied,
/tests is restored, /tmp, /dev/shm and /logs/verifier are emptied; the verifier then runs with the fixed
environment. What the task's stand-in services recorded of the Oracle's work (copied out for the verifier under
/tests/services) is mutated like any output: an emptied report beside an intact service journal is not an empty
answer. An unmutated *control* run closes the batch: when it does not reproduce the Oracle's reward, the batch is
discarded and every mutant runs again in a fresh container started from the Oracle's committed state; when even a
fresh container's control deviates (outputs on tmpfs, a nondeterministic verifier), the stage is `skipped` and says why.

The skill-blind baseline battery (blind.py) runs in the same batch: its answers are written in the Oracle's format
from the image's input files, and it is reported as a check of its own (`blind_baselines`).
"""

from __future__ import annotations

import io
import logging
import shlex
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors

from skill2env_dagster.gates import blind
from skill2env_dagster.gates.container import MAX_READ, tar_dir
from skill2env_dagster.gates.mutants import Family, Mutant, MutantSet, as_good_as, derive, judge, mean
from skill2env_dagster.gates.outputs import OutputFile, OutputPlan, OutputUnit
from skill2env_dagster.gates.reap import REAP
from skill2env_dagster.gates.reward import Reward
from skill2env_dagster.gates.sandbox import SCRATCH, VERIFIER_ENV, ImageReader, Sandbox, TrialStatus, reward_from
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import AttemptKind, CheckResult, CheckVerdict, ShortcutAttempt
from skill2env_dagster.models.task_dir import CONTAINER_TESTS, CONTAINER_VERIFIER_LOGS
from skill2env_dagster.reasons import ReasonCode

log = logging.getLogger(__name__)

STAGE = "/.s2e-mutants"
CONTROL = "control"
MAX_TOTAL_BYTES = 64 << 20  # outputs held in memory (and staged) for one task at most
_MARK = b"\n@@S2E "

# Runs /tests/test.sh as the verifier (output capped into its log, bounded by $TO when set) and prints
# "\n@@S2E <id> <reward file name|-> <bytes>\n<bytes>" for run $id. The verifier's environment is the exec's, plus
# "$S/verifier_env.sh" when the stage has one (a batch whose runs also need another environment).
VERIFY_FRAME = (
    f'  L={CONTAINER_VERIFIER_LOGS}/test-stdout.txt; mkdir -p {CONTAINER_VERIFIER_LOGS}; mkfifo "$L.fifo"\n'
    '  head -c "$CAP" < "$L.fifo" > "$L" 2>/dev/null &\n'
    '  (cd "$WD" 2>/dev/null; [ -f "$S/verifier_env.sh" ] && . "$S/verifier_env.sh"; exec $TO /tests/test.sh)'
    ' > "$L.fifo" 2>&1 < /dev/null\n'
    '  f=-; for c in ' + f'{CONTAINER_VERIFIER_LOGS}/reward.json {CONTAINER_VERIFIER_LOGS}/reward.txt' + '; do\n'
    '    [ -f "$c" ] && { f=$c; break; }; done\n'
    f'  if [ "$f" = - ]; then printf "\\n@@S2E %s - 0\\n" "$id"; else\n'
    f'    n=$(head -c {MAX_READ} "$f" | wc -c); printf "\\n@@S2E %s %s %s\\n" "$id" "${{f##*/}}" "$n"\n'
    f'    head -c {MAX_READ} "$f"; fi\n'
)

# Runs each mutant id given as an argument. Each verifier run is bounded by `timeout` when the image has it (else
# only the exec's watchdog bounds the batch).
_BATCH = (
    'S=' + STAGE + '\nTO=; command -v timeout >/dev/null 2>&1 && TO="timeout -s KILL $LIMIT"\n'
    'for id in "$@"; do\n'
    + REAP +
    '  . "$S/clear.sh"\n'  # one rm: every output root, /tests, /tmp's and /dev/shm's content, /logs/verifier
    '  cp -a "$S/orig/." "$S/$id/." "$S/tests" / 2>/dev/null\n'  # the Oracle's outputs, the mutant's, the tests
    '  [ -f "$S/$id.del.sh" ] && . "$S/$id.del.sh"\n'
    + VERIFY_FRAME +
    'done\n'
)


@dataclass(frozen=True)
class Run:
    """The verifier's reward on one staged state (status says whether it ran at all)."""

    status: TrialStatus
    reward: Reward
    seconds: float = 0.0

    @property
    def metrics(self) -> dict[str, float]:
        return dict(self.reward.metrics) if self.status is TrialStatus.OK else {}


# --- reading the Oracle's outputs ------------------------------------------------------------------------------


def read_sources(image: ImageReader, workdir: str | None) -> tuple[list[blind.Source], str]:
    """The task's input files (the image's working directory), for the skill-blind baselines; a note when there
    is nothing to read."""
    if not workdir or workdir == "/":
        return [], "no working directory to read inputs from"
    archive = image.archive(workdir)
    if archive is None:
        return [], f"{workdir} is not in the image"
    sources = blind.sources_from_tar(archive, ())
    return sources, "" if sources else f"no text input under {workdir}"


def collect_outputs(sb: Sandbox, plan: OutputPlan,
                    settings: GateSettings) -> tuple[list[OutputUnit], list[str], list[blind.Source]]:
    """Read every planned output from the container (before the verifier runs), the image's version of the
    files the Oracle modified (so that destructive mutants touch only what the Oracle wrote) and the image's input
    files (for the skill-blind baselines); notes say what was left out."""
    notes = list(plan.notes)
    with ImageReader(sb.client, sb.image, settings) as image:
        bases = image.files(sorted(plan.modified), settings.max_output_bytes)
        sources, why = read_sources(image, sb.policy.workdir)
        if why:
            notes.append(f"blind baselines: {why}")
    units: list[OutputUnit] = []
    total = files = 0
    for root in plan.roots:
        try:
            entries = sb.read_tree(root, MAX_TOTAL_BYTES - total)
        except docker.errors.NotFound:
            notes.append(f"{root}: vanished before it could be read")
            continue
        unit_files = tuple(OutputFile(p, data, mode, bases.get(p)) for p, (data, mode) in (entries or {}).items()
                           if data is not None)
        if entries is None or files + len(unit_files) > settings.max_output_files:
            notes.append(f"{root}: over the output limits ({settings.max_output_files} files, "
                         f"{MAX_TOTAL_BYTES >> 20} MiB), not mutation-tested")
            continue
        if not unit_files:
            continue
        files, total = files + len(unit_files), total + sum(len(f.data) for f in unit_files)
        dirs = tuple((p, mode) for p, (data, mode) in entries.items() if data is None)
        units.append(OutputUnit(root, unit_files, root in plan.trees, dirs))
    return units, notes, sources


def service_units(collected: dict[str, bytes]) -> list[OutputUnit]:
    """What the task's stand-in services recorded of the Oracle's work (e.g. an API's request journal), as outputs
    at the place the verifier reads them: the service's state is the Oracle's output as much as its files are."""
    return [OutputUnit(f"{CONTAINER_TESTS}/{rel}", (OutputFile(f"{CONTAINER_TESTS}/{rel}", data),))
            for rel, data in sorted(collected.items())]


# --- staging and running -------------------------------------------------------------------------------------


def add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode & 0o7777, int(time.time())
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode & 0o7777, int(time.time())
    tar.addfile(info)


def graft(tar: tarfile.TarFile, archive: bytes, prefix: str) -> None:
    """Every member of `archive` (a tar from tar_dir or from the engine) into `tar`, under `prefix`."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as src:
        for info in src:
            data = src.extractfile(info) if info.isfile() else None
            info.name = f"{prefix}/{info.name}".lstrip("/")
            tar.addfile(info, data)


def _rm(paths: list[str] | tuple[str, ...]) -> str:
    """One `rm -rf` of these paths, each quoted for the shell (paths come from the Oracle's outputs)."""
    return "rm -rf -- " + " ".join(shlex.quote(p) for p in paths)


def stage_tar(units: list[OutputUnit], mutants: list[Mutant], tests_dir: Path) -> bytes:
    """The workbench: the Oracle's outputs, each mutant's changed files and deletions (a sourced `rm`), the
    `clear.sh` run before every verifier run, and the tests."""
    base = STAGE.strip("/")
    modes = {f.path: f.mode for u in units for f in u.files}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for u in units:
            for d, mode in u.dirs:
                _add_dir(tar, f"{base}/orig{d}", mode)
            for f in u.files:
                add_file(tar, f"{base}/orig{f.path}", f.data, f.mode)
        for i, m in enumerate(mutants):
            for path, data in m.writes:
                add_file(tar, f"{base}/m{i}{path}", data, modes.get(path, 0o644))
            if m.deletes:
                add_file(tar, f"{base}/m{i}.del.sh", _rm(m.deletes).encode(), 0o644)
        clear = _rm([u.root for u in units] + ["/tests", CONTAINER_VERIFIER_LOGS]) + f" {SCRATCH}"
        add_file(tar, f"{base}/clear.sh", clear.encode() + b"\n", 0o644)
        graft(tar, tar_dir(tests_dir, "tests"), base)
    return buf.getvalue()


def parse_batch(output: bytes) -> dict[str, Reward]:
    """Rewards by run id from the batch's framed output (an id without a frame did not finish)."""
    found: dict[str, Reward] = {}
    pos = output.find(_MARK)
    while pos >= 0:
        head_end = output.find(b"\n", pos + len(_MARK))
        if head_end < 0:
            break
        words = output[pos + len(_MARK):head_end].decode(errors="replace").split()
        if len(words) != 3 or not words[2].isdigit():
            pos = output.find(_MARK, pos + 1)
            continue
        run_id, name, n = words[0], words[1], int(words[2])
        data = output[head_end + 1:head_end + 1 + n]
        found[run_id] = reward_from(b"" if name == "-" else f"{name}\n".encode() + data)
        pos = output.find(_MARK, head_end + 1 + n)
    return found


def batch_vars(sb: Sandbox, verify_timeout: float) -> dict[str, str]:
    """What VERIFY_FRAME reads: the working directory, the log cap and the verifier's time limit."""
    return {"WD": sb.policy.workdir or "/", "CAP": str(sb.settings.output_cap_bytes),
            "LIMIT": str(int(verify_timeout) + 1)}


def _batch_env(sb: Sandbox, timeout: float) -> dict[str, str]:
    return {**VERIFIER_ENV, **sb.config.verifier.env, **batch_vars(sb, timeout)}


def run_batch(sb: Sandbox, ids: list[str], per_run: float, script: str = _BATCH,
              env: dict[str, str] | None = None) -> dict[str, Run]:
    """Run staged ids in one exec (`script`, the mutants' by default, with `env`, the verifier's by default); a
    run that did not finish (the watchdog) reads as a verifier timeout."""
    return run_batch_output(sb, ids, per_run, script, env)[0]


def run_batch_output(sb: Sandbox, ids: list[str], per_run: float, script: str = _BATCH,
                     env: dict[str, str] | None = None) -> tuple[dict[str, Run], bytes]:
    """run_batch, and the exec's output (for marks a script prints besides the frames)."""
    start = time.perf_counter()
    res = sb.trial.sh(script, per_run * len(ids) + 30, _batch_env(sb, per_run) if env is None else env, tuple(ids))
    rewards = parse_batch(res.output)
    seconds = (time.perf_counter() - start) / max(1, len(ids))
    out = {}
    for i in ids:
        if i in rewards:
            r = rewards[i]
            out[i] = Run(TrialStatus.OK if r.ok else TrialStatus.REWARD_UNUSABLE, r, seconds)
        else:
            out[i] = Run(TrialStatus.CONTAINER_DIED if res.died else TrialStatus.VERIFIER_TIMEOUT, Reward(), seconds)
    return out, res.output


# --- the stage ---------------------------------------------------------------------------------------------------


@dataclass
class MutationInputs:
    """What the Oracle phase leaves for the mutation stage."""

    units: list[OutputUnit]
    notes: list[str]
    snapshot: str | None  # image id of the Oracle's committed state
    oracle: dict[str, float]
    oracle_seconds: float
    sources: list[blind.Source] = field(default_factory=list)  # the image's input files (blind baselines)


OpenSandbox = Callable[[str], Sandbox]


def reproduces(run: Run | None, oracle: dict[str, float]) -> bool:
    return run is not None and as_good_as(run.metrics, oracle) and as_good_as(oracle, run.metrics)


def _runs(sb: Sandbox, open_box: OpenSandbox, inputs: MutationInputs, mutants: list[Mutant],
          per_run: float) -> tuple[dict[str, Run] | None, str]:
    """Runs by id ('m<i>', control), batched in the Oracle's container, else one fresh container each."""
    ids = [f"m{i}" for i in range(len(mutants))] + [CONTROL]
    stage = stage_tar(inputs.units, mutants, sb.tests_dir)
    sb.trial.put_tar(stage)
    runs = run_batch(sb, ids, per_run)
    if reproduces(runs.get(CONTROL), inputs.oracle):
        return runs, "batched in the Oracle's container"
    log.info("mutation control deviates (%s); fresh containers from the committed state", runs.get(CONTROL))
    if inputs.snapshot is None:
        return None, "the control run deviates and there is no committed state"
    fresh: dict[str, Run] = {}
    for i in [CONTROL, *ids[:-1]]:
        with open_box(inputs.snapshot) as box:
            box.trial.put_tar(stage)
            fresh.update(run_batch(box, [i], per_run))
        if i == CONTROL and not reproduces(fresh[CONTROL], inputs.oracle):
            return None, ("the Oracle's reward does not reproduce from its committed filesystem (outputs on tmpfs "
                          "such as /tmp, or a nondeterministic verifier)")
    return fresh, "one fresh container per mutant (the batch control deviated)"


def _attempt(m: Mutant, run: Run, oracle: dict[str, float], threshold: float, ungraded: bool) -> ShortcutAttempt:
    j = judge(m, run.metrics, oracle, threshold, ungraded)
    what = m.description + (f" [{', '.join(p for p, _ in m.writes)[:300]}]" if m.writes else "")
    status = run.status.value + (f" ({run.reward.reason}: {run.reward.problem})" if run.reward.reason else "")
    return ShortcutAttempt(kind=AttemptKind.MUTANT, name=m.label, family=m.family.value,
                           verdict=CheckVerdict.FAIL if j.failed else CheckVerdict.PASS, reason=j.reason,
                           status=status, metrics=run.metrics, mean=round(mean(run.metrics), 6),
                           evidence=f"{what}; {j.note}", seconds=round(run.seconds, 4))


def _judge_groups(mutants: list[Mutant], attempts: list[ShortcutAttempt]) -> None:
    """A group (the swaps of one output) rejects only when every member went unnoticed."""
    groups: dict[str, list[int]] = {}
    for i, m in enumerate(mutants):
        if m.group:
            groups.setdefault(m.group, []).append(i)
    for members in groups.values():
        if any(attempts[i].verdict is not CheckVerdict.FAIL for i in members):
            for i in members:
                if attempts[i].verdict is CheckVerdict.FAIL:
                    attempts[i] = attempts[i].model_copy(update={
                        "verdict": CheckVerdict.PASS, "reason": None,
                        "evidence": attempts[i].evidence + " (information only: another swap of this output "
                                                           "lowered the reward)"})


def _ungraded(mutants: list[Mutant], runs: dict[str, Run], oracle: dict[str, float]) -> set[str]:
    """Units whose emptying alone does not lower the reward: the verifier does not grade them."""
    return {m.unit for i, m in enumerate(mutants) if m.family is Family.RELEVANCE and m.unit
            and as_good_as(runs[f"m{i}"].metrics, oracle)}


def skipped_attempts(ms: MutantSet) -> list[ShortcutAttempt]:
    return [ShortcutAttempt(kind=AttemptKind.MUTANT, name=s.label,
                            family="skipped", verdict=CheckVerdict.SKIPPED, status="not_run", evidence=s.why)
            for s in ms.skipped]


@dataclass
class StageResult:
    """The mutation stage's two checks: `mutants` (the verifier sees wrong outputs) and `blind_baselines` (tools
    that never read the skill earn less than 0.5 on every metric), each with its attempts."""

    mutants: CheckResult
    attempts: list[ShortcutAttempt]
    note: str
    baselines: CheckResult
    baseline_attempts: list[ShortcutAttempt] = field(default_factory=list)


def _baseline_attempt(m: Mutant, run: Run) -> ShortcutAttempt:
    passed, note = blind.judge(run.metrics)
    status = run.status.value + (f" ({run.reward.reason}: {run.reward.problem})" if run.reward.reason else "")
    return ShortcutAttempt(kind=AttemptKind.BASELINE, name=m.label, family=m.family.value,
                           verdict=CheckVerdict.FAIL if passed else CheckVerdict.PASS,
                           reason=ReasonCode.SKILL_BLIND_BASELINE_PASSED if passed else None, status=status,
                           metrics=run.metrics, mean=round(mean(run.metrics), 6),
                           evidence=f"{m.description}; {note}", seconds=round(run.seconds, 4))


def _baselines_check(attempts: list[ShortcutAttempt], why_none: str, seconds: float) -> CheckResult:
    if not attempts:
        return _skip("blind_baselines", why_none, seconds)
    passed = f"{len(attempts)} skill-blind baselines, each below {blind.THRESHOLD} on every metric"
    return CheckResult.over("blind_baselines", attempts, seconds, reason=ReasonCode.SKILL_BLIND_BASELINE_PASSED,
                            passed=passed, detail=lambda a: str(a.metrics))


def mutation_stage(sb: Sandbox, open_box: OpenSandbox, inputs: MutationInputs,
                   settings: GateSettings) -> StageResult:
    """Mutants of the Oracle's outputs and the skill-blind baselines, in one batch."""
    start = time.perf_counter()
    ms = derive(inputs.units, settings.max_output_bytes)
    bs = blind.baselines(inputs.units, inputs.sources, settings.max_output_bytes) if settings.blind_baselines else []
    notes = "; ".join(inputs.notes)
    no_blind = ("turned off" if not settings.blind_baselines else
                "no input a data tool can read or no output it can write" + (f"; {notes}" if notes else ""))
    if not ms.mutants and not bs:
        why = ("no output file visible to the engine (outputs on tmpfs such as /tmp are not mutation-tested)"
               if not inputs.units else "no mutant applies to the outputs")
        why += f"; {notes}" if notes else ""
        return StageResult(_skip("mutants", why, time.perf_counter() - start), skipped_attempts(ms),
                           f"skipped: {why}", _skip("blind_baselines", why))
    cap = min(sb.config.verifier.timeout_sec, settings.timeout_cap_sec or float("inf"))
    per_run = min(cap, max(30.0, 10 * inputs.oracle_seconds))
    every = ms.mutants + bs
    runs, how = _runs(sb, open_box, inputs, every, per_run)
    if runs is None:
        return StageResult(_skip("mutants", how, time.perf_counter() - start), skipped_attempts(ms),
                           f"skipped: {how}", _skip("blind_baselines", how))
    ungraded = _ungraded(ms.mutants, runs, inputs.oracle)
    attempts = [_attempt(m, runs[f"m{i}"], inputs.oracle, settings.shortcut_threshold, m.unit in ungraded)
                for i, m in enumerate(ms.mutants)]
    _judge_groups(ms.mutants, attempts)
    attempts += skipped_attempts(ms)
    base = len(ms.mutants)
    baseline_attempts = [_baseline_attempt(m, runs[f"m{base + i}"]) for i, m in enumerate(bs)]
    units = ", ".join(u.label for u in inputs.units)
    seconds = time.perf_counter() - start
    check = (CheckResult.over("mutants", attempts, seconds, detail=lambda a: f"{a.reason} {a.metrics}",
                              passed="every destructive mutant lowers the reward, no trivial one passes",
                              context=(f"{len(ms.mutants)} mutants of {units} ({how}); ",
                                       f"; notes: {notes}" if notes else "")) if ms.mutants
             else _skip("mutants", "no mutant applies to the outputs", seconds))
    return StageResult(check, attempts, "on", _baselines_check(baseline_attempts, no_blind, 0.0),
                       baseline_attempts)


def _skip(name: str, why: str, seconds: float = 0.0) -> CheckResult:
    return CheckResult(name=name, verdict=CheckVerdict.SKIPPED, evidence=why[:4000], seconds=round(seconds, 4))
