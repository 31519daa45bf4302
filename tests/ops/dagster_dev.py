"""A real `dagster dev` (webserver + daemon + code server) for the operations tests, and its GraphQL API.

Started as `env --default-signal=INT dagster dev ...` in its own session: a background `dagster dev` otherwise
ignores SIGINT/SIGTERM. Stopped by its own process id (then its process group, which only it created).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from skill2env_dagster.cli.ops import graphql

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
LOCAL_INSTANCE_CONFIG = REPO / "deploy" / "dagster.yaml"

LOCATION_STATUS = """
query { workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message } } } } } }
"""

RUNS = """
query Runs($filter: RunsFilter) { runsOrError(filter: $filter) { __typename
  ... on Runs { results { runId status tags { key value } assetSelection { path } } } } }
"""


LAUNCH_RUN = """
mutation Launch($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on InvalidSubsetError { message } ... on RunConfigValidationInvalid { errors { message } } } }
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_home(path: Path) -> Path:
    """A DAGSTER_HOME holding the shipped local instance config, as docs/operations.md tells users to set up."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(LOCAL_INSTANCE_CONFIG, path / "dagster.yaml")
    return path


class DagsterDev:
    """One `dagster dev -w workspace.yaml` on a free port of 127.0.0.1, with its log in `log_path`."""

    def __init__(self, home: Path, env: dict[str, str], log_path: Path, workspace: Path = REPO / "workspace.yaml"):
        self.home, self.workspace, self.log_path = home, workspace, log_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(home), "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 300.0) -> DagsterDev:
        cmd = ["env", "--default-signal=INT", str(VENV_BIN / "dagster"), "dev", "-w", str(self.workspace),
               "-h", "127.0.0.1", "-p", str(self.port)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self._wait_loaded(timeout)
        return self

    def _wait_loaded(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc and self.proc.poll() is not None:
                raise RuntimeError(f"dagster dev exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                urllib.request.urlopen(f"{self.url}/server_info", timeout=2).read()
                entries = self.gql(LOCATION_STATUS)["workspaceOrError"]["locationEntries"]
                if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                    errors = [e for e in entries if e["locationOrLoadError"]["__typename"] == "PythonError"]
                    if errors:
                        raise RuntimeError(f"code location failed to load: {errors}")
                    return
            except OSError:
                pass
            time.sleep(1)
        raise TimeoutError(f"dagster dev not ready after {timeout}s:\n{self.log_tail()}")

    def cli(self, *args: str, timeout: float = 120.0) -> str:
        """Run a `dagster` CLI command against this server's instance and workspace."""
        proc = subprocess.run([str(VENV_BIN / "dagster"), *args, "-w", str(self.workspace)], cwd=REPO, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"dagster {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def stop_automation(self) -> None:
        """Stop the change sensor (default RUNNING), so a test decides which runs exist. `dagster dev`'s daemon may
        write the sensor's state at the same moment, and the loser of that race is refused ("InstigatorState ... is
        already present in storage"); the state then exists, and a second stop updates it."""
        try:
            self.cli("sensor", "stop", "skillhub_change_sensor")
        except RuntimeError as e:
            if "already present in storage" not in str(e):
                raise
            self.cli("sensor", "stop", "skillhub_change_sensor")

    def gql(self, query: str, variables: dict | None = None) -> dict:
        return graphql(self.url, query, variables)

    def launch_job(self, job: str, partition: str | None = None, location: str = "skill2env",
                   run_config: dict | None = None) -> str:
        """Launch a job run the way the UI's Launchpad does (with the config a user may type there); returns the
        run id."""
        tags = [{"key": "dagster/partition", "value": partition}] if partition else []
        params = {"selector": {"repositoryLocationName": location, "repositoryName": "__repository__",
                               "jobName": job}, "executionMetadata": {"tags": tags}, "runConfigData": run_config or {}}
        result = self.gql(LAUNCH_RUN, {"params": params})["launchRun"]
        assert result["__typename"] == "LaunchRunSuccess", f"launch of {job} refused: {result}"
        return result["run"]["runId"]

    def wait_run(self, run_id: str, timeout: float = 600.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [r for r in self.runs() if r["runId"] == run_id]
            if found and found[0]["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
                return found[0]["status"]
            time.sleep(1)
        raise TimeoutError(f"run {run_id} not finished after {timeout}s:\n{self.log_tail()}")

    def runs(self, tags: dict[str, str] | None = None) -> list[dict]:
        flt = {"tags": [{"key": k, "value": v} for k, v in (tags or {}).items()]}
        return self.gql(RUNS, {"filter": flt})["runsOrError"]["results"]

    def wait_runs_done(self, tags: dict[str, str] | None = None, timeout: float = 600.0) -> list[dict]:
        """Poll until every run matching `tags` is finished (and at least one exists)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.runs(tags)
            if runs and all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in runs):
                return runs
            time.sleep(1)
        raise TimeoutError(f"runs {tags} not finished after {timeout}s: {self.runs(tags)}")

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group this test created, nothing else
            self.proc.wait(10)
