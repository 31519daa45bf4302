"""Run an offline recipe's Design on the host, without Docker: a fast stand-in for the gates' three trials.

The container paths the scripts use (/app, /tests, /logs, /tmp, /solution) are rewritten to folders under a temp
root, the Dockerfile's COPY/RUN lines are replayed there, and each trial (oracle, no-op, wrong.sh) starts from a
fresh copy of the built world. Only for recipes whose world is plain files (the stub-service recipe needs a
server on a fixed port and is checked at the data level instead). The host is Debian like the base images
(bash, coreutils, mawk, python3), so this is faithful enough to catch fixtures that do not exercise a rule.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from skill2env_dagster.tasks.recipes.base import Design

_CONTAINER = re.compile(r"(?<![\w.~-])/(app|tests|logs|tmp|solution)(?=[/\s\"'`;)]|$)", re.M)


def rewrite(text: str, root: Path) -> str:
    return _CONTAINER.sub(lambda m: f"{root}/{m.group(1)}", text)


def _bash(script: str, root: Path, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    path = root / "script.sh"
    path.write_text(rewrite(script, root))
    return subprocess.run(["bash", str(path)], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def build_world(design: Design, root: Path) -> Path:
    """Replay COPY/RUN from the Design's Dockerfile lines into root/world; returns the world folder."""
    env = root / "env"
    for rel, text in design.env_files.items():
        (env / rel).parent.mkdir(parents=True, exist_ok=True)
        (env / rel).write_text(text)
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


def trial(design: Design, world: Path, root: Path, script: str | None) -> dict[str, float]:
    """One fresh copy of the world: optionally run a solution script, then the verifier; the reward metrics."""
    box = root / "trial"
    shutil.rmtree(box, ignore_errors=True)
    shutil.copytree(world, box, symlinks=True)
    if script is not None:
        _bash(script, box, box / "app")
    for rel, text in design.tests.items():
        (box / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
        (box / "tests" / rel).write_text(rewrite(text, box))
    _bash(design.tests["test.sh"], box, box / "app")
    reward = box / "logs" / "verifier" / "reward.json"
    return json.loads(reward.read_text()) if reward.is_file() else {}


def three_trials(design: Design, root: Path) -> tuple[dict, dict, dict]:
    """(oracle, no-op, wrong.sh) metrics, like the gates' runtime checks."""
    world = build_world(design, root)
    oracle = trial(design, world, root, design.solve)
    nop = trial(design, world, root, None)
    wrong = trial(design, world, root, design.wrong) if design.wrong else {}
    return oracle, nop, wrong
