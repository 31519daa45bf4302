"""Build a task's image from environment/ only, cached by the environment's digest."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import docker
import docker.errors

from skill2env_dagster.reasons import InfraError, InputError, ReasonCode

IMAGE_REPO = "s2e-gate-env"
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
# Build-log phrases that mean the registry, not the Dockerfile, is at fault.
_REGISTRY_TROUBLE = ("connection refused", "dial tcp", "no such host", "i/o timeout", "server misbehaving")


def environment_digest(env_dir: Path) -> str:
    """sha256 over (path, mode, content) of every entry in environment/: unchanged worlds are not rebuilt."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(env_dir, followlinks=False)):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]):
            p = Path(dirpath) / name
            rel = p.relative_to(env_dir).as_posix()
            st = p.lstat()
            data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
            h.update(f"{rel}\0{st.st_mode:o}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


def _lock(key: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


def build_image(
    client: docker.DockerClient, env_dir: Path, network: str = "none", timeout: float = 600
) -> tuple[str, bool]:
    """(image tag, built now?) — InputError(build_failed) for a bad Dockerfile, InfraError for the registry."""
    tag = f"{IMAGE_REPO}:{environment_digest(env_dir)[:32]}"
    with _lock(tag):
        try:
            client.images.get(tag)
            return tag, False
        except docker.errors.ImageNotFound:
            pass
        try:
            client.images.build(
                path=str(env_dir), tag=tag, rm=True, forcerm=True, network_mode=network, timeout=int(timeout),
                labels={"skill2env.gate": "1"},
            )
        except docker.errors.BuildError as e:
            text = "".join(str(c.get("stream", c.get("error", ""))) for c in e.build_log)[-2000:]
            if any(p in text.lower() for p in _REGISTRY_TROUBLE):
                raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"base image pull failed: {text[-500:]}") from e
            raise InputError(ReasonCode.BUILD_FAILED, f"docker build failed: {text[-1500:]}") from e
        except docker.errors.APIError as e:
            msg = str(e)
            if any(p in msg.lower() for p in _REGISTRY_TROUBLE):
                raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"base image pull failed: {msg}") from e
            raise InputError(ReasonCode.BUILD_FAILED, f"docker build failed: {msg[-1500:]}") from e
        return tag, True
