"""Throughput of the offline pipeline through `skill2env run` on every skill of ../shared/corpus: cold and warm, at
each worker count, against today's path (the demo's sequential loop with double gating, at a git commit).

Usage:
  .venv/bin/python benchmarks/bench_run.py [--corpus DIR] [--out DIR] [--workers 1 2] [--max-variants 2]
      [--baseline REF | --no-baseline] [--only-baseline] [--warm-only | --interleaved] [--launch-overhead N]
      [--no-prime] [--json FILE]

An unmeasured first pass builds the task images, so every measured mode starts from the same warm image cache
(images are shared with other users of the engine and are never deleted here); "cold" means a fresh run folder:
no Dagster history, no artifacts. Per mode it prints: wall seconds; skills/min (all partitions, and eligible
ones); tasks/min (created); the time split by stage (summed step seconds from Dagster's event log); Docker image
builds (this mode's task images created during it) and gate runs (one `gate task=` log line per gate); peak RSS of
the whole process tree. `--launch-overhead N` times N cold starts of a process importing the code location: the
floor of what Dagster's run queue + default launcher pays per run (a new process per run), which the worker pool
avoids.

Targets (issue 13): cold at 2 workers >= 1.7x cold at 1 worker; >= 2x faster than today's path on the same skills;
a warm re-run under 30 s. Record the commit measured (the task generator changes under us).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = REPO / ".venv" / "bin" / "python"
GATE_LINE = re.compile(r"skill2env_dagster\.gates\.runner: .*gate task=")

# Today's path: the demo's own loop (crawl, one skill_pipeline run per partition, analytics) with its resources
# pointed at the corpus instead of examples/skillhub. Runs with PYTHONPATH = the checkout of the baseline commit.
BASELINE_DRIVER = r'''
import logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
out, corpus, max_variants = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
from skill2env_dagster.cli import demo
from skill2env_dagster.resources.docker import DockerResource
from skill2env_dagster.resources.llm import LLMResource
from skill2env_dagster.resources.skillhub import SkillHubResource
from skill2env_dagster.resources.store import ArtifactStoreResource
def resources(out):
    sources = out / "sources.yaml"
    sources.write_text(f"sources:\n  - name: skills\n    kind: dir\n    path: {corpus}\n")
    return {"artifacts": ArtifactStoreResource(root=str(out / "artifacts")),
            "skillhub": SkillHubResource(sources_file=str(sources)), "llm": LLMResource(), "docker": DockerResource()}
demo._resources = resources
assert demo.__file__.startswith(sys.argv[4]), demo.__file__
demo._infra(True)  # what the demo did first: record the pinned base images (docker-up.sh skipped)
failed = demo._materialize(out, max_variants, None)
print("FAILED", failed)
'''


@dataclass
class Mode:
    name: str
    wall_s: float = 0.0
    partitions: int = 0
    eligible: int = 0
    created: int = 0
    retained: int = 0
    ran: int = 0
    skills_per_min: float = 0.0
    eligible_per_min: float = 0.0
    tasks_per_min: float = 0.0
    stage_s: dict[str, float] = field(default_factory=dict)
    image_builds: int = 0
    gate_runs: int = 0
    peak_rss_mb: float = 0.0
    exit_code: int = 0


class RssSampler(threading.Thread):
    """Peak of the summed RSS of a process and all its descendants, sampled from /proc every 0.2 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def _tree(self) -> list[int]:
        parents: dict[int, int] = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    parents[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
        tree, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            tree.append(p)
            todo += [c for c, pp in parents.items() if pp == p]
        return tree

    def _rss(self, pid: int) -> int:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, sum(self._rss(p) for p in self._tree()))
            self.stop.wait(0.2)


def _measure(cmd: list[str], env: dict[str, str], log: Path, cwd: Path = REPO) -> tuple[float, int, float, str]:
    """(wall seconds, exit code, peak RSS MB, stdout); stderr goes to `log`."""
    start = time.monotonic()
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, text=True, cwd=cwd)
        sampler = RssSampler(proc.pid)
        sampler.start()
        stdout, _ = proc.communicate()
    sampler.stop.set()
    sampler.join()
    return time.monotonic() - start, proc.returncode, sampler.peak / 2**20, stdout


