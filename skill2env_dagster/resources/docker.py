"""Docker resource: the gates' settings (engine, approved registries, limits, stages, thresholds) as one nested
config field generated from `GateSettings`, plus where the base-image record lives."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import docker.errors
from pydantic import Field

from skill2env_dagster.gates.base_images import ensure_base_images, load_base_images
from skill2env_dagster.gates.container import client_for, reap_orphans
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.runner import gate_task, run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateReport
from skill2env_dagster.reasons import InfraError
from skill2env_dagster.resources.domain_config import dagster_config

if TYPE_CHECKING:
    GateConfig = dg.Config
else:
    # Every GateSettings field but the per-run container label, with the domain model's defaults and bounds.
    GateConfig = dagster_config(GateSettings, exclude=frozenset({"run_id"}))
from skill2env_dagster.hashing import canonical_json, sha256_bytes

# Settings that change where or how fast gates run, never what they conclude (excluded from the verdict key).
_NOT_VERDICT = {"docker_url", "concurrency", "run_id", "read_upper_dir", "cpuset"}
log = logging.getLogger(__name__)
HOST_CPUSET = "S2E_GATE_CPUSET"  # a worker host pinned to some cores pins its gate containers to the same ones
HOST_LABEL = "S2E_GATE_LABEL"  # a worker host's label on its gate containers (to remove what a dead worker left)


class DockerResource(dg.ConfigurableResource):
    """Thin adapter over `skill2env_dagster.gates`: assets call domain methods, never the raw Docker SDK."""

    gates: GateConfig = Field(default_factory=GateConfig, description="GateSettings (see gates/settings.py).")
    state_dir: str | None = Field(default=None, description="Where base-images.json lives (default S2E_STATE_DIR).")
    run_label: str | None = Field(default=None, description="`skill2env.gate` label of the gate containers "
                                  "(find or clean them up by it); None = a fresh random value per gate call.")

    def settings(self) -> GateSettings:
        label = self.run_label or os.environ.get(HOST_LABEL)
        update: dict[str, str] = {"run_id": label} if label else {}
        if self.gates.model_dump().get("cpuset") is None and os.environ.get(HOST_CPUSET):
            update["cpuset"] = os.environ[HOST_CPUSET]
        return GateSettings(**self.gates.model_dump()).model_copy(update=update)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Before a run's steps: remove the gate containers a dead process of this host left under this host's or
        run folder's label (a worker killed mid-gate); see gates.container.reap_orphans."""
        label = self.run_label or os.environ.get(HOST_LABEL)
        if not label:
            return
        try:
            removed = reap_orphans(client_for(self.settings()), label)
        except (InfraError, docker.errors.DockerException, OSError) as e:
            log.warning("could not look for orphaned gate containers: %s", e)
            return
        if removed:
            log.warning("removed %d gate containers left by a dead worker process (label %s)", removed, label)

    def verdict_fingerprint(self) -> str:
        """A short hash of the settings that can change a gate verdict (limits, timeouts, registries...)."""
        kept = self.settings().model_dump(mode="json", exclude=_NOT_VERDICT)
        return sha256_bytes(canonical_json(kept).encode())[:12]

    def base_images(self, build_missing: bool = False) -> dict[str, str]:
        """{flavour: pinned ref}; reads the record, or builds what is missing when asked to."""
        state = Path(self.state_dir) if self.state_dir else None
        s = self.settings()
        if build_missing:
            return ensure_base_images(state, s.approved_registries[0], docker_url=s.docker_url)
        return load_base_images(state)

    def pin(self, task_dir: Path | str) -> dict[str, str]:
        return pin_dockerfile(task_dir, self.settings().approved_registries)

    def gate(self, task_dir: Path | str) -> GateReport:
        return gate_task(task_dir, self.settings())

    def gate_many(self, task_dirs: list[Path | str]) -> list[GateReport]:
        return run_gates(task_dirs, self.settings())
