#!/usr/bin/env bash
# The README's demo command: all set-up (idempotent), then the whole pipeline on examples/skillhub through
# Dagster and the real Docker engine, with the generator the S2E_LLM_* variables configure (none set: the offline
# generator; the demo prints which one it uses first).
#   bash scripts/demo.sh [--out DIR]      (default out/demo; retained tasks land in DIR/tasks/)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
bash scripts/setup.sh
bash scripts/docker-up.sh
exec .venv/bin/skill2env demo "$@"