def _stage_seconds(home: Path, since: float) -> dict[str, float]:
    """Summed step durations by step key over the runs created after `since`, from Dagster's event log."""
    import dagster as dg
    from dagster._core.events import DagsterEventType

    out: Counter[str] = Counter()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for rec in instance.get_run_records(filters=dg.RunsFilter(created_after=_utc(since))):
            for entry in instance.all_logs(rec.dagster_run.run_id, of_type=DagsterEventType.STEP_SUCCESS):
                event = entry.dagster_event
                if event is not None and event.step_key:
                    out[event.step_key] += event.step_success_data.duration_ms / 1000
    return {k: round(v, 1) for k, v in sorted(out.items())}


def _utc(ts: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC)


def _image_builds(artifacts: Path, since: float, until: float) -> int:
    """Task images (what build_image tags `s2e-gate-env:<environment digest>`) of this mode's task folders that
    were created during the mode: a cached image is not rebuilt, so each one is a build. Images of other
    people's runs on the same engine do not count (their environments are not ours). The engine emits no image
    event for builds here (BuildKit), hence the creation times."""
    import docker

    from skill2env_dagster.gates.images import IMAGE_REPO, environment_digest

    ours = {f"{IMAGE_REPO}:{environment_digest(env)[:32]}" for env in artifacts.glob("*/*/*/environment")
            if env.is_dir()}
    window = (_utc(since - 1), _utc(until + 1))
    count = 0
    for image in docker.from_env().images.list(name=IMAGE_REPO):
        created = _utc(_rfc3339(image.attrs.get("Created", "")))
        count += bool(ours.intersection(image.tags)) and window[0] <= created <= window[1]
    return count


def _rfc3339(text: str) -> float:
    """Seconds since the epoch of Docker's `2026-12-01T17:05:01.123456789Z` (nanoseconds cut to micro)."""
    from datetime import UTC, datetime

    head, _, frac = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}").replace(tzinfo=UTC).timestamp() if head else 0.0


def _gate_runs(logs: list[Path]) -> int:
    return sum(1 for p in logs if p.is_file() for line in p.read_text(errors="replace").splitlines()
               if GATE_LINE.search(line))


def _finish(mode: Mode, started: float, home: Path, artifacts: Path, logs: list[Path]) -> Mode:
    mode.stage_s = _stage_seconds(home, started)
    mode.image_builds = _image_builds(artifacts, started, time.time())
    mode.gate_runs = _gate_runs(logs)
    minutes = mode.wall_s / 60
    mode.skills_per_min = round(mode.partitions / minutes, 1)
    mode.eligible_per_min = round(mode.eligible / minutes, 1)
    mode.tasks_per_min = round(mode.created / minutes, 1)
    mode.wall_s = round(mode.wall_s, 1)
    mode.peak_rss_mb = round(mode.peak_rss_mb)
    return mode


def run_mode(name: str, corpus: Path, out: Path, workers: int, max_variants: int) -> Mode:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "S2E_ARTIFACTS", "S2E_SOURCES"))}
    before = set((out / "logs").glob("run-*.log")) if (out / "logs").is_dir() else set()
    started = time.time()
    cmd = [str(PY), "-m", "skill2env_dagster", "run", str(corpus), "--out", str(out), "--workers", str(workers),
           "--max-variants", str(max_variants), "--skip-docker-up", "--json"]
    wall, code, rss, stdout = _measure(cmd, env, out.parent / f"{name}.stderr")
    funnel = json.loads(stdout) if code in (0, 1) and stdout.strip() else {}
    work = funnel.get("work", {})
    mode = Mode(name=name, wall_s=wall, exit_code=code, peak_rss_mb=rss, partitions=work.get("partitions", 0),
                eligible=funnel.get("eligible", 0), created=funnel.get("created", 0),
                retained=funnel.get("retained", 0), ran=work.get("ran", 0))
    logs = sorted(set((out / "logs").glob("run-*.log")) - before)
    return _finish(mode, started, out / "dagster_home", out / "artifacts", logs)


