"""Strict model of Harbor's task.toml (schema 1.4): Harbor's field names, but unknown keys are errors.

Field names follow Harbor 0.25's `harbor/models/task/config.py` (`TaskConfig` and its sub-tables). Harbor ignores
unknown keys, so a typo such as `[verifer]` silently loses the verifier timeout; here it is a ValidationError.
Harbor features we do not gate (multi-step `steps`, `artifacts`, MCP servers, TPUs, health checks, a separate
verifier environment) are left out on purpose and therefore rejected too. We also require what Harbor leaves
optional but a safe gate needs: explicit agent and verifier timeouts.
"""

from __future__ import annotations

import re
import tomllib
from enum import StrEnum
from typing import Annotated, Any

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = "1.4"
# [metadata] key: path globs the solve phase may legitimately write in the verifier's toolchain (gates/tamper.py).
TOOLCHAIN_WRITES = "toolchain_writes"
# Harbor's ORG_NAME_PATTERN for [task].name.
_ORG_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$")


class NetworkMode(StrEnum):
    NO_NETWORK = "no-network"
    PUBLIC = "public"
    ALLOWLIST = "allowlist"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_hosts(mode: NetworkMode | None, hosts: list[str] | None) -> None:
    """Harbor's rule: allowed_hosts only make sense with the allowlist mode."""
    if hosts and mode != NetworkMode.ALLOWLIST:
        raise ValueError("allowed_hosts is only valid when network_mode='allowlist'")


# A timeout is a positive, finite number of seconds (inf/nan would disable the limit).
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Author(_Strict):
    name: str = Field(description="Author name.")
    email: str | None = Field(default=None, description="Author email address.")


class TaskInfo(_Strict):
    """The [task] table: the package identity in org/name form."""

    name: str = Field(description="Package name, org/name.")
    version: str | None = Field(default=None, min_length=1)
    description: str = ""
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _org_name(cls, v: str) -> str:
        if not _ORG_NAME.match(v) or ".." in v:
            raise ValueError(f"[task].name must be 'org/name' (letters, digits, . _ -), got {v!r}")
        return v


class AgentTable(_Strict):
    """The [agent] table; timeout_sec is required because Harbor's default is unlimited."""

    timeout_sec: Seconds = Field(description="Hard limit for the agent (and the Oracle's solve.sh), seconds.")
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


    @model_validator(mode="after")
    def _hosts(self) -> AgentTable:
        _check_hosts(self.network_mode, self.allowed_hosts)
        return self


class VerifierTable(_Strict):
    """The [verifier] table; timeout_sec is required so the gate never guesses Harbor's default."""

    timeout_sec: Seconds = Field(description="Hard limit for tests/test.sh, seconds.")
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


    @model_validator(mode="after")
    def _hosts(self) -> VerifierTable:
        _check_hosts(self.network_mode, self.allowed_hosts)
        return self


class EnvironmentTable(_Strict):
    """The [environment] table: build limit, resources, network policy, working directory."""

    build_timeout_sec: Seconds = 600.0
    docker_image: str | None = None
    os: str = Field(default="linux", pattern="^(linux|windows)$")
    cpus: int | float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    gpus: int | None = Field(default=None, ge=0)
    gpu_types: list[str] | None = None
    network_mode: NetworkMode = NetworkMode.PUBLIC
    allowed_hosts: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    skills_dir: str | None = None
    workdir: str | None = None


    @model_validator(mode="after")
    def _hosts(self) -> EnvironmentTable:
        _check_hosts(self.network_mode, self.allowed_hosts)
        return self


class SolutionTable(_Strict):
    env: dict[str, str] = Field(default_factory=dict)


class TaskToml(_Strict):
    """A whole task.toml. `metadata` is free-form (Harbor's too): base_image_pins and freeze_hash live there."""

    schema_version: str = Field(default=SCHEMA_VERSION, pattern=r"^1\.4$")
    source: str | None = None
    task: TaskInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierTable
    agent: AgentTable
    environment: EnvironmentTable = Field(default_factory=EnvironmentTable)
    solution: SolutionTable = Field(default_factory=SolutionTable)

    @field_validator("metadata")
    @classmethod
    def _toolchain_writes(cls, v: dict[str, Any]) -> dict[str, Any]:
        globs = v.get(TOOLCHAIN_WRITES)
        if globs is None:
            return v
        if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
            raise ValueError(f"[metadata] {TOOLCHAIN_WRITES} must be a list of path globs")
        bad = [g for g in globs if not g.startswith("/") or ".." in g.split("/") or g.strip("/*") == ""]
        if bad:
            raise ValueError(f"[metadata] {TOOLCHAIN_WRITES}: absolute, specific paths only, got {bad}")
        return v

    @property
    def toolchain_writes(self) -> list[str]:
        """Declared toolchain writes of the task's own world (see TOOLCHAIN_WRITES); empty when none."""
        return list(self.metadata.get(TOOLCHAIN_WRITES) or [])

    @classmethod
    def from_toml(cls, text: str) -> TaskToml:
        """Parse and validate; TOML syntax errors surface as ValueError (tomllib.TOMLDecodeError)."""
        return cls.model_validate(tomllib.loads(text))

    def to_toml(self) -> str:
        """Write TOML that Harbor's TaskConfig.model_validate_toml reads back to the same values."""
        return tomli_w.dumps(_without_none(self.model_dump(mode="json")))

    def with_metadata(self, **updates: Any) -> TaskToml:
        """A copy with metadata keys set (used to record base_image_pins and freeze_hash)."""
        return self.model_copy(update={"metadata": {**self.metadata, **updates}})


def _without_none(value: Any) -> Any:
    """TOML has no null: drop None values the way Harbor's own writer does."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value
