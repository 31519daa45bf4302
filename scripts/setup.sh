#!/usr/bin/env bash
# Idempotent Python set-up: a venv at .venv with the project (editable) and its test extras.
# Re-running is cheap: pip skips what is already installed; the venv is made only once.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${S2E_PYTHON:-python3}"
cd "$REPO"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PY --version)" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.s2e-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing the project into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # --no-compile: pip would byte-compile every installed file (half of its 44 s here); the tests and the demo
  # compile what they import on first use instead (importing the definitions: 4 CPU-s more, once).
  .venv/bin/python -m pip install -q --no-compile -e ".[dev]"
  touch "$stamp"
fi
