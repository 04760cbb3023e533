#!/usr/bin/env bash
# Installs everything the test suite needs into ./.venv (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[all,dev,integration]"
echo "setup: installed pywrapai-graph with its test extras into .venv"
# The chunker's C extension is optional (no compiler: the same chunks from Python); say which.
if .venv/bin/python -c "import pywrapai_graph.application._chunker_ext" 2>/dev/null; then
  echo "setup: the chunker's compiled loops are built"
else
  echo "setup: no C compiler build of the chunker's loops; it runs its pure-Python twin" >&2
fi
