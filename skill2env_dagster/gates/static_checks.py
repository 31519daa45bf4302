"""Static checks on a task folder: each a named check with a tri-state verdict, run before any container.

A check that cannot run (a crash, a missing tool) is `error`, never `pass`. Checks are independent: one failing
does not hide the others, so a report lists every defect of a task at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from skill2env_dagster.gates.dockerfile import (
    DEFAULT_APPROVED,
    copy_problems,
    external_bases,
    from_lines,
    from_problems,
)
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.reap import strip_guard
from skill2env_dagster.gates.rubric import rubric_problems
from skill2env_dagster.gates.services import load_services
from skill2env_dagster.models.gate import CheckResult, CheckVerdict
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InputError, ReasonCode

MAX_TASK_BYTES = 128 * 1024 * 1024
MAX_ENV_BYTES = 100 * 1024 * 1024
# A line this long copied from tests/ or solution/ into what the agent sees is a leak, not a coincidence.
LEAK_MIN_LINE = 40
REWARD_NAMES = {"reward.txt", "reward.json"}

Problems = list[str]


def _walk(root: Path) -> list[Path]:
    """Every entry under root without following symlinked folders."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        out += [base / d for d in dirnames] + [base / f for f in filenames]
    return sorted(out)


def check_layout(task: TaskDir, _: TaskToml | None) -> Problems:
    problems = [f"{p.relative_to(task.root)} missing or not a regular file" for p in task.required_files()
                if p.is_symlink() or not p.is_file()]
    if (task.root / "rubric.md").exists():
        problems.append("rubric.md at the task root (it belongs in tests/)")
    problems += [f"{p.relative_to(task.root)}: reward files may not ship with a task"
                 for p in _walk(task.root) if p.name in REWARD_NAMES]
    return problems


def check_symlinks(task: TaskDir, _: TaskToml | None) -> Problems:
    problems = []
    for p in _walk(task.root):
        if not p.is_symlink():
            continue
        rel = p.relative_to(task.root)
        top = task.root / rel.parts[0]
        target = p.resolve()
        if len(rel.parts) == 1 or not (target == top.resolve() or target.is_relative_to(top.resolve())):
            problems.append(f"{rel} -> {os.readlink(p)} escapes {rel.parts[0]}/")
        elif not target.exists():
            problems.append(f"{rel} -> {os.readlink(p)} is dangling")
    return problems


def check_bash_syntax(task: TaskDir, _: TaskToml | None) -> Problems:
    bash = shutil.which("bash")
    if bash is None:
        raise RuntimeError("bash not found on this machine")
    problems = []
    for script in [task.test_script, task.solve_script, task.wrong_script, *task.cheat_scripts()]:
        if not script.is_file():
            continue
        rel = script.relative_to(task.root)
        first = script.read_bytes()[:200].split(b"\n", 1)[0]
        if not first.startswith(b"#!"):
            problems.append(f"{rel}: no shebang (scripts are executed directly)")
            continue
        if b"sh" not in first.rsplit(b"/", 1)[-1]:
            continue  # another interpreter: bash -n does not apply
        done = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            problems.append(f"{rel}: {done.stderr.strip()[:500]}")
    return problems


def check_dockerfile_from(task: TaskDir, config: TaskToml | None, approved: tuple[str, ...]) -> Problems:
    """A digest-pinned FROM from an approved registry satisfies the policy on its own (Harbor defines no pin
    record); pins that *are* recorded in [metadata] base_image_pins must match the FROM lines exactly."""
    text = task.dockerfile.read_text()
    problems = from_problems(text, approved)
    if problems or config is None or "base_image_pins" not in config.metadata:
        return problems
    pins = config.metadata["base_image_pins"]
    if not isinstance(pins, dict) or not all(isinstance(v, str) for v in pins.values()):
        return ["[metadata] base_image_pins must map image references to sha256 digests"]
    recorded = set(pins.values())
    used = {f.image.split("@", 1)[1] for f in external_bases(from_lines(text))}
    problems += [f"{d} is in a FROM line but not recorded in [metadata] base_image_pins"
                 for d in sorted(used - recorded)]
    problems += [f"{d} is recorded in [metadata] base_image_pins but no FROM line uses it"
                 for d in sorted(recorded - used)]
    return problems


