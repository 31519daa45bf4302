"""Harbor itself accepts what we write: its TaskConfig validates our task.toml, and its Task loads our folders.

Harbor 0.25 needs Python >= 3.12 while the project runs on 3.11, so Harbor lives in its own virtualenv
(`scripts/harbor-up.sh`, run by scripts/test.sh during set-up; made here when missing) and is driven through a
subprocess. Skips with a message only when the machine has no Python >= 3.12 at all.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from skill2env_dagster.models.task_toml import (
    AgentTable,
    EnvironmentTable,
    SolutionTable,
    TaskInfo,
    TaskToml,
    VerifierTable,
)

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(900)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"

_LOAD = """
import json, sys
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task
req = json.load(sys.stdin)
out = {}
if "toml" in req:
    c = TaskConfig.model_validate_toml(req["toml"])
    out["config"] = {"agent_timeout": c.agent.timeout_sec, "verifier_timeout": c.verifier.timeout_sec,
                     "verifier_env": c.verifier.env, "solution_env": c.solution.env, "workdir": c.environment.workdir,
                     "network": str(c.environment.network_mode), "metadata": c.metadata, "name": c.task.name}
if "folder" in req:
    t = Task(req["folder"])
    out["task"] = {"name": t.name, "instruction": t.instruction, "tests": str(t.paths.test_path),
                   "solve": str(t.paths.solve_path), "agent_timeout": t.config.agent.timeout_sec}
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def harbor_python(repo_root: Path) -> str:
    done = subprocess.run(["bash", str(repo_root / "scripts" / "harbor-up.sh")], capture_output=True, text=True,
                          timeout=900)
    if done.returncode == 2:
        pytest.skip(f"Harbor needs Python >= 3.12 and this machine has none: {done.stderr.strip()}")
    assert done.returncode == 0, f"could not install Harbor: {done.stderr[-2000:]}"
    return done.stdout.strip().splitlines()[-1]


def _harbor(python: str, request: dict) -> dict:
    done = subprocess.run([python, "-c", _LOAD], input=json.dumps(request), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_harbor_validates_the_task_toml_we_write(harbor_python):
    ours = TaskToml(
        task=TaskInfo(name="skill2env/a-task", description="d", keywords=["k"]),
        metadata={"base_image_pins": {"127.0.0.1:5000/s2e-minimal:bookworm": "sha256:" + "0" * 64},
                  "freeze_hash": "f" * 64, "toolchain_writes": ["/usr/local/bin/mytool"], "variant": 1},
        agent=AgentTable(timeout_sec=1800), verifier=VerifierTable(timeout_sec=300, env={"MODE": "strict"}),
        environment=EnvironmentTable(network_mode="no-network", workdir="/app", cpus=1, memory_mb=1024),
        solution=SolutionTable(env={"SEED": "1"}),
    )
    got = _harbor(harbor_python, {"toml": ours.to_toml()})["config"]
    assert got["agent_timeout"] == 1800 and got["verifier_timeout"] == 300
    assert got["verifier_env"] == {"MODE": "strict"} and got["solution_env"] == {"SEED": "1"}
    assert got["workdir"] == "/app" and "no" in got["network"].lower()
    assert got["metadata"] == ours.metadata and got["name"] == "skill2env/a-task"


def test_harbor_loads_our_task_folder_with_cheats(harbor_python, tmp_path):
    task = tmp_path / "good_script"
    shutil.copytree(FIXTURES / "good_script", task)
    got = _harbor(harbor_python, {"folder": str(task)})["task"]
    assert got["name"] == "skill2env-fixtures/region-totals-script"
    assert "region-totals" in got["instruction"]
    assert got["tests"].endswith("tests/test.sh") and got["solve"].endswith("solution/solve.sh")
    assert got["agent_timeout"] == 60.0