def run_baseline(ref: str, corpus: Path, out: Path, max_variants: int) -> Mode:
    src = out.parent / f"baseline-src-{ref[:12]}"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "S2E_ARTIFACTS", "S2E_SOURCES"))}
    env.update(PYTHONPATH=str(src), DAGSTER_HOME=str(out / "dagster_home"), S2E_STATE_DIR=str(out / "state"))
    started = time.time()
    stderr = out.parent / "baseline.stderr"
    cmd = [str(PY), "-c", BASELINE_DRIVER, str(out), str(corpus), str(max_variants), str(src)]
    wall, code, rss, _ = _measure(cmd, env, stderr, cwd=src)  # cwd: `python -c` puts it first on sys.path
    counts = _baseline_counts(src, out / "artifacts")
    mode = Mode(name=f"today@{ref[:12]} (sequential, double gating)", wall_s=wall, exit_code=code,
                peak_rss_mb=rss, **counts)
    return _finish(mode, started, out / "dagster_home", out / "artifacts", [stderr])


def _baseline_counts(src: Path, artifacts: Path) -> dict[str, int]:
    """Partitions, eligible, created, retained from the baseline's own store (read with its own code)."""
    code = ("import json,sys\nfrom skill2env_dagster.store import ArtifactStore\n"
            "from skill2env_dagster.artifacts import SNAPSHOT, TASKS\n"
            "s = ArtifactStore(sys.argv[1]); snaps = s.load_all(SNAPSHOT); tasks = s.load_all(TASKS)\n"
            "print(json.dumps({'partitions': len(snaps), 'eligible': sum(r.is_eligible for r in snaps.values()),"
            " 'created': sum(len(t.bundles) for t in tasks.values()),"
            " 'retained': sum(len(t.retained()) for t in tasks.values()), 'ran': len(snaps)}))\n")
    done = subprocess.run([str(PY), "-c", code, str(artifacts)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(src)}, cwd=src)
    return json.loads(done.stdout)


