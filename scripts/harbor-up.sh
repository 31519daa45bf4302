#!/usr/bin/env bash
# Idempotent: a virtualenv at .venv-harbor with Harbor (the version docs/harbor notes name) for the acceptance test
# that Harbor's own TaskConfig and Task loading accept what we write. Harbor needs Python >= 3.12; this machine's
# project venv is 3.11, so the venv is made from the first Python >= 3.12 found:
#   $S2E_HARBOR_PYTHON, python3.13/python3.12 on PATH, then pyenv's and /usr/bin's versions.
# Prints the venv's python on success; exits 2 when no suitable Python exists, 1 when the install fails.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv-harbor"
VERSION="${S2E_HARBOR_VERSION:-0.25.0}"
stamp="$VENV/.s2e-harbor-$VERSION"
if [ -f "$stamp" ] && [ -x "$VENV/bin/python" ]; then echo "$VENV/bin/python"; exit 0; fi
ok() { "$1" -c 'import sys; raise SystemExit(sys.version_info < (3, 12))' 2>/dev/null; }
py=
for c in "${S2E_HARBOR_PYTHON:-}" python3.13 python3.12 /root/.pyenv/versions/3.1[2-9]*/bin/python3 \
         /usr/bin/python3.1[2-9] /usr/local/bin/python3.1[2-9]; do
  [ -n "$c" ] || continue
  p=$(command -v "$c" 2>/dev/null) || continue
  if ok "$p"; then py=$p; break; fi
done
[ -n "$py" ] || { echo "harbor-up: no Python >= 3.12 on this machine" >&2; exit 2; }
echo "harbor-up: installing harbor==$VERSION into $VENV with $("$py" --version)" >&2
rm -rf "$VENV"
"$py" -m venv "$VENV" || exit 1
"$VENV/bin/python" -m pip install -q "harbor==$VERSION" >&2 2>/dev/null || { echo "harbor-up: pip install failed" >&2; exit 1; }
touch "$stamp"
echo "$VENV/bin/python"
