#!/usr/bin/env bash
# The README's demo command: all set-up (idempotent), then the whole pipeline on examples/skillhub through
# Dagster with the offline generator and the real Docker engine.
#   bash scripts/demo.sh [--out DIR]      (default out/demo; retained tasks land in DIR/tasks/)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
bash scripts/setup.sh
bash scripts/docker-up.sh
exec .venv/bin/skill2env demo "$@"
