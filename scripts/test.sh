#!/usr/bin/env bash
# The README's test command: all set-up (idempotent) then the whole test suite.
#   bash scripts/test.sh [pytest args...]
# Brings up the Docker engine, the local registry and the base images, PostgreSQL and chromium for the
# tests that need them. On CI (CI=true) a component that cannot be started fails the run instead of
# skipping its tests (S2E_REQUIRE_DOCKER=1).
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
bash scripts/setup.sh || exit 1
export PATH="$REPO/.venv/bin:$PATH"
log() { echo "test.sh: $*" >&2; }
if [ "${CI:-}" = "true" ]; then export S2E_REQUIRE_DOCKER=1; fi

if bash scripts/docker-up.sh; then
  skill2env base-images >/dev/null || { log "base images could not be built"; [ "${CI:-}" = "true" ] && exit 1; }
else
  log "Docker engine/registry unavailable: docker tests will skip"; [ "${CI:-}" = "true" ] && exit 1
fi
bash deploy/build-image.sh >/dev/null || log "project image could not be built: the scale-out test will build or skip"
bash scripts/postgres-up.sh >/dev/null || log "PostgreSQL unavailable: postgres tests will skip"
bash scripts/browser-up.sh >/dev/null || log "chromium/playwright unavailable: browser tests will skip"
bash scripts/harbor-up.sh >/dev/null || log "Harbor venv unavailable: the Harbor acceptance test will make it or skip"

bash scripts/lint.sh || { log "static checks failed (ruff/mypy findings above)"; exit 1; }
python -m pytest -p no:cacheprovider --durations=25 "$@"  # the slowest tests, to keep CI time in view
rc=$?
[ $rc -eq 5 ] && { log "pytest collected no tests"; exit 1; }
exit $rc
