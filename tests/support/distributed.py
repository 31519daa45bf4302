"""The distributed deployment on one machine, for its test and its benchmark: a Postgres database, the instance
config of deploy/celery, a `dagster-daemon` on this (head) host and N worker hosts (containers of the project
image, deploy/celery/worker-host.sh). Everything it starts is named or labelled with one random label and removed
on exit (only ours: other people's containers and databases are never touched)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
CELERY = REPO / "deploy" / "celery"
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
WORKSPACE = str(REPO / "workspace.yaml")


class UnavailableError(RuntimeError):
    """A component (Postgres, the image) could not be started: the caller skips or fails with this."""


def _script(script: str, env: dict[str, str], timeout: float) -> str:
    proc = subprocess.run(["bash", str(REPO / script)], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise UnavailableError(f"{script} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return proc.stdout.strip().splitlines()[-1]


@dataclass
class Deployment:
    root: Path
    env: dict[str, str]
    label: str
    hosts: list[str] = field(default_factory=list)
    workspace: str = WORKSPACE
    head_pids: list[int] = field(default_factory=list)  # the head's code server and daemon (their CPU, for benches)

    def dagster(self, *args: str, timeout: float = 180) -> str:
        proc = subprocess.run([str(VENV_BIN / "dagster"), *args], cwd=REPO, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        assert proc.returncode == 0, f"dagster {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def launch(self, job: str, tags: dict[str, str] | None = None, config: dict | None = None) -> str:
        run_id = str(uuid.uuid4())
        extra = ["--tags", json.dumps(tags)] if tags else []
        extra += ["--config-json", json.dumps(config)] if config else []
        self.dagster("job", "launch", "-w", self.workspace, "-j", job, "--run-id", run_id, *extra)
        return run_id

    def backfill(self, job: str, partitions: list[str]) -> None:
        self.dagster("job", "backfill", "-w", self.workspace, "-j", job, "--partitions", ",".join(partitions),
                     "--noprompt")

    def host_of(self, run: dg.DagsterRun) -> str:
        """The worker host whose Celery worker received the run's task (its log names the task id)."""
        task = run.tags["dagster-celery/task_id"]
        for h in self.hosts:
            if task in subprocess.run(["docker", "logs", h], capture_output=True, text=True).stderr:
                return h
        raise AssertionError(f"no host received task {task}")

    @contextmanager
    def stopped(self, host: str) -> Iterator[None]:
        """The host's worker shut down (docker stop: Celery's warm shutdown) until the block ends, then started
        again: meanwhile only the other hosts take runs from the broker. (Not `docker pause`: a worker frozen while
        it polls holds its row lock in the SQLAlchemy broker's queue table, and every other host waits on it.)"""
        subprocess.run(["docker", "stop", "-t", "30", host], check=True, capture_output=True)
        try:
            yield
        finally:
            subprocess.run(["docker", "start", host], check=True, capture_output=True)

    def kill_run_worker(self, host: str, still_running: Callable[[], bool] = lambda: True) -> bool:
        """kill -9 of the Celery pool processes of `host` (the children of its worker's main process), which execute
        its runs. The host is frozen (`docker pause`, the cgroup freezer) from before `still_running` is asked until
        the SIGKILL is sent: nothing a run does can happen between the check and the kill (a run that ended before
        the freeze is not killed: returns False). The signal is delivered when the host thaws, before the process
        runs another instruction."""
        subprocess.run(["docker", "pause", host], check=True, capture_output=True)
        try:
            if not still_running():
                return False
            main = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", host], check=True,
                                  capture_output=True, text=True).stdout.strip()
            pool = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(p) == main]
            assert pool, f"{host}: no pool process under its worker (pid {main})"
            for pid in pool:
                os.kill(pid, signal.SIGKILL)
            return True
        finally:
            subprocess.run(["docker", "unpause", host], check=True, capture_output=True)


def _ppid(pid: str) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):  # the process ended meanwhile
        return None


