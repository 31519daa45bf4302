#!/usr/bin/env bash
# The README's test command: all set-up (idempotent) then the whole test suite; or the fast tier.
#   bash scripts/test.sh [pytest args...]          everything (CI runs exactly this through .ci/run)
#   bash scripts/test.sh --fast [pytest args...]   the everyday tier: every test that needs no Docker engine, no
#                                                  browser, no PostgreSQL and no Harbor venv, and none of their set-up;
#                                                  the sweeps over the shared corpus (`corpus`) are left to the full
#                                                  suite too (about a third of this tier's time on their own)
# Brings up the Docker engine, the local registry and the base images, PostgreSQL and chromium for the
# tests that need them. On CI (CI=true) a component that cannot be started fails the run instead of
# skipping its tests (S2E_REQUIRE_DOCKER=1). The full suite runs in two passes: the tests that need no host component
# on S2E_TEST_WORKERS pytest-xdist workers (default 2, the cores CI has) from the start, beside that set-up, and the
# host tests on S2E_HOST_TEST_WORKERS (default 3: they wait on the engine part of the time) as soon as the set-up is
# done, beside whatever of the first pass is left (its output is printed after the second's). `-n 0` among the pytest args runs
# each pass in this process; a `-m` of the caller's own runs one pass after the set-up. Tests are handed out one by
# one, the longest first (tests/conftest.py), except that tests sharing a module-scoped fixture stay together, so
# such a fixture is made once.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
FAST=0
if [ "${1:-}" = "--fast" ]; then FAST=1; shift; fi
bash scripts/setup.sh || exit 1
export PATH="$REPO/.venv/bin:$PATH"
# Bytecode caches on, whatever the caller's environment says: every worker's collection rewrites ~260 test modules'
# asserts (about 5 of its 11 CPU-s) and every `skill2env`/`dagster` process the tests start compiles the package
# again when PYTHONDONTWRITEBYTECODE is set (it is on some CI images). __pycache__ is git-ignored.
unset PYTHONDONTWRITEBYTECODE
log() { echo "test.sh: $*" >&2; }
XDIST=(-n "${S2E_TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder)  # the order: tests/conftest.py
# The host tests spend part of their time waiting on the engine (container starts, image layers, a run's daemon
# tick): a third worker fills that time (test_creator_replay on this 2-core machine: 97 s on 2 workers, 69 s on 3).
HOST_XDIST=(-n "${S2E_HOST_TEST_WORKERS:-3}" --dist loadgroup --no-loadscope-reorder)

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
# Two passes, so the set-up's waiting is not the suite's: the tests that need no host component (no engine, browser,
# database or Harbor venv; most of the suite by count) run while the static checks and the host set-up run beside
# them (most of the set-up's time is installs, image layers and waiting); the host tests start once their components
# are up. Set-up steps run side by side where they can: after the engine, the database, the browser and Harbor
# (one after another: two apt-get runs at once would fight over dpkg's lock) beside the base images and the project
# image. Each says what failed; only the static checks and, on CI, the engine decide the exit status here.
HOST_TESTS="docker or postgres or browser or harbor"
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
host_setup() {  # exit status 1 when the engine (or the base images on it) could not be made
  if bash scripts/docker-up.sh >"$logs/docker" 2>&1; then
    others &
    skill2env base-images >/dev/null 2>"$logs/base" || { cat "$logs/base" >&2; log "base images could not be built"; wait; return 1; }
    bash deploy/build-image.sh >/dev/null 2>"$logs/image" \
      || log "project image could not be built: the scale-out test will build or skip"
    wait
  else
    cat "$logs/docker" >&2; log "Docker engine/registry unavailable: docker tests will skip"; others; return 1
  fi
}
host_setup &
setup_pid=$!
pytest_pass() {  # pytest_pass MARK-EXPRESSION WORKERS-ARRAY-NAME [pytest args...]: one pass (exit 5: nothing collected)
  local mark="$1"; local -n workers="$2"; shift 2
  python -m pytest -p no:cacheprovider "${workers[@]}" -m "$mark" --durations=15 "$@"  # the slowest: CI time in view
}
user_mark=0
for a in "$@"; do case "$a" in -m|-m*) user_mark=1;; esac; done
rc1=5
if [ $user_mark = 0 ]; then  # (a -m of the caller's own selects on its own: everything runs in the second pass)
  log "pass 1 of 2: the tests that need no host component, beside the set-up (its output follows pass 2's)"
  # As in the fast tier, no engine is reachable in this pass: a test that reaches for one fails, never races set-up.
  ( DOCKER_HOST=unix:///nonexistent/s2e-pass-1.sock S2E_FAST_TIER=1 pytest_pass "not ($HOST_TESTS)" XDIST "$@" \
      >"$logs/pass1" 2>&1; echo $? >"$logs/pass1.rc" ) &
  pass1_pid=$!
fi
wait "$lint_pid"
lint_rc=$?
cat "$logs/lint"
wait "$setup_pid"
engine=$?
stop_pass1() { [ $user_mark = 1 ] || { pkill -TERM -P "$pass1_pid" 2>/dev/null; wait "$pass1_pid"; }; }
[ $lint_rc -eq 0 ] || { stop_pass1; log "static checks failed (ruff/mypy/import-linter findings above)"; exit 1; }
[ $engine -eq 0 ] || [ "${CI:-}" != "true" ] || { stop_pass1; exit 1; }

# The host tests start once their components are up, while pass 1 may still run: the two share the cores, so
# neither's tail (one worker left on its longest test) leaves a core idle.
if [ $user_mark = 0 ]; then
  log "pass 2 of 2: the tests that need the engine, the browser, PostgreSQL or Harbor"
  pytest_pass "$HOST_TESTS" HOST_XDIST "$@"
else
  python -m pytest -p no:cacheprovider "${HOST_XDIST[@]}" --durations=25 "$@"
fi
rc2=$?
if [ $user_mark = 0 ]; then
  wait "$pass1_pid"
  log "pass 1's output:"
  cat "$logs/pass1"
  rc1=$(cat "$logs/pass1.rc" 2>/dev/null || echo 1)
fi
if [ $rc1 -eq 5 ] && [ $rc2 -eq 5 ]; then log "pytest collected no tests"; exit 1; fi
[ $rc1 -eq 5 ] && rc1=0
[ $rc2 -eq 5 ] && rc2=0
[ $rc1 -eq 0 ] || { log "pass 1 failed (its summary is just above)"; exit $rc1; }
exit $rc2
