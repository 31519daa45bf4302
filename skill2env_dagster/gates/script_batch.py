"""wrong.sh and the creator's cheats in one exec of the no-op's container, instead of one reset container each.

Why: run one at a time, each script costs about 0.75 s of engine round trips (reset to the image, copy the
solution in, run, reap, read the changes, copy the tests in, verify) for 0.1–0.2 s of work; the cheats were the
largest share of a demo task's gate (4–5 of them per task). In one exec each run costs what it does.

Between runs the batch puts the container back to the image's state where the Oracle showed the outputs live
(and where the tamper kit's forge attack, run before the batch, wrote its modules): every top-level path the
Oracle added is removed, every one it modified or deleted is restored from the image's copy, /solution, /tests
and the tmpfs mounts (/tmp, /dev/shm, /logs) are emptied, and leftover processes are reaped (before the run and
again before its verifier). The stage itself is writable by the scripts it runs, so before every verifier run its
digest (every file's sha256, the names of what is not a file and where each symlink points) must still be the one
the host computed; otherwise the batch stops and every script runs one at a time. The script runs like
`run_solution` ([solution].env, working directory, its own time limit), then the verifier like `Sandbox.verify`
([verifier].env, a time limit, the reward read back).

The batch is trusted only when the engine agrees afterwards: nothing changed outside those paths and the stage
(a run that wrote elsewhere, e.g. the toolchain, could have changed the next run's world and would have escaped
its tamper check), every run reported, and a closing control run of the Oracle's solve.sh reproduced the Oracle's
reward. Otherwise every script runs again the old way, and so does a script whose batch score looks like a pass:
nothing is rejected on a batch score alone (the stage is readable by the scripts, so a pass there may be borrowed).
Tasks with stand-in services never batch: their services' state cannot be reset from inside the container.
"""

from __future__ import annotations

import hashlib
import io
import re
import shlex
import tarfile
from collections.abc import Sequence
from pathlib import Path

from skill2env_dagster.gates.changes import Change, engine_changes, is_under, parent_of
from skill2env_dagster.gates.container import tar_dir
from skill2env_dagster.gates.reap import REAP
from skill2env_dagster.gates.robustness import (
    VERIFY_FRAME,
    Run,
    add_file,
    batch_vars,
    graft,
    reproduces,
    run_batch_output,
)
from skill2env_dagster.gates.sandbox import (
    AGENT_ENV,
    VERIFIER_ENV,
    ImageReader,
    RestorePlan,
    Sandbox,
    TrialStatus,
    VerifyOutcome,
    restore_plan,
    wipe_command,
)
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, CONTAINER_TESTS, CONTAINER_VERIFIER_LOGS

STAGE = "/.s2e-scripts"
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # the batch exports the environments with `export NAME=...`
CONTROL = "control"
STAGE_CHANGED = "@@S2E-STAGE-CHANGED"  # printed (and the batch stops) when a run changed the stage
# The stage's digest as the container sees it: `sha256sum` of every regular file, and for everything else that is
# not a folder its name and, for a symlink, its target (a run that points a staged symlink elsewhere changes what
# the next run copies in), sorted bytewise, hashed again (stage_digest computes the same on the host). No
# sha256sum or GNU find in the image, or an odd file name sha256sum escapes, reads as a changed stage: one run at
# a time.
_DIGEST = ('(cd "$S" && find . -type f -exec sha256sum {} + && find . ! -type d ! -type f -printf \'%p -> %l\\n\')'
           ' 2>/dev/null | LC_ALL=C sort | sha256sum')
