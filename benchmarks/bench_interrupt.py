"""Ctrl-C, repeated: `skill2env run` on two example skills, started the way CI starts processes (SIGINT ignored),
interrupted (SIGINT to its process group, as a terminal does) once it marks the partition phase in DIR/phase.

Usage: .venv/bin/python benchmarks/bench_interrupt.py --repeat 50 [--work /tmp/interrupt-bench] [--phase partitions]
Prints per repetition the exit status, the gate containers left with the run folder's label and the seconds from
the signal to the exit; then the totals (target: exit 130 every time, 0 containers left). Every 10th repetition
also re-runs the folder to completion (the resume).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from skill2env_dagster.cli.runner.home import HOLD_AT, RunHome  # noqa: E402
from skill2env_dagster.gates.container import LABEL  # noqa: E402

SKILLS = ("log-triage-awk", "csv-dedupe")


def _env(**extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "S2E_ARTIFACTS_DIR", "S2E_SOURCES")}
    return {**keep, **extra}


def _cmd(hub: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "skill2env_dagster", "run", str(hub), "--out", str(out), "--max-variants", "1",
            "--skip-docker-up", "--json", "--workers", "2"]


def _containers(label: str) -> int:
    done = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}={label}"], capture_output=True,
                          text=True)
    return len(done.stdout.split())


def once(hub: Path, out: Path, phase: str, hold: bool) -> dict[str, object]:
    home = RunHome(out.resolve())
    home.phase_file.unlink(missing_ok=True)
    env = _env(**({HOLD_AT: phase} if hold else {}))
    proc = subprocess.Popen(_cmd(hub, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        while proc.poll() is None and not (home.phase_file.is_file() and home.phase_file.read_text().strip() == phase):
            time.sleep(0.05)
        if proc.poll() is not None:
            return {"exit": proc.returncode, "containers": _containers(home.gate_label), "note": "ended first"}
        os.killpg(proc.pid, signal.SIGINT)
        t0 = time.monotonic()
        code = proc.wait(timeout=300)
        return {"exit": code, "containers": _containers(home.gate_label), "stop_s": round(time.monotonic() - t0, 1)}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--work", type=Path, default=Path("/tmp/interrupt-bench"))
    p.add_argument("--phase", default="partitions")
    p.add_argument("--hold", action="store_true", help="hold the phase open until the signal (S2E_RUN_HOLD_AT)")
    a = p.parse_args()
    hub = a.work / "hub"
    shutil.rmtree(a.work, ignore_errors=True)
    for name in SKILLS:
        shutil.copytree(REPO / "examples" / "skillhub" / name, hub / name)
    rows = []
    for i in range(a.repeat):
        out = a.work / f"out-{i // 10}"  # ten interrupts per folder, then a resume to completion
        row = once(hub, out, a.phase, a.hold)
        if i % 10 == 9:
            resumed = subprocess.run(_cmd(hub, out), capture_output=True, text=True, env=_env(), timeout=1800)
            row["resume_exit"] = resumed.returncode
        rows.append(row)
        print(f"[{i + 1}/{a.repeat}] {json.dumps(row)} load {os.getloadavg()[0]:.2f}", flush=True)
    ok = sum(r["exit"] == 130 for r in rows)
    left = sum(int(str(r["containers"])) for r in rows)
    resumes = [r["resume_exit"] for r in rows if "resume_exit" in r]
    print(f"interrupt at {a.phase}: exit 130 in {ok} of {len(rows)}; containers left {left}; resumes {resumes} "
          f"(target: 130 every time, 0 containers, resumes exit 0)")
    return 0 if ok == len(rows) and left == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
