#!/usr/bin/env bash
# Start one worker host of the distributed deployment as a container of the project image (deploy/build-image.sh):
# a Celery worker (dagster-celery's app) that takes whole runs from the broker and executes them against the
# shared Postgres and artifact store. On a real cluster run the same command on each machine; on one machine,
# several of these containers are several hosts.
#
#   deploy/celery/worker-host.sh NAME [CPUSET] [CONCURRENCY]
#
# Needs in the environment: S2E_RUN_IMAGE, DAGSTER_HOME, S2E_PG_URL, S2E_BROKER_URL, S2E_RESULTS_URL,
# S2E_ARTIFACTS_DIR, S2E_SOURCES; S2E_SHARED_ROOT (default: the parent of DAGSTER_HOME) is mounted at the same path,
# so every host sees the same DAGSTER_HOME, artifact store and sources.
# Gates: the host's Docker engine is reached through $S2E_GATE_DOCKER_SOCK (default /var/run/docker.sock, mounted
# as the container's /var/run/docker.sock). Give each host its own engine's socket for engine isolation, or the
# same one to share the machine's engine (what the tests on one machine do).
# CPUSET pins the host to those cores (docker --cpuset-cpus), and the gate containers it starts to the same cores.
# Prints the container id. Stop it with `docker rm -f s2e-host-NAME`.
set -euo pipefail
NAME="$1"; CPUSET="${2:-}"; CONCURRENCY="${3:-2}"
: "${S2E_RUN_IMAGE:?}" "${DAGSTER_HOME:?}" "${S2E_PG_URL:?}" "${S2E_BROKER_URL:?}" "${S2E_RESULTS_URL:?}"
: "${S2E_ARTIFACTS_DIR:?}" "${S2E_SOURCES:?}"
SHARED="${S2E_SHARED_ROOT:-$(dirname "$DAGSTER_HOME")}"
SOCK="${S2E_GATE_DOCKER_SOCK:-/var/run/docker.sock}"
pin=(); [ -n "$CPUSET" ] && pin=(--cpuset-cpus "$CPUSET" -e "S2E_GATE_CPUSET=$CPUSET")
# Celery reads its broker and result backend from a dagster_celery_config module on the path (dagster-celery's
# own convention), written at start from the environment. Late acks with a prefetch of one: a busy host takes no
# second run from the broker (an early ack would let it reserve one, and a free host would wait).
# The result backend retries storing a run's final task state for as long as it takes (every 10 s at most): with
# Postgres briefly down at the end of a run, Celery's default (3 tries) lost the state, run monitoring then saw the
# task as PENDING forever and the run stayed STARTED, never failed, never retried.
# `imports` loads skill2env_dagster.resources.worker_host: when the worker starts and whenever Celery starts a pool
# process (it replaces one killed with -9), the gate containers a dead process of this host left are removed.
# It also loads the code location (skill2env_dagster.definitions) in the worker's main process, before Celery
# forks its pool: every pool process, and one that replaces a killed one, starts with it imported instead of paying
# the import on its first run (4-5 s on a quiet host, 14-28 s at load 7-13; a fresh host's first runs were 4x slower).
docker run -d --name "s2e-host-$NAME" --label skill2env.role=worker-host --label "skill2env.host=$NAME" \
  --network host "${pin[@]}" \
  -e DAGSTER_HOME -e S2E_PG_URL -e S2E_BROKER_URL -e S2E_RESULTS_URL -e S2E_ARTIFACTS_DIR -e S2E_SOURCES \
  -e S2E_STATE_DIR -e S2E_GATE_LABEL -e S2E_LLM_BASE_URL -e S2E_LLM_MODEL -e S2E_LLM_API_KEY -e S2E_LLM_CACHE_DIR \
  -e "DAGSTER_EVENT_BATCH_SIZE=${DAGSTER_EVENT_BATCH_SIZE:-200}" -e PYTHONPATH=/tmp/celery -e "S2E_HOST_NAME=$NAME" -e "S2E_CONCURRENCY=$CONCURRENCY" \
  -v "$SOCK:/var/run/docker.sock" -v "$SHARED:$SHARED" \
  "$S2E_RUN_IMAGE" \
  sh -c 'mkdir -p /tmp/celery && python -c "import os; open(\"/tmp/celery/dagster_celery_config.py\", \"w\").write(\"broker_url = %r\nresult_backend = %r\nworker_prefetch_multiplier = 1\ntask_acks_late = True\nimports = [\x27skill2env_dagster.resources.worker_host\x27, \x27skill2env_dagster.definitions\x27]\nresult_backend_always_retry = True\nresult_backend_max_retries = 1000\n\" % (os.environ[\"S2E_BROKER_URL\"], os.environ[\"S2E_RESULTS_URL\"]))" && exec celery -A dagster_celery.app worker --loglevel INFO --concurrency "$S2E_CONCURRENCY" --prefetch-multiplier 1 -n "$S2E_HOST_NAME@%h"'