# A script's work: the non-empty regular files its run left newer than a stamp made just before it, on the
# container's own disk (-xdev: not the tmpfs mounts), outside the solution, the tests and the batch's stage. A cheat
# with none wrote nothing a verifier could grade (an empty or no-op "cheat" tests nothing; creator/session.py).
WORK_STAMP = "/dev/shm/.s2e-work-stamp"
WORK_MARK = "@@S2E-WORK"
WORK_START = f": > {WORK_STAMP}; sleep 0.01 2>/dev/null || :"  # the stamp, then a tick: a later write is newer
WORK_FIND = (f'find / -xdev \\( -path {CONTAINER_SOLUTION} -o -path {CONTAINER_TESTS} -o -path {STAGE} \\) -prune -o '
             f'-type f -newer {WORK_STAMP} -size +0 -print 2>/dev/null | head -n 5 | tr "\\n" " "')
_SCRIPT = (
    'S=' + STAGE + '\nTO=; TS=\n'
    'if command -v timeout >/dev/null 2>&1; then TO="timeout -s KILL $LIMIT"; TS="timeout -s KILL $SLIMIT"; fi\n'
    'for id in "$@"; do\n'
    + REAP +
    '  . "$S/reset.sh"; cp -a "$S/solution" /\n'
    '  read -r run < "$S/$id.run"\n'
    f'  {WORK_START}\n'
    '  (cd "$WD" 2>/dev/null; . "$S/agent_env.sh"; exec $TS "' + CONTAINER_SOLUTION + '/$run")'
    ' >/dev/null 2>&1 </dev/null\n'
    + REAP +
    f'  printf "\\n{WORK_MARK} %s %s\\n" "$id" "$({WORK_FIND})"\n' +
    f'  [ "$( {_DIGEST})" = "$SD  -" ] || {{ printf "\\n{STAGE_CHANGED} %s\\n" "$id"; exit 0; }}\n'
    f'  rm -rf {CONTAINER_SOLUTION} {CONTAINER_VERIFIER_LOGS} {CONTAINER_TESTS}; cp -a "$S/tests" /\n'
    + VERIFY_FRAME +
    'done\n'
)


def _env_file(env: dict[str, str]) -> bytes:
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()).encode()


def stage_tar(sb: Sandbox, restore: RestorePlan, solution_dir: Path, runs: dict[str, str]) -> bytes:
    """The stage: the image's copies of the restored paths, the solution and tests folders, one `<id>.run` per
    run (its script, relative to the solution folder), the environment files and `reset.sh` (each restored path
    is copied back on its own, so that the folders above it keep their mode and times)."""
    base = STAGE.strip("/")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, archive in restore.originals.items():
            graft(tar, archive, f"{base}/orig{parent_of(path).rstrip('/')}")
        graft(tar, tar_dir(solution_dir, CONTAINER_SOLUTION.strip("/")), base)
        graft(tar, sb.tests_tar(CONTAINER_TESTS.strip("/")), base)
        for run_id, script in runs.items():
            add_file(tar, f"{base}/{run_id}.run", script.encode() + b"\n")
        add_file(tar, f"{base}/agent_env.sh", _env_file({**sb.config.solution.env, **AGENT_ENV}))
        add_file(tar, f"{base}/verifier_env.sh", _env_file({**VERIFIER_ENV, **sb.config.verifier.env}))
        wipe = wipe_command([*restore.paths, CONTAINER_SOLUTION, CONTAINER_TESTS])
        copies = "".join(f'cp -a "$S/orig"{shlex.quote(p)} {shlex.quote(parent_of(p))}/\n' for p in restore.originals)
        add_file(tar, f"{base}/reset.sh", f"{wipe}\n{copies}".encode())
    return buf.getvalue()


def stage_digest(stage: bytes) -> str:
    """What _DIGEST prints in the container for an untouched stage (without its trailing "  -")."""
    base = STAGE.strip("/") + "/"
    lines = []
    with tarfile.open(fileobj=io.BytesIO(stage)) as tar:
        for info in tar:
            rel = "./" + info.name.removeprefix(base)
            if info.isfile() or info.islnk():  # a hard link unpacks as one more regular file
                data = tar.extractfile(info)
                lines.append(f"{hashlib.sha256(data.read() if data else b'').hexdigest()}  {rel}".encode())
            elif not info.isdir():
                lines.append(f"{rel} -> {info.linkname if info.issym() else ''}".encode())
    return hashlib.sha256(b"".join(line + b"\n" for line in sorted(lines))).hexdigest()


