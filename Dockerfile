# The project's own image: what DockerRunLauncher / docker_executor start for each run (or step).
#
# No Docker Hub here: the base comes from the local registry, pinned by digest, e.g.
#   docker build --build-arg BASE_IMAGE=127.0.0.1:5000/s2e-python@sha256:… -t skill2env-dagster:local .
# (deploy/build-image.sh picks the digest for you). Any Debian bookworm image works as a base: Python, venv and
# git are installed from Debian's mirror when missing, and Python packages come from PyPI during the build.
ARG BASE_IMAGE=127.0.0.1:5000/s2e-python:bookworm
FROM ${BASE_IMAGE}

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

RUN set -eux; \
    need=""; \
    command -v python3 >/dev/null || need="$need python3"; \
    python3 -c 'import venv, ensurepip' 2>/dev/null || need="$need python3-venv"; \
    command -v git >/dev/null || need="$need git"; \
    [ -e /etc/ssl/certs/ca-certificates.crt ] || need="$need ca-certificates"; \
    if [ -n "$need" ]; then \
      apt-get update -qq && apt-get install -y -qq --no-install-recommends $need && rm -rf /var/lib/apt/lists/*; \
    fi; \
    python3 -m venv /opt/venv

ENV PATH=/opt/venv/bin:$PATH \
    VIRTUAL_ENV=/opt/venv

WORKDIR /opt/skill2env
# Dependencies first (a layer that survives code edits): install the project once with an empty package...
# build/ca-certificates.crt (optional, put there by deploy/build-image.sh) is the build host's CA bundle: pip
# must trust whatever TLS-inspecting proxy the host itself trusts. It is used for the build only, then removed.
COPY pyproject.toml build/ca-certificate[s].crt ./
RUN set -eux; mkdir -p skill2env_dagster; touch skill2env_dagster/__init__.py; \
    if [ -f ca-certificates.crt ]; then export PIP_CERT=$PWD/ca-certificates.crt; fi; \
    pip install -q "setuptools>=68" wheel . && rm -rf skill2env_dagster build *.egg-info ca-certificates.crt
# ...then the code itself, without touching the dependency layer.
COPY workspace.yaml ./
COPY skill2env_dagster/ ./skill2env_dagster/
RUN pip install -q --no-deps --no-build-isolation . && python -c 'import skill2env_dagster, dagster_docker, dagster_postgres'

# Runs are started by the launcher with `dagster api execute_run …`; this default serves the code location
# over gRPC, for deployments that run the code server as its own container.
EXPOSE 4000
CMD ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", "4000", "-m", "skill2env_dagster.definitions"]
