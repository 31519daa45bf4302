#!/usr/bin/env bash
# Static checks scripts/test.sh runs before the tests: ruff (lint + import order) and mypy on the package.
# Fails on any finding: fix the code; a suppression needs its reason in the same comment.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
rc=0
.venv/bin/ruff check skill2env_dagster tests benchmarks scripts || rc=1
.venv/bin/mypy skill2env_dagster || rc=1
exit $rc
