"""Talk to an approved registry's v2 API directly: resolve a tag to the manifest digest Docker will pin."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

from docker.auth import resolve_repository_name
from docker.utils import parse_repository_tag

from skill2env_dagster.reasons import InfraError, InputError, ReasonCode

LOCAL_REGISTRY = "127.0.0.1:5000"
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
# The manifest media types Docker 20.10 pushes; the digest of that manifest is what RepoDigests shows.
_ACCEPT = ", ".join(
    [
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
    ]
)


def split_ref(ref: str) -> tuple[str, str, str | None, str | None]:
    """`registry/name:tag@sha256:…` -> (registry, repository path, tag, digest); Docker Hub is 'docker.io'."""
    name, _, digest = ref.partition("@")
    repo, tag = parse_repository_tag(name)
    registry, path = resolve_repository_name(repo)
    if registry == "index.docker.io":
        registry = "docker.io"
    return registry, path, tag, digest or None


def _scheme(registry: str) -> str:
    host = registry.split(":")[0]
    return "http" if host in {"127.0.0.1", "localhost"} else "https"


def registry_alive(registry: str = LOCAL_REGISTRY, timeout: float = 3.0) -> bool:
    """True when the registry's API root answers at all (401 counts: it is there)."""
    try:
        urllib.request.urlopen(f"{_scheme(registry)}://{registry}/v2/", timeout=timeout).close()
        return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def resolve_digest(registry: str, path: str, tag: str, timeout: float = 10.0) -> str:
    """Ask the registry which manifest digest `path:tag` points at; missing tag is the task's fault."""
    url = f"{_scheme(registry)}://{registry}/v2/{path}/manifests/{tag}"
    req = urllib.request.Request(url, method="HEAD", headers={"Accept": _ACCEPT})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            digest = resp.headers.get("Docker-Content-Digest", "")
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise InputError(ReasonCode.BASE_IMAGE_POLICY, f"{registry}/{path}:{tag} is not in the registry") from e
        raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"registry {registry} answered {e.code} for {url}") from e
    except (urllib.error.URLError, OSError) as e:
        raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"registry {registry} unreachable: {e}") from e
    if not DIGEST_RE.match(digest):
        raise InfraError(ReasonCode.REGISTRY_UNAVAILABLE, f"registry {registry} gave no digest for {path}:{tag}")
    return digest
