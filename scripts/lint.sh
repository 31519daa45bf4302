#!/usr/bin/env bash
# Static checks scripts/test.sh runs before the tests: ruff (lint + import order), mypy on the package, and the
# import-linter contracts in pyproject.toml (no import cycles, no upward imports, no Dagster in domain code).
# Fails on any finding: fix the code; a suppression needs its reason in the same comment.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
rc=0
.venv/bin/ruff check skill2env_dagster tests benchmarks scripts || rc=1
.venv/bin/mypy skill2env_dagster || rc=1
if out=$(.venv/bin/lint-imports --no-cache 2>&1); then
  echo "import-linter: $(grep -o 'Contracts: .*' <<<"$out")"
else
  echo "$out"; rc=1
fi
exit $rc
