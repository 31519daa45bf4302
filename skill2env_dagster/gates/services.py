"""Stand-in services beside a trial: the subset of Harbor's `environment/docker-compose.yaml` our runner starts.

A task that needs a service the agent must not control (a stub API whose request journal grades the agent) ships
it as a Compose service next to Harbor's `main` (the agent's container). We run exactly this subset:

    services:
      api:                                  # any name but `main`
        build: .                            # the task's own image (`{context: .}` too); nothing else is built
        command: ["python3", "-I", "..."]   # a list; the image's CMD when absent
        network_mode: "service:main"        # required: it joins the agent's network namespace (loopback only)
        healthcheck: {test: ["CMD", "..."]} # optional: exec'd in the service until it exits 0
        x-skill2env-collect: ["/var/lib/x/journal.jsonl"]   # files copied out for the verifier

The service runs in its own hardened container (its own PID namespace and filesystem), sharing only the agent's
network namespace, so the agent can call it on 127.0.0.1 but can neither kill it, bind its port, nor read or write
its files. After the agent phase (its processes reaped), the runner copies each `x-skill2env-collect` file out of
the service and into the verifier's `/tests/services/<name>/<file name>` (tests are copied in only then, and the
tamper rules protect /tests), so what the verifier reads is what the service recorded. Harbor runs the same file
(its `main` has `network_mode: none` for our tasks, which the service shares); Harbor does not copy files out,
so a verifier may fall back to asking the service (see `service_sync`).
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from skill2env_dagster.models.task_dir import CONTAINER_TESTS
from skill2env_dagster.reasons import InputError, ReasonCode

COMPOSE_FILE = "docker-compose.yaml"
MAIN = "main"
SHARE_MAIN = "service:main"
COLLECT_KEY = "x-skill2env-collect"
COLLECTED_DIR = f"{CONTAINER_TESTS}/services"  # where the verifier finds the collected files
MAX_COLLECT_BYTES = 8 << 20  # per trial; more is the agent flooding the service, collected as nothing


class _Health(BaseModel):
    model_config = ConfigDict(extra="ignore")  # interval, retries, ...: we poll on our own schedule
    test: list[str]

    @field_validator("test")
    @classmethod
    def _exec_form(cls, v: list[str]) -> list[str]:
        if len(v) < 2 or v[0] != "CMD":
            raise ValueError('healthcheck.test must be ["CMD", program, args...]')
        return v[1:]


class ServiceSpec(BaseModel):
    """One service of the subset (see the module docstring); `image` is bound by the runner after the build."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str = ""
    build: str | dict[str, str]
    command: list[str] | None = None
    network_mode: str
    healthcheck: _Health | None = None
    collect: list[str] = Field(default_factory=list, alias="x-skill2env-collect")  # COLLECT_KEY (mypy: a literal)
    image: str = ""

    @field_validator("build")
    @classmethod
    def _own_image(cls, v: str | dict[str, str]) -> str | dict[str, str]:
        if v not in (".", "./", {"context": "."}, {"context": "./"}):
            raise ValueError("only `build: .` (the task's own image) is supported")
        return v

    @field_validator("network_mode")
    @classmethod
    def _shares_main(cls, v: str) -> str:
        if v != SHARE_MAIN:
            raise ValueError(f'network_mode must be "{SHARE_MAIN}" (the service joins the agent\'s loopback)')
        return v

    @field_validator("collect")
    @classmethod
    def _absolute(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if not p.startswith("/") or posixpath.normpath(p) != p]
        names = [posixpath.basename(p) for p in v]
        if bad or len(set(names)) != len(names):
            raise ValueError(f"{COLLECT_KEY} needs normalised absolute paths with distinct file names: {v}")
        return v

    @property
    def health(self) -> list[str]:
        return self.healthcheck.test if self.healthcheck else []

    def collected_path(self, path: str) -> str:
        return collected_path(self.name, path)


def collected_path(service: str, path: str) -> str:
    """Where the verifier reads the file `path` of service `service`."""
    return f"{COLLECTED_DIR}/{service}/{posixpath.basename(path)}"


def parse_services(text: str) -> list[ServiceSpec]:
    """The services of a compose document, or InputError(static_validation_failed) outside the subset."""
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(ReasonCode.STATIC_VALIDATION_FAILED, f"{COMPOSE_FILE}: not YAML: {e}") from e
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or set(doc) - {"services"} - {k for k in doc if str(k).startswith("x-")}:
        raise InputError(ReasonCode.STATIC_VALIDATION_FAILED, f"{COMPOSE_FILE}: only a `services` mapping is run")
    main = services.get(MAIN) or {}
    if not isinstance(main, dict) or set(main) - {"depends_on"}:
        raise InputError(ReasonCode.STATIC_VALIDATION_FAILED,
                         f"{COMPOSE_FILE}: `{MAIN}` is the agent's container; the task's Dockerfile and task.toml "
                         "configure it")
    out = []
    for name, body in services.items():
        if name == MAIN:
            continue
        if not isinstance(body, dict) or not str(name).replace("-", "").replace("_", "").isalnum():
            raise InputError(ReasonCode.STATIC_VALIDATION_FAILED, f"{COMPOSE_FILE}: service {name!r} is malformed")
        if "image" in body or "name" in body:  # both are ours to set (the task's built image, the service's key)
            raise InputError(ReasonCode.STATIC_VALIDATION_FAILED,
                             f"{COMPOSE_FILE}: service {name}: no `image`: only `build: .` (the task's own image)")
        try:
            out.append(ServiceSpec.model_validate({**body, "name": str(name)}))
        except ValidationError as e:
            msgs = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
            raise InputError(ReasonCode.STATIC_VALIDATION_FAILED, f"{COMPOSE_FILE}: service {name}: {msgs}") from e
    return out


def load_services(environment_dir: Path, image: str = "") -> list[ServiceSpec]:
    """The task's services (none without a compose file), bound to `image` (the task's built image)."""
    path = environment_dir / COMPOSE_FILE
    if not path.is_file():
        return []
    return [s.model_copy(update={"image": image}) for s in parse_services(path.read_text(encoding="utf-8"))]


def compose_text(name: str, command: list[str], health: list[str], collect: list[str]) -> str:
    """The compose file a generator ships for one such service."""
    doc = {"services": {name: {"build": ".", "command": command, "network_mode": SHARE_MAIN,
                               "healthcheck": {"test": ["CMD", *health], "interval": "1s", "retries": 30},
                               COLLECT_KEY: collect}}}
    return ("# A stand-in service beside the agent's container (`main`), sharing only its loopback; see "
            "skill2env_dagster/gates/services.py\n" + yaml.safe_dump(doc, sort_keys=False))