def pins_warning(task: TaskDir, config: TaskToml | None) -> str:
    """Evidence for a task without recorded pins (a warning, never a failure): our own tasks record them."""
    if config is None or "base_image_pins" in config.metadata:
        return ""
    return "warning: no [metadata] base_image_pins recorded (`skill2env gate --pin` writes them)"


def check_dockerfile_copy(task: TaskDir, _: TaskToml | None) -> Problems:
    return copy_problems(task.dockerfile.read_text())


def _secret_lines(task: TaskDir) -> dict[bytes, str]:
    """Long lines of tests/ and solution/ files, mapped to where they come from."""
    lines: dict[bytes, str] = {}
    for top in [task.tests_dir, task.solution_dir]:
        for p in _walk(top):
            # Cheats may echo what the agent sees (the shipped sample's expected output): that is their point.
            if p.is_file() and not p.is_symlink() and p != task.rubric and not p.is_relative_to(task.cheats_dir):
                data = p.read_bytes()
                if p == task.test_script:  # the harness's guard is not the task's own text
                    data = strip_guard(data.decode(errors="surrogateescape")).encode(errors="surrogateescape")
                for line in data.splitlines():
                    if len(line.strip()) >= LEAK_MIN_LINE:
                        lines.setdefault(line.strip(), str(p.relative_to(task.root)))
    return lines


def check_no_leak(task: TaskDir, _: TaskToml | None) -> Problems:
    secrets = _secret_lines(task)
    seen = [task.instruction] + [p for p in _walk(task.environment_dir) if p.is_file() and not p.is_symlink()]
    problems = []
    for p in seen:
        data = p.read_bytes()
        for line, origin in secrets.items():
            if line in data:
                problems.append(f"{p.relative_to(task.root)} contains a line of {origin}: {line[:60]!r}")
                break
    return problems


def check_services(task: TaskDir, _: TaskToml | None) -> Problems:
    """environment/docker-compose.yaml, when present, stays within the subset the runner starts (services.py)."""
    try:
        load_services(task.environment_dir)
    except InputError as e:
        return [str(e)]
    return []


def _size(root: Path) -> int:
    return sum(p.lstat().st_size for p in _walk(root) if not p.is_dir() or p.is_symlink())


def check_size(task: TaskDir, _: TaskToml | None) -> Problems:
    problems = []
    if (total := _size(task.root)) > MAX_TASK_BYTES:
        problems.append(f"task is {total} bytes (limit {MAX_TASK_BYTES})")
    if (env := _size(task.environment_dir)) > MAX_ENV_BYTES:
        problems.append(f"environment/ is {env} bytes (limit {MAX_ENV_BYTES})")
    return problems


def check_rubric(task: TaskDir, _: TaskToml | None) -> Problems:
    return rubric_problems(task.rubric.read_text(encoding="utf-8"))


def check_freeze(task: TaskDir, config: TaskToml | None) -> Problems:
    recorded = config.metadata.get("freeze_hash") if config else None
    actual = compute_freeze_hash(task.root)
    return [] if recorded == actual else [f"freeze_hash {recorded} recorded, {actual} now"]


def provenance_marks(skill_id: str, bundle_digest: str) -> list[str]:
    """What may appear only in task.toml: the bundle digest, and the skill's id when it is a namespaced one
    (`source__path/to/skill`). A bare id is the skill folder's name, often a plain word ("reconciliation"), which
    a task about that very job must be free to use."""
    id_marks = [skill_id] if skill_id and ("__" in skill_id or "/" in skill_id) else []
    return [m for m in (*id_marks, bundle_digest) if m]


def check_source_reference(task: TaskDir, config: TaskToml | None) -> Problems:
    """The source skill's id or digest may appear only in task.toml (else it leaks the answer's origin)."""
    meta = config.metadata if config else {}
    marks = [m.encode() for m in provenance_marks(str(meta.get("source_skill") or ""),
                                                   str(meta.get("source_bundle_digest") or ""))]
    problems = []
    for p in _walk(task.root):
        if p.is_file() and not p.is_symlink() and p != task.config:
            data = p.read_bytes()
            problems += [f"{p.relative_to(task.root)} mentions {m.decode()!r}" for m in marks if m in data]
    return problems


def _cites(source: str, wanted: str) -> bool:
    """A blueprint source (file:line) cites a workflow source: the same line, or (a workflow that names only a
    file) a line of that file."""
    return source == wanted or (":" not in wanted and source.rsplit(":", 1)[0] == wanted)


