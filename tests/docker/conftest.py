"""Docker tier: a real engine, the local registry and the base images, or a clear skip (a failure in CI)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
# Label value of every container these tests start (other people's gates may run on the same engine).
RUN_ID = f"pytest-{os.getpid()}"


def _unavailable(msg: str) -> None:
    if os.environ.get("S2E_REQUIRE_DOCKER") == "1":
        pytest.fail(f"S2E_REQUIRE_DOCKER=1 but {msg}", pytrace=False)
    pytest.skip(f"{msg} — run scripts/docker-up.sh (docker tests skipped)")


@pytest.fixture(scope="session")
def docker_client():
    """A pinged engine plus a registry holding the base images (built once if missing, ~2 min)."""
    import docker

    from skill2env_dagster.gates.base_images import ensure_base_images
    from skill2env_dagster.gates.registry import registry_alive
    from skill2env_dagster.reasons import Skill2EnvError

    try:
        client = docker.from_env()
        client.ping()
    except Exception as e:
        _unavailable(f"no Docker engine answers ({e})")
    if not registry_alive():
        _unavailable("no registry at 127.0.0.1:5000")
    try:
        ensure_base_images()
    except Skill2EnvError as e:
        _unavailable(f"base images unavailable ({e})")
    return client


@pytest.fixture
def make_task(tmp_path, docker_client):
    """Copy a good fixture (default good_minimal), lay a defect overlay on top, pin its Dockerfile."""
    from skill2env_dagster.gates.dockerfile import pin_dockerfile
    from skill2env_dagster.gates.solver_run import write_helper

    def _make(overlay: str | None = None, base: str = "good_minimal", name: str | None = None) -> Path:
        dest = tmp_path / (name or overlay or base)
        shutil.copytree(FIXTURES / base, dest)
        if overlay:
            shutil.copytree(FIXTURES / "defects" / overlay, dest, dirs_exist_ok=True)
        write_helper(dest / "tests")  # as the freeze does for every generated task
        pin_dockerfile(dest)
        return dest

    return _make


@pytest.fixture(autouse=True)
def _no_container_left(request):
    """Every docker test ends with no gate container left behind."""
    yield
    if "docker_client" not in request.fixturenames:
        return
    client = request.getfixturevalue("docker_client")
    left = client.containers.list(all=True, filters={"label": f"skill2env.gate={RUN_ID}"})
    assert not left, f"containers left behind: {[c.name for c in left]}"


def interrupt_gates(client, task: Path, run_id: str, copies: int, started: dict, wait: float = 300.0) -> str:
    """Gate `copies` of `task` in a child process, send it Ctrl-C as soon as a container matching the `started`
    filter runs (the engine's own state is the trigger, no delay), and return its stderr (the caller checks what is
    left behind: nothing, whenever the signal lands)."""
    import subprocess
    import sys
    import time

    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from skill2env_dagster.gates.runner import run_gates\n"
        "from skill2env_dagster.gates.settings import GateSettings\n"
        f"run_gates([sys.argv[1]] * {copies}, GateSettings(run_id={run_id!r}))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(task)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + wait
    while not client.containers.list(filters=started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert client.containers.list(filters=started), f"no container matching {started} ever ran"
    proc.send_signal(2)
    return proc.communicate(timeout=60)[1]
