"""Docker resource: the engine, approved registries, container limits and concurrency the gates use."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from skill2env_dagster.gates.base_images import ensure_base_images, load_base_images
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.registry import LOCAL_REGISTRY
from skill2env_dagster.gates.runner import gate_task, run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateReport


class DockerResource(dg.ConfigurableResource):
    """Thin adapter over `skill2env_dagster.gates`: assets call domain methods, never the raw Docker SDK."""

    engine_url: str | None = Field(default=None, description="Docker engine URL; None = DOCKER_HOST or local socket.")
    approved_registries: list[str] = Field(default_factory=lambda: [LOCAL_REGISTRY])
    concurrency: int = Field(default=2, ge=1, description="Tasks gated at once.")
    pids_limit: int = Field(default=256, ge=16)
    memory_mb: int = Field(default=1024, ge=64)
    cpus: float = Field(default=1.0, gt=0)
    timeout_cap_sec: float | None = Field(default=None, description="Upper bound on the tasks' own timeouts.")
    state_dir: str | None = Field(default=None, description="Where base-images.json lives (default S2E_STATE_DIR).")

    def settings(self) -> GateSettings:
        return GateSettings(
            docker_url=self.engine_url,
            approved_registries=tuple(self.approved_registries),
            concurrency=self.concurrency,
            pids_limit=self.pids_limit,
            memory_mb=self.memory_mb,
            cpus=self.cpus,
            timeout_cap_sec=self.timeout_cap_sec,
        )

    def base_images(self, build_missing: bool = False) -> dict[str, str]:
        """{flavour: pinned ref}; reads the record, or builds what is missing when asked to."""
        state = Path(self.state_dir) if self.state_dir else None
        if build_missing:
            return ensure_base_images(state, self.approved_registries[0], docker_url=self.engine_url)
        return load_base_images(state)

    def pin(self, task_dir: Path | str) -> dict[str, str]:
        return pin_dockerfile(task_dir, tuple(self.approved_registries))

    def gate(self, task_dir: Path | str) -> GateReport:
        return gate_task(task_dir, self.settings())

    def gate_many(self, task_dirs: list[Path | str]) -> list[GateReport]:
        return run_gates(task_dirs, self.settings())