def check_workflow_exercised(task: TaskDir, config: TaskToml | None) -> Problems:
    """The workflow a task is filed under is the one it exercises: a rule it grades comes from the skill lines (or
    files) the workflow was planned on. A task that names one workflow and grades another's rules misleads every
    reader of the corpus (the task promises "the Sub-Skill Routing procedure" and ships a lookup table)."""
    meta = config.metadata if config else {}
    wanted = [str(w) for w in meta.get("workflow_sources") or []]
    graded = [str(g) for g in meta.get("blueprint_sources") or []]
    if not any(_cites(g, w) for g in graded for w in wanted):
        return [f"workflow {meta.get('workflow')!r} is planned on {', '.join(wanted)}, but the task grades rules "
                f"from {', '.join(graded) or 'nowhere'}"]
    return []


def _run(name: str, reason: ReasonCode, fn: Callable[[], Problems]) -> CheckResult:
    start = time.perf_counter()
    try:
        problems = fn()
        verdict = CheckVerdict.FAIL if problems else CheckVerdict.PASS
        evidence = "; ".join(problems)[:4000]
    except (OSError, UnicodeDecodeError, ValueError, RuntimeError, subprocess.SubprocessError) as e:
        verdict, evidence, reason = CheckVerdict.ERROR, f"could not check: {type(e).__name__}: {e}", reason
    return CheckResult(
        name=name,
        verdict=verdict,
        reason=None if verdict is CheckVerdict.PASS else reason,
        evidence=evidence,
        seconds=round(time.perf_counter() - start, 4),
    )


def _load_config(task: TaskDir) -> tuple[TaskToml | None, Problems]:
    try:
        return TaskToml.from_toml(task.config.read_text(encoding="utf-8")), []
    except ValidationError as e:
        return None, [f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()]
    except ValueError as e:  # tomllib.TOMLDecodeError and bad UTF-8
        return None, [f"not valid TOML: {e}"]


def run_static_checks(
    task_dir: Path | str, approved_registries: tuple[str, ...] | list[str] = DEFAULT_APPROVED
) -> list[CheckResult]:
    """All static checks on one task folder, in a fixed order; `error` where a check could not run."""
    task = TaskDir(Path(task_dir))
    if not task.root.is_dir():
        return [CheckResult(name="layout", verdict=CheckVerdict.FAIL, reason=ReasonCode.STATIC_VALIDATION_FAILED,
                            evidence=f"{task.root} is not a folder")]
    config, toml_problems = (None, ["task.toml missing"]) if not task.config.is_file() else _load_config(task)
    approved = tuple(approved_registries)
    svf = ReasonCode.STATIC_VALIDATION_FAILED
    plan: list[tuple[str, ReasonCode, Callable[[], Problems]]] = [
        ("layout", svf, lambda: check_layout(task, config)),
        ("symlinks", svf, lambda: check_symlinks(task, config)),
        ("bash_syntax", svf, lambda: check_bash_syntax(task, config)),
        ("task_toml", svf, lambda: toml_problems),
        ("dockerfile_from", ReasonCode.BASE_IMAGE_POLICY, lambda: check_dockerfile_from(task, config, approved)),
        ("dockerfile_copy", svf, lambda: check_dockerfile_copy(task, config)),
        ("services", svf, lambda: check_services(task, config)),
        ("no_leak", ReasonCode.CONTAMINATED, lambda: check_no_leak(task, config)),
        ("size_limits", ReasonCode.TASK_TOO_LARGE, lambda: check_size(task, config)),
        ("rubric", svf, lambda: check_rubric(task, config)),
    ]
    if config and config.metadata.get("freeze_hash"):
        plan.append(("freeze_hash", ReasonCode.GRADING_MODIFIED, lambda: check_freeze(task, config)))
    if config and (config.metadata.get("source_skill") or config.metadata.get("source_bundle_digest")):
        plan.append(("no_source_reference", ReasonCode.CONTAMINATED, lambda: check_source_reference(task, config)))
    if config and config.metadata.get("workflow_sources"):
        plan.append(("workflow_exercised", ReasonCode.WORKFLOW_MISMATCH,
                     lambda: check_workflow_exercised(task, config)))
    results = [_run(name, reason, fn) for name, reason, fn in plan]
    warning = pins_warning(task, config)
    for i, r in enumerate(results):
        if r.name == "dockerfile_from" and r.ok and warning:
            results[i] = r.model_copy(update={"evidence": warning})
    return results
