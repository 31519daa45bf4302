"""Approved base images: Debian bookworm minbase rootfs built with debootstrap, pushed to the local registry.

Public registries are unreachable on our machines, so every task image starts from one of these. The build is
idempotent: when the registry already holds a flavour's tag, its digest is reused and nothing is rebuilt, so a
second run takes seconds. The digest-pinned references are recorded in `<state>/base-images.json`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import docker
import docker.errors

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.gates.registry import LOCAL_REGISTRY, registry_alive, resolve_digest
from skill2env_dagster.reasons import InfraError, ReasonCode

log = logging.getLogger(__name__)

SUITE = "bookworm"
# flavour -> packages debootstrap adds on top of minbase (which already has bash, coreutils, grep, sed, mawk).
FLAVOURS: dict[str, list[str]] = {"minimal": [], "python": ["python3"]}
CACHE_DIR = Path(os.environ.get("S2E_DEBOOTSTRAP_CACHE", "/var/cache/skill2env-debootstrap"))


def state_dir() -> Path:
    """Where machine-local state lives (env S2E_STATE_DIR, default ./var)."""
    return Path(os.environ.get("S2E_STATE_DIR", "var"))


def record_path(state: Path | None = None) -> Path:
    return (state or state_dir()) / "base-images.json"


def repository(flavour: str, registry: str = LOCAL_REGISTRY) -> str:
    return f"{registry}/s2e-{flavour}"


def load_base_images(state: Path | None = None) -> dict[str, str]:
    """Read the recorded {flavour: digest-pinned ref} without touching Docker; InfraError when never built."""
    path = record_path(state)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"{path} missing: run `skill2env base-images`") from e
    except json.JSONDecodeError as e:
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"{path} is not valid JSON: {e}") from e
    if not isinstance(data, dict) or not all(isinstance(v, str) and "@sha256:" in v for v in data.values()):
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"{path} does not map flavours to pinned references")
    return data


def ensure_base_images(
    state: Path | None = None,
    registry: str = LOCAL_REGISTRY,
    rebuild: bool = False,
    docker_url: str | None = None,
) -> dict[str, str]:
    """Make sure every flavour is in the registry (building what is missing) and return pinned references."""
    if not registry_alive(registry):
        raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"no registry at {registry}: run scripts/docker-up.sh")
    pins: dict[str, str] = {}
    for flavour, packages in FLAVOURS.items():
        digest = None if rebuild else _existing_digest(flavour, registry)
        if digest is None:
            _build_and_push(flavour, packages, registry, docker_url)
            digest = resolve_digest(registry, f"s2e-{flavour}", SUITE)
        pins[flavour] = f"{repository(flavour, registry)}@{digest}"
    atomic_write_text(record_path(state), json.dumps(pins, indent=2, sort_keys=True) + "\n")
    return pins


def _existing_digest(flavour: str, registry: str) -> str | None:
    try:
        return resolve_digest(registry, f"s2e-{flavour}", SUITE)
    except InfraError:
        raise
    except Exception:
        return None


def _debian_mirror() -> str:
    """The mirror apt already uses (the only one reachable here), overridable with S2E_DEBIAN_MIRROR."""
    if env := os.environ.get("S2E_DEBIAN_MIRROR"):
        return env
    for src in [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]:
        if src.is_file():
            for line in src.read_text().splitlines():
                words = line.split()
                if line.startswith("URIs:") and len(words) > 1:
                    return words[1]
                if len(words) > 2 and words[0] == "deb" and "security" not in words[1]:
                    return words[1]
    return "http://deb.debian.org/debian"


def _build_and_push(flavour: str, packages: list[str], registry: str, docker_url: str | None) -> None:
    """debootstrap a minbase rootfs, import it as an image, push it; about 30 s per flavour."""
    if shutil.which("debootstrap") is None:
        raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, "debootstrap missing: run scripts/docker-up.sh")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"s2e-rootfs-{flavour}-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        cmd = ["debootstrap", "--variant=minbase", f"--cache-dir={CACHE_DIR}"]
        if packages:
            cmd.append("--include=" + ",".join(packages))
        cmd += [SUITE, str(rootfs), _debian_mirror()]
        log.info("base-images: %s", " ".join(cmd))
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise InfraError(ReasonCode.INTERNAL_ERROR, f"debootstrap failed: {done.stderr[-2000:]}")
        for junk in ["var/cache/apt/archives", "var/lib/apt/lists"]:
            shutil.rmtree(rootfs / junk, ignore_errors=True)
        _import_and_push(rootfs, flavour, registry, docker_url)


def _import_and_push(rootfs: Path, flavour: str, registry: str, docker_url: str | None) -> None:
    client = docker.DockerClient(base_url=docker_url) if docker_url else docker.from_env()
    repo = repository(flavour, registry)
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
    try:
        client.api.import_image_from_stream(tar.stdout, repository=repo, tag=SUITE, changes=['CMD ["bash"]'])
    except docker.errors.APIError as e:
        raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"docker import of {repo} failed: {e}") from e
    finally:
        tar.wait()
    for line in client.api.push(repo, tag=SUITE, stream=True, decode=True):
        if "error" in line:
            raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"push of {repo}:{SUITE} failed: {line['error']}")
