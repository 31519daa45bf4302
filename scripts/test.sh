#!/usr/bin/env bash
# The README's test command: all set-up (idempotent) then the whole test suite; or the fast tier.
#   bash scripts/test.sh [pytest args...]          everything (CI runs exactly this through .ci/run)
#   bash scripts/test.sh --fast [pytest args...]   the everyday tier: every test that needs no Docker engine, no
#                                                  browser, no PostgreSQL and no Harbor venv, and none of their set-up;
#                                                  the sweeps over the shared corpus (`corpus`) are left to the full
#                                                  suite too (about a third of this tier's time on their own)
# Brings up the Docker engine, the local registry and the base images, PostgreSQL and chromium for the
# tests that need them. On CI (CI=true) a component that cannot be started fails the run instead of
# skipping its tests (S2E_REQUIRE_DOCKER=1). Tests run on S2E_TEST_WORKERS pytest-xdist workers (default 2, the
# cores CI has; `-n 0` among the pytest args runs them in this process), handed out one by one, except that tests
# sharing a module-scoped fixture stay together (tests/conftest.py), so such a fixture is made once.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
FAST=0
if [ "${1:-}" = "--fast" ]; then FAST=1; shift; fi
bash scripts/setup.sh || exit 1
export PATH="$REPO/.venv/bin:$PATH"
log() { echo "test.sh: $*" >&2; }
XDIST=(-n "${S2E_TEST_WORKERS:-2}" --dist loadgroup)

if [ $FAST = 1 ]; then
  bash scripts/lint.sh || { log "static checks failed (ruff/mypy/import-linter findings above)"; exit 1; }
  # No engine, browser or database here: anything that still reaches for the engine fails instead of using it.
  export DOCKER_HOST=unix:///nonexistent/s2e-fast-tier.sock S2E_REQUIRE_DOCKER=1 S2E_FAST_TIER=1
  python -m pytest -p no:cacheprovider "${XDIST[@]}" -m "not docker and not postgres and not browser and not harbor and not corpus" \
    --durations=10 "$@"
  rc=$?
  [ $rc -eq 5 ] && { log "pytest collected no tests"; exit 1; }
  exit $rc
fi

if [ "${CI:-}" = "true" ]; then export S2E_REQUIRE_DOCKER=1; fi
# Set-up steps run side by side where they can (most of their time is installs, image layers and waiting): the
# static checks from the start; after the engine, the database, the browser and Harbor (one after another: two
# apt-get runs at once would fight over dpkg's lock) beside the base images and the project image. Each says what
# failed; only the static checks and, on CI, the engine decide the exit status here.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
bash scripts/lint.sh >"$logs/lint" 2>&1 &
lint_pid=$!
step() {  # step NAME MESSAGE-IF-IT-FAILS: run scripts/NAME-up.sh, show its stderr only when it failed
  bash "scripts/$1-up.sh" >/dev/null 2>"$logs/$1" || { cat "$logs/$1" >&2; log "$2"; }
}
others() {
  step postgres "PostgreSQL unavailable: postgres tests will skip"
  step browser "chromium/playwright unavailable: browser tests will skip"
  step harbor "Harbor venv unavailable: the Harbor acceptance test will make it or skip"
}
engine=0
if bash scripts/docker-up.sh; then
  others &
  skill2env base-images >/dev/null || { log "base images could not be built"; engine=1; }
  bash deploy/build-image.sh >/dev/null || log "project image could not be built: the scale-out test will build or skip"
else
  log "Docker engine/registry unavailable: docker tests will skip"; engine=1
  others
fi
wait "$lint_pid"
lint_rc=$?
cat "$logs/lint"
wait  # the other set-up steps
[ $lint_rc -eq 0 ] || { log "static checks failed (ruff/mypy/import-linter findings above)"; exit 1; }
[ $engine -eq 0 ] || [ "${CI:-}" != "true" ] || exit 1

python -m pytest -p no:cacheprovider "${XDIST[@]}" --durations=25 "$@"  # the slowest tests, to keep CI time in view
rc=$?
[ $rc -eq 5 ] && { log "pytest collected no tests"; exit 1; }
exit $rc
