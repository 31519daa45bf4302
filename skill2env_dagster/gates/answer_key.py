"""The `answer_key` stage: may a program the solver wrote read the grading while the verifier runs it?

A verifier that executes the solver's program (a bot, a script, a CLI the task asks to fix) as root while /tests is
readable can be beaten by that program: it reads /tests/*.json and prints the key (blind review of creator run 3,
task 09: 1.0 on every metric; the tamper kit and the cheats did not see it, since no cheat tried it). This stage
tries it on every task, whatever its verifier: in a container of the Oracle's final state, a probe is planted
into every program the solver could have written, i.e. every Python file, shell script and `#!` script in the
task's working directory and every such file the Oracle added or changed elsewhere outside the verifier's
toolchain; then the verifier runs as for any trial. A probe that runs tries to read every file under /tests and
/solution and, if it can read one, leaves a marker on the tmpfs (/dev/shm, else /tmp) naming its program and what
it read. Any marker rejects the task with `answer_key_readable`. A verifier that runs solver code through
/tests/run_as_solver (gates/solver_run.py) passes: the code runs as a uid that can read neither folder.

What the probe must not break: it is one line (Python: an `exec` of a constant in a namespace of its own; shell: a
subshell with its output discarded, `|| :` for `set -e`), placed after the shebang, the encoding line, the module
docstring and `from __future__` imports; it never raises, prints nothing, and reads at most MAX_PROBE_FILES files
one byte each. The trial's rewards are not judged here (a program that checks its own text may score lower);
only the markers are. Files a probe cannot safely enter (not UTF-8, over MAX_FILE_BYTES, Python that does not
parse before or after) are left alone and counted. Limits: programs in other languages (SQL run by sqlite3, node,
compiled binaries) are not probed, and a verifier that copies the key to a place the solver's code can read is
not seen (the rule stated to the creator forbids both: keep the key out of reach of solver code).
"""

from __future__ import annotations

import ast
import io
import re
import tarfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import docker.errors

from skill2env_dagster.gates.changes import Change, ChangeKind, is_under
from skill2env_dagster.gates.sandbox import Sandbox, TrialStatus, _Chunks
from skill2env_dagster.gates.tamper import TamperPolicy
from skill2env_dagster.models.gate import AttemptKind, CheckVerdict, ShortcutAttempt
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, CONTAINER_TESTS
from skill2env_dagster.reasons import ReasonCode

MAX_PROGRAMS = 300  # files probed at most per task
MAX_FILE_BYTES = 1 << 20
MAX_PROBE_FILES = 400  # files under /tests and /solution a probe tries
MARKER_DIRS = ("/dev/shm", "/tmp")
SCRIPT_SUFFIXES = (".py", ".sh", ".bash")
_SHELLS = ("sh", "bash", "dash")
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]")
_NOT_WORK = ("/tmp", "/logs", "/proc", "/sys", "/dev", CONTAINER_SOLUTION, CONTAINER_TESTS)

_PY_PROBE = """import os
hits = []
for top in ({tests!r}, {solution!r}):
    n = 0
    for d, _, names in os.walk(top):
        for name in names:
            n += 1
            if n > {limit}:
                break
            p = os.path.join(d, name)
            try:
                with open(p, 'rb') as f:
                    f.read(1)
                hits.append(p)
            except OSError:
                pass
if hits:
    for m in {dirs!r}:
        try:
            with open(m + '/s2e-probe-{nonce}-' + str(os.getpid()), 'w') as f:
                f.write({program!r} + '\\n' + '\\n'.join(hits[:20]) + '\\n')
            break
        except OSError:
            pass
"""


