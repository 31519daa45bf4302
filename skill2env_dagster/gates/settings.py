"""Knobs of the runtime gates: engine, approved registries, container limits and concurrency."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.gates.registry import LOCAL_REGISTRY


class GateSettings(BaseModel):
    """Defaults are safe for a 2-core machine; DockerResource builds one of these from its config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    docker_url: str | None = Field(default=None, description="Engine URL; None = DOCKER_HOST or the local socket.")
    approved_registries: tuple[str, ...] = (LOCAL_REGISTRY,)
    concurrency: int = Field(default=2, ge=1, le=64)
    pids_limit: int = Field(default=256, ge=16)
    memory_mb: int = Field(default=1024, ge=64)
    cpus: float = Field(default=1.0, gt=0)
    tmp_mb: int = Field(default=256, ge=8, description="Size of the tmpfs mounted on /tmp.")
    logs_mb: int = Field(default=16, ge=2, description="Size of the tmpfs mounted on /logs.")
    output_cap_bytes: int = Field(default=1 << 20, ge=1024, description="Kept stdout+stderr per script.")
    build_network: str = Field(default="none", description="Network of `docker build`; 'none' = no downloads.")
    timeout_cap_sec: float | None = Field(
        default=None, gt=0, description="Upper bound on the task's own timeouts (e.g. for quick local gating)."
    )
    run_id: str = Field(
        default_factory=lambda: uuid.uuid4().hex[:12],
        description="Value of the `skill2env.gate` label on this run's containers (find or clean them up by it).",
    )
    run_wrong: bool = Field(default=True, description="Run solution/wrong.sh when it exists.")
