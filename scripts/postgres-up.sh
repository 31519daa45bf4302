#!/usr/bin/env bash
# Start Debian's PostgreSQL for Dagster's storage (the scale-out deployment and its test), idempotently.
#
# Installs postgresql when missing, makes sure a cluster exists, listens on 127.0.0.1 only (never on a public
# interface), starts it, and creates the role and database named below. Safe to run again at any time.
# Prints the connection URL on stdout as its last line, in SQLAlchemy form for dagster-postgres: SQLAlchemy 2.1
# maps a bare postgresql:// to psycopg 3, which is not installed; dagster-postgres ships psycopg2
# (override the scheme with S2E_PG_SCHEME).
set -euo pipefail

PG_USER="${S2E_PG_USER:-skill2env}"
PG_PASSWORD="${S2E_PG_PASSWORD:-skill2env}"
PG_DB="${S2E_PG_DB:-skill2env_dagster}"
PG_PORT="${S2E_PG_PORT:-5432}"
PG_CLUSTER="${S2E_PG_CLUSTER:-main}"
PG_SCHEME="${S2E_PG_SCHEME:-postgresql+psycopg2}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
as_pg() { as_root runuser -u postgres -- "$@"; }

if ! command -v pg_ctlcluster >/dev/null || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "postgres-up: installing Debian's postgresql" >&2
  as_root apt-get update -qq
  # The package's own start attempt may be refused without an init system; we start the cluster below.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

PG_VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n1)"
if ! pg_lsclusters -h | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {found=1} END {exit !found}'; then
  echo "postgres-up: creating cluster $PG_VERSION/$PG_CLUSTER on port $PG_PORT" >&2
  as_root pg_createcluster "$PG_VERSION" "$PG_CLUSTER" --port "$PG_PORT" >/dev/null
fi

CONF="/etc/postgresql/$PG_VERSION/$PG_CLUSTER/postgresql.conf"
CLUSTER_PORT="$(pg_lsclusters -h | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $3}')"
if ! grep -q "^listen_addresses = '127.0.0.1'" "$CONF"; then
  echo "listen_addresses = '127.0.0.1'" | as_root tee -a "$CONF" >/dev/null
  as_root pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" stop >/dev/null 2>&1 || true
fi

status="$(pg_lsclusters -h | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $4}')"
if [ "$status" != "online" ]; then
  as_root pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" start
fi
for _ in $(seq 1 60); do
  as_pg pg_isready -q -h 127.0.0.1 -p "$CLUSTER_PORT" && break
  sleep 0.5
done
as_pg pg_isready -h 127.0.0.1 -p "$CLUSTER_PORT" >&2

psql_pg() { as_pg psql -p "$CLUSTER_PORT" -v ON_ERROR_STOP=1 -qtAX "$@"; }
if [ "$(psql_pg -c "SELECT 1 FROM pg_roles WHERE rolname = '$PG_USER'")" != "1" ]; then
  psql_pg -c "CREATE ROLE \"$PG_USER\" LOGIN PASSWORD '$PG_PASSWORD'"
fi
if [ "$(psql_pg -c "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != "1" ]; then
  psql_pg -c "CREATE DATABASE \"$PG_DB\" OWNER \"$PG_USER\""
fi

echo "$PG_SCHEME://$PG_USER:$PG_PASSWORD@127.0.0.1:$CLUSTER_PORT/$PG_DB"
