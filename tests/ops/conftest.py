"""Components for the operations tests: each is started for real, or the test skips saying why.

On CI (CI=true) or with S2E_REQUIRE_DOCKER=1 a component that cannot be started fails the test instead: a green
run must not hide an operations path that was never exercised.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from skill2env_dagster.artifacts import TASKS

REPO = Path(__file__).resolve().parents[2]
# Run config of a per-skill run that builds one task candidate (the default, 8, builds and gates several): the ops
# tests need a task of the skill's chain being built, not many.
ONE_TASK = {"ops": {TASKS.name: {"config": {"max_variants": 1}}}}


def must_run() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("S2E_REQUIRE_DOCKER") == "1"


def unavailable(message: str) -> None:
    """Skip with the reason, or fail with it where the component is required."""
    if must_run():
        pytest.fail(f"required component unavailable: {message}")
    pytest.skip(message)


def run_script(script: str, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """Run one of our idempotent set-up scripts; returns the last stdout line, or skips/fails with its log."""
    try:
        proc = subprocess.run(["bash", str(REPO / script)], env={**os.environ, **(env or {})}, cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        unavailable(f"{script} did not finish within {timeout}s")
    if proc.returncode != 0:
        unavailable(f"{script} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else ""


@pytest.fixture(scope="session")
def docker_engine() -> None:
    if not shutil.which("docker"):
        unavailable("no docker client on PATH (run scripts/docker-up.sh)")
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0:
        run_script("scripts/docker-up.sh", timeout=180)


@pytest.fixture(scope="session")
def chromium() -> str:
    path = os.environ.get("S2E_CHROMIUM", "/usr/bin/chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        run_script("scripts/browser-up.sh", timeout=600)
    if not Path(path).exists():
        run_script("scripts/browser-up.sh", timeout=600)
    return path