def python_probe(nonce: str, program: str) -> str:
    """The one line planted into a Python file: `exec` of the probe in a namespace of its own; never raises."""
    body = _PY_PROBE.format(tests=CONTAINER_TESTS, solution=CONTAINER_SOLUTION, limit=MAX_PROBE_FILES,
                            dirs=MARKER_DIRS, nonce=nonce, program=program)
    body = "try:\n" + "".join(f"    {line}\n" for line in body.splitlines()) + "except BaseException:\n    pass\n"
    return f"exec({body!r}, {{}})  # skill2env answer-key probe\n"


def shell_probe(nonce: str, program: str) -> str:
    """The one line planted into a shell script: a subshell, output discarded, never failing the script."""
    dirs = " ".join(MARKER_DIRS)
    return (f"(s2e_h=$(find {CONTAINER_TESTS} {CONTAINER_SOLUTION} -type f -readable 2>/dev/null | head -n 20); "
            f"[ -n \"$s2e_h\" ] && for s2e_m in {dirs}; do printf '%s\\n%s\\n' '{program}' \"$s2e_h\" "
            f"> \"$s2e_m/s2e-probe-{nonce}-$$\" && break; done) </dev/null >/dev/null 2>&1 || :"
            "  # skill2env answer-key probe\n")


def _kind(path: str, text: str) -> str | None:
    """'python', 'shell' or None (not a program we probe)."""
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        words = first[2:].split()
        names = [w.rsplit("/", 1)[-1] for w in words[:2]]
        tool = names[1] if names and names[0] == "env" and len(names) > 1 else (names[0] if names else "")
        if tool.startswith("python"):
            return "python"
        if tool in _SHELLS:
            return "shell"
        return None
    if path.endswith(".py"):
        return "python"
    if path.endswith((".sh", ".bash")):
        return "shell"
    return None


