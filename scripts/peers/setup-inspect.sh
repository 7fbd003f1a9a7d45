#!/usr/bin/env bash
# Installs Inspect AI, the peer `npm run bench:peers` measures Steward against, into a virtual
# environment of its own (.tools/inspect-venv, git-ignored). Idempotent: a venv that already has
# the pinned version is left alone, so the bench can call this on every run.
#
#   scripts/peers/setup-inspect.sh            # prints the venv's python on the last line
#   INSPECT_VENV=/elsewhere scripts/peers/setup-inspect.sh
set -euo pipefail

INSPECT_VERSION=0.3.285
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${INSPECT_VENV:-$ROOT/.tools/inspect-venv}"
PYTHON="$VENV/bin/python"

installed() {
  [ -x "$PYTHON" ] &&
    "$PYTHON" - "$INSPECT_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
# Its openai-api provider needs the openai package, which inspect-ai does not depend on.
import openai  # noqa: F401
sys.exit(0 if version("inspect-ai") == sys.argv[1] else 1)
PY
}

if ! installed; then
  echo "installing inspect-ai==$INSPECT_VERSION into $VENV ..." >&2
  [ -x "$PYTHON" ] || python3 -m venv "$VENV"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check \
    "inspect-ai==$INSPECT_VERSION" openai >&2
  installed || { echo "inspect-ai $INSPECT_VERSION did not install into $VENV" >&2; exit 1; }
fi
echo "$PYTHON"
