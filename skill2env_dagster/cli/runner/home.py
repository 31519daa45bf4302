"""One folder (`--out`) holds everything a run keeps: the sources file it crawled, the artifact store, the Dagster
home (SQLite instance), the logs and the exported tasks. `dagster dev` on that home shows every run afterwards."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import yaml

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.hashing import sha256_bytes

REPO = Path(__file__).resolve().parents[3]
# The one local instance config (pools, retries, python logs, telemetry off); a run copies it into its home.
INSTANCE_CONFIG = REPO / "deploy" / "dagster.yaml"
HOLD_AT = "S2E_RUN_HOLD_AT"


class RunnerError(Exception):
    """A run cannot start (bad arguments, a busy folder): the command prints it and exits 2."""


@dataclass(frozen=True)
class RunHome:
    out: Path

    @property
    def dagster_home(self) -> Path:
        return self.out / "dagster_home"

    @property
    def artifacts(self) -> Path:
        return self.out / "artifacts"

    @property
    def sources_file(self) -> Path:
        return self.out / "sources.yaml"

    @property
    def logs(self) -> Path:
        return self.out / "logs"

    @property
    def tasks(self) -> Path:
        return self.out / "tasks"

    @property
    def git_cache(self) -> Path:
        return self.out / "git-cache"

    @property
    def screen_cache(self) -> Path:
        return self.out / "screen-cache"

    @property
    def phase_file(self) -> Path:
        """The phase the run is in (crawl, partitions, rollouts, analytics, export, done), written as each starts: for
        people watching a long run, and a deterministic point for tests to interrupt it at."""
        return self.out / "phase"

    def mark_phase(self, phase: str) -> None:
        """Record the phase; with S2E_RUN_HOLD_AT=<phase> (tests) wait there until interrupted, at most 10 min, so
        that a phase too short to catch by polling can be interrupted deterministically."""
        atomic_write_text(self.phase_file, phase + "\n")
        if os.environ.get(HOLD_AT) == phase:
            time.sleep(600)

    @property
    def gate_label(self) -> str:
        """Label value of every gate container this home's runs start: stable per folder, so a run can remove
        containers a killed earlier run on the same folder left behind (and touch nobody else's)."""
        return "s2e-run-" + sha256_bytes(str(self.out.resolve()).encode())[:12]

    def env(self) -> dict[str, str]:
        """What the code location reads from the environment to find this run's state (also for `dagster dev`);
        the base-image record goes where S2E_STATE_DIR says, else into the run folder (not the working dir)."""
        return {"DAGSTER_HOME": str(self.dagster_home), "S2E_ARTIFACTS_DIR": str(self.artifacts),
                "S2E_SOURCES": str(self.sources_file),
                "S2E_STATE_DIR": os.environ.get("S2E_STATE_DIR") or str(self.out / "state")}

    def browse_command(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env().items())
        return f"{env} {REPO / '.venv' / 'bin' / 'dagster'} dev -w {REPO / 'workspace.yaml'}"

    def prepare(self) -> None:
        """Create the folders and the instance config (once: a config edited by hand is kept)."""
        for d in (self.dagster_home, self.artifacts, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        config = self.dagster_home / "dagster.yaml"
        if not config.exists():
            atomic_write_text(config, instance_config_text())

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One run per folder at a time: two runs would race on the same partitions and artifacts."""
        self.out.mkdir(parents=True, exist_ok=True)
        fh: IO[str] = open(self.out / ".run.lock", "w")  # noqa: SIM115 - held for the whole with-block
        try:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as e:
                raise RunnerError(f"another skill2env run is using {self.out}") from e
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            yield
        finally:
            fh.close()


def instance_config_text() -> str:
    """deploy/dagster.yaml with telemetry off, whatever the template says (no banner on a headless run)."""
    config = yaml.safe_load(INSTANCE_CONFIG.read_text(encoding="utf-8")) or {}
    config["telemetry"] = {"enabled": False}
    return "# Written by `skill2env run` from deploy/dagster.yaml.\n" + yaml.safe_dump(config, sort_keys=False)
