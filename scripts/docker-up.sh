#!/usr/bin/env bash
# Bring up what the Docker gates need on a fresh Debian bookworm machine, idempotently:
#   the docker.io engine, Debian's docker-registry on 127.0.0.1:5000 (filesystem storage), and debootstrap.
# Safe to call repeatedly: it installs only what is missing and starts only what is not answering.
# Env: S2E_REGISTRY_DIR (default /var/lib/skill2env-registry), S2E_DOCKER_LOG_DIR (default /var/log/skill2env).
set -euo pipefail

REGISTRY_DIR="${S2E_REGISTRY_DIR:-/var/lib/skill2env-registry}"
LOG_DIR="${S2E_DOCKER_LOG_DIR:-/var/log/skill2env}"
REGISTRY_ADDR="127.0.0.1:5000"

need_install=()
command -v dockerd >/dev/null 2>&1 || need_install+=(docker.io)
command -v docker-registry >/dev/null 2>&1 || need_install+=(docker-registry)
command -v debootstrap >/dev/null 2>&1 || need_install+=(debootstrap)
if [ "${#need_install[@]}" -gt 0 ]; then
  echo "docker-up: installing ${need_install[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_install[@]}" >/dev/null
fi
mkdir -p "$LOG_DIR" "$REGISTRY_DIR"

wait_for() {  # wait_for SECONDS DESCRIPTION CMD...
  local limit=$1 what=$2; shift 2
  for _ in $(seq 1 $((limit * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  echo "docker-up: $what did not come up within ${limit}s" >&2
  return 1
}

if ! docker info >/dev/null 2>&1; then
  echo "docker-up: starting dockerd (log: $LOG_DIR/dockerd.log)" >&2
  # setsid: the engine must outlive this script and the shell that called it.
  setsid dockerd >>"$LOG_DIR/dockerd.log" 2>&1 < /dev/null &
  wait_for 60 "dockerd" docker info
fi

registry_up() {  # the registry's API root answers 200 when it is serving
  python3 -c "import urllib.request; urllib.request.urlopen('http://$REGISTRY_ADDR/v2/', timeout=2)" 2>/dev/null
}

if ! registry_up; then
  cfg="$REGISTRY_DIR/config.yml"
  cat >"$cfg" <<YML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
http:
  addr: $REGISTRY_ADDR
YML
  echo "docker-up: starting docker-registry on $REGISTRY_ADDR (storage: $REGISTRY_DIR/data)" >&2
  setsid docker-registry serve "$cfg" >>"$LOG_DIR/registry.log" 2>&1 < /dev/null &
  wait_for 30 "docker-registry" registry_up
fi
echo "docker-up: engine and registry $REGISTRY_ADDR ready" >&2