def launch_overhead(n: int) -> float:
    """Median seconds for a fresh process to import the code location (what each queued run would pay)."""
    times = []
    for _ in range(n):
        start = time.monotonic()
        subprocess.run([str(PY), "-c", "import skill2env_dagster.definitions"], check=True)
        times.append(time.monotonic() - start)
    return round(sorted(times)[len(times) // 2], 2)


def _commit() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def _print(mode: Mode) -> None:
    print(f"{mode.name:<44} wall {mode.wall_s:>7.1f} s  exit {mode.exit_code}  partitions {mode.partitions} "
          f"(ran {mode.ran}, eligible {mode.eligible})  skills/min {mode.skills_per_min} (eligible "
          f"{mode.eligible_per_min})  tasks/min {mode.tasks_per_min} (created {mode.created}, retained "
          f"{mode.retained})  builds {mode.image_builds}  gate runs {mode.gate_runs}  peak RSS {mode.peak_rss_mb} MB",
          flush=True)
    print(f"{'':<44} stage seconds {mode.stage_s}", flush=True)


def main() -> int:
    shared = Path(os.environ.get("S2E_SHARED_DIR", REPO.parent / "shared"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=shared / "corpus" / "skills")
    ap.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--max-variants", type=int, default=2)
    ap.add_argument("--baseline", default=None, help="git ref of today's path (default: merge-base with main)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--only-baseline", action="store_true")
    ap.add_argument("--launch-overhead", type=int, default=3, help="cold imports to time (0: skip)")
    ap.add_argument("--no-prime", action="store_true", help="skip the unmeasured first pass that builds images")
    ap.add_argument("--warm-only", action="store_true",
                    help="only warm re-runs on the run folders an earlier invocation left in --out (w1, w2, ...)")
    ap.add_argument("--interleaved", action="store_true",
                    help="cold runs only, in the order today, w1, w2, w2, w1, today: fair ratios under a drifting load")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        print(f"corpus not found at {args.corpus} (set S2E_SHARED_DIR)", file=sys.stderr)
        return 2
    if args.warm_only and not (args.out and all((args.out / f"w{w}").is_dir() for w in args.workers)):
        print("--warm-only needs --out with the run folders of an earlier invocation", file=sys.stderr)
        return 2
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-run-"))
    work.mkdir(parents=True, exist_ok=True)
    ref = args.baseline or subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", "main"],
                                          capture_output=True, text=True, check=True).stdout.strip()
    print(f"commit measured {_commit()}  corpus {args.corpus}  max variants {args.max_variants}  "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    modes: list[Mode] = []
    try:
        if args.warm_only:
            modes = [_run_and_print(f"warm, {w} worker(s)", args, work / f"w{w}", w) for w in args.workers]
        else:
            if not args.no_prime:  # every measured mode then starts from the same, warm image cache
                _run_and_print("prime (unmeasured; builds images)", args, work / "prime", max(args.workers),
                               fresh=True)
            modes = _interleaved(args, work, ref) if args.interleaved else _in_order(args, work, ref)
        overhead = launch_overhead(args.launch_overhead) if args.launch_overhead else None
        if overhead is not None:
            print(f"process start + import of the code location (per run under a run queue): {overhead} s "
                  f"(median of {args.launch_overhead}, load average {os.getloadavg()[0]:.1f})", flush=True)
        _ratios(modes)
        if args.json:
            args.json.write_text(json.dumps({"commit": _commit(), "baseline": ref, "launch_overhead_s": overhead,
                                             "modes": [asdict(m) for m in modes]}, indent=2))
    finally:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _run_and_print(name: str, args: argparse.Namespace, out: Path, workers: int, fresh: bool = False) -> Mode:
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
    mode = run_mode(name, args.corpus, out, workers, args.max_variants)
    _print(mode)
    return mode


def _baseline_and_print(args: argparse.Namespace, out: Path, ref: str) -> Mode:
    shutil.rmtree(out, ignore_errors=True)
    mode = run_baseline(ref, args.corpus, out, args.max_variants)
    _print(mode)
    return mode


def _in_order(args: argparse.Namespace, work: Path, ref: str) -> list[Mode]:
    """Cold then warm at each worker count, then today's path: one pass each."""
    modes: list[Mode] = []
    if not args.only_baseline:
        for w in args.workers:
            modes.append(_run_and_print(f"cold, {w} worker(s)", args, work / f"w{w}", w, fresh=True))
            modes.append(_run_and_print(f"warm, {w} worker(s)", args, work / f"w{w}", w))
    if not args.no_baseline:
        modes.append(_baseline_and_print(args, work / "baseline", ref))
    return modes


def _interleaved(args: argparse.Namespace, work: Path, ref: str) -> list[Mode]:
    """Cold runs in the order today, w1, w2, ..., w2, w1, today (each in a fresh folder), so that a load that
    drifts during the benchmark (other people's jobs on a shared machine) weighs on every mode alike; reports
    the mean of each pair."""
    order: list[int | None] = [*args.workers, *reversed(args.workers)]
    if not args.no_baseline:
        order = [None, *order, None]
    runs: dict[int | None, list[Mode]] = {}
    for i, w in enumerate(order):
        if w is None:
            mode = _baseline_and_print(args, work / f"baseline-{i}", ref)
        else:
            mode = _run_and_print(f"cold, {w} worker(s) #{i}", args, work / f"w{w}-{i}", w, fresh=True)
        runs.setdefault(w, []).append(mode)
    return [_mean(ms, ms[0].name if w is None else f"cold, {w} worker(s)") for w, ms in runs.items()]


def _mean(modes: list[Mode], name: str) -> Mode:
    first = modes[0]
    wall = sum(m.wall_s for m in modes) / len(modes)
    minutes = wall / 60
    return Mode(**{**asdict(first), "name": f"{name} (mean of {len(modes)})" if len(modes) > 1 else name,
                   "wall_s": round(wall, 1), "skills_per_min": round(first.partitions / minutes, 1),
                   "eligible_per_min": round(first.eligible / minutes, 1),
                   "tasks_per_min": round(first.created / minutes, 1),
                   "peak_rss_mb": max(m.peak_rss_mb for m in modes)})


def _ratios(modes: list[Mode]) -> None:
    by = {m.name.split(" (mean")[0]: m for m in modes}
    cold1, cold2 = by.get("cold, 1 worker(s)"), by.get("cold, 2 worker(s)")
    base = next((m for m in modes if m.name.startswith("today@")), None)
    if cold1 and cold2:
        print(f"cold 2 workers vs 1 worker: {cold1.wall_s / cold2.wall_s:.2f}x (target >= 1.7x)")
    if base and cold2:
        print(f"cold 2 workers vs today's path: {base.wall_s / cold2.wall_s:.2f}x (target >= 2x)")
    if base and cold1:
        print(f"cold 1 worker vs today's path: {base.wall_s / cold1.wall_s:.2f}x")
    for m in modes:
        if m.name.startswith("warm"):
            print(f"{m.name}: {m.wall_s:.1f} s (target < 30 s)")


if __name__ == "__main__":
    sys.exit(main())
