"""Oracle + no-op throughput of our gates vs. the same steps done with bare `docker` CLI commands.

Usage: .venv/bin/python benchmarks/bench_gates.py [--tasks 16] [--concurrency 1 4]
Needs the engine, registry and base images (scripts/docker-up.sh; skill2env base-images). Prints figures only.
Harbor 0.25 itself needs Python >= 3.12 (not on this machine); its measured reference is ~4.5 s per task for
oracle + no-op here, i.e. ~0.44 trials/s.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.runner import run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.gates.container import client_for

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tasks" / "good_minimal"
HARBOR_SECONDS_PER_TASK = 4.5
HARDENING = ["--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pids-limit", "256",
             "--memory", "1024m", "--cpus", "1", "--init", "--tmpfs", "/logs:size=16m", "--tmpfs", "/tmp:size=256m"]


def make_tasks(root: Path, n: int) -> list[Path]:
    tasks = []
    for i in range(n):
        dest = root / f"task{i:02d}"
        shutil.copytree(FIXTURE, dest)
        (dest / "solution" / "wrong.sh").unlink()  # oracle + no-op only, as in the floor and in Harbor
        pin_dockerfile(dest)
        tasks.append(dest)
    return tasks


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout.strip()


def bare_trial(image: str, task: Path, oracle: bool) -> float:
    """create + start + copy in + exec solve + exec test + read reward + remove, with the docker CLI."""
    cid = _docker("create", *HARDENING, "-w", "/app", "--entrypoint", "sleep", image, "infinity")
    try:
        _docker("start", cid)
        _docker("exec", cid, "mkdir", "-p", "/logs/verifier")
        if oracle:
            _docker("cp", str(task / "solution"), f"{cid}:/solution")
            _docker("exec", cid, "bash", "/solution/solve.sh")
        _docker("cp", str(task / "tests"), f"{cid}:/tests")
        _docker("exec", cid, "bash", "/tests/test.sh")
        reward = _docker("exec", cid, "cat", "/logs/verifier/reward.json")
        want = '"correct": 1' if oracle else '"correct": 0'
        assert want in reward, reward
    finally:
        _docker("rm", "-f", cid)
    return 0.0


def bench_floor(image: str, tasks: list[Path], concurrency: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:  # `concurrency` tasks at a time, oracle then no-op, as in ours
        list(pool.map(lambda t: (bare_trial(image, t, True), bare_trial(image, t, False)), tasks))
    return time.perf_counter() - start


def bench_ours(tasks: list[Path], concurrency: int) -> float:
    start = time.perf_counter()
    reports = run_gates(tasks, GateSettings(concurrency=concurrency))
    elapsed = time.perf_counter() - start
    bad = [r for r in reports if r.verdict is not GateVerdict.RETAINED]
    assert not bad, bad[0].model_dump_json(indent=1)
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=16)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gates-") as tmp:
        tasks = make_tasks(Path(tmp), args.tasks)
        image, _ = build_image(client_for(GateSettings()), tasks[0] / "environment")  # warm cache for both
        trials = 2 * len(tasks)
        harbor = 2 / HARBOR_SECONDS_PER_TASK
        print(f"tasks={len(tasks)} trials={trials} (oracle + no-op each); Harbor 0.25 reference {harbor:.2f} trials/s")
        for c in args.concurrency:
            floor = bench_floor(image, tasks, c)
            ours = bench_ours(tasks, c)
            print(
                f"concurrency={c}: ours {trials / ours:.2f} trials/s ({ours:.1f} s, all checks on) | "
                f"bare docker CLI floor {trials / floor:.2f} trials/s ({floor:.1f} s) | "
                f"ours/floor time {ours / floor:.2f}x | speed-up vs Harbor {trials / ours / harbor:.1f}x"
            )


if __name__ == "__main__":
    main()
