"""Run an offline Design on the host, without Docker: a fast stand-in for the gates' trials (Oracle, no-op,
wrong.sh, each cheat, and output mutants of the Oracle's final state).

The container paths the scripts use (/app, /tests, /logs, /tmp, /solution) are rewritten to folders under a temp
root, the Dockerfile's COPY/RUN lines are replayed there, and each trial starts from a fresh copy of the built
world. Only for shapes whose world is plain files (the stub-service shape needs a server on a fixed port and is
checked in Docker). The host is Debian like the base images (bash, coreutils, python3).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from skill2env_dagster.tasks.shapes.base import Design

_CONTAINER = re.compile(r"(?<![\w.~-])/(app|tests|logs|tmp|solution)(?=[/\s\"'`;),]|$)", re.M)


def rewrite(text: str, root: Path) -> str:
    return _CONTAINER.sub(lambda m: f"{root}/{m.group(1)}", text)


def _bash(script: str, root: Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    path = root / "script.sh"
    path.write_text(rewrite(script, root))
    return subprocess.run(["bash", str(path)], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def build_world(design: Design, root: Path) -> Path:
    """Replay COPY/RUN from the Design's Dockerfile lines into root/world; returns the world folder."""
    env = root / "env"
    for rel, data in design.env_files.items():
        _write(env / rel, rewrite(data, root / "trial") if isinstance(data, str) and rel.startswith("app/bin/")
               else data)
    world = root / "world"
    for d in ("app", "tests", "logs", "tmp", "solution"):
        (world / d).mkdir(parents=True, exist_ok=True)
    for line in design.docker_lines:
        op, _, arg = line.partition(" ")
        if op == "COPY":
            src, dst = arg.split()
            target = Path(rewrite(dst, world))
            if (env / src).is_dir():
                shutil.copytree(env / src, target, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(env / src, target)
        elif op == "RUN":
            done = _bash(arg, world, world)
            assert done.returncode == 0, (line, done.stderr)
    return world


def _fresh(world: Path, root: Path) -> Path:
    box = root / "trial"
    shutil.rmtree(box, ignore_errors=True)
    shutil.copytree(world, box, symlinks=True)
    return box


def verify(design: Design, box: Path) -> dict[str, float]:
    for rel, text in design.tests().items():
        _write(box / "tests" / rel, rewrite(text, box))
    shutil.rmtree(box / "logs" / "verifier", ignore_errors=True)
    _bash(design.tests()["test.sh"], box, box / "app")
    reward = box / "logs" / "verifier" / "reward.json"
    return json.loads(reward.read_text()) if reward.is_file() else {}


def trial(design: Design, world: Path, root: Path, script: str | None,
          mutate: Callable[[Path], None] | None = None) -> dict[str, float]:
    """A fresh copy of the world: optionally run a script (and mutate its outputs), then the verifier."""
    box = _fresh(world, root)
    if script is not None:
        _bash(script, box, box / "app")
    if mutate is not None:
        mutate(box)
    return verify(design, box)


def three_trials(design: Design, root: Path) -> tuple[dict, dict, dict]:
    """(oracle, no-op, wrong.sh) metrics, like the gates' runtime checks."""
    world = build_world(design, root)
    oracle = trial(design, world, root, design.solve)
    nop = trial(design, world, root, None)
    wrong = trial(design, world, root, design.wrong) if design.wrong else {}
    return oracle, nop, wrong


def cheat_trials(design: Design, root: Path) -> dict[str, dict[str, float]]:
    world = build_world(design, root)
    return {name: trial(design, world, root, text) for name, text in design.cheats.items()}


def mean(metrics: dict[str, float]) -> float:
    return sum(metrics.values()) / len(metrics) if metrics else 0.0


# --- output mutants (what the gates' mutation stage does to the Oracle's outputs) ---------------------------------
def _data_lines(path: Path) -> tuple[list[str], list[str]]:
    lines = path.read_text().splitlines()
    return lines[:1], lines[1:]


def _mutants(rng: random.Random) -> dict[str, Callable[[list[str], list[str]], list[str]]]:
    def perturb(line: str) -> str:
        return re.sub(r"\d+", lambda m: str(int(m.group(0)) + 1 + rng.randint(0, 3)), line)

    def swap(body: list[str]) -> list[str]:
        """Exchange one column's values between the first two records that differ in it."""
        rows = [ln.split(",") for ln in body]
        for col in range(max((len(r) for r in rows), default=0) - 1, 0, -1):
            pairs = [(i, j) for i in range(len(rows)) for j in range(i + 1, len(rows))
                     if len(rows[i]) > col and len(rows[j]) > col and rows[i][col] != rows[j][col]]
            if pairs:
                i, j = pairs[0]
                rows[i][col], rows[j][col] = rows[j][col], rows[i][col]
                break
        return [",".join(r) for r in rows]

    return {
        "empty": lambda h, b: [],
        "header_only": lambda h, b: h,
        "first_record": lambda h, b: h + b[:1],
        "drop_half": lambda h, b: h + b[: len(b) // 2],
        "duplicate": lambda h, b: h + b + b,
        "superset_junk": lambda h, b: h + b + [f"J{i},R{i % 3 + 1},{i}" for i in range(len(b) + 3)],
        "perturb_numbers": lambda h, b: h + [perturb(x) for x in b],
        "swap_values": lambda h, b: h + swap(b),
        "same_shape_junk": lambda h, b: h + [",".join(f"x{i}{j}" for j in range(max(1, x.count(",") + 1)))
                                            for i, x in enumerate(b)],
    }


def mutant_trials(design: Design, root: Path, seed: int = 0) -> dict[str, dict[str, float]]:
    """Run the Oracle once per mutant, mutate every line-oriented deliverable, verify. Mutants that leave an
    output unchanged are skipped (a correct program could have produced it)."""
    world = build_world(design, root)
    solved = root / "solved"
    shutil.rmtree(solved, ignore_errors=True)
    box = _fresh(world, root)
    _bash(design.solve, box, box / "app")
    shutil.copytree(box, solved, symlinks=True)  # the Oracle's final state, run once (like the gates' commit)
    out: dict[str, dict[str, float]] = {}
    for name, fn in _mutants(random.Random(seed)).items():
        changed = []

        def mutate(box: Path, fn: Callable = fn, changed: list = changed, name: str = name) -> None:
            for target in design.deliverables:
                path = Path(rewrite(target, box))
                if not path.is_file() or path.suffix not in (".csv", ".tsv", ".txt", ".md", ".log", ""):
                    continue
                if path.read_text().startswith("#!") and name not in ("empty", "same_shape_junk"):
                    continue  # a program: only the mutants that are wrong for any program apply
                head, body = _data_lines(path)
                new = fn(head, body)
                text = "\n".join(new) + ("\n" if new else "")
                if text != path.read_text():
                    changed.append(target)
                path.write_text(text)

        box = root / "trial"
        shutil.rmtree(box, ignore_errors=True)
        shutil.copytree(solved, box, symlinks=True)
        mutate(box)
        metrics = verify(design, box)
        if changed:
            out[name] = metrics
    return out


# --- the skill-blind baseline battery (what the gates' mutation stage runs beside the mutants) --------------------
def baseline_trials(design: Design, root: Path) -> dict[str, dict[str, float]]:
    """Each skill-blind baseline's answer (gates/blind.py), written in the Oracle's format from the world's /app
    inputs, then verified; {baseline name: metrics}."""
    from skill2env_dagster.gates.blind import Source, baselines
    from skill2env_dagster.gates.outputs import OutputFile, OutputUnit

    world = build_world(design, root)
    sources = [Source("/app/" + p.relative_to(world / "app").as_posix(), p.read_text())
               for p in sorted((world / "app").rglob("*")) if p.is_file() and _is_text(p)]
    box = _fresh(world, root)
    _bash(design.solve, box, box / "app")
    units = []
    for target in design.deliverables:
        path = Path(rewrite(target, box))
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out = []
        for f in files:
            container = "/" + f.relative_to(box).as_posix()
            original = world / f.relative_to(box)
            base = original.read_bytes() if original.is_file() else None
            out.append(OutputFile(container, f.read_bytes(), 0o644, base if base != f.read_bytes() else None))
        if out:
            units.append(OutputUnit(target, tuple(out), not path.is_file()))
    solved = root / "solved-blind"
    shutil.rmtree(solved, ignore_errors=True)
    shutil.copytree(box, solved, symlinks=True)
    results: dict[str, dict[str, float]] = {}
    for m in baselines(units, sources):
        trial_box = root / "trial"
        shutil.rmtree(trial_box, ignore_errors=True)
        shutil.copytree(solved, trial_box, symlinks=True)
        for path, data in m.writes:
            _write(Path(rewrite(path, trial_box)), data)
        results[m.name] = verify(design, trial_box)
    return results


def _is_text(path: Path) -> bool:
    try:
        data = path.read_bytes()
        data.decode("utf-8")
        return b"\0" not in data
    except (OSError, UnicodeDecodeError):
        return False