def _python_insert_at(text: str) -> int | None:
    """0-based line index before which the probe goes: after the module docstring and `from __future__` imports
    (and the shebang/encoding lines); None when the file does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.split("\n")
    at = 0
    while at < min(2, len(lines)) and (lines[at].startswith("#!") or _CODING.match(lines[at])):
        at += 1
    for i, node in enumerate(tree.body):
        doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (doc or future):
            break
        at = max(at, node.end_lineno or node.lineno)
    return at


def plant(path: str, text: str, nonce: str) -> str | None:
    """`text` with the probe planted, or None when it cannot be planted safely."""
    kind = _kind(path, text)
    if kind == "python":
        at = _python_insert_at(text)
        if at is None:
            return None
        lines = text.split("\n")
        out = "\n".join(lines[:at]) + ("\n" if at else "") + python_probe(nonce, path) + "\n".join(lines[at:])
        try:
            ast.parse(out)
        except (SyntaxError, ValueError):
            return None
        return out
    if kind == "shell":
        first, nl, rest = text.partition("\n")
        if first.startswith("#!"):
            return first + "\n" + shell_probe(nonce, path) + rest if nl else first + "\n" + shell_probe(nonce, path)
        return shell_probe(nonce, path) + text
    return None


@dataclass
class Planted:
    tar: bytes = b""
    programs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # programs that could not be probed safely


def _members(sb: Sandbox, root: str) -> Iterator[tuple[tarfile.TarInfo, bytes, str]]:
    """(info, content, absolute path) of each regular file at or below `root`, read through the engine."""
    try:
        stream, _ = sb.trial.box.get_archive(root)
    except docker.errors.NotFound:
        return
    parent = str(PurePosixPath(root).parent).rstrip("/")
    with tarfile.open(fileobj=_Chunks(stream), mode="r|") as tar:
        for info in tar:
            if info.isfile() and info.size <= MAX_FILE_BYTES:
                f = tar.extractfile(info)
                yield info, f.read() if f else b"", f"{parent}/{info.name}"


def work_roots(workdir: str | None, oracle_changes: Sequence[Change], policy: TamperPolicy) -> list[str]:
    """Where the solver's programs can be: the working directory (unless it is /) and every file or folder the
    Oracle added or changed outside the toolchain and our own mounts."""
    roots = [workdir] if workdir and workdir != "/" else []
    for c in oracle_changes:
        if c.kind is ChangeKind.DELETED or policy.rule(c.path) or any(is_under(c.path, n) for n in _NOT_WORK):
            continue
        if not any(is_under(c.path, r) for r in roots):
            roots.append(c.path)
    return roots


def plant_all(sb: Sandbox, roots: Sequence[str], nonce: str) -> Planted:
    """Read every candidate program under `roots`, plant the probe; the tar (rooted at /) holds the probed files
    with their owner and mode kept."""
    out = Planted()
    buf = io.BytesIO()
    seen: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for root in roots:
            for info, data, path in _members(sb, root):
                if path in seen or len(out.programs) >= MAX_PROGRAMS or sb.policy.rule(path):
                    continue
                seen.add(path)
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if _kind(path, text) is None:
                    continue
                probed = plant(path, text, nonce)
                if probed is None:
                    out.skipped.append(path)
                    continue
                blob = probed.encode("utf-8")
                info.name, info.size = path.lstrip("/"), len(blob)
                tar.addfile(info, io.BytesIO(blob))
                out.programs.append(path)
    out.tar = buf.getvalue() if out.programs else b""
    return out


def _markers(sb: Sandbox, nonce: str) -> str:
    pattern = " ".join(f"{d}/s2e-probe-{nonce}-*" for d in MARKER_DIRS)
    res = sb.trial.sh(f"for f in {pattern}; do [ -f \"$f\" ] && cat \"$f\" && echo; done; echo s2e-end", 20)
    return res.output.decode(errors="replace").rsplit("s2e-end", 1)[0].strip()


def _attempt(verdict: CheckVerdict, status: str, evidence: str, seconds: float,
             metrics: dict[str, float] | None = None) -> ShortcutAttempt:
    return ShortcutAttempt(kind=AttemptKind.TAMPER, name="answer_key", family="answer_key", verdict=verdict,
                           reason=ReasonCode.ANSWER_KEY_READABLE if verdict is CheckVerdict.FAIL else None,
                           status=status, metrics=metrics or {}, evidence=evidence[:2000], seconds=round(seconds, 4))


def run_probe(sb: Sandbox, roots: Sequence[str]) -> ShortcutAttempt:
    """In `sb` (the Oracle's final state, nothing run yet): plant, verify, read the markers."""
    start = time.perf_counter()
    nonce = uuid.uuid4().hex[:12]
    planted = plant_all(sb, roots, nonce)
    skipped = f"; not probed (would not parse or not safe): {planted.skipped[:10]}" if planted.skipped else ""
    if not planted.programs:
        return _attempt(CheckVerdict.SKIPPED, "not_run", f"no program the solver could have written under {list(roots)}"
                        f" (Python, shell or #! scripts){skipped}", time.perf_counter() - start)
    sb.load(planted.tar)
    outcome = sb.verify()
    found = _markers(sb, nonce) if outcome.status is not TrialStatus.TAMPER_DETECTED else ""
    seconds = time.perf_counter() - start
    probed = f"probe planted into {len(planted.programs)} programs ({', '.join(planted.programs[:8])}"
    probed += ", ...)" if len(planted.programs) > 8 else ")"
    if found:
        blocks = dict.fromkeys(b.strip() for b in found.split("\n\n") if b.strip())  # one per run, deduplicated
        readable = "; ".join(" read ".join(b.split("\n", 1)) for b in blocks)
        return _attempt(CheckVerdict.FAIL, outcome.status.value,
                        f"the verifier ran solver code that could read the grading: {readable.replace(chr(10), ', ')}"
                        f" ({probed}{skipped})", seconds, outcome.metrics)
    return _attempt(CheckVerdict.PASS, outcome.status.value,
                    f"no probe read {CONTAINER_TESTS} or {CONTAINER_SOLUTION} ({probed}{skipped}; verifier: "
                    f"{outcome.describe()})", seconds, outcome.metrics)
