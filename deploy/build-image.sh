#!/usr/bin/env bash
# Build the project's own image (./Dockerfile) on top of the approved python base image, pinned by digest.
#
# Base: $S2E_RUN_BASE_IMAGE if set, else 127.0.0.1:5000/s2e-python@sha256:… from the local registry (built there
# by the gates' base-image code when missing; scripts/docker-up.sh must have started engine and registry).
# Tag: $S2E_RUN_IMAGE (default skill2env-dagster:local). Docker's layer cache makes a rebuild after a code-only
# change take seconds; dependencies are reinstalled only when pyproject.toml changes.
# Network of the build's RUN steps: $S2E_BUILD_NETWORK (default: Docker's default bridge; `host` where the engine
# has no usable bridge).
# Prints the image reference as its last line.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${S2E_VENV_PY:-$REPO/.venv/bin/python}"
IMAGE="${S2E_RUN_IMAGE:-skill2env-dagster:local}"

BASE="${S2E_RUN_BASE_IMAGE:-}"
if [ -z "$BASE" ]; then
  BASE="$(cd "$REPO" && "$PY" -c '
from skill2env_dagster.gates.base_images import ensure_base_images
print(ensure_base_images()["python"])
')"
fi
case "$BASE" in
  *@sha256:*) ;;
  *) echo "build-image: base image $BASE is not pinned by digest" >&2; exit 2 ;;
esac

# pip inside the build must trust the same CAs as this host (some hosts sit behind a TLS-inspecting proxy).
CA_BUNDLE="${S2E_BUILD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
mkdir -p "$REPO/build"
if [ -f "$CA_BUNDLE" ]; then cp "$CA_BUNDLE" "$REPO/build/ca-certificates.crt"; else rm -f "$REPO/build/ca-certificates.crt"; fi

echo "build-image: building $IMAGE from $BASE" >&2
docker build -q --network "${S2E_BUILD_NETWORK:-default}" --build-arg "BASE_IMAGE=$BASE" -t "$IMAGE" "$REPO" >&2
echo "$IMAGE"
