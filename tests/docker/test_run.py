"""`skill2env run` end to end on a temporary hub of two example skills, through Dagster and the real engine:
from a local git repository (one partition at a time, then two workers) and from a folder; a second run does
nothing; an edited skill re-runs only its own partition; an interrupted run leaves no container behind and the
next run resumes; failing partitions are listed with their reason while the others complete."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skill2env_dagster.artifacts import GATES, TASKS
from skill2env_dagster.cli.runner.home import HOLD_AT, RunHome
from skill2env_dagster.gates.container import LABEL
from skill2env_dagster.store import ArtifactStore

pytestmark = pytest.mark.docker
SKILLS = ("log-triage-awk", "csv-dedupe")


def _cmd(*args: str, workers: int = 1) -> list[str]:
    return [sys.executable, "-m", "skill2env_dagster", "run", *args, "--max-variants", "1", "--skip-docker-up",
            "--json", "--workers", str(workers)]


def _env(**extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "S2E_ARTIFACTS_DIR", "S2E_SOURCES")}
    return {**keep, **extra}


def _run(source: str, out: Path, workers: int = 1, expect: int = 0, **env: str) -> dict:
    done = subprocess.run(_cmd(source, "--out", str(out), workers=workers), capture_output=True, text=True,
                          env=_env(**env), timeout=600)
    assert done.returncode == expect, f"{done.stderr[-3000:]}\n{(out / 'logs' / 'latest.log').read_text()[-5000:]}"
    return json.loads(done.stdout)


@pytest.fixture
def hub(examples_dir, tmp_path) -> Path:
    root = tmp_path / "hub"
    for name in SKILLS:
        shutil.copytree(examples_dir / name, root / name)
    return root


def _edit(skill_dir: Path) -> None:
    md = skill_dir / "SKILL.md"
    md.write_text(md.read_text() + "\nAlways keep the original file untouched and write the result next to it.\n")


def _assert_exported(funnel: dict, out: Path) -> None:
    assert funnel["retained"] >= 1 and funnel["failed_partitions"] == []
    assert sorted(p.name for p in (out / "tasks").iterdir()) == funnel["exported"]
    assert len(funnel["exported"]) == funnel["retained"]


def _sensor_requests(out: Path) -> list:
    """The change sensor evaluated on a finished run's history, as a daemon started on it would (no cursor)."""
    import dagster as dg

    from skill2env_dagster.cli.runner.location import run_defs
    from skill2env_dagster.resources.store import ArtifactStoreResource

    home = RunHome(out.resolve())
    defs = run_defs(home)
    with dg.DagsterInstance.from_config(str(home.dagster_home)) as instance:
        result = defs.get_sensor_def("skillhub_change_sensor")(dg.build_sensor_context(
            instance=instance, definitions=defs,
            resources={"artifacts": ArtifactStoreResource(root=str(home.artifacts))}))
    return [] if isinstance(result, dg.SkipReason) else list(result.run_requests)


def test_run_from_a_local_git_repository_then_again_then_after_an_edit(docker_client, hub, tmp_path):
    """One partition at a time first (the whole chain, gated once), then nothing to do, then two workers for the
    edited skill only. (The folder source is run by the interrupt and failing-partition tests below.)"""
    git = ["git", "-C", str(hub), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(hub)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "two skills"], check=True)
    out = tmp_path / "out"
    first = _run(f"{hub}@main", out)
    _assert_exported(first, out)
    assert first["work"]["ran_partitions"] == ["hub__csv-dedupe", "hub__log-triage-awk"]
    assert first["work"]["ran"] == 2 and first["work"]["workers"] == 1
    store = ArtifactStore(out / "artifacts")
    for key in first["work"]["ran_partitions"]:  # gate once: the creation-time reports stood for the folders
        retained = {b.task_name for b in store.load(TASKS, key).retained()}
        assert set(store.load(GATES, key).reused) == retained

    assert _sensor_requests(out) == []  # the UI opened on this history launches nothing: one record of the work
    second = _run(f"{hub}@main", out)
    assert second["work"] | {"seconds": 0} == {**second["work"], "ran": 0, "runs": 0, "up_to_date": 2,
                                                "analytics": "up_to_date", "ran_partitions": [], "seconds": 0}
    assert second["exported"] == first["exported"]

    _edit(hub / "log-triage-awk")
    subprocess.run([*git, "commit", "-q", "-am", "edit one skill"], check=True)
    third = _run(f"{hub}@main", out, workers=2)
    assert third["work"]["ran_partitions"] == ["hub__log-triage-awk"] and third["work"]["up_to_date"] == 1
    assert third["work"]["workers"] == 2
    _assert_exported(third, out)


