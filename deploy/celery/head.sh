#!/usr/bin/env bash
# Prepare the distributed deployment once, on the head, before the daemon or any worker host starts:
# Dagster's schema (`dagster instance migrate`), the deployment-wide pools (stored in the shared database, so they
# bound all hosts together: docker and llm = 2 per host), and the tables of the Celery broker and result backend
# (each worker creates missing ones at start, and two starting at once race: Postgres refuses the loser with
# `duplicate key value violates unique constraint "pg_class_relname_nsp_index"`).
#
#   deploy/celery/head.sh HOSTS          (environment as for deploy/celery/dagster.yaml; PATH with the venv)
set -euo pipefail
HOSTS="${1:-1}"
: "${DAGSTER_HOME:?}" "${S2E_PG_URL:?}" "${S2E_BROKER_URL:?}" "${S2E_RESULTS_URL:?}"
dagster instance migrate >/dev/null
dagster instance concurrency set docker "$((2 * HOSTS))" >/dev/null
dagster instance concurrency set llm "$((2 * HOSTS))" >/dev/null
python - <<'PY'
import os

from celery import Celery
from celery.backends.database.session import SessionManager

app = Celery("dagster", broker=os.environ["S2E_BROKER_URL"], backend=os.environ["S2E_RESULTS_URL"])
with app.connection() as conn:
    conn.default_channel  # the broker's queue and message tables
backend = app.backend
SessionManager().session_factory(dburi=backend.url, **backend.engine_options)  # the result tables
PY
echo "head ready: pools docker=$((2 * HOSTS)) llm=$((2 * HOSTS))" >&2