def _stray(sb: Sandbox, restore: RestorePlan) -> list[str]:
    """Changes the engine sees outside the paths the batch resets and its own stage."""
    allowed = [*restore.paths, STAGE, CONTAINER_SOLUTION, CONTAINER_TESTS]
    changes = engine_changes(sb.trial.box, sb.settings.read_upper_dir)
    return [str(c) for c in changes if not any(is_under(c.path, a) for a in allowed)]


def run_scripts(sb: Sandbox, image: ImageReader, solution_dir: Path, scripts: list[str], oracle: VerifyOutcome,
                timeouts: tuple[float, float], earlier: Sequence[Change] = ()) -> tuple[dict[str, VerifyOutcome], str]:
    """({script: outcome} for every script, or {} when the batch cannot be trusted; why, for the report).
    `earlier`: what runs before the batch changed in `sb` (the forge attack), reset before each run too."""
    names = [*sb.config.solution.env, *sb.config.verifier.env]
    if not all(_SHELL_NAME.fullmatch(k) for k in names):
        return {}, "an environment variable's name is not a shell name: one run at a time"
    restore = restore_plan(sb.policy, image, [*oracle.changes, *earlier])
    if restore is None:
        return {}, ("the Oracle's (or the forge attack's) changes cannot be put back from the image (toolchain, or no "
                    "copy): one run at a time")
    runs = {f"s{i}": s for i, s in enumerate(scripts)} | {CONTROL: "solve.sh"}
    stage = stage_tar(sb, restore, solution_dir, runs)
    sb.trial.put_tar(stage)
    solve, verify = timeouts
    env = {**batch_vars(sb, verify), "SLIMIT": str(int(solve) + 1), "SD": stage_digest(stage)}
    results, output = run_batch_output(sb, list(runs), solve + verify, _SCRIPT, env)
    changed = re.search(rf"\n{STAGE_CHANGED} (\S+)\n".encode(), output)
    if changed:
        at = runs.get(changed.group(1).decode(errors="replace"), "?")
        return {}, f"the batch's stage changed (seen before the verifier of {at}): one run at a time"
    why = _distrust(sb, restore, results, oracle)
    if why:
        return {}, why
    work = parse_work(output)
    return ({runs[i]: _outcome(r, work.get(i)) for i, r in results.items() if i != CONTROL},
            "batched in the no-op's container")


def parse_work(output: bytes) -> dict[str, tuple[str, ...]]:
    """{run id: files of its work} from the batch's WORK_MARK lines."""
    found = re.findall(rf"\n{WORK_MARK} (\S+) ([^\n]*)\n".encode(), output)
    return {i.decode(errors="replace"): tuple(p.decode(errors="replace").split()) for i, p in found}


def _distrust(sb: Sandbox, restore: RestorePlan, results: dict[str, Run], oracle: VerifyOutcome) -> str:
    """Why the batch's scores cannot stand for fresh runs ('' when they can)."""
    if any(r.status in (TrialStatus.VERIFIER_TIMEOUT, TrialStatus.CONTAINER_DIED) for r in results.values()):
        return "a batched run did not finish: one run at a time"
    if not reproduces(results.get(CONTROL), oracle.metrics):
        return "the batch's control run did not reproduce the Oracle: one run at a time"
    stray = _stray(sb, restore)
    if stray:
        return f"a batched run changed {', '.join(stray[:3])}: one run at a time"
    return ""


def _outcome(run: Run, work: tuple[str, ...] | None = None) -> VerifyOutcome:
    return VerifyOutcome(run.status, run.reward, seconds=run.seconds, work=work)
