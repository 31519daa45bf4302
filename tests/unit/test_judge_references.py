"""benchmarks/judge_references.py, the path that re-rolls the Oracle for an independent judge: its Oracle has the
read-only probe (every input shown whole, a program to repair displayed before it is patched) and runs the program
it wrote on the sample. Agent M's figure (+2.78) was measured with another checkout's older Oracle: its requests
showed the fallback listing cut at 2,500 characters and no run on the sample. The episode here runs for real, in
bash on files this test writes (a task of our own, no skill's code), through the benchmark's own job."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

import skill2env_dagster
from skill2env_dagster.rollouts.runner import TaskRef, run_jobs
from skill2env_dagster.rollouts.sandbox import CommandResult, Verification
from skill2env_dagster.rollouts.settings import RolloutSettings
from tests.support.sample_register import write_sample

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "tasks" / "good_minimal"
BROKEN = "#!/bin/sh\n# the broken line: every row is a breach\ncat \"$1\"\n"
FIXED = "#!/bin/sh\ngrep ',active$' \"$1\" | sed 's/,active$/,R1,active/'\n"


def _bench():
    spec = importlib.util.spec_from_file_location("judge_references", ROOT / "benchmarks" / "judge_references.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BashSandbox:
    """Runs each command with bash on the host, in a folder that stands for the container's /app."""

    def __init__(self, probe_fails: bool = False) -> None:
        self.probe_fails = probe_fails
        self.calls: list[tuple[str, str]] = []

    def exec(self, command: str, timeout: float) -> CommandResult:
        if self.probe_fails and command.startswith("for p in "):
            return CommandResult(1, head=b"probe: permission denied")
        out = subprocess.run(["bash", "-c", command], capture_output=True, timeout=60)
        self.calls.append((command, out.stdout.decode("utf-8", "replace")))
        return CommandResult(out.returncode, head=out.stdout + out.stderr, total_bytes=len(out.stdout + out.stderr))

    def write_file(self, path: str, content: bytes, mode: str | None = None) -> CommandResult:
        raise AssertionError("the Oracle writes through its bash steps")

    def upload_dir(self, src: Path, dest: str) -> None:
        pass

    def workspace_digest(self, limit: int) -> str:
        return ""

    def kill(self) -> None:
        pass

    def revive(self) -> None:
        pass

    def verify(self) -> Verification:
        return Verification(metrics={"correct": 1.0})


def _repair_task(tmp_path: Path) -> tuple[TaskRef, Path]:
    app = tmp_path / "app"
    write_sample(app, "check-register", BROKEN)
    task = tmp_path / "task"
    shutil.copytree(FIXTURE, task)
    (task / "instruction.md").write_text(
        f"Our checker {app}/bin/check-register reports every row. Fix it. A sample register is in "
        f"{app}/samples/register.csv, with its correct findings in {app}/samples/findings.txt. It is run as "
        f"`{app}/bin/check-register FILE.csv` and prints one line per breach.\n")
    toml = (task / "task.toml").read_text().replace('workdir = "/app"', f'workdir = "{app}"')
    (task / "task.toml").write_text(toml.replace("[metadata]\n", f'[metadata]\nblueprint_deliverables = '
                                                                  f'["{app}/bin/check-register"]\n'))
    (task / "solution" / "solve.sh").write_text(
        f"#!/bin/bash\nset -euo pipefail\ncat > {app}/bin/check-register <<'EOF'\n{FIXED}EOF\n"
        f"chmod +x {app}/bin/check-register\n")
    return TaskRef("repair", task), app


def _roll(tmp_path: Path, sandbox: BashSandbox):
    bench = _bench()
    task, app = _repair_task(tmp_path)
    policies: list = []

    @contextmanager
    def opener(_):
        yield sandbox

    [rollout] = run_jobs([bench.oracle_job(task, RolloutSettings(), policies)], opener, tmp_path / "out", 1)
    return rollout, policies, app


def test_the_benchmarks_oracle_reads_with_its_probe_and_checks_its_program_on_the_sample(tmp_path: Path):
    sandbox = BashSandbox()
    rollout, [policy], app = _roll(tmp_path, sandbox)
    assert policy.probed and rollout.scored
    assert not any("not read here" in cmd or "| head -c 2500" in cmd for cmd in policy.steps)  # not the fallback
    assert sandbox.calls[0][0].startswith("for p in ")  # the probe, not part of the episode
    episode = [out for _, out in sandbox.calls[1:]]
    assert [cmd for cmd, _ in sandbox.calls[1:]] == policy.steps
    work = next(i for i, cmd in enumerate(policy.steps) if cmd.startswith("set -euo pipefail"))
    assert any("the broken line" in out for out in episode[:work])  # the program to repair, shown before the patch
    assert f"identical to {app}/samples/findings.txt" in episode[-1]  # run on the sample after, and compared
    assert "1,R1,active\n3,R1,active" in episode[-1]


def test_a_failed_probe_is_recorded_not_hidden(tmp_path: Path):
    _, [policy], _ = _roll(tmp_path, BashSandbox(probe_fails=True))
    assert not policy.probed  # judge_references puts the task in `oracle_unprobed`


def test_the_benchmark_refuses_another_checkouts_code(monkeypatch: pytest.MonkeyPatch):
    bench = _bench()
    bench.same_checkout()  # this checkout: fine
    monkeypatch.setattr(skill2env_dagster, "__file__", "/work/wt/other/skill2env_dagster/__init__.py")
    with pytest.raises(SystemExit, match="imports skill2env_dagster from /work/wt/other"):
        bench.same_checkout()
    assert sys.modules["skill2env_dagster"] is skill2env_dagster