def _containers(client, label: str) -> list:
    return client.containers.list(all=True, sparse=True, filters={"label": f"{LABEL}={label}"})


def _ignore_sigint() -> None:
    """How CI and a script's `cmd &` start a process: SIGINT ignored (Python then installs no handler of its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupt_at(phase: str, hub: Path, out: Path, client, tmp_path: Path, hold: bool = False) -> None:
    """Start a run; once it has marked `phase` as started, send Ctrl-C (SIGINT to its whole process group, as a
    terminal does). It must exit 130 and leave no gate container and nothing half-written. The trigger is the
    run's own phase marker, not a delay; `hold` keeps a short phase open until the signal (S2E_RUN_HOLD_AT)."""
    home = RunHome(out.resolve())
    home.phase_file.unlink(missing_ok=True)
    env = _env(**({HOLD_AT: phase} if hold else {}))
    with open(tmp_path / "stdout", "w") as so, open(tmp_path / "stderr", "w") as se:
        proc = subprocess.Popen(_cmd(str(hub), "--out", str(out), workers=2), stdout=so, stderr=se, env=env,
                                start_new_session=True, preexec_fn=_ignore_sigint)
        try:
            while proc.poll() is None and not (home.phase_file.is_file()
                                               and home.phase_file.read_text().strip() == phase):
                time.sleep(0.05)
            assert proc.poll() is None, f"the run ended before its {phase} phase: {(tmp_path / 'stderr').read_text()}"
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert code == 130, f"{phase}: exit {code}\n{(tmp_path / 'stderr').read_text()[-3000:]}"
    assert _containers(client, home.gate_label) == []
    leftovers = [p for p in (out / "artifacts").rglob("*.tmp") if ".staging" not in p.parts]
    assert leftovers == []  # nothing half-written outside the staging area


def test_an_interrupted_run_leaves_no_container_and_resumes(docker_client, hub, tmp_path):
    """Ctrl-C in each phase of a run started with SIGINT ignored (as CI starts it): exit 130 every time, no
    container left; the next run resumes and completes."""
    out = tmp_path / "out"
    _interrupt_at("crawl", hub, out, docker_client, tmp_path)
    _interrupt_at("partitions", hub, out, docker_client, tmp_path)
    _interrupt_at("analytics", hub, out, docker_client, tmp_path, hold=True)
    _interrupt_at("export", hub, out, docker_client, tmp_path, hold=True)
    resumed = _run(str(hub), out)
    _assert_exported(resumed, out)
    assert resumed["work"]["failed"] == 0 and resumed["work"]["up_to_date"] == len(SKILLS)


def test_failing_partitions_are_listed_and_the_others_complete(docker_client, hub, examples_dir, tmp_path):
    """A model endpoint that refuses connections fails each eligible skill's planning with llm_unavailable; the
    screened-out skill in the same hub is still processed, and the run exits 1 with both failures listed."""
    shutil.copytree(examples_dir / "pirate-persona", hub / "pirate-persona")
    funnel = _run(str(hub), tmp_path / "out", workers=2, expect=1, S2E_LLM_BASE_URL="http://127.0.0.1:9/v1",
                  S2E_LLM_MODEL="unreachable", S2E_LLM_CACHE_DIR=str(tmp_path / "llm-cache"),
                  S2E_LLM_BACKOFF_BASE="0.01", S2E_LLM_BACKOFF_CAP="0.05")  # every attempt still made, unslept
    failed = {f["partition"]: (f["stage"], f["reason"]) for f in funnel["failed_partitions"]}
    assert failed == {f"hub__{s}": ("workflow_plans", "llm_unavailable") for s in SKILLS}
    assert funnel["work"]["ran_partitions"] == ["hub__pirate-persona"] and funnel["work"]["failed"] == 2
    assert funnel["screened_out_by_reason"] == {"persona_only": 1}
