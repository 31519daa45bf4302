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
    cpuset: str | None = Field(default=None, description="Cores the containers are pinned to (docker --cpuset-cpus), "
                               "e.g. a worker host's own cores; None = any core.")
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
    service_start_sec: float = Field(
        default=30.0, gt=0, description="A stand-in service not healthy by then fails the trial (service_failed)."
    )
    run_wrong: bool = Field(default=True, description="Run solution/wrong.sh when it exists.")
    mutation_testing: bool = Field(
        default=True, description="Run the verifier on mutants of the Oracle's outputs (off: the report says so)."
    )
    blind_baselines: bool = Field(
        default=True, description="Run the skill-blind baseline battery in the mutation stage (gates/blind.py)."
    )
    run_cheats: bool = Field(default=True, description="Run every solution/cheats/*.sh; each must score low.")
    tamper_kit: bool = Field(default=True, description="Probe the trial with the built-in tamper attacks.")
    answer_key_probe: bool = Field(
        default=True, description="Plant a probe into the solver's programs in the Oracle's final state and reject a "
        "verifier that runs one that can read /tests or /solution (gates/answer_key.py).",
    )
    shortcut_threshold: float = Field(
        default=0.5, ge=0, le=1,
        description="A trivial mutant or a cheat whose mean reward is above this is a shortcut (shortcut_passed).",
    )
    max_output_files: int = Field(default=64, ge=1, description="Output files the mutation stage reads at most.")
    max_output_bytes: int = Field(
        default=4 << 20, ge=1024, description="Larger output files get only the empty and delete mutants."
    )
    read_upper_dir: bool = Field(
        default=True,
        description="Read a container's changes from its overlay2 upper directory when this host can (fast); "
        "otherwise, or when False, use `docker diff`. Both are the engine's view.",
    )