def _code_server(root: Path, env: dict[str, str], wait: float = 300) -> tuple[subprocess.Popen, str]:
    """The code location as its own long-lived server (`dagster code-server start`) and a workspace file pointing
    at it, as a production head runs it. A code server the daemon starts itself is tied to the daemon's heartbeat
    and opens the instance when it starts: with Postgres down for longer than the heartbeat it died, could not
    start again, and the run retry the daemon attempted right after the outage failed to load the location."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(root / "code-server.log", "wb") as log:
        argv = [str(VENV_BIN / "dagster"), "code-server", "start", "-m", "skill2env_dagster.definitions",
                "--location-name", "skill2env", "-h", "127.0.0.1", "-p", str(port)]
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    workspace = root / "workspace.yaml"
    workspace.write_text(f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n      port: {port}\n"
                         f"      location_name: skill2env\n")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        ping = subprocess.run([str(VENV_BIN / "dagster"), "api", "grpc-health-check", "-p", str(port)], env=env,
                              capture_output=True)
        if ping.returncode == 0:
            return proc, str(workspace)
        assert proc.poll() is None, f"the code server exited: {(root / 'code-server.log').read_text()[-2000:]}"
        time.sleep(1)
    proc.kill()
    raise UnavailableError(f"the code server did not answer in {wait:.0f}s")


def hub_sources(root: Path, hub: Path) -> Path:
    """A copy of `hub` and its sources file under `root`, the deployment's root: the worker hosts mount only that
    (S2E_SHARED_ROOT), so a hub or sources file elsewhere on this machine is invisible to them."""
    from tests.support.hub import write_sources

    copy = root.resolve() / "hub"
    if not copy.exists():
        shutil.copytree(hub, copy, symlinks=True)
    return write_sources(root.resolve() / "sources.yaml", [{"name": "hub", "kind": "dir", "path": str(copy)}],
                         root.resolve() / "cache")


def wait_run(instance: dg.DagsterInstance, run_id: str, timeout: float = 900) -> dg.DagsterRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status in DONE:
            return run
        time.sleep(1)
    raise TimeoutError(f"run {run_id} not finished after {timeout}s")


def step_started(instance: dg.DagsterInstance, run_id: str, step: str) -> bool:
    return any(e.dagster_event is not None and e.dagster_event.event_type_value == "STEP_START"
               and e.dagster_event.step_key == step for e in instance.all_logs(run_id))


def materializations(instance: dg.DagsterInstance, asset: str, key: str, runs: set[str] | None = None) -> int:
    flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key])
    return sum(runs is None or r.run_id in runs for r in instance.fetch_materializations(flt, limit=100).records)


@contextmanager
def deployment(root: Path, sources: Path, hosts: list[tuple[str, str]], concurrency: int = 1,
               image: str | None = None, pg_env: dict[str, str] | None = None) -> Iterator[Deployment]:
    """Start it all; `hosts` = [(name, cpuset or "")]; `pg_env` e.g. {"S2E_PG_CLUSTER": ..., "S2E_PG_PORT": ...}
    for a Postgres cluster of the caller's own (scripts/postgres-up.sh). Sets DAGSTER_HOME etc. in os.environ
    while it runs."""
    root = root.resolve()
    db = f"s2e_dist_{uuid.uuid4().hex[:8]}"
    base = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    pg = _script("scripts/postgres-up.sh", {**base, **(pg_env or {}), "S2E_PG_DB": db}, 300)
    if not pg.startswith("postgresql"):
        raise UnavailableError(f"postgres-up.sh printed no URL: {pg!r}")
    image = image or _script("deploy/build-image.sh", base, 1800)
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(CELERY / "dagster.yaml", home / "dagster.yaml")
    label = f"s2e-dist-{uuid.uuid4().hex[:8]}"
    settings = {"DAGSTER_HOME": str(home), "S2E_PG_URL": pg, "S2E_BROKER_URL": f"sqla+{pg}",
                "S2E_RESULTS_URL": f"db+{pg}", "S2E_ARTIFACTS_DIR": str(root / "artifacts"), "S2E_RUN_IMAGE": image,
                "S2E_SOURCES": str(sources), "S2E_STATE_DIR": str(root / "state"), "S2E_GATE_LABEL": label,
                "S2E_SHARED_ROOT": str(root)}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    d = Deployment(root, {**base, **settings}, label)
    daemon = code_server = None
    try:
        subprocess.run([str(VENV_BIN / "skill2env"), "base-images"], env=d.env, check=True, capture_output=True)
        head = subprocess.run(["bash", str(CELERY / "head.sh"), str(len(hosts))], env=d.env, capture_output=True,
                              text=True, timeout=300)
        assert head.returncode == 0, head.stderr
        code_server, d.workspace = _code_server(root, d.env)
        # Stopped before the daemon starts: with the daemon running, its first sensor tick and this command could
        # both insert the sensor's state, and the loser failed ("InstigatorState ... is already present in storage").
        d.dagster("sensor", "stop", "skillhub_change_sensor", "-w", d.workspace)
        with open(root / "daemon.log", "wb") as log:
            daemon = subprocess.Popen([str(VENV_BIN / "dagster-daemon"), "run", "-w", d.workspace], cwd=REPO,
                                      env=d.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        d.head_pids = [code_server.pid, daemon.pid]
        for name, cpuset in hosts:
            started = subprocess.run(["bash", str(CELERY / "worker-host.sh"), f"{label}-{name}", cpuset,
                                      str(concurrency)], env=d.env, capture_output=True, text=True, timeout=120)
            assert started.returncode == 0, started.stderr
            d.hosts.append(f"s2e-host-{label}-{name}")
        yield d
    finally:
        for proc in (daemon, code_server):
            if proc is None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        for h in d.hosts:
            with open(root / f"{h}.log", "w") as out:
                subprocess.run(["docker", "logs", h], stdout=out, stderr=subprocess.STDOUT)
            subprocess.run(["docker", "rm", "-f", h], capture_output=True)
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=skill2env.gate={label}"],
                             capture_output=True, text=True).stdout.split()
        if ids:  # gate containers a killed worker left behind (ours only: the label is this deployment's)
            subprocess.run(["docker", "rm", "-f", *ids], capture_output=True)
        drop = f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'
        port = pg.rsplit(":", 1)[1].split("/")[0]
        subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-p", port, "-qc", drop], capture_output=True,
                       timeout=60)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
