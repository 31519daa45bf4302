#!/usr/bin/env bash
# Make a headless browser usable by the browser tests (tests/ops, marker `browser`), idempotently.
#
# Why Debian's chromium and not `playwright install`: the latter downloads a browser build from outside the
# package registries, which these machines (and CI) cannot reach. Playwright for Python drives the system
# chromium through `executable_path=/usr/bin/chromium`.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_PY="${S2E_VENV_PY:-$REPO/.venv/bin/python}"
CHROMIUM="${S2E_CHROMIUM:-/usr/bin/chromium}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x "$CHROMIUM" ]; then
  echo "browser-up: installing Debian's chromium" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi

if ! "$VENV_PY" -c 'import playwright.sync_api' 2>/dev/null; then
  echo "browser-up: pip installing playwright into $(dirname "$VENV_PY")" >&2
  "$VENV_PY" -m pip install -q 'playwright>=1.45'
fi

"$CHROMIUM" --version
"$VENV_PY" -c 'import importlib.metadata as m; print("playwright", m.version("playwright"))'
