"""Gate throughput: (1) the full gate against its Oracle + no-op part alone; (2) Oracle + no-op against bare
`docker` CLI commands doing the same steps.

Usage: .venv/bin/python benchmarks/bench_gates.py [--tasks 20] [--concurrency 2] [--tasks-dir DIR] [--no-floor]
       [--rounds N]
Needs the engine, registry and base images (scripts/docker-up.sh; skill2env base-images). Prints figures only.

(1) runs the same tasks twice at the same concurrency: once with every stage (static, Oracle, no-op, wrong.sh,
mutation testing, cheats, tamper kit) and once with only static + Oracle + no-op, and prints the ratio (the target
is <= 2x at concurrency 2). The default task mix cycles through the good gate fixtures (a count, a JSON map, a CSV
summary, a script graded on hidden inputs with two cheats, a produced directory tree); `--tasks-dir` gates every
task folder in DIR instead (e.g. a demo run's DIR/tasks).
Harbor 0.25 itself needs Python >= 3.12; its measured reference is ~4.5 s per task for Oracle + no-op here.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from skill2env_dagster.gates.container import client_for
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.runner import run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateReport, GateVerdict

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tasks"
MIX = ["good_minimal", "good_python", "good_records", "good_script", "good_tree"]
HARBOR_SECONDS_PER_TASK = 4.5
HARDENING = ["--network", "none", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pids-limit", "256",
             "--memory", "1024m", "--cpus", "1", "--init", "--tmpfs", "/logs:size=16m", "--tmpfs", "/tmp:size=256m"]
BASELINE = {"run_wrong": False, "mutation_testing": False, "run_cheats": False, "tamper_kit": False}


def make_tasks(root: Path, n: int, source: Path | None) -> list[Path]:
    """n copies cycling through the fixture mix (pinned), or a copy of every task folder under `source`."""
    if source is not None:
        tasks = []
        for src in sorted(p for p in source.iterdir() if (p / "task.toml").is_file()):
            shutil.copytree(src, root / src.name)
            tasks.append(root / src.name)
        return tasks
    tasks = []
    for i in range(n):
        base = MIX[i % len(MIX)]
        dest = root / f"{base}-{i:02d}"
        shutil.copytree(FIXTURES / base, dest)
        pin_dockerfile(dest)
        tasks.append(dest)
    return tasks


def timed_gates(tasks: list[Path], settings: GateSettings) -> tuple[float, list[GateReport]]:
    start = time.perf_counter()
    reports = run_gates(list(tasks), settings)
    return time.perf_counter() - start, reports


def bench_full_vs_baseline(tasks: list[Path], concurrency: int, rounds: int = 1) -> None:
    """With rounds > 1 the two halves alternate (baseline, full, baseline, ...) and the median ratio is printed too:
    on a shared machine the load moves between two runs by more than most changes save."""
    full_settings = GateSettings(concurrency=concurrency)
    base_settings = GateSettings(concurrency=concurrency, **BASELINE)
    timed_gates(tasks[:2], full_settings)  # warm the image cache and the engine
    ratios = []
    for i in range(max(1, rounds)):
        base, base_reports = timed_gates(tasks, base_settings)
        full, full_reports = timed_gates(tasks, full_settings)
        ratios.append(full / base)
        if rounds > 1:
            print(f"  round {i + 1}: Oracle + no-op {base / len(tasks):.2f} s/task | full gate "
                  f"{full / len(tasks):.2f} s/task | {full / base:.2f}x")
    if rounds > 1:
        print(f"  median full/baseline over {rounds} rounds: {statistics.median(ratios):.2f}x "
              f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x)")
    verdicts = Counter(f"{r.verdict.value}:{r.reason.value if r.reason else '-'}" for r in full_reports)
    base_bad = [r.task for r in base_reports if r.verdict is not GateVerdict.RETAINED]
    runs = sum(len([a for a in r.mutants if a.status != "not_run"]) for r in full_reports)
    cheats = sum(len(r.cheats) for r in full_reports)
    print(f"tasks={len(tasks)} concurrency={concurrency}: Oracle + no-op {base:.1f} s ({base / len(tasks):.2f} s/task)"
          f" | full gate {full:.1f} s ({full / len(tasks):.2f} s/task)"
          f" | full/baseline {full / base:.2f}x (target <= 2x)")
    print(f"  full gate ran {runs} mutant verifier runs and {cheats} cheats; verdicts {dict(verdicts)}")
    stage: Counter[str] = Counter()
    for r in full_reports:
        for c in r.checks:
            stage[c.name] += c.seconds
    top = ", ".join(f"{k} {v / len(tasks):.2f}" for k, v in stage.most_common(7))
    print(f"  seconds per task by check (sum over tasks / tasks): {top}")
    if base_bad:
        print(f"  note: {len(base_bad)} tasks fail Oracle + no-op already: {base_bad[:3]}")


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout.strip()


def bare_trial(image: str, task: Path, oracle: bool) -> None:
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


def bench_floor(root: Path, n: int, concurrency: int) -> None:
    tasks = []
    root.mkdir()
    for i in range(n):
        dest = root / f"floor{i:02d}"
        shutil.copytree(FIXTURES / "good_minimal", dest)
        (dest / "solution" / "wrong.sh").unlink()
        pin_dockerfile(dest)
        tasks.append(dest)
    image, _ = build_image(client_for(GateSettings()), tasks[0] / "environment")
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda t: (bare_trial(image, t, True), bare_trial(image, t, False)), tasks))
    floor = time.perf_counter() - start
    ours, _ = timed_gates(tasks, GateSettings(concurrency=concurrency, **BASELINE))
    trials = 2 * n
    print(f"Oracle + no-op on {n} good_minimal copies, concurrency={concurrency}: ours {trials / ours:.2f} trials/s "
          f"({ours:.1f} s) | bare docker CLI {trials / floor:.2f} trials/s ({floor:.1f} s) | ours/floor "
          f"{ours / floor:.2f}x | vs Harbor 0.25 reference {trials / ours / (2 / HARBOR_SECONDS_PER_TASK):.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--tasks-dir", type=Path, help="gate every task folder here instead of the fixture mix")
    ap.add_argument("--no-floor", action="store_true", help="skip the bare docker CLI comparison")
    ap.add_argument("--rounds", type=int, default=1, help="alternate the two halves this many times (median ratio)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gates-") as tmp:
        (Path(tmp) / "mix").mkdir()
        tasks = make_tasks(Path(tmp) / "mix", args.tasks, args.tasks_dir)
        bench_full_vs_baseline(tasks, args.concurrency, args.rounds)
        if not args.no_floor:
            bench_floor(Path(tmp) / "floor", min(args.tasks, 16), args.concurrency)


if __name__ == "__main__":
    main()
